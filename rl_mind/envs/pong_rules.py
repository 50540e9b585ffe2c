"""Every number of the Pong Duel rules, in one frozen dataclass (the rules themselves are
described in :mod:`rl_mind.envs.pong_game`).

The game, its views, its opponents and the ball forecast all read their numbers from a
:class:`PongDuelRules`, so nothing retypes a paddle position or a speed; what the reader
must not get wrong: the observations are scaled by these numbers (a ball speed is observed
as ``speed / max_speed``), so changing a rule changes what a trained network sees.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["PongDuelRules", "rules_with"]


@dataclasses.dataclass(frozen=True)
class PongDuelRules:
    """Every number of the Pong Duel rules (see the module docstring). Lengths in court units."""

    paddle_x: float = 0.9
    paddle_half_length: float = 0.15
    paddle_speed: float = 0.035
    ball_radius: float = 0.025
    serve_speed: float = 0.04
    serve_max_height: float = 0.5
    serve_max_angle_deg: float = 30.0
    speed_up: float = 1.15
    max_speed: float = 0.25
    max_bounce_angle_deg: float = 60.0
    points_to_win: int = 3
    max_steps: int = 1500
    point_reward: float = 0.2
    win_reward: float = 1.0

    def __post_init__(self) -> None:
        if self.points_to_win < 1 or self.max_steps < 1:
            raise ValueError(
                f"PongDuelRules: points_to_win and max_steps must be >= 1, got "
                f"{self.points_to_win} and {self.max_steps}"
            )
        if not 0 < self.paddle_half_length < 1:
            raise ValueError(
                f"PongDuelRules: paddle_half_length must be in (0, 1), got {self.paddle_half_length}"
            )


def rules_with(
    rules: PongDuelRules | None, point_reward: float | None = None, max_steps: int | None = None
) -> PongDuelRules:
    """``rules`` (default ``PongDuelRules()``) with ``point_reward`` and ``max_steps``
    replaced where given: what the gymnasium views build from their arguments."""
    rules = rules if rules is not None else PongDuelRules()
    changes: dict[str, Any] = {}
    if point_reward is not None:
        changes["point_reward"] = float(point_reward)
    if max_steps is not None:
        changes["max_steps"] = int(max_steps)
    return dataclasses.replace(rules, **changes) if changes else rules
