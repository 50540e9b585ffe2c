"""The main job, ``rl-mind selfplay``: PPO learns Pong Duel by self-play, as a script.

:func:`train` runs the self-play PPO of :mod:`rl_mind.selfplay.trainer` (its
:func:`~rl_mind.selfplay.trainer.training_updates` loop: TensorBoard, evaluations) for a
time budget and adds what a script needs between and around its updates: start lines that say what it does and
where, a progress bar on a terminal or a line per evaluation elsewhere, a run directory, a
checkpoint at regular intervals and at the end, Ctrl-C, ``--resume``; then the
leaderboard's round robin and the film of the best snapshot against the scripted bot.
:func:`main` is the command line.

A run directory holds::

    checkpoint.pt          the whole training state (atomic writes; --resume reads it)
    config.json            the settings of the run
    events.out.tfevents.*  TensorBoard scalars (tensorboard --logdir <run dir>)
    evaluations.csv        win rates against random / scripted / predictive over time
    leaderboard.md/.csv    Bradley–Terry ratings of snapshots and bots (round robin)
    leaderboard.png        the ratings against training steps
    match-best-vs-scripted-*.mp4   the best snapshot (blue, left) against the scripted bot

What the reader must not get wrong:

- The budget (``--minutes``) counts training time (collection and PPO updates); the
  evaluations, the final round robin and the video come on top.
- Ctrl-C stops at the end of the current update and saves a checkpoint (a second Ctrl-C
  interrupts at once, still saving). ``--resume RUN_DIR`` continues that run until its
  budget is spent: learner, optimizer, pool, ratings, counters and random states are
  restored; matches in progress when it stopped are replaced by fresh ones. A run whose
  budget is spent is left untouched (``--minutes`` with a larger total trains it on).
- The checkpoint's format is that of :mod:`rl_mind.selfplay.checkpoint`. A truncated or
  corrupt checkpoint is refused (:class:`~rl_mind.evaluation.CheckpointError`
  naming the file); it is never loaded half.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from rl_mind.checkpoints import CheckpointError, save_checkpoint
from rl_mind.notebook import Profile, run_directory
from rl_mind.selfplay.checkpoint import (
    CHECKPOINT_NAME,
    job_state,
    read_job_checkpoint,
    restored_trainer,
)
from rl_mind.selfplay.ratings import Leaderboard
from rl_mind.selfplay.report import VIDEO_NAME, write_leaderboard
from rl_mind.selfplay.trainer import (
    BOTS,
    ENV_NAME,
    SelfPlayConfig,
    SelfPlayTrainer,
    best_snapshot,
    training_updates,
)
from rl_mind.selfplay.trainer import leaderboard as play_leaderboard
from rl_mind.videos import record_video

__all__ = ["SelfPlayRun", "default_minutes", "main", "train"]


def default_minutes() -> float:
    """The default training-time budget: 5 minutes (0.1 under the fast-test profile)."""
    return Profile.pick(5.0, fast_test=0.1)


# ---------------------------------------------------------------------- the job
@dataclasses.dataclass
class SelfPlayRun:
    """What :func:`train` produced. Paths are absolute; ``None`` where not produced
    (``interrupted`` runs skip the leaderboard and the video; ``already_done``: a resumed
    run whose budget was spent, left as it was)."""

    run_dir: Path
    checkpoint: Path
    trainer: SelfPlayTrainer
    interrupted: bool
    final_evaluation: dict[str, float] | None = None
    leaderboard: Leaderboard | None = None
    leaderboard_table: Path | None = None
    leaderboard_plot: Path | None = None
    video: Path | None = None
    already_done: bool = False

    def paths(self) -> dict[str, Path]:
        """The files and folders to show at the end of a run."""
        found = {
            "run directory (TensorBoard logs)": self.run_dir,
            "checkpoint": self.checkpoint,
            "evaluations": self.run_dir / "evaluations.csv",
        }
        for label, path in (
            ("leaderboard", self.leaderboard_table),
            ("leaderboard plot", self.leaderboard_plot),
            ("match video", self.video),
        ):
            if path is not None:
                found[label] = path
        return found


class _StopRequest:
    """Turns the first Ctrl-C into a request to stop at the end of the current update."""

    def __init__(self) -> None:
        self.requested = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        try:
            previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: leave Ctrl-C alone
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nCtrl-C: stopping after this update and saving a checkpoint "
            "(Ctrl-C again to stop at once)",
            file=sys.stderr,
        )


def _clock(seconds: float) -> str:
    """``"2:05"`` for 125 seconds."""
    minutes, rest = divmod(max(0, int(seconds)), 60)
    return f"{minutes}:{rest:02d}"


def _win_rates(evaluation: Mapping[str, float]) -> str:
    """``"random 100% scripted 85% predictive 74%"``."""
    return " ".join(f"{bot} {evaluation[f'win_rate_vs_{bot}']:.0%}" for bot in BOTS)


class _Progress:
    """What the job shows while it trains. With ``bar``: a bar over the training-time budget,
    ``training 2:31/5:00 |███   | random 100% scripted 85% predictive 74%`` (within 80
    columns); without (output to a file, a pipe, CI): one line per evaluation, printed as
    it comes."""

    def __init__(self, trainer: SelfPlayTrainer, minutes: float, bar: bool) -> None:
        self.budget = 60.0 * minutes
        self.shown = len(trainer.eval_history)  # (a resumed run's were shown before)
        self.bar: Any = None
        if bar:
            from tqdm import tqdm

            total = max(1, round(self.budget))
            self.bar = tqdm(total=total, file=sys.stdout, bar_format=self._format(trainer))
            self.show(trainer)

    def _format(self, trainer: SelfPlayTrainer) -> str:
        seconds = min(trainer.train_seconds, self.budget)
        history = trainer.eval_history
        rates = _win_rates(history[-1]) if history else ""
        return f"training {_clock(seconds)}/{_clock(self.budget)} |{{bar}}| {rates}"

    def show(self, trainer: SelfPlayTrainer) -> None:
        """Show the evaluations ``trainer`` made since the last call, and where it stands."""
        history = trainer.eval_history
        new, self.shown = history[self.shown :], len(history)
        if self.bar is None:
            for row in new:
                print(
                    f"training {_clock(row['seconds'])}/{_clock(self.budget)}  update "
                    f"{int(row['updates'])}  {int(row['env_steps']):,} game steps  win rate vs "
                    f"{_win_rates(row)}",
                    flush=True,
                )
            return
        position = min(int(trainer.train_seconds), self.bar.total)
        text = self._format(trainer)
        if position != self.bar.n or text != self.bar.bar_format:  # (a redraw when it changed)
            self.bar.bar_format, self.bar.n = text, position
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _open_run(
    config: SelfPlayConfig | None,
    minutes: float | None,
    run_dir: str | Path | None,
    resume: str | Path | None,
    device: str | None,
) -> tuple[Path, SelfPlayTrainer, float]:
    """The run directory, the trainer (restored when resuming) and the budget of a run;
    nothing is written but the new run's folder."""
    if resume is not None:
        folder = Path(resume).expanduser().resolve()
        state = read_job_checkpoint(folder)
        trainer = restored_trainer(state, device, folder / CHECKPOINT_NAME)
        return folder, trainer, float(state["minutes"]) if minutes is None else float(minutes)
    config = config if config is not None else SelfPlayConfig.for_profile()
    if device is not None:
        config = dataclasses.replace(config, device=device)
    if run_dir is None:
        folder = run_directory("selfplay")
    else:
        folder = Path(run_dir).expanduser().resolve()
        if (folder / CHECKPOINT_NAME).exists():
            raise ValueError(
                f"{folder} already holds a run ({CHECKPOINT_NAME}); continue it with "
                f"`rl-mind selfplay --resume {folder}` or pick another --run-dir"
            )
        folder.mkdir(parents=True, exist_ok=True)
    trainer = SelfPlayTrainer(config)
    return folder, trainer, default_minutes() if minutes is None else float(minutes)


def _is_done(trainer: SelfPlayTrainer, minutes: float, max_updates: int | None) -> bool:
    """Whether a restored run has spent its budget and made its final evaluation."""
    spent = trainer.train_seconds >= 60.0 * minutes or (
        max_updates is not None and trainer.updates >= max_updates
    )
    history = trainer.eval_history
    return spent and bool(history) and int(history[-1]["updates"]) == trainer.updates


def _announce(
    folder: Path, trainer: SelfPlayTrainer, minutes: float, resumed: bool, end: list[str]
) -> None:
    """The start lines: what the job will do and where, and how to watch it."""
    config = trainer.config
    if resumed:
        print(
            f"resuming {folder} at update {trainer.updates} ({trainer.env_steps:,} game steps, "
            f"{trainer.train_seconds / 60:.1f} of {minutes:g} minutes)"
        )
    else:
        print(
            f"self-play PPO on Pong Duel: {minutes:g} minutes of training (seed {config.seed}, "
            f"device {config.device})" + (f", then {' and '.join(end)}" if end else "")
        )
        print(f"run directory: {folder}")
    print(f"watch it live: tensorboard --logdir {folder}", flush=True)


def _train(
    trainer: SelfPlayTrainer,
    minutes: float,
    folder: Path,
    progress: _Progress,
    max_updates: int | None,
    on_update: Callable[[SelfPlayTrainer], None] | None,
    stop: Callable[[], bool] | None,
) -> dict[str, float] | None:
    """The job's loop: the updates of :func:`~rl_mind.selfplay.trainer.training_updates`,
    and between two of them the progress, ``on_update``, a checkpoint every
    ``checkpoint_every_seconds``, and a stop on Ctrl-C or ``stop()``; a checkpoint at the
    end. Returns the final evaluation, or ``None`` when stopped."""
    checkpoint, every = folder / CHECKPOINT_NAME, trainer.config.checkpoint_every_seconds
    request, last_checkpoint = _StopRequest(), time.monotonic()
    final: dict[str, float] | None = None
    updates = training_updates(trainer, minutes, folder, max_updates=max_updates)
    with request.installed():
        try:
            with contextlib.closing(updates):  # (leaving the loop early closes its files)
                for _ in updates:
                    progress.show(trainer)
                    if on_update is not None:
                        on_update(trainer)
                    if time.monotonic() - last_checkpoint >= every:
                        save_checkpoint(job_state(trainer, minutes), checkpoint)
                        last_checkpoint = time.monotonic()
                    if request.requested or (stop is not None and stop()):
                        break
                else:
                    final = trainer.eval_history[-1]  # (the loop ended on its final evaluation)
        except KeyboardInterrupt:
            final = None
        progress.show(trainer)  # (the final evaluation)
        save_checkpoint(job_state(trainer, minutes), checkpoint)
    return final


def _finish(run: SelfPlayRun, leaderboard: bool, video: bool) -> SelfPlayRun:
    """The end of a run: the round robin and the video. A run directory keeps one match
    video: that of the run's latest end (a resumed run's replaces the earlier one). The
    learner as it ended joins the archive where one of them takes it; without either, the
    run's trainer is the one its checkpoint holds."""
    trainer, folder, config = run.trainer, run.run_dir, run.trainer.config
    if leaderboard:  # (the learner as it is now joins the archive as its last snapshot)
        print("round robin of the snapshots and the bots ...", flush=True)
        board, steps = play_leaderboard(trainer)  # (seeded with the run's seed)
        run.leaderboard_table, run.leaderboard_plot = write_leaderboard(board, steps, folder)
        run.leaderboard = board
        print(board.to_markdown())
    if video:
        earlier = set(folder.glob(f"{VIDEO_NAME}-*.mp4"))
        best = best_snapshot(trainer, run.leaderboard)
        run.video = record_video(best, ENV_NAME, folder, seed=config.seed,
                                 max_steps=config.video_max_steps, name=VIDEO_NAME,
                                 opponent="scripted")  # fmt: skip
        for path in earlier - {run.video}:
            path.unlink()
    return run


def train(
    config: SelfPlayConfig | None = None,
    *,
    minutes: float | None = None,
    run_dir: str | Path | None = None,
    resume: str | Path | None = None,
    device: str | None = None,
    progress: bool | None = None,
    max_updates: int | None = None,
    leaderboard: bool = True,
    video: bool = True,
    on_update: Callable[[SelfPlayTrainer], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> SelfPlayRun:
    """Train PPO by self-play on Pong Duel for ``minutes`` of training time.

    It prints at once what it will do, the run directory and the TensorBoard command.
    Resuming a run that has spent its budget (and made its final evaluation) does nothing
    but say so in one line (``already_done``), unless ``minutes`` extends the budget.

    Args:
        config: the settings (default :meth:`SelfPlayConfig.for_profile`); ignored when
            resuming (the checkpoint's settings are used, except ``device``).
        minutes: the training-time budget (default :func:`default_minutes`; when resuming,
            the run's own; a larger total extends it).
        run_dir: the folder to write into (default a fresh ``outputs/selfplay-<time>``).
        resume: a run directory holding a ``checkpoint.pt``: continue that run there.
        device: where the networks live (``"cpu"``, ``"cuda"``); the game is on the CPU.
        progress: a progress bar (``True``) or one line per evaluation (``False``);
            ``None``: the bar when the standard output is a terminal.
        max_updates: stop after this many updates in total (tests, benchmarks).
        leaderboard: play the final round robin.
        video: film the best snapshot.
        on_update: called with the trainer after every update (a ``KeyboardInterrupt``
            raised there is handled like Ctrl-C).
        stop: polled after every update; ``True`` stops like Ctrl-C (checkpoint, no
            leaderboard).

    Returns:
        A :class:`SelfPlayRun` with the paths of what was written.
    """
    if minutes is not None and not 0 <= float(minutes) < math.inf:  # (before any write)
        raise ValueError(f"minutes must be a finite number >= 0, got {minutes}")
    torch.set_num_threads(1)  # small networks: a second thread halves the throughput
    folder, trainer, budget = _open_run(config, minutes, run_dir, resume, device)
    checkpoint = folder / CHECKPOINT_NAME
    try:
        if resume is not None and _is_done(trainer, budget, max_updates):
            print(
                f"{folder}: nothing to do, its budget of {budget:g} minutes of training is "
                f"spent ({trainer.updates} updates, {trainer.env_steps:,} game steps); "
                f"--minutes with a larger total trains it on"
            )
            return SelfPlayRun(folder, checkpoint, trainer, interrupted=False,
                               final_evaluation=trainer.eval_history[-1], already_done=True)  # fmt: skip
        end = ["a round robin of the snapshots and the bots"] if leaderboard else []
        _announce(folder, trainer, budget, resume is not None, end + ["a video"] * video)
        settings = {**dataclasses.asdict(trainer.config), "minutes": budget}
        (folder / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
        shown = _Progress(trainer, budget, sys.stdout.isatty() if progress is None else progress)
        try:
            final = _train(trainer, budget, folder, shown, max_updates, on_update, stop)
        finally:
            shown.close()
        if final is None:
            print(
                f"\nstopped at update {trainer.updates}; checkpoint saved: {checkpoint}\n"
                f"continue with: rl-mind selfplay --resume {folder}"
            )
            return SelfPlayRun(folder, checkpoint, trainer, interrupted=True)
        run = SelfPlayRun(folder, checkpoint, trainer, interrupted=False, final_evaluation=final)
        return _finish(run, leaderboard, video)
    finally:
        trainer.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-mind selfplay",
        description=(
            "Train PPO on Pong Duel by self-play (an opponent pool of snapshots), with a "
            "progress bar, TensorBoard logs, checkpoints, a leaderboard and a match video."
        ),
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help=f"training time budget in minutes (default {default_minutes():g}; on --resume, the run's own)",
    )
    parser.add_argument(
        "--seed", default="0", help="random seed, an int from 0 to 2**32 - 1 (default 0)"
    )
    parser.add_argument(
        "--run-dir",
        default=None,
        help="folder to write into (default: a fresh outputs/selfplay-<time>)",
    )
    parser.add_argument("--device", default=None, help="torch device of the networks (default cpu)")
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        default=None,
        help="continue the run saved in RUN_DIR (its checkpoint.pt)",
    )
    parser.add_argument("--no-video", action="store_true", help="skip the final match video")
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="a line per evaluation instead of the progress bar (the default off a terminal)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``rl-mind selfplay [--minutes M] [--seed S] [--run-dir DIR] [--device D] [--resume DIR]``."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.resume is not None and args.run_dir is not None:
        print(
            "rl-mind selfplay: --resume RUN_DIR already names the folder; drop --run-dir",
            file=sys.stderr,
        )
        return 2
    try:  # (parsed here rather than by argparse: one line, without the usage text)
        seed = int(args.seed)
    except ValueError:
        print(
            f"rl-mind selfplay: --seed must be an int from 0 to 2**32 - 1, got {args.seed!r}",
            file=sys.stderr,
        )
        return 2
    if args.minutes is not None and not 0 <= args.minutes < math.inf:  # (nan fails too)
        print(
            f"rl-mind selfplay: --minutes must be a finite number >= 0, got {args.minutes}",
            file=sys.stderr,
        )
        return 2
    try:
        run = train(
            None if args.resume else SelfPlayConfig.for_profile(seed=seed),
            minutes=args.minutes,
            run_dir=args.run_dir,
            resume=args.resume,
            device=args.device,
            progress=False if args.no_progress else None,
            video=not args.no_video,
        )
    except (CheckpointError, OSError, ValueError) as error:  # (OSError: e.g. --run-dir a file)
        print(f"rl-mind selfplay: {error}", file=sys.stderr)
        return 1
    if run.interrupted:
        return 130
    if run.already_done:
        return 0
    final = run.final_evaluation or {}
    print(
        "\nfinal win rates: "
        + ", ".join(f"{bot} {final.get(f'win_rate_vs_{bot}', float('nan')):.0%}" for bot in BOTS)
        + f" ({run.trainer.env_steps:,} game steps, {run.trainer.updates} updates)"
    )
    for label, path in run.paths().items():
        print(f"{label + ':':<34} {path}")
    print(f"{'TensorBoard:':<34} tensorboard --logdir {run.run_dir}")
    return 0
