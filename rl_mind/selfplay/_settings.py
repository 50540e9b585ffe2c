"""The checks of the self-play PPO (:mod:`rl_mind.selfplay.trainer`): its config's settings
and the inputs of its functions.

Kept apart so that the reference practical shows the numbers of the run and the algorithm,
not the checks; each setting is still checked when a config is built, and a bad one is a
``ValueError`` (or ``TypeError`` for a device that is not a device) naming the setting. A
function's bad input is a ``TypeError`` or ``ValueError`` naming the function.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from rl_mind._validation import as_int, checked_device
from rl_mind.selfplay.pool import SAMPLING_STRATEGIES

__all__ = [
    "ACTIVATIONS",
    "MAX_SEED",
    "activation_module",
    "check_bool_flags",
    "check_config",
    "check_same_shape",
]

# The run derives its other seeds from this one (seed + 2, seed + 1000 * updates + 1, ...),
# and torch takes seeds below 2**64: a 32-bit seed leaves room for all of them.
MAX_SEED = 2**32 - 1

_POSITIVE_INTS = (
    "num_envs",
    "num_steps",
    "update_epochs",
    "minibatch_size",
    "snapshot_every",
    "pool_capacity",
    "eval_matches",
    "leaderboard_snapshots",
    "leaderboard_matches",
    "video_max_steps",
)
_POSITIVE_NUMBERS = (
    "learning_rate",
    "clip_coef",
    "max_grad_norm",
    "eval_every_seconds",
    "checkpoint_every_seconds",
)
_NON_NEGATIVE_NUMBERS = ("entropy_coef", "value_coef")
_FRACTIONS = ("gamma", "gae_lambda", "latest_opponent_probability", "policy_averaging")
_FLAGS = ("train_on_opponent", "ball_forecast")
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}  # (the networks' hidden layers)


def _is_int(value: Any) -> bool:
    return as_int(value) is not None


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float | np.floating)) and math.isfinite(value)


def check_config(config: Any) -> None:
    """Refuse a bad setting of ``config`` by name; normalize ``hidden_sizes`` to a tuple of
    ints and ``device`` to its string (a device this machine lacks is refused here, not at
    the first network moved there)."""

    def fail(name: str, expected: str) -> None:
        raise ValueError(
            f"SelfPlayConfig: {name} must be {expected}, got {getattr(config, name)!r}"
        )

    for name in _POSITIVE_INTS:
        if not _is_int(getattr(config, name)) or getattr(config, name) <= 0:
            fail(name, "a positive int")
    if not _is_int(config.seed) or not 0 <= config.seed <= MAX_SEED:
        raise ValueError(
            f"SelfPlayConfig: seed must be a non-negative int, got {config.seed!r} "
            f"(seeds go from 0 to 2**32 - 1)"
        )
    for name in _POSITIVE_NUMBERS:
        if not _is_number(getattr(config, name)) or getattr(config, name) <= 0:
            fail(name, "a positive number")
    for name in _NON_NEGATIVE_NUMBERS:
        if not _is_number(getattr(config, name)) or getattr(config, name) < 0:
            fail(name, "a number >= 0")
    for name in _FRACTIONS:
        if not _is_number(getattr(config, name)) or not 0 <= getattr(config, name) <= 1:
            fail(name, "a number in [0, 1]")
    for name in _FLAGS:
        if not isinstance(getattr(config, name), bool):
            fail(name, "True or False")
    if not isinstance(config.hidden_sizes, tuple | list) or not all(
        _is_int(h) and h > 0 for h in config.hidden_sizes
    ):
        fail("hidden_sizes", "a tuple of positive ints (the hidden layer widths)")
    config.hidden_sizes = tuple(int(h) for h in config.hidden_sizes)
    if not isinstance(config.pool_sampling, str) or config.pool_sampling not in SAMPLING_STRATEGIES:
        fail("pool_sampling", f"one of {SAMPLING_STRATEGIES}")
    if not isinstance(config.activation, str) or config.activation not in ACTIVATIONS:
        fail("activation", f"one of {tuple(ACTIVATIONS)}")
    config.device = str(checked_device(config.device, "SelfPlayConfig"))


def activation_module(name: Any) -> type[nn.Module]:
    """The module of the hidden-layer activation ``name``, else a ``ValueError``."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {tuple(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


def check_bool_flags(shape: tuple[int, ...], **flags: Any) -> None:
    """Refuse episode-end flags that are not bool tensors of ``shape`` (the rewards', ``[T, B]``):
    ``~`` of 0/1 integer flags is -1/-2, and the advantages would be silently wrong."""
    for name, value in flags.items():
        if not isinstance(value, Tensor) or value.dtype != torch.bool:
            what = value.dtype if isinstance(value, Tensor) else type(value).__name__
            raise TypeError(
                f"gae_advantages: {name} must be a bool tensor (as a Rollout holds it), got "
                f"{what}; use flags.bool()"
            )
        if value.shape != shape:
            raise ValueError(
                f"gae_advantages: {name} has shape {list(value.shape)}, expected the "
                f"rewards' {list(shape)} ([T, B])"
            )


def check_same_shape(prediction: Tensor, target: Tensor, caller: str) -> None:
    """Refuse a prediction of another shape than its target (``[N, 1]`` against ``[N]``
    would broadcast to ``[N, N]``)."""
    if prediction.shape != target.shape:
        raise ValueError(
            f"{caller}: prediction and target must have the same shape, got "
            f"{list(prediction.shape)} and {list(target.shape)} (squeeze the value head's "
            f"last dimension)"
        )
