"""The checks of the A2C practical: ``nstep_returns`` and ``a2c_loss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import TERMINAL, Case, Probe, Spec, same_result
from rl_mind.checks.inputs import ROLLOUT_CASES, rand, rollout_inputs

__all__ = ["SPECS", "check_a2c_loss", "check_nstep_returns"]

DATA = Path(__file__).with_suffix(".pt")


def _build_nstep_returns(g: torch.Generator, case: int) -> dict[str, Any]:
    inputs = rollout_inputs(g, case)
    del inputs["value"]
    return {**inputs, "gamma": 0.9}


def _build_a2c_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    values = rand(g, n, scale=2.0)
    returns = values.clone() if case == 1 else rand(g, n, scale=3.0) + 1.0
    return {"log_prob": -rand(g, n).abs(), "values": values, "returns": returns}


NSTEP_RETURNS = Spec(
    "nstep_returns",
    ("reward", "next_value", "terminated", "truncated", "gamma"),
    (
        Case(
            ROLLOUT_CASES[0],
            "at the end of the rollout, bootstrap from next_value, discounted by gamma",
        ),
        Case(
            ROLLOUT_CASES[1],
            "compute the returns backward from the last step: each step adds its reward to "
            "the discounted return of the step after it",
        ),
        Case(ROLLOUT_CASES[2], TERMINAL),
        Case(
            ROLLOUT_CASES[3],
            "at an episode boundary inside the rollout the next row is a new episode: its "
            "rewards must not leak into the returns of the episode that ended",
        ),
        Case(
            ROLLOUT_CASES[4],
            "a truncated step is not terminal: bootstrap from next_value at that step (the true "
            "last observation), and do not carry the next episode's return back across the "
            "boundary",
        ),
    ),
    _build_nstep_returns,
    "target",
    DATA,
    grad_inputs=("next_value",),
)

A2C_LOSS = Spec(
    "a2c_loss",
    ("log_prob", "values", "returns"),
    (
        Case(
            "a batch of steps",
            "policy loss: weigh each log-probability by its advantage (return minus value) and "
            "average, minimizing it must favour good actions; value loss: the mean squared "
            "error between values and returns (F.mse_loss)",
        ),
        Case(
            "returns equal to the values (zero advantage)",
            "the advantage is the return minus the value (the baseline); with zero advantage "
            "the policy loss is zero",
        ),
    ),
    _build_a2c_loss,
    "losses",
    DATA,
    outputs=("policy_loss", "value_loss"),
    grad_inputs=("log_prob", "values"),
    probes=(
        Probe(
            lambda stored: {**stored, "values": stored["values"] + 1.0},
            same_result,
            "the policy loss does not change when the values change: the baseline is "
            "missing; weigh each log-probability by its advantage, the return minus value "
            "(how much better than the critic expected the step turned out)",
        ),
    ),
    no_grad_messages={
        ("policy_loss", "values"): "the policy loss sends gradients into the critic (values): "
        "the advantage is a constant weight, detach it",
        ("value_loss", "log_prob"): "the value loss depends on log_prob: it should only train "
        "the critic",
    },
    grad_messages={
        ("value_loss", "values"): "no gradient of the value loss reaches values: do not "
        "detach the values in the critic loss",
        ("policy_loss", "log_prob"): "no gradient of the policy loss reaches log_prob",
    },
    sign_message="sign error: minimizing the policy loss must increase the log-probability "
    "of actions with a positive advantage",
)

SPECS = (NSTEP_RETURNS, A2C_LOSS)


def check_nstep_returns(nstep_returns: Callable[..., Tensor]) -> None:
    """Check ``nstep_returns(reward, next_value, terminated, truncated, gamma) -> [T, B]``:
    prints ✓ when every case passes, else raises :class:`~rl_mind.checks.CheckFailure`
    naming the mistake."""
    NSTEP_RETURNS.check(nstep_returns)


def check_a2c_loss(a2c_loss: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Check ``a2c_loss(log_prob [N], values [N], returns [N]) -> (policy_loss, value_loss)``."""
    A2C_LOSS.check(a2c_loss)
