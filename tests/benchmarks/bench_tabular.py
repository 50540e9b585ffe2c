"""Benchmark: the maze practicals' targets.

1. Value iteration on a 10x10 maze (MazeMDP-v0, seeds 0..4) matches the exact V* (the
   linear solve of the Bellman equation of its greedy policy) to 1e-6, in under a second.
2. Q-learning and SARSA (the tabular practical's reference solutions and loop, at the full
   profile) reach the optimal policy's mean discounted return on the default maze, seeds
   0, 1, 2, within a budget that runs in seconds.
3. The solution notebooks' sources (``notebooks/src/dp.py``, ``tabular.py``) at the full
   profile run in under a minute each (the whole process, imports and video included).

Usage::

    python tests/benchmarks/bench_tabular.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]


def value_iteration_target() -> bool:
    from rl_mind.envs import MazeMDPEnv

    torch.set_num_threads(1)
    ok = True
    for seed in range(5):
        maze = MazeMDPEnv(10, 10, ratio=0.2, seed=seed)
        P, r = torch.as_tensor(maze.P), torch.as_tensor(maze.r)
        not_terminal = torch.ones(maze.nb_states, dtype=P.dtype)
        not_terminal[maze.terminal_states] = 0.0
        start = time.perf_counter()
        v, sweeps = torch.zeros(maze.nb_states, dtype=P.dtype), 0
        while True:
            new_v = (r + maze.gamma * not_terminal.unsqueeze(1) * (P @ v)).max(dim=1).values
            sweeps += 1
            if (new_v - v).abs().max() < 1e-10:
                break
            v = new_v
        elapsed = time.perf_counter() - start
        greedy = (r + maze.gamma * not_terminal.unsqueeze(1) * (P @ new_v)).argmax(dim=1)
        states = torch.arange(maze.nb_states)
        P_pi = P[states, greedy] * not_terminal.unsqueeze(1)
        exact = torch.linalg.solve(torch.eye(maze.nb_states, dtype=P.dtype) - maze.gamma * P_pi,
                                   r[states, greedy])  # fmt: skip
        gap = float((new_v - exact).abs().max())
        passed = gap < 1e-6 and elapsed < 1.0
        ok &= passed
        print(f"value iteration 10x10 seed {seed}: {sweeps} sweeps, {elapsed * 1e3:.2f} ms, "
              f"max |V - V*| = {gap:.1e}  {'ok' if passed else 'MISSED'}")  # fmt: skip
    return ok


def run_source(name: str, seed: int) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "RL_MIND_FAST_TEST"}
    env.update(RL_MIND_SEED=str(seed), MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as outputs:
        env["RL_MIND_OUTPUTS"] = outputs
        start = time.time()
        done = subprocess.run([sys.executable, str(ROOT / "notebooks" / "src" / f"{name}.py")],
                              env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
        elapsed = time.time() - start
    if done.returncode != 0:
        return elapsed, "FAILED " + done.stderr.strip().splitlines()[-1]
    return elapsed, re.search(r"RESULT .*", done.stdout).group(0)  # type: ignore[union-attr]


def source_target(name: str, seed: int) -> tuple[bool, str]:
    """Runs the solution source ``name`` (dp or tabular) at the full profile: its target met?

    Both must finish in under a minute (the whole process); tabular's best evaluation must
    reach the optimal policy's mean return (its RESULT line's ``optimum``).
    """
    elapsed, line = run_source(name, seed)
    passed = "RESULT" in line and elapsed < 60
    if name == "tabular":
        match = re.search(r"best_return=(\S+) .* optimum=(\S+)", line)
        passed = passed and bool(match) and float(match[1]) >= float(match[2]) - 1e-4
    return passed, f"{name} seed {seed}: process {elapsed:.1f} s  {line}  " + (
        "ok" if passed else "MISSED"
    )


def main() -> int:
    ok = value_iteration_target()
    for name, seed in [("tabular", 0), ("tabular", 1), ("tabular", 2), ("dp", 0)]:
        passed, line = source_target(name, seed)
        ok &= passed
        print(line)
    print("all targets met" if ok else "some targets MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    sys.exit(main())
