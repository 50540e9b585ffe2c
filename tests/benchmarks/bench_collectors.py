"""Collector and replay-buffer throughput against hand-written baselines, in one run.

Run: ``python tests/benchmarks/bench_collectors.py [--budget 90] [--processes 3] [--turn 0]
[--rounds 15] [--num-envs 1 8 64]``

Collectors (CartPole-v1, ``num_envs`` 1, 8, 64, the same 2×64 tanh actor that samples an
action and its log-probability, torch at 1 thread): env steps/s of a hand-written loop over
``gymnasium.make_vec`` (numpy in, torch policy, numpy out, same auto-reset mode — the
baseline) and of each collector, also of ``collect(1)`` followed by a read of
``episode_returns`` at every step (the practicals' logging loop). Replay buffer (capacity
1,000,000, CartPole-sized transitions): ``add`` of 1 and of 256 transitions and
``sample(256)`` against a plain preallocated tensor ring, and a numpy ring (the kind of
buffer Stable-Baselines3 uses: its bare writes, and the whole work of Stable-Baselines3's
``add``, copies included) for the single-transition ``add``.

The machine is shared and noisy: contestants are timed in interleaved rounds, and the
report gives the median of the per-round ratios to the baseline, with a 95% confidence
interval of that median, and the throughput ratio (all steps over all the time of all
rounds: work a contestant puts off to a few turns, which a median leaves out, counts there
too). In a round every contestant takes one turn, in a new random order
(so that all of them see the same moments of the machine and none always runs right after
the baseline). A turn is one call of a chunk of work (``collect(n)``, or ``n`` calls of
``collect(1)``, or ``n`` steps of the baseline loop; for ``EpisodeCollector``, ``q``
episodes a copy, ``q`` at least 4 and enough to fill about as many steps) by default: as
in a training loop, where the learning step between two collects has the caches to itself,
and many short rounds give a precise median. ``--turn SECONDS`` makes each turn repeat the
calls for that long instead: back-to-back calls, with the caches warm from the
contestant's own previous call (fewer, longer rounds: wider intervals). A control
contestant, a second copy of the baseline loop, shows what ratio "as fast as the baseline"
measures as.

The same code measured in two processes differs by up to 2% (where the environments' and
collectors' arrays and objects land in memory), more than a median of one process is
precise to. Each copy count therefore runs in ``--processes`` fresh processes, one after
the other, with the budget split between them: the report gives the median of all their
rounds, with its interval, and the range of the processes' own medians.

A reference contestant does ``collect(1)``'s work at every step written inline in one
loop, without the package (a test checks that it gives collect(1)'s transitions): the
actor acting for every copy, the action check, the reset rows dropped, each copy's running
return and length. It shows what that work costs by itself against the baseline, which
records nothing, and the report gives ``collect(1)``'s ratio to it: the cost of the
package's calls. A second copy of it leaves out the action check (which the package must
make: a bad action gets a clear error before it reaches the environment), to show what
that check costs.

The floors (``FLOORS``): every collector at least 0.70 of its baseline, the replay
buffer's ``add(1)``, ``add(256)`` and ``sample(256)`` at least 0.8 of the tensor ring; a
ratio under its floor is marked ``BELOW FLOOR``. The script uses the package's public API
only, so that it measures any version of it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn

from rl_mind import (
    Actor,
    EpisodeCollector,
    ReplayBuffer,
    RolloutCollector,
    StochasticAction,
    TransitionCollector,
    Transitions,
    VecEnv,
    build_mlp,
)


class MLPActor(Actor[StochasticAction]):
    def __init__(self) -> None:
        super().__init__()
        self.net = build_mlp([4, 64, 64, 2], nn.Tanh)

    def forward(self, obs: torch.Tensor) -> StochasticAction:
        dist = torch.distributions.Categorical(logits=self.net(obs), validate_args=False)
        action = dist.sample()
        return StochasticAction(action, dist.log_prob(action))


def timed_steps(run: Callable[[], int], seconds: float) -> tuple[int, float]:
    """Call ``run`` (which returns env steps done) once, and again until ``seconds`` have
    passed; returns the steps and the seconds taken."""
    steps = 0
    start = time.perf_counter()
    while True:
        steps += run()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps, elapsed


def median_interval(values: list[float]) -> tuple[float, float, float]:
    """The median of ``values`` and a distribution-free 95% confidence interval of it (the
    order statistics whose ranks are n/2 ∓ 1.96·√n/2)."""
    ordered = sorted(values)
    n = len(ordered)
    half_width = 1.96 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width))
    high = min(n - 1, math.ceil(n / 2 + half_width) - 1)
    return statistics.median(ordered), ordered[low], ordered[high]


def baseline_loop(num_envs: int, same_step: bool, actor: MLPActor, chunk: int) -> Callable[[], int]:
    mode = AutoresetMode.SAME_STEP if same_step else AutoresetMode.NEXT_STEP
    if same_step:  # CartPole's native vector env only does next-step
        env = gym.make_vec("CartPole-v1", num_envs, "sync", vector_kwargs={"autoreset_mode": mode})
    else:
        env = gym.make_vec("CartPole-v1", num_envs)
    state = {"obs": env.reset(seed=0)[0]}

    def run() -> int:
        obs = state["obs"]
        with torch.no_grad():
            for _ in range(chunk):
                action = actor(torch.as_tensor(obs, dtype=torch.float32))
                obs, _reward, _terminated, _truncated, _info = env.step(action.value.numpy())
        state["obs"] = obs
        return chunk * num_envs

    return run


INLINE = "collect(1)'s work inline"
INLINE_UNCHECKED = "the same, no action check"


def inline_loop(
    num_envs: int,
    actor: Callable[[torch.Tensor], StochasticAction],
    chunk: int,
    check: bool = True,
) -> tuple[Callable[[], int], Callable[[], tuple[Any, ...]]]:
    """collect(1)'s work at every step, written inline in one loop over
    ``gymnasium.make_vec`` without the package (the reference: what a step of collect(1)
    costs with none of its calls): the actor acts for every copy, the actions are checked
    (a set lookup each), the transitions drop the rows of the copies that reset at this
    step, and each copy's running return and length grow (``check`` False: all but the
    action check). Returns ``run() -> env steps`` and ``step() -> (obs, action, reward,
    next_obs, terminated)`` (one step, for checking it against collect(1))."""
    env = gym.make_vec("CartPole-v1", num_envs)
    valid_actions = frozenset(range(2))
    int64 = np.dtype(np.int64)
    # obs: what the actor acts on next; resetting: the copies that ended at the last step
    state: dict[str, Any] = {
        "obs": torch.from_numpy(env.reset(seed=0)[0]),
        "resetting": np.zeros(num_envs, bool),
    }
    running_return, running_length = np.zeros(num_envs), np.zeros(num_envs, np.int64)

    def step() -> tuple[Any, ...]:
        obs, resetting = state["obs"], state["resetting"]
        action = actor(obs)
        array = action.value.numpy()
        if check and not (
            array.dtype is int64
            and array.shape == (num_envs,)
            and valid_actions.issuperset(array.tolist())
        ):
            raise ValueError("bad actions")
        next_np, reward, terminated, truncated, _info = env.step(array)
        ended = terminated | truncated
        valid = ~resetting
        running_return[valid] += reward[valid]
        running_length[valid] += 1
        if ended.any():
            running_return[ended] = 0.0
            running_length[ended] = 0
        next_obs = torch.from_numpy(next_np)
        state["obs"], state["resetting"] = next_obs, ended
        rows = (obs, action, torch.from_numpy(reward), next_obs, torch.from_numpy(terminated))
        if not resetting.any():
            return rows
        keep = torch.from_numpy(valid)
        return tuple(row[keep] for row in rows)

    def run() -> int:
        with torch.no_grad():
            for _ in range(chunk):
                step()
        return chunk * num_envs

    return run, step


def collector_runs(num_envs: int, actor: MLPActor, chunk: int) -> dict[str, Callable[[], int]]:
    next_step = VecEnv("CartPole-v1", num_envs, seed=0)
    same_step = VecEnv("CartPole-v1", num_envs, seed=0, same_step_reset=True)
    transitions = TransitionCollector(next_step, actor)
    transitions_1 = TransitionCollector(VecEnv("CartPole-v1", num_envs, seed=0), actor)
    transitions_logged = TransitionCollector(VecEnv("CartPole-v1", num_envs, seed=0), actor)
    rollouts = RolloutCollector(same_step, actor)
    episode_env = VecEnv("CartPole-v1", num_envs, seed=0)
    episodes = EpisodeCollector(episode_env, actor)
    # episodes a call: at least 4 a copy, and as many as fill about the baseline's turn
    # (chunk steps of every copy; the mean episode length measured on a first call). A
    # turn's first steps pay for what the previous contestant evicted from the caches: a
    # turn much shorter than the baseline's would pay that share several times over
    warm_up = episodes.collect(4 * num_envs)
    mean_length = sum(len(episode) for episode in warm_up) / len(warm_up)
    quota = max(4, round(chunk / mean_length))
    # count every env step the episode collector takes (copies past their quota included)
    env_steps = {"episodes": 0}
    gym_env = episode_env.gym_env
    gym_step = gym_env.step

    def counting_step(actions):  # type: ignore[no-untyped-def]
        env_steps["episodes"] += num_envs
        return gym_step(actions)

    gym_env.step = counting_step  # type: ignore[method-assign]

    def transition_chunk() -> int:
        transitions.collect(chunk)
        # reset rows are dropped from the data: count env steps the way the baseline does
        return chunk * num_envs

    def transition_single() -> int:
        for _ in range(chunk):
            transitions_1.collect(1)
        return chunk * num_envs

    def transition_single_logged() -> int:
        # the practicals' loop: collect(1), then the returns of the episodes that ended
        for _ in range(chunk):
            transitions_logged.collect(1)
            len(transitions_logged.episode_returns)
        return chunk * num_envs

    def rollout_chunk() -> int:
        rollouts.collect(chunk)
        return chunk * num_envs

    def episode_chunk() -> int:
        # env steps actually taken, including those of copies that met their quota and the
        # steps of the last, discarded episodes (useful steps are reported separately)
        before = env_steps["episodes"]
        episodes.collect(quota * num_envs)
        return env_steps["episodes"] - before

    return {
        "TransitionCollector.collect(n)": transition_chunk,
        "TransitionCollector.collect(1)": transition_single,
        "collect(1) + episode_returns": transition_single_logged,
        "RolloutCollector.collect(n)": rollout_chunk,
        "EpisodeCollector.collect(qB)": episode_chunk,
    }


FLOORS = {  # the least ratio to the baseline each contestant must reach
    "TransitionCollector.collect(n)": 0.70,
    "TransitionCollector.collect(1)": 0.70,
    "RolloutCollector.collect(n)": 0.70,
    "EpisodeCollector.collect(qB)": 0.70,
    "ratio add(1)": 0.8,
    "ratio add(256)": 0.8,
    "ratio sample(256)": 0.8,
}


def floor_mark(name: str, ratio: float) -> str:
    """`` (floor 0.70: ok)`` or `` (floor 0.70: BELOW FLOOR)``; nothing without a floor."""
    if name not in FLOORS:
        return ""
    return f"  (floor {FLOORS[name]:.2f}: {'ok' if ratio >= FLOORS[name] else 'BELOW FLOOR'})"


BASELINE_OF = {  # the baseline loop each contestant is compared with (auto-reset mode)
    "TransitionCollector.collect(n)": "next",
    "TransitionCollector.collect(1)": "next",
    "collect(1) + episode_returns": "next",
    "RolloutCollector.collect(n)": "same",
    "EpisodeCollector.collect(qB)": "next",
    "control: baseline loop again": "next",
    INLINE: "next",
    INLINE_UNCHECKED: "next",
}


def measure_collectors(
    num_envs: int, budget: float, turn: float, min_rounds: int, seed: int
) -> dict[str, Any]:
    """One process's rounds at ``num_envs`` copies: the env steps/s of every contestant at
    every round, the per-round ratios to the baselines, and ``collect(1)``'s to the inline
    reference."""
    torch.manual_seed(seed)
    actor = MLPActor()
    rng = random.Random(seed)
    chunk = max(8, 512 // num_envs)
    runs = collector_runs(num_envs, actor, chunk)
    runs["control: baseline loop again"] = baseline_loop(num_envs, False, actor, chunk)
    runs[INLINE] = inline_loop(num_envs, actor, chunk)[0]
    runs[INLINE_UNCHECKED] = inline_loop(num_envs, actor, chunk, check=False)[0]
    contestants = {
        "next": baseline_loop(num_envs, False, actor, chunk),
        "same": baseline_loop(num_envs, True, actor, chunk),
        **runs,
    }
    rates: dict[str, list[float]] = {name: [] for name in contestants}
    totals = {name: [0, 0.0] for name in contestants}  # env steps, seconds: all rounds
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    to_inline: list[float] = []  # collect(1) / the inline loop
    for run in contestants.values():  # warm up: first calls, first allocations
        timed_steps(run, 0.0)
    # rounds until the budget is spent (at least min_rounds)
    start = time.perf_counter()
    while len(to_inline) < min_rounds or time.perf_counter() - start < budget:
        order = list(contestants)
        rng.shuffle(order)
        this_round = {}
        for name in order:
            done, took = timed_steps(contestants[name], turn)
            this_round[name] = done / took
            totals[name][0] += done
            totals[name][1] += took
        for name, rate in this_round.items():
            rates[name].append(rate)
        for name in runs:
            ratios[name].append(this_round[name] / this_round[BASELINE_OF[name]])
        to_inline.append(this_round["TransitionCollector.collect(1)"] / this_round[INLINE])
    return {"rates": rates, "ratios": ratios, "to_inline": to_inline, "totals": totals}


def throughput(parts: list[dict[str, Any]], who: str) -> float:
    """``who``'s env steps per second over all the rounds of the processes ``parts``."""
    totals = [part["totals"][who] for part in parts]
    return sum(steps for steps, _ in totals) / sum(took for _, took in totals)


def bench_collectors(
    budget: float,
    turn: float,
    min_rounds: int,
    copies: tuple[int, ...] = (1, 8, 64),
    processes: int = 3,
) -> None:
    """Each copy count in ``processes`` fresh processes, one after the other, whose rounds
    are pooled; the report gives the spread of the per-process medians too."""
    mode = "one call" if turn == 0 else f"{turn:g} s"
    print(
        f"== collectors: CartPole-v1, env steps/s (median over rounds), ratio to baseline "
        f"[95% confidence interval of the median] (range of the medians of {processes} "
        f"processes); turns of {mode}"
    )
    for num_envs in copies:
        parts = []
        for seed in range(processes):
            settings = [num_envs, budget / processes, turn, math.ceil(min_rounds / processes), seed]
            child = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps(settings)],
                capture_output=True,
                text=True,
                check=True,
            )
            parts.append(json.loads(child.stdout.splitlines()[-1]))
        rates = {
            name: [r for part in parts for r in part["rates"][name]] for name in parts[0]["rates"]
        }
        print(f"-- num_envs={num_envs}: {len(rates['next'])} rounds")
        print(f"   baseline make_vec next-step : {statistics.median(rates['next']):>10,.0f}")
        print(f"   baseline make_vec same-step : {statistics.median(rates['same']):>10,.0f}")
        names = [*BASELINE_OF, "collect(1) / inline"]
        for name in names:
            per_process = [
                part["to_inline"] if name not in BASELINE_OF else part["ratios"][name]
                for part in parts
            ]
            pooled = [ratio for ratios in per_process for ratio in ratios]
            median, low, high = median_interval(pooled)
            medians = [statistics.median(ratios) for ratios in per_process]
            rate = f"{statistics.median(rates[name]):>10,.0f}" if name in rates else " " * 10
            total = ""
            if name in BASELINE_OF:  # all steps over all time: work put off to a few turns counts
                ratio = throughput(parts, name) / throughput(parts, BASELINE_OF[name])
                total = f"  throughput {ratio:.3f}"
            print(
                f"   {name:<31}: {rate}   ratio {median:.3f} [{low:.3f}, {high:.3f}] "
                f"({min(medians):.3f}-{max(medians):.3f}){total}{floor_mark(name, median)}"
            )


class TensorRing:
    """The baseline: one preallocated tensor per field, written with slices."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.obs = torch.empty(capacity, 4)
        self.action = torch.empty(capacity, dtype=torch.long)
        self.log_prob = torch.empty(capacity)
        self.reward = torch.empty(capacity)
        self.next_obs = torch.empty(capacity, 4)
        self.terminated = torch.empty(capacity, dtype=torch.bool)
        self.position = 0
        self.size = 0

    def add(self, obs, action, log_prob, reward, next_obs, terminated) -> None:  # type: ignore[no-untyped-def]
        n = obs.shape[0]
        start = self.position
        end = start + n
        if end > self.capacity:  # the benchmark sizes make this rare; keep it simple
            start, end = 0, n
        self.obs[start:end] = obs
        self.action[start:end] = action
        self.log_prob[start:end] = log_prob
        self.reward[start:end] = reward
        self.next_obs[start:end] = next_obs
        self.terminated[start:end] = terminated
        self.position = end % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int) -> tuple[torch.Tensor, ...]:
        index = torch.randint(0, self.size, (batch_size,))
        return (
            self.obs[index],
            self.action[index],
            self.log_prob[index],
            self.reward[index],
            self.next_obs[index],
            self.terminated[index],
        )


class NumpyRing:
    """A numpy ring with one array per field, as in Stable-Baselines3's ReplayBuffer."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, 4), dtype=np.float32)
        self.action = np.zeros(capacity, dtype=np.int64)
        self.log_prob = np.zeros(capacity, dtype=np.float32)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.next_obs = np.zeros((capacity, 4), dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=bool)
        self.position = 0

    def add(self, obs, action, log_prob, reward, next_obs, terminated) -> None:  # type: ignore[no-untyped-def]
        p = self.position
        self.obs[p] = obs
        self.action[p] = action
        self.log_prob[p] = log_prob
        self.reward[p] = reward
        self.next_obs[p] = next_obs
        self.terminated[p] = terminated
        self.position = (p + 1) % self.capacity


class SB3StyleRing:
    """A numpy ring whose ``add`` does the work of Stable-Baselines3's ``ReplayBuffer.add``
    (the issue's reference for the single-transition stretch): it takes one vectorized step
    (``[n_envs, ...]`` numpy arrays and the list of info dicts), reshapes the action to
    ``[n_envs, action_dim]``, copies every input with ``np.array`` before storing it, and
    reads the time-limit flags from the infos."""

    def __init__(self, capacity: int, n_envs: int = 1) -> None:
        size = capacity // n_envs
        self.n_envs = n_envs
        self.obs = np.zeros((size, n_envs, 4), dtype=np.float32)
        self.next_obs = np.zeros((size, n_envs, 4), dtype=np.float32)
        self.action = np.zeros((size, n_envs, 1), dtype=np.int64)
        self.reward = np.zeros((size, n_envs), dtype=np.float32)
        self.done = np.zeros((size, n_envs), dtype=np.float32)
        self.timeout = np.zeros((size, n_envs), dtype=np.float32)
        self.size = size
        self.position = 0

    def add(self, obs, next_obs, action, reward, done, infos) -> None:  # type: ignore[no-untyped-def]
        p = self.position
        action = action.reshape((self.n_envs, 1))
        self.obs[p] = np.array(obs)
        self.next_obs[p] = np.array(next_obs)
        self.action[p] = np.array(action)
        self.reward[p] = np.array(reward)
        self.done[p] = np.array(done)
        self.timeout[p] = np.array([info.get("TimeLimit.truncated", False) for info in infos])
        self.position = (p + 1) % self.size


def transitions(n: int) -> Transitions[StochasticAction]:
    return Transitions(
        torch.randn(n, 4),
        StochasticAction(torch.randint(0, 2, (n,)), torch.randn(n)),
        torch.randn(n),
        torch.randn(n, 4),
        torch.rand(n) < 0.05,
    )


def time_per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def bench_replay_buffer(rounds: int) -> None:
    capacity = 1_000_000
    print(f"== replay buffer, capacity {capacity:,}: µs per call (median), ratio ring/ours")
    ours = ReplayBuffer[StochasticAction](capacity)
    ring = TensorRing(capacity)
    numpy_ring = NumpyRing(capacity)
    sb3_ring = SB3StyleRing(capacity)
    one, many = transitions(1), transitions(256)

    def fields(t: Transitions[StochasticAction]) -> tuple[torch.Tensor, ...]:
        return (t.obs, t.action.value, t.action.log_prob, t.reward, t.next_obs, t.terminated)  # type: ignore[return-value]

    fields_one, fields_many = fields(one), fields(many)
    np_one = tuple(t.numpy()[0] for t in fields_one)
    # one step of one environment, as Stable-Baselines3's VecEnv hands it over
    sb3_step = (
        one.obs.numpy(),
        one.next_obs.numpy(),
        one.action.value.numpy(),
        one.reward.numpy(),
        one.terminated.numpy(),
        [{}],
    )
    for _ in range(2000):  # fill enough to sample
        ours.add(many)
        ring.add(*fields_many)
    results: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    for _ in range(rounds):
        ring_1 = time_per_call(lambda: ring.add(*fields_one), 20_000)
        ours_1 = time_per_call(lambda: ours.add(one), 20_000)
        numpy_1 = time_per_call(lambda: numpy_ring.add(*np_one), 20_000)
        sb3_1 = time_per_call(lambda: sb3_ring.add(*sb3_step), 20_000)
        ring_256 = time_per_call(lambda: ring.add(*fields_many), 5_000)
        ours_256 = time_per_call(lambda: ours.add(many), 5_000)
        ring_sample = time_per_call(lambda: ring.sample(256), 3_000)
        ours_sample = time_per_call(lambda: ours.sample(256), 3_000)
        record("add(1) ours", ours_1)
        record("add(1) tensor ring", ring_1)
        record("add(1) numpy ring", numpy_1)
        record("add(1) SB3-style ring", sb3_1)
        record("add(256) ours", ours_256)
        record("add(256) tensor ring", ring_256)
        record("sample(256) ours", ours_sample)
        record("sample(256) tensor ring", ring_sample)
        record("ratio add(1)", ring_1 / ours_1)
        record("ratio add(256)", ring_256 / ours_256)
        record("ratio sample(256)", ring_sample / ours_sample)
        record("ratio add(1) vs numpy", numpy_1 / ours_1)
        record("ratio add(1) vs SB3-style", sb3_1 / ours_1)
    for name, values in results.items():
        median = statistics.median(values)
        if name.startswith("ratio"):
            spread = f"(rounds {min(values):.2f}-{max(values):.2f})"
            print(f"   {name:<25}: {median:.3f}  {spread}{floor_mark(name, median)}")
        else:
            print(f"   {name:<25}: {median * 1e6:8.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--budget", type=float, default=90.0, help="seconds of collector rounds per num_envs"
    )
    parser.add_argument("--min-rounds", type=int, default=20, help="collector rounds at least")
    parser.add_argument(
        "--turn",
        type=float,
        default=0.0,
        help="seconds of back-to-back calls per collector turn (0: one call)",
    )
    # (on a shared machine one round's ratio spreads over ±10%, and medians of 5-9 rounds
    # of the same code differed by up to 0.08 from run to run: take more)
    parser.add_argument("--rounds", type=int, default=15, help="replay-buffer rounds")
    parser.add_argument("--only", choices=["collectors", "buffer"], default=None)
    parser.add_argument(
        "--num-envs", type=int, nargs="+", default=[1, 8, 64], help="copy counts of the collectors"
    )
    parser.add_argument(
        "--processes", type=int, default=3, help="fresh processes per copy count (pooled)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # (a process of bench_collectors)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.child is not None:
        print(json.dumps(measure_collectors(*json.loads(args.child))))
        return
    if args.only in (None, "collectors"):
        copies = tuple(args.num_envs)
        bench_collectors(args.budget, args.turn, args.min_rounds, copies, args.processes)
    if args.only in (None, "buffer"):
        bench_replay_buffer(args.rounds)


if __name__ == "__main__":
    main()
