"""Deprecated: rl-mind 0.4's compute profile. Write ``from rl_mind import Profile`` instead.

In rl-mind 0.4 a practical sized its budgets with ``rl_mind.profiles.Profile`` (an
enumeration built on ``cs-lab``'s profile ladder, with two rungs, ``FAST_TEST`` and
``FULL``), switched by ``NOTEBOOK_PROFILE=fast-test``. This module keeps those notebooks
running without ``cs-lab``: the same two rungs, ``Profile.pick`` with 0.4's arguments
(``pick(full, fast_test=...)``, or ``pick(fast_test=..., full=...)``), and
``Profile.current()``. The rung is read from :meth:`rl_mind.Profile.is_fast_test`, so
``RL_MIND_FAST_TEST=1`` and ``NOTEBOOK_PROFILE=fast-test`` both select ``FAST_TEST``.
Importing the module warns once (``DeprecationWarning``).
"""

from __future__ import annotations

import warnings
from enum import IntEnum
from typing import Any

from rl_mind.notebook import Profile as _Profile

__all__: list[str] = []  # deprecated: kept out of the reference (rl_mind.Profile is documented)

warnings.warn(
    "rl_mind.profiles is rl-mind 0.4's module: write `from rl_mind import Profile` "
    "(Profile.pick(full, fast_test=...) as before)",
    DeprecationWarning,
    stacklevel=2,
)


class Profile(IntEnum):
    """rl-mind 0.4's two rungs: ``FAST_TEST`` (the tiny budgets CI runs) and ``FULL``."""

    FAST_TEST = 0
    FULL = 1

    @classmethod
    def current(cls) -> Profile:
        """``FAST_TEST`` under the fast-test switch, else ``FULL``."""
        return cls.FAST_TEST if _Profile.is_fast_test() else cls.FULL

    @classmethod
    def pick(cls, *default: Any, **by_rung: Any) -> Any:
        """The value for the current rung: ``pick(full, fast_test=...)`` or
        ``pick(fast_test=..., full=...)``; a rung left out takes the positional default,
        else the other rung's value."""
        if len(default) > 1:
            raise TypeError(f"pick() takes at most one positional default, got {len(default)}")
        unknown = sorted(set(by_rung) - {"fast_test", "full"})
        if unknown:
            raise TypeError(f"pick() got unknown rungs {unknown}; expected fast_test and/or full")
        if not by_rung and not default:
            raise TypeError("pick() needs a value, e.g. Profile.pick(30_000, fast_test=600)")
        name = cls.current().name.lower()
        if name in by_rung:
            return by_rung[name]
        if default:
            return default[0]
        return next(iter(by_rung.values()))
