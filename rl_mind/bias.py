"""The critic's bias: how far Q(s, a) is from the discounted return actually obtained.

The measurement of Fujimoto et al. 2018 (TD3, Figure 1): DDPG's critic overestimates, TD3's
clipped double Q does not. At each evaluation, an :class:`~rl_mind.evaluation.Evaluator`
given ``critic=`` and ``gamma=`` records the states and actions of its evaluation episodes
(the deterministic ``actor.act``), computes from each state the discounted return that
followed, and logs the mean of ``Q(s_t, a_t) - G_t`` as ``extras["critic_bias"]``: positive
when the critic overestimates.

What the reader must not get wrong: **episodes cut short** (a time limit, or the
evaluator's ``max_steps``). The critic learns the value of a task that goes on (a cut is
bootstrapped in its targets), so the return of a cut episode must go on too. Here:

- the tail after the cut is **bootstrapped with the critic's own value there**,
  ``gamma^(T-t) Q(s_T, actor.act(s_T))``, which makes the return from states near the end
  right as far as the critic is right;
- and only the states at least ``H`` steps before the cut count, where ``gamma^H <=``
  :data:`CUT_WEIGHT` (1%): in what they measure, the critic's own error at the cut weighs
  at most 1%. A critic off by ``c`` everywhere shows a bias between ``0.99 c`` and ``c``.

Excluding cut episodes altogether would leave nothing to measure on a task whose good
policies always reach the time limit (LunarLander's hover, CartPole's 500 steps); bootstrapping
without the margin would let the critic grade itself near the cut. Terminated episodes count
in full (no bootstrap: the value after a terminal state is 0). With ``gamma = 0.99``,
``H = 459``: on a 500-step limit, 41 states of a cut episode count; on Pendulum's 200 steps,
none do (the bias is NaN when no state counts; a smaller ``gamma`` or longer episodes fix it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from rl_mind.core import Action
from rl_mind.data import Rollout
from rl_mind.env import EnvStep
from rl_mind.videos import evaluation_mode

__all__ = ["CUT_WEIGHT", "BiasRecording", "CriticBias", "cut_margin", "discounted_returns_to_go"]

CUT_WEIGHT = 0.01
"""The largest weight ``gamma^(T-t)`` the critic's bootstrapped value at a cut may have in a
counted state's return."""

Critic = Callable[[Any, Tensor], Tensor]


def cut_margin(gamma: float, weight: float = CUT_WEIGHT) -> int:
    """``H``, the fewest steps before a cut for a state to count: the smallest ``H >= 1`` with
    ``gamma^H <= weight`` (0.99 → 459; 0 → 1; 1 → no state of a cut episode ever counts:
    ``sys.maxsize``)."""
    if gamma <= 0.0:
        return 1
    if gamma >= 1.0:
        import sys

        return sys.maxsize
    return max(1, math.ceil(math.log(weight) / math.log(gamma) - 1e-9))


def discounted_returns_to_go(
    rewards: Tensor, gamma: float, bootstrap: Tensor | float = 0.0
) -> Tensor:
    """``G_t = r_t + gamma r_{t+1} + ... + gamma^(T-1-t) r_{T-1} + gamma^(T-t) bootstrap`` for
    every ``t`` of one episode's rewards ``[T]`` (``bootstrap``: the value after the last
    step, 0 after a terminal state). Returns ``[T]`` (float64); rewards ``[T, B]``: the
    returns of ``B`` episodes side by side, ``[T, B]``."""
    returns = torch.empty_like(rewards, dtype=torch.float64)
    following = torch.as_tensor(bootstrap, dtype=torch.float64)
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t].double() + gamma * following
        returns[t] = following
    return returns


class BiasRecording:
    """The states, actions and rewards of one evaluation's episodes (the first of each copy),
    recorded step by step by the :class:`~rl_mind.evaluation.Evaluator`."""

    def __init__(self, measure: CriticBias, num_envs: int) -> None:
        self.measure = measure
        self.num_envs = num_envs
        self.steps: list[Rollout[Action]] = []

    def add(self, obs: Any, actions: Tensor, step: EnvStep) -> None:
        """Record one step: the observations acted on ``[B, ...]``, the actions ``[B, ...]``
        and what ``VecEnv.step`` returned."""
        self.steps.append(Rollout(obs, Action(actions.detach()), step.reward, step.next_obs,
                                  step.terminated, step.truncated))  # fmt: skip

    def bias(self, actor: Any, device: torch.device | str = "cpu") -> float:
        """The mean of ``Q(s_t, a_t) - G_t`` over the counted states (NaN if none counts).

        ``actor.act`` gives the action at a cut for the bootstrap; the critic runs on
        ``device`` (the actor's) under ``torch.no_grad()``, a module in ``eval()`` mode
        (its modes restored after)."""
        if not self.steps:
            return math.nan
        gamma, critic = self.measure.gamma, self.measure.critic
        steps = Rollout.stack(self.steps)  # [T, B]
        rows = steps.flatten()  # (row t * B + i: step t of copy i)
        rewards, done = steps.reward.cpu().double(), steps.done.cpu()
        (T, B), copies = rewards.shape, torch.arange(rewards.shape[1])
        # each copy's first episode ends at its first done step, or is cut at the last one
        end = torch.where(done.any(0), done.long().argmax(0), T - 1)
        terminated = steps.terminated.cpu()[end, copies]
        # a cut episode counts up to H steps before the cut; a terminated one in full
        length = end + 1
        counted = torch.where(terminated, length, length - self.measure.margin)
        time = torch.arange(T)[:, None]
        # (a critic module in eval() mode: no dropout, batch statistics untouched)
        with evaluation_mode(critic) if isinstance(critic, nn.Module) else torch.no_grad():
            final_obs = rows.next_obs[end * B + copies].to(device)
            cut_values = critic(final_obs, actor.act(final_obs)).double().cpu().reshape(-1)
            cut_values = torch.where(terminated, 0.0, cut_values)
            if not bool((counted > 0).any()):
                return math.nan
            # every copy's returns at once: its first episode's rewards, the tail after a cut
            # bootstrapped at its last step (0 after a terminal state), the later steps dropped
            rewards = torch.where(time > end, 0.0, rewards)
            rewards[end, copies] += gamma * cut_values
            returns = discounted_returns_to_go(rewards, gamma)
            # the counted steps, copy by copy (the order the mean sums them in)
            copy, t = (time < counted).T.nonzero(as_tuple=True)
            taken = rows[t * B + copy]
            values = critic(taken.obs.to(device), taken.action.value.to(device))
            values = values.double().cpu().reshape(-1)
        return float((values - returns[t, copy]).mean())


class CriticBias:
    """What the :class:`~rl_mind.evaluation.Evaluator` measures with ``critic=`` and
    ``gamma=``: ``critic(obs [N, obs_dim], action [N, ...]) -> Q [N]`` (for DQN, the Q-value
    of the action taken: ``lambda obs, a: q(obs).gather(1, a[:, None]).squeeze(1)``; for
    TD3, the first critic) and the discount ``gamma`` in [0, 1] the critic was trained with.
    """

    def __init__(self, critic: Critic, gamma: float) -> None:
        if not callable(critic):
            raise TypeError(f"critic must be callable as critic(obs, action) -> Q [N], got "
                            f"{type(critic).__name__}")  # fmt: skip
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0 <= gamma <= 1:
            raise ValueError(f"gamma must be the critic's discount, a number in [0, 1], got "
                             f"{gamma!r}")  # fmt: skip
        self.critic, self.gamma = critic, float(gamma)
        self.margin = cut_margin(self.gamma)

    @classmethod
    def from_arguments(cls, critic: Critic | None, gamma: float | None) -> CriticBias | None:
        """The Evaluator's ``critic=`` and ``gamma=``: both (a measure) or neither (None)."""
        if critic is None and gamma is None:
            return None
        if critic is None or gamma is None:
            raise ValueError(f"Evaluator: the critic's bias needs both critic=callable(obs, "
                             f"action) -> Q and gamma=the critic's discount, got critic="
                             f"{critic!r}, gamma={gamma!r}")  # fmt: skip
        return cls(critic, gamma)

    def recording(self, num_envs: int) -> BiasRecording:
        """An empty recording for one evaluation of ``num_envs`` copies."""
        return BiasRecording(self, num_envs)
