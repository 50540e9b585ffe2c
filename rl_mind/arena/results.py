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
    """Everything one arena produced (see :func:`run_arena`). ``anchors`` (the bots and the
    reference), ``standings`` (every player, best first) and ``submissions`` (the submitted
    agents, best first) are computed once, when it is built; the report reads them."""

    players: tuple[Player, ...]
    rejected: tuple[Rejection, ...]
    results: RoundRobinResults
    board: Leaderboard
    rubric: Rubric
    n_matches: int
    seed: int
    anchors: tuple[str, ...] = dataclasses.field(init=False)
    standings: tuple[Standing, ...] = dataclasses.field(init=False)
    submissions: tuple[Standing, ...] = dataclasses.field(init=False)  # (of the standings)

    def __post_init__(self) -> None:
        anchors = tuple(p.name for p in self.players if p.kind != "submission")
        object.__setattr__(self, "anchors", anchors)  # (frozen: set once, here)
        standings = tuple(self._rows(anchors))
        object.__setattr__(self, "standings", standings)
        submissions = tuple(s for s in standings if s.player.kind == "submission")
        object.__setattr__(self, "submissions", submissions)

    def _rows(self, anchors: tuple[str, ...]) -> list[Standing]:
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
                for anchor in anchors
                if anchor != row.name
            }
            low, high = row.rating - half, row.rating + half
            rows.append(Standing(rank, by_name[row.name], row.rating, low, high, record, against))
        return rows
