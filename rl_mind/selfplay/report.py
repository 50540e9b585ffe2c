"""The end of a self-play run: the round-robin leaderboard of its snapshots, and a match video.

Both the reference practical and ``rl-mind selfplay`` call these after the training of
:mod:`rl_mind.selfplay.trainer` (they are not part of the algorithm). What the reader must
not get wrong: a round robin rates players against each other only (Bradley–Terry, anchored
at ``random = 0``); in a non-transitive game a higher rating does not mean a win against
every lower-rated player.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rl_mind.evaluation import record_video
from rl_mind.selfplay._files import write_csv
from rl_mind.selfplay.matches import round_robin
from rl_mind.selfplay.ratings import Leaderboard, bradley_terry
from rl_mind.selfplay.trainer import (
    AGENT_NAME,
    BOTS,
    ENV_NAME,
    PongPolicy,
    SelfPlayConfig,
    SelfPlayTrainer,
)

__all__ = [
    "VIDEO_NAME",
    "best_snapshot",
    "film_match",
    "leaderboard",
    "leaderboard_indices",
    "snapshot_name",
    "take_final_snapshot",
    "write_leaderboard",
]


#: The match video's name: ``<run dir>/match-best-vs-scripted-<time>.mp4``.
VIDEO_NAME = "match-best-vs-scripted"


def snapshot_name(entry: dict[str, Any]) -> str:
    """An archived snapshot's name on the leaderboard: ``"snapshot 3 (step 40960)"``."""
    return f"snapshot {entry['id']} (step {entry['step']})"


def leaderboard_indices(trainer: SelfPlayTrainer, n_snapshots: int | None = None) -> list[int]:
    """Archive indices of up to ``n_snapshots`` (default ``leaderboard_snapshots``)
    snapshots evenly spread over the run, the first and the last included."""
    k = n_snapshots if n_snapshots is not None else trainer.config.leaderboard_snapshots
    return sorted({round(i) for i in np.linspace(0, len(trainer.archive) - 1, max(k, 1))})


def leaderboard(
    trainer: SelfPlayTrainer,
    n_snapshots: int | None = None,
    n_matches: int | None = None,
    seed: int = 0,
) -> tuple[Leaderboard, dict[str, float]]:
    """Round robin of the :func:`leaderboard_indices` snapshots, the agent (``AGENT_NAME``,
    unless ``policy_averaging`` is 0) and the bots, ``n_matches`` (default
    ``leaderboard_matches``) per pair; Bradley–Terry ratings anchored at ``random = 0``.
    Returns the leaderboard and the training step of each snapshot."""
    n = n_matches if n_matches is not None else trainer.config.leaderboard_matches
    players: dict[str, Any] = {bot: bot for bot in BOTS}
    steps: dict[str, float] = {}
    for i in leaderboard_indices(trainer, n_snapshots):
        name = snapshot_name(trainer.archive[i])
        players[name], steps[name] = trainer.archived_policy(i), trainer.archive[i]["step"]
    if trainer.config.policy_averaging > 0:
        players[AGENT_NAME] = trainer.averaged_policy
    results = round_robin(players, n, seed=seed)
    return bradley_terry(results.wins, results.draws, results.names, anchor="random"), steps


def take_final_snapshot(trainer: SelfPlayTrainer) -> None:
    """Archive the learner as it is now, unless the last snapshot already has its weights."""
    if trainer.archive[-1]["step"] != trainer.env_steps:
        trainer.take_snapshot()


def write_leaderboard(trainer: SelfPlayTrainer, run_dir: Path) -> tuple[Leaderboard, Path, Path]:
    """Play :func:`leaderboard` (the learner as it is now joins it as the last snapshot) and write ``leaderboard.md``, ``leaderboard.csv`` and ``leaderboard.png``
    into ``run_dir``; returns the leaderboard and the paths of the table and the plot."""
    from matplotlib.figure import Figure

    take_final_snapshot(trainer)
    board, steps = leaderboard(trainer, seed=trainer.config.seed)
    table = run_dir / "leaderboard.md"
    table.write_text(board.to_markdown() + "\n")
    write_csv(run_dir / "leaderboard.csv", [
        {"player": row.name, "step": steps.get(row.name, ""), "rating": round(row.rating, 1),
         "stderr": "" if row.stderr is None else round(row.stderr, 1), "games": row.games,
         "score": "" if row.score is None else round(row.score, 4)}
        for row in board.rows
    ])  # fmt: skip
    figure = Figure(figsize=(13, 4.5), layout="tight")
    left, right = figure.subplots(1, 2)
    board.plot(ax=left)
    board.plot(ax=right, x=steps, xlabel="training step (game steps) of the snapshot")
    plot = run_dir / "leaderboard.png"
    figure.savefig(plot, dpi=100)
    return board, table, plot


def best_snapshot(trainer: SelfPlayTrainer, board: Leaderboard | None = None) -> PongPolicy:
    """The best-rated archived snapshot on ``board`` (without a board: the last one)."""
    names = [snapshot_name(entry) for entry in trainer.archive]
    rated = [names.index(row.name) for row in board.rows if row.name in names] if board else []
    return trainer.archived_policy(rated[0] if rated else len(names) - 1)


def film_match(policy: PongPolicy, run_dir: Path, config: SelfPlayConfig) -> Path:
    """A video of one match of ``policy`` (its most likely actions) against the scripted bot."""
    return record_video(policy, ENV_NAME, run_dir, seed=config.seed,
                        max_steps=config.video_max_steps, name=VIDEO_NAME,
                        opponent="scripted")  # fmt: skip
