"""The checks of the TD3 (and DDPG) practical: ``td3_target``, ``td3_actor_loss`` and
``update_targets``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import TERMINAL, Case, Spec
from rl_mind.checks.inputs import network, rand, transitions

__all__ = ["SPECS", "check_td3_actor_loss", "check_td3_target", "check_update_targets"]

DATA = Path(__file__).with_suffix(".pt")


def _build_td3_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n, obs_dim = 8, 3
    terminated = torch.arange(n) % 3 == 2 if case == 1 else torch.zeros(n, dtype=torch.bool)
    # small observations keep the target action far from the bounds, except in case 4
    obs_scale = 3.0 if case == 4 else 0.2
    noise = torch.zeros(n, 1) if case in (0, 1) else rand(g, n, 1)
    if case == 2:
        noise = noise.clamp(-2.0, 2.0) * 0.5  # within noise_clip once scaled
    if case == 3:
        noise = torch.where(torch.arange(n) % 2 == 0, 4.0, -4.0).unsqueeze(1) + noise * 0.1
    if case == 4:
        noise = noise.abs() + 1.0
    actor = network("deterministic_actor", g, obs_dim, 1, scale=0.1)
    if case == 4:
        actor = network("deterministic_actor", g, obs_dim, 1, scale=2.0)
    return {
        "actor_target": actor,
        "q1_target": network("critic", g, obs_dim, 1),
        "q2_target": network("critic", g, obs_dim, 1),
        "batch": transitions(g, n, obs_dim, rand(g, n, 1).clamp(-1, 1), terminated, obs_scale),
        "noise": noise,
        "gamma": 0.99,
        "policy_noise": 0.2,
        "noise_clip": 0.5,
    }


def _build_td3_actor_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "actor": network("deterministic_actor", g, 3, 1),
        "q1": network("critic", g, 3, 1),
        "obs": rand(g, 8, 3),
    }


def _build_update_targets(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "networks": [network("critic", g, 3, 1), network("deterministic_actor", g, 3, 1)],
        "target_networks": [network("critic", g, 3, 1), network("deterministic_actor", g, 3, 1)],
        "tau": (0.05, 1.0, 0.0)[case],
    }


TD3_TARGET = Spec(
    "td3_target",
    (
        "actor_target",
        "q1_target",
        "q2_target",
        "batch",
        "noise",
        "gamma",
        "policy_noise",
        "noise_clip",
    ),
    (
        Case(
            "zero noise, no terminal step",
            "bootstrap from the smaller of the two target critics, evaluated at the target "
            "actor's deterministic action actor_target.act(next_obs)",
        ),
        Case("zero noise, some terminal steps", TERMINAL),
        Case(
            "small noise",
            "target policy smoothing: add noise * policy_noise to the target action",
        ),
        Case(
            "large noise",
            "clip the smoothing noise (noise * policy_noise) to [-noise_clip, noise_clip] "
            "before adding it",
        ),
        Case(
            "smoothed actions past the action bounds",
            "clamp the smoothed target action to the action bounds [-1, 1]",
        ),
    ),
    _build_td3_target,
    "target",
    DATA,
)

TD3_ACTOR_LOSS = Spec(
    "td3_actor_loss",
    ("actor", "q1", "obs"),
    (
        Case(
            "a batch of observations",
            "the actor maximizes q1 at its own deterministic action actor.act(obs): minimize "
            "the negated mean",
        ),
    ),
    _build_td3_actor_loss,
    "loss",
    DATA,
    grad_messages={
        ("output", "actor"): "no gradient reaches the actor: the action must be "
        "actor.act(obs) computed with gradients (not the batch's actions, not under "
        "torch.no_grad())",
    },
    sign_message="sign error: minimizing the actor loss must increase Q",
)

UPDATE_TARGETS = Spec(
    "update_targets",
    ("networks", "target_networks", "tau"),
    (
        Case(
            "tau = 0.05",
            "move each target network a fraction tau of the way toward its network "
            "(soft_update(network, target, tau))",
        ),
        Case("tau = 1 (a hard copy)", "with tau = 1 each target becomes a copy of its network"),
        Case("tau = 0 (no change)", "with tau = 0 the targets must not change"),
    ),
    _build_update_targets,
    "inplace",
    DATA,
    changes=("target_networks",),
    changed_messages={
        "networks": "{name} was modified: only the target networks change "
        "(soft_update(source, target, tau) writes into its second argument)",
    },
)

SPECS = (TD3_TARGET, TD3_ACTOR_LOSS, UPDATE_TARGETS)


def check_td3_target(td3_target: Callable[..., Tensor]) -> None:
    """Check ``td3_target(actor_target, q1_target, q2_target, batch, noise, gamma,
    policy_noise, noise_clip) -> [N]``: prints ✓ when every case passes, else raises
    :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    TD3_TARGET.check(td3_target)


def check_td3_actor_loss(td3_actor_loss: Callable[..., Tensor]) -> None:
    """Check ``td3_actor_loss(actor, q1, obs) -> scalar``."""
    TD3_ACTOR_LOSS.check(td3_actor_loss)


def check_update_targets(update_targets: Callable[..., None]) -> None:
    """Check ``update_targets(networks, target_networks, tau) -> None`` (in place)."""
    UPDATE_TARGETS.check(update_targets)
