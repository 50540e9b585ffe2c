"""Pong Duel's built-in opponents, and turning any policy into a batched numpy opponent.

Every opponent acts on a batch of (mirrored) observations ``[K, 10]``, so one opponent
plays many matches in one call. Shipped: ``"random"``; ``"scripted"``, the ball follower
(it beats random more than 99% of the time and loses to steep fast shots); and
``"predictive"`` (it goes to where the ball will cross its line, unfolding wall bounces).
The predictive bot *loses* to the ball follower (about 1 : 3) yet is the harder opponent
for a learned agent: a non-transitive triangle.

An opponent can also be an :class:`~rl_mind.core.Actor` (played with ``actor(obs).value``
under ``torch.no_grad()``, i.e. its *sampling* training behaviour, which is what self-play
trains against; wrap it to use ``act`` instead) or any batched callable
``obs [K, 10] float32 tensor -> actions [K]`` (a tensor or array of 0/1/2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import torch
from torch import nn

from rl_mind._batched import act_on_numpy
from rl_mind.envs.pong_rules import PongDuelRules

__all__ = [
    "BUILTIN_OPPONENTS",
    "NumpyPolicy",
    "OpponentSpec",
    "PredictiveOpponent",
    "RandomOpponent",
    "ScriptedOpponent",
    "as_numpy_policy",
]

#: An opponent: a built-in name, an ``Actor`` (or any ``nn.Module``), or a batched callable.
OpponentSpec: TypeAlias = "str | nn.Module | Callable[[torch.Tensor], Any]"

STAY, UP, DOWN = 0, 1, 2


class NumpyPolicy:
    """Base of the built-in opponents: ``act_numpy(obs [K, 10]) -> int64 [K]``.

    Calling the object with a tensor ``obs [K, 10]`` returns a ``long`` tensor ``[K]``, so a
    built-in opponent is also a batched callable (usable with ``play_matches``).
    """

    name = "numpy policy"

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(self.act_numpy(obs.detach().cpu().numpy()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomOpponent(NumpyPolicy):
    """Uniformly random actions (its own generator, seeded by ``seed``)."""

    name = "random"

    def __init__(self, seed: int | np.random.SeedSequence | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, 3, size=len(obs))


def _move_towards(delta: np.ndarray, dead_zone: float) -> np.ndarray:
    """Up where ``delta > dead_zone``, down where ``< -dead_zone``, stay in between."""
    action = np.zeros(len(delta), dtype=np.int64)
    action[delta > dead_zone] = UP
    action[delta < -dead_zone] = DOWN
    return action


class ScriptedOpponent(NumpyPolicy):
    """The ball follower: towards the ball's height while it approaches, half of it otherwise."""

    name = "scripted"

    def __init__(self, dead_zone: float = 0.03) -> None:
        self.dead_zone = dead_zone

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        approaching = obs[:, 4] < 0  # mirrored view: "me" on the left
        own_y, ball_y = obs[:, 0], obs[:, 3]
        target = np.where(approaching, ball_y, 0.5 * ball_y)
        return _move_towards(target - own_y, self.dead_zone)


class PredictiveOpponent(NumpyPolicy):
    """Goes to where the ball will cross its paddle line (wall bounces unfolded); centre otherwise."""

    name = "predictive"

    def __init__(self, rules: PongDuelRules | None = None, dead_zone: float = 0.03) -> None:
        self.rules = rules if rules is not None else PongDuelRules()
        self.dead_zone = dead_zone

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        r = self.rules
        own_y, ball_x, ball_y = obs[:, 0], obs[:, 2], obs[:, 3]
        vx, vy = obs[:, 4] * r.max_speed, obs[:, 5] * r.max_speed
        approaching = vx < 0
        face = -r.paddle_x + r.ball_radius
        steps = np.where(approaching, (ball_x - face) / np.where(approaching, -vx, 1.0), 0.0)
        y = ball_y + vy * np.maximum(steps, 0.0)
        # Unfold the reflections off the walls at ±wall: a triangle wave of period 4·wall.
        wall = 1.0 - r.ball_radius
        folded = np.mod(y + wall, 4 * wall)
        y_hit = np.where(folded > 2 * wall, 4 * wall - folded, folded) - wall
        target = np.where(approaching, y_hit, 0.0)
        return _move_towards(target - own_y, self.dead_zone)


BUILTIN_OPPONENTS: dict[str, Callable[[], NumpyPolicy]] = {
    "random": RandomOpponent,
    "scripted": ScriptedOpponent,
    "predictive": PredictiveOpponent,
}


class _TorchPolicy(NumpyPolicy):
    """Adapter: an ``Actor`` / ``nn.Module`` / callable on tensors, played on numpy batches."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", None) or type(policy).__name__

    def act_numpy(self, obs: np.ndarray) -> np.ndarray:
        action = act_on_numpy(self.policy, obs)
        if action.shape != (len(obs),):
            raise ValueError(
                f"opponent {self.name}: expected a batch of {len(obs)} actions (shape "
                f"({len(obs)},)) for observations of shape {obs.shape}, got shape {action.shape}"
            )
        if action.dtype.kind == "f":
            if not np.all(action == np.round(action)):
                raise ValueError(
                    f"opponent {self.name}: actions must be integers 0, 1, 2, got floats"
                )
            action = action.astype(np.int64)
        if action.size and (action.min() < 0 or action.max() > 2):
            raise ValueError(
                f"opponent {self.name}: actions must be 0 (stay), 1 (up) or 2 (down), got "
                f"values in [{action.min()}, {action.max()}]"
            )
        return action

    def __repr__(self) -> str:
        return f"TorchPolicy({self.name})"


def as_numpy_policy(
    spec: Any,
    rules: PongDuelRules | None = None,
    seed: int | np.random.SeedSequence | None = None,
) -> NumpyPolicy:
    """Turn an opponent spec (name, ``Actor``, batched callable) into a :class:`NumpyPolicy`.

    ``seed`` seeds the ``"random"`` bot's generator (``None``: fresh entropy).

    Raises ``ValueError`` for an unknown name and ``TypeError`` for anything not callable.
    """
    if isinstance(spec, NumpyPolicy):
        return spec
    if isinstance(spec, str):
        if spec not in BUILTIN_OPPONENTS:
            raise ValueError(
                f"unknown Pong Duel opponent {spec!r}: expected one of "
                f"{sorted(BUILTIN_OPPONENTS)}, an Actor, or a batched callable obs -> actions"
            )
        if spec == "predictive" and rules is not None:
            return PredictiveOpponent(rules)
        if spec == "random":
            return RandomOpponent(seed)
        return BUILTIN_OPPONENTS[spec]()
    if callable(spec):
        return _TorchPolicy(spec)
    raise TypeError(
        f"a Pong Duel opponent must be one of {sorted(BUILTIN_OPPONENTS)}, an Actor, or a "
        f"batched callable obs [K, 10] -> actions [K]; got {type(spec).__name__}"
    )
