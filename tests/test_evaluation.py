"""Tests of rl_mind.evaluation: the Evaluator and EvalResult."""

from __future__ import annotations

import errno
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import Tensor

from rl_mind import (
    Action,
    Actor,
    EvalResult,
    Evaluator,
    TensorStruct,
    VecEnv,
    actor_policy,
    load_checkpoint,
    read_evaluations,
    record_video,
)
from rl_mind.records import CSV_COLUMNS, EVALUATIONS_FILE, append_evaluation
from tests.evaluation_toys import (
    DICT_ID,
    ENDLESS_ID,
    PAINT_ID,
    BiasActor,
    RecordingDictActor,
    WrongShapeActor,
    paint_length,
    read_video,
)


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


@pytest.mark.parametrize("seed", [-1, "a", 1.5, True])
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
        assert evaluator.run_if_needed(np.int64(10), BiasActor()) is not None


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


class NoTorque(Actor[Action]):
    def forward(self, obs: Tensor) -> Action:
        return Action(torch.zeros(obs.shape[0], 1))


def test_seed_none_evaluates_as_rl_mind_0_4_without_reseeding() -> None:
    # 0.4 reset its VecEnv without a seed: the VecEnv's own seed at the first evaluation,
    # then the environments' generators went on (other start states at each evaluation)
    with (
        VecEnv("Pendulum-v1", 2, seed=5) as env,
        Evaluator(env, every=10, seed=None) as unseeded,
        Evaluator("Pendulum-v1", every=10, num_episodes=2, seed=5) as seeded,
    ):
        assert unseeded.seed is None
        first, second = (unseeded.run(steps, NoTorque()).rewards for steps in (10, 20))
        fixed = [seeded.run(steps, NoTorque()).rewards for steps in (10, 20)]
    assert torch.equal(first, fixed[0]) and torch.equal(fixed[1], fixed[0])
    assert not torch.equal(second, first)


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
def test_run_if_needed_evaluates_as_rl_mind_0_4_did_once_every_steps_past_the_last() -> None:
    # (0.4's schedule: nothing before `every`, then `every` steps after the last evaluation;
    # evaluating at the first call added a point to every curve and could film an untrained
    # actor as "the best")
    steps = (0, 1, 50, 99, 100, 150, 199, 200, 250, 299, 300, 420, 510, 520)
    with Evaluator(PAINT_ID, every=100, num_episodes=2) as evaluator:
        actor = BiasActor()
        ran = [s for s in steps if evaluator.run_if_needed(s, actor)]
    assert ran == [100, 200, 300, 420, 520]
    assert [result.step for result in evaluator.history] == ran


def test_an_explicit_run_counts_as_the_last_evaluation_of_the_schedule() -> None:
    with Evaluator(PAINT_ID, every=100, num_episodes=2) as evaluator:
        actor = BiasActor()
        evaluator.run(30, actor)
        assert evaluator.run_if_needed(100, actor) is None
        assert evaluator.run_if_needed(130, actor) is not None


def test_best_reward_is_minus_infinity_before_any_evaluation_as_in_rl_mind_0_4() -> None:
    with Evaluator(PAINT_ID, every=100, num_episodes=2) as evaluator:
        assert evaluator.best_reward == -math.inf
        assert f"{evaluator.best_reward:.1f}" == "-inf"  # (None made this a TypeError)
        assert evaluator.run_if_needed(10, BiasActor()) is None
        assert evaluator.best_reward == -math.inf and evaluator.best_actor is None
        assert "best=none" in repr(evaluator)


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
        evaluator.run(0, actor)
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
    with Evaluator(PAINT_ID, every=100, run_dir=run_dir, num_episodes=3, logs=True) as evaluator:
        actor = BiasActor(bias=-1.0)
        evaluator.run(0, actor)
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


def test_a_run_dir_without_logs_gets_no_log_files_as_in_rl_mind_0_4(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with Evaluator(PAINT_ID, every=10, run_dir=run_dir, num_episodes=2) as evaluator:
        evaluator.run_if_needed(10, BiasActor())
        evaluator.run_if_needed(20, BiasActor())
        assert evaluator.writer is None
    assert sorted(path.name for path in run_dir.iterdir()) == ["best_actor.pt"]


def test_logs_write_one_csv_row_per_evaluation_with_the_extras_as_columns(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    with Evaluator(PAINT_ID, every=10, run_dir=run_dir, num_episodes=3, logs=True) as evaluator:
        actor = BiasActor(bias=-1.0)
        first = evaluator.run_if_needed(10, actor)
        second = evaluator.run_if_needed(25, actor)
        assert evaluator.run_if_needed(30, actor) is None
    assert first is not None and second is not None
    rows = read_evaluations(run_dir)
    assert [row["step"] for row in rows] == [10, 25]
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert rows[1]["mean_return"] == pytest.approx(second.mean)
    assert rows[1]["max_return"] == pytest.approx(second.max)
    assert second.lengths is not None
    assert rows[1]["mean_length"] == pytest.approx(float(second.lengths.float().mean()))
    assert read_evaluations(run_dir / EVALUATIONS_FILE) == rows
    assert list(run_dir.glob("events.out.tfevents.*"))

    extra = EvalResult(40, torch.tensor([1.0, 3.0]), False, None, {"critic_bias": 0.5, "a": -1.0})
    append_evaluation(extra, tmp_path / "extras.csv")
    (row,) = read_evaluations(tmp_path / "extras.csv")
    assert list(row) == [*CSV_COLUMNS, "a", "critic_bias"]
    assert (row["step"], row["mean_return"], row["critic_bias"], row["a"]) == (40, 2.0, 0.5, -1.0)
    assert math.isnan(row["mean_length"])
    writer = _Scalars()
    Evaluator._log(writer, extra)  # type: ignore[arg-type]
    assert writer.scalars["eval/critic_bias"] == (0.5, 40)
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert [event.step for event in events.Scalars("eval/mean_return")] == [10, 25]


class _Scalars:
    """A writer that keeps what it is given."""

    def __init__(self) -> None:
        self.scalars: dict[str, tuple[float, int]] = {}

    def add_scalar(self, tag: str, value: float, global_step: int) -> None:
        self.scalars[tag] = (value, global_step)

    def flush(self) -> None:
        pass


def test_logs_need_a_run_dir_and_a_bool() -> None:
    with pytest.raises(ValueError, match=r"logs must be True \(with a run_dir"):
        Evaluator(PAINT_ID, every=10, num_episodes=2, logs=True)
    with pytest.raises(ValueError, match="got logs='yes'"):
        Evaluator(PAINT_ID, every=10, num_episodes=2, logs="yes")  # type: ignore[arg-type]


def test_a_given_writer_is_used_and_left_open(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path / "logs"))
    with Evaluator(PAINT_ID, every=10, num_episodes=2, writer=writer) as evaluator:
        evaluator.run(5, BiasActor())
        assert evaluator.writer is writer
    writer.add_scalar("still/open", 1.0, 0)  # not closed by the evaluator
    writer.close()
    assert list((tmp_path / "logs").glob("events.out.tfevents.*"))


class ScalarRecorder:
    """A writer with add_scalar only, as rl-mind 0.4 accepted (no flush)."""

    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag: str, value: float, global_step: int) -> None:
        self.scalars.append((tag, value, global_step))


def test_a_writer_with_add_scalar_only_can_be_given_or_set_later_as_in_rl_mind_0_4() -> None:
    given, later = ScalarRecorder(), ScalarRecorder()
    with Evaluator(PAINT_ID, every=10, num_episodes=2, writer=given) as evaluator:  # type: ignore[arg-type]
        evaluator.run(5, BiasActor())
        evaluator.writer = later  # type: ignore[assignment]  (0.4's writer was an attribute)
        evaluator.run(15, BiasActor())
        with pytest.raises(TypeError, match="Evaluator.writer must be a SummaryWriter, got str"):
            evaluator.writer = "logs"  # type: ignore[assignment]
        assert evaluator.writer is later
    assert {step for _tag, _value, step in given.scalars} == {5}
    assert ("eval/mean_return", evaluator.history[1].mean, 15) in later.scalars


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


def test_visualize_best_takes_rl_mind_0_4_video_argument_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (0.4's deep-RL notebooks end with evaluator.visualize_best(video=True))
    with Evaluator(PAINT_ID, every=10, run_dir=tmp_path, num_episodes=2) as evaluator:
        evaluator.run(0, BiasActor())
        with pytest.warns(
            DeprecationWarning, match=r"visualize_best\(video=.*call visualize_best\(\)"
        ):
            by_keyword = evaluator.visualize_best(video=True)
        with pytest.warns(DeprecationWarning, match=r"call visualize_best\(\)"):
            positional = evaluator.visualize_best(True)  # type: ignore[arg-type]
        with pytest.warns(DeprecationWarning, match="trimmer and width.*are ignored"):
            player = evaluator.visualize_best(video=False, width="400px")
    for path in (by_keyword, positional, player):
        assert path.is_file() and path.parent == tmp_path.resolve()
        assert len(read_video(path)[1]) == paint_length(0) + 1
    assert len({by_keyword, positional, player}) == 3
    assert str(player) in capsys.readouterr().out


def test_visualize_best_takes_every_rl_mind_0_4_positional_call_with_the_new_spelling(
    tmp_path: Path,
) -> None:
    # 0.4's signature: visualize_best(video=False, seed=0, trimmer=None, fps=30, width="400px")
    calls: list[tuple[tuple[Any, ...], dict[str, Any], str, int]] = [
        ((True, 3), {}, r"visualize_best\(True, 3\): call visualize_best\(seed=3\)", 3),
        ((False, 2, None, 30), {}, r"call visualize_best\(seed=2, fps=30\)", 2),
        ((True, 1, None, 24, "400px"), {}, r"call visualize_best\(seed=1, fps=24\)", 1),
        ((True,), {"seed": 4}, r"visualize_best\(True, seed=4\): call visualize_best\(seed=4\)", 4),
        ((), {"video": True, "fps": 12}, r"call visualize_best\(fps=12\)", 0),
    ]
    with Evaluator(PAINT_ID, every=10, run_dir=tmp_path, num_episodes=2) as evaluator:
        evaluator.run(0, BiasActor())
        for args, kwargs, new_spelling, seed in calls:
            with pytest.warns(DeprecationWarning, match=new_spelling) as caught:
                path = evaluator.visualize_best(*args, **kwargs)
            assert caught[0].filename == __file__  # (the warning points at the call)
            assert path.is_file() and path.parent == tmp_path.resolve()
            assert len(read_video(path)[1]) == paint_length(seed) + 1, (args, kwargs)


def test_visualize_best_refuses_calls_that_are_neither_0_4_nor_new_ones(tmp_path: Path) -> None:
    with Evaluator(PAINT_ID, every=10, run_dir=tmp_path, num_episodes=2) as evaluator:
        evaluator.run(0, BiasActor())
        with pytest.raises(TypeError, match="one positional argument, the directory"):
            evaluator.visualize_best(tmp_path, 3)
        with pytest.raises(TypeError, match="directory must be a path.*not int"):
            evaluator.visualize_best(3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="at most 5 positional arguments"):
            evaluator.visualize_best(True, 0, None, 30, "400px", 1)
        with pytest.raises(TypeError, match="two values for seed"):
            evaluator.visualize_best(True, 3, seed=4)


def test_evaluator_run_with_only_an_actor_is_rl_mind_0_4_call_and_records_nothing() -> None:
    with Evaluator(PAINT_ID, every=10, num_episodes=3) as evaluator:
        with pytest.warns(DeprecationWarning, match=r"call evaluator\.run\(steps, actor\)"):
            rewards = evaluator.run(BiasActor())
        assert evaluator.history == [] and evaluator.best_actor is None
        result = evaluator.run(0, BiasActor())
    assert isinstance(rewards, Tensor) and torch.equal(rewards, result.rewards)
    assert rewards.tolist() == [2.0 * paint_length(i) for i in range(3)]


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
