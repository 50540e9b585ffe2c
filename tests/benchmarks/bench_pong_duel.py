"""Benchmark of Pong Duel: raw batched game steps/s, VecEnv overhead, render time.

Run: ``python tests/benchmarks/bench_pong_duel.py [--rounds 5] [--seconds 1.0]``. One CPU
core, torch at 1 thread; every number is the median of ``--rounds`` timed rounds (the
machine may be shared). Targets (issue): >= 3M game steps/s at N = 1024 for the raw game,
>= 1M through ``VecEnv`` with the scripted opponent at N = 1024, <= 10 ms a frame.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch


def _median_rate(
    run: Callable[[int], None], steps_per_call: int, seconds: float, rounds: int
) -> float:
    """Median over rounds of (game steps per second); each round runs ~``seconds``."""
    run(3)  # warm up
    calls = 1
    while True:  # calibrate the number of calls per round
        start = time.perf_counter()
        run(calls)
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 4 or calls > 1_000_000:
            break
        calls *= 2
    calls = max(1, int(calls * seconds / max(elapsed, 1e-9)))
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        run(calls)
        rates.append(calls * steps_per_call / (time.perf_counter() - start))
    return statistics.median(rates)


def bench_game(n: int, seconds: float, rounds: int, observe: bool) -> float:
    from rl_mind.envs import PongDuelGame

    game = PongDuelGame(n, seed=0)
    game.reset()
    actions = np.random.default_rng(0).integers(0, 3, (64, 2, n))
    counter = [0]

    def run(calls: int) -> None:
        for _ in range(calls):
            result = game.step(actions[counter[0] % 64])
            counter[0] += 1
            if observe:
                game.observe()
            ended = result.terminated | result.truncated
            if ended.any():
                game.reset_matches(ended)

    return _median_rate(run, n, seconds, rounds)


def bench_vecenv(n: int, seconds: float, rounds: int, same_step_reset: bool) -> float:
    from rl_mind import VecEnv

    env = VecEnv(
        "rl_mind/PongDuel-v0", n, seed=0, same_step_reset=same_step_reset, opponent="scripted"
    )
    env.reset()
    actions = torch.randint(0, 3, (64, n))
    counter = [0]

    def run(calls: int) -> None:
        for _ in range(calls):
            env.step(actions[counter[0] % 64])
            counter[0] += 1

    rate = _median_rate(run, n, seconds, rounds)
    env.close()
    return rate


def bench_render(rounds: int) -> float:
    from rl_mind.envs import PongDuelEnv

    env = PongDuelEnv(render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(30):
        env.step(1)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(100):
            env.render()
        times.append((time.perf_counter() - start) / 100)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one timed round")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import rl_mind.envs  # noqa: F401  (registers rl_mind/PongDuel-v0)

    print(
        f"Pong Duel benchmark: median of {args.rounds} rounds of ~{args.seconds:g} s, torch threads = 1"
    )
    print(f"{'N':>6} {'game step':>14} {'step + both obs':>16}   (game steps/s, random actions)")
    raw = {}
    for n in (1, 64, 1024, 4096):
        raw[n] = bench_game(n, args.seconds, args.rounds, observe=False)
        with_obs = bench_game(n, args.seconds, args.rounds, observe=True)
        print(f"{n:>6} {raw[n]:>14,.0f} {with_obs:>16,.0f}")
    for same in (True, False):
        rate = bench_vecenv(1024, args.seconds, args.rounds, same)
        mode = "same-step" if same else "next-step"
        print(
            f"VecEnv N=1024, scripted opponent, {mode}: {rate:,.0f} game steps/s "
            f"(raw game / VecEnv = {raw[1024] / rate:.2f}x)"
        )
    print(f"render: {bench_render(args.rounds) * 1000:.2f} ms a frame (480 x 400)")
    print("targets: raw N=1024 >= 3,000,000; VecEnv N=1024 >= 1,000,000; render <= 10 ms")


if __name__ == "__main__":
    main()
