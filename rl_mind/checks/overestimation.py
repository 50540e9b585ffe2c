"""The checks of the project practical "Overestimation in DDPG and TD3".

Its two gaps need no data of their own here: ``td3_target`` is checked by the TD3
practical's :func:`~rl_mind.checks.check_td3_target` (the same function), and
``episode_bias`` (the critic's bias over one episode, a cut episode's tail bootstrapped) by
a check declared in the practical's source (:class:`~rl_mind.checks.Check`), whose cases
``rl-mind practical`` computes from the reference solution.
"""

from __future__ import annotations

from rl_mind.checks.engine import Spec

__all__ = ["SPECS"]

SPECS: tuple[Spec, ...] = ()
"""None: the project's gaps are checked by ``check_td3_target`` and a declared check."""
