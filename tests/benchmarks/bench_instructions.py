"""Collector overhead in instructions and simulated cache misses (callgrind), per env step.

Run: ``python tests/benchmarks/bench_instructions.py [--steps 1000] [--num-envs 1 8 64]``
(needs ``valgrind`` and Python 3.11+; each measurement takes one to three minutes, two run
at a time).

Wall-clock ratios on a shared machine spread over ±10% per round, which hides changes of
a few percent. Here each contestant runs ``--steps`` steps of CartPole-v1 (after 304
warm-up steps) under callgrind with a simulated cache (32 KiB L1i, 48 KiB L1d, 1 MiB
last level), and only the measured steps are counted: the same program gives the same
instruction count on every run. Reported per env step (one step of all copies): the
instructions (``Ir``), first-level instruction and data misses, last-level misses (these
move by a few percent between runs: heap layout), and an estimated cost of
``Ir + 12 × L1 misses`` (a miss to the second level costs about a dozen cycles) with its
ratio baseline / contestant, the counterpart of bench_collectors' speed ratios.

Contestants: the hand-written loop over ``gymnasium.make_vec`` of bench_collectors (the
baseline), ``TransitionCollector.collect(1)`` at every step, and ``collect(n)`` (n = 8
steps per call, as bench_collectors' chunks at 64 copies).
"""

from __future__ import annotations

import argparse
import operator
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
WARM_UP = 304  # steps (a multiple of 8)
CONTESTANTS = ("baseline", "collect(1)", "collect(8)")


def contestant(name: str, num_envs: int) -> Callable[[int], None]:
    """``run(steps)`` for one contestant (imports here: the child process only)."""
    sys.path.insert(0, str(HERE))
    from bench_collectors import MLPActor, baseline_loop

    from rl_mind import TransitionCollector, VecEnv

    torch.manual_seed(0)
    actor = MLPActor()
    if name == "baseline":
        chunk = baseline_loop(num_envs, False, actor, 8)  # 8 steps a call

        def run(steps: int) -> None:
            for _ in range(steps // 8):
                chunk()

        return run
    collector = TransitionCollector(VecEnv("CartPole-v1", num_envs, seed=0), actor)
    if name == "collect(1)":

        def run(steps: int) -> None:
            collect = collector.collect
            for _ in range(steps):
                collect(1)

        return run

    def run(steps: int) -> None:
        for _ in range(steps // 8):
            collector.collect(8)

    return run


def child(name: str, num_envs: int, steps: int) -> None:
    torch.set_num_threads(1)
    run = contestant(name, num_envs)
    run(WARM_UP)
    # callgrind counts only inside operator.call (--toggle-collect): the measured steps
    operator.call(run, steps)


def measure(name: str, num_envs: int, steps: int, folder: str) -> dict[str, float]:
    out = os.path.join(folder, f"callgrind.{name}.{num_envs}")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--cache-sim=yes",
        "--I1=32768,8,64",
        "--D1=49152,12,64",
        "--LL=1048576,16,64",
        "--toggle-collect=*operator_call*",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        name,
        str(num_envs),
        str(steps),
    ]
    subprocess.run(command, check=True, capture_output=True)
    events: list[str] = []
    totals: list[int] = []
    for line in Path(out).read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(value) for value in line.split()[1:]]
    counts = dict(zip(events, totals))
    per_step = {
        "Ir": counts["Ir"] / steps,
        "L1 misses": (counts["I1mr"] + counts["D1mr"] + counts["D1mw"]) / steps,
        "LL misses": (counts["ILmr"] + counts["DLmr"] + counts["DLmw"]) / steps,
    }
    per_step["cost"] = per_step["Ir"] + 12 * per_step["L1 misses"]
    return per_step


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="measured steps (multiple of 8)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()
    if sys.version_info < (3, 11):  # the measured steps run inside operator.call (3.11+)
        raise SystemExit("bench_instructions needs Python 3.11 or newer")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions needs valgrind (apt install valgrind)")
    if args.steps <= 0 or args.steps % 8:
        raise SystemExit(f"--steps must be a positive multiple of 8, got {args.steps}")
    jobs = [(name, n) for n in args.num_envs for name in CONTESTANTS]
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(2) as pool:
        results = dict(zip(jobs, pool.map(lambda job: measure(*job, args.steps, folder), jobs)))
    print("== callgrind, CartPole-v1, per env step (all copies); ratio = baseline / contestant")
    for n in args.num_envs:
        base = results[("baseline", n)]
        print(f"-- num_envs={n}")
        for name in CONTESTANTS:
            r = results[(name, n)]
            print(
                f"   {name:<11} Ir {r['Ir']:>10,.0f} (+{r['Ir'] - base['Ir']:>8,.0f})  "
                f"L1 misses {r['L1 misses']:>7,.0f}  LL misses {r['LL misses']:>6,.0f}  "
                f"cost {r['cost']:>10,.0f}  ratio {base['cost'] / r['cost']:.3f}"
            )


if __name__ == "__main__":
    main()
