"""Extra environments, registered with gymnasium on ``import rl_mind.envs`` (an explicit opt-in).

- ``CartPoleContinuous-v1``: CartPole with a continuous force in ``[-1, 1]``, 500 steps.
- ``MazeMDP-v0``: a grid maze with its model exposed (``P``, ``r``, ``gamma``,
  ``terminal_states``), for dynamic programming and tabular RL (:class:`MazeMDPEnv`,
  drawn by :func:`plot_maze` and :func:`plot_sweeps`); 200 steps.
- ``rl_mind/PongDuel-v0``: Pong Duel, the two-player self-play game. ``gymnasium.make``
  gives one match against an opponent (:class:`PongDuelEnv`), ``gymnasium.make_vec`` (and
  ``rl_mind.VecEnv``) the natively vectorized :class:`PongDuelVectorEnv`;
  :class:`PongDuelParallelEnv` is the two-player PettingZoo-style view and
  :class:`PongDuelGame` the batched two-player core. Rules in :mod:`rl_mind.envs.pong_game`.

Importing :mod:`rl_mind` does not import this package: registering environments is a side
effect that a notebook asks for explicitly.
"""

from __future__ import annotations

import gymnasium

from rl_mind.envs.cartpole_continuous import CartPoleContinuousEnv
from rl_mind.envs.maze_mdp import ACTION_NAMES, MazeMDPEnv, plot_maze, plot_sweeps
from rl_mind.envs.pong_duel import (
    MatchResult,
    PongDuelEnv,
    PongDuelVectorEnv,
    pong_duel_observation_space,
)
from rl_mind.envs.pong_game import PongDuelGame, PongDuelStep
from rl_mind.envs.pong_opponents import (
    BUILTIN_OPPONENTS,
    NumpyPolicy,
    PredictiveOpponent,
    RandomOpponent,
    ScriptedOpponent,
    as_numpy_policy,
)
from rl_mind.envs.pong_parallel import PongDuelParallelEnv
from rl_mind.envs.pong_render import render_frame, render_match
from rl_mind.envs.pong_rules import PongDuelRules

__all__ = [
    "ACTION_NAMES",
    "BUILTIN_OPPONENTS",
    "CartPoleContinuousEnv",
    "MatchResult",
    "MazeMDPEnv",
    "NumpyPolicy",
    "PongDuelEnv",
    "PongDuelGame",
    "PongDuelParallelEnv",
    "PongDuelRules",
    "PongDuelStep",
    "PongDuelVectorEnv",
    "PredictiveOpponent",
    "RandomOpponent",
    "ScriptedOpponent",
    "as_numpy_policy",
    "plot_maze",
    "plot_sweeps",
    "pong_duel_observation_space",
    "render_frame",
    "render_match",
]


def _register() -> None:
    if "CartPoleContinuous-v1" not in gymnasium.registry:
        gymnasium.register(
            id="CartPoleContinuous-v1",
            entry_point="rl_mind.envs.cartpole_continuous:CartPoleContinuousEnv",
            max_episode_steps=500,
            reward_threshold=475.0,
        )
    if "MazeMDP-v0" not in gymnasium.registry:
        gymnasium.register(
            id="MazeMDP-v0",
            entry_point="rl_mind.envs.maze_mdp:MazeMDPEnv",
            max_episode_steps=200,  # as in rl-mind 0.4: a truncation
        )
    if "rl_mind/PongDuel-v0" not in gymnasium.registry:
        # No max_episode_steps: the game truncates itself at its own time limit (1,500).
        gymnasium.register(
            id="rl_mind/PongDuel-v0",
            entry_point="rl_mind.envs.pong_duel:PongDuelEnv",
            vector_entry_point="rl_mind.envs.pong_duel:PongDuelVectorEnv",
        )


_register()


def __getattr__(name: str) -> object:
    if name == "ContinuousCartPoleEnv":  # rl-mind 0.4's name
        import warnings

        warnings.warn(
            "ContinuousCartPoleEnv is rl-mind 0.4's name; write CartPoleContinuousEnv "
            "(or gymnasium.make('CartPoleContinuous-v1'))",
            DeprecationWarning,
            stacklevel=2,
        )
        return CartPoleContinuousEnv
    raise AttributeError(f"module 'rl_mind.envs' has no attribute {name!r}")
