"""Tiny deterministic gymnasium environments written for the tests.

Importing this module registers them (idempotently) under ``rl_mind_test/...``. Entry
points are strings (``"tests.toy_envs:CounterEnv"``) so that asynchronous vectorization
can rebuild them in its subprocesses.

``CounterEnv``'s observation encodes where it is: the copy's ``tag`` (the seed of its
first seeded reset, so ``seed + i`` for copy ``i`` of a seeded ``VecEnv``), the episode
number ``k`` in that copy, the ``step`` within the episode, and a ``flag`` saying whether
this observation ends the episode (0 running, 1 terminated, 2 truncated). Episodes last
a random number of steps in ``[1, max_len]`` and end terminated or truncated at random.
The reward of a step is ``action + 1`` (discrete) or ``sum(action)`` (continuous), so a
test can check which action was recorded. Auto-reset bugs show up as a ``next_obs``
that is not the successor of its ``obs``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

from rl_mind.core import Action, Actor, TensorStruct

COUNTER_ID = "rl_mind_test/Counter-v0"
GEOMETRIC_ID = "rl_mind_test/Geometric-v0"
ENDLESS_ID = "rl_mind_test/Endless-v0"

N_ACTIONS = 3
FLAG_RUNNING, FLAG_TERMINATED, FLAG_TRUNCATED = 0, 1, 2
_DISCRETE_STATES = 10**12


class CounterEnv(gym.Env[Any, Any]):
    """Observation = (tag, episode k, step, flag), as a Box, a Discrete index or a Dict."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        obs_kind: str = "box",
        action_kind: str = "discrete",
        max_len: int = 6,
        action_start: int = 0,
        action_low: float = -1.0,
    ):
        self.obs_kind = obs_kind
        self.max_len = max_len
        if obs_kind == "box":
            self.observation_space = spaces.Box(0.0, 1e7, (4,), np.float32)
        elif obs_kind == "discrete":
            self.observation_space = spaces.Discrete(_DISCRETE_STATES)
        elif obs_kind == "dict":
            self.observation_space = spaces.Dict(
                {
                    "where": spaces.Box(0.0, 1e7, (2,), np.float32),  # (tag, k)
                    "step": spaces.Discrete(max_len + 1),
                    "flag": spaces.Discrete(3),
                }
            )
        else:
            raise ValueError(obs_kind)
        if action_kind == "discrete":
            self.action_space = spaces.Discrete(N_ACTIONS, start=action_start)
        else:
            self.action_space = spaces.Box(action_low, 1.0, (2,), np.float32)
        self.tag = 0
        self.k = -1
        self.t = 0
        self.length = 1
        self.ends_terminated = True

    def _obs(self, flag: int) -> Any:
        if self.obs_kind == "box":
            return np.array([self.tag, self.k, self.t, flag], dtype=np.float32)
        if self.obs_kind == "discrete":
            return ((self.tag * 1000 + self.k) * (self.max_len + 1) + self.t) * 3 + flag
        return {
            "where": np.array([self.tag, self.k], dtype=np.float32),
            "step": self.t,
            "flag": flag,
        }

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.tag, self.k = seed, -1
        self.k += 1
        self.t = 0
        self.length = int(self.np_random.integers(1, self.max_len + 1))
        self.ends_terminated = bool(self.np_random.random() < 0.5)
        return self._obs(FLAG_RUNNING), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if isinstance(self.action_space, spaces.Discrete):
            assert self.action_space.contains(action), action
            reward = float(action) + 1.0
        else:
            reward = float(np.sum(action))
        self.t += 1
        ended = self.t >= self.length
        terminated = ended and self.ends_terminated
        truncated = ended and not self.ends_terminated
        flag = FLAG_TERMINATED if terminated else FLAG_TRUNCATED if truncated else FLAG_RUNNING
        return self._obs(flag), reward, terminated, truncated, {}


class GeometricEnv(gym.Env[Any, Any]):
    """Each step ends the episode (terminated) with probability ``p``: mean length ``1/p``."""

    def __init__(self, p: float = 1 / 30):
        self.p = p
        self.observation_space = spaces.Box(0.0, np.inf, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        terminated = bool(self.np_random.random() < self.p)
        return np.array([self.t], dtype=np.float32), 1.0, terminated, False, {}


class EndlessEnv(GeometricEnv):
    """Never ends."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return np.array([self.t], dtype=np.float32), 1.0, False, False, {}


def register() -> None:
    """Register the toy environments (idempotent)."""
    for env_id, entry_point in [
        (COUNTER_ID, "tests.toy_envs:CounterEnv"),
        (GEOMETRIC_ID, "tests.toy_envs:GeometricEnv"),
        (ENDLESS_ID, "tests.toy_envs:EndlessEnv"),
    ]:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, disable_env_checker=True)


register()


# ---------------------------------------------------------------------- decoding
def decode(obs: Tensor | TensorStruct, max_len: int = 6) -> Tensor:
    """``[..., 4]`` long (tag, k, step, flag) of any ``CounterEnv`` observation batch."""
    if isinstance(obs, TensorStruct):
        where = obs.where.long()  # type: ignore[attr-defined]
        return torch.stack([where[..., 0], where[..., 1], obs.step, obs.flag], dim=-1)  # type: ignore[attr-defined]
    if obs.dtype == torch.long:
        flag = obs % 3
        rest = obs // 3
        step = rest % (max_len + 1)
        rest = rest // (max_len + 1)
        return torch.stack([rest // 1000, rest % 1000, step, flag], dim=-1)
    return obs.long()


def policy_action(code: Tensor) -> Tensor:
    """The deterministic action the test actor takes for decoded observations ``[..., 4]``."""
    return (code[..., 1] + code[..., 2]) % N_ACTIONS


class CounterActor(Actor[Action]):
    """Acts ``(k + step) % 3`` on ``CounterEnv``; records how often it ran with gradients."""

    def __init__(self, max_len: int = 6) -> None:
        super().__init__()
        self.max_len = max_len
        self.calls = 0
        self.calls_with_grad = 0

    def forward(self, obs: Tensor | TensorStruct) -> Action:
        self.calls += 1
        self.calls_with_grad += int(torch.is_grad_enabled())
        return Action(policy_action(decode(obs, self.max_len)))


class ConstantActor(Actor[Action]):
    """Always action 0 (for environments whose action does not matter)."""

    def forward(self, obs: Tensor | TensorStruct) -> Action:
        n = len(obs)
        return Action(torch.zeros(n, dtype=torch.long))
