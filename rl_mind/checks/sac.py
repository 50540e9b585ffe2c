"""The checks of the SAC practical: ``sac_target``, ``sac_actor_loss`` and
``sac_temperature_loss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import TERMINAL, Case, Probe, Spec, same_result
from rl_mind.checks.inputs import network, rand, transitions

__all__ = ["SPECS", "check_sac_actor_loss", "check_sac_target", "check_sac_temperature_loss"]

DATA = Path(__file__).with_suffix(".pt")


def _build_sac_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n, obs_dim = 8, 3
    terminated = torch.arange(n) % 3 == 0 if case == 2 else torch.zeros(n, dtype=torch.bool)
    return {
        "actor": network("stochastic_actor", g, obs_dim, 1),
        "q1_target": network("critic", g, obs_dim, 1),
        "q2_target": network("critic", g, obs_dim, 1),
        "batch": transitions(g, n, obs_dim, rand(g, n, 1).clamp(-1, 1), terminated),
        "alpha": (0.0, 0.2, 0.2)[case],
        "gamma": 0.99,
    }


def _build_sac_actor_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "actor": network("stochastic_actor", g, 3, 1),
        "q1": network("critic", g, 3, 1),
        "q2": network("critic", g, 3, 1),
        "obs": rand(g, 8, 3),
        "alpha": (0.0, 0.2)[case],
    }


def _build_sac_temperature_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    # case 0: entropy (-log_prob) below the target; case 1: above it
    log_prob = rand(g, n, scale=0.3) + (1.5 if case == 0 else -2.5)
    return {"log_alpha": torch.tensor(-1.2), "log_prob": log_prob, "target_entropy": -1.0}


def _alpha_changed(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "alpha": stored["alpha"] + 0.5}


SAC_TARGET = Spec(
    "sac_target",
    ("actor", "q1_target", "q2_target", "batch", "alpha", "gamma"),
    (
        Case(
            "alpha = 0 (no entropy bonus), no terminal step",
            "bootstrap from the smaller of the two target critics, evaluated at an action "
            "sampled from the current policy in the next state, actor(next_obs)",
        ),
        Case(
            "alpha = 0.2",
            "the soft value of the next state includes the entropy bonus: alpha times minus "
            "the log-probability of the sampled next action",
        ),
        Case("alpha = 0.2, some terminal steps", TERMINAL),
    ),
    _build_sac_target,
    "target",
    DATA,
    probes=(
        Probe(
            _alpha_changed,
            same_result,
            "the target does not change with alpha: the entropy bonus is alpha times minus "
            "the log-probability of the sampled next action (alpha weighs it)",
        ),
    ),
)

SAC_ACTOR_LOSS = Spec(
    "sac_actor_loss",
    ("actor", "q1", "q2", "obs", "alpha"),
    (
        Case(
            "alpha = 0",
            "the actor maximizes the smaller of the two critics at its own sampled action "
            "actor(obs); minimize the negated mean",
        ),
        Case(
            "alpha = 0.2",
            "the actor also maximizes the entropy: add alpha times the log-probability of the "
            "sampled action to the loss",
        ),
    ),
    _build_sac_actor_loss,
    "loss",
    DATA,
    probes=(
        Probe(
            _alpha_changed,
            same_result,
            "the loss does not change with alpha: the entropy term is alpha times the "
            "log-probability of the sampled action (alpha weighs the entropy against Q)",
        ),
    ),
    grad_messages={
        ("output", "actor"): "no gradient reaches the actor: sample the action with "
        "actor(obs) with gradients (reparameterization), not under torch.no_grad()",
    },
    sign_message="sign error: minimizing the actor loss must increase Q (and the entropy)",
)

SAC_TEMPERATURE_LOSS = Spec(
    "sac_temperature_loss",
    ("log_alpha", "log_prob", "target_entropy"),
    (
        Case(
            "policy entropy below the target",
            "the loss multiplies log_alpha (not alpha) by the entropy gap (log_prob + "
            "target_entropy), averaged; minimizing it must raise alpha when the entropy is "
            "too low",
        ),
        Case(
            "policy entropy above the target",
            "minimizing the loss must lower alpha when the entropy is above the target",
        ),
    ),
    _build_sac_temperature_loss,
    "loss",
    DATA,
    grad_inputs=("log_alpha", "log_prob"),
    no_grad_messages={
        ("output", "log_prob"): "the temperature loss sends gradients into the policy's "
        "log_prob: treat it as a constant (detach it)",
    },
    grad_messages={
        ("output", "log_alpha"): "no gradient reaches log_alpha: the loss must be computed "
        "from log_alpha itself",
    },
    sign_message="sign error: minimizing the loss must raise alpha when the policy's entropy "
    "is below the target",
)

SPECS = (SAC_TARGET, SAC_ACTOR_LOSS, SAC_TEMPERATURE_LOSS)


def check_sac_target(sac_target: Callable[..., Tensor]) -> None:
    """Check ``sac_target(actor, q1_target, q2_target, batch, alpha, gamma) -> [N]``: prints
    ✓ when every case passes, else raises :class:`~rl_mind.checks.CheckFailure` naming the
    mistake."""
    SAC_TARGET.check(sac_target)


def check_sac_actor_loss(sac_actor_loss: Callable[..., Tensor]) -> None:
    """Check ``sac_actor_loss(actor, q1, q2, obs, alpha) -> scalar``."""
    SAC_ACTOR_LOSS.check(sac_actor_loss)


def check_sac_temperature_loss(sac_temperature_loss: Callable[..., Tensor]) -> None:
    """Check ``sac_temperature_loss(log_alpha, log_prob, target_entropy) -> scalar``."""
    SAC_TEMPERATURE_LOSS.check(sac_temperature_loss)
