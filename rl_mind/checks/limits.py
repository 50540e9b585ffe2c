"""Bounds on one call of a student's function: sweeps over an input, and time.

A function that sweeps until its values converge (policy evaluation, value iteration) may
never return when it is wrong (a backup without the discount, a stop that ignores
``max_sweeps``). A case with a :class:`Limit` runs the student's function under two bounds,
so that the check cell always returns:

- **sweeps**: every torch operation that reads the input named ``over`` (the model ``P``)
  counts the entries it reads (all of them for ``P @ v``, one row for ``P[s]``, one entry for
  ``P[s, a, t]``); a sweep reads the whole model once, so the count divided by its size is
  the number of sweeps, whatever the form of the loop (synchronous, in place, per entry);
- **time**: ``seconds`` of wall time, for a loop that copied the input first (``.numpy()``):
  checked at each torch operation, and by a watchdog that interrupts a loop making none.

Past either bound the call ends with :class:`Exhausted`, which the engine reports as "does
not converge within N sweeps", then names the cause if a probe can. ``Exhausted`` is a
``BaseException`` (as ``KeyboardInterrupt`` is), so that a student's ``except Exception``
cannot swallow it.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor
from torch.overrides import TorchFunctionMode

__all__ = ["Exhausted", "Limit", "bounded_call"]


@dataclass(frozen=True)
class Limit:
    """The bounds of one call: at most ``sweeps`` passes over the input ``over`` and
    ``seconds`` of time; ``message`` is what the student reads past them (``{sweeps}`` and
    ``{seconds}`` are filled in), followed by the probe or hint that names the cause."""

    sweeps: int
    over: str = "P"
    seconds: float = 10.0
    message: str = "does not converge within {sweeps} sweeps"

    def __post_init__(self) -> None:
        if isinstance(self.sweeps, bool) or not isinstance(self.sweeps, int) or self.sweeps < 1:
            raise ValueError(f"Limit: sweeps must be a positive int, got {self.sweeps!r}")
        if not isinstance(self.over, str) or not self.over.isidentifier():
            raise TypeError(f"Limit: over must name an argument, got {self.over!r}")
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float):
            raise TypeError(f"Limit: seconds must be a number, got {self.seconds!r}")
        if not self.seconds > 0:
            raise ValueError(f"Limit: seconds must be positive, got {self.seconds!r}")

    def describe(self, reason: str = "sweeps") -> str:
        """What the student reads when the call went past the bound ``reason`` (``"sweeps"``
        or ``"seconds"``)."""
        if reason == "seconds":
            return (
                f"still running after {self.seconds:g} s (the case's limit): it does not converge"
            )
        return self.message.format(sweeps=f"{self.sweeps:,}", seconds=f"{self.seconds:g}")


class Exhausted(BaseException):  # noqa: N818 (a bound reached, like KeyboardInterrupt)
    """A bounded call went past its :class:`Limit`; ``reason``: ``"sweeps"`` or
    ``"seconds"``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Interrupted(BaseException):
    """Raised into the checking thread by the watchdog (no arguments: CPython creates it)."""


class _Sweeps(TorchFunctionMode):
    """Counts the entries of ``watched`` that torch operations read, and the time."""

    def __init__(self, watched: Tensor | None, limit: Limit, deadline: float) -> None:
        super().__init__()
        self.watched = watched
        self.size = max(1, watched.numel()) if watched is not None else 1
        self.bound = limit.sweeps * self.size
        self.deadline = deadline
        self.read = 0

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        result = func(*args, **(kwargs or {}))
        if isinstance(result, Tensor) and self._reads(args, kwargs):
            self.read += result.numel() if func is Tensor.__getitem__ else self.size
            if self.read > self.bound:
                raise Exhausted("sweeps")
        if time.monotonic() > self.deadline:
            raise Exhausted("seconds")
        return result

    def _reads(self, args: Sequence[Any], kwargs: dict[str, Any] | None) -> bool:
        """Whether the watched input is an argument of the operation."""
        watched = self.watched
        return watched is not None and (
            any(arg is watched for arg in args)
            or any(value is watched for value in (kwargs or {}).values())
        )


def _interrupt(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(_Interrupted)
    )


def _clear(thread_id: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)


def bounded_call(fn: Callable[..., Any], args: Sequence[Any], watched: Any, limit: Limit) -> Any:
    """``fn(*args)`` within ``limit``: its result, or :class:`Exhausted` past a bound.
    ``watched`` is the input whose reads count the sweeps (not a tensor: time alone)."""
    deadline = time.monotonic() + limit.seconds
    counter = _Sweeps(watched if isinstance(watched, Tensor) else None, limit, deadline)
    thread_id = threading.get_ident()
    lock = threading.Lock()
    state = {"running": True, "fired": False}

    def watchdog() -> None:  # (a grace period: the torch operations check the time first)
        with lock:
            if state["running"]:
                state["fired"] = True
                _interrupt(thread_id)

    timer = threading.Timer(limit.seconds + 1.0, watchdog)
    timer.daemon = True
    timer.start()
    try:
        with counter:
            return fn(*args)
    except _Interrupted:
        raise Exhausted("seconds") from None
    finally:
        timer.cancel()
        with lock:
            state["running"] = False
            if state["fired"]:  # (raised already, or still pending: never let it out later)
                _clear(thread_id)
