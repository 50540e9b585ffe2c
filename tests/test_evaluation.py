"""Tests of rl_mind.evaluation: checkpoints, actor_policy, record_video and the Evaluator."""

from __future__ import annotations

import collections
import errno
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import gymnasium as gym
import imageio_ffmpeg
import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from rl_mind import (
    Action,
    Actor,
    CheckpointError,
    EvalResult,
    Evaluator,
    TensorStruct,
    VecEnv,
    actor_policy,
    load_checkpoint,
    record_video,
    save_checkpoint,
    write_video,
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


# ====================================================================== checkpoints
def training_state() -> dict[str, Any]:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    return {
        "learner": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "counters": {"steps": 12_345, "updates": 7, "elapsed": 3.5, "done": False},
        "pool": [{"name": "snapshot-0", "rating": 1012.5, "weights": net.state_dict()}],
        "rng": {"torch": torch.get_rng_state(), "python": random.getstate()},
        "note": None,
        "shape": (2, 3),
    }


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, Tensor):
        assert isinstance(b, Tensor) and torch.equal(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


def test_checkpoint_round_trips_a_nested_training_state(tmp_path: Path) -> None:
    state = training_state()
    path = save_checkpoint(state, tmp_path / "sub" / "state.pt")
    assert path == (tmp_path / "sub" / "state.pt").resolve() and path.is_file()
    assert_same(state, load_checkpoint(path))
    # nothing but the checkpoint is left in the folder
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.pt"]


def test_save_checkpoint_refuses_values_weights_only_loading_cannot_read(tmp_path: Path) -> None:
    state = {"rng": {"numpy": np.random.get_state()}}
    with pytest.raises(TypeError, match=r"obj\['rng'\]\['numpy'\]\[1\].*ndarray.*torch.as_tensor"):
        save_checkpoint(state, tmp_path / "state.pt")
    with pytest.raises(TypeError, match="state_dict"):
        save_checkpoint({"net": nn.Linear(1, 1)}, tmp_path / "state.pt")
    assert not (tmp_path / "state.pt").exists()
    # the items of a tuple key too (a numpy one would be saved, then refused at loading)
    save_checkpoint({"visits": {(3, "a"): 5}}, tmp_path / "state.pt")
    with pytest.raises(TypeError, match=r"key \(np.int64\(3\), 0\) at obj\['visits'\] \(its item"):
        save_checkpoint({"visits": {(np.int64(3), 0): 5}}, tmp_path / "state.pt")
    assert load_checkpoint(tmp_path / "state.pt") == {"visits": {(3, "a"): 5}}  # kept
    with pytest.raises(ValueError, match="folder"):
        save_checkpoint({}, tmp_path)


def test_a_crash_in_the_middle_of_a_save_leaves_the_previous_checkpoint_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "best.pt"
    save_checkpoint({"version": 1, "w": torch.ones(1000)}, path)
    real_save = torch.save

    def crashing_save(obj: Any, file: Any) -> None:
        real_save(obj, file)
        file.truncate(100)  # half-written
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(torch, "save", crashing_save)
    with pytest.raises(RuntimeError, match="simulated crash"):
        save_checkpoint({"version": 2, "w": torch.zeros(1000)}, path)
    monkeypatch.undo()
    assert load_checkpoint(path)["version"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["best.pt"]  # the temporary file is gone


def test_a_process_killed_in_the_middle_of_a_save_leaves_the_previous_checkpoint_intact(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.pt"
    save_checkpoint({"version": 1}, path)
    script = textwrap.dedent(
        f"""
        import os, torch
        from rl_mind.evaluation import save_checkpoint
        real_save = torch.save
        def dying_save(obj, file):
            real_save(obj, file)
            file.flush()
            file.truncate(50)
            os._exit(9)  # killed: no cleanup, no exception handler runs
        torch.save = dying_save
        save_checkpoint({{"version": 2, "w": torch.ones(10_000)}}, {str(path)!r})
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert result.returncode == 9, result.stderr.decode()
    assert load_checkpoint(path) == {"version": 1}


def test_load_checkpoint_refuses_a_truncated_or_corrupt_file_naming_it(tmp_path: Path) -> None:
    path = save_checkpoint({"w": torch.arange(10_000.0), "step": 3}, tmp_path / "state.pt")
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 5):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match=r"state\.pt.*(truncated|corrupt)"):
            load_checkpoint(path)
    flipped = bytearray(data)
    middle = len(flipped) // 2
    flipped[middle : middle + 64] = bytes(64)
    path.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match=r"state\.pt.*corrupt"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        load_checkpoint(tmp_path / "missing.pt")
    assert issubclass(CheckpointError, ValueError)


class NotATensor:
    def __init__(self) -> None:
        self.payload = 1


def test_load_checkpoint_never_unpickles_arbitrary_objects(tmp_path: Path) -> None:
    path = tmp_path / "sent_by_someone.pt"
    torch.save({"evil": NotATensor()}, path)
    with pytest.raises(CheckpointError, match=r"sent_by_someone\.pt.*weights_only"):
        load_checkpoint(path)


SMALL_STATE = {"w": torch.arange(6.0), "step": 3, "name": "ab"}


def load_or_refuse(path: Path) -> str:
    """Load the damaged ``path``: ``"same"`` if it gives SMALL_STATE back, ``"refused"`` if
    it is a one-line CheckpointError naming the file; anything else fails the test."""
    try:
        loaded = load_checkpoint(path)
    except CheckpointError as error:
        message = str(error)
        assert str(path) in message and "\n" not in message and "not loaded" in message, message
        return "refused"
    assert_same(SMALL_STATE, loaded)
    return "same"


def test_every_single_byte_change_of_a_checkpoint_is_refused_or_loads_the_same_content(
    tmp_path: Path,
) -> None:
    # (one changed byte used to raise UnicodeDecodeError, NotImplementedError or a bare
    # ValueError, and once loaded a tensor of other values)
    data = save_checkpoint(SMALL_STATE, tmp_path / "state.pt").read_bytes()
    damaged = tmp_path / "damaged.pt"
    outcomes: collections.Counter[str] = collections.Counter()
    for position in range(len(data)):
        changed = bytearray(data)
        changed[position] ^= 0xFF
        damaged.write_bytes(bytes(changed))
        outcomes[load_or_refuse(damaged)] += 1
    assert outcomes["refused"] > len(data) / 2  # (the sweep does change what matters)


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    folder = tmp_path_factory.mktemp("checkpoint")
    return save_checkpoint(SMALL_STATE, folder / "state.pt").read_bytes(), folder / "damaged.pt"


@settings(max_examples=150, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=4
    )
)
def test_a_checkpoint_with_a_few_bytes_changed_is_refused_or_loads_the_same_content(
    small_checkpoint: tuple[bytes, Path], changes: list[tuple[float, int]]
) -> None:
    data, damaged = small_checkpoint
    changed = bytearray(data)
    for where, flip in changes:
        changed[int(where * len(data))] ^= flip
    damaged.write_bytes(bytes(changed))
    load_or_refuse(damaged)


def test_a_content_changed_behind_valid_crcs_is_refused_by_its_checksum(tmp_path: Path) -> None:
    path = save_checkpoint({"w": torch.ones(4)}, tmp_path / "state.pt")
    checkpoint = torch.load(path, weights_only=True)  # an ordinary torch file
    assert sorted(checkpoint) == ["content", "format", "sha256"]
    content = checkpoint["content"].clone()
    content[len(content) // 2] ^= 1
    torch.save({**checkpoint, "content": content}, path)  # (torch.save writes fresh CRCs)
    with pytest.raises(
        CheckpointError, match=r"state\.pt is corrupt: its content does not match its SHA-256"
    ):
        load_checkpoint(path)


def test_a_plain_torch_file_has_no_checksum_and_is_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.pt"
    torch.save({"w": torch.ones(2)}, path)
    message = r"plain\.pt carries no rl-mind checksum \(a plain torch.save file.*not loaded"
    with pytest.raises(CheckpointError, match=message + r".*torch.load\(path, weights_only=True\)"):
        load_checkpoint(path)


class TaggedTensor(Tensor):
    """A Tensor subclass: torch.save writes it, weights_only loading refuses it."""


def test_save_checkpoint_refuses_up_front_what_load_checkpoint_would_refuse(
    tmp_path: Path,
) -> None:
    # (a Tensor subclass used to be saved, then refused at loading)
    path = save_checkpoint({"version": 1}, tmp_path / "state.pt")
    tagged = torch.ones(3).as_subclass(TaggedTensor)
    with pytest.raises(TypeError, match=r"obj\['w'\] is a .*TaggedTensor.*as_subclass"):
        save_checkpoint({"w": tagged}, path)
    # what only torch's own reading finds (an object hidden in a tensor's attributes) too
    hidden = torch.ones(2)
    hidden.note = NotATensor()  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"cannot read back \(.*NotATensor"):
        save_checkpoint({"w": hidden}, path)
    assert load_checkpoint(path) == {"version": 1}  # the file is as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]
    parameters = load_checkpoint(save_checkpoint({"p": nn.Parameter(torch.ones(2))}, path))
    assert isinstance(parameters["p"], nn.Parameter)


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


def test_load_checkpoint_says_when_the_device_is_the_problem(tmp_path: Path) -> None:
    # (not "truncated or corrupt": the file is fine)
    path = save_checkpoint({"w": torch.ones(2)}, tmp_path / "state.pt")
    with pytest.raises(ValueError, match="map_location: device 'gpu' is not a torch device"):
        load_checkpoint(path, map_location="gpu")
    with pytest.raises(ValueError, match="map_location: device 'cuda:99' is not available"):
        load_checkpoint(path, map_location="cuda:99")
    assert torch.equal(load_checkpoint(path, map_location=torch.device("cpu"))["w"], torch.ones(2))


def test_write_video_rejects_frames_of_different_sizes(tmp_path: Path) -> None:
    frames = [np.zeros((8, 8, 3), np.uint8), np.zeros((10, 8, 3), np.uint8)]
    with pytest.raises(ValueError, match="frame 1 is 8x10"):
        write_video(frames, tmp_path / "clip.mp4")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no frames"):
        write_video([], tmp_path / "clip.mp4")


# ====================================================================== Evaluator: bad input
def test_evaluator_rejects_bad_arguments(tmp_path: Path) -> None:
    for every in (0, -5, True, 2.5):
        with pytest.raises(ValueError, match="every must be a positive"):
            Evaluator(PAINT_ID, every=every)  # type: ignore[arg-type]
    with (
        VecEnv(PAINT_ID, 2, same_step_reset=True) as same_step_env,
        pytest.raises(ValueError, match="same-step reset.*whole episodes"),
    ):
        Evaluator(same_step_env, every=10)
    a_file = tmp_path / "not_a_folder"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="run_dir .* is a file"):
        Evaluator(PAINT_ID, every=10, run_dir=a_file)
    with pytest.raises(TypeError, match="gymnasium id or a VecEnv"):
        Evaluator(42, every=10)  # type: ignore[arg-type]
    # (a folder name given as the writer used to fail after the first evaluation)
    with pytest.raises(TypeError, match="writer must be a .*SummaryWriter, got str .*run_dir"):
        Evaluator(PAINT_ID, 10, tmp_path / "run", "logs")  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("seed", [-1, "a", 1.5, None, True])
def test_evaluator_refuses_a_bad_seed_when_it_is_built(tmp_path: Path, seed: Any) -> None:
    # (the VecEnv raised gymnasium.error.Error, and with a given VecEnv only the first run)
    message = re.escape("Evaluator: seed must be an int >= 0 (copy i is reset with seed + i")
    with VecEnv(PAINT_ID, 2) as env:
        for source in (PAINT_ID, env):
            with pytest.raises(ValueError, match=message + r".*got " + re.escape(repr(seed))):
                Evaluator(source, every=10, seed=seed, run_dir=tmp_path / "run")
    with pytest.raises(ValueError, match="unknown environment id"):
        Evaluator("rl_mind_test_eval/Nothing-v0", every=10, run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # a refused evaluator leaves no folder
    with Evaluator(PAINT_ID, every=10, seed=np.int64(3), num_episodes=2) as evaluator:
        assert evaluator.seed == 3 and type(evaluator.seed) is int
        assert evaluator.run(0, BiasActor()).mean > 0


def test_evaluator_run_says_when_its_arguments_are_swapped() -> None:
    # (the swapped call compared the actor with an int: "'<' not supported between ...")
    with Evaluator(PAINT_ID, every=10, num_episodes=2) as evaluator:
        for method in (evaluator.run_if_needed, evaluator.run):
            name = method.__name__
            with pytest.raises(
                TypeError, match=rf"{name}\(steps, actor\): the arguments are swapped"
            ):
                method(BiasActor(), 0)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match=rf"{name}: steps .* must be an int >= 0, got -1"):
                method(-1, BiasActor())
            with pytest.raises(TypeError, match=rf"{name}: expected an Actor.*got str"):
                method(0, "actor")  # type: ignore[arg-type]
        assert evaluator.history == []
        assert evaluator.run_if_needed(np.int64(0), BiasActor()) is not None


def test_evaluator_names_the_expected_action_shape() -> None:
    with (
        Evaluator(PAINT_ID, every=10, num_episodes=4) as evaluator,
        pytest.raises(ValueError, match=r"shape \[4, 1\]; expected \[4\]"),
    ):
        evaluator.run(0, WrongShapeActor())


# ====================================================================== Evaluator: episodes
def test_each_copy_counts_only_its_first_episode() -> None:
    with Evaluator(PAINT_ID, every=10, num_episodes=5, seed=10) as evaluator:
        result = evaluator.run(0, BiasActor(bias=1.0))  # action 1: reward 2 per step
    lengths = torch.tensor([paint_length(10 + i) for i in range(5)])
    assert len(set(lengths.tolist())) == 5  # episodes of different lengths
    assert torch.equal(result.lengths, lengths)  # type: ignore[arg-type]
    assert torch.equal(result.rewards, 2.0 * lengths.float())
    assert result.mean == pytest.approx(2.0 * lengths.float().mean().item())
    assert result.std == pytest.approx(2.0 * lengths.float().std(correction=0).item())


def test_every_evaluation_plays_the_same_episode_seeds() -> None:
    with VecEnv(PAINT_ID, 3, seed=123) as env, Evaluator(env, every=10, seed=7) as evaluator:
        first = evaluator.run(0, BiasActor(bias=-1.0))
        env.reset(seed=999)  # someone else used the env in between: no effect
        second = evaluator.run(10, BiasActor(bias=-1.0))
    expected = torch.tensor([float(paint_length(7 + i)) for i in range(3)])
    assert torch.equal(first.rewards, expected) and torch.equal(second.rewards, expected)


def test_unfinished_episodes_are_cut_at_max_steps() -> None:
    with Evaluator(ENDLESS_ID, every=10, num_episodes=2, max_steps=25) as evaluator:
        result = evaluator.run(0, BiasActor(bias=-1.0))
    assert result.rewards.tolist() == [25.0, 25.0] and result.lengths.tolist() == [25, 25]  # type: ignore[union-attr]


def test_dict_observations_flow_through_the_evaluator() -> None:
    actor = RecordingDictActor()
    with Evaluator(DICT_ID, every=10, num_episodes=2) as evaluator:
        result = evaluator.run(0, actor)
    assert result.rewards.tolist() == pytest.approx([1.5, 1.5])
    assert isinstance(actor.seen[0], TensorStruct)


# ====================================================================== Evaluator: schedule, best
def test_run_if_needed_evaluates_at_the_start_then_every_every_steps() -> None:
    with Evaluator(PAINT_ID, every=100, num_episodes=2) as evaluator:
        actor = BiasActor()
        ran = [s for s in (0, 50, 99, 100, 150, 250, 299, 300) if evaluator.run_if_needed(s, actor)]
    assert ran == [0, 100, 250, 300]
    assert [result.step for result in evaluator.history] == ran


def test_the_best_actor_is_a_deep_copy_of_the_best_evaluated_actor() -> None:
    actor = BiasActor(bias=-1.0)  # action 0: reward 1 per step
    with Evaluator(PAINT_ID, every=10, num_episodes=3) as evaluator:
        worse = evaluator.run(0, actor)
        with torch.no_grad():
            actor.head.bias.fill_(1.0)  # now action 1: reward 2 per step
        better = evaluator.run(10, actor)
        with torch.no_grad():
            actor.head.bias.fill_(-1.0)
        again = evaluator.run(20, actor)
    assert (worse.is_best, better.is_best, again.is_best) == (True, True, False)
    assert evaluator.best_reward == pytest.approx(better.mean)
    assert evaluator.best_step == 10
    best = evaluator.best_actor
    assert best is not None and best is not actor
    assert best.head.bias.item() == 1.0  # the live network changed since, the copy did not
    assert all(p.grad is None for p in best.parameters())


def test_best_actor_checkpoint_reloads_into_a_fresh_network(tmp_path: Path) -> None:
    torch.manual_seed(0)
    actor = BiasActor(bias=0.3)
    with Evaluator(PAINT_ID, every=10, run_dir=tmp_path / "run", num_episodes=2) as evaluator:
        evaluator.run(0, actor)
        path = evaluator.best_checkpoint_path
    assert path is not None and path == (tmp_path / "run" / "best_actor.pt").resolve()
    checkpoint = load_checkpoint(path)
    assert checkpoint["step"] == 0 and checkpoint["mean_return"] == pytest.approx(
        evaluator.history[0].mean
    )
    fresh = BiasActor(bias=-5.0)
    fresh.load_state_dict(checkpoint["state_dict"])
    fresh.eval()
    actor.eval()
    obs = torch.randn(16, 2)
    assert torch.equal(fresh.scores(obs), actor.scores(obs))


def evaluator_record(evaluator: Evaluator[Any]) -> tuple[Any, ...]:
    return (
        list(evaluator.history),
        evaluator.best_reward,
        evaluator.best_step,
        evaluator.best_actor,
    )


def test_an_evaluation_whose_best_actor_cannot_be_saved_records_nothing_and_is_still_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (it used to record the new best in history, best_reward and best_step while
    # best_actor.pt still held the old actor, and never saved the new one)
    run_dir = tmp_path / "run"
    actor = BiasActor(bias=-1.0)  # reward 1 per step
    with Evaluator(PAINT_ID, every=10, run_dir=run_dir, num_episodes=2) as evaluator:
        evaluator.run_if_needed(0, actor)
        path = evaluator.best_checkpoint_path
        assert path is not None
        saved, before = path.read_bytes(), evaluator_record(evaluator)
        with torch.no_grad():
            actor.head.bias.fill_(1.0)  # reward 2 per step: a new best

        def full_disk(*args: Any, **kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "replace", full_disk)
        with pytest.raises(
            OSError,
            match=r"could not save the best actor to .*best_actor\.pt .*No space left on "
            r"device.*at step 10 was not recorded .*still due",
        ):
            evaluator.run_if_needed(10, actor)
        monkeypatch.undo()
        assert evaluator_record(evaluator) == before and path.read_bytes() == saved
        assert not list(run_dir.glob("*.tmp"))
        path.unlink()
        path.mkdir()  # a real failure: a folder where the checkpoint goes
        with pytest.raises(ValueError, match=r"best_actor\.pt is a folder"):
            evaluator.run_if_needed(10, actor)
        assert evaluator_record(evaluator) == before
        path.rmdir()
        # still due: the next call evaluates again and saves the new best
        result = evaluator.run_if_needed(10, actor)
    assert result is not None and result.is_best
    assert [r.step for r in evaluator.history] == [0, 10] and evaluator.best_step == 10
    assert load_checkpoint(path)["step"] == 10


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_an_evaluation_into_a_read_only_run_directory_records_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with Evaluator(PAINT_ID, every=10, run_dir=run_dir, num_episodes=2) as evaluator:
        evaluator.run(0, BiasActor(bias=-1.0))
        before = evaluator_record(evaluator)
        run_dir.chmod(0o500)
        try:
            with pytest.raises(OSError, match="could not save the best actor"):
                evaluator.run(10, BiasActor(bias=1.0))
        finally:
            run_dir.chmod(0o700)
        assert evaluator_record(evaluator) == before


def test_an_evaluation_leaves_the_actor_mode_and_gradient_flags_untouched() -> None:
    actor = BiasActor()
    actor.train()
    actor.body[1].eval()  # a mixed state must come back exactly
    actor.body[0].weight.requires_grad_(False)
    flags = [p.requires_grad for p in actor.parameters()]
    with Evaluator(PAINT_ID, every=10, num_episodes=2) as evaluator:
        evaluator.run(0, actor)
    assert actor.training and actor.body.training and not actor.body[1].training
    assert [p.requires_grad for p in actor.parameters()] == flags
    assert actor.calls_with_grad == 0 and actor.modes_seen == {False}
    assert evaluator.best_actor is not None
    assert not evaluator.best_actor.body[1].training and evaluator.best_actor.training


class ElsewhereActor(Actor[Action]):
    """Claims to live on the ``meta`` device and records where its observations are."""

    def __init__(self, continuous: bool = False) -> None:
        super().__init__()
        self.continuous = continuous
        self.devices: list[torch.device] = []

    @property
    def device(self) -> torch.device:
        return torch.device("meta")

    def act(self, obs: Any) -> Tensor:
        self.devices.append(obs.device)
        if self.continuous:
            return torch.ones(len(obs), 1)
        return torch.ones(len(obs), dtype=torch.long)


def test_observations_are_moved_to_the_actor_device() -> None:
    actor, dict_actor = ElsewhereActor(), ElsewhereActor(continuous=True)
    with Evaluator(PAINT_ID, every=10, num_episodes=2) as evaluator:
        assert evaluator.run(0, actor).mean > 0
    with Evaluator(DICT_ID, every=10, num_episodes=2) as evaluator:
        assert evaluator.run(0, dict_actor).rewards.tolist() == [3.0, 3.0]
    assert actor_policy(actor, spaces.Discrete(2))(np.zeros(2, np.float32)) == 1
    for seen in (actor.devices, dict_actor.devices):
        assert seen and {device.type for device in seen} == {"meta"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_an_actor_on_a_gpu_is_evaluated_and_filmed_without_moving_observations(
    tmp_path: Path,
) -> None:
    actor = BiasActor().cuda()
    with Evaluator(DICT_ID, every=10, num_episodes=2) as evaluator:
        evaluator.run(0, RecordingDictActor().cuda())
    with Evaluator(PAINT_ID, every=10, num_episodes=2) as evaluator:
        result = evaluator.run(0, actor)
        assert result.rewards.device.type == "cpu"
        assert evaluator.best_actor is not None
        assert next(evaluator.best_actor.parameters()).is_cuda
    assert actor_policy(actor, spaces.Discrete(2))(np.zeros(2, np.float32)) == 1
    assert record_video(actor, PAINT_ID, tmp_path, seed=0).is_file()


# ====================================================================== Evaluator: logs, plot, video
def test_evaluation_scalars_are_written_to_tensorboard_at_the_training_steps(
    tmp_path: Path,
) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    with Evaluator(PAINT_ID, every=100, run_dir=run_dir, num_episodes=3) as evaluator:
        actor = BiasActor(bias=-1.0)
        evaluator.run_if_needed(0, actor)
        with torch.no_grad():
            actor.head.bias.fill_(1.0)
        evaluator.run_if_needed(120, actor)
        evaluator.run_if_needed(150, actor)  # not due: nothing logged
    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {
        "eval/mean_return",
        "eval/std_return",
        "eval/min_return",
        "eval/max_return",
        "eval/mean_length",
    } <= tags
    means = events.Scalars("eval/mean_return")
    assert [event.step for event in means] == [0, 120]
    assert [event.value for event in means] == pytest.approx([r.mean for r in evaluator.history])
    maxima = events.Scalars("eval/max_return")
    assert [event.value for event in maxima] == pytest.approx([r.max for r in evaluator.history])


def test_a_given_writer_is_used_and_left_open(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path / "logs"))
    with Evaluator(PAINT_ID, every=10, num_episodes=2, writer=writer) as evaluator:
        evaluator.run(5, BiasActor())
        assert evaluator.writer is writer
    writer.add_scalar("still/open", 1.0, 0)  # not closed by the evaluator
    writer.close()
    assert list((tmp_path / "logs").glob("events.out.tfevents.*"))


def test_plot_draws_the_learning_curve_with_the_best_marked(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    with Evaluator(PAINT_ID, every=10, num_episodes=2) as evaluator:
        with pytest.raises(ValueError, match="no evaluation"):
            evaluator.plot()
        evaluator.run(0, BiasActor(bias=-1.0))
        evaluator.run(10, BiasActor(bias=1.0))
        ax = evaluator.plot(path=tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 1000
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["mean return"].get_xdata()) == [0, 10]
    best = next(line for label, line in lines.items() if label.startswith("best"))
    assert list(best.get_xdata()) == [10]
    assert ax.collections  # the ± std band


def test_visualize_best_prints_and_returns_the_video_from_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Evaluator(PAINT_ID, every=10, run_dir=tmp_path, num_episodes=2) as evaluator:
        with pytest.raises(RuntimeError, match="no evaluation has run yet"):
            evaluator.visualize_best()
        evaluator.run(0, BiasActor())
        path = evaluator.visualize_best()
    assert path.is_file() and path.parent == tmp_path.resolve()
    assert str(path) in capsys.readouterr().out
    assert len(read_video(path)[1]) == paint_length(0) + 1  # the evaluation's first seed


def test_eval_result_statistics() -> None:
    result = EvalResult(step=3, rewards=torch.tensor([1.0, 3.0]), is_best=True)
    assert (result.mean, result.std, result.min, result.max) == (2.0, 1.0, 1.0, 3.0)
    assert "mean=2.00" in repr(result)
    assert EvalResult(0, torch.tensor([4.0]), False).std == 0.0


def test_importing_rl_mind_imports_no_heavy_optional_module() -> None:
    code = (
        "import sys, rl_mind; "
        "print([m for m in ('tensorboard', 'moviepy', 'matplotlib', 'ipywidgets') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_collections_ordered_dict_state_is_accepted(tmp_path: Path) -> None:
    state = collections.OrderedDict(a=torch.ones(2), b=[1, 2.5, "x"])
    path = save_checkpoint(state, tmp_path / os.path.join("a", "b.pt"))
    assert_same(dict(state), dict(load_checkpoint(path)))
