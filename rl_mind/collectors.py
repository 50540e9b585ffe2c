"""Collectors: run an actor in a :class:`~rl_mind.env.VecEnv` and hand back learning data.

- :class:`TransitionCollector`: ``collect(n_steps)`` -> ``Transitions [≤ n_steps·B]``, for
  DQN, DDPG, TD3 and SAC; in next-step reset mode the reset rows are dropped.
- :class:`RolloutCollector`: ``collect(n_steps)`` -> ``Rollout [n_steps, B]``, for A2C and
  PPO; same-step reset mode only.
- :class:`EpisodeCollector`: ``collect(n_episodes)`` -> ``list[Episode]`` (at least
  ``n_episodes``), for REINFORCE; it resets the environment at each call, where the other
  two carry its state over from one call to the next.

Each ``collect`` is one loop: the actor acts for every copy (under ``torch.no_grad()``: the
loss recomputes what needs gradients, on the actor's device), ``env.step`` steps them, the
valid rows are kept, each copy's running return and length grow, and the rows of the
steps are joined once, after the loop. A copy that auto-resets (next-step mode) ignores its
action, and its row, flagged in ``EnvStep.autoreset``, is not a transition: it is dropped.

``.steps`` counts the recorded steps; ``.episode_returns`` / ``.episode_lengths`` are those
of the episodes that ended during the last ``collect``, copy by copy in time order.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch
from torch import Tensor, nn

from rl_mind.core import Action, ActionT, Observation, TensorStruct
from rl_mind.data import Episode, Rollout, Transitions
from rl_mind.env import EnvStep, VecEnv

__all__ = ["EpisodeCollector", "RolloutCollector", "TransitionCollector"]

Policy = Callable[[Observation], ActionT]
StructT = TypeVar("StructT", bound=TensorStruct)


def _positive(name: str, n: Any) -> int:
    """``n`` as an int, checked to be a positive one."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
        raise ValueError(f"collect: {name} must be a positive int, got {n!r}")
    return int(n)


def _joined(join: Callable[[list[StructT]], StructT], steps: list[StructT]) -> StructT:
    """The per-step structs joined (``cat`` or ``stack``): only the actor's actions can
    disagree from one step to the next, and the error says so."""
    try:
        return join(steps)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(
            f"the actor's actions of the steps of this collect do not join: {error} (an item "
            f"is a step); the actor must return the same kind of Action, with the same "
            f"shapes, at every step"
        ) from None


class _Collector(Generic[ActionT]):
    def __init__(self, env: VecEnv, actor: Policy[ActionT]) -> None:
        if not isinstance(env, VecEnv):
            raise TypeError(f"expected a rl_mind VecEnv, got {type(env).__name__}")
        if not callable(actor):
            raise TypeError(f"expected an Actor (or a callable obs -> Action), got {actor!r}")
        self.env = env
        self.actor = actor
        self.steps = 0
        """Environment steps recorded so far (all copies together)."""
        self._obs: Observation | None = None  # what to act on next (None: reset first)
        # a parameter (or buffer) of the actor: its .device follows actor.to(...)
        module = actor if isinstance(actor, nn.Module) else nn.Module()
        self._probe = next(itertools.chain(module.parameters(), module.buffers()), None)
        self._start_episodes()

    def _start_episodes(self) -> None:
        """Every copy starts an episode: no running return, no length, none ended yet."""
        B, device = self.env.num_envs, self.env.device
        self._return = torch.zeros(B, device=device)
        self._length = torch.zeros(B, dtype=torch.long, device=device)
        self._ended: list[tuple[Tensor, Tensor, Tensor]] = []  # (ended, returns, lengths)

    def _act(self, obs: Observation) -> ActionT:
        """The actor's actions for every copy, the observations moved to its device."""
        if self._probe is not None and self._probe.device != self.env.device:
            obs = obs.to(self._probe.device)
        action = self.actor(obs)
        if not isinstance(action, Action):
            raise TypeError(
                f"the actor must return an Action (e.g. Action(value) or "
                f"StochasticAction(value, log_prob)), got {type(action).__name__}"
            )
        return action

    def _count(self, step: EnvStep, counted: Tensor, ended: Tensor) -> None:
        """Add a step to each copy's running return and length (``counted`` ``[B]`` bool:
        the copies whose row is a step of their episode; an auto-reset row's reward is 0)
        and note the episodes that end, ``ended`` ``[B]`` bool (done and counted)."""
        self._return += step.reward
        self._length += counted
        if ended.any():  # (the tensors noted are kept as they are: new ones go on)
            self._ended.append((ended, self._return, self._length))
            self._return = self._return.masked_fill(ended, 0.0)
            self._length = self._length.masked_fill(ended, 0)

    @property
    def episode_returns(self) -> Tensor:
        """``[K]`` returns of the episodes that ended during the last ``collect``."""
        return self._ended_episodes()[0]

    @property
    def episode_lengths(self) -> Tensor:
        """``[K]`` lengths (steps) of the episodes that ended during the last ``collect``."""
        return self._ended_episodes()[1]

    def _ended_episodes(self) -> tuple[Tensor, Tensor]:
        """The returns and lengths of the episodes ended during the last call, on the CPU,
        copy by copy in time order."""
        if not self._ended:
            return torch.zeros(0), torch.zeros(0, dtype=torch.long)
        # [B, S]: the copies' values at the S steps where some episode ended
        ended, returns, lengths = (torch.stack(column, 1).cpu() for column in zip(*self._ended))
        return returns[ended], lengths[ended]


class TransitionCollector(_Collector[ActionT]):
    """Steps for off-policy learning: ``collect(n_steps)`` → ``Transitions [≤ n_steps·B]``.

    The environment state is kept across calls, so ``collect(1)`` at every training step is
    the usual pattern. The actor acts for every copy at every step (one action per copy);
    in next-step reset mode the auto-reset rows (which are not transitions) are dropped,
    hence the ``≤``. A step where every copy resets returns no transitions.
    """

    def collect(self, n_steps: int) -> Transitions[ActionT]:
        """Run ``n_steps`` steps of every copy; returns the valid transitions (time-major)."""
        n_steps = _positive("n_steps", n_steps)
        if self._obs is None:
            self._obs = self.env.reset()
        self._ended = []
        steps: list[Transitions[ActionT]] = []
        valid: list[Tensor] = []  # [B] bool per step: False on the rows to drop
        with torch.no_grad():
            for _ in range(n_steps):
                obs = self._obs
                action = self._act(obs)
                step = self.env.step(action)
                self._obs = step.obs
                valid.append(~step.autoreset)  # (next-step mode: a reset row is no transition)
                self._count(step, valid[-1], step.done)
                steps.append(Transitions(obs, action, step.reward, step.next_obs, step.terminated))
        # the rows joined once (one step's need no joining), then the valid ones kept
        if n_steps == 1:
            transitions, keep = steps[0], valid[0]
        else:
            transitions, keep = _joined(Transitions.cat, steps), torch.cat(valid)
        if not keep.all():
            transitions = transitions[keep.nonzero().squeeze(1)]
        self.steps += len(transitions.reward)
        return transitions


class RolloutCollector(_Collector[ActionT]):
    """Fixed-length on-policy segments: ``collect(n_steps)`` → ``Rollout [n_steps, B]``.

    Requires a same-step reset ``VecEnv`` so that every step is a transition and the
    rollout has exactly ``[n_steps, B]`` rows. The environment state is kept across calls:
    an episode may span two rollouts and end anywhere inside one.
    """

    def __init__(self, env: VecEnv, actor: Policy[ActionT]) -> None:
        super().__init__(env, actor)
        if not env.same_step_reset:
            raise ValueError(
                "RolloutCollector needs a VecEnv with same_step_reset=True (next-step reset "
                "rows are not transitions and would break the [T, B] layout); build it as "
                f"VecEnv({env.env_name!r}, {env.num_envs}, same_step_reset=True)"
            )

    def collect(self, n_steps: int) -> Rollout[ActionT]:
        """Run ``n_steps`` steps of every copy; returns a ``[n_steps, B]`` rollout."""
        n_steps = _positive("n_steps", n_steps)
        if self._obs is None:
            self._obs = self.env.reset()
        self._ended = []
        steps: list[Rollout[ActionT]] = []
        with torch.no_grad():
            for _ in range(n_steps):
                obs = self._obs
                action = self._act(obs)
                step = self.env.step(action)
                self._obs = step.obs
                self._count(step, ~step.autoreset, step.done)  # (same-step: all count)
                steps.append(
                    Rollout(
                        obs, action, step.reward, step.next_obs, step.terminated, step.truncated
                    )
                )
        rollout = _joined(Rollout.stack, steps)
        self.steps += n_steps * self.env.num_envs
        return rollout


class EpisodeCollector(_Collector[ActionT]):
    """Whole on-policy episodes: ``collect(n_episodes)`` → ``list[Episode]``.

    Each call resets the environment (so that every episode is played by the current
    actor) and gives every copy the same quota of ``ceil(n_episodes / B)`` episodes: a copy
    that met its quota keeps stepping with the others, but its steps are discarded. Taking
    the first episodes to finish across copies instead would favour short episodes (with 16
    copies of an environment whose episodes average 50 steps, the first one to finish lasts
    about 6). The call returns ``quota · B ≥ n_episodes`` episodes, copy by copy, each in
    the order it was played.

    ``max_steps`` (default 100,000) bounds the environment steps per copy in one call: an
    environment that never ends raises a ``RuntimeError`` instead of running forever.
    """

    def __init__(self, env: VecEnv, actor: Policy[ActionT], max_steps: int = 100_000) -> None:
        super().__init__(env, actor)
        self.max_steps = _positive("max_steps", max_steps)

    def collect(self, n_episodes: int) -> list[Episode[ActionT]]:
        """Play until every copy finished ``ceil(n_episodes / B)`` episodes."""
        quota = math.ceil(_positive("n_episodes", n_episodes) / self.env.num_envs)
        obs = self.env.reset()  # episodes of the current actor only
        self._start_episodes()
        finished = torch.zeros(self.env.num_envs, dtype=torch.long, device=self.env.device)
        steps: list[Rollout[ActionT]] = []
        kept: list[Tensor] = []
        with torch.no_grad():
            while not (finished >= quota).all():
                if len(steps) == self.max_steps:
                    raise RuntimeError(
                        f"EpisodeCollector: after {len(steps)} steps per copy, only "
                        f"{int((finished >= quota).sum())} of {self.env.num_envs} copies "
                        f"finished their {quota} episode(s); does {self.env.env_name!r} ever "
                        f"end? Add a time limit (gymnasium.wrappers.TimeLimit) or raise max_steps"
                    )
                action = self._act(obs)
                step = self.env.step(action)
                keep = ~step.autoreset & (finished < quota)  # (past its quota: discarded)
                ended = step.done & keep
                self._count(step, keep, ended)
                finished += ended
                steps.append(
                    Rollout(
                        obs, action, step.reward, step.next_obs, step.terminated, step.truncated
                    )
                )
                kept.append(keep)
                obs = step.obs
        # the kept rows, copy by copy in time order: each copy's `quota` episodes end to end
        copy, time = torch.stack(kept).T.nonzero(as_tuple=True)
        rows = _joined(Rollout.stack, steps).flatten()[time * self.env.num_envs + copy]
        self.steps += len(rows)
        lengths = self.episode_lengths.tolist()  # (the episodes' rows, in the same order)
        ends = rows.done.nonzero().squeeze(1)
        final_obs = rows.next_obs[ends]  # (one per episode)
        parts = zip(
            _split(rows.obs, lengths),
            _split(rows.action, lengths),
            rows.reward.split(lengths),
            [final_obs[i] for i in range(len(ends))],
            rows.terminated[ends].tolist(),
        )
        return [Episode(*episode) for episode in parts]


def _split(data: Any, sizes: list[int]) -> list[Any]:
    """``[N, ...]`` rows (a tensor or a struct) cut into consecutive pieces of ``sizes``."""
    if isinstance(data, Tensor):
        return list(data.split(sizes))
    starts = itertools.accumulate(sizes, initial=0)
    return [data[start : start + size] for start, size in zip(starts, sizes)]
