"""Written files respect the umask (as open() does), so that work handed in through a shared
folder can be read there: checkpoints, the evaluator's best actor, videos."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from rl_mind import Action, Actor, Evaluator, save_checkpoint, write_video


@pytest.fixture(params=[0o022, 0o027], ids=["umask-022", "umask-027"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class Left(Actor[Action]):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, obs: torch.Tensor) -> Action:
        return Action(torch.zeros(len(obs), dtype=torch.long))


def test_a_checkpoint_and_a_video_get_the_mode_of_a_new_file(tmp_path: Path, umask: int) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    expected = 0o666 & ~umask
    assert mode(plain) == expected
    assert mode(save_checkpoint({"step": torch.tensor(3)}, tmp_path / "state.pt")) == expected
    frames = [np.full((16, 16, 3), 10 * i, dtype=np.uint8) for i in range(3)]
    assert mode(write_video(frames, tmp_path / "clip.mp4", fps=5)) == expected


def test_the_best_actor_is_readable_by_the_group(tmp_path: Path, umask: int) -> None:
    evaluator = Evaluator("CartPole-v1", every=10, run_dir=tmp_path, num_episodes=1)
    try:
        evaluator.run_if_needed(10, Left())
        assert mode(evaluator.best_checkpoint_path) == 0o666 & ~umask
    finally:
        evaluator.close()


def test_the_umask_is_read_where_proc_does_not_tell_it(
    monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    import builtins

    from rl_mind import checkpoints

    real_open = builtins.open

    def no_proc(file: object, *args: object, **kwargs: object) -> object:
        if str(file).startswith("/proc/"):
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", no_proc)
    assert checkpoints.mode_of_new_files() == 0o666 & ~umask
    assert os.umask(umask) == umask  # and the umask is as it was
