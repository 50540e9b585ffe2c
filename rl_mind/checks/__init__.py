"""Checks for the practicals: ``check_xxx(student_fn)`` right after each gap.

Each check runs the student's function on prepared cases and prints either a pass or what
is wrong and on which case (a bootstrap at a terminal step, returns leaking across an
episode boundary, gradients flowing through a target, a sign error...), without printing
the formula. It returns ``True`` when every case passes, so that a notebook cell reads::

    check_gae(gae)

The cases are ordered so that each one adds a single difficulty (one step, several steps,
a terminal step, an episode boundary inside the rollout, a truncation...): the first case
that fails names the mistake. Their inputs and the expected outputs (and gradients) are
*data*, stored in ``expected.pt`` next to this module and produced by running the
reference solutions of the practical sources (``python -m rl_mind.checks
notebooks/src/*.py`` regenerates it); nothing here computes the right answer.

What the reader must not get wrong: a check never swallows the student's exceptions (a
``NotImplementedError`` from an unfilled gap, a shape error) — they propagate with their
traceback, which is what a student needs to see.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from rl_mind.core import Action, Actor, StochasticAction
from rl_mind.data import Transitions

__all__ = [
    "CHECKS",
    "check_a2c_loss",
    "check_discounted_returns",
    "check_dqn_loss",
    "check_dqn_td_target",
    "check_gae",
    "check_nstep_returns",
    "check_ppo_policy_loss",
    "check_ppo_value_loss",
    "check_reinforce_loss",
    "check_sac_actor_loss",
    "check_sac_target",
    "check_sac_temperature_loss",
    "check_td3_actor_loss",
    "check_td3_target",
    "check_update_targets",
]

DATA_PATH = Path(__file__).with_name("expected.pt")
_ATOL, _RTOL = 1e-5, 1e-4


# ---------------------------------------------------------------------- tiny test networks
class _QNetwork(nn.Module):
    """``obs [N, obs_dim] -> Q-values [N, n_actions]`` (a linear layer)."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim, n_actions)

    def forward(self, obs: Tensor) -> Tensor:
        return self.linear(obs)


class _Critic(nn.Module):
    """``(obs [N, obs_dim], action [N, action_dim]) -> Q [N]``."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim + action_dim, 1)

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return torch.tanh(self.linear(torch.cat([obs, action], dim=-1))).squeeze(-1) * 3.0


class _DeterministicActor(Actor[Action]):
    """``act(obs)`` = tanh of a linear layer; ``forward`` adds a fixed 'exploration' offset,
    so that using ``actor(obs)`` where ``actor.act(obs)`` is meant shows up."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim, action_dim)

    def forward(self, obs: Any) -> Action:
        return Action((self.act(obs) + 0.25).clamp(-1.0, 1.0))

    def act(self, obs: Any) -> Tensor:
        return torch.tanh(self.linear(obs))


class _StochasticActor(Actor[StochasticAction]):
    """``actor(obs)`` returns a (deterministic, for reproducibility) 'sample' and its
    log-probability, both differentiable; ``act(obs)`` returns another action (the mean)."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.mean = nn.Linear(obs_dim, action_dim)
        self.spread = nn.Linear(obs_dim, 1)

    def forward(self, obs: Any) -> StochasticAction:
        value = torch.tanh(self.mean(obs) + 0.3)
        log_prob = -(self.spread(obs).squeeze(-1) ** 2) - 0.5
        return StochasticAction(value, log_prob)

    def act(self, obs: Any) -> Tensor:
        return torch.tanh(self.mean(obs))


_NETWORKS: dict[str, Callable[[int, int], nn.Module]] = {
    "q_network": _QNetwork,
    "critic": _Critic,
    "deterministic_actor": _DeterministicActor,
    "stochastic_actor": _StochasticActor,
}


# ---------------------------------------------------------------------- case descriptions
@dataclass(frozen=True)
class _Case:
    name: str  # what the case contains, shown to the student
    hint: str  # the likely mistake when this is the first failing case


@dataclass(frozen=True)
class _Spec:
    """One gap: how to call it, its cases, and what its outputs must satisfy."""

    function: str
    args: tuple[str, ...]
    cases: tuple[_Case, ...]
    build: Callable[[torch.Generator, int], dict[str, Any]]  # (generator, case index) -> inputs
    kind: str  # "target" (a tensor without gradient), "loss", "losses", "inplace"
    outputs: tuple[str, ...] = ("output",)
    grad_inputs: tuple[str, ...] = ()  # tensors given with requires_grad=True
    # (output, input) -> message when a gradient that must be zero is not
    no_grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    # (output, input) -> message when a gradient that must exist is missing
    grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    # (output, input) -> message when the value is right but that gradient is not
    wrong_grad_messages: dict[tuple[str, str], str] = field(default_factory=dict)
    sign_message: str = "the result has the opposite sign of what it should be (a sign error)"


def _rand(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return torch.randn(*shape, generator=g) * scale


def _network(
    kind: str, g: torch.Generator, n_in: int, n_out: int, scale: float = 1.0
) -> dict[str, Any]:
    module = _NETWORKS[kind](n_in, n_out)
    state = {name: _rand(g, *p.shape, scale=scale) for name, p in module.named_parameters()}
    return {"__network__": kind, "sizes": [n_in, n_out], "state": state}


def _transitions(
    g: torch.Generator,
    n: int,
    obs_dim: int,
    action: Tensor,
    terminated: Tensor,
    obs_scale: float = 1.0,
) -> dict[str, Any]:
    return {
        "__transitions__": True,
        "obs": _rand(g, n, obs_dim, scale=obs_scale),
        "action": action,
        "reward": _rand(g, n),
        "next_obs": _rand(g, n, obs_dim, scale=obs_scale),
        "terminated": terminated,
    }


def _flags(t: int, b: int, cells: Sequence[tuple[int, int]]) -> Tensor:
    flags = torch.zeros(t, b, dtype=torch.bool)
    for i, j in cells:
        flags[i, j] = True
    return flags


# -- DQN
def _build_dqn_td_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 8
    terminated = torch.zeros(n, dtype=torch.bool) if case == 0 else torch.arange(n) % 3 == 1
    return {
        "target_network": _network("q_network", g, 4, 3),
        "batch": _transitions(g, n, 4, torch.randint(0, 3, (n,), generator=g), terminated),
        "gamma": 0.99 if case == 0 else 0.9,
    }


def _build_dqn_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 8
    net = _network("q_network", g, 4, 3)
    batch = _transitions(
        g, n, 4, torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.bool)
    )
    q = _QNetwork(4, 3)
    q.load_state_dict(net["state"])
    with torch.no_grad():
        greedy = q(batch["obs"]).argmax(dim=1)
    # case 0: the greedy actions were taken; case 1: never the greedy one
    batch["action"] = greedy if case == 0 else (greedy + 1 + torch.arange(n) % 2) % 3
    return {"q_network": net, "batch": batch, "td_target": _rand(g, n)}


# -- REINFORCE
def _build_discounted_returns(g: torch.Generator, case: int) -> dict[str, Any]:
    length = (1, 6, 7)[case]
    return {"rewards": _rand(g, length) + 1.0, "gamma": (0.9, 1.0, 0.9)[case]}


def _build_reinforce_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    return {
        "log_prob": -_rand(g, n).abs(),
        "returns": _rand(g, n, scale=5.0) + 3.0,
        "values": torch.zeros(n) if case == 0 else _rand(g, n, scale=3.0) + 2.0,
    }


# -- A2C and PPO: rollouts [T, B] with boundaries at chosen cells
_ROLLOUT_LAYOUTS: tuple[tuple[int, list[tuple[int, int]], list[tuple[int, int]]], ...] = (
    # (T, terminated cells, truncated cells), B = 3
    (1, [], []),
    (5, [], []),
    (5, [(4, 0), (4, 2)], []),
    (6, [(2, 0), (4, 1)], []),
    (6, [], [(1, 0), (3, 2)]),
)


def _rollout_inputs(g: torch.Generator, case: int) -> dict[str, Any]:
    t, terminated, truncated = _ROLLOUT_LAYOUTS[case]
    return {
        "reward": _rand(g, t, 3) + 1.0,
        "value": _rand(g, t, 3, scale=2.0),
        "next_value": _rand(g, t, 3, scale=2.0) + 3.0,
        "terminated": _flags(t, 3, terminated),
        "truncated": _flags(t, 3, truncated),
    }


def _build_nstep_returns(g: torch.Generator, case: int) -> dict[str, Any]:
    inputs = _rollout_inputs(g, case)
    del inputs["value"]
    return {**inputs, "gamma": 0.9}


def _build_gae(g: torch.Generator, case: int) -> dict[str, Any]:
    return {**_rollout_inputs(g, case), "gamma": 0.9, "gae_lambda": 0.8}


def _build_a2c_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    values = _rand(g, n, scale=2.0)
    returns = values.clone() if case == 1 else _rand(g, n, scale=3.0) + 1.0
    return {"log_prob": -_rand(g, n).abs(), "values": values, "returns": returns}


def _build_ppo_policy_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 12
    old = -_rand(g, n).abs() - 0.1
    if case == 0:  # same policy
        log_ratio, advantages = torch.zeros(n), _rand(g, n) + 0.5
    elif case == 1:  # inside the clip range
        log_ratio, advantages = _rand(g, n, scale=0.05), _rand(g, n)
    elif case == 2:  # beyond 1 + clip, positive advantages
        log_ratio, advantages = 0.4 + _rand(g, n, scale=0.1).abs(), _rand(g, n).abs() + 0.1
    else:  # beyond the range on both sides, advantages of both signs
        log_ratio = torch.where(torch.arange(n) % 2 == 0, 0.5, -0.5) + _rand(g, n, scale=0.05)
        advantages = torch.where(torch.arange(n) % 4 < 2, 1.0, -1.0) * (_rand(g, n).abs() + 0.1)
    return {
        "new_log_prob": old + log_ratio,
        "old_log_prob": old,
        "advantages": advantages,
        "clip_coef": 0.2,
    }


def _build_ppo_value_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    return {"values": _rand(g, n, scale=2.0), "returns": _rand(g, n, scale=3.0) + 1.0}


# -- TD3 / DDPG
def _build_td3_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n, obs_dim = 8, 3
    terminated = torch.arange(n) % 3 == 2 if case == 1 else torch.zeros(n, dtype=torch.bool)
    # small observations keep the target action far from the bounds, except in case 4
    obs_scale = 3.0 if case == 4 else 0.2
    noise = torch.zeros(n, 1) if case in (0, 1) else _rand(g, n, 1)
    if case == 2:
        noise = noise.clamp(-2.0, 2.0) * 0.5  # within noise_clip once scaled
    if case == 3:
        noise = torch.where(torch.arange(n) % 2 == 0, 4.0, -4.0).unsqueeze(1) + noise * 0.1
    if case == 4:
        noise = noise.abs() + 1.0
    actor = _network("deterministic_actor", g, obs_dim, 1, scale=0.1)
    if case == 4:
        actor = _network("deterministic_actor", g, obs_dim, 1, scale=2.0)
    return {
        "actor_target": actor,
        "q1_target": _network("critic", g, obs_dim + 0, 1),
        "q2_target": _network("critic", g, obs_dim, 1),
        "batch": _transitions(g, n, obs_dim, _rand(g, n, 1).clamp(-1, 1), terminated, obs_scale),
        "noise": noise,
        "gamma": 0.99,
        "policy_noise": 0.2,
        "noise_clip": 0.5,
    }


def _build_td3_actor_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "actor": _network("deterministic_actor", g, 3, 1),
        "q1": _network("critic", g, 3, 1),
        "obs": _rand(g, 8, 3),
    }


def _build_update_targets(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "networks": [_network("critic", g, 3, 1), _network("deterministic_actor", g, 3, 1)],
        "target_networks": [_network("critic", g, 3, 1), _network("deterministic_actor", g, 3, 1)],
        "tau": (0.05, 1.0, 0.0)[case],
    }


# -- SAC
def _build_sac_target(g: torch.Generator, case: int) -> dict[str, Any]:
    n, obs_dim = 8, 3
    terminated = torch.arange(n) % 3 == 0 if case == 2 else torch.zeros(n, dtype=torch.bool)
    return {
        "actor": _network("stochastic_actor", g, obs_dim, 1),
        "q1_target": _network("critic", g, obs_dim, 1),
        "q2_target": _network("critic", g, obs_dim, 1),
        "batch": _transitions(g, n, obs_dim, _rand(g, n, 1).clamp(-1, 1), terminated),
        "alpha": (0.0, 0.2, 0.2)[case],
        "gamma": 0.99,
    }


def _build_sac_actor_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "actor": _network("stochastic_actor", g, 3, 1),
        "q1": _network("critic", g, 3, 1),
        "q2": _network("critic", g, 3, 1),
        "obs": _rand(g, 8, 3),
        "alpha": (0.0, 0.2)[case],
    }


def _build_sac_temperature_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    # case 0: entropy (-log_prob) below the target; case 1: above it
    log_prob = _rand(g, n, scale=0.3) + (1.5 if case == 0 else -2.5)
    return {"log_alpha": torch.tensor(-1.2), "log_prob": log_prob, "target_entropy": -1.0}


_NO_GRAD_TARGET = (
    "the result carries gradients, but it is a target: compute it under torch.no_grad() "
    "(or .detach() it) so that the loss does not push the target around"
)
_TERMINAL = (
    "a terminal step (terminated=True) has no future: do not bootstrap from the next state "
    "there (mask the bootstrap with the terminated flag)"
)

SPECS: dict[str, _Spec] = {
    spec.function: spec
    for spec in (
        _Spec(
            "dqn_td_target",
            ("target_network", "batch", "gamma"),
            (
                _Case(
                    "ordinary transitions (none terminal)",
                    "bootstrap from the value of the best action in next_obs, as estimated by "
                    "target_network, discounted by gamma",
                ),
                _Case("a batch with terminal transitions", _TERMINAL),
            ),
            _build_dqn_td_target,
            "target",
        ),
        _Spec(
            "dqn_loss",
            ("q_network", "batch", "td_target"),
            (
                _Case(
                    "the greedy actions were taken",
                    "compare Q(s, a) with the TD target: the mean squared error over the "
                    "batch (F.mse_loss)",
                ),
                _Case(
                    "non-greedy actions were taken",
                    "use the Q-value of the action taken in the batch (gather with "
                    "batch.action.value), not the best action's value",
                ),
            ),
            _build_dqn_loss,
            "loss",
            grad_messages={
                ("output", "q_network"): "no gradient reaches q_network: do not compute Q(s, a) "
                "under torch.no_grad() or detach it",
            },
        ),
        _Spec(
            "discounted_returns",
            ("rewards", "gamma"),
            (
                _Case(
                    "a one-step episode",
                    "the return of the last step is its own reward, not discounted",
                ),
                _Case(
                    "several steps, gamma = 1 (no discount)",
                    "the return at step t sums the rewards from step t to the end of the "
                    "episode: the future, not the past",
                ),
                _Case(
                    "several steps, gamma = 0.9",
                    "each later reward is discounted by one more factor of gamma (the reward "
                    "of step t itself is not discounted)",
                ),
            ),
            _build_discounted_returns,
            "target",
        ),
        _Spec(
            "reinforce_loss",
            ("log_prob", "returns", "values"),
            (
                _Case(
                    "no baseline (values = 0)",
                    "weigh each log-probability by its return and average over the batch; "
                    "minimizing the loss must make high-return actions more likely",
                ),
                _Case(
                    "with a learned baseline",
                    "weigh each log-probability by the return minus the baseline (values)",
                ),
            ),
            _build_reinforce_loss,
            "loss",
            grad_inputs=("log_prob", "values"),
            no_grad_messages={
                ("output", "values"): "the policy loss sends gradients into the baseline "
                "(values): the advantage is a constant weight, detach it",
            },
            sign_message="sign error: minimizing the loss must increase the log-probability "
            "of actions with a positive advantage",
        ),
        _Spec(
            "nstep_returns",
            ("reward", "next_value", "terminated", "truncated", "gamma"),
            (
                _Case(
                    "one step, no episode end (T = 1)",
                    "at the end of the rollout, bootstrap from next_value, discounted by gamma",
                ),
                _Case(
                    "several steps, no episode end",
                    "compute the returns backward from the last step: each step adds its "
                    "reward to the discounted return of the step after it",
                ),
                _Case("a terminal step at the end of the rollout", _TERMINAL),
                _Case(
                    "an episode that terminates inside the rollout",
                    "at an episode boundary inside the rollout the next row is a new episode: "
                    "its rewards must not leak into the returns of the episode that ended",
                ),
                _Case(
                    "an episode truncated inside the rollout (time limit)",
                    "a truncated step is not terminal: bootstrap from next_value at that step "
                    "(the true last observation), and do not carry the next episode's return "
                    "back across the boundary",
                ),
            ),
            _build_nstep_returns,
            "target",
            grad_inputs=("next_value",),
        ),
        _Spec(
            "a2c_loss",
            ("log_prob", "values", "returns"),
            (
                _Case(
                    "a batch of steps",
                    "policy loss: weigh each log-probability by its advantage (return minus "
                    "value) and average, minimizing it must favour good actions; value loss: "
                    "the mean squared error between values and returns (F.mse_loss)",
                ),
                _Case(
                    "returns equal to the values (zero advantage)",
                    "the advantage is the return minus the value (the baseline); with zero "
                    "advantage the policy loss is zero",
                ),
            ),
            _build_a2c_loss,
            "losses",
            outputs=("policy_loss", "value_loss"),
            grad_inputs=("log_prob", "values"),
            no_grad_messages={
                ("policy_loss", "values"): "the policy loss sends gradients into the critic "
                "(values): the advantage is a constant weight, detach it",
                ("value_loss", "log_prob"): "the value loss depends on log_prob: it should "
                "only train the critic",
            },
            grad_messages={
                ("value_loss", "values"): "no gradient of the value loss reaches values: do "
                "not detach the values in the critic loss",
                ("policy_loss", "log_prob"): "no gradient of the policy loss reaches log_prob",
            },
            sign_message="sign error: minimizing the policy loss must increase the "
            "log-probability of actions with a positive advantage",
        ),
        _Spec(
            "gae",
            ("reward", "value", "next_value", "terminated", "truncated", "gamma", "gae_lambda"),
            (
                _Case(
                    "one step, no episode end (T = 1)",
                    "with a single step the advantage is the one-step TD error, bootstrapped "
                    "from next_value and discounted by gamma",
                ),
                _Case(
                    "several steps, no episode end",
                    "accumulate the TD errors backward from the last step, each step further "
                    "discounted by gamma * gae_lambda",
                ),
                _Case("a terminal step at the end of the rollout", _TERMINAL),
                _Case(
                    "an episode that terminates inside the rollout",
                    "GAE must restart at an episode boundary: the TD errors of the next "
                    "episode (the next row) must not leak into the advantages of the one "
                    "that ended",
                ),
                _Case(
                    "an episode truncated inside the rollout (time limit)",
                    "a truncated step is not terminal: its TD error bootstraps from "
                    "next_value (the true last observation), and the accumulation still "
                    "restarts at the boundary",
                ),
            ),
            _build_gae,
            "target",
            grad_inputs=("value", "next_value"),
        ),
        _Spec(
            "ppo_policy_loss",
            ("new_log_prob", "old_log_prob", "advantages", "clip_coef"),
            (
                _Case(
                    "the new policy equals the old one (ratio 1)",
                    "with a ratio of 1 only the advantages matter: average the surrogate "
                    "over the batch, and minimize its negation",
                ),
                _Case(
                    "ratios inside the clip range",
                    "the probability ratio is exp(new_log_prob - old_log_prob), multiplied "
                    "by the advantage",
                ),
                _Case(
                    "ratios above 1 + clip_coef with positive advantages",
                    "the objective must stop growing once the ratio passes 1 + clip_coef: clip "
                    "the ratio to [1 - clip_coef, 1 + clip_coef] and keep the minimum of the "
                    "clipped and unclipped terms",
                ),
                _Case(
                    "ratios outside the clip range with advantages of both signs",
                    "take, per sample, the pessimistic (minimum) of the unclipped and "
                    "clipped objectives, before averaging",
                ),
            ),
            _build_ppo_policy_loss,
            "loss",
            grad_inputs=("new_log_prob",),
            grad_messages={
                ("output", "new_log_prob"): "no gradient reaches new_log_prob: the ratio must "
                "be computed from it without detaching",
            },
            wrong_grad_messages={
                ("output", "new_log_prob"): "the value is right but its gradient is not: the "
                "probability ratio is exp(new_log_prob - old_log_prob)",
            },
            sign_message="sign error: the loss is the negated surrogate objective (we "
            "minimize it to maximize the objective)",
        ),
        _Spec(
            "ppo_value_loss",
            ("values", "returns"),
            (
                _Case(
                    "a batch of values and returns",
                    "the value loss is the mean squared error between values and returns "
                    "(F.mse_loss), averaged over the batch",
                ),
            ),
            _build_ppo_value_loss,
            "loss",
            grad_inputs=("values",),
            grad_messages={
                ("output", "values"): "no gradient reaches values: do not detach the values "
                "in the value loss",
            },
        ),
        _Spec(
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
                _Case(
                    "zero noise, no terminal step",
                    "bootstrap from the smaller of the two target critics, evaluated at the "
                    "target actor's deterministic action actor_target.act(next_obs)",
                ),
                _Case("zero noise, some terminal steps", _TERMINAL),
                _Case(
                    "small noise",
                    "target policy smoothing: add noise * policy_noise to the target action",
                ),
                _Case(
                    "large noise",
                    "clip the smoothing noise (noise * policy_noise) to [-noise_clip, "
                    "noise_clip] before adding it",
                ),
                _Case(
                    "smoothed actions past the action bounds",
                    "clamp the smoothed target action to the action bounds [-1, 1]",
                ),
            ),
            _build_td3_target,
            "target",
        ),
        _Spec(
            "td3_actor_loss",
            ("actor", "q1", "obs"),
            (
                _Case(
                    "a batch of observations",
                    "the actor maximizes q1 at its own deterministic action actor.act(obs): "
                    "minimize the negated mean",
                ),
            ),
            _build_td3_actor_loss,
            "loss",
            grad_messages={
                ("output", "actor"): "no gradient reaches the actor: the action must be "
                "actor.act(obs) computed with gradients (not the batch's actions, not under "
                "torch.no_grad())",
            },
            sign_message="sign error: minimizing the actor loss must increase Q",
        ),
        _Spec(
            "update_targets",
            ("networks", "target_networks", "tau"),
            (
                _Case(
                    "tau = 0.05",
                    "move each target network a fraction tau of the way toward its network "
                    "(soft_update(network, target, tau))",
                ),
                _Case(
                    "tau = 1 (a hard copy)",
                    "with tau = 1 each target becomes a copy of its network",
                ),
                _Case("tau = 0 (no change)", "with tau = 0 the targets must not change"),
            ),
            _build_update_targets,
            "inplace",
        ),
        _Spec(
            "sac_target",
            ("actor", "q1_target", "q2_target", "batch", "alpha", "gamma"),
            (
                _Case(
                    "alpha = 0 (no entropy bonus), no terminal step",
                    "bootstrap from the smaller of the two target critics, evaluated at an "
                    "action sampled from the current policy in the next state, actor(next_obs)",
                ),
                _Case(
                    "alpha = 0.2",
                    "the soft value of the next state includes the entropy bonus: alpha times "
                    "minus the log-probability of the sampled next action",
                ),
                _Case("alpha = 0.2, some terminal steps", _TERMINAL),
            ),
            _build_sac_target,
            "target",
        ),
        _Spec(
            "sac_actor_loss",
            ("actor", "q1", "q2", "obs", "alpha"),
            (
                _Case(
                    "alpha = 0",
                    "the actor maximizes the smaller of the two critics at its own sampled "
                    "action actor(obs); minimize the negated mean",
                ),
                _Case(
                    "alpha = 0.2",
                    "the actor also maximizes the entropy: add alpha times the "
                    "log-probability of the sampled action to the loss",
                ),
            ),
            _build_sac_actor_loss,
            "loss",
            grad_messages={
                ("output", "actor"): "no gradient reaches the actor: sample the action with "
                "actor(obs) with gradients (reparameterization), not under torch.no_grad()",
            },
            sign_message="sign error: minimizing the actor loss must increase Q (and the entropy)",
        ),
        _Spec(
            "sac_temperature_loss",
            ("log_alpha", "log_prob", "target_entropy"),
            (
                _Case(
                    "policy entropy below the target",
                    "the loss multiplies log_alpha (not alpha) by the entropy gap "
                    "(log_prob + target_entropy), averaged; minimizing it must raise alpha "
                    "when the entropy is too low",
                ),
                _Case(
                    "policy entropy above the target",
                    "minimizing the loss must lower alpha when the entropy is above the target",
                ),
            ),
            _build_sac_temperature_loss,
            "loss",
            grad_inputs=("log_alpha", "log_prob"),
            no_grad_messages={
                ("output", "log_prob"): "the temperature loss sends gradients into the "
                "policy's log_prob: treat it as a constant (detach it)",
            },
            grad_messages={
                ("output", "log_alpha"): "no gradient reaches log_alpha: the loss must be "
                "computed from log_alpha itself",
            },
            sign_message="sign error: minimizing the loss must raise alpha when the policy's "
            "entropy is below the target",
        ),
    )
}

CHECKS: dict[str, str] = {name: f"check_{name}" for name in SPECS}
"""Gap function name -> the name of its check function."""


# ---------------------------------------------------------------------- materializing inputs
def _materialize(raw: Any, spec: _Spec, name: str) -> Any:
    """Live inputs from stored data: fresh networks and tensors, never shared between calls."""
    if isinstance(raw, dict) and "__network__" in raw:
        module = _NETWORKS[raw["__network__"]](*raw["sizes"])
        module.load_state_dict(raw["state"])
        return module
    if isinstance(raw, dict) and "__transitions__" in raw:
        return Transitions(
            obs=raw["obs"].clone(),
            action=Action(raw["action"].clone()),
            reward=raw["reward"].clone(),
            next_obs=raw["next_obs"].clone(),
            terminated=raw["terminated"].clone(),
        )
    if isinstance(raw, list):
        return [_materialize(item, spec, name) for item in raw]
    if isinstance(raw, Tensor):
        tensor = raw.clone()
        if name in spec.grad_inputs:
            tensor.requires_grad_(True)
        return tensor
    return raw


def _build_inputs(spec: _Spec, stored: dict[str, Any]) -> dict[str, Any]:
    return {name: _materialize(stored[name], spec, name) for name in spec.args}


def _grad_leaves(inputs: dict[str, Any], name: str) -> list[Tensor]:
    value = inputs[name]
    if isinstance(value, nn.Module):
        return list(value.parameters())
    if isinstance(value, Tensor) and value.requires_grad:
        return [value]
    return []


def _gradients(output: Tensor, inputs: dict[str, Any], names: Sequence[str]) -> dict[str, Tensor]:
    """Flattened gradients of ``output`` w.r.t. each named input (zeros where unused)."""
    result: dict[str, Tensor] = {}
    for name in names:
        leaves = _grad_leaves(inputs, name)
        if not leaves:
            continue
        if not output.requires_grad:
            result[name] = torch.cat([torch.zeros(leaf.numel()) for leaf in leaves])
            continue
        grads = torch.autograd.grad(output, leaves, retain_graph=True, allow_unused=True)
        result[name] = torch.cat(
            [
                (torch.zeros(leaf.numel()) if grad is None else grad.detach().reshape(-1))
                for leaf, grad in zip(leaves, grads)
            ]
        )
    return result


def _grad_input_names(spec: _Spec, inputs: dict[str, Any]) -> list[str]:
    return [
        name for name in spec.args if isinstance(inputs[name], nn.Module) and spec.kind != "inplace"
    ] + list(spec.grad_inputs)


def _outputs(spec: _Spec, result: Any) -> dict[str, Any]:
    if len(spec.outputs) == 1:
        return {spec.outputs[0]: result}
    if not isinstance(result, tuple | list) or len(result) != len(spec.outputs):
        raise _Failure(
            f"expected a tuple ({', '.join(spec.outputs)}), got "
            f"{type(result).__name__}{'' if not isinstance(result, tuple | list) else f' of length {len(result)}'}"
        )
    return dict(zip(spec.outputs, result))


def _expected_record(
    spec: _Spec, stored_inputs: dict[str, Any], fn: Callable[..., Any]
) -> dict[str, Any]:
    """Run the reference ``fn`` on one case: its outputs (and gradients, for losses)."""
    inputs = _build_inputs(spec, stored_inputs)
    result = fn(*[inputs[name] for name in spec.args])
    if spec.kind == "inplace":
        return {"targets": [m.state_dict() for m in inputs["target_networks"]]}
    outputs = _outputs(spec, result)
    record: dict[str, Any] = {"outputs": {k: v.detach().clone() for k, v in outputs.items()}}
    if spec.kind in ("loss", "losses"):
        names = _grad_input_names(spec, inputs)
        record["grads"] = {k: _gradients(v, inputs, names) for k, v in outputs.items()}
    return record


# ---------------------------------------------------------------------- comparing
class _Failure(Exception):
    """What is wrong with the student's result on one case; ``hint``: whether the case's
    hint helps (it is about values, not about gradients, signs or shapes)."""

    def __init__(self, message: str, hint: bool = True) -> None:
        super().__init__(message)
        self.hint = hint


def _close(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=_ATOL, rtol=_RTOL)


def _describe_row(stored: dict[str, Any], index: tuple[int, ...]) -> str:
    words = []
    for flag in ("terminated", "truncated"):
        flags = stored.get(flag)
        if flags is None and isinstance(stored.get("batch"), dict):
            flags = stored["batch"].get(flag)
        if isinstance(flags, Tensor) and flags.dim() == len(index) and bool(flags[index]):
            words.append(f"{flag}=True")
    position = ", ".join(f"{axis}={i}" for axis, i in zip("tb" if len(index) == 2 else "n", index))
    return f"[{position}]" + (f" ({', '.join(words)})" if words else "")


def _compare_value(
    name: str, got: Any, expected: Tensor, spec: _Spec, stored: dict[str, Any]
) -> None:
    label = "" if name == "output" else f"{name}: "
    if got is None:
        raise _Failure(f"{label}the function returned None: did you forget `return`?")
    if not isinstance(got, Tensor):
        raise _Failure(f"{label}expected a torch.Tensor, got {type(got).__name__}")
    if spec.kind in ("loss", "losses") and got.dim() != 0:
        raise _Failure(
            f"{label}a loss must be a scalar (0-d) tensor, got shape {list(got.shape)}: "
            f"average over the batch (.mean())"
        )
    if got.shape != expected.shape:
        raise _Failure(f"{label}expected shape {list(expected.shape)}, got {list(got.shape)}")
    if not got.is_floating_point():
        raise _Failure(f"{label}expected a floating-point tensor, got {got.dtype}")
    if not torch.isfinite(got).all():
        raise _Failure(f"{label}the result contains NaN or infinite values")
    got = got.detach()
    if _close(got, expected):
        return
    if _close(got, -expected) and expected.abs().max() > 1e-3:
        raise _Failure(f"{label}{spec.sign_message}", hint=False)
    if expected.dim() == 0 and abs(float(expected)) > 1e-6:
        ratio = float(got) / float(expected)
        n = _batch_size(stored)
        if n and math.isclose(ratio, n, rel_tol=1e-3):
            raise _Failure(
                f"{label}the loss is {n} times too large: average over the batch (mean), do not sum",
                hint=False,
            )
        if math.isclose(ratio, 2.0, rel_tol=1e-3) or math.isclose(ratio, 0.5, rel_tol=1e-3):
            raise _Failure(f"{label}the loss is off by a factor {ratio:g}: check the 1/2 factors")
        raise _Failure(f"{label}wrong value: got {float(got):.5g}, expected {float(expected):.5g}")
    wrong = (~torch.isclose(got.double(), expected.double(), atol=_ATOL, rtol=_RTOL)).nonzero()
    first = tuple(int(i) for i in wrong[0])
    raise _Failure(
        f"{label}{len(wrong)} of {expected.numel()} values are wrong; first at "
        f"{_describe_row(stored, first)}: got {float(got[first]):.5g}, expected "
        f"{float(expected[first]):.5g}"
    )


def _batch_size(stored: dict[str, Any]) -> int | None:
    for value in stored.values():
        if isinstance(value, Tensor) and value.dim() >= 1:
            return int(value.shape[0])
        if isinstance(value, dict) and "__transitions__" in value:
            return int(value["reward"].shape[0])
    return None


def _describe_input(name: str) -> str:
    return name


def _compare_grads(
    spec: _Spec, output: str, got: dict[str, Tensor], expected: dict[str, Tensor]
) -> None:
    for name, want in expected.items():
        have = got.get(name, torch.zeros_like(want))
        want_zero = bool(want.abs().max() <= 1e-7) if want.numel() else True
        have_zero = bool(have.abs().max() <= 1e-7) if have.numel() else True
        label = "" if output == "output" else f"{output}: "
        if want_zero and not have_zero:
            message = spec.no_grad_messages.get(
                (output, name),
                f"gradients flow into {_describe_input(name)}, which must be a constant here "
                f"(detach it or use torch.no_grad())",
            )
            raise _Failure(label + message, hint=False)
        if have_zero and not want_zero:
            message = spec.grad_messages.get(
                (output, name),
                f"no gradient reaches {_describe_input(name)}: something is detached (or "
                f"computed under torch.no_grad()) that must carry gradients",
            )
            raise _Failure(label + message, hint=False)
        if not _close(have, want):
            message = spec.wrong_grad_messages.get(
                (output, name),
                f"the value is right but the gradient with respect to {_describe_input(name)} "
                f"is not: something that must be a constant carries gradients (or the other "
                f"way round)",
            )
            raise _Failure(label + message, hint=False)


def _run_case(spec: _Spec, student_fn: Callable[..., Any], stored: dict[str, Any]) -> None:
    inputs = _build_inputs(spec, stored["inputs"])
    expected = stored["expected"]
    if spec.kind == "inplace":
        before = [{k: v.clone() for k, v in m.state_dict().items()} for m in inputs["networks"]]
        student_fn(*[inputs[name] for name in spec.args])
        for i, (module, state) in enumerate(zip(inputs["networks"], before)):
            for key, value in module.state_dict().items():
                if not torch.equal(value, state[key]):
                    raise _Failure(
                        f"networks[{i}] was modified: only the target networks change "
                        f"(soft_update(source, target, tau) writes into its second argument)",
                        hint=False,
                    )
        for i, (module, want) in enumerate(zip(inputs["target_networks"], expected["targets"])):
            for key, value in module.state_dict().items():
                if not _close(value, want[key]):
                    raise _Failure(f"target_networks[{i}] has wrong parameters ({key})")
        return
    result = student_fn(*[inputs[name] for name in spec.args])
    outputs = _outputs(spec, result)
    names = _grad_input_names(spec, inputs)
    for name in spec.outputs:
        _compare_value(name, outputs[name], expected["outputs"][name], spec, stored["inputs"])
        if spec.kind == "target" and outputs[name].requires_grad:
            raise _Failure(_NO_GRAD_TARGET, hint=False)
    if spec.kind in ("loss", "losses"):
        for name in spec.outputs:
            got = _gradients(outputs[name], inputs, names)
            _compare_grads(spec, name, got, expected["grads"][name])


@cache
def _load_data() -> dict[str, Any]:
    if not DATA_PATH.is_file():
        raise FileNotFoundError(
            f"the check data {DATA_PATH} is missing; regenerate it with "
            f"`python -m rl_mind.checks notebooks/src/*.py`"
        )
    data: dict[str, Any] = torch.load(DATA_PATH, weights_only=True)
    return data


def _check(function: str, student_fn: Callable[..., Any]) -> bool:
    spec = SPECS[function]
    if not callable(student_fn):
        raise TypeError(f"check_{function} expects your function {function}, got {student_fn!r}")
    cases = _load_data()[function]
    torch_state = torch.random.get_rng_state()
    try:
        for i, (case, stored) in enumerate(zip(spec.cases, cases)):
            try:
                _run_case(spec, student_fn, stored)
            except _Failure as failure:
                hint = f"\n  Hint: {case.hint}." if failure.hint else ""
                print(
                    f"✗ {function}: case {i + 1}/{len(cases)} ({case.name}) fails: {failure}{hint}"
                )
                return False
    finally:
        torch.random.set_rng_state(torch_state)
    print(f"✓ {function}: all {len(cases)} cases pass")
    return True


# ---------------------------------------------------------------------- the checks
def check_dqn_td_target(dqn_td_target: Callable[..., Tensor]) -> bool:
    """Check ``dqn_td_target(target_network, batch, gamma) -> [N]``; prints the verdict and
    returns whether every case passed."""
    return _check("dqn_td_target", dqn_td_target)


def check_dqn_loss(dqn_loss: Callable[..., Tensor]) -> bool:
    """Check ``dqn_loss(q_network, batch, td_target) -> scalar``."""
    return _check("dqn_loss", dqn_loss)


def check_discounted_returns(discounted_returns: Callable[..., Tensor]) -> bool:
    """Check ``discounted_returns(rewards [T], gamma) -> [T]``."""
    return _check("discounted_returns", discounted_returns)


def check_reinforce_loss(reinforce_loss: Callable[..., Tensor]) -> bool:
    """Check ``reinforce_loss(log_prob [N], returns [N], values [N]) -> scalar``."""
    return _check("reinforce_loss", reinforce_loss)


def check_nstep_returns(nstep_returns: Callable[..., Tensor]) -> bool:
    """Check ``nstep_returns(reward, next_value, terminated, truncated, gamma) -> [T, B]``."""
    return _check("nstep_returns", nstep_returns)


def check_a2c_loss(a2c_loss: Callable[..., tuple[Tensor, Tensor]]) -> bool:
    """Check ``a2c_loss(log_prob [N], values [N], returns [N]) -> (policy_loss, value_loss)``."""
    return _check("a2c_loss", a2c_loss)


def check_gae(gae: Callable[..., Tensor]) -> bool:
    """Check ``gae(reward, value, next_value, terminated, truncated, gamma, gae_lambda) -> [T, B]``."""
    return _check("gae", gae)


def check_ppo_policy_loss(ppo_policy_loss: Callable[..., Tensor]) -> bool:
    """Check ``ppo_policy_loss(new_log_prob, old_log_prob, advantages, clip_coef) -> scalar``."""
    return _check("ppo_policy_loss", ppo_policy_loss)


def check_ppo_value_loss(ppo_value_loss: Callable[..., Tensor]) -> bool:
    """Check ``ppo_value_loss(values [N], returns [N]) -> scalar``."""
    return _check("ppo_value_loss", ppo_value_loss)


def check_td3_target(td3_target: Callable[..., Tensor]) -> bool:
    """Check ``td3_target(actor_target, q1_target, q2_target, batch, noise, gamma,
    policy_noise, noise_clip) -> [N]``."""
    return _check("td3_target", td3_target)


def check_td3_actor_loss(td3_actor_loss: Callable[..., Tensor]) -> bool:
    """Check ``td3_actor_loss(actor, q1, obs) -> scalar``."""
    return _check("td3_actor_loss", td3_actor_loss)


def check_update_targets(update_targets: Callable[..., None]) -> bool:
    """Check ``update_targets(networks, target_networks, tau) -> None`` (in place)."""
    return _check("update_targets", update_targets)


def check_sac_target(sac_target: Callable[..., Tensor]) -> bool:
    """Check ``sac_target(actor, q1_target, q2_target, batch, alpha, gamma) -> [N]``."""
    return _check("sac_target", sac_target)


def check_sac_actor_loss(sac_actor_loss: Callable[..., Tensor]) -> bool:
    """Check ``sac_actor_loss(actor, q1, q2, obs, alpha) -> scalar``."""
    return _check("sac_actor_loss", sac_actor_loss)


def check_sac_temperature_loss(sac_temperature_loss: Callable[..., Tensor]) -> bool:
    """Check ``sac_temperature_loss(log_alpha, log_prob, target_entropy) -> scalar``."""
    return _check("sac_temperature_loss", sac_temperature_loss)


# ---------------------------------------------------------------------- producing the data
def reference_functions(sources: Sequence[str | Path]) -> dict[str, Callable[..., Any]]:
    """The gap functions defined in practical sources (the reference solutions).

    A gap function is a top-level ``def`` whose body holds a ``### BEGIN SOLUTION`` marker
    and whose name has a check. The source's top-level imports are executed first; no
    other code of the practical runs.
    """
    found: dict[str, Callable[..., Any]] = {}
    for source in map(Path, sources):
        text = source.read_text(encoding="utf-8")
        lines = text.split("\n")
        tree = ast.parse(text, filename=str(source))
        imports: list[ast.stmt] = [
            n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
        ]
        namespace: dict[str, Any] = {}
        exec(compile(ast.Module(body=imports, type_ignores=[]), str(source), "exec"), namespace)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name not in SPECS:
                continue
            body = lines[node.lineno - 1 : node.end_lineno]
            if not any(line.strip().startswith("### BEGIN SOLUTION") for line in body):
                continue
            module = ast.Module(body=[node], type_ignores=[])
            exec(compile(module, str(source), "exec"), namespace)
            found[node.name] = namespace[node.name]
    return found


def expected_data(references: dict[str, Callable[..., Any]]) -> dict[str, Any]:
    """Inputs and expected outputs of every case, from the reference functions."""
    missing = sorted(set(SPECS) - set(references))
    if missing:
        raise ValueError(f"no reference solution for {missing}; pass every practical source")
    data: dict[str, Any] = {}
    for function, spec in SPECS.items():
        cases = []
        for i in range(len(spec.cases)):
            generator = torch.Generator().manual_seed(1000 * (list(SPECS).index(function) + 1) + i)
            inputs = spec.build(generator, i)
            cases.append(
                {"inputs": inputs, "expected": _expected_record(spec, inputs, references[function])}
            )
        data[function] = cases
    return data


def regenerate(sources: Sequence[str | Path], path: str | Path = DATA_PATH) -> Path:
    """Write the check data from the reference solutions in ``sources``."""
    data = expected_data(reference_functions(sources))
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    torch.save(data, tmp)
    tmp.replace(path)
    _load_data.cache_clear()
    return path
