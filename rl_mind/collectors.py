"""Collectors: run an actor in a :class:`~rl_mind.env.VecEnv` and hand back learning data.

==================  ====================  ======================  =====================
                    TransitionCollector   EpisodeCollector        RolloutCollector
==================  ====================  ======================  =====================
``collect(n)``      ``n`` steps           ``n`` episodes (≥)      ``n`` steps
returns             ``Transitions``       ``list[Episode]``       ``Rollout [n, B]``
                    ``[≤ n·B]``
for                 DQN, DDPG, TD3, SAC   REINFORCE               A2C, PPO
reset mode          either (next-step:    either                  same-step only
                    reset rows dropped)
environment state   kept across calls     reset at each call      kept across calls
==================  ====================  ======================  =====================

Every collector runs the actor under ``torch.no_grad()`` (data is recorded, not
differentiated: the loss recomputes what needs gradients), moves observations to the
actor's device, counts the recorded environment steps in ``.steps``, and reports the
returns and lengths of the episodes that *ended* during the last ``collect`` in
``.episode_returns`` / ``.episode_lengths`` (for training-progress logs).

What the reader must not get wrong: the per-step loop only calls the actor and the
environment and keeps references; all bookkeeping (dropping reset rows, episode returns,
splitting episodes) is done once per ``collect`` with tensor operations.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import torch
from torch import Tensor, nn

from rl_mind.core import Action, ActionT, Observation
from rl_mind.data import Episode, Rollout, Transitions, _rebuild
from rl_mind.env import EnvStep, VecEnv

__all__ = ["EpisodeCollector", "RolloutCollector", "TransitionCollector"]

Policy = Callable[[Observation], ActionT]


def _check_count(name: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"collect: {name} must be a positive int, got {n!r}")


def _stack(items: list[Any]) -> Any:
    """Stack a list of tensors or structs along a new leading (time) dimension."""
    first = items[0]
    if isinstance(first, Tensor):
        return torch.stack(items)
    return type(first).stack(items)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a collect keeps thousands of small
    objects alive: its passes over them would cost more than the bookkeeping itself.
    Nothing is leaked: collection resumes (and catches up) when the call returns."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


CollectT = TypeVar("CollectT", bound=Callable[..., Any])


def _without_gc(method: CollectT) -> CollectT:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _gc_paused():
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _first_tensor(actor: Any) -> Tensor | None:
    """A parameter (or buffer) of the actor: its ``.device`` follows ``actor.to(...)``."""
    if isinstance(actor, nn.Module):
        for tensor in actor.parameters():
            return tensor
        for buffer in actor.buffers():
            return buffer
    return None


def _time_major(x: Tensor) -> Tensor:
    """``[B]`` (one step, queued by ``collect(1)``) -> ``[1, B]``; ``[T, B]`` unchanged."""
    return x if x.dim() == 2 else x.unsqueeze(0)


def _cat_time(items: list[Tensor]) -> Tensor:
    """Concatenate queued ``[B]`` / ``[T, B]`` segments along time (one stack when all
    are single steps, the usual case of many ``collect(1)`` calls)."""
    if all(item.dim() == 1 for item in items):
        return torch.stack(items)
    return torch.cat([_time_major(item) for item in items])


def _episode_stats(
    reward: Tensor, done: Tensor, counted: Tensor, carry_return: Tensor, carry_length: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Returns and lengths of the episodes that end in a ``[T, B]`` segment.

    ``counted`` marks the real steps (not next-step reset rows); ``carry_*`` ``[B]`` are the
    return and length accumulated before the segment by episodes still running. Returns the
    finished episodes' returns, lengths and end times (ordered by copy, then time) and the
    new carries.
    """
    reward_bt = (reward * counted).t().double()  # [B, T]
    count_bt = counted.t().long()
    cum_return = reward_bt.cumsum(1) + carry_return.double().unsqueeze(1)
    cum_length = count_bt.cumsum(1) + carry_length.unsqueeze(1)
    done_bt = done.t() & counted.t()
    copy_index, time_index = done_bt.nonzero(as_tuple=True)
    end_return = cum_return[copy_index, time_index]
    end_length = cum_length[copy_index, time_index]
    # an episode starts after the previous end in the same copy (or at the carry)
    same_copy = torch.zeros_like(copy_index, dtype=torch.bool)
    same_copy[1:] = copy_index[1:] == copy_index[:-1]
    previous_return = torch.zeros_like(end_return)
    previous_length = torch.zeros_like(end_length)
    previous_return[1:] = end_return[:-1]
    previous_length[1:] = end_length[:-1]
    returns = end_return - torch.where(same_copy, previous_return, 0.0)
    lengths = end_length - torch.where(same_copy, previous_length, 0)
    # what remains of the running episodes
    total_return = cum_return[:, -1]
    total_length = cum_length[:, -1]
    last_end_return = torch.zeros_like(total_return)
    last_end_length = torch.zeros_like(total_length)
    last_end_return[copy_index] = end_return  # later ends overwrite earlier ones
    last_end_length[copy_index] = end_length
    new_carry_return = (total_return - last_end_return).to(carry_return.dtype)
    new_carry_length = total_length - last_end_length
    return returns.float(), lengths, time_index, new_carry_return, new_carry_length


class _Collector(Generic[ActionT]):
    def __init__(self, env: VecEnv, actor: Policy[ActionT]) -> None:
        if not isinstance(env, VecEnv):
            raise TypeError(f"expected a rl_mind VecEnv, got {type(env).__name__}")
        if not callable(actor):
            raise TypeError(f"expected an Actor (or a callable obs -> Action), got {actor!r}")
        self.env = env
        self.actor = actor
        self._device_probe = _first_tensor(actor)
        self.steps = 0
        """Environment steps recorded so far (all copies together)."""
        self._obs: Observation | None = None
        B = env.num_envs
        self._carry_return = torch.zeros(B, dtype=torch.float64)
        self._carry_length = torch.zeros(B, dtype=torch.long)
        # [T, B] (reward, terminated, truncated, counted) of the calls not yet folded into
        # the carries; the statistics are computed when read, so that collect(1) at every
        # step stays cheap
        self._pending: list[tuple[Tensor, Tensor, Tensor, Tensor | None]] = []
        self._stats: tuple[Tensor, Tensor] = (torch.zeros(0), torch.zeros(0, dtype=torch.long))

    @property
    def episode_returns(self) -> Tensor:
        """``[K]`` returns of the episodes that ended during the last ``collect``."""
        return self._last_stats()[0]

    @property
    def episode_lengths(self) -> Tensor:
        """``[K]`` lengths (steps) of the episodes that ended during the last ``collect``."""
        return self._last_stats()[1]

    def _last_stats(self) -> tuple[Tensor, Tensor]:
        if self._pending:
            self._stats = self._fold()
        return self._stats

    def _fold(self) -> tuple[Tensor, Tensor]:
        """Fold the pending segments into the carries; the stats of the last one's episodes."""
        pending, self._pending = self._pending, []
        reward = _cat_time([r for r, _te, _tr, _c in pending])
        done = _cat_time([te for _r, te, _tr, _c in pending]) | _cat_time(
            [tr for _r, _te, tr, _c in pending]
        )
        if all(c is None for _r, _te, _tr, c in pending):
            counted = torch.ones_like(done)
        else:
            counted = _cat_time(
                [torch.ones_like(te) if c is None else c for _r, te, _tr, c in pending]
            )
        reward, done, counted = reward.cpu(), done.cpu(), counted.cpu()
        last_length = _time_major(pending[-1][0]).shape[0]
        returns, lengths, end_time, self._carry_return, self._carry_length = _episode_stats(
            reward, done, counted, self._carry_return, self._carry_length
        )
        in_last = end_time >= reward.shape[0] - last_length
        return returns[in_last], lengths[in_last]

    def _act(self, obs: Observation, device: torch.device | None) -> ActionT:
        if device is not None and obs.device != device:
            obs = obs.to(device)
        action = self.actor(obs)
        if not isinstance(action, Action):
            raise TypeError(
                f"the actor must return an Action (e.g. Action(value) or "
                f"StochasticAction(value, log_prob)), got {type(action).__name__}"
            )
        return action

    def _actor_device(self) -> torch.device | None:
        probe = self._device_probe
        return None if probe is None else probe.device

    def _run(self, n_steps: int) -> tuple[list[Observation], list[ActionT], list[EnvStep]]:
        """``n_steps`` steps of every copy, keeping references only."""
        obs = self._obs if self._obs is not None else self.env.reset()
        observations: list[Observation] = []
        actions: list[ActionT] = []
        steps: list[EnvStep] = []
        device = self._actor_device()
        with torch.no_grad():
            for _ in range(n_steps):
                action = self._act(obs, device)
                step = self.env.step(action)
                observations.append(obs)
                actions.append(action)
                steps.append(step)
                obs = step.obs
        self._obs = obs
        return observations, actions, steps

    def _record_stats(
        self, reward: Tensor, terminated: Tensor, truncated: Tensor, counted: Tensor | None
    ) -> None:
        """Queue a ``[T, B]`` segment for the episode statistics of this call
        (``counted`` marks the real steps; None: every step counts)."""
        if len(self._pending) >= 256:  # bound the memory of calls nobody asked stats for
            self._fold()
        self._pending.append((reward, terminated, truncated, counted))


class TransitionCollector(_Collector[ActionT]):
    """Steps for off-policy learning: ``collect(n_steps)`` → ``Transitions [≤ n_steps·B]``.

    The environment state is kept across calls, so ``collect(1)`` at every training step is
    the usual pattern. In next-step reset mode the auto-reset rows (which are not
    transitions) are dropped, hence the ``≤``.
    """

    @_without_gc
    def collect(self, n_steps: int) -> Transitions[ActionT]:
        """Run ``n_steps`` steps of every copy; returns the valid transitions (time-major)."""
        _check_count("n_steps", n_steps)
        observations, actions, steps = self._run(n_steps)
        if n_steps == 1:  # the usual off-policy pattern: keep it lean
            step = steps[0]
            data: Transitions[ActionT] = Transitions._trusted(
                observations[0], actions[0], step.reward, step.next_obs, step.terminated
            )
            # [B] flags: the statistics take them as one time step ([1, B]) when read
            reward, terminated = step.reward, step.terminated
            truncated, autoreset = step.truncated, step.autoreset
        else:
            stacked = EnvStep.stack(steps)
            data = Transitions._trusted(
                _stack(observations),
                _stack(actions),
                stacked.reward,
                stacked.next_obs,
                stacked.terminated,
            ).flatten_leading(2)
            reward, terminated = stacked.reward, stacked.terminated
            truncated, autoreset = stacked.truncated, stacked.autoreset
        valid: Tensor | None = None
        if not self.env.same_step_reset and bool(autoreset.any()):
            valid = ~autoreset
            keep = valid.flatten().nonzero().squeeze(1)  # one index for every field
            data = data[keep]
            self.steps += keep.numel()
        else:
            self.steps += reward.numel()
        self._record_stats(reward, terminated, truncated, valid)
        return data


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

    @_without_gc
    def collect(self, n_steps: int) -> Rollout[ActionT]:
        """Run ``n_steps`` steps of every copy; returns a ``[n_steps, B]`` rollout."""
        _check_count("n_steps", n_steps)
        observations, actions, steps = self._run(n_steps)
        stacked = EnvStep.stack(steps)
        rollout = Rollout(
            _stack(observations),
            _stack(actions),
            stacked.reward,
            stacked.next_obs,
            stacked.terminated,
            stacked.truncated,
        )
        self.steps += n_steps * self.env.num_envs
        self._record_stats(stacked.reward, stacked.terminated, stacked.truncated, None)
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

    ``max_steps`` (default 100,000) bounds the environment steps per copy in one call: an environment
    that never ends raises a ``RuntimeError`` instead of running forever.
    """

    def __init__(self, env: VecEnv, actor: Policy[ActionT], max_steps: int = 100_000) -> None:
        super().__init__(env, actor)
        _check_count("max_steps", max_steps)
        self.max_steps = max_steps

    @_without_gc
    def collect(self, n_episodes: int) -> list[Episode[ActionT]]:
        """Play until every copy finished ``ceil(n_episodes / B)`` episodes."""
        _check_count("n_episodes", n_episodes)
        B = self.env.num_envs
        quota = math.ceil(n_episodes / B)
        self._obs = None  # reset: episodes from the current actor only
        self._pending.clear()
        self._carry_return.zero_()
        self._carry_length.zero_()
        self._obs = self.env.reset()
        finished = torch.zeros(B, dtype=torch.long, device=self.env.device)
        observations: list[Observation] = []
        actions: list[ActionT] = []
        steps: list[EnvStep] = []
        # step in chunks of 8 and count the finished episodes after each chunk: a few steps
        # past the quota cost less than a check at every step
        while not bool((finished >= quota).all()):
            if len(steps) >= self.max_steps:
                raise RuntimeError(
                    f"EpisodeCollector: after {len(steps)} steps per copy, only "
                    f"{int((finished >= quota).sum())} of {B} copies finished their "
                    f"{quota} episode(s); does {self.env.env_name!r} ever end? Add a time "
                    f"limit (gymnasium.wrappers.TimeLimit) or raise max_steps"
                )
            chunk_obs, chunk_actions, chunk_steps = self._run(min(8, self.max_steps - len(steps)))
            observations += chunk_obs
            actions += chunk_actions
            steps += chunk_steps
            for step in chunk_steps:
                finished += step.done
        self._obs = None  # the next call resets anyway
        stacked = EnvStep.stack(steps)
        all_obs = _stack(observations)
        all_actions = _stack(actions)
        valid = ~stacked.autoreset
        done = stacked.done & valid
        # keep the steps of each copy's first `quota` episodes
        episode_index = done.long().cumsum(0) - done.long()  # episode number of each step
        keep = valid & (episode_index < quota)
        self.steps += int(keep.sum())
        self._record_stats(
            stacked.reward, stacked.terminated & keep, stacked.truncated & keep, keep
        )
        # split every copy's kept steps into its episodes, all copies at once: rows are
        # taken in copy-then-time order, where each copy's `quota` episodes are contiguous
        keep_bt = keep.t()
        done_bt = (done & keep).t()  # [B, T]: the ends of the kept episodes
        ends = keep_bt.long().cumsum(1)[done_bt].reshape(B, quota)  # kept rows so far
        lengths = torch.diff(ends, dim=1, prepend=torch.zeros_like(ends[:, :1])).flatten()
        sizes = lengths.tolist()

        def rows(data: Any, mask: Tensor) -> Any:
            """``[T, B, ...]`` -> the rows of ``mask`` ``[B, T]``, copy by copy."""
            if isinstance(data, Tensor):
                return data.transpose(0, 1)[mask]
            return data._apply_batched(lambda t: t.transpose(0, 1)[mask])

        obs_parts = _split(rows(all_obs, keep_bt), sizes)
        action_parts = _split(rows(all_actions, keep_bt), sizes)
        reward_parts = rows(stacked.reward, keep_bt).split(sizes)
        final_obs = rows(stacked.next_obs, done_bt)
        terminated = rows(stacked.terminated, done_bt).tolist()
        return [
            Episode._trusted(
                obs_parts[i],
                action_parts[i],
                reward_parts[i],
                _item(final_obs, i),
                terminated[i],
            )
            for i in range(B * quota)
        ]


def _split(data: Any, sizes: list[int]) -> list[Any]:
    """Split a ``[N, ...]`` tensor or struct into consecutive pieces of ``sizes`` rows."""
    if isinstance(data, Tensor):
        return list(data.split(sizes))
    leaves = [list(tensor.split(sizes)) for tensor in data.tensors()]
    return [_rebuild(data, iter([leaf[i] for leaf in leaves])) for i in range(len(sizes))]


def _item(data: Any, i: int) -> Any:
    """Row ``i`` of a ``[N, ...]`` tensor or struct, without the leading dimension."""
    if isinstance(data, Tensor):
        return data[i]
    return _rebuild(data, iter([tensor[i] for tensor in data.tensors()]))
