"""Toy environments and actors of the tests of the evaluator, the videos and actor_policy
(registered with gymnasium on import), and a video reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import imageio_ffmpeg
import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from rl_mind import (
    Action,
    Actor,
)

# ---------------------------------------------------------------------- toy environments
PAINT_ID = "rl_mind_test_eval/Paint-v0"
ENDLESS_ID = "rl_mind_test_eval/Endless-v0"
HUMAN_ONLY_ID = "rl_mind_test_eval/HumanOnly-v0"
DICT_ID = "rl_mind_test_eval/DictObs-v0"
HEIGHT, WIDTH = 21, 31  # odd on purpose: the video must pad them to even sizes


def paint_length(seed: int) -> int:
    """The episode length of a PaintEnv reset with ``seed``: 2..6 steps."""
    return 2 + seed % 5


class PaintEnv(gym.Env[np.ndarray, int]):
    """Observation ``[t, seed]``; reward ``1 + action`` per step; the episode lasts
    ``paint_length(seed)`` steps; the frame is a colour gradient that depends on ``t``."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, length: int | None = None) -> None:
        self.render_mode = render_mode
        self.fixed_length = length
        self.observation_space = spaces.Box(0.0, 1e6, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0
        self.seed_ = 0
        self.length = 1

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.seed_ = seed
        self.t = 0
        self.length = self.fixed_length or paint_length(self.seed_)
        return self._obs(), {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.seed_], dtype=np.float32)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.action_space.contains(action), action
        self.t += 1
        return self._obs(), 1.0 + float(action), self.t >= self.length, False, {}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        rows = np.linspace(0, 200, HEIGHT)[:, None]
        cols = np.linspace(0, 200, WIDTH)[None, :]
        frame = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
        frame[..., 0] = rows + 0 * cols
        frame[..., 1] = (cols + 0 * rows) * 0.5 + 20 * (self.t % 5)
        frame[..., 2] = 40 * (self.t % 6)
        return frame


class EndlessEnv(PaintEnv):
    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, _terminated, truncated, info = super().step(action)
        return obs, reward, False, truncated, info


class HumanOnlyEnv(PaintEnv):
    metadata: dict[str, Any] = {"render_modes": ["human"], "render_fps": 10}


class DictObsEnv(gym.Env[dict, np.ndarray]):
    """Dict observation; continuous action; reward = action[0]; 3 steps."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {"position": spaces.Box(-1.0, 1.0, (2,), np.float32), "cell": spaces.Discrete(5)}
        )
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self) -> dict:
        return {"position": np.array([0.5, -0.5], dtype=np.float32), "cell": self.t}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), float(action[0]), self.t >= 3, False, {}


for _id, _entry in [
    (PAINT_ID, PaintEnv),
    (ENDLESS_ID, EndlessEnv),
    (HUMAN_ONLY_ID, HumanOnlyEnv),
    (DICT_ID, DictObsEnv),
]:
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_entry, disable_env_checker=True)


# ---------------------------------------------------------------------- toy actors
class BiasActor(Actor[Action]):
    """A small network whose deterministic action is 1 when ``bias > 0``, else 0.

    Has dropout (so its train/eval mode matters) and records whether it ran with grads.
    """

    def __init__(self, bias: float = 1.0) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 4), nn.Dropout(0.5))
        self.head = nn.Linear(4, 1)
        with torch.no_grad():
            self.head.weight.zero_()
            self.head.bias.fill_(bias)
        self.calls_with_grad = 0
        self.modes_seen: set[bool] = set()

    def scores(self, obs: Tensor) -> Tensor:
        return self.head(self.body(obs)).squeeze(-1)

    def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
        self.calls_with_grad += int(torch.is_grad_enabled())
        self.modes_seen.add(self.training)
        return Action((self.scores(obs) > 0).long())


class WrongShapeActor(Actor[Action]):
    def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
        return Action(torch.zeros(len(obs), 1, dtype=torch.long))


class RecordingDictActor(Actor[Action]):
    """Continuous action ``position[:, :1]``; remembers the observations it got."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.seen: list[Any] = []

    def forward(self, obs: Any) -> Action:  # type: ignore[override]
        self.seen.append(obs)
        return Action(obs.position[:, :1] * self.scale)


def read_video(path: Path) -> tuple[dict[str, Any], list[np.ndarray]]:
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    frames = [np.frombuffer(raw, np.uint8).reshape(height, width, 3) for raw in reader]
    return meta, frames
