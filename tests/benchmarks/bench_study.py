"""Benchmark of studies: 8 short runs on 2 cores, against the same runs one after the other.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_study.py [--workers 2] [--steps 3000]
[--repeats 2]``. Targets (issue 59): the study finishes in at most 0.6x the serial time,
and the study machinery adds at most 5% to a single run's time; the exit status is 1
where one is missed.

The run is a short DQN on CartPole (``tests/study_toys.py:dqn``: the package's collector,
replay buffer and Evaluator with ``logs=True``), a fixed amount of work, so that a loaded
core makes it slower instead of shorter. All three measurements run in this one process,
one after the other, with one torch thread each (as the study's workers have):

1. serial: the 8 runs called directly in nested loops, as a project's harness does;
2. the study: ``Study(dqn, grid={"hidden": [32, 64]}, seeds=[0, 1, 2, 3]).run(workers=2)``;
3. the same 8 runs on a bare ``multiprocessing`` pool of 2 processes (no status files, no
   display, no resuming): what the cores give on this machine, so that a study slower than
   the target shows whether the machinery or the machine is to blame;
4. one run, called directly and as a one-run study (alternated, the best of
   ``--repeats`` each): the machinery's overhead on a single run.

The load average is printed before and after: on a shared machine the wall clock also
counts the time others held the cores.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from rl_mind.study import Study
from tests.study_toys import dqn

GRID = {"hidden": [32, 64]}
SEEDS = [0, 1, 2, 3]


def serial(folder: Path, steps: int) -> float:
    start = time.perf_counter()
    for hidden in GRID["hidden"]:
        for seed in SEEDS:
            dqn(
                hidden=hidden,
                seed=seed,
                run_dir=folder / f"hidden={hidden},seed={seed}",
                steps=steps,
            )
    return time.perf_counter() - start


def study(folder: Path, steps: int, workers: int) -> float:
    start = time.perf_counter()
    summary = Study(functools.partial(dqn, steps=steps), grid=GRID, seeds=SEEDS,
                    directory=folder).run(workers=workers, progress=False)  # fmt: skip
    elapsed = time.perf_counter() - start
    assert summary.complete, str(summary)
    return elapsed


def _pool_run(arguments: tuple[int, int, str, int]) -> None:
    hidden, seed, folder, steps = arguments
    torch.set_num_threads(1)
    dqn(hidden=hidden, seed=seed, run_dir=Path(folder), steps=steps)


def bare_pool(folder: Path, steps: int, workers: int) -> float:
    jobs = [(hidden, seed, str(folder / f"hidden={hidden},seed={seed}"), steps)
            for hidden in GRID["hidden"] for seed in SEEDS]  # fmt: skip
    start = time.perf_counter()
    with multiprocessing.get_context().Pool(workers) as pool:
        pool.map(_pool_run, jobs, chunksize=1)
    return time.perf_counter() - start


def single_run(folder: Path, steps: int, repeats: int) -> tuple[float, float]:
    direct, studied = [], []
    for repeat in range(repeats):
        start = time.perf_counter()
        dqn(hidden=64, seed=0, run_dir=folder / f"direct-{repeat}", steps=steps)
        direct.append(time.perf_counter() - start)
        start = time.perf_counter()
        one = Study(functools.partial(dqn, steps=steps), grid={"hidden": [64]}, seeds=[0],
                    directory=folder / f"study-{repeat}")  # fmt: skip
        assert one.run(progress=False).complete
        studied.append(time.perf_counter() - start)
    return min(direct), min(studied)


def main() -> int:
    """0 where both targets are met, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000, help="environment steps of a run")
    parser.add_argument("--repeats", type=int, default=2, help="of the single-run measure")
    args = parser.parse_args()
    torch.set_num_threads(1)  # (the serial loop gets what a study's worker gets)
    print(f"cores: {os.cpu_count()}, workers: {args.workers}, runs: 8 x {args.steps} steps; "
          f"load average before: {os.getloadavg()[0]:.2f}")  # fmt: skip
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        serial_time = serial(folder / "serial", args.steps)
        study_time = study(folder / "study", args.steps, args.workers)
        pool_time = bare_pool(folder / "pool", args.steps, args.workers)
        direct, studied = single_run(folder / "single", args.steps, args.repeats)
    ratio = study_time / serial_time
    overhead = studied / direct - 1
    fast, light = ratio <= 0.6, overhead <= 0.05
    print(f"serial:  {serial_time:7.2f} s (8 runs, one after the other)")
    print(f"study:   {study_time:7.2f} s on {args.workers} workers = {ratio:.2f}x serial "
          f"(target <= 0.60: {'met' if fast else 'MISSED'})")  # fmt: skip
    print(
        f"a bare pool: {pool_time:5.2f} s on {args.workers} processes = "
        f"{pool_time / serial_time:.2f}x serial (the machine's own speed-up, for reference)"
    )
    print(f"one run: {direct:7.2f} s direct, {studied:.2f} s as a study = {overhead:+.1%} "
          f"(target <= +5%: {'met' if light else 'MISSED'})")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if fast and light else 1


if __name__ == "__main__":
    sys.exit(main())
