"""The checks of the PPO practical: ``gae``, ``ppo_policy_loss`` and ``ppo_value_loss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rl_mind.checks.engine import TERMINAL, Case, Probe, Spec, close, same_result
from rl_mind.checks.inputs import ROLLOUT_CASES, rand, rollout_inputs

__all__ = ["SPECS", "check_gae", "check_ppo_policy_loss", "check_ppo_value_loss"]

DATA = Path(__file__).with_suffix(".pt")


def _build_gae(g: torch.Generator, case: int) -> dict[str, Any]:
    return {**rollout_inputs(g, case), "gamma": 0.9, "gae_lambda": 0.8}


def _build_ppo_policy_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 12
    old = -rand(g, n).abs() - 0.1
    if case == 0:  # same policy
        log_ratio, advantages = torch.zeros(n), rand(g, n) + 0.5
    elif case == 1:  # inside the clip range
        log_ratio, advantages = rand(g, n, scale=0.05), rand(g, n)
    elif case == 2:  # beyond 1 + clip, positive advantages
        log_ratio, advantages = 0.4 + rand(g, n, scale=0.1).abs(), rand(g, n).abs() + 0.1
    else:  # beyond the range on both sides, advantages of both signs
        log_ratio = torch.where(torch.arange(n) % 2 == 0, 0.5, -0.5) + rand(g, n, scale=0.05)
        advantages = torch.where(torch.arange(n) % 4 < 2, 1.0, -1.0) * (rand(g, n).abs() + 0.1)
    return {
        "new_log_prob": old + log_ratio,
        "old_log_prob": old,
        "advantages": advantages,
        "clip_coef": 0.2,
    }


def _ratios_around_one(stored: dict[str, Any]) -> dict[str, Any]:
    # ratios from 0.9 to 1.1 (inside the clip range), each sample its own
    n = len(stored["old_log_prob"])
    return {**stored, "new_log_prob": stored["old_log_prob"] + torch.linspace(-0.1, 0.1, n)}


def _ratios_above_the_range_positive_advantages(stored: dict[str, Any]) -> dict[str, Any]:
    old = stored["old_log_prob"]
    return {**stored, "new_log_prob": old + 0.5, "advantages": stored["advantages"].abs() + 0.1}


def _ratios_below_the_range_positive_advantages(stored: dict[str, Any]) -> dict[str, Any]:
    old = stored["old_log_prob"]
    return {**stored, "new_log_prob": old - 0.5, "advantages": stored["advantages"].abs() + 0.1}


def _ratios_further_out(stored: dict[str, Any]) -> dict[str, Any]:
    # each ratio moved away from 1, outside the clip range
    log_ratio = stored["new_log_prob"] - stored["old_log_prob"]
    return {**stored, "new_log_prob": stored["new_log_prob"] + 0.2 * log_ratio.sign()}


def _build_ppo_value_loss(g: torch.Generator, case: int) -> dict[str, Any]:
    n = 10
    return {"values": rand(g, n, scale=2.0), "returns": rand(g, n, scale=3.0) + 1.0}


def _next_value_changed_before_the_last_step(stored: dict[str, Any]) -> dict[str, Any]:
    next_value = stored["next_value"].clone()
    next_value[:-1] += 1.0  # (nothing with a single step: the probe is then skipped)
    return {**stored, "next_value": next_value}


def _gamma_changed_in_the_td_errors_only(stored: dict[str, Any]) -> dict[str, Any]:
    # another gamma, with gamma * gae_lambda (the accumulation's factor) kept
    gamma = 0.5 * stored["gamma"]
    return {**stored, "gamma": gamma, "gae_lambda": stored["gae_lambda"] * stored["gamma"] / gamma}


def _two_steps_of_one_episode(stored: dict[str, Any]) -> dict[str, Any]:
    # the case's first step twice, no episode end: the first advantage sums both TD errors
    rows = {name: stored[name][:1].repeat(2, 1) for name in ("reward", "value", "next_value")}
    no_end = torch.zeros(2, stored["reward"].shape[1], dtype=torch.bool)
    return {**stored, **rows, "terminated": no_end, "truncated": no_end}


def _last_value_changed(stored: dict[str, Any]) -> dict[str, Any]:
    value = stored["value"].clone()
    value[-1] += 1.0
    return {**stored, "value": value}


def _last_row_kept_first_row_moved(result: Tensor, changed: Tensor) -> bool:
    return close(result[-1], changed[-1]) and not close(result[0], changed[0])


GAE = Spec(
    "gae",
    ("reward", "value", "next_value", "terminated", "truncated", "gamma", "gae_lambda"),
    (
        Case(
            ROLLOUT_CASES[0],
            "with a single step the advantage is the one-step TD error, bootstrapped from "
            "next_value and discounted by gamma",
        ),
        Case(
            ROLLOUT_CASES[1],
            "accumulate the TD errors backward from the last step, each step further "
            "discounted by gamma * gae_lambda",
        ),
        Case(ROLLOUT_CASES[2], TERMINAL),
        Case(
            ROLLOUT_CASES[3],
            "GAE must restart at an episode boundary: the TD errors of the next episode (the "
            "next row) must not leak into the advantages of the one that ended",
        ),
        Case(
            ROLLOUT_CASES[4],
            "a truncated step is not terminal: its TD error bootstraps from next_value (the "
            "true last observation), and the accumulation still restarts at the boundary",
        ),
    ),
    _build_gae,
    "target",
    DATA,
    grad_inputs=("value", "next_value"),
    probes=(
        Probe(
            _next_value_changed_before_the_last_step,
            same_result,
            "the advantages do not change when next_value changes before the last step: the "
            "TD errors bootstrap from the next row's value, which after an episode end is "
            "the first state of another episode, and which does not exist at the last step; "
            "each step's true successor has its own value, in next_value",
        ),
        Probe(
            _gamma_changed_in_the_td_errors_only,
            same_result,
            "the TD errors do not depend on gamma: each one discounts the value of the next "
            "state by gamma",
        ),
        # the returns (advantages plus values): the value of a step cancels in its own row
        Probe(
            _last_value_changed,
            _last_row_kept_first_row_moved,
            "these are returns, not advantages: an advantage says how much better than its "
            "value V(s_t) a step turned out, so do not add the values back",
            base=_two_steps_of_one_episode,
        ),
        Probe(
            _last_value_changed,
            same_result,
            "the advantages do not change when the values V(s_t) change: each TD error "
            "subtracts the value of the state it starts from",
            base=_two_steps_of_one_episode,
        ),
    ),
)

PPO_POLICY_LOSS = Spec(
    "ppo_policy_loss",
    ("new_log_prob", "old_log_prob", "advantages", "clip_coef"),
    (
        Case(
            "the new policy equals the old one (ratio 1)",
            "with a ratio of 1 only the advantages matter: average the surrogate over the "
            "batch, and minimize its negation",
        ),
        Case(
            "ratios inside the clip range",
            "the probability ratio is exp(new_log_prob - old_log_prob), multiplied by the "
            "advantage",
        ),
        Case(
            "ratios above 1 + clip_coef with positive advantages",
            "the objective must stop growing once the ratio passes 1 + clip_coef: clip the "
            "ratio to [1 - clip_coef, 1 + clip_coef] and keep the minimum of the clipped and "
            "unclipped terms",
        ),
        Case(
            "ratios outside the clip range with advantages of both signs",
            "take, per sample, the pessimistic (minimum) of the unclipped and clipped "
            "objectives, before averaging",
        ),
    ),
    _build_ppo_policy_loss,
    "loss",
    DATA,
    grad_inputs=("new_log_prob",),
    probes=(
        # a loss without the advantages stays the same whatever they are
        Probe(
            lambda stored: {**stored, "advantages": 2.0 * stored["advantages"].flip(0) + 1.0},
            same_result,
            "the loss does not change when the advantages change: weigh each sample's "
            "probability ratio by its advantage",
            base=_ratios_around_one,
        ),
        # normalized advantages: the loss forgets their scale and their mean
        Probe(
            lambda stored: {**stored, "advantages": 2.0 * stored["advantages"] + 1.0},
            same_result,
            "the loss does not change when the advantages are scaled and shifted: do not "
            "normalize the advantages inside the loss (the training loop normalizes them per "
            "minibatch); use them as they are given",
        ),
        # the surrogate is linear in the advantages: doubling them doubles the loss, unless
        # something that holds the advantages is clipped
        Probe(
            lambda stored: {**stored, "advantages": 2.0 * stored["advantages"]},
            lambda loss, doubled: not close(doubled, 2.0 * loss),
            "doubling the advantages does not double the loss, so the clip is applied to "
            "something that holds the advantages (the advantages, or the ratio times the "
            "advantages): clip the probability ratio alone, to [1 - clip_coef, 1 + "
            "clip_coef], then weigh it by the advantages",
        ),
        # above the range with positive advantages the objective is clipped: it stays the
        # same when the ratios move further out (the maximum's would follow them)
        Probe(
            _ratios_further_out,
            same_result,
            "the objective must be the pessimistic one: keep, per sample, the minimum of "
            "the clipped and the unclipped objectives, before averaging",
            base=_ratios_above_the_range_positive_advantages,
        ),
        # below the range with positive advantages the pessimistic objective follows the
        # ratio, the maximum does not
        Probe(
            _ratios_further_out,
            same_result,
            "with a positive advantage and a ratio below 1 - clip_coef, the loss no longer "
            "follows the ratio: the pessimistic objective is the minimum of the clipped and "
            "unclipped objectives, not the maximum",
            base=_ratios_below_the_range_positive_advantages,
        ),
    ),
    grad_messages={
        ("output", "new_log_prob"): "no gradient reaches new_log_prob: the ratio must be "
        "computed from it without detaching",
    },
    wrong_grad_messages={
        ("output", "new_log_prob"): "the value is right but its gradient is not: the "
        "probability ratio is exp(new_log_prob - old_log_prob)",
    },
    sign_message="sign error: the loss is the negated surrogate objective (we minimize it to "
    "maximize the objective)",
)

PPO_VALUE_LOSS = Spec(
    "ppo_value_loss",
    ("values", "returns"),
    (
        Case(
            "a batch of values and returns",
            "the value loss is the mean squared error between values and returns "
            "(F.mse_loss), averaged over the batch",
        ),
    ),
    _build_ppo_value_loss,
    "loss",
    DATA,
    grad_inputs=("values",),
    grad_messages={
        ("output", "values"): "no gradient reaches values: do not detach the values in the "
        "value loss",
    },
)

SPECS = (GAE, PPO_POLICY_LOSS, PPO_VALUE_LOSS)


def check_gae(gae: Callable[..., Tensor]) -> None:
    """Check ``gae(reward, value, next_value, terminated, truncated, gamma, gae_lambda) ->
    [T, B]``: prints ✓ when every case passes, else raises
    :class:`~rl_mind.checks.CheckFailure` naming the mistake."""
    GAE.check(gae)


def check_ppo_policy_loss(ppo_policy_loss: Callable[..., Tensor]) -> None:
    """Check ``ppo_policy_loss(new_log_prob, old_log_prob, advantages, clip_coef) -> scalar``."""
    PPO_POLICY_LOSS.check(ppo_policy_loss)


def check_ppo_value_loss(ppo_value_loss: Callable[..., Tensor]) -> None:
    """Check ``ppo_value_loss(values [N], returns [N]) -> scalar``."""
    PPO_VALUE_LOSS.check(ppo_value_loss)
