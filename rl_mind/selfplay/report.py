"""The end of a ``rl-mind selfplay`` run: its leaderboard written out, and a match video.

The job calls these after the training of :mod:`rl_mind.selfplay.trainer`, whose
:func:`~rl_mind.selfplay.trainer.leaderboard` plays the round robin of the snapshots: they
write what they are given, and play nothing. What
the reader must not get wrong: a round robin rates players against each other only
(Bradley–Terry, anchored at ``random = 0``); in a non-transitive game a higher rating does
not mean a win against every lower-rated player.
"""

from __future__ import annotations

from pathlib import Path

from rl_mind.selfplay._files import write_csv
from rl_mind.selfplay.ratings import Leaderboard
from rl_mind.selfplay.trainer import ENV_NAME, PongPolicy

# (the leaderboard of the snapshots is part of the reference practical: still importable here)
from rl_mind.selfplay.trainer import best_snapshot as best_snapshot
from rl_mind.selfplay.trainer import leaderboard as leaderboard
from rl_mind.selfplay.trainer import leaderboard_indices as leaderboard_indices
from rl_mind.selfplay.trainer import snapshot_name as snapshot_name
from rl_mind.selfplay.trainer import take_final_snapshot as take_final_snapshot
from rl_mind.videos import record_video

__all__ = ["VIDEO_NAME", "film_match", "write_leaderboard"]

#: The match video's name: ``<run dir>/match-best-vs-scripted-<time>.mp4``.
VIDEO_NAME = "match-best-vs-scripted"


def write_leaderboard(
    board: Leaderboard, steps: dict[str, float], run_dir: Path
) -> tuple[Path, Path]:
    """Write the ratings of :func:`~rl_mind.selfplay.trainer.leaderboard` (``board`` and the
    training step of each snapshot) into ``run_dir``: ``leaderboard.md``, ``leaderboard.csv``
    and ``leaderboard.png``; returns the paths of the table and the plot."""
    from matplotlib.figure import Figure

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
    return table, plot


def film_match(policy: PongPolicy, run_dir: Path, *, seed: int, max_steps: int) -> Path:
    """A video of one match of ``policy`` (its most likely actions) against the scripted bot."""
    return record_video(policy, ENV_NAME, run_dir, seed=seed, max_steps=max_steps,
                        name=VIDEO_NAME, opponent="scripted")  # fmt: skip
