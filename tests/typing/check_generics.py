"""Checked by mypy (tests/test_typing.py), never run: user code as a student writes it.

The action type of an ``Actor[StochasticAction]`` must flow through collectors and
containers, so that ``batch.action.log_prob`` type-checks, and ``actor(step.obs)`` must
accept ``Dict`` observations (a ``TensorStruct``).
"""

from __future__ import annotations

import torch
from torch import Tensor
from typing_extensions import assert_type

from rl_mind import (
    Action,
    Actor,
    Episode,
    EpisodeCollector,
    Observation,
    ReplayBuffer,
    Rollout,
    RolloutCollector,
    StochasticAction,
    TensorStruct,
    TransitionCollector,
    Transitions,
    VecEnv,
    minibatches,
)


class Policy(Actor[StochasticAction]):
    def forward(self, obs: Observation) -> StochasticAction:
        logits = torch.zeros(4, 2)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        return StochasticAction(action, dist.log_prob(action))


def rollout_types(env: VecEnv, actor: Policy) -> None:
    collector = RolloutCollector(env, actor)
    rollout = collector.collect(16)
    assert_type(rollout, Rollout[StochasticAction])
    batch = rollout.flatten()
    assert_type(batch.action.log_prob, Tensor)
    for minibatch in minibatches(batch, 64):
        assert_type(minibatch, Rollout[StochasticAction])
        assert_type(minibatch.action.log_prob, Tensor)
    step = env.step(actor(env.reset()))
    assert_type(actor(step.obs), StochasticAction)  # Tensor or TensorStruct observations


def off_policy_types(env: VecEnv, actor: Policy) -> None:
    collector = TransitionCollector(env, actor)
    buffer = ReplayBuffer[StochasticAction](1000)
    buffer.add(collector.collect(1))
    batch = buffer.sample(32)
    assert_type(batch, Transitions[StochasticAction])
    assert_type(batch.action.log_prob, Tensor)


def episode_types(env: VecEnv, actor: Policy) -> None:
    episodes = EpisodeCollector(env, actor).collect(4)
    assert_type(episodes, list[Episode[StochasticAction]])
    assert_type(episodes[0].action, StochasticAction)
    assert_type(episodes[0].cumulated_reward, float)


def dict_observation(obs: TensorStruct, actor: Actor[Action]) -> Tensor:
    return actor(obs).value + actor.act(obs)
