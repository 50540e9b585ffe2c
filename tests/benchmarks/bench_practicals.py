"""Benchmark: every practical's reference solution at the full profile.

Runs each practical source (``notebooks/src/<name>.py``, a plain Python script in
jupytext's percent format) in its own process, for seeds 0, 1, 2, and prints the best mean
evaluation return reached, the environment steps and the wall time (the training loop,
evaluations included; the process time, imports included, in brackets). Every practical
stops as soon as an evaluation reaches its target (475), so the wall time is the time to
solve. Target: ≥ 475 within 10 minutes on a 2-core CPU.

For PPO it also runs Stable-Baselines3's PPO with the rl-zoo CartPole hyperparameters
(8 envs, n_steps 32, batch 256, gae_lambda 0.8, gamma 0.98, 20 epochs, linear lr 1e-3 and
clip 0.2), evaluated by the same :class:`rl_mind.Evaluator` (same 8 episode seeds, every
5,000 steps, stop at 475), and prints the wall-time ratio rl-mind / SB3.

Usage::

    python tests/benchmarks/bench_practicals.py                     # everything (long)
    python tests/benchmarks/bench_practicals.py --practicals ppo --seeds 0
    python tests/benchmarks/bench_practicals.py --practicals dqn td3 --no-sb3

Not a unit test: it takes minutes per run. Both sides use one torch thread.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRACTICALS = ["dqn", "reinforce", "a2c", "ppo", "td3", "sac"]
TARGET = 475.0
RESULT = re.compile(
    r"RESULT practical=(?P<name>\S+) best_return=(?P<best>\S+) best_step=(?P<step>\S+) "
    r"env_steps=(?P<steps>\d+) wall_time=(?P<wall>[\d.]+)"
)


@dataclass
class Run:
    name: str
    seed: int
    best_return: float | None
    env_steps: int | None
    wall_time: float | None  # the training loop (evaluations included)
    process_time: float  # the whole process (imports, video...)
    error: str = ""

    @property
    def solved(self) -> bool:
        return self.best_return is not None and self.best_return >= TARGET

    def line(self) -> str:
        if self.best_return is None:
            return f"{self.name:<10} seed {self.seed}  FAILED ({self.error})"
        verdict = "solved" if self.solved else "NOT solved"
        return (
            f"{self.name:<10} seed {self.seed}  best return {self.best_return:6.1f}  "
            f"env steps {self.env_steps:>7}  wall time {self.wall_time:6.1f} s "
            f"[process {self.process_time:6.1f} s]  {verdict}"
        )


def _run(command: list[str], name: str, seed: int, timeout: float) -> Run:
    env = dict(os.environ)
    env.pop("RL_MIND_FAST_TEST", None)
    env["RL_MIND_SEED"] = str(seed)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-practicals-") as outputs:
        # logs, checkpoints and videos of a run are thrown away unless RL_MIND_OUTPUTS is set
        env.setdefault("RL_MIND_OUTPUTS", outputs)
        try:
            done = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return Run(
                name, seed, None, None, None, time.time() - start, f"timeout {timeout:.0f} s"
            )
    elapsed = time.time() - start
    match = RESULT.search(done.stdout)
    if match is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return Run(name, seed, None, None, None, elapsed, " | ".join(tail))
    return Run(
        name,
        seed,
        float(match["best"]),
        int(match["steps"]),
        float(match["wall"]),
        elapsed,
    )


def run_practical(name: str, seed: int, timeout: float) -> Run:
    return _run(
        [sys.executable, str(ROOT / "notebooks" / "src" / f"{name}.py")], name, seed, timeout
    )


def run_sb3_ppo(seed: int, timeout: float) -> Run:
    return _run([sys.executable, __file__, "--sb3-ppo-worker", str(seed)], "sb3-ppo", seed, timeout)


def sb3_ppo_worker(seed: int) -> None:
    """Train SB3 PPO (rl-zoo CartPole hyperparameters), evaluated by rl-mind's Evaluator."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    from rl_mind import Actor, Evaluator

    torch.set_num_threads(1)

    def linear(start: float):  # rl-zoo's lin_<value>: progress_remaining goes 1 -> 0
        return lambda progress_remaining: progress_remaining * start

    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
        seed=seed,
        device="cpu",
        verbose=0,
    )

    class PolicyActor(Actor):  # type: ignore[type-arg]
        def __init__(self) -> None:
            super().__init__()
            self.policy = model.policy

        def act(self, obs: torch.Tensor) -> torch.Tensor:
            return self.policy._predict(obs, deterministic=True)

    evaluator = Evaluator("CartPole-v1", every=5_000, num_episodes=8)
    actor = PolicyActor()

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            evaluator.run_if_needed(self.num_timesteps, actor)
            return not (evaluator.best_reward is not None and evaluator.best_reward >= TARGET)

    start = time.time()
    model.learn(total_timesteps=150_000, callback=Evaluate())
    wall_time = time.time() - start
    print(
        f"RESULT practical=sb3-ppo best_return={evaluator.best_reward:.1f} "
        f"best_step={evaluator.best_step} env_steps={model.num_timesteps} wall_time={wall_time:.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--practicals", nargs="+", default=PRACTICALS, choices=PRACTICALS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--no-sb3", action="store_true", help="skip the SB3 PPO comparison")
    parser.add_argument("--sb3-ppo-worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_ppo_worker is not None:
        sb3_ppo_worker(args.sb3_ppo_worker)
        return 0

    runs: list[Run] = []
    for name in args.practicals:
        for seed in args.seeds:
            run = run_practical(name, seed, args.timeout)
            print(run.line(), flush=True)
            runs.append(run)
            if name == "ppo" and not args.no_sb3:
                baseline = run_sb3_ppo(seed, args.timeout)
                print(baseline.line(), flush=True)
                runs.append(baseline)
                if run.wall_time and baseline.wall_time and run.solved and baseline.solved:
                    print(
                        f"{'':<10} seed {seed}  wall-time ratio rl-mind PPO / SB3 PPO = "
                        f"{run.wall_time / baseline.wall_time:.2f}",
                        flush=True,
                    )
    failed = [run for run in runs if not run.solved or (run.wall_time or 0) > 600]
    print(f"\n{len(runs) - len(failed)}/{len(runs)} runs reached {TARGET:g} within 10 minutes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
