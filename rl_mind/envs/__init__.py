"""Extra environments, registered with gymnasium on ``import rl_mind.envs`` (an explicit opt-in).

- ``CartPoleContinuous-v1``: CartPole with a continuous force in ``[-1, 1]``, 500 steps.
- ``rl_mind/PongDuel-v0``: the two-player self-play game (see :mod:`rl_mind.envs.pong_duel`).

Importing :mod:`rl_mind` does not import this package: registering environments is a side
effect that a notebook asks for explicitly.
"""

from __future__ import annotations

import gymnasium

from rl_mind.envs.cartpole_continuous import CartPoleContinuousEnv

__all__ = ["CartPoleContinuousEnv"]


def _register() -> None:
    if "CartPoleContinuous-v1" not in gymnasium.registry:
        gymnasium.register(
            id="CartPoleContinuous-v1",
            entry_point="rl_mind.envs.cartpole_continuous:CartPoleContinuousEnv",
            max_episode_steps=500,
            reward_threshold=475.0,
        )


_register()
