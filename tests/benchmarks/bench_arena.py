"""Benchmark of ``rl-mind arena``: how long a class of 10, 30 and 100 submissions takes.

Run: ``python tests/benchmarks/bench_arena.py [--reference RUN_DIR] [--sizes 10 30 100]
[--matches 20] [--jobs 2]``. Target (issue): 100 submissions of the reference architecture,
20 matches a pair, in at most 10 minutes on a 2-core laptop.

The submissions are realistic players, not untrained networks (whose matches end in a few
dozen steps): the snapshots of a self-play run (``--reference``, or a run trained here for
``--train-minutes``), each student's weights a snapshot's with a little noise, so that
the class spreads from beginners to the run's best. They are exported with
``export_agent`` into a folder, and the arena reads them from there, as a teacher's would.
Each size is timed end to end (loading, the round robin, the fit, writing the CSV files,
the page and the final's video), with the three bots as anchors. Besides the wall-clock
time, the CPU time of this process and its workers is given: on a shared machine the
wall clock also counts the time others held the cores, and CPU seconds / jobs is what a
quiet machine with ``--jobs`` cores would take.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import torch


def _class_folder(run_dir: Path, size: int, folder: Path) -> Path:
    """``size`` submissions made from the run's snapshots (noise of 0 to 0.02 on each weight)."""
    from rl_mind.arena import export_agent
    from rl_mind.evaluation import load_checkpoint
    from rl_mind.selfplay.checkpoint import config_of_checkpoint
    from rl_mind.selfplay.trainer import PongPolicy

    state = load_checkpoint(run_dir / "checkpoint.pt")["trainer"]
    config = config_of_checkpoint(state, device="cpu")
    archive = state["archive"]
    generator = torch.Generator().manual_seed(size)
    folder.mkdir(parents=True)
    for k in range(size):
        policy = PongPolicy(config.hidden_sizes, config.ball_forecast)
        weights = archive[k % len(archive)]["policy"]
        noise = 0.02 * k / max(size - 1, 1)
        policy.load_state_dict(
            {
                name: value + noise * torch.randn(value.shape, generator=generator)
                for name, value in weights.items()
            }
        )
        export_agent(
            policy, folder / f"student{k:03d}.safetensors", name=f"agent {k}", author=f"student {k}"
        )
    return folder


def _cpu_seconds() -> float:
    """CPU time so far of this process and of its finished children (the arena's workers)."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reference", type=Path, default=None, help="a rl-mind selfplay run")
    parser.add_argument("--train-minutes", type=float, default=2.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    from rl_mind.arena.report import write_outputs
    from rl_mind.arena.run import run_arena

    workspace = Path(tempfile.mkdtemp(prefix="bench-arena-"))
    run_dir = args.reference
    if run_dir is None:
        from rl_mind.selfplay.job import train

        run_dir = workspace / "run"
        print(f"training a reference run for {args.train_minutes} minutes ...")
        train(minutes=args.train_minutes, run_dir=run_dir, video=False, progress=False)
    load = os.getloadavg()[0]
    print(f"load average before: {load:.2f} ({os.cpu_count()} cores), --jobs {args.jobs}")
    print(
        "| submissions | players | matches | load + play + fit | write (page, video) | total "
        "| CPU time | CPU time / jobs |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        folder = _class_folder(run_dir, size, workspace / f"class-{size}")
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        result = run_arena(folder, n_matches=args.matches, seed=0, jobs=args.jobs, progress=False)
        played = time.perf_counter()
        write_outputs(result, workspace / f"out-{size}")
        written, cpu = time.perf_counter(), _cpu_seconds() - cpu_start
        players = len(result.players)
        matches = players * (players - 1) // 2 * args.matches
        print(
            f"| {size} | {players} | {matches:,} | {played - start:.1f} s | "
            f"{written - played:.1f} s | {written - start:.1f} s | {cpu:.0f} s | "
            f"{cpu / args.jobs:.0f} s |",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}; outputs in {workspace}")


if __name__ == "__main__":
    main()
