"""The checks of the REINFORCE practical: ``discounted_returns`` and ``reinforce_loss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import Case, Spec
from rl_mind.checks.inputs import rand

__all__ = ["SPECS", "check_discounted_returns", "check_reinforce_loss"]

DATA = Path(__file__).with_suffix(".pt")


def _build_discounted_returns(g: torch.Generator, case: int) -> dict[str, Any]:
    length = (1, 6, 7)[case]
    return {"rewards": rand(g, length) + 1.0, "gamma": (0.9, 1.0, 0.9)[case]}


def _build_reinforce_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    return {
        "log_prob": -rand(g, n).abs(),
        "returns": rand(g, n, scale=5.0) + 3.0,
        "values": torch.zeros(n) if case == 0 else rand(g, n, scale=3.0) + 2.0,
    }


DISCOUNTED_RETURNS = Spec(
    "discounted_returns",
    ("rewards", "gamma"),
    (
        Case("a one-step episode", "the return of the last step is its own reward, not discounted"),
        Case(
            "several steps, gamma = 1 (no discount)",
            "the return at step t sums the rewards from step t to the end of the episode: the "
            "future, not the past",
        ),
        Case(
            "several steps, gamma = 0.9",
            "each later reward is discounted by one more factor of gamma (the reward of step t "
            "itself is not discounted)",
        ),
    ),
    _build_discounted_returns,
    "target",
    DATA,
)

REINFORCE_LOSS = Spec(
    "reinforce_loss",
    ("log_prob", "returns", "values"),
    (
        Case(
            "no baseline (values = 0)",
            "weigh each log-probability by its return and average over the batch; minimizing "
            "the loss must make high-return actions more likely",
        ),
        Case(
            "with a learned baseline",
            "weigh each log-probability by the return minus the baseline (values)",
        ),
    ),
    _build_reinforce_loss,
    "loss",
    DATA,
    grad_inputs=("log_prob", "values"),
    no_grad_messages={
        ("output", "values"): "the policy loss sends gradients into the baseline (values): "
        "the advantage is a constant weight, detach it",
    },
    sign_message="sign error: minimizing the loss must increase the log-probability of "
    "actions with a positive advantage",
)

SPECS = (DISCOUNTED_RETURNS, REINFORCE_LOSS)


def check_discounted_returns(discounted_returns: Callable[..., Tensor]) -> None:
    """Check ``discounted_returns(rewards [T], gamma) -> [T]``: prints ✓ when every case
    passes, else raises :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    DISCOUNTED_RETURNS.check(discounted_returns)


def check_reinforce_loss(reinforce_loss: Callable[..., Tensor]) -> None:
    """Check ``reinforce_loss(log_prob [N], returns [N], values [N]) -> scalar``."""
    REINFORCE_LOSS.check(reinforce_loss)
