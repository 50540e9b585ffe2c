"""The checks of the DQN practical: ``dqn_td_target`` and ``dqn_loss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import TERMINAL, Case, Probe, Spec, same_result
from rl_mind.checks.inputs import QNetwork, network, rand, transitions

__all__ = ["SPECS", "check_dqn_loss", "check_dqn_td_target"]

DATA = Path(__file__).with_suffix(".pt")


def _build_dqn_td_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 8
    terminated = torch.zeros(n, dtype=torch.bool) if case == 0 else torch.arange(n) % 3 == 1
    return {
        "target_network": network("q_network", g, 4, 3),
        "batch": transitions(g, n, 4, torch.randint(0, 3, (n,), generator=g), terminated),
        "gamma": 0.99 if case == 0 else 0.9,
    }


def _build_dqn_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 8
    net = network("q_network", g, 4, 3)
    batch = transitions(g, n, 4, torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.bool))
    q = QNetwork(4, 3)
    q.load_state_dict(net["state"])
    with torch.no_grad():
        greedy = q(batch["obs"]).argmax(dim=1)
    # case 0: the greedy actions were taken; case 1: never the greedy one
    batch["action"] = greedy if case == 0 else (greedy + 1 + torch.arange(n) % 2) % 3
    return {"q_network": net, "batch": batch, "td_target": rand(g, n)}


DQN_TD_TARGET = Spec(
    "dqn_td_target",
    ("target_network", "batch", "gamma"),
    (
        Case(
            "ordinary transitions (none terminal)",
            "bootstrap from the value of the best action in next_obs, as estimated by "
            "target_network, discounted by gamma",
        ),
        Case("a batch with terminal transitions", TERMINAL),
    ),
    _build_dqn_td_target,
    "target",
    DATA,
)

DQN_LOSS = Spec(
    "dqn_loss",
    ("q_network", "batch", "td_target"),
    (
        Case(
            "the greedy actions were taken",
            "compare Q(s, a) with the TD target: the mean squared error over the batch "
            "(F.mse_loss)",
        ),
        Case(
            "non-greedy actions were taken",
            "use the Q-value of the action taken in the batch (gather with "
            "batch.action.value), not the best action's value",
        ),
    ),
    _build_dqn_loss,
    "loss",
    DATA,
    probes=(
        # a loss that does not move when the targets are shuffled pairs every Q-value with
        # every target: the [N, 1] result of gather met the [N] targets and broadcast
        Probe(
            lambda stored: {**stored, "td_target": stored["td_target"].roll(1)},
            same_result,
            "the loss does not change when the targets are shuffled: it compares every "
            "Q(s, a) with every target instead of each with its own. Check the shapes: "
            "gather gives [N, 1] and td_target is [N], which broadcast to [N, N]; "
            ".squeeze(1) the gathered Q-values",
        ),
    ),
    grad_messages={
        ("output", "q_network"): "no gradient reaches q_network: do not compute Q(s, a) "
        "under torch.no_grad() or detach it",
    },
)

SPECS = (DQN_TD_TARGET, DQN_LOSS)


def check_dqn_td_target(dqn_td_target: Callable[..., Tensor]) -> None:
    """Check ``dqn_td_target(target_network, batch, gamma) -> [N]``: prints ✓ when every
    case passes, else raises :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    DQN_TD_TARGET.check(dqn_td_target)


def check_dqn_loss(dqn_loss: Callable[..., Tensor]) -> None:
    """Check ``dqn_loss(q_network, batch, td_target) -> scalar``."""
    DQN_LOSS.check(dqn_loss)
