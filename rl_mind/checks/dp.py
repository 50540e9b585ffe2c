"""The checks of the dynamic-programming practical: ``q_from_v``, ``policy_evaluation``,
``value_iteration`` and ``greedy_policy``.

The cases are small random MDPs with *stochastic* transitions (not the maze, whose moves
are deterministic), so that a max over next states cannot pass for their expectation.
``policy_evaluation`` and ``value_iteration`` are compared at convergence, so that
synchronous sweeps (a new ``v`` from the old one) and in-place sweeps (each state updated
from the newest values) both pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import Case, Probe, Spec, same_result

__all__ = [
    "SPECS",
    "check_greedy_policy",
    "check_policy_evaluation",
    "check_q_from_v",
    "check_value_iteration",
]

DATA = Path(__file__).with_suffix(".pt")
S, A = 6, 3
NO_FUTURE = (
    "a terminal state has no future: there q(s, a) is the reward r[s, a] alone, with no "
    "bootstrap from the states P says come next (mask the future with terminal)"
)
TOLERANCE = 1e-10


def _mdp(g: torch.Generator, terminal: bool, gamma: float) -> dict[str, Any]:
    """A random MDP: stochastic transitions ``P [S, A, S]``, rewards ``r [S, A]``."""
    mask = torch.zeros(S, dtype=torch.bool)
    if terminal:
        mask[[2, 5]] = True
    return {
        "P": torch.softmax(2.0 * torch.randn(S, A, S, generator=g, dtype=torch.float64), -1),
        "r": torch.randn(S, A, generator=g, dtype=torch.float64),
        "gamma": gamma,
        "terminal": mask,
    }


def _policy(g: torch.Generator, deterministic: bool) -> Tensor:
    if deterministic:
        actions = torch.randint(0, A, (S,), generator=g)
        return torch.nn.functional.one_hot(actions, A).to(torch.float64)
    return torch.softmax(torch.randn(S, A, generator=g, dtype=torch.float64), -1)


def _build_q_from_v(g: torch.Generator, case: int) -> dict[str, Any]:
    gamma = (0.9, 1.0, 0.5, 0.8, 0.7)[case]
    inputs = _mdp(g, terminal=case >= 3, gamma=gamma)
    v = torch.randn(S, generator=g, dtype=torch.float64) * 2.0 + 1.0
    if case == 0:
        v = torch.zeros(S, dtype=torch.float64)
    if case in (1, 2):
        inputs["r"] = torch.zeros(S, A, dtype=torch.float64)
    return {**inputs, "v": v}


def _build_policy_evaluation(g: torch.Generator, case: int) -> dict[str, Any]:
    gamma = (0.9, 0.9, 0.9, 0.99)[case]
    inputs = _mdp(g, terminal=case >= 2, gamma=gamma)
    return {**inputs, "policy": _policy(g, deterministic=case == 0), "tolerance": TOLERANCE}


def _build_value_iteration(g: torch.Generator, case: int) -> dict[str, Any]:
    inputs = _mdp(g, terminal=case >= 1, gamma=(0.9, 0.9, 0.99)[case])
    return {**inputs, "tolerance": TOLERANCE, "max_sweeps": 100_000}


def _build_greedy_policy(g: torch.Generator, case: int) -> dict[str, Any]:
    inputs = _mdp(g, terminal=case == 2, gamma=0.9)
    if case == 0:
        v = torch.zeros(S, dtype=torch.float64)
    else:  # a value function large enough to outweigh the rewards
        v = torch.randn(S, generator=g, dtype=torch.float64) * 5.0
    return {**inputs, "v": v}


MDP_ARGS = ("P", "r", "gamma", "terminal")

Q_FROM_V = Spec(
    "q_from_v",
    (*MDP_ARGS, "v"),
    (
        Case(
            "v = 0: the rewards alone",
            "q(s, a) starts with r[s, a], the reward of taking a in s (not the reward of "
            "a transition from the state reached, nor of another action)",
        ),
        Case(
            "no rewards, gamma = 1: the expected next value",
            "the future of (s, a) is the expected value of the next state: the sum over s' "
            "of P[s, a, s'] * v[s'] (an expectation over next states, not a max)",
        ),
        Case(
            "no rewards, gamma = 0.5",
            "the future is discounted: gamma times the expected next value",
        ),
        Case("terminal states", NO_FUTURE),
        Case(
            "rewards, discount and terminal states together",
            "q(s, a) = r[s, a] + gamma * (sum over s' of P[s, a, s'] * v[s']), without the "
            "future at terminal states",
        ),
    ),
    _build_q_from_v,
    "target",
    DATA,
    axes="sa",
)

POLICY_EVALUATION = Spec(
    "policy_evaluation",
    (*MDP_ARGS, "policy", "tolerance"),
    (
        Case(
            "a deterministic policy (one 1 per row), no terminal state",
            "sweep v(s) <- sum over a of policy[s, a] * q(s, a) (your q_from_v) until the "
            "largest change of a sweep is below tolerance",
        ),
        Case(
            "a stochastic policy",
            "policy evaluation averages q(s, a) over the policy's actions, weighted by "
            "policy[s, a]: an expectation, not a max over actions (that is value iteration)",
        ),
        Case("terminal states", NO_FUTURE),
        Case(
            "gamma = 0.99 (many sweeps)",
            "keep sweeping until the largest change of a sweep is below tolerance",
        ),
    ),
    _build_policy_evaluation,
    "target",
    DATA,
    axes="s",
    probes=(
        Probe(
            lambda stored: {**stored, "policy": stored["policy"].roll(1, dims=1)},
            same_result,
            "the result does not change with the policy: policy evaluation averages q(s, a) "
            "over the policy's actions, weighted by policy[s, a] (an expectation); a max over "
            "actions evaluates the greedy policy instead (that is value iteration)",
        ),
    ),
)

VALUE_ITERATION = Spec(
    "value_iteration",
    (*MDP_ARGS, "tolerance", "max_sweeps"),
    (
        Case(
            "no terminal state",
            "value iteration backs up the best action: v(s) <- max over a of q(s, a), "
            "swept until the largest change is below tolerance (not an average over actions)",
        ),
        Case("terminal states", NO_FUTURE),
        Case(
            "gamma = 0.99 (many sweeps)",
            "keep sweeping until the largest change of a sweep is below tolerance",
        ),
    ),
    _build_value_iteration,
    "target",
    DATA,
    axes="s",
)

GREEDY_POLICY = Spec(
    "greedy_policy",
    (*MDP_ARGS, "v"),
    (
        Case(
            "v = 0: the best immediate reward",
            "the greedy policy puts probability 1 on the action of largest q(s, a) (your "
            "q_from_v) and 0 on the others: one 1 per row, a float [S, A] tensor",
        ),
        Case(
            "a value function that outweighs the rewards",
            "look one step ahead: the greedy action maximizes q(s, a) = r[s, a] + gamma * "
            "(expected next value), not the reward alone",
        ),
        Case("terminal states", NO_FUTURE),
    ),
    _build_greedy_policy,
    "target",
    DATA,
    axes="sa",
)

SPECS = (Q_FROM_V, POLICY_EVALUATION, VALUE_ITERATION, GREEDY_POLICY)


def check_q_from_v(q_from_v: Callable[..., Tensor]) -> None:
    """Check ``q_from_v(P, r, gamma, terminal, v) -> q [S, A]``: prints ✓ when every case
    passes, else raises :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    Q_FROM_V.check(q_from_v)


def check_policy_evaluation(policy_evaluation: Callable[..., Tensor]) -> None:
    """Check ``policy_evaluation(P, r, gamma, terminal, policy, tolerance) -> v [S]`` (at
    convergence: synchronous and in-place sweeps both pass)."""
    POLICY_EVALUATION.check(policy_evaluation)


def check_value_iteration(value_iteration: Callable[..., Tensor]) -> None:
    """Check ``value_iteration(P, r, gamma, terminal, tolerance, max_sweeps) -> v [S]`` (at
    convergence: synchronous and in-place sweeps both pass)."""
    VALUE_ITERATION.check(value_iteration)


def check_greedy_policy(greedy_policy: Callable[..., Tensor]) -> None:
    """Check ``greedy_policy(P, r, gamma, terminal, v) -> policy [S, A]`` (one-hot rows)."""
    GREEDY_POLICY.check(greedy_policy)
