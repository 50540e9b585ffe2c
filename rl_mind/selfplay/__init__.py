"""Self-play machinery, game-agnostic: an opponent pool, ratings, head-to-head matches.

- :mod:`rl_mind.selfplay.pool`: :class:`OpponentPool` of frozen snapshots of the learner,
  sampled latest / uniform / prioritized (PFSP), or a mixture.
- :mod:`rl_mind.selfplay.ratings`: :class:`EloTable` (online) and :func:`bradley_terry`
  (round-robin fit anchored at a fixed player), both giving a :class:`Leaderboard`.
- :mod:`rl_mind.selfplay.matches`: :func:`play_matches` (both sides played equally, with
  confidence intervals) and :func:`round_robin`, on any :class:`TwoPlayerGame` (Pong Duel
  by default).

Pong Duel's self-play PPO, :mod:`rl_mind.selfplay.trainer` (the one implementation, which
``rl-mind selfplay`` runs and the reference practical shows), gives its networks and their
input here too: :class:`PongPolicy`, :class:`PongCritic`, :func:`network_input`,
:func:`ball_forecast`. They are imported on first use, since that module registers the game
(``import rl_mind.envs``), which importing :mod:`rl_mind` must not do.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from rl_mind.selfplay.trainer import PongCritic, PongPolicy, ball_forecast, network_input

# the names of the self-play PPO, imported from rl_mind.selfplay.trainer when first used
_FROM_TRAINER = ("PongCritic", "PongPolicy", "ball_forecast", "network_input")

__all__ = [
    "SAMPLING_STRATEGIES",
    "EloTable",
    "GameFactory",
    "Leaderboard",
    "LeaderboardRow",
    "MatchStats",
    "OpponentPool",
    "PongCritic",
    "PongPolicy",
    "RoundRobinResults",
    "Snapshot",
    "TwoPlayerGame",
    "TwoPlayerStep",
    "ball_forecast",
    "bradley_terry",
    "elo_expected_score",
    "network_input",
    "play_matches",
    "round_robin",
]


def __getattr__(name: str) -> Any:
    if name in _FROM_TRAINER:
        from rl_mind.selfplay import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'rl_mind.selfplay' has no attribute {name!r}")
