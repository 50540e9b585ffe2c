"""rl_mind.bias: the critic's bias against the discounted return actually obtained.

Known answers on ``ClockEnv`` (tests/toy_envs.py), whose value function is known: a critic
that returns the true value has a bias of 0, and one that adds ``c`` a bias of ``c`` on
terminated episodes and between ``0.99 c`` and ``c`` on episodes cut by a time limit (the
tail is bootstrapped with the critic's value at the cut, and only states at least ``H``
steps before the cut count).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import Tensor

from rl_mind import Action, Actor, Evaluator, read_evaluations
from rl_mind.bias import CUT_WEIGHT, CriticBias, cut_margin, discounted_returns_to_go
from tests.toy_envs import CLOCK_ID, CLOCK_TIME_LIMIT, clock_value

GAMMA = 0.9
ACTION = 0.5  # the actor's constant action: a reward of 1.5 at every step


class ConstantAction(Actor[Action]):
    def forward(self, obs: Tensor) -> Action:
        return Action(torch.full((len(obs), 1), ACTION))


def true_q(obs: Tensor, action: Tensor, offset: float = 0.0) -> Tensor:
    """Q(s, a) of the constant policy: r(a) + gamma V(s'), plus ``offset``."""
    t, terminate_at = obs[:, 0], obs[:, 1]
    next_obs = torch.stack([t + 1, terminate_at], dim=1)
    value = clock_value(next_obs, GAMMA, 1.0 + ACTION)
    return (1.0 + action[:, 0].double()) + GAMMA * value + offset


def evaluate(num_episodes: int, seed: int, offset: float, **kwargs: object) -> float:
    critic = lambda obs, action: true_q(obs, action, offset)  # noqa: E731
    with Evaluator(CLOCK_ID, every=1, num_episodes=num_episodes, seed=seed, critic=critic,
                   gamma=kwargs.pop("gamma", GAMMA), **kwargs) as evaluator:  # fmt: skip
        return evaluator.run(1, ConstantAction()).extras["critic_bias"]


def test_cut_margin_is_the_fewest_steps_whose_discount_is_at_most_one_percent() -> None:
    assert cut_margin(0.99) == 459 and cut_margin(0.9) == 44 and cut_margin(0.0) == 1
    for gamma in (0.5, 0.9, 0.99, 0.999):
        margin = cut_margin(gamma)
        assert gamma**margin <= CUT_WEIGHT < gamma ** (margin - 1)


def test_discounted_returns_to_go_with_and_without_a_bootstrapped_tail() -> None:
    rewards = torch.tensor([1.0, 2.0, 3.0])
    assert discounted_returns_to_go(rewards, 0.5).tolist() == [2.75, 3.5, 3.0]
    assert discounted_returns_to_go(rewards, 0.5, 8.0).tolist() == [3.75, 5.5, 7.0]


def test_a_critic_returning_the_true_value_has_no_bias_on_terminated_and_cut_episodes() -> None:
    # seeds 0, 2: terminate after 4 and 6 steps; seeds 1, 3: cut by the 60-step time limit
    assert evaluate(4, seed=0, offset=0.0) == pytest.approx(0.0, abs=1e-9)
    assert evaluate(1, seed=1, offset=0.0) == pytest.approx(0.0, abs=1e-9)  # cut only


@pytest.mark.parametrize("c", [2.0, -3.0])
def test_a_critic_off_by_c_has_a_bias_of_c_on_terminated_episodes(c: float) -> None:
    assert evaluate(1, seed=0, offset=c) == pytest.approx(c, rel=1e-9)


@pytest.mark.parametrize("c", [2.0, -3.0])
def test_a_critic_off_by_c_has_a_bias_of_c_within_one_percent_on_cut_episodes(c: float) -> None:
    bias = evaluate(1, seed=1, offset=c)  # cut by the time limit: the tail bootstrapped
    assert 0.99 * abs(c) <= abs(bias) <= abs(c) and math.copysign(1, bias) == math.copysign(1, c)
    # exactly: the critic's error at the cut weighs gamma^(T - t) in the return from t
    margin = cut_margin(GAMMA)
    counted = [c * (1 - GAMMA ** (CLOCK_TIME_LIMIT - t)) for t in range(CLOCK_TIME_LIMIT - margin)]
    assert bias == pytest.approx(sum(counted) / len(counted), rel=1e-9)


def test_terminated_and_cut_episodes_are_pooled_state_by_state() -> None:
    c, margin = 2.0, cut_margin(GAMMA)
    cut = [c * (1 - GAMMA ** (CLOCK_TIME_LIMIT - t)) for t in range(CLOCK_TIME_LIMIT - margin)]
    terminated = [c] * (4 + 6)  # seeds 0 and 2: 4 and 6 states
    expected = (sum(cut) * 2 + sum(terminated)) / (2 * len(cut) + len(terminated))
    assert evaluate(4, seed=0, offset=c) == pytest.approx(expected, rel=1e-9)


def test_the_evaluator_s_max_steps_is_a_cut_too() -> None:
    # cut at 50 steps instead of 60: the states 0..5 count (50 - 44), bootstrapped at 50
    assert evaluate(1, seed=1, offset=0.0, max_steps=50) == pytest.approx(0.0, abs=1e-9)
    margin = cut_margin(GAMMA)
    counted = [2.0 * (1 - GAMMA ** (50 - t)) for t in range(50 - margin)]
    bias = evaluate(1, seed=1, offset=2.0, max_steps=50)
    assert bias == pytest.approx(sum(counted) / len(counted), rel=1e-9)


def test_no_counted_state_gives_nan() -> None:
    # gamma = 0.99: H = 459 steps, longer than the 60-step limit: no state of a cut episode counts
    offset = 0.0
    assert math.isnan(evaluate(1, seed=1, offset=offset, gamma=0.99))


def test_the_bias_is_logged_in_the_csv_and_tensorboard(tmp_path: Path) -> None:
    critic = lambda obs, action: true_q(obs, action, 1.0)  # noqa: E731
    with Evaluator(CLOCK_ID, every=1, run_dir=tmp_path, logs=True, num_episodes=2, seed=0,
                   critic=critic, gamma=GAMMA) as evaluator:  # fmt: skip
        evaluator.run(5, ConstantAction())
        evaluator.run(10, ConstantAction())
    rows = read_evaluations(tmp_path)
    assert [row["step"] for row in rows] == [5, 10]
    assert all(row["critic_bias"] == pytest.approx(evaluator.history[0].extras["critic_bias"])
               for row in rows)  # fmt: skip
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [event.step for event in events.Scalars("eval/critic_bias")] == [5, 10]


def test_no_critic_no_extra_and_the_critic_needs_gamma() -> None:
    with Evaluator(CLOCK_ID, every=1, num_episodes=1) as evaluator:
        assert dict(evaluator.run(1, ConstantAction()).extras) == {}
    with pytest.raises(ValueError, match="needs both critic"):
        Evaluator(CLOCK_ID, every=1, critic=true_q)
    with pytest.raises(ValueError, match="needs both critic"):
        Evaluator(CLOCK_ID, every=1, gamma=0.9)
    with pytest.raises(ValueError, match=r"gamma must be .* in \[0, 1\]"):
        CriticBias(true_q, 1.5)
    with pytest.raises(TypeError, match="critic must be callable"):
        CriticBias("q1", 0.9)  # type: ignore[arg-type]


def test_the_critic_sees_the_actions_taken_without_gradients() -> None:
    seen: list[tuple[bool, Tensor]] = []

    def critic(obs: Tensor, action: Tensor) -> Tensor:
        seen.append((torch.is_grad_enabled(), action))
        return true_q(obs, action)

    with Evaluator(CLOCK_ID, every=1, num_episodes=1, seed=0, critic=critic, gamma=GAMMA) as e:
        e.run(1, ConstantAction())
    assert seen and not any(grad for grad, _ in seen)
    assert all(torch.all(action == ACTION) for _, action in seen)


def test_a_critic_module_is_evaluated_in_eval_mode_and_its_modes_are_restored() -> None:
    class NormalizedCritic(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.BatchNorm1d(2)

        def forward(self, obs: Tensor, action: Tensor) -> Tensor:
            self.norm(obs)  # (in train mode this would update its running statistics)
            return true_q(obs, action)

    critic = NormalizedCritic()
    critic.train()
    mean = critic.norm.running_mean.clone()
    with Evaluator(CLOCK_ID, every=1, num_episodes=2, seed=0, critic=critic, gamma=GAMMA) as e:
        bias = e.run(1, ConstantAction()).extras["critic_bias"]
    assert bias == pytest.approx(0.0, abs=1e-9)
    assert torch.equal(critic.norm.running_mean, mean)
    assert critic.training and critic.norm.training
