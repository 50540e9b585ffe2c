"""The checks of the tabular practical: ``epsilon_greedy``, ``q_learning_target``,
``sarsa_target`` and ``td_update``.

A Q-table is ``q [S, A]``; a step is the :class:`~rl_mind.env.EnvStep` of a ``VecEnv`` in
the same-step reset mode (every row a transition; where an episode ended, ``obs`` is
already the next episode's first state and ``next_obs`` the true successor).
``next_action`` ``[B]`` is the action the agent takes in ``next_obs``: SARSA bootstraps
from it, Q-learning ignores it. The cases' next actions are never the greedy ones, so that
the two targets cannot pass for each other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import (
    TERMINAL,
    Case,
    Probe,
    Spec,
    close,
    different_result,
    gamma_halved,
    not_moved_by_one,
    same_result,
)
from rl_mind.checks.inputs import env_step

__all__ = [
    "SPECS",
    "check_epsilon_greedy",
    "check_q_learning_target",
    "check_sarsa_target",
    "check_td_update",
]

DATA = Path(__file__).with_suffix(".pt")
S, A, B = 7, 4, 6
TRUNCATED = (
    "a truncation (truncated=True: the time limit) is not a terminal state: the state still "
    "has a future, so bootstrap from next_obs (mask the future with terminated, not done)"
)


def _table(g: torch.Generator) -> Tensor:
    return torch.randn(S, A, generator=g) * 2.0


def _build_epsilon_greedy(g: torch.Generator, case: int) -> dict[str, Any]:
    return {
        "q": _table(g),
        "obs": torch.randint(0, S, (B,), generator=g),
        "epsilon": (0.0, 1.0, 0.2)[case],
    }


def _build_target(g: torch.Generator, case: int) -> dict[str, Any]:
    q = _table(g)
    torch.randint(0, S, (B,), generator=g)  # (drawn as before: the later draws stay the same)
    next_obs = torch.randint(0, S, (B,), generator=g)
    terminated = torch.zeros(B, dtype=torch.bool)
    truncated = torch.zeros(B, dtype=torch.bool)
    if case == 1:
        terminated[[1, 4]] = True
    if case == 2:
        truncated[[0, 3]] = True
        terminated[5] = True
    # same-step reset: obs is next_obs, except after an episode's end: a new first state
    shown = next_obs.clone()
    shown[terminated | truncated] = (next_obs[terminated | truncated] + 1) % S
    greedy = q[next_obs].argmax(dim=1)
    next_action = (greedy + torch.randint(1, A, (B,), generator=g)) % A  # never the greedy one
    reward = torch.randn(B, generator=g)
    return {
        "q": q,
        "step": env_step(shown, next_obs, reward, terminated, truncated),
        "next_action": next_action,
        "gamma": 0.9,
    }


def _build_td_update(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 1 if case == 0 else 5
    pairs = torch.randperm(S * A, generator=g)[:n]  # distinct (state, action) pairs
    return {
        "q": _table(g),
        "obs": pairs // A,
        "action": pairs % A,
        "target": torch.randn(n, generator=g) * 3.0,
        "learning_rate": (0.3, 0.1)[case],  # (not 0.5: learning_rate and 1 - learning_rate differ)
    }


def _rewards_plus_one(stored: dict[str, Any]) -> dict[str, Any]:
    step = stored["step"]
    return {**stored, "step": {**step, "reward": step["reward"] + 1.0}}


def _q_plus_one(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "q": stored["q"] + 1.0}


def _q_plus_one_with_no_episode_end(stored: dict[str, Any]) -> dict[str, Any]:
    step = stored["step"]
    no_end = torch.zeros_like(step["terminated"])
    ongoing = {**step, "obs": step["next_obs"], "terminated": no_end, "truncated": no_end}
    return {**stored, "step": ongoing}


def _ignores_q(target: Tensor, changed: Tensor) -> bool:
    return close(target, changed)


def _other_next_action(stored: dict[str, Any]) -> dict[str, Any]:
    return {**stored, "next_action": (stored["next_action"] + 1) % A}


def _obs_changed_where_an_episode_ended(stored: dict[str, Any]) -> dict[str, Any]:
    step = stored["step"]
    ended = step["terminated"] | step["truncated"]
    obs = torch.where(ended, (step["obs"] + 3) % S, step["obs"])
    return {**stored, "step": {**step, "obs": obs}}


def _target_probes(next_action: Probe, obs_message: str) -> tuple[Probe, ...]:
    """The probes of a TD target, the one about ``next_action`` third."""
    return (
        # where no episode ends, q + 1 must move every target by gamma
        Probe(
            _q_plus_one,
            _ignores_q,
            "the targets do not change with q where no episode ends: bootstrap from the next "
            "state's value where the episode goes on (is the terminated mask inverted? the "
            "future counts where terminated is False)",
            base=_q_plus_one_with_no_episode_end,
        ),
        Probe(
            gamma_halved,
            same_result,
            "the targets do not change with gamma: discount the next state's value by gamma",
        ),
        next_action,
        Probe(
            _rewards_plus_one,
            not_moved_by_one,
            "adding 1 to the rewards does not add 1 to the targets: the reward is earned now, "
            "not discounted (gamma multiplies only the next state's value)",
        ),
        Probe(_obs_changed_where_an_episode_ended, different_result, obs_message),
    )


EPSILON_GREEDY = Spec(
    "epsilon_greedy",
    ("q", "obs", "epsilon"),
    (
        Case(
            "epsilon = 0: greedy",
            "with epsilon = 0 the greedy action, the argmax of q[obs], has probability 1 "
            "and the others 0: one row [B, A] of probabilities per observation",
        ),
        Case(
            "epsilon = 1: uniform",
            "with epsilon = 1 every action has probability 1 / n_actions",
        ),
        Case(
            "epsilon = 0.2",
            "with probability epsilon the action is uniform (each gets epsilon / n_actions), "
            "else greedy: the greedy action has 1 - epsilon + epsilon / n_actions",
        ),
    ),
    _build_epsilon_greedy,
    "target",
    DATA,
    axes="ba",
)

Q_LEARNING_TARGET = Spec(
    "q_learning_target",
    ("q", "step", "next_action", "gamma"),
    (
        Case(
            "no episode ends; the next action is never the greedy one",
            "Q-learning bootstraps from the best action in next_obs, the max over actions "
            "of q[next_obs], whatever the agent does next (bootstrapping from next_action "
            "is SARSA)",
        ),
        Case("steps that reach a terminal state", TERMINAL),
        Case("steps cut by the time limit (truncated)", TRUNCATED),
    ),
    _build_target,
    "target",
    DATA,
    axes="b",
    probes=_target_probes(
        Probe(
            _other_next_action,
            different_result,
            "the targets change with next_action: Q-learning bootstraps from the best action "
            "in next_obs, whatever the agent does next (bootstrapping from next_action is "
            "SARSA)",
        ),
        "the targets change with step.obs where an episode ended: there step.obs is already "
        "the first state of the next episode; Q-learning bootstraps from the best action in "
        "next_obs, the true successor",
    ),
)

SARSA_TARGET = Spec(
    "sarsa_target",
    ("q", "step", "next_action", "gamma"),
    (
        Case(
            "no episode ends; the next action is never the greedy one",
            "SARSA bootstraps from the action the agent takes next, q[next_obs, "
            "next_action], not from the best action (that is Q-learning)",
        ),
        Case("steps that reach a terminal state", TERMINAL),
        Case("steps cut by the time limit (truncated)", TRUNCATED),
    ),
    _build_target,
    "target",
    DATA,
    axes="b",
    probes=_target_probes(
        Probe(
            _other_next_action,
            same_result,
            "the targets do not change with next_action: SARSA bootstraps from the action "
            "the agent takes next, q[next_obs, next_action], not from the best action (that "
            "is Q-learning) nor from another value of next_obs that ignores next_action",
        ),
        "the targets change with step.obs where an episode ended: there step.obs is already "
        "the first state of the next episode; SARSA bootstraps from next_obs, the true "
        "successor, and next_action",
    ),
)

TD_UPDATE = Spec(
    "td_update",
    ("q", "obs", "action", "target", "learning_rate"),
    (
        Case(
            "one state-action pair",
            "move q[obs, action] a step of size learning_rate toward the target: add "
            "learning_rate times the TD error (target - q[obs, action]), not learning_rate "
            "times the target; leave the other entries as they are",
        ),
        Case(
            "a batch of distinct state-action pairs",
            "update each (obs[i], action[i]) entry with its own target[i]",
        ),
    ),
    _build_td_update,
    "target",
    DATA,
    axes="sa",
    probes=(
        # with learning_rate = 0 nothing moves, whatever the targets
        Probe(
            lambda stored: {**stored, "target": stored["target"] + 1.0},
            different_result,
            "with learning_rate = 0 the table moves toward the targets: learning_rate is the "
            "size of the step toward the target (with 0 nothing moves, with 1 the entry "
            "becomes its target): learning_rate and 1 - learning_rate are swapped",
            base=lambda stored: {**stored, "learning_rate": 0.0},
        ),
    ),
    changed_messages={
        "q": "{name} was changed in place: return a new table (new_q = q.clone(), then "
        "update new_q), the caller still reads the old one",
    },
)

SPECS = (EPSILON_GREEDY, Q_LEARNING_TARGET, SARSA_TARGET, TD_UPDATE)


def check_epsilon_greedy(epsilon_greedy: Callable[..., Tensor]) -> None:
    """Check ``epsilon_greedy(q, obs, epsilon) -> probabilities [B, A]``: prints ✓ when
    every case passes, else raises :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    EPSILON_GREEDY.check(epsilon_greedy)


def check_q_learning_target(q_learning_target: Callable[..., Tensor]) -> None:
    """Check ``q_learning_target(q, step, next_action, gamma) -> [B]``."""
    Q_LEARNING_TARGET.check(q_learning_target)


def check_sarsa_target(sarsa_target: Callable[..., Tensor]) -> None:
    """Check ``sarsa_target(q, step, next_action, gamma) -> [B]``."""
    SARSA_TARGET.check(sarsa_target)


def check_td_update(td_update: Callable[..., Tensor]) -> None:
    """Check ``td_update(q, obs, action, target, learning_rate) -> new q [S, A]``."""
    TD_UPDATE.check(td_update)
