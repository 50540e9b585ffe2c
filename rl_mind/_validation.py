"""Argument checks shared by the package's modules: whole numbers, devices, seeds, counts
(and :func:`available_cores`, the default of a count of processes).

Each returns the value normalized (an ``int``, a ``torch.device``) or raises an error that
names the argument (``"OpponentPool: seed"``), says what was expected and what came.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import torch

__all__ = [
    "as_int",
    "available_cores",
    "checked_count",
    "checked_device",
    "checked_seed",
    "finite_number",
]


def as_int(value: Any) -> int | None:
    """``value`` as an int if it is a whole number (an int or a numpy integer, not a bool)."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return int(value) if whole else None


def checked_device(device: Any, owner: str) -> torch.device:
    """``device`` as a ``torch.device`` (None: the CPU), refused now if malformed or absent."""
    if device is None:
        return torch.device("cpu")
    try:
        result = torch.device(device)
    except TypeError:  # (torch lists its overloads; a bool or a float, say)
        raise TypeError(
            f"{owner}: device must be a torch.device or a string such as 'cpu' or 'cuda', "
            f"got {type(device).__name__}"
        ) from None
    except (RuntimeError, ValueError) as error:
        raise ValueError(
            f"{owner}: device {device!r} is not a torch device (expected e.g. 'cpu', 'cuda' or "
            f"'cuda:1'): {error}"
        ) from None
    cuda = result.type == "cuda"
    count = torch.cuda.device_count() if cuda else 0  # (0 where CUDA is not available)
    if cuda and count == 0:
        cpu_only = not (torch.version.cuda or torch.version.hip)  # (hip: a ROCm build, AMD GPUs)
        build = f" (torch {torch.__version__} is a CPU-only build)" if cpu_only else ""
        problem = f"this machine has no CUDA GPU torch can use{build}; use 'cpu', or pick the "
        problem += "device with 'cuda' if torch.cuda.is_available() else 'cpu'"
    elif cuda and result.index is not None and result.index >= count:
        problem = f"this machine has {count} CUDA GPU(s), 'cuda:0' to 'cuda:{count - 1}'"
    elif result.type == "mps" and not torch.backends.mps.is_available():
        problem = "torch.backends.mps.is_available() is False on this machine; use 'cpu'"
    else:
        return result
    raise ValueError(f"{owner}: device {device!r} is not available: {problem}")


def finite_number(
    value: Any, name: str, *, minimum: float | None = None, strictly: bool = False
) -> float:
    """``value`` as a float: a real number (not a bool), finite, and at least ``minimum``
    (above it with ``strictly``); else an error that names ``name`` (``"EloTable: k"``),
    says what was expected and what came. NaN would pass every ``<`` check unnoticed."""
    bound = "" if minimum is None else f" {'>' if strictly else '>='} {minimum:g}"
    expected = f"a finite number{bound}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__} {value!r}")
    number = float(value)
    below = minimum is not None and (number <= minimum if strictly else number < minimum)
    if not math.isfinite(number) or below:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return number


def checked_seed(seed: Any, name: str, *, bits: int | None = None) -> int | None:
    """``seed`` as an int >= 0 (below ``2**bits``), or None; else a ``ValueError`` naming
    ``name``."""
    if seed is None:
        return None
    value = as_int(seed)
    if value is None or value < 0 or (bits is not None and value >= 2**bits):
        expected = "an int >= 0" if bits is None else f"an int from 0 to 2**{bits} - 1"
        raise ValueError(f"{name} must be None or {expected}, got {seed!r}")
    return value


def checked_count(value: Any, name: str) -> int:
    """``value`` as an int >= 0 (a step, an id); else a ``ValueError`` naming ``name``."""
    count = as_int(value)
    if count is None or count < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return count


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1
