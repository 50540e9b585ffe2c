"""Pong Duel with both players as agents, following PettingZoo's parallel API.

Agents ``"player_0"`` (left, blue) and ``"player_1"`` (right, orange) act at the same time:
``step({"player_0": a0, "player_1": a1})`` returns dicts of observations (each mirrored so
that the agent is on the left), rewards (zero-sum), ``terminated``, ``truncated`` and
infos. When the match ends both agents leave (``agents`` becomes empty), as PettingZoo
expects. PettingZoo itself is not needed to use this class (it is duck-typed), only to
check it with ``pettingzoo.test.parallel_api_test``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from gymnasium import spaces

from rl_mind.envs.pong_duel import pong_duel_observation_space
from rl_mind.envs.pong_game import PongDuelGame
from rl_mind.envs.pong_render import TRAIL_LENGTH, render_match
from rl_mind.envs.pong_rules import PongDuelRules, rules_with

__all__ = ["PongDuelParallelEnv"]

_AGENTS = ("player_0", "player_1")


class PongDuelParallelEnv:
    """One Pong Duel match between two agents (PettingZoo parallel API).

    Args:
        render_mode: ``None`` or ``"rgb_array"``.
        point_reward: the shaping reward per point (see :class:`PongDuelEnv`).
        max_steps: the time limit (see :class:`PongDuelEnv`).
        rules: all the numbers of the game (see :class:`PongDuelEnv`).
    """

    metadata = {
        "name": "pong_duel_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 50,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        point_reward: float | None = None,
        max_steps: int | None = None,
        rules: PongDuelRules | None = None,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"PongDuelParallelEnv: render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.rules = rules_with(rules, point_reward, max_steps)
        self.possible_agents = list(_AGENTS)
        self.agents: list[str] = []
        self.game = PongDuelGame(1, self.rules)
        self._observation_space = pong_duel_observation_space()
        self._action_space = spaces.Discrete(3)
        self.observation_spaces = dict.fromkeys(_AGENTS, self._observation_space)
        self.action_spaces = dict.fromkeys(_AGENTS, self._action_space)
        self._trail: deque[tuple[float, float]] = deque(maxlen=TRAIL_LENGTH)

    def observation_space(self, agent: str) -> spaces.Box:
        """The same space object for every call (PettingZoo requires it)."""
        self._check_agent(agent)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        self._check_agent(agent)
        return self._action_space

    @property
    def unwrapped(self) -> PongDuelParallelEnv:
        return self

    @staticmethod
    def _check_agent(agent: str) -> None:
        if agent not in _AGENTS:
            raise ValueError(
                f"PongDuelParallelEnv: unknown agent {agent!r}, expected one of {_AGENTS}"
            )

    def _observations(self) -> dict[str, np.ndarray]:
        both = self.game.observe()
        return {"player_0": both[0, 0], "player_1": both[1, 0]}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            self.game.seed(seed)
        self.game.reset_matches(np.zeros(1, dtype=np.int64))
        self.agents = list(_AGENTS)
        self._trail.clear()
        return self._observations(), {agent: {} for agent in _AGENTS}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if not self.agents:
            raise RuntimeError("PongDuelParallelEnv.step: the match is over; call reset()")
        if set(actions) != set(_AGENTS):
            raise ValueError(
                f"PongDuelParallelEnv.step: expected one action for each of {_AGENTS}, got keys "
                f"{sorted(actions)}"
            )
        both = np.array(
            [[np.asarray(actions["player_0"]).item()], [np.asarray(actions["player_1"]).item()]]
        )
        ball_before = (float(self.game.ball_x[0]), float(self.game.ball_y[0]))
        score_before = int(self.game.score.sum())
        result = self.game.step(both)
        if int(self.game.score.sum()) != score_before and not result.terminated[0]:
            self._trail.clear()
        else:
            self._trail.append(ball_before)
        reward = float(result.reward[0])
        terminated, truncated = bool(result.terminated[0]), bool(result.truncated[0])
        observations = self._observations()
        score = (int(self.game.score[0, 0]), int(self.game.score[1, 0]))
        infos: dict[str, dict[str, Any]] = {
            "player_0": {"score": score},
            "player_1": {"score": score[::-1]},
        }
        if terminated or truncated:
            self.agents = []
        return (
            observations,
            {"player_0": reward, "player_1": -reward},
            dict.fromkeys(_AGENTS, terminated),
            dict.fromkeys(_AGENTS, truncated),
            infos,
        )

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            return None
        return render_match(self.game, 0, trail=list(self._trail))

    def state(self) -> np.ndarray:
        """The global state: player 0's observation (it sees everything)."""
        return self.game.observe(0)[0]

    def close(self) -> None:
        pass
