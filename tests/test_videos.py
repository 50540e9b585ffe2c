"""Tests of rl_mind.videos: actor_policy, record_video and write_video."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import Tensor

from rl_mind import (
    Action,
    Actor,
    TensorStruct,
    VecEnv,
    actor_policy,
    record_video,
    write_video,
)
from tests.evaluation_toys import (
    DICT_ID,
    ENDLESS_ID,
    HEIGHT,
    HUMAN_ONLY_ID,
    PAINT_ID,
    WIDTH,
    BiasActor,
    RecordingDictActor,
    WrongShapeActor,
    paint_length,
    read_video,
)


# ====================================================================== actor_policy
def test_actor_policy_returns_gymnasium_actions_for_box_observations() -> None:
    actor = BiasActor(bias=1.0)
    policy = actor_policy(actor, spaces.Discrete(2))
    action = policy(np.array([0.0, 3.0], dtype=np.float32))
    assert action == 1 and isinstance(action, int)
    assert actor.calls_with_grad == 0


def test_actor_policy_converts_dict_observations_like_the_vecenv() -> None:
    env = gym.make(DICT_ID)
    actor = RecordingDictActor()
    policy = actor_policy(actor, env.action_space, env.observation_space)
    obs, _ = env.reset(seed=0)
    action = policy(obs)
    assert isinstance(action, np.ndarray) and action.shape == (1,) and action.dtype == np.float32
    assert action[0] == pytest.approx(0.5)
    seen = actor.seen[-1]
    assert isinstance(seen, TensorStruct)
    assert seen.position.shape == (1, 2) and seen.position.dtype == torch.float32
    assert seen.cell.shape == (1,) and seen.cell.dtype == torch.long
    with VecEnv(DICT_ID, 1) as vec_env:  # the same types as a VecEnv batch
        batch = vec_env.reset(seed=0)
        assert type(batch) is type(seen)
    # without the observation space, the types are inferred the same way
    inferred = actor_policy(actor, env.action_space)
    inferred(obs)
    assert type(actor.seen[-1]) is type(seen) and actor.seen[-1].cell.dtype == torch.long


def test_actor_policy_handles_discrete_state_indices() -> None:
    class TableActor(Actor[Action]):
        def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
            assert obs.dtype == torch.long and obs.shape == (1,)
            return Action((obs + 1) % 4)

    policy = actor_policy(TableActor(), spaces.Discrete(4), spaces.Discrete(16))
    assert policy(np.int64(6)) == 3
    assert actor_policy(TableActor(), spaces.Discrete(4))(7) == 0


def test_actor_policy_names_the_expected_action_shape() -> None:
    policy = actor_policy(WrongShapeActor(), spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"shape \[1, 1\]; expected \[1\]"):
        policy(np.zeros(2, dtype=np.float32))
    with pytest.raises(TypeError, match="Discrete or Box"):
        actor_policy(WrongShapeActor(), spaces.MultiBinary(3))


class ConstantAct(Actor[Action]):
    """Acts ``value`` (a 0-d tensor) in every row."""

    def __init__(self, value: Tensor) -> None:
        super().__init__()
        self.value = value

    def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
        return Action(self.value.expand(len(obs)).clone())


def test_actor_policy_checks_action_values_as_the_vecenv_does() -> None:
    # (gymnasium's own check is a bare AssertionError, or none: a float was truncated)
    obs = np.zeros(2, dtype=np.float32)
    discrete = spaces.Discrete(3, start=1)
    assert actor_policy(ConstantAct(torch.tensor(3)), discrete)(obs) == 3
    with pytest.raises(ValueError, match=r"discrete action 4; expected one in \[1, 3\]"):
        actor_policy(ConstantAct(torch.tensor(4)), discrete)(obs)
    with pytest.raises(ValueError, match=r"discrete action 0; expected one in \[1, 3\]"):
        actor_policy(ConstantAct(torch.tensor(0)), discrete)(obs)
    with pytest.raises(ValueError, match=r"dtype torch.float32; expected integers.*\.long\(\)"):
        actor_policy(ConstantAct(torch.tensor(1.7)), discrete)(obs)
    with pytest.raises(ValueError, match="dtype torch.bool"):
        actor_policy(ConstantAct(torch.tensor(True)), discrete)(obs)
    box = spaces.Box(-2.0, 2.0, (1,))

    class Continuous(Actor[Action]):
        def __init__(self, value: float | int) -> None:
            super().__init__()
            self.value = value

        def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
            return Action(torch.full((len(obs), 1), self.value))

    assert actor_policy(Continuous(0.5), box)(obs).tolist() == [0.5]
    with pytest.raises(ValueError, match=r"not finite: \[nan\]"):
        actor_policy(Continuous(float("nan")), box)(obs)
    with pytest.raises(ValueError, match=r"dtype torch.int64; expected floating-point"):
        actor_policy(Continuous(1), box)(obs)


# ====================================================================== record_video
def test_recorded_video_is_a_playable_file_with_the_episode_frames(tmp_path: Path) -> None:
    actor = BiasActor()
    actor.train()
    path = record_video(actor, PAINT_ID, tmp_path / "videos", seed=3)
    assert path.suffix == ".mp4" and path.parent == (tmp_path / "videos").resolve()
    meta, frames = read_video(path)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    assert meta["fps"] == pytest.approx(10)  # the environment's render_fps
    assert meta["size"] == (WIDTH + 1, HEIGHT + 1)  # padded to even sizes
    assert len(frames) == paint_length(3) + 1  # one frame per state, the first one included
    env = gym.make(PAINT_ID, render_mode="rgb_array")
    env.reset(seed=3)
    first = env.render()
    assert first is not None
    decoded = frames[0][:HEIGHT, :WIDTH].astype(int)
    assert np.abs(decoded - first.astype(int)).mean() < 4  # H.264 is lossy
    env.step(1)
    second = env.render()
    assert second is not None
    assert np.abs(frames[1][:HEIGHT, :WIDTH].astype(int) - second.astype(int)).mean() < 4
    # the actor's mode is restored and it ran without gradients, in eval mode
    assert actor.training and actor.body[1].training
    assert actor.calls_with_grad == 0 and actor.modes_seen == {False}


def test_record_video_cuts_long_episodes_and_never_overwrites(tmp_path: Path) -> None:
    first = record_video(BiasActor(), ENDLESS_ID, tmp_path, max_steps=7, fps=25)
    second = record_video(BiasActor(), ENDLESS_ID, tmp_path, max_steps=3, fps=25)
    assert first != second and first.is_file() and second.is_file()
    meta, frames = read_video(first)
    assert len(frames) == 8 and meta["fps"] == pytest.approx(25)
    assert len(read_video(second)[1]) == 4
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file


def test_record_video_films_a_real_gymnasium_environment(tmp_path: Path) -> None:
    class Left(Actor[Action]):
        def forward(self, obs: Tensor) -> Action:  # type: ignore[override]
            return Action(torch.zeros(len(obs), dtype=torch.long))

    path = record_video(Left(), "CartPole-v1", tmp_path, seed=1, max_steps=5)
    meta, frames = read_video(path)
    assert meta["size"] == (600, 400) and len(frames) == 6
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=1)
    assert np.abs(frames[0].astype(int) - env.render().astype(int)).mean() < 3  # type: ignore[union-attr]
    env.close()


def test_record_video_names_the_render_modes_of_an_environment_without_rgb_array(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match=r"no 'rgb_array' render mode.*\['human'\]"):
        record_video(BiasActor(), HUMAN_ONLY_ID, tmp_path)
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        record_video(BiasActor(), PAINT_ID, tmp_path, render_mode="human")
    assert list(tmp_path.iterdir()) == []


def test_record_video_says_what_is_wrong_with_its_environment_arguments(tmp_path: Path) -> None:
    # an environment object instead of its id
    env = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"gymnasium id \(str\).*got TimeLimit.*'CartPole-v1'"):
        record_video(BiasActor(), env, tmp_path)  # type: ignore[arg-type]
    env.close()
    # a keyword the constructor does not take is named (not blamed on render_mode)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        record_video(BiasActor(), "CartPole-v1", tmp_path, colour="red")
    # an action the environment refuses is caught before it reaches gymnasium
    with pytest.raises(ValueError, match=r"discrete action 5; expected one in \[0, 1\]"):
        record_video(ConstantAct(torch.tensor(5)), "CartPole-v1", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_package_ids_hint_at_import_rl_mind_envs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # (importing rl_mind registers no environment: rl_mind.envs does)
    monkeypatch.delitem(sys.modules, "rl_mind.envs", raising=False)
    for make in (
        lambda: VecEnv("rl_mind/Nothing-v0", 1),
        lambda: record_video(BiasActor(), "rl_mind/Nothing-v0", tmp_path),
    ):
        with pytest.raises(
            ValueError, match=r"unknown environment id.*registered by `import rl_mind.envs`"
        ):
            make()
    with pytest.raises(ValueError, match="unknown environment id") as error:
        VecEnv("CartPol-v1", 1)
    assert "rl_mind.envs" not in str(error.value)


def test_write_video_refuses_one_frame_given_as_the_video(tmp_path: Path) -> None:
    # (an array is read along its first axis: a [H, W, 3] frame would be H frames of rows)
    frame = np.zeros((40, 60, 3), np.uint8)
    with pytest.raises(ValueError, match=r"\[time, height, width, 3\], got shape \[40, 60, 3\]"):
        write_video(frame, tmp_path / "a.mp4")
    with pytest.raises(ValueError, match="pass \\[frame\\]"):
        write_video(torch.zeros(40, 60, 3, dtype=torch.uint8), tmp_path / "a.mp4")
    assert not list(tmp_path.iterdir())


def test_write_video_rejects_frames_of_different_sizes(tmp_path: Path) -> None:
    frames = [np.zeros((8, 8, 3), np.uint8), np.zeros((10, 8, 3), np.uint8)]
    with pytest.raises(ValueError, match="frame 1 is 8x10"):
        write_video(frames, tmp_path / "clip.mp4")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no frames"):
        write_video([], tmp_path / "clip.mp4")


def test_record_video_takes_the_wrappers_positionally_as_rl_mind_0_4_did(tmp_path: Path) -> None:
    def two_steps(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
        return gym.wrappers.TimeLimit(env, max_episode_steps=2)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = record_video(BiasActor(), PAINT_ID, tmp_path, [two_steps], seed=3)
    assert len(read_video(path)[1]) == 3  # (the episode of seed 3 lasts 5 steps unwrapped)
    assert paint_length(3) == 5
