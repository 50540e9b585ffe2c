"""Self-play machinery, game-agnostic: an opponent pool, ratings, head-to-head matches.

- :mod:`rl_mind.selfplay.pool`: :class:`OpponentPool` of frozen snapshots of the learner,
  sampled latest / uniform / prioritized (PFSP), or a mixture.
- :mod:`rl_mind.selfplay.ratings`: :class:`EloTable` (online) and :func:`bradley_terry`
  (round-robin fit anchored at a fixed player), both giving a :class:`Leaderboard`.
- :mod:`rl_mind.selfplay.matches`: :func:`play_matches` (both sides played equally, with
  confidence intervals) and :func:`round_robin`, on any :class:`TwoPlayerGame` (Pong Duel
  by default).

Pong Duel's self-play PPO, :mod:`rl_mind.selfplay.trainer` (the one implementation, which
``rl-mind selfplay`` runs and the reference practical shows), gives its networks here too:
:class:`PongPolicy`, :class:`PongCritic`, and their input, :func:`network_input` and
:func:`ball_forecast` (of :mod:`rl_mind.envs.pong_forecast`). They are imported on first
use, since their modules register the game (``import rl_mind.envs``), which importing
:mod:`rl_mind` must not do.
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
    from rl_mind.envs.pong_forecast import ball_forecast, network_input
    from rl_mind.selfplay.trainer import PongCritic, PongPolicy

# the names of the self-play PPO, imported from their modules when first used
_LAZY = {
    "PongCritic": "rl_mind.selfplay.trainer",
    "PongPolicy": "rl_mind.selfplay.trainer",
    "ball_forecast": "rl_mind.envs.pong_forecast",
    "network_input": "rl_mind.envs.pong_forecast",
}

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
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rl_mind.selfplay' has no attribute {name!r}")
