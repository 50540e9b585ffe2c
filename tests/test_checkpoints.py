"""Tests of rl_mind.checkpoints: atomic saves, safe and verified loads."""

from __future__ import annotations

import collections
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from rl_mind import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)


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


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # (torch, on a damaged file)
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


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # (torch, on a damaged file)
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


def test_load_checkpoint_says_when_the_device_is_the_problem(tmp_path: Path) -> None:
    # (not "truncated or corrupt": the file is fine)
    path = save_checkpoint({"w": torch.ones(2)}, tmp_path / "state.pt")
    with pytest.raises(ValueError, match="map_location: device 'gpu' is not a torch device"):
        load_checkpoint(path, map_location="gpu")
    with pytest.raises(ValueError, match="map_location: device 'cuda:99' is not available"):
        load_checkpoint(path, map_location="cuda:99")
    assert torch.equal(load_checkpoint(path, map_location=torch.device("cpu"))["w"], torch.ones(2))


def test_collections_ordered_dict_state_is_accepted(tmp_path: Path) -> None:
    state = collections.OrderedDict(a=torch.ones(2), b=[1, 2.5, "x"])
    path = save_checkpoint(state, tmp_path / os.path.join("a", "b.pt"))
    assert_same(dict(state), dict(load_checkpoint(path)))
