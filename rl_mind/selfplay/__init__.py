"""Self-play machinery, game-agnostic: an opponent pool, ratings, head-to-head matches.

- :mod:`rl_mind.selfplay.pool`: :class:`OpponentPool` of frozen snapshots of the learner,
  sampled latest / uniform / prioritized (PFSP), or a mixture.
- :mod:`rl_mind.selfplay.ratings`: :class:`EloTable` (online) and :func:`bradley_terry`
  (round-robin fit anchored at a fixed player), both giving a :class:`Leaderboard`.
- :mod:`rl_mind.selfplay.matches`: :func:`play_matches` (both sides played equally, with
  confidence intervals) and :func:`round_robin`, on any :class:`TwoPlayerGame` (Pong Duel
  by default).
"""

from rl_mind.selfplay.matches import (
    GameFactory,
    MatchStats,
    RoundRobinResults,
    TwoPlayerGame,
    TwoPlayerStep,
    play_matches,
    round_robin,
)
from rl_mind.selfplay.pool import SAMPLING_STRATEGIES, OpponentPool, Snapshot
from rl_mind.selfplay.ratings import (
    EloTable,
    Leaderboard,
    LeaderboardRow,
    bradley_terry,
    elo_expected_score,
)

__all__ = [
    "SAMPLING_STRATEGIES",
    "EloTable",
    "GameFactory",
    "Leaderboard",
    "LeaderboardRow",
    "MatchStats",
    "OpponentPool",
    "RoundRobinResults",
    "Snapshot",
    "TwoPlayerGame",
    "TwoPlayerStep",
    "bradley_terry",
    "elo_expected_score",
    "play_matches",
    "round_robin",
]
