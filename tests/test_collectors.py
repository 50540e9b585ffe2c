"""rl_mind.collectors: invariants on a counter environment whose observation says where it
is (copy tag, episode k, step, ending flag), the EpisodeCollector's unbiasedness, episode
statistics across calls, and bad input."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections import defaultdict
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from rl_mind.collectors import EpisodeCollector, RolloutCollector, TransitionCollector
from rl_mind.core import Action, Actor, StochasticAction, TensorStruct, unbatched
from rl_mind.data import Episode, Rollout, Transitions
from rl_mind.env import VecEnv
from tests.toy_envs import (
    COUNTER_ID,
    ENDLESS_ID,
    FLAG_RUNNING,
    FLAG_TERMINATED,
    FLAG_TRUNCATED,
    GEOMETRIC_ID,
    ConstantActor,
    CounterActor,
    decode,
    policy_action,
)

OBS_KINDS = ["box", "discrete", "dict"]
SEED = 10
# many collect(1) calls (the off-policy pattern) between longer ones
CALLS = [3, 1, 1, 5, 1, 2, 7, 1] + [1] * 12 + [4]


def counter(
    num_envs: int, obs_kind: str, same_step_reset: bool, asynchronous: bool = False
) -> VecEnv:
    return VecEnv(
        COUNTER_ID,
        num_envs,
        seed=SEED,
        same_step_reset=same_step_reset,
        asynchronous=asynchronous,
        obs_kind=obs_kind,
    )


def check_step_rows(
    code: Tensor, next_code: Tensor, action: Tensor, reward: Tensor, terminated: Tensor
) -> None:
    """Row-wise invariants of recorded steps ``[..., 4]`` codes of obs and next_obs."""
    # next_obs is the true successor of obs: same copy, same episode, next step (this also
    # rules out a reset row, whose obs and next_obs are the same first observation)
    assert torch.equal(next_code[..., :2], code[..., :2])
    assert torch.equal(next_code[..., 2], code[..., 2] + 1)
    assert torch.equal(action, policy_action(code))
    assert torch.equal(reward, (action + 1).float())
    assert torch.equal(terminated, next_code[..., 3] == FLAG_TERMINATED)


class EpisodeBook:
    """What the test has seen of each (tag, k) episode, to recompute the statistics."""

    def __init__(self) -> None:
        self.returns: dict[tuple[int, int], float] = defaultdict(float)
        self.last: dict[int, tuple[int, int, int]] = {}  # tag -> (k, step, flag) of last next_obs

    def record(self, code: Tensor, next_code: Tensor, reward: Tensor) -> list[tuple[int, float]]:
        """Rows in time order; checks continuity per copy; returns the (length, return) of
        the episodes that ended in these rows."""
        ended = []
        for (tag, k, step, _), (_, _, next_step, flag), r in zip(
            code.tolist(), next_code.tolist(), reward.tolist()
        ):
            previous = self.last.get(tag)
            if previous is None:
                assert (k, step) == (0, 0), "the first recorded step must start the first episode"
            elif previous[2] == FLAG_RUNNING:
                assert (k, step) == (previous[0], previous[1]), "a step was lost or repeated"
            else:
                assert (k, step) == (previous[0] + 1, 0), "an episode must follow the last one"
            self.last[tag] = (k, next_step, flag)
            self.returns[tag, k] += r
            if flag != FLAG_RUNNING:
                ended.append((next_step, self.returns[tag, k]))
        return ended


def stats(collector) -> list[tuple[int, float]]:
    assert collector.episode_returns.shape == collector.episode_lengths.shape
    return sorted(zip(collector.episode_lengths.tolist(), collector.episode_returns.tolist()))


# ---------------------------------------------------------------------- TransitionCollector
def run_transition_collector(env: VecEnv) -> None:
    actor = CounterActor()
    collector = TransitionCollector(env, actor)
    book = EpisodeBook()
    B = env.num_envs
    total = total_ended = 0
    for i, n in enumerate(CALLS):
        data = collector.collect(n)
        assert isinstance(data, Transitions)
        code, next_code = decode(data.obs), decode(data.next_obs)
        check_step_rows(code, next_code, data.action.value, data.reward, data.terminated)
        ended = book.record(code, next_code, data.reward)
        if i % 3 != 1:  # statistics read after some calls only: still the last call's
            assert stats(collector) == sorted(ended)
        if env.same_step_reset:
            assert len(data) == n * B
        else:
            assert n * B - len(data) <= B * ((n + 1) // 2)  # reset rows only
        total += len(data)
        total_ended += len(ended)
        assert collector.steps == total
    if env.same_step_reset:
        assert total == sum(CALLS) * B
    else:  # one reset row after each episode end, except ends at the very last step
        assert sum(CALLS) * B - total_ended <= total <= sum(CALLS) * B - total_ended + B
    assert total_ended >= 10
    assert actor.calls == sum(CALLS) and actor.calls_with_grad == 0


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
@pytest.mark.parametrize("obs_kind", OBS_KINDS)
def test_transition_collector_invariants(obs_kind, same_step_reset):
    with counter(3, obs_kind, same_step_reset) as env:
        run_transition_collector(env)


def test_transition_collector_invariants_with_many_copies():
    # (from 17 copies on, collect(1) looks for the rows to keep without counting first)
    with counter(20, "box", same_step_reset=False) as env:
        run_transition_collector(env)


@pytest.mark.parametrize(
    ("obs_kind", "same_step_reset"), [("dict", False), ("box", True)], ids=["dict-next", "box-same"]
)
def test_transition_collector_invariants_async(obs_kind, same_step_reset):
    with counter(2, obs_kind, same_step_reset, asynchronous=True) as env:
        run_transition_collector(env)


class CounterLogProbActor(Actor[StochasticAction]):
    """``CounterActor``'s actions with a log-probability (a two-field action)."""

    def forward(self, obs: Tensor) -> StochasticAction:
        action = policy_action(decode(obs))
        return StochasticAction(action, -action.float() / 8)


def all_tensors(data: Any) -> list[Tensor]:
    """The tensors of a struct, depth first, unbatched fields included."""
    if isinstance(data, Tensor):
        return [data]
    return [t for field in dataclasses.fields(data) for t in all_tensors(getattr(data, field.name))]


def test_transition_collector_on_native_cartpole_drops_the_reset_rows():
    with VecEnv("CartPole-v1", 4, seed=0) as env:
        assert env.vectorization_mode == "vector_entry_point"
        collector = TransitionCollector(env, ConstantActor())  # always push left: short episodes
        data = collector.collect(40)
        assert collector.steps == len(data) < 40 * 4
        # a terminated transition ends on the final state (out of bounds), never on a reset state
        final = data.next_obs[data.terminated]
        assert len(final) > 0
        assert ((final[:, 0].abs() > 2.4) | (final[:, 2].abs() > 0.2095)).all()
        # and no transition starts from a terminal state
        assert ((data.obs[:, 0].abs() <= 2.4) & (data.obs[:, 2].abs() <= 0.2095)).all()
        assert torch.equal(data.reward, torch.ones(len(data)))  # reset rows have reward 0


@pytest.mark.parametrize(("num_envs", "n_steps"), [(4, 40), (20, 1)])
def test_native_cartpole_transitions_are_true_successors(num_envs, n_steps):
    # CartPole returns column-major observations, whose rows are taken through the
    # transpose; its Euler step moves the cart by 0.02 times its velocity: x' = x + 0.02 v
    with VecEnv("CartPole-v1", num_envs, seed=0) as env:
        collector = TransitionCollector(env, ConstantActor())
        parts = [collector.collect(n_steps) for _ in range(40 // n_steps)]
        data = Transitions.cat(parts)
        assert collector.steps == len(data) < 40 * num_envs  # some reset rows were dropped
        expected = data.obs[:, 0] + 0.02 * data.obs[:, 1]
        assert torch.allclose(data.next_obs[:, 0], expected, atol=1e-6)
        assert ((data.obs[:, 0].abs() <= 2.4) & (data.obs[:, 2].abs() <= 0.2095)).all()


class WatchingActor(CounterActor):
    """A ``CounterActor`` that keeps the decoded observations of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Tensor] = []

    def forward(self, obs: Tensor | TensorStruct) -> Action:
        self.seen.append(decode(obs))
        return super().forward(obs)


@pytest.mark.parametrize("obs_kind", ["box", "dict"])
def test_collect_one_acts_for_every_copy_and_drops_the_reset_rows(obs_kind):
    # next-step mode: a copy that ended at the last step only resets at this one (it
    # ignores its action, and its row is not a transition): the actor still acts for it,
    # as for every copy, and its row is dropped
    with counter(3, obs_kind, same_step_reset=False) as env:
        actor = WatchingActor()
        collector = TransitionCollector(env, actor)
        sizes = []
        for _ in range(60):
            calls = actor.calls
            data = collector.collect(1)
            sizes.append(len(data))
            assert actor.calls == calls + 1
            seen = actor.seen[-1]
            assert len(seen) == 3  # every copy, the resetting ones included
            # the recorded rows are the seen rows of the copies that did not reset, and
            # never start from an ended episode's last state
            running = seen[:, 3] == FLAG_RUNNING
            assert torch.equal(decode(data.obs), seen[running])
            check_step_rows(
                decode(data.obs),
                decode(data.next_obs),
                data.action.value,
                data.reward,
                data.terminated,
            )
        assert min(sizes) < 3 and max(sizes) == 3  # some steps left copies out
        assert collector.steps == sum(sizes)


class StochasticZeros(Actor[StochasticAction]):
    def forward(self, obs: Tensor) -> StochasticAction:
        return StochasticAction(torch.zeros(len(obs), dtype=torch.long), torch.zeros(len(obs)))


def test_collect_one_on_a_step_where_every_copy_resets():
    # one copy: the step after each end only resets it; no transition, and the empty
    # batch still has the actor's action type
    with VecEnv("CartPole-v1", 1, seed=0) as env:
        actor = StochasticZeros()
        collector = TransitionCollector(env, actor)
        empty = 0
        for _ in range(60):
            data = collector.collect(1)
            assert isinstance(data.action, StochasticAction)
            if len(data) == 0:
                empty += 1
                assert data.obs.shape == data.next_obs.shape == (0, 4)
                assert data.action.value.shape == data.action.log_prob.shape == (0,)
                assert data.action.value.dtype == torch.long
                assert data.reward.shape == data.terminated.shape == (0,)
        assert empty >= 3  # pushing left ends CartPole's episodes in about ten steps
        assert collector.steps == 60 - empty
        # the actor acted for the resetting copy too: one call per step, of one row
        calls = []
        actor.register_forward_hook(lambda module, args, out: calls.append(len(args[0])))
        while len(collector.collect(1)) > 0:
            pass
        assert calls[-1] == 1


class FailingCounterActor(CounterActor):
    """CounterActor that raises at its call ``fail_at``."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at

    def forward(self, obs: Tensor | TensorStruct) -> Action:
        if self.calls + 1 == self.fail_at:
            self.calls += 1
            raise RuntimeError("the actor failed")
        return super().forward(obs)


@pytest.mark.parametrize("obs_kind", OBS_KINDS)
@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
def test_collect_one_after_a_failed_call_goes_on_from_the_same_observation(
    obs_kind, same_step_reset
):
    # each collect(1) prepares what the next one acts on: a call whose actor raised (the
    # environment did not step) leaves it as it was, and the data goes on as in a run
    # without the failure; so it does after collect(n) in between
    runs = []
    for fail_at in (None, 7):
        with counter(4, obs_kind, same_step_reset) as env:
            actor = CounterActor() if fail_at is None else FailingCounterActor(fail_at)
            collector = TransitionCollector(env, actor)
            data = []
            for call in range(40):
                if fail_at is not None and call == fail_at - 1:
                    with pytest.raises(RuntimeError, match="the actor failed"):
                        collector.collect(1)
                data.append(collector.collect(3 if call in (12, 13, 25) else 1))
            runs.append(data)
    for clean, failed in zip(*runs, strict=True):
        assert torch.equal(decode(clean.obs), decode(failed.obs))
        assert torch.equal(decode(clean.next_obs), decode(failed.next_obs))
        assert torch.equal(clean.action.value, failed.action.value)
        assert torch.equal(clean.terminated, failed.terminated)
    every = Transitions.cat(runs[1])
    check_step_rows(
        decode(every.obs),
        decode(every.next_obs),
        every.action.value,
        every.reward,
        every.terminated,
    )


def test_an_actor_that_returns_one_action_per_copy_works_across_resets():
    # e.g. an epsilon-greedy actor that draws randint(n_actions, (num_envs,)): the copies
    # that reset ignore their action, and their rows are dropped
    class ThreeActions(Actor[Action]):
        def forward(self, obs: Tensor) -> Action:
            return Action(torch.zeros(3, dtype=torch.long))  # one per copy, whatever obs is

    with counter(3, "box", same_step_reset=False) as env:
        collector = TransitionCollector(env, ThreeActions())
        sizes = [len(collector.collect(1)) for _ in range(40)]
        assert min(sizes) < 3 and collector.steps == sum(sizes)


class MetaActions(Actor[Action]):
    """An actor whose actions are on the meta device (shapes, no values)."""

    def forward(self, obs: Tensor) -> Action:
        return Action(torch.zeros(len(obs), dtype=torch.long, device="meta"))


@pytest.mark.parametrize(
    ("collector_type", "n"),
    [
        (TransitionCollector, 1),
        (TransitionCollector, 4),
        (RolloutCollector, 4),
        (EpisodeCollector, 2),
    ],
)
def test_actions_on_the_meta_device_get_the_environment_s_clear_error(collector_type, n):
    same_step_reset = collector_type is RolloutCollector
    with (
        counter(3, "box", same_step_reset=same_step_reset) as env,
        pytest.raises(ValueError, match="actions are on the meta device, which holds no"),
    ):
        collector_type(env, MetaActions()).collect(n)


# ---------------------------------------------------------------------- RolloutCollector
def check_rollout_sequence(
    rollouts: list[Rollout[Action]], B: int
) -> list[list[tuple[int, float]]]:
    """Checks the rollouts as one [T, B] sequence; the episodes ended in each rollout."""
    book = EpisodeBook()
    ended_per_call = []
    previous_next: Tensor | None = None
    previous_done: Tensor | None = None
    for rollout in rollouts:
        code, next_code = decode(rollout.obs), decode(rollout.next_obs)
        T = code.shape[0]
        assert code.shape == (T, B, 4) and rollout.reward.shape == (T, B)
        assert rollout.terminated.shape == rollout.truncated.shape == (T, B)
        assert torch.equal(code[..., 0], torch.arange(SEED, SEED + B).expand(T, B))  # copy b
        check_step_rows(code, next_code, rollout.action.value, rollout.reward, rollout.terminated)
        assert torch.equal(rollout.truncated, next_code[..., 3] == FLAG_TRUNCATED)
        # obs[t + 1] continues next_obs[t], or starts the next episode after a done step
        # (across collect calls too: the state carries over)
        nexts = (
            [previous_next] + list(next_code[:-1])
            if previous_next is not None
            else list(next_code[:-1])
        )
        dones = (
            [previous_done] + list(rollout.done[:-1])
            if previous_done is not None
            else list(rollout.done[:-1])
        )
        starts = code if previous_next is not None else code[1:]
        for start, before, done in zip(starts, nexts, dones):
            assert torch.equal(start[~done], before[~done])
            assert torch.equal(start[done, 1], before[done, 1] + 1)
            assert (start[done, 2] == 0).all()
        previous_next, previous_done = next_code[-1], rollout.done[-1]
        # time-major rows for the per-copy book
        ended_per_call.append(
            book.record(code.reshape(-1, 4), next_code.reshape(-1, 4), rollout.reward.reshape(-1))
        )
    return ended_per_call


def run_rollout_collector(env: VecEnv) -> None:
    actor = CounterActor()
    collector = RolloutCollector(env, actor)
    rollouts = []
    reported = []
    for i, n in enumerate(CALLS):
        rollout = collector.collect(n)
        assert isinstance(rollout, Rollout)
        assert rollout.reward.shape == (n, env.num_envs)
        rollouts.append(rollout)
        if i % 3 != 1:  # statistics read after some calls only: still the last call's
            reported.append((i, stats(collector)))
    ended = check_rollout_sequence(rollouts, env.num_envs)
    assert reported == [(i, sorted(ended[i])) for i, _ in reported]
    assert sum(len(e) for e in ended) >= 10
    assert collector.steps == sum(CALLS) * env.num_envs
    assert actor.calls_with_grad == 0


@pytest.mark.parametrize("obs_kind", OBS_KINDS)
def test_rollout_collector_invariants(obs_kind):
    with counter(3, obs_kind, same_step_reset=True) as env:
        run_rollout_collector(env)


def test_rollout_collector_invariants_async():
    with counter(2, "discrete", same_step_reset=True, asynchronous=True) as env:
        run_rollout_collector(env)


def test_rollout_collector_on_same_step_cartpole():
    with VecEnv("CartPole-v1", 3, seed=0, same_step_reset=True) as env:
        assert env.vectorization_mode == "sync"
        rollout = RolloutCollector(env, ConstantActor()).collect(30)
        assert rollout.obs.shape == (30, 3, 4)
        done = rollout.done[:-1]
        assert done.any()
        final, first = rollout.next_obs[:-1][done], rollout.obs[1:][done]
        assert ((final[:, 0].abs() > 2.4) | (final[:, 2].abs() > 0.2095)).all()
        assert (first.abs() <= 0.05).all()  # the next row starts a fresh episode
        assert torch.equal(rollout.obs[1:][~done], rollout.next_obs[:-1][~done])
        flat = rollout.flatten()
        assert flat.obs.shape == (90, 4) and torch.equal(flat.obs[3:6], rollout.obs[1])


# ---------------------------------------------------------------------- EpisodeCollector
def check_episode(ep: Episode[Action]) -> tuple[int, int]:
    """An episode is whole: steps 0..T-1 of one (tag, k), then its final observation."""
    code = decode(ep.obs)
    T = len(ep)
    assert code.shape == (T, 4) and T >= 1
    assert (code[:, :2] == code[0, :2]).all()
    assert torch.equal(code[:, 2], torch.arange(T))
    assert (code[:, 3] == FLAG_RUNNING).all()
    final = decode(ep.final_obs)
    assert final.shape == (4,)
    assert torch.equal(final[:2], code[0, :2]) and int(final[2]) == T
    assert int(final[3]) == (FLAG_TERMINATED if ep.terminated else FLAG_TRUNCATED)
    assert isinstance(ep.terminated, bool)
    assert torch.equal(ep.action.value, policy_action(code))
    assert torch.equal(ep.reward, (ep.action.value + 1).float())
    assert ep.cumulated_reward == float(ep.reward.sum())
    assert torch.equal(decode(ep.all_obs), torch.cat([code, final[None]]))
    return int(code[0, 0]), int(code[0, 1])


def run_episode_collector(env: VecEnv) -> None:
    actor = CounterActor()
    collector = EpisodeCollector(env, actor)
    B = env.num_envs
    total = 0
    kinds = set()
    for n in [1, 4, 3, 7]:
        episodes = collector.collect(n)
        quota = -(-n // B)
        assert len(episodes) == quota * B >= n
        where = [check_episode(ep) for ep in episodes]
        # copy by copy, each copy's episodes in the order they were played
        tags = [tag for tag, _ in where]
        assert tags == sorted(tags) and sorted(set(tags)) == list(range(SEED, SEED + B))
        for b in range(B):
            ks = [k for tag, k in where if tag == SEED + b]
            assert len(ks) == quota and ks == list(range(ks[0], ks[0] + quota))
        lengths = [len(ep) for ep in episodes]
        total += sum(lengths)
        assert collector.steps == total
        assert collector.episode_lengths.tolist() == lengths
        assert collector.episode_returns.tolist() == [ep.cumulated_reward for ep in episodes]
        kinds |= {ep.terminated for ep in episodes}
    assert kinds == {True, False}
    assert actor.calls_with_grad == 0


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
@pytest.mark.parametrize("obs_kind", OBS_KINDS)
def test_episode_collector_invariants(obs_kind, same_step_reset):
    with counter(3, obs_kind, same_step_reset) as env:
        run_episode_collector(env)


def test_episode_collector_invariants_async():
    with counter(2, "dict", same_step_reset=False, asynchronous=True) as env:
        run_episode_collector(env)


@pytest.mark.parametrize(("num_envs", "n_calls", "n_episodes"), [(1, 1, 300), (16, 40, 1)])
def test_episode_collector_does_not_favour_short_episodes(num_envs, n_calls, n_episodes):
    # episode lengths are geometric with mean 30 (standard deviation ~29.5). With 16 copies a
    # collector that keeps the first episode to finish returns ~2-step episodes; one that
    # keeps every episode finished while waiting for the slowest copy is ~20% short.
    p = 1 / 30
    with VecEnv(GEOMETRIC_ID, num_envs, seed=0, p=p) as env:
        collector = EpisodeCollector(env, ConstantActor())
        lengths = []
        for _ in range(n_calls):
            episodes = collector.collect(n_episodes)
            lengths += [len(ep) for ep in episodes]
    mean = sum(lengths) / len(lengths)
    standard_error = ((1 - p) ** 0.5 / p) / len(lengths) ** 0.5  # 1.2 to 1.7
    assert abs(mean - 1 / p) < 3.5 * standard_error, mean
    assert len(lengths) == n_calls * max(n_episodes, num_envs)


def test_episode_collector_raises_on_an_environment_that_never_ends():
    with VecEnv(ENDLESS_ID, 2, seed=0) as env:
        collector = EpisodeCollector(env, ConstantActor(), max_steps=50)
        with pytest.raises(RuntimeError, match=r"after 50 steps per copy.*ever end.*max_steps"):
            collector.collect(1)


@dataclasses.dataclass(frozen=True)
class ScaledAction(StochasticAction):
    """An action with a field that has no batch dimension (a temperature, a scale...)."""

    scale: Tensor = unbatched()


class ScaledActor(Actor[ScaledAction]):
    def forward(self, obs: Tensor) -> ScaledAction:
        action = policy_action(decode(obs))
        return ScaledAction(action, torch.zeros(len(obs)), torch.tensor([2.0, 3.0]))


@pytest.mark.parametrize("kind", ["transitions", "rollout", "episodes"])
def test_actions_with_an_unbatched_field(kind):
    # the unbatched field is carried along, never split, indexed or concatenated
    with counter(3, "box", same_step_reset=kind == "rollout") as env:
        if kind == "episodes":
            episodes = EpisodeCollector(env, ScaledActor()).collect(5)
            actions = [episode.action for episode in episodes]
            assert [len(a) for a in actions] == [len(episode) for episode in episodes]
        elif kind == "rollout":
            actions = [RolloutCollector(env, ScaledActor()).collect(6).action]
            assert actions[0].value.shape == (6, 3)
        else:
            collector = TransitionCollector(env, ScaledActor())
            actions = [collector.collect(6).action, collector.collect(1).action]
    for action in actions:
        assert isinstance(action, ScaledAction)
        assert torch.equal(action.scale, torch.tensor([2.0, 3.0]))


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("n", [0, -1, 2.5, True])
def test_collect_needs_a_positive_count(n):
    with counter(2, "box", same_step_reset=True) as env:
        for collector in (
            TransitionCollector(env, CounterActor()),
            RolloutCollector(env, CounterActor()),
            EpisodeCollector(env, CounterActor()),
        ):
            with pytest.raises(ValueError, match="must be a positive int"):
                collector.collect(n)
        with pytest.raises(ValueError, match="max_steps must be a positive int"):
            EpisodeCollector(env, CounterActor(), max_steps=0)


def test_rollout_collector_refuses_a_next_step_env_and_says_how_to_build_one():
    with (
        counter(2, "box", same_step_reset=False) as env,
        pytest.raises(
            ValueError, match=r"same_step_reset=True.*VecEnv\('rl_mind_test/Counter-v0', 2"
        ),
    ):
        RolloutCollector(env, CounterActor())


def test_collectors_check_their_env_and_actor():
    with pytest.raises(TypeError, match="expected a rl_mind VecEnv"):
        TransitionCollector("CartPole-v1", CounterActor())  # type: ignore[arg-type]
    with counter(2, "box", same_step_reset=False) as env:
        with pytest.raises(TypeError, match="expected an Actor"):
            TransitionCollector(env, 3)  # type: ignore[arg-type]

        def bare(obs: Tensor | TensorStruct) -> Tensor:
            return torch.zeros(2, dtype=torch.long)

        with pytest.raises(TypeError, match=r"must return an Action.*got Tensor"):
            TransitionCollector(env, bare).collect(1)  # type: ignore[arg-type]


class HalfPrecisionLeft(Actor[StochasticAction]):
    """Pushes CartPole left, with a bfloat16 log-probability (a dtype numpy lacks)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, dtype=torch.bfloat16))

    def forward(self, obs: Tensor) -> StochasticAction:
        left = torch.zeros(len(obs), dtype=torch.long)
        return StochasticAction(left, self.weight.expand(len(obs)) * 0.5)


@pytest.mark.parametrize("n_steps", [1, 30])
def test_reset_rows_are_dropped_from_actions_of_any_dtype(n_steps):
    with VecEnv("CartPole-v1", 3, seed=0) as env:
        collector = TransitionCollector(env, HalfPrecisionLeft())
        data = Transitions.cat([collector.collect(n_steps) for _ in range(30 // n_steps)])
        assert len(data) < 90  # (reset rows were dropped)
        assert data.action.log_prob.dtype == torch.bfloat16
        assert torch.equal(
            data.action.log_prob, torch.full((len(data),), 0.5, dtype=torch.bfloat16)
        )


class WanderingLogProb(Actor[StochasticAction]):
    """A faulty actor: its log-probabilities change shape from one step to the next."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, obs: Tensor) -> StochasticAction:
        self.calls += 1
        log_prob = torch.zeros(len(obs), *([1] if self.calls % 2 else []))
        return StochasticAction(torch.zeros(len(obs), dtype=torch.long), log_prob)


class FaultyLeft(Actor[Action]):
    """Pushes CartPole left, except at its call ``fault_at``: there it raises (``"error"``)
    or returns a StochasticAction among its plain Actions (``"type"``)."""

    def __init__(self, fault: str | None = None, fault_at: int = 4) -> None:
        super().__init__()
        self.fault, self.fault_at, self.calls = fault, fault_at, 0

    def forward(self, obs: Tensor) -> Action:
        self.calls += 1
        left = torch.zeros(len(obs), dtype=torch.long)
        if self.calls == self.fault_at and self.fault == "error":
            raise RuntimeError("the actor failed")
        if self.calls == self.fault_at and self.fault == "type":
            return StochasticAction(left, torch.zeros(len(obs)))
        return Action(left)


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
@pytest.mark.parametrize("fault", ["shape", "type"])
def test_actions_that_do_not_join_get_a_clear_error_and_count_no_steps(same_step_reset, fault):
    with VecEnv("CartPole-v1", 2, seed=0, same_step_reset=same_step_reset) as env:
        collector_type = RolloutCollector if same_step_reset else TransitionCollector
        if fault == "shape":
            actor: Actor[Any] = WanderingLogProb()
            error, message = ValueError, r"field 'log_prob' has incompatible shapes"
        else:
            actor = FaultyLeft("type", fault_at=2)
            error, message = TypeError, r"item 0 is a Action and item 1 is a StochasticAction"
        collector = collector_type(env, actor)
        with pytest.raises(error, match=rf"do not join: .*{message}.*same kind of Action"):
            collector.collect(4)
        assert collector.steps == 0  # nothing returned, nothing counted


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
@pytest.mark.parametrize("fault", ["error", "type"])
def test_a_failed_collect_leaves_the_episode_statistics_right(same_step_reset, fault):
    """The environment went on during a collect that failed (its actor raised at the 4th
    step, or its actions do not join after the 6th): the statistics of the next collect are
    those of a run that collected the same steps without failing."""
    collector_type = RolloutCollector if same_step_reset else TransitionCollector
    done_before_fault = {"error": 3, "type": 6}[fault]
    reports, observations = [], []
    for actor, first in ((FaultyLeft(fault), 6), (FaultyLeft(), done_before_fault)):
        with VecEnv("CartPole-v1", 2, seed=0, same_step_reset=same_step_reset) as env:
            collector = collector_type(env, actor)
            if actor.fault is None:
                collector.collect(first)
            else:
                with pytest.raises((RuntimeError, TypeError)):
                    collector.collect(first)
            obs = collector.collect(30).obs  # (from the last observation of the failed call)
            reports.append((collector.episode_returns.tolist(), collector.episode_lengths.tolist()))
            observations.append(obs)
    assert len(reports[1][1]) >= 4  # (episodes of about 10 steps ended)
    assert reports[0] == reports[1]
    assert torch.equal(observations[0], observations[1])


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_collect_leaves_the_garbage_collector_as_it_found_it(enabled):
    """After a collect, even one that failed, the cyclic garbage collector is on only if it
    was on before."""
    was_enabled = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with counter(2, "box", same_step_reset=True) as env:
            RolloutCollector(env, CounterActor()).collect(3)
            assert gc.isenabled() is enabled

            def bare(obs: Tensor | TensorStruct) -> Tensor:
                return torch.zeros(2, dtype=torch.long)

            with pytest.raises(TypeError, match="must return an Action"):
                RolloutCollector(env, bare).collect(3)  # type: ignore[arg-type]
            assert gc.isenabled() is enabled
    finally:
        gc.enable() if was_enabled else gc.disable()


@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
def test_episode_statistics_after_hundreds_of_unread_collect_one_calls(same_step_reset):
    # statistics nobody reads are folded away in bulk: the report stays the last call's
    with counter(2, "box", same_step_reset) as env:
        collector = TransitionCollector(env, CounterActor())
        book = EpisodeBook()
        for i in range(600):
            data = collector.collect(1)
            ended = book.record(decode(data.obs), decode(data.next_obs), data.reward)
            if i in (299, 598, 599):
                assert stats(collector) == sorted(ended)
        assert ended or stats(collector) == []


@pytest.mark.parametrize("n_steps", [1, 40])
def test_changing_the_returned_rewards_in_place_leaves_the_statistics_alone(n_steps):
    # CartPole's native vector env returns float32 rewards, which become tensors without a
    # copy: the statistics must keep their own
    def returns(scale: bool) -> list[float]:
        with VecEnv("CartPole-v1", 4, seed=0) as env:
            collector = TransitionCollector(env, ConstantActor())
            ended: list[float] = []
            for _ in range(80 // n_steps):
                data = collector.collect(n_steps)
                if scale:
                    data.reward.mul_(100.0)
                ended += collector.episode_returns.tolist()
            return ended

    assert returns(scale=True) == returns(scale=False) != []


def test_changing_a_rollout_in_place_leaves_the_statistics_alone():
    with VecEnv("CartPole-v1", 3, seed=0, same_step_reset=True) as env:
        collector = RolloutCollector(env, ConstantActor())
        rollout = collector.collect(30)
        rollout.reward.mul_(-1.0)
        rollout.terminated.zero_()
        assert collector.episode_returns.tolist() and (collector.episode_returns > 0).all()


class GpuCounterActor(Actor[StochasticAction]):
    """``CounterActor``'s actions, computed on the GPU and returned there (with a log-prob)."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1, device="cuda"))
        self.devices: set[str] = set()

    def forward(self, obs: Tensor | TensorStruct) -> StochasticAction:
        self.devices.add(obs.device.type)
        action = policy_action(decode(obs))
        return StochasticAction(action, torch.zeros(len(action), device="cuda") + self.anchor)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("same_step_reset", [False, True], ids=["next-step", "same-step"])
def test_an_actor_on_a_gpu_with_the_environment_on_the_cpu(same_step_reset):
    # the actions stay where the actor put them, even where reset rows are dropped
    actor = GpuCounterActor()
    with counter(3, "box", same_step_reset) as env:
        collector = TransitionCollector(env, actor)
        for n in CALLS:
            data = collector.collect(n)
            assert data.action.value.is_cuda and data.action.log_prob.is_cuda
            assert data.obs.device.type == data.reward.device.type == "cpu"
            code, next_code = decode(data.obs), decode(data.next_obs)
            check_step_rows(code, next_code, data.action.value.cpu(), data.reward, data.terminated)
    if same_step_reset:
        with counter(3, "box", same_step_reset) as env:
            rollout = RolloutCollector(env, actor).collect(7)
            assert rollout.action.value.shape == (7, 3) and rollout.action.value.is_cuda
    with counter(3, "box", same_step_reset) as env:
        for episode in EpisodeCollector(env, actor).collect(4):
            assert episode.action.value.is_cuda
            assert torch.equal(episode.action.value.cpu(), policy_action(decode(episode.obs)))
    assert actor.devices == {"cuda"}


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize("num_envs", [1, 8, 64])
def test_the_benchmarks_inline_reference_does_what_collect_one_does(num_envs, check):
    # bench_collectors compares collect(1) with its work written inline (and with that
    # work less the action check): that loop must give the same transitions (the actor
    # sampling, with the same draws)
    from tests.benchmarks.bench_collectors import MLPActor, inline_loop

    torch.manual_seed(1)
    actor = MLPActor()
    _run, step = inline_loop(num_envs, actor, 1, check=check)
    torch.manual_seed(0)
    with torch.no_grad():
        expected = [step() for _ in range(120)]
    collector = TransitionCollector(VecEnv("CartPole-v1", num_envs, seed=0), actor)
    torch.manual_seed(0)
    dropped = 0
    for obs, action, reward, next_obs, terminated in expected:
        batch = collector.collect(1)
        assert torch.equal(batch.obs, obs)
        assert torch.equal(batch.next_obs, next_obs)
        assert torch.equal(batch.reward, reward)
        assert torch.equal(batch.terminated, terminated)
        if action is None:  # every copy reset: no transitions
            assert len(batch) == 0
        else:
            assert torch.equal(batch.action.value, action.value)
            assert torch.equal(batch.action.log_prob, action.log_prob)
        dropped += num_envs - len(batch)
    assert dropped > 0  # (reset rows were met)


def test_the_benchmarks_inline_reference_checks_the_actions_unless_told_not_to():
    from tests.benchmarks.bench_collectors import inline_loop

    def out_of_range(obs: torch.Tensor) -> StochasticAction:
        return StochasticAction(torch.full((len(obs),), 2), torch.zeros(len(obs)))

    _run, step = inline_loop(4, out_of_range, 1)
    with pytest.raises(ValueError, match="bad actions"):
        step()
    _run, step = inline_loop(4, out_of_range, 1, check=False)
    # the loop's check left out: no ValueError (gymnasium's own check is an assert, which
    # python -O drops)
    with contextlib.suppress(AssertionError):
        step()
