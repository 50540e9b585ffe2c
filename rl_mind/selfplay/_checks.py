"""Argument checks shared by the self-play modules: numbers that must be numbers, seeds."""

from __future__ import annotations

import math
import numbers
from typing import Any

from rl_mind.core import _as_int


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
    value = _as_int(seed)
    if value is None or value < 0 or (bits is not None and value >= 2**bits):
        expected = "an int >= 0" if bits is None else f"an int from 0 to 2**{bits} - 1"
        raise ValueError(f"{name} must be None or {expected}, got {seed!r}")
    return value


def checked_count(value: Any, name: str) -> int:
    """``value`` as an int >= 0 (a step, an id); else a ``ValueError`` naming ``name``."""
    count = _as_int(value)
    if count is None or count < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return count
