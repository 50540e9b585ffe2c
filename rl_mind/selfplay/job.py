"""The main job, ``rl-mind selfplay``: PPO learns Pong Duel by self-play, as a script.

:func:`train` runs :class:`~rl_mind.selfplay.trainer.SelfPlayTrainer` for a time budget,
with a progress bar (win rates against the bots in its postfix), TensorBoard scalars, a
checkpoint at regular intervals and at the end, then plays the leaderboard's round robin
and films the best snapshot against the scripted bot. :func:`main` is the command line.

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
  restored; matches in progress when it stopped are replaced by fresh ones.
- A truncated or corrupt checkpoint is refused (:class:`~rl_mind.evaluation.CheckpointError`
  naming the file); it is never loaded half.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from rl_mind.evaluation import CheckpointError, load_checkpoint, record_video, save_checkpoint
from rl_mind.notebook import Profile, progress_bar, run_directory
from rl_mind.selfplay.ratings import Leaderboard
from rl_mind.selfplay.trainer import BOTS, ENV_NAME, SelfPlayConfig, SelfPlayTrainer

__all__ = ["CHECKPOINT_NAME", "SelfPlayRun", "default_minutes", "main", "train"]

CHECKPOINT_NAME = "checkpoint.pt"
_JOB_FORMAT = "rl-mind selfplay job 1"


def default_minutes() -> float:
    """The default budget: 5 minutes (0.1 under the fast-test profile)."""
    return Profile.pick(5.0, fast_test=0.1)


@dataclasses.dataclass
class SelfPlayRun:
    """What :func:`train` produced. Paths are absolute; ``None`` where not produced
    (``interrupted`` runs skip the leaderboard and the video)."""

    run_dir: Path
    checkpoint: Path
    trainer: SelfPlayTrainer
    interrupted: bool
    final_evaluation: dict[str, float] | None = None
    leaderboard: Leaderboard | None = None
    leaderboard_table: Path | None = None
    leaderboard_plot: Path | None = None
    video: Path | None = None

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


def _job_state(trainer: SelfPlayTrainer, minutes: float) -> dict[str, Any]:
    return {"format": _JOB_FORMAT, "minutes": float(minutes), "trainer": trainer.state_dict()}


def _read_checkpoint(run_dir: Path) -> dict[str, Any]:
    path = run_dir / CHECKPOINT_NAME
    if not path.exists():
        raise FileNotFoundError(
            f"--resume {run_dir}: there is no {CHECKPOINT_NAME} in this folder; pass the run "
            f"directory printed by an earlier `rl-mind selfplay`"
        )
    state = load_checkpoint(path)  # CheckpointError naming the file if truncated/corrupt
    if not isinstance(state, dict) or state.get("format") != _JOB_FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a rl-mind selfplay checkpoint")
    return state


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    fields = list(rows[0])
    temp = path.with_suffix(".csv.tmp")
    with temp.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    temp.replace(path)


def _write_leaderboard(
    run_dir: Path, board: Leaderboard, steps: dict[str, float]
) -> tuple[Path, Path]:
    table = run_dir / "leaderboard.md"
    table.write_text(board.to_markdown() + "\n")
    _write_csv(
        run_dir / "leaderboard.csv",
        [
            {
                "player": row.name,
                "step": steps.get(row.name, ""),
                "rating": round(row.rating, 1),
                "stderr": "" if row.stderr is None else round(row.stderr, 1),
                "games": row.games,
                "score": "" if row.score is None else round(row.score, 4),
            }
            for row in board.rows
        ],
    )
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        with contextlib.suppress(Exception):
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    board.plot(ax=axes[0])
    board.plot(ax=axes[1], x=steps, xlabel="training step (game steps) of the snapshot")
    figure.tight_layout()
    plot = run_dir / "leaderboard.png"
    figure.savefig(plot, dpi=100)
    plt.close(figure)
    return table, plot


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

    Args:
        config: the settings (default :meth:`SelfPlayConfig.for_profile`); ignored when
            resuming (the checkpoint's settings are used, except ``device``).
        minutes: the training-time budget (default :func:`default_minutes`; when resuming,
            the interrupted run's budget).
        run_dir: the folder to write into (default a fresh ``outputs/selfplay-<time>``).
        resume: a run directory holding a ``checkpoint.pt``: continue that run there.
        device: where the networks live (``"cpu"``, ``"cuda"``); the game is on the CPU.
        progress: show the progress bar (``None``: when the output is a terminal or a
            notebook).
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
    if resume is not None:
        folder = Path(resume).expanduser().resolve()
        state = _read_checkpoint(folder)
        saved = SelfPlayConfig.of_checkpoint(state["trainer"], device=device)
        trainer = SelfPlayTrainer(saved)
        trainer.load_state_dict(state["trainer"])
        budget = float(state["minutes"]) if minutes is None else float(minutes)
        print(
            f"resuming {folder} at update {trainer.updates} ({trainer.env_steps:,} game steps, "
            f"{trainer.train_seconds / 60:.1f} of {budget:g} minutes)"
        )
    else:
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
        budget = default_minutes() if minutes is None else float(minutes)
    config = trainer.config
    (folder / "config.json").write_text(
        json.dumps({**config.to_dict(), "minutes": budget}, indent=2) + "\n"
    )
    checkpoint = folder / CHECKPOINT_NAME
    budget_seconds = 60.0 * budget

    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(folder))
    request = _StopRequest()
    bar = progress_bar(
        max(1, round(budget_seconds)),
        desc="self-play (training seconds)",
        disable=None if progress is None else not progress,
    )
    bar.update_to(int(trainer.train_seconds))
    next_eval = trainer.train_seconds  # evaluate at once: the starting point of the curves
    last_checkpoint = time.monotonic()
    interrupted = False

    def log_evaluation() -> dict[str, float]:
        result = trainer.evaluate()
        for bot in BOTS:
            writer.add_scalar(
                f"eval/win_rate_vs_{bot}", result[f"win_rate_vs_{bot}"], trainer.env_steps
            )
        writer.add_scalar("eval/online_elo", result["online_elo"], trainer.env_steps)
        _write_csv(folder / "evaluations.csv", trainer.eval_history)
        return result

    def postfix() -> dict[str, str]:
        if not trainer.eval_history:
            return {}
        last = trainer.eval_history[-1]
        return {bot: f"{last[f'win_rate_vs_{bot}']:.0%}" for bot in BOTS} | {
            "game_steps": f"{trainer.env_steps:,}"
        }

    try:
        with request.installed():
            try:
                while trainer.train_seconds < budget_seconds and (
                    max_updates is None or trainer.updates < max_updates
                ):
                    if trainer.train_seconds >= next_eval:
                        log_evaluation()
                        next_eval = trainer.train_seconds + config.eval_every_seconds
                    stats = trainer.update()
                    step = trainer.env_steps
                    for name in (
                        "policy_loss",
                        "value_loss",
                        "entropy",
                        "approx_kl",
                        "clip_fraction",
                        "explained_variance",
                    ):
                        writer.add_scalar(f"losses/{name}", getattr(stats, name), step)
                    writer.add_scalar("selfplay/win_rate_vs_latest", stats.win_rate_vs_latest, step)
                    writer.add_scalar("selfplay/win_rate_vs_pool", stats.win_rate_vs_pool, step)
                    writer.add_scalar("selfplay/pool_size", len(trainer.pool), step)
                    writer.add_scalar(
                        "charts/game_steps_per_second",
                        step / max(trainer.train_seconds, 1e-9),
                        step,
                    )
                    bar.update_to(int(min(trainer.train_seconds, budget_seconds)), **postfix())
                    if on_update is not None:
                        on_update(trainer)
                    if time.monotonic() - last_checkpoint >= config.checkpoint_every_seconds:
                        save_checkpoint(_job_state(trainer, budget), checkpoint)
                        last_checkpoint = time.monotonic()
                    if request.requested or (stop is not None and stop()):
                        interrupted = True
                        break
            except KeyboardInterrupt:
                interrupted = True
            save_checkpoint(_job_state(trainer, budget), checkpoint)
        if interrupted:
            bar.close()
            print(
                f"\nstopped at update {trainer.updates}; checkpoint saved: {checkpoint}\n"
                f"continue with: rl-mind selfplay --resume {folder}"
            )
            return SelfPlayRun(folder, checkpoint, trainer, interrupted=True)

        final = log_evaluation()
        bar.update_to(int(min(trainer.train_seconds, budget_seconds)), **postfix())
        bar.close()
        save_checkpoint(_job_state(trainer, budget), checkpoint)
        run = SelfPlayRun(folder, checkpoint, trainer, interrupted=False, final_evaluation=final)
        if trainer.archive[-1]["step"] != trainer.env_steps:
            trainer.take_snapshot()  # the final learner joins the leaderboard
        best_index = len(trainer.archive) - 1
        if leaderboard:
            print("round robin of the snapshots and the bots ...")
            board, steps = trainer.leaderboard(seed=config.seed)
            run.leaderboard = board
            run.leaderboard_table, run.leaderboard_plot = _write_leaderboard(folder, board, steps)
            snapshot_names = [row.name for row in board.rows if row.name in steps]
            best_id = int(snapshot_names[0].split()[1]) if snapshot_names else None
            best_index = next(
                (i for i, e in enumerate(trainer.archive) if e["id"] == best_id), best_index
            )
            print(board.to_markdown())
        if video:
            best = trainer.archived_policy(best_index)
            run.video = record_video(
                best,
                ENV_NAME,
                folder,
                seed=config.seed,
                max_steps=config.video_max_steps,
                name="match-best-vs-scripted",
                opponent="scripted",
            )
        return run
    finally:
        writer.close()
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
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
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
        "--no-progress", action="store_true", help="no progress bar (e.g. in a log file)"
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
    if args.minutes is not None and not 0 <= args.minutes < math.inf:  # (nan fails too)
        print(
            f"rl-mind selfplay: --minutes must be a finite number >= 0, got {args.minutes}",
            file=sys.stderr,
        )
        return 2
    try:
        run = train(
            None if args.resume else SelfPlayConfig.for_profile(seed=args.seed),
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
