"""The ball forecast: where the ball will cross the paddle line it flies towards, computed from
a Pong Duel observation.

Between bounces the ball flies straight and each wall mirrors it, so the crossing height is
the straight-line height folded back into the court (a triangle wave). The self-play agents
read the observation followed by this forecast (:func:`network_input`); it lives with the
game because both the self-play trainer (:mod:`rl_mind.selfplay.trainer`) and the class
arena (:mod:`rl_mind.arena.submission`, which rebuilds the submitted networks) compute it,
and must compute it the same way. What the reader must not get wrong: the forecast is a
function of the observation alone (its numbers come from :class:`PongDuelRules`), so a
network that reads it still sees only what the player sees.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rl_mind.core import Observation
from rl_mind.envs.pong_game import OBSERVATION_SIZE
from rl_mind.envs.pong_rules import PongDuelRules

__all__ = ["FORECAST_SIZE", "ball_forecast", "network_input"]

RULES = PongDuelRules()
FACE_X = RULES.paddle_x - RULES.ball_radius  # where a paddle meets the ball's centre
WALL = 1.0 - RULES.ball_radius  # where the walls (the court is y in [-1, 1]) reflect it
FORECAST_SIZE = 3  # what ball_forecast adds to an observation


def ball_forecast(obs: Tensor) -> Tensor:
    """``[..., 10]`` observations → ``[..., 3]``: the height ``y`` where the ball will cross the
    paddle line it flies towards, ``y`` minus the own paddle's, the steps until then / 40 (≤ 2)."""
    if obs.shape[-1:] != (OBSERVATION_SIZE,):
        raise ValueError(
            f"Pong Duel observations are [..., {OBSERVATION_SIZE}] tensors, got shape "
            f"{tuple(obs.shape)}"
        )
    ball_x, ball_y = obs[..., 2], obs[..., 3]
    vx, vy = obs[..., 4] * RULES.max_speed, obs[..., 5] * RULES.max_speed  # (observed / max)
    distance = (FACE_X - ball_x * torch.sign(vx)).clamp(min=0.0)  # to the line ahead
    steps = distance / vx.abs().clamp(min=1e-3)
    folded = torch.remainder(ball_y + vy * steps + WALL, 4 * WALL)  # the bounces unfolded
    y = WALL - (folded - 2 * WALL).abs()
    return torch.stack([y, y - obs[..., 0], (steps / 40).clamp(max=2.0)], dim=-1)


def network_input(obs: Observation, forecast: bool = True) -> Tensor:
    """The observation ``[..., 10]`` followed by :func:`ball_forecast` (``[..., 13]``), or alone."""
    if not isinstance(obs, Tensor):  # (a numpy array would fail deep in torch)
        raise TypeError(
            f"network_input: expected a tensor of observations, got {type(obs).__name__} "
            f"(convert with torch.as_tensor(obs))"
        )
    return torch.cat([obs, ball_forecast(obs)], dim=-1) if forecast else obs
