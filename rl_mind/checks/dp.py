"""The checks of the dynamic-programming practical: ``q_from_v``, ``policy_evaluation``,
``value_iteration`` and ``greedy_policy``.

The cases are small random MDPs with *stochastic* transitions (not the maze, whose moves
are deterministic), so that a max over next states cannot pass for their expectation.
``policy_evaluation`` and ``value_iteration`` are compared at convergence, so that
synchronous sweeps (a new ``v`` from the old one), in-place sweeps (each state updated
from the newest values) and exact linear solves all pass; each of their cases bounds the
sweeps (:class:`~rl_mind.checks.limits.Limit`), so that an answer that does not converge
is named as such instead of running forever. Value iteration has a case of costs (every
reward negative: a stop on the signed change stops too early) and, last, a tight
``max_sweeps`` (with ``tolerance = 0``, as the notebook's pictures of the first sweeps do),
on a model where each action stays in its state or ends the episode, so that in-place
sweeps, in any order, give there the same values as synchronous ones. ``greedy_policy`` has cases with ties (actions of
the same look-ahead, the maze's goal, the maze at V*): a tied row may put its 1 on any of
the best actions, or split it between them.

What the reader must not get wrong: each probe is limited to the cases where its change
matters, and each names one mistake (a missing discount, a stop on the signed change, the
value of a terminal *next* state dropped...), so that a hint never blames another one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import (
    Case,
    Probe,
    Spec,
    close,
    different_result,
    gamma_halved,
    not_moved_by_one,
    same_result,
)
from rl_mind.checks.limits import Limit

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


def _forward_mdp(g: torch.Generator, gamma: float) -> dict[str, Any]:
    """A random MDP whose transitions only go to later states, the last two terminal: every
    episode ends within S steps, so that the sweeps converge exactly, even without a
    discount, and an in-place sweep (states in order) equals a synchronous one."""
    later = torch.ones(S, S, dtype=torch.bool).triu(diagonal=1)
    later[S - 2 :] = torch.eye(S, dtype=torch.bool)[S - 2 :]  # (terminal: no future anyway)
    logits = 2.0 * torch.randn(S, A, S, generator=g, dtype=torch.float64)
    P = torch.softmax(logits.masked_fill(~later.unsqueeze(1), -torch.inf), -1)
    terminal = torch.zeros(S, dtype=torch.bool)
    terminal[S - 2 :] = True
    return {
        "P": P,
        "r": torch.randn(S, A, generator=g, dtype=torch.float64),
        "gamma": gamma,
        "terminal": terminal,
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


def _self_loops_mdp(g: torch.Generator, gamma: float) -> dict[str, Any]:
    """An MDP where each action stays in its state or ends the episode (in the last state,
    terminal, worth 0): a state's backup reads only its own value and 0, so that in-place
    sweeps, in any order, give the same values as synchronous ones after each sweep."""
    stay = 0.5 + 0.45 * torch.rand(S, A, generator=g, dtype=torch.float64)
    P = torch.zeros(S, A, S, dtype=torch.float64)
    states = torch.arange(S)
    P[states, :, states] = stay
    P[:, :, S - 1] += 1.0 - stay
    P[S - 1] = 0.0
    P[S - 1, :, S - 1] = 1.0
    r = torch.randn(S, A, generator=g, dtype=torch.float64)
    r[S - 1] = 0.0
    terminal = torch.zeros(S, dtype=torch.bool)
    terminal[S - 1] = True
    return {"P": P, "r": r, "gamma": gamma, "terminal": terminal}


def _build_value_iteration(g: torch.Generator, case: int) -> dict[str, Any]:
    if case == 4:  # the first sweeps, as the notebook draws them: tolerance 0, max_sweeps 3
        return {**_self_loops_mdp(g, 0.9), "tolerance": 0.0, "max_sweeps": TIGHT_SWEEPS}
    inputs = _mdp(g, terminal=case >= 1, gamma=(0.9, 0.9, 0.99, 0.9)[case])
    if case == 3:  # costs: every reward negative, so that the values go down sweep by sweep
        inputs["r"] = -(inputs["r"].abs() + 0.1)
    return {**inputs, "tolerance": TOLERANCE, "max_sweeps": 100_000}  # (the notebook's)


def _maze_at_v_star() -> dict[str, Any]:
    """A small maze (deterministic moves, the goal's four actions all earning 1) and its
    optimal values, from value iteration: many states have two shortest ways to the goal."""
    from rl_mind.envs.maze_mdp import MazeMDPEnv  # (registers the environments: data only)

    maze = MazeMDPEnv(4, 3, ratio=0.0, seed=0)
    P, r = torch.as_tensor(maze.P), torch.as_tensor(maze.r)
    terminal = torch.zeros(maze.nb_states, dtype=torch.bool)
    terminal[maze.terminal_states] = True
    v = torch.zeros(maze.nb_states, dtype=torch.float64)
    for _ in range(200):
        v = (r + maze.gamma * (~terminal).unsqueeze(1) * (P @ v)).max(dim=1).values
    return {"P": P, "r": r, "gamma": maze.gamma, "terminal": terminal, "v": v}


def _build_greedy_policy(g: torch.Generator, case: int) -> dict[str, Any]:
    if case == 5:
        return _maze_at_v_star()
    inputs = _mdp(g, terminal=case in (3, 4), gamma=0.5 if case == 2 else 0.9)
    if case == 0:
        v = torch.zeros(S, dtype=torch.float64)
    else:  # a value function large enough to outweigh the rewards
        v = torch.randn(S, generator=g, dtype=torch.float64) * 5.0
    if case == 2:  # in states 0, 1 and 4, gamma decides: action 0 earns more now, action 1
        # leads to the best state; 0.5 * the gap of values < the gap of rewards < 0.9 * it
        P, r = inputs["P"].clone(), inputs["r"].clone()
        high, low = int(v.argmax()), int(v.argmin())
        rows = [0, 1, 4]
        P[rows, 0] = torch.nn.functional.one_hot(torch.tensor(low), S).to(P.dtype)
        P[rows, 1] = torch.nn.functional.one_hot(torch.tensor(high), S).to(P.dtype)
        r[rows, 0] = r[rows, 1] + 0.7 * float(v[high] - v[low])
        r[rows, 2] = r[rows, :2].min(dim=1).values - 5.0 * float(v[high] - v[low])
        inputs = {**inputs, "P": P, "r": r}
    if case == 4:  # ties: actions 1 and 2 are copies of action 0 in states 0 and 3, and the
        # terminal states' actions all earn the same (as at the maze's goal)
        P, r = inputs["P"].clone(), inputs["r"].clone()
        P[[0, 3], 1:] = P[[0, 3], :1]
        r[[0, 3], 1:] = r[[0, 3], :1] + 10.0
        r[[2, 5]] = r[[2, 5], :1]
        inputs = {**inputs, "P": P, "r": r}
    return {**inputs, "v": v}


# ---------------------------------------------------------------------- probes
def _rewards_plus_one(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "r": stored["r"] + 1.0}


def _terminal_values_changed(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "v": stored["v"] + stored["terminal"].to(stored["v"].dtype)}


def _terminal_rewards_changed(stored: dict[str, Any]) -> dict[str, Any]:
    shift = stored["terminal"].to(stored["r"].dtype).unsqueeze(1)
    return {**stored, "r": stored["r"] + shift}


def _forward_model(stored: dict[str, Any]) -> dict[str, Any]:
    # every episode ends within S steps: the sweeps converge even without a discount; the
    # rewards are positive, so that the values only grow and no stop rule is fooled
    model = _forward_mdp(torch.Generator().manual_seed(61), stored["gamma"])
    return {**stored, **model, "r": model["r"].abs() + 0.5}


def _other_transitions(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "P": _forward_mdp(torch.Generator().manual_seed(62), 0.9)["P"]}


def _positive_rewards(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "r": stored["r"].abs() + 0.5}


def _negated_rewards(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "r": -stored["r"]}


def _not_negated(v: Tensor, negated: Tensor) -> bool:
    return not close(negated, -v)


def _a_worse_action_added(stored: dict[str, Any]) -> dict[str, Any]:
    P, r = stored["P"], stored["r"]
    worst = r.min() - 10.0 - 10.0 * r.abs().max()
    return {
        **stored,
        "P": torch.cat([P, P[:, :1]], dim=1),
        "r": torch.cat([r, torch.full_like(r[:, :1], float(worst))], dim=1),
    }


def _forward_model_of_costs(stored: dict[str, Any]) -> dict[str, Any]:
    # every reward negative: the values go down, sweep by sweep
    forward = _forward_model(stored)
    return {**forward, "r": -forward["r"]}


def _fewer_sweeps(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "max_sweeps": stored["max_sweeps"] - 1}


def _terminal_states_change_only_themselves(v: Tensor, changed: Tensor) -> bool:
    return close(v[[0, 1, 3, 4]], changed[[0, 1, 3, 4]])  # (the states 2 and 5 are terminal)


NO_FUTURE_AT_ALL = (
    "the values do not depend on where the actions lead (P): sweep until the largest change "
    "of a sweep is below tolerance, each sweep backing up the values of the previous one"
)
NO_GAMMA = (
    "the values do not change with gamma: the future is discounted, each backup is r[s, a] + "
    "gamma * (the expected next value)"
)
TERMINAL_NEXT_STATE = (
    "the value of a terminal state is dropped where it is the *next* state: reaching a "
    "terminal state is worth its value like reaching any other; only in a terminal state "
    "itself is there no future (mask the future of the terminal rows s, not v at the "
    "terminal next states)"
)
TIGHT_SWEEPS = 3
COSTS = "costs: every reward negative (the values go down)"
FIRST_SWEEPS = f"tolerance = 0, max_sweeps = {TIGHT_SWEEPS}: the first sweeps"
# (value iteration may fail to stop without diverging: it may ignore the tolerance)
NO_STOP = "does not stop within {sweeps} sweeps (max_sweeps is larger)"


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
    probes=(
        Probe(
            _rewards_plus_one,
            not_moved_by_one,
            "adding 1 to every reward does not add 1 to every q(s, a): the reward r[s, a] is "
            "earned now, it is not discounted (gamma multiplies the expected next value only)",
        ),
        Probe(
            _terminal_values_changed,
            same_result,
            TERMINAL_NEXT_STATE,
            cases=(4, 5),
        ),
    ),
)

POLICY_EVALUATION = Spec(
    "policy_evaluation",
    (*MDP_ARGS, "policy", "tolerance"),
    (
        Case(
            "a deterministic policy (one 1 per row), no terminal state",
            "sweep v(s) <- sum over a of policy[s, a] * q(s, a) (your q_from_v) from v = 0 "
            "until the largest change of a sweep is below tolerance",
            limit=Limit(2_000),
        ),
        Case(
            "a stochastic policy",
            "policy evaluation averages q(s, a) over the policy's actions, weighted by "
            "policy[s, a] (an expectation)",
            limit=Limit(2_000),
        ),
        Case("terminal states", NO_FUTURE, limit=Limit(2_000)),
        Case(
            "gamma = 0.99 (many sweeps)",
            "keep sweeping until the largest change of a sweep is below tolerance",
            limit=Limit(10_000),
        ),
    ),
    _build_policy_evaluation,
    "target",
    DATA,
    axes="s",
    probes=(
        Probe(_other_transitions, same_result, NO_FUTURE_AT_ALL, base=_forward_model),
        Probe(gamma_halved, same_result, NO_GAMMA, base=_forward_model),
        Probe(
            lambda stored: {**stored, "policy": stored["policy"].roll(1, dims=1)},
            same_result,
            "the result does not change with the policy: policy evaluation averages q(s, a) "
            "over the policy's actions, weighted by policy[s, a] (an expectation); a max over "
            "actions evaluates the greedy policy instead (that is value iteration)",
        ),
        Probe(
            _negated_rewards,
            _not_negated,
            "with every reward negated the values are not negated: stop when the largest "
            "*absolute* change of a sweep is below tolerance (values may go down as well as "
            "up, and a signed change below tolerance is no convergence)",
            base=_positive_rewards,
        ),
        Probe(
            _terminal_rewards_changed,
            _terminal_states_change_only_themselves,
            TERMINAL_NEXT_STATE,
            cases=(3, 4),
        ),
    ),
)

VALUE_ITERATION = Spec(
    "value_iteration",
    (*MDP_ARGS, "tolerance", "max_sweeps"),
    (
        Case(
            "no terminal state",
            "sweep v(s) <- max over a of q(s, a) (your q_from_v) from v = 0 until the "
            "largest change of a sweep is below tolerance",
            limit=Limit(2_000, message=NO_STOP),
        ),
        Case("terminal states", NO_FUTURE, limit=Limit(2_000, message=NO_STOP)),
        Case(
            "gamma = 0.99 (many sweeps)",
            "keep sweeping until the largest change of a sweep is below tolerance",
            limit=Limit(10_000, message=NO_STOP),
        ),
        Case(
            COSTS,
            "stop when the largest absolute change of a sweep is below tolerance",
            limit=Limit(2_000, message=NO_STOP),
        ),
        Case(
            FIRST_SWEEPS,
            "stop after max_sweeps sweeps even when the values still change (with tolerance "
            "= 0 they always do): return the values after exactly max_sweeps sweeps from "
            "v = 0, not one more, not one less",
            limit=Limit(
                10 * TIGHT_SWEEPS,
                message=f"does not stop after max_sweeps = {TIGHT_SWEEPS} sweeps: still "
                "sweeping after {sweeps} sweeps",
            ),
        ),
    ),
    _build_value_iteration,
    "target",
    DATA,
    axes="s",
    probes=(
        # values follow the rewards; the best actions (an argmax) do not
        Probe(
            lambda stored: {**stored, "r": stored["r"] + 100.0},
            same_result,
            "the result does not change when every reward grows by 100: return the values "
            "v [S] (the max over actions of q(s, a)), not the best actions (its argmax)",
        ),
        Probe(
            _a_worse_action_added,
            different_result,
            "an action worse than all the others, added in every state, changes the values: "
            "value iteration backs up the best action, the max over actions of q(s, a) (not "
            "an average over actions)",
        ),
        Probe(_other_transitions, same_result, NO_FUTURE_AT_ALL, base=_forward_model),
        Probe(gamma_halved, same_result, NO_GAMMA, base=_forward_model),
        Probe(
            gamma_halved,
            same_result,
            "with every reward negative your sweeps stop too early (the values no longer "
            "change with gamma): stop when the largest *absolute* change of a sweep is below "
            "tolerance (the values may go down as well as up)",
            base=_forward_model_of_costs,
        ),
        Probe(
            _terminal_rewards_changed,
            _terminal_states_change_only_themselves,
            TERMINAL_NEXT_STATE,
            cases=("terminal states", COSTS),
        ),
        Probe(
            _fewer_sweeps,
            same_result,
            "the result does not change with max_sweeps: stop after max_sweeps sweeps even "
            "when the values still change (with tolerance = 0 they always do)",
            cases=(FIRST_SWEEPS,),
        ),
    ),
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
        Case(
            "gamma = 0.5: a discounted future",
            "the future is discounted: q(s, a) = r[s, a] + gamma * (expected next value)",
        ),
        Case("terminal states", NO_FUTURE),
        Case(
            "ties: actions with the same q(s, a), and terminal states whose actions all earn "
            "the same (as the maze's goal)",
            "where several actions share the largest q(s, a), the row still sums to 1: the 1 "
            "on one of them, or split between them",
        ),
        Case(
            "the maze at V* (many states with two shortest ways to the goal)",
            "the greedy policy of V*: in each state an action of largest q(s, a), the row "
            "summing to 1",
        ),
    ),
    _build_greedy_policy,
    "target",
    DATA,
    axes="sa",
    ties_from="q_from_v",
    tie_message="{row} has a tie ({tied} actions share the largest q(s, a)) and its "
    "probabilities sum to {total:.4g}: a policy's row sums to 1; on a tie put the 1 on one "
    "of the best actions, or split it between them",
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
