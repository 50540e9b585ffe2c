"""What one arena produced: its players, the files it rejected, the round robin's results and
the ratings, and what the leaderboard and the gradebook show of them.

:func:`~rl_mind.arena.run.run_arena` builds an :class:`ArenaResult`;
:mod:`rl_mind.arena.report` writes it out. What the reader must not get wrong: a rank is
among all players (the anchors included); the gradebook ranks the submissions among
themselves.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rl_mind.arena.rubric import Rubric
from rl_mind.selfplay.matches import MatchStats, RoundRobinResults
from rl_mind.selfplay.ratings import Leaderboard

__all__ = ["ArenaResult", "Player", "Rejection", "Standing"]

_Z95 = 1.959963984540054  # (a 95% interval is the rating ± 1.96 standard errors)


@dataclasses.dataclass(frozen=True)
class Player:
    """One player of the arena: a bot, the reference, or a submission (``file`` relative to
    the submissions folder)."""

    name: str
    kind: str  # "bot", "reference" or "submission"
    policy: Any  # a bot name, or an ArenaAgent
    author: str = ""
    file: str = ""


@dataclasses.dataclass(frozen=True)
class Rejection:
    """A file that was not rated: its path (relative to the submissions folder) and why."""

    file: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Standing:
    """A row of the leaderboard: the player, its rank (1 = best of all players), its rating
    with the 95% interval, its record, and its results against each anchor."""

    rank: int
    player: Player
    rating: float
    low: float
    high: float
    record: MatchStats
    against: dict[str, MatchStats]


@dataclasses.dataclass(frozen=True)
class ArenaResult:
    """Everything one arena produced (see :func:`run_arena`)."""

    players: tuple[Player, ...]
    rejected: tuple[Rejection, ...]
    results: RoundRobinResults
    board: Leaderboard
    rubric: Rubric
    n_matches: int
    seed: int

    @property
    def anchors(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.players if p.kind != "submission")

    def standings(self) -> list[Standing]:
        """Every player, best first."""
        by_name = {p.name: p for p in self.players}
        rows = []
        for rank, row in enumerate(self.board.rows, 1):
            half = _Z95 * (row.stderr or 0.0)
            i = self.results.names.index(row.name)
            record = MatchStats(
                int(self.results.wins[i].sum()),
                int(self.results.draws[i].sum()),
                int(self.results.wins[:, i].sum()),
            )
            against = {
                anchor: self.results.stats(row.name, anchor)
                for anchor in self.anchors
                if anchor != row.name
            }
            rows.append(
                Standing(
                    rank,
                    by_name[row.name],
                    row.rating,
                    row.rating - half,
                    row.rating + half,
                    record,
                    against,
                )
            )
        return rows

    def submissions(self) -> list[Standing]:
        """The submitted agents, best first."""
        return [s for s in self.standings() if s.player.kind == "submission"]

    def grades(self) -> list[dict[str, Any]]:
        """One gradebook row per author (sorted by author): rank among the submissions,
        rating and interval, scores against the anchors, points, grade."""
        ranked = self.submissions()
        rows = []
        for position, standing in enumerate(ranked, 1):
            row: dict[str, Any] = {
                "author": standing.player.author,
                "name": standing.player.name,
                "file": standing.player.file,
                "rank": position,
                "rating": f"{standing.rating:.1f}",
                "rating_low": f"{standing.low:.1f}",
                "rating_high": f"{standing.high:.1f}",
            }
            total = 0.0
            for anchor in self.anchors:
                row[f"score_vs_{anchor}"] = f"{standing.against[anchor].score:.4f}"
            for anchor, points in self.rubric.beat.items():
                earned = points if self.rubric.beats(standing.against[anchor].score) else 0.0
                row[f"points_{anchor}"] = f"{earned:g}"
                total += earned
            rank_points = self.rubric.rank_points(position, len(ranked))
            row["points_rank"] = f"{rank_points:.2f}"
            total += rank_points
            row["grade"] = f"{total:.2f}"
            rows.append(row)
        return sorted(rows, key=lambda r: (r["author"].casefold(), r["author"]))
