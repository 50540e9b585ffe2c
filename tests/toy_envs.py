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
CLOCK_ID = "rl_mind_test/Clock-v0"
CLOCK_TIME_LIMIT = 60

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


class ClockEnv(gym.Env[Any, Any]):
    """A known value function: reward ``1 + action`` (one continuous action in [-1, 1]) at
    every step; a copy reset with an even seed terminates after ``4 + seed`` steps, one with
    an odd seed never terminates (gymnasium's time limit cuts it at ``CLOCK_TIME_LIMIT``).
    Observation: ``(t, terminate_at)``, ``terminate_at`` = -1 for never."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1e6, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t, self.terminate_at = 0, -1

    def _obs(self) -> Any:
        return np.array([self.t, self.terminate_at], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.terminate_at = 4 + seed if seed % 2 == 0 else -1
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        terminated = self.t == self.terminate_at
        return self._obs(), 1.0 + float(np.asarray(action).reshape(-1)[0]), terminated, False, {}


def clock_value(obs: Tensor, gamma: float, reward: float) -> Tensor:
    """The true value ``[N]`` of ``ClockEnv``'s observations ``[N, 2]`` under a policy whose
    reward is ``reward`` at every step: the discounted sum to termination, or for ever."""
    t, terminate_at = obs[:, 0].double(), obs[:, 1].double()
    forever = torch.full_like(t, reward / (1 - gamma))
    remaining = (terminate_at - t).clamp(min=0)
    return torch.where(terminate_at < 0, forever, reward * (1 - gamma**remaining) / (1 - gamma))


def register() -> None:
    """Register the toy environments (idempotent)."""
    for env_id, entry_point in [
        (COUNTER_ID, "tests.toy_envs:CounterEnv"),
        (GEOMETRIC_ID, "tests.toy_envs:GeometricEnv"),
        (ENDLESS_ID, "tests.toy_envs:EndlessEnv"),
    ]:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, disable_env_checker=True)
    if CLOCK_ID not in gym.registry:
        gym.register(id=CLOCK_ID, entry_point="tests.toy_envs:ClockEnv",
                     max_episode_steps=CLOCK_TIME_LIMIT, disable_env_checker=True)  # fmt: skip


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
