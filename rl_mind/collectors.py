"""Collectors: run an actor in a :class:`~rl_mind.env.VecEnv` and hand back learning data.

- :class:`TransitionCollector`: ``collect(n_steps)`` -> ``Transitions [≤ n_steps·B]``, for
  DQN, DDPG, TD3 and SAC; in next-step reset mode the reset rows are dropped.
- :class:`RolloutCollector`: ``collect(n_steps)`` -> ``Rollout [n_steps, B]``, for A2C and
  PPO; same-step reset mode only.
- :class:`EpisodeCollector`: ``collect(n_episodes)`` -> ``list[Episode]`` (at least
  ``n_episodes``), for REINFORCE; it resets the environment at each call, where the other
  two carry its state over from one call to the next.

Every collector runs the actor under ``torch.no_grad()`` (the loss recomputes what needs
gradients), moves observations to the actor's device, counts the recorded steps in
``.steps``, and reports the returns and lengths of the episodes that ended during the last
``collect`` in ``.episode_returns`` / ``.episode_lengths``.

The per-step loop only calls the actor and the environment and appends gymnasium's numpy
arrays to lists; stacking them, the conversion to tensors and the bookkeeping (dropping
reset rows, episode returns, splitting episodes) happen once per ``collect``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic

import numpy as np
import torch
from torch import Tensor, nn

from rl_mind.core import Action, ActionT, Observation, TensorStruct, _as_int
from rl_mind.data import Episode, Rollout, Transitions
from rl_mind.env import (
    _BOOL,
    _FLOAT32,
    VecEnv,
    _stack_rows,
    _tensor,
    _tree_map,
    _with_final_rows,
)

__all__ = ["EpisodeCollector", "RolloutCollector", "TransitionCollector"]

Policy = Callable[[Observation], ActionT]


def _check_count(name: str, n: int) -> int:
    """``n`` as an int, checked to be a positive one."""
    count = _as_int(n)
    if count is None or count <= 0:
        raise ValueError(f"collect: {name} must be a positive int, got {n!r}")
    return count


def _joined(items: list[Any], keep: np.ndarray | None = None, *, stacked: bool = False) -> Any:
    """Per-step ``[B, ...]`` tensors or structs (actions) joined: concatenated into the
    ``[T*B, ...]`` rows (only the flat rows ``keep`` when given), or ``stacked`` into
    ``[T, B, ...]``; one pass over the fields."""

    def join(column: list[Tensor]) -> Tensor:
        if stacked:
            return torch.stack(column)
        joined = torch.cat(column)
        return joined if keep is None else _take_rows(joined, keep)

    first = items[0]
    if isinstance(first, Tensor):
        return join(items)
    try:
        return type(first)._combine(items, "stack" if stacked else "cat", join)
    except (TypeError, ValueError) as error:  # (items are steps: say so)
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(
            f"the actor's actions of the steps of this collect do not join: {error} (an item "
            f"is a step); the actor must return the same kind of Action, with the same "
            f"shapes, at every step"
        ) from None


def _first_tensor(actor: Any) -> Tensor | None:
    """A parameter (or buffer) of the actor: its ``.device`` follows ``actor.to(...)``."""
    if isinstance(actor, nn.Module):
        for tensor in actor.parameters():
            return tensor
        for buffer in actor.buffers():
            return buffer
    return None


class _EpisodeStats:
    """The return and length of each copy's running episode, and those of the episodes that
    ended during the last call. A call's steps are queued and added up when the statistics
    are read (or when many calls wait): ``collect(1)`` does not pay for statistics nobody
    reads. Queued arrays must not be shared with the data handed to the user."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.nothing_ended = (torch.zeros(0), torch.zeros(0, dtype=torch.long))
        self.queue: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.clear()

    def push(self, reward: np.ndarray, done: np.ndarray, counted: np.ndarray | None) -> None:
        """Queue one call's ``[B]`` or ``[T, B]`` steps (``counted``: the real steps, not
        reset rows; None: all of them)."""
        self.queue.append((reward, done, counted))
        if len(self.queue) > 256:  # (bounds the memory of statistics nobody reads)
            for call in self.queue[:-1]:
                self._add(*call)
            del self.queue[:-1]

    def read(self) -> tuple[Tensor, Tensor]:
        """The returns and lengths of the episodes that ended during the last call, copy by
        copy in time order."""
        if self.queue:
            *earlier, last = self.queue
            for call in earlier:
                self._add(*call)
            copies, returns, lengths = self._add(*last)
            self.queue = []
            self.result = self.nothing_ended
            if copies:
                order = np.argsort(np.concatenate(copies), kind="stable")  # (rows: time order)
                self.result = (
                    torch.from_numpy(np.concatenate(returns)[order].astype(np.float32)),
                    torch.from_numpy(np.concatenate(lengths)[order]),
                )
        return self.result

    def _add(
        self, reward: np.ndarray, done: np.ndarray, counted: np.ndarray | None
    ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """Add a call's steps, step by step; returns the copies, returns and lengths of the
        episodes that end in them, one array of each per step where some end."""
        B = self.num_envs
        reward, done = reward.reshape(-1, B), done.reshape(-1, B)
        real = None if counted is None else counted.reshape(-1, B)
        copies, returns, lengths = [], [], []
        for t in range(len(done)):
            if real is None:
                self.running_return += reward[t]
                self.running_length += 1
                ends = done[t]
            else:
                np.add(self.running_return, reward[t], out=self.running_return, where=real[t])
                self.running_length += real[t]
                ends = done[t] & real[t]
            if not np.count_nonzero(ends):
                continue
            copies.append(np.flatnonzero(ends))
            returns.append(self.running_return[ends])
            lengths.append(self.running_length[ends])
            self.running_return[ends] = 0.0
            self.running_length[ends] = 0
        return copies, returns, lengths

    def clear(self) -> None:
        """Forget everything (the episode collector resets the environment)."""
        self.queue = []
        self.running_return = np.zeros(self.num_envs)
        self.running_length = np.zeros(self.num_envs, np.int64)
        self.result = self.nothing_ended


class _Recording:
    """The steps of one ``collect``: the numpy arrays of each step, in lists, which
    :meth:`finish` stacks into ``[T, B]`` arrays once, after the last step. (The ``VecEnv``
    returns fresh arrays at every step, so the references stay valid.)"""

    def __init__(self, first_obs: Any, first_reset: np.ndarray | None) -> None:
        # the observations (numpy arrays, or dicts of them): the first, then one per step
        self.obs_steps: list[Any] = [first_obs]
        self.reward_steps: list[np.ndarray] = []
        self.terminated_steps: list[np.ndarray] = []
        self.truncated_steps: list[np.ndarray] = []
        self.actions: list[Any] = []
        # same-step mode: (t, mask, rows), the final observations of the copies ended at t
        self.finals: list[tuple[int, np.ndarray, Any]] = []
        # next-step mode: the copies whose first step here is an auto-reset
        self.first_reset = first_reset
        # set by finish(): [T + 1, B, ...] observations, [T, B] rewards and flags
        self.obs: Any = None
        self.reward: np.ndarray
        self.terminated: np.ndarray
        self.truncated: np.ndarray

    @property
    def length(self) -> int:
        """Steps recorded so far."""
        return len(self.reward_steps)

    def ends(self, start: int, stop: int | None = None) -> np.ndarray:
        """``[stop - start, B]`` bool, the ends (terminated or truncated) of steps
        ``start:stop`` (``stop`` None: to the last)."""
        terminated = np.asarray(self.terminated_steps[start:stop], np.bool_)
        return terminated | np.asarray(self.truncated_steps[start:stop], np.bool_)

    def finish(self) -> None:
        """Stack the recorded steps into arrays (once, after the last step)."""
        # (the flags come out bool)
        self.obs = _stack_rows(self.obs_steps)
        self.reward = np.asarray(self.reward_steps)
        self.terminated = np.asarray(self.terminated_steps, np.bool_)
        self.truncated = np.asarray(self.truncated_steps, np.bool_)

    def valid(self, env: VecEnv, done: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Next-step mode: the auto-reset rows (which follow the ends ``done``, and the end
        before the call) are not transitions. Returns ``[T, B]`` bool, False on them, and
        the indices of the other rows in the flat ``[T*B]`` steps; None when there are none.
        """
        if env.same_step_reset:
            return None
        num_envs = done.shape[1]
        first = self.first_reset
        if first is None:  # (after a reset: no copy resets at the first step)
            first = np.zeros(num_envs, np.bool_)
        # a flat row is a reset when the row B before it (its copy, a step earlier) ended
        reset = np.concatenate((first, done.reshape(-1)[:-num_envs]))
        if not np.count_nonzero(reset):
            return None
        valid = np.logical_not(reset)
        return valid.reshape(done.shape), valid.nonzero()[0]

    def next_obs(self) -> Any:
        """``[T, B, ...]`` numpy, the true successors: the observations each step returned,
        with the final observations of same-step auto-resets put back (a copy: the
        returned ``obs`` and ``next_obs`` never share memory)."""
        n = self.length
        next_np = _tree_map(lambda a: a[1 : n + 1].copy(), self.obs)
        if self.finals:  # one masked write per leaf: the rows come in time, then copy order
            where = np.zeros(self.reward.shape, np.bool_)
            for t, mask, _rows in self.finals:
                where[t] = mask

            def put(array: np.ndarray, *rows: np.ndarray) -> None:
                array[where] = np.concatenate(rows)

            _tree_map(put, next_np, *(rows for _t, _mask, rows in self.finals))
        return next_np

    def rollout(self, env: VecEnv) -> Rollout[Any]:
        """The recorded steps as a ``[T, B]`` rollout on the environment's device."""
        n = self.length
        convert = env._convert
        device = None if convert.on_cpu else env.device
        return Rollout._trusted(
            convert(_tree_map(lambda a: a[:n], self.obs)),
            _joined(self.actions, stacked=True),
            _tensor(self.reward, _FLOAT32, device),
            convert(self.next_obs()),
            _tensor(self.terminated, _BOOL, device),
            _tensor(self.truncated, _BOOL, device),
        )


def _flat_rows(array: np.ndarray, n: int, rows: np.ndarray | None) -> np.ndarray:
    """The first ``n`` steps of a ``[T, B, ...]`` array as ``[n*B, ...]`` rows or, when
    given, only the ``rows`` of the whole flattened array (a copy then)."""
    if rows is None:
        return array[:n].reshape(-1, *array.shape[2:])
    return array.reshape(-1, *array.shape[2:]).take(rows, 0)


def _take_rows(data: Any, rows: np.ndarray) -> Any:
    """The ``rows`` (a 1-d int array) of a ``[N, ...]`` tensor or struct (copies)."""

    def take(tensor: Tensor) -> Tensor:
        return tensor.index_select(0, torch.from_numpy(rows).to(tensor.device))

    return take(data) if isinstance(data, Tensor) else data._apply_batched(take)


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
        # the observation to act on next, as gymnasium's numpy arrays (None: reset first),
        # and as a tensor (None: not converted yet)
        self._obs_np: Any = None
        self._obs: Observation | None = None
        self._last_action: Any = None  # (collect(1): the type of an action of no rows)
        # next-step mode: the copies that ended at the last step, which the next one resets
        # (None: none, or same-step mode)
        self._resetting: np.ndarray | None = None
        self._stats = _EpisodeStats(env.num_envs)

    @property
    def episode_returns(self) -> Tensor:
        """``[K]`` returns of the episodes that ended during the last ``collect``."""
        return self._stats.read()[0]

    @property
    def episode_lengths(self) -> Tensor:
        """``[K]`` lengths (steps) of the episodes that ended during the last ``collect``."""
        return self._stats.read()[1]

    def _reset(self) -> Observation:
        self._resetting = None
        self._obs_np = self.env._reset_arrays()
        self._obs = self.env._convert(self._obs_np)
        return self._obs

    def _actor_device(self) -> torch.device | None:
        """Where the actor wants its observations (None: wherever the environment puts them)."""
        probe = self._device_probe
        if probe is None or (probe.is_cpu and self.env._convert.on_cpu):  # (no device object)
            return None
        return None if probe.device == self.env.device else probe.device

    def _run(self, n_steps: int, recording: _Recording | None = None) -> _Recording:
        """``n_steps`` more steps of every copy, recorded in ``recording`` (a new one if
        None; call its ``finish`` after the last step). Per step: the actor, the
        environment and a few list appends, nothing else."""
        env = self.env
        if self._obs_np is None:
            self._reset()
        obs = self._obs if self._obs is not None else env._convert(self._obs_np)
        if recording is None:
            recording = _Recording(self._obs_np, self._resetting)
        step, convert, actor = env._step_arrays, env._convert, self.actor
        device = self._actor_device()
        obs_steps, reward_steps = recording.obs_steps, recording.reward_steps
        terminated_steps, truncated_steps = recording.terminated_steps, recording.truncated_steps
        actions, finals = recording.actions, recording.finals
        obs_np = self._obs_np
        flags = None  # (terminated, truncated) of the last step taken
        start = recording.length
        try:
            with torch.no_grad():
                for t in range(start, start + n_steps):
                    action = actor(obs if device is None else obs.to(device))
                    if not isinstance(action, Action):
                        _not_an_action(action)
                    obs_np, reward, terminated, truncated, final = step(action)
                    flags = terminated, truncated
                    obs_steps.append(obs_np)
                    reward_steps.append(reward)
                    terminated_steps.append(terminated)
                    truncated_steps.append(truncated)
                    actions.append(action)
                    if final is not None:
                        finals.append((t, *final))
                    obs = convert(obs_np)
        except BaseException:
            # act next on what the environment last returned (converted again: an interrupt
            # may have come before its conversion)
            self._obs, self._obs_np = None, obs_np
            self._count_lost(recording)
            raise
        finally:
            self._note_ends(flags)
        self._obs, self._obs_np = obs, obs_np
        return recording

    def _note_ends(self, flags: tuple[np.ndarray, np.ndarray] | None) -> None:
        """After steps whose last one ended the episodes ``flags`` (None: no step taken):
        in next-step mode, the next step resets those copies."""
        if flags is not None and not self.env.same_step_reset:
            self._resetting = flags[0] | flags[1]

    def _count_lost(self, recording: _Recording) -> None:
        """After an error in the middle of a collect (the actor's, an interrupt): the steps
        the environment took are not returned, but the episodes they belong to go on, so
        that the episode statistics count them."""
        # (the steps whose flags were all recorded: an interrupt may fall between appends)
        n = len(recording.truncated_steps)
        if not n:
            return
        done = recording.ends(0, n)
        valid = recording.valid(self.env, done)
        reward = np.asarray(recording.reward_steps[:n])
        self._stats.push(reward, done, None if valid is None else valid[0])


def _not_an_action(action: object) -> None:
    raise TypeError(
        f"the actor must return an Action (e.g. Action(value) or "
        f"StochasticAction(value, log_prob)), got {type(action).__name__}"
    )


class TransitionCollector(_Collector[ActionT]):
    """Steps for off-policy learning: ``collect(n_steps)`` → ``Transitions [≤ n_steps·B]``.

    The environment state is kept across calls, so ``collect(1)`` at every training step is
    the usual pattern. In next-step reset mode the auto-reset rows (which are not
    transitions) are dropped, hence the ``≤``; ``collect(1)`` does not even ask the actor
    for them (the copies that reset ignore their action): the actor is given the
    observations of the other copies only, and must return one action per row it is given
    (as ``actor(obs)`` always should). A step where every copy resets returns no
    transitions.
    """

    def collect(self, n_steps: int) -> Transitions[ActionT]:
        """Run ``n_steps`` steps of every copy; returns the valid transitions (time-major)."""
        n_steps = _check_count("n_steps", n_steps)
        if n_steps == 1:
            return self._collect_one()
        return self._rows(self._run(n_steps))

    def _rows(self, recording: _Recording) -> Transitions[ActionT]:
        """The transitions of a finished ``collect(n)``'s steps."""
        env = self.env
        recording.finish()
        n = recording.length
        reward, terminated = recording.reward, recording.terminated
        done = terminated | recording.truncated
        valid, keep = recording.valid(env, done) or (None, None)  # keep: flat [T*B] rows
        # (without dropped rows the returned rewards are a view of the recording: queue a copy)
        self._stats.push(reward if keep is not None else reward.copy(), done, valid)
        # [T, B] -> [T*B] rows straight from the numpy recording: one op per field (the
        # actions first: they are the actor's, and may not join; then nothing is returned
        # nor counted in .steps, but the episodes went on: the stats have the steps)
        action = _joined(recording.actions, keep)
        self.steps += n * env.num_envs if keep is None else len(keep)
        convert = env._convert
        device = None if convert.on_cpu else env.device
        # the successors: the rows B further in the recording (dropping rows copies anyway),
        # or a fresh copy of the recording's
        if keep is None:
            next_obs, next_rows = recording.next_obs(), None
        else:
            next_obs, next_rows = recording.obs, keep + env.num_envs
        return Transitions._trusted(
            convert(_tree_map(lambda a: _flat_rows(a, n, keep), recording.obs)),
            action,
            _tensor(_flat_rows(reward, n, keep), _FLOAT32, device),
            convert(_tree_map(lambda a: _flat_rows(a, n, next_rows), next_obs)),
            _tensor(_flat_rows(terminated, n, keep), _BOOL, device),
        )

    def _collect_one(self) -> Transitions[ActionT]:
        """``collect(1)``, the usual off-policy pattern, without recording arrays.

        In next-step mode, the copies that ended at the last step only reset at this one:
        they ignore their action and their rows are not transitions. The actor acts for
        the other copies only, so that nothing is computed to be dropped."""
        env = self.env
        if self._obs_np is None:
            self._reset()
        obs_np = self._obs_np
        resetting = self._resetting
        keep = valid = None
        if resetting is not None and np.count_nonzero(resetting):
            valid = np.logical_not(resetting)
            keep = valid.nonzero()[0]
            obs = env._convert(obs_np, keep)
        else:
            obs = self._obs if self._obs is not None else env._convert(obs_np)
        if keep is None or len(keep) or self._last_action is None:
            device = self._actor_device()
            with torch.no_grad():
                action = self.actor(obs if device is None else obs.to(device))
            if not isinstance(action, Action):
                _not_an_action(action)
            self._last_action = action
        else:  # every copy resets: nothing to act for (the action of no rows, of its type)
            action = _take_rows(self._last_action, np.empty(0, np.intp))
        next_np, reward, terminated, truncated, final = env._step_arrays(action, keep)
        self._obs_np, self._obs = next_np, None
        ended = terminated | truncated
        self._stats.push(reward, ended, valid)
        if not env.same_step_reset:
            self._resetting = ended
        if keep is None:
            self.steps += env.num_envs
            # the rewards are queued: the returned ones must not share their memory
            reward = reward.copy()
            if final is None:  # the next call acts on these observations
                next_obs = self._obs = env._convert(next_np)
            else:
                next_obs = env._convert(_with_final_rows(next_np, final))
        else:
            self.steps += len(keep)
            reward, terminated = reward.take(keep), terminated.take(keep)
            next_obs = env._convert(next_np, keep)
        device = None if env._convert.on_cpu else env.device
        return Transitions._trusted(
            obs,
            action,
            _tensor(reward, _FLOAT32, device),
            next_obs,
            _tensor(terminated, _BOOL, device),
        )


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
        n_steps = _check_count("n_steps", n_steps)
        recording = self._run(n_steps)
        recording.finish()
        self._stats.push(recording.reward.copy(), recording.terminated | recording.truncated, None)
        # (the actor's actions may not join: then the stats alone have the steps)
        rollout: Rollout[ActionT] = recording.rollout(self.env)
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

    ``max_steps`` (default 100,000) bounds the environment steps per copy in one call: an environment
    that never ends raises a ``RuntimeError`` instead of running forever.
    """

    def __init__(self, env: VecEnv, actor: Policy[ActionT], max_steps: int = 100_000) -> None:
        super().__init__(env, actor)
        self.max_steps = _check_count("max_steps", max_steps)

    def collect(self, n_episodes: int) -> list[Episode[ActionT]]:
        """Play until every copy finished ``ceil(n_episodes / B)`` episodes."""
        n_episodes = _check_count("n_episodes", n_episodes)
        B = self.env.num_envs
        quota = math.ceil(n_episodes / B)
        self._stats.clear()
        self._reset()  # episodes from the current actor only
        finished = np.zeros(B, dtype=np.int64)
        # step in chunks of 8 and count the finished episodes after each chunk: a few steps
        # past the quota cost less than a check at every step
        recording = self._run(min(8, self.max_steps))
        counted_until = 0
        while True:
            finished += recording.ends(counted_until).sum(0)
            counted_until = recording.length
            if (finished >= quota).all():
                break
            if recording.length >= self.max_steps:
                raise RuntimeError(
                    f"EpisodeCollector: after {recording.length} steps per copy, only "
                    f"{int((finished >= quota).sum())} of {B} copies finished their "
                    f"{quota} episode(s); does {self.env.env_name!r} ever end? Add a time "
                    f"limit (gymnasium.wrappers.TimeLimit) or raise max_steps"
                )
            recording = self._run(min(8, self.max_steps - recording.length), recording)
        self._obs_np = self._obs = None  # the next call resets anyway
        recording.finish()
        terminated = recording.terminated
        ended = terminated | recording.truncated
        valid, _rows = recording.valid(self.env, ended) or (None, None)
        done = ended if valid is None else ended & valid
        # keep the steps of each copy's first `quota` episodes
        episode_index = done.cumsum(0) - done  # episode number of each step
        keep = episode_index < quota
        if valid is not None:
            keep &= valid
        self._stats.push(recording.reward, done & keep, keep)
        steps = recording.rollout(self.env).flatten()  # (the actor's actions may not join)
        self.steps += int(keep.sum())
        # split every copy's kept steps into its episodes, all copies at once: rows are
        # taken in copy-then-time order, where each copy's `quota` episodes are contiguous
        ends_np = done & keep
        lengths = np.diff(keep.T.cumsum(1)[ends_np.T].reshape(B, quota), axis=1, prepend=0)
        sizes = lengths.ravel().tolist()
        # the kept steps and the ends, as rows t * B + b of the flat steps, copy by copy
        copy_index, time_index = np.nonzero(keep.T)
        kept = time_index * B + copy_index
        end_copy, end_time = np.nonzero(ends_np.T)
        obs_parts = _split(_take_rows(steps.obs, kept), sizes)
        action_parts = _split(_take_rows(steps.action, kept), sizes)
        reward_parts = _take_rows(steps.reward, kept).split(sizes)
        final_obs = _unbind(_take_rows(steps.next_obs, end_time * B + end_copy))
        ended_by_termination = terminated[end_time, end_copy].tolist()
        parts = zip(obs_parts, action_parts, reward_parts, final_obs, ended_by_termination)
        return [Episode._trusted(*episode) for episode in parts]


def _pieces(data: Any, cut: Callable[[Tensor], Sequence[Tensor]], count: int) -> list[Any]:
    """``cut`` (into ``count`` pieces) applied to a tensor, or to every batched tensor of a
    struct (nested ones included) and the pieces put back together: ``count`` structs,
    each carrying the unbatched fields along."""
    if isinstance(data, Tensor):
        return list(cut(data))
    columns: list[Iterable[Any]] = []
    for name, batched in data._fields():
        value = getattr(data, name)
        if batched and isinstance(value, Tensor | TensorStruct):
            columns.append(_pieces(value, cut, count))
        else:
            columns.append(itertools.repeat(value, count))
    struct_type = type(data)
    return [struct_type._trusted(*values) for values in zip(*columns)]


def _split(data: Any, sizes: list[int]) -> list[Any]:
    """Split a ``[N, ...]`` tensor or struct into consecutive pieces of ``sizes`` rows."""
    return _pieces(data, lambda tensor: tensor.split(sizes), len(sizes))


def _unbind(data: Any) -> list[Any]:
    """The rows of a ``[N, ...]`` tensor or struct, without the leading dimension."""
    return _pieces(data, lambda tensor: tensor.unbind(0), len(data))
