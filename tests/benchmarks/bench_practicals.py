"""Benchmark: every practical's reference solution against its Stable-Baselines3 twin.

Runs each practical source (``notebooks/src/<name>.py``, a plain Python script in
jupytext's percent format) at the full profile in its own process, for seeds 0, 1, 2, and
its twin from Stable-Baselines3 on the same environment, evaluated by the same
:class:`rl_mind.Evaluator` (the practical's ``eval_every`` and ``eval_episodes``, read from
its source, so the same evaluation period and the same episode seeds). Both sides use one
torch thread and stop as soon as an evaluation reaches the target (475), so the wall time
is the time to solve (the training loop, evaluations included; imports excluded).

The twins:

- DQN, A2C, PPO on ``CartPole-v1``: the rl-zoo hyperparameters for CartPole-v1
  (``hyperparams/dqn.yml``, ``a2c.yml``, ``ppo.yml`` of rl-baselines3-zoo), their
  ``n_timesteps`` as the training budget (the schedules depend on it).
- REINFORCE has no SB3 twin: it is compared with the A2C twin.
- TD3 and SAC on ``CartPoleContinuous-v1`` (``rl_mind.envs``): SB3's documented defaults
  (SAC as is; TD3 with the Gaussian action noise of std 0.1 of SB3's TD3 example, since
  without action noise TD3 does not explore), a budget of 100,000 steps.

A twin that has not reached the target after ``--cap`` seconds (600 by default) stops and
is reported as "> cap". The table at the end gives, per practical and seed, the steps and
seconds to the target of both sides (and the share of ours spent in ``Evaluator.run``,
``eval%``) and the ratios ours / SB3, then per practical the
medians over the seeds and whether the targets hold (every seed ≤ 60 s, median time ≤ 0.5 ×
the twin's median) and the learning curve is dense (at least 10 evaluations before the one
that reached the target, for every seed).

Usage::

    python tests/benchmarks/bench_practicals.py                              # everything
    python tests/benchmarks/bench_practicals.py --processes 16 --json out.json
    python tests/benchmarks/bench_practicals.py --practicals ppo dqn --seeds 0 1
    python tests/benchmarks/bench_practicals.py --practicals sac --no-sb3
    python tests/benchmarks/bench_practicals.py --practicals dp tabular

The maze practicals (``dp``, ``tabular``) have no twin: their full-profile targets are
``bench_tabular.py``'s (each source runs in under a minute; tabular's best evaluation
reaches the optimal policy's return).

The project practical (``overestimation``) runs its own study of every variant and seed,
once (``--practicals overestimation``; ``--seeds`` does not apply): its targets are a wall
time of at most 30 minutes on a 2-core machine and DDPG's critic bias larger than TD3's,
and positive, on every seed (its ``RESULT`` line).

Not a unit test: it takes minutes. Runs of the pool share the machine: with
``--processes`` above the number of idle cores the times grow.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_tabular import source_target  # this folder is on the path when run as a script

ROOT = Path(__file__).resolve().parents[2]
PRACTICALS = ["dqn", "reinforce", "a2c", "ppo", "td3", "sac"]
MAZE = ["dp", "tabular"]  # no twin: bench_tabular.py's targets (the optimum, under a minute)
PROJECTS = ["overestimation"]  # a study of its own seeds, run once: its time and bias verdicts
PROJECT_SECONDS = 1800.0  # the whole study, on a 2-core machine
PROJECT_RESULT = re.compile(
    r"RESULT practical=(?P<name>\S+) env=(?P<env>\S+) runs=(?P<runs>\d+) done=(?P<done>\d+) "
    r"ddpg_bias_larger_on_every_seed=(?P<larger>\w+) "
    r"ddpg_bias_positive_on_every_seed=(?P<positive>\w+) wall_time=(?P<wall>[\d.]+)"
)
TWIN = {"dqn": "dqn", "reinforce": "a2c", "a2c": "a2c", "ppo": "ppo", "td3": "td3", "sac": "sac"}
TARGET = 475.0
SOLVE_SECONDS = 60.0  # every seed of a practical
MAX_RATIO = 0.5  # the practical's median time over its twin's
MIN_POINTS = 10  # evaluations before the target (a dense learning curve)
RESULT = re.compile(
    r"RESULT practical=(?P<name>\S+) best_return=(?P<best>\S+) best_step=(?P<step>\S+) "
    r"env_steps=(?P<steps>\d+) wall_time=(?P<wall>[\d.]+)(?: evaluations=(?P<evals>\d+))?"
)
CPU_TIME = re.compile(r"CPU_TIME (?P<cpu>[\d.]+)(?: EVAL_CPU (?P<eval>[\d.]+))?")


@dataclass
class Run:
    name: str  # the practical, or "sb3-<algo>"
    seed: int
    best_return: float | None = None
    best_step: int | None = None  # the step of the best evaluation (the target's)
    env_steps: int | None = None
    wall_time: float | None = None  # the training loop, evaluations included
    cpu_time: float | None = None  # the same loop's process CPU time
    eval_cpu: float | None = None  # of which in Evaluator.run (ours only)
    evaluations: int | None = None
    capped: bool = False
    error: str = ""

    @property
    def solved(self) -> bool:
        return self.best_return is not None and self.best_return >= TARGET

    def steps_text(self) -> str:
        if self.solved:
            return f"{self.best_step:,}"
        return f">{self.env_steps:,}" if self.env_steps else "-"

    def time_text(self, seconds: float | None) -> str:
        if seconds is None:
            return "-" if self.best_return is not None else "failed"
        return f"{seconds:.1f}" if self.solved else f">{seconds:.0f}"

    def line(self) -> str:
        if self.best_return is None:
            return f"{self.name:<10} seed {self.seed}  FAILED ({self.error})"
        verdict = "solved" if self.solved else ("NOT solved (cap)" if self.capped else "NOT solved")
        return (
            f"{self.name:<10} seed {self.seed}  best return {self.best_return:6.1f} at step "
            f"{self.best_step}  env steps {self.env_steps:>7}  wall {self.wall_time:6.1f} s  "
            f"cpu {self.time_text(self.cpu_time)} s  evaluations {self.evaluations}"
            f"{'' if self.eval_share is None else f' ({self.eval_share:.0%} of the CPU time)'}"
            f"  {verdict}"
        )

    @property
    def eval_share(self) -> float | None:
        """The share of the training loop's CPU time spent in ``Evaluator.run`` (ours only)."""
        return (
            self.eval_cpu / self.cpu_time if self.eval_cpu is not None and self.cpu_time else None
        )


def _launch(
    command: list[str], timeout: float, **variables: str
) -> subprocess.CompletedProcess[str] | None:
    """Run ``command`` from the repository's root at the full profile (without
    ``RL_MIND_FAST_TEST``), with the environment ``variables`` added; None on a timeout."""
    env = {key: value for key, value in os.environ.items() if key != "RL_MIND_FAST_TEST"}
    env.update(variables)
    env.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory(prefix="bench-practicals-") as outputs:
        # logs, checkpoints and videos of a run are thrown away unless RL_MIND_OUTPUTS is set
        env.setdefault("RL_MIND_OUTPUTS", outputs)
        try:
            return subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return None


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    """The last lines a failed command wrote (to stderr, else stdout)."""
    return " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])


def _run(command: list[str], name: str, seed: int, timeout: float) -> Run:
    threads = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = _launch(command, timeout, RL_MIND_SEED=str(seed), **threads)
    if done is None:
        return Run(name, seed, error=f"timeout {timeout:.0f} s")
    match = RESULT.search(done.stdout)
    if match is None:
        return Run(name, seed, error=_tail(done))
    return Run(
        name,
        seed,
        best_return=float(match["best"]),
        best_step=int(match["step"]) if match["step"] != "None" else None,
        env_steps=int(match["steps"]),
        wall_time=float(match["wall"]),
        evaluations=int(match["evals"]) if match["evals"] else None,
        cpu_time=float(cpu["cpu"]) if (cpu := CPU_TIME.search(done.stdout)) else None,
        eval_cpu=float(cpu["eval"]) if cpu and cpu["eval"] else None,
        capped="capped=1" in done.stdout,
    )


def eval_settings(practical: str) -> tuple[int, int]:
    """The practical's full-profile ``eval_every`` and ``eval_episodes``, from its source."""
    source = (ROOT / "notebooks" / "src" / f"{practical}.py").read_text()
    values = []
    for field in ("eval_every", "eval_episodes"):
        match = re.search(rf"{field}: int = Profile\.pick\(([\d_]+),", source)
        if match is None:
            raise ValueError(f"{practical}.py: no '{field}: int = Profile.pick(...)' line")
        values.append(int(match[1]))
    return values[0], values[1]


def run_practical(name: str, seed: int, timeout: float) -> Run:
    return _run([sys.executable, __file__, "--practical-worker", name], name, seed, timeout)


def practical_worker(name: str) -> None:
    """Run the practical's source as a script, and print the CPU time of its training loop
    (from the progress bar's creation, just before the loop, to its closing, just after)
    and the part of it spent in ``Evaluator.run``. A check declared in the source computes
    its cases from the reference it checks."""
    import runpy

    from rl_mind import Evaluator
    from rl_mind.checks import Check
    from rl_mind.notebook import ProgressBar

    marks: list[float] = []
    init, close = ProgressBar.__init__, ProgressBar.close

    def timed_init(self: ProgressBar, *args: Any, **kwargs: Any) -> None:
        marks.append(time.process_time())
        init(self, *args, **kwargs)

    def timed_close(self: ProgressBar) -> None:
        marks.append(time.process_time())
        close(self)

    evaluating = [0.0]
    evaluate = Evaluator.run

    def timed_run(self: Evaluator[Any], *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return evaluate(self, *args, **kwargs)
        finally:
            evaluating[0] += time.process_time() - start

    ProgressBar.__init__ = timed_init  # type: ignore[method-assign]
    ProgressBar.close = timed_close  # type: ignore[method-assign]
    Evaluator.run = timed_run  # type: ignore[method-assign,assignment]

    # A check declared in the source (REINFORCE's baseline_loss) gets its cases when
    # `rl-mind practical` generates the notebooks; run from the source, it computes them
    # from the function it is given, which here is the reference solution.
    check_call = Check.__call__

    def reference_call(self: Check, function: Any) -> None:
        if self._stored is None:
            self.generate(function)
        check_call(self, function)

    Check.__call__ = reference_call  # type: ignore[method-assign]
    source = ROOT / "notebooks" / "src" / f"{name}.py"
    sys.argv = [str(source)]
    runpy.run_path(str(source), run_name="__main__")
    if len(marks) >= 2:
        print(f"CPU_TIME {marks[1] - marks[0]:.2f} EVAL_CPU {evaluating[0]:.2f}")


def project_target(name: str, timeout: float) -> tuple[bool, str]:
    """Run a project practical's source at the full profile (its study uses every core);
    whether it met its targets, and its line."""
    done = _launch([sys.executable, __file__, "--practical-worker", name], timeout)
    if done is None:
        return False, f"{name}: timeout {timeout:.0f} s"
    match = PROJECT_RESULT.search(done.stdout)
    if match is None:
        return False, f"{name}: no RESULT line: {_tail(done)}"
    # (the numbers behind the verdicts: the practical's own table of each run's bias)
    table = done.stdout.split("the critic's bias of each run", 1)[-1].split("RESULT ", 1)[0]
    print(f"{name}: the critic's bias of each run{table.rstrip()}")
    wall = float(match["wall"])
    checks = {
        f"every run done ({match['done']}/{match['runs']})": match["done"] == match["runs"],
        f"study {wall:.0f} s <= {PROJECT_SECONDS:.0f} s on {os.cpu_count()} cores": wall
        <= PROJECT_SECONDS,
        "DDPG's bias > TD3's on every seed": match["larger"] == "yes",
        "DDPG's bias > 0 on every seed": match["positive"] == "yes",
    }
    verdicts = "; ".join(f"{text}: {'yes' if ok else 'NO'}" for text, ok in checks.items())
    return all(checks.values()), f"{name} on {match['env']}: {verdicts}"


def run_twin(practical: str, seed: int, every: int, episodes: int, cap: float) -> Run:
    command = [sys.executable, __file__, "--sb3-worker", TWIN[practical], str(seed), str(every)]
    command += [str(episodes), str(cap)]
    return _run(command, twin_label(practical), seed, timeout=cap + 300)


# ---------------------------------------------------------------------- the SB3 twins
def _linear(start: float) -> Any:  # rl-zoo's lin_<value>: progress_remaining goes 1 -> 0
    return lambda progress_remaining: progress_remaining * start


def sb3_model(algo: str, seed: int) -> tuple[Any, str, int]:
    """The SB3 twin (model, environment id, training budget) of ``algo``."""
    import numpy as np
    from stable_baselines3 import A2C, DQN, PPO, SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    import rl_mind.envs  # noqa: F401  (registers CartPoleContinuous-v1)

    common: dict[str, Any] = {"seed": seed, "device": "cpu", "verbose": 0}
    if algo == "dqn":  # rl-zoo dqn.yml, CartPole-v1 (one environment)
        env = make_vec_env("CartPole-v1", n_envs=1, seed=seed)
        model = DQN(
            "MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
            learning_starts=1_000, gamma=0.99, target_update_interval=10, train_freq=256,
            gradient_steps=128, exploration_fraction=0.16, exploration_final_eps=0.04,
            policy_kwargs={"net_arch": [256, 256]}, **common,
        )  # fmt: skip
        return model, "CartPole-v1", 50_000
    if algo == "a2c":  # rl-zoo a2c.yml, CartPole-v1
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        return A2C("MlpPolicy", env, ent_coef=0.0, **common), "CartPole-v1", 500_000
    if algo == "ppo":  # rl-zoo ppo.yml, CartPole-v1
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = PPO(
            "MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
            n_epochs=20, ent_coef=0.0, learning_rate=_linear(1e-3), clip_range=_linear(0.2),
            **common,
        )  # fmt: skip
        return model, "CartPole-v1", 100_000
    env_id = "CartPoleContinuous-v1"
    env = make_vec_env(env_id, n_envs=1, seed=seed)
    if algo == "td3":  # SB3's defaults, with the action noise of its documented example
        noise = NormalActionNoise(mean=np.zeros(1), sigma=0.1 * np.ones(1))
        return TD3("MlpPolicy", env, action_noise=noise, **common), env_id, 100_000
    if algo == "sac":  # SB3's defaults
        return SAC("MlpPolicy", env, **common), env_id, 100_000
    raise ValueError(f"no SB3 twin for {algo!r}; expected one of {sorted(set(TWIN.values()))}")


def sb3_worker(algo: str, seed: int, every: int, episodes: int, cap: float) -> None:
    """Train the SB3 twin, evaluated by rl-mind's Evaluator, until the target or the cap."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from rl_mind import Actor, Evaluator

    torch.set_num_threads(1)
    model, env_id, budget = sb3_model(algo, seed)

    class PolicyActor(Actor):  # type: ignore[type-arg]
        def __init__(self) -> None:
            super().__init__()
            self.policy = model.policy

        def act(self, obs: torch.Tensor) -> torch.Tensor:
            # the greedy action in the policy's space; the continuous twins act in [-1, 1],
            # which is CartPoleContinuous-v1's action space
            return self.policy._predict(obs, deterministic=True)

    evaluator = Evaluator(env_id, every=every, num_episodes=episodes)
    actor = PolicyActor()
    start, start_cpu = time.time(), time.process_time()
    capped = False

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            nonlocal capped
            evaluator.run_if_needed(self.num_timesteps, actor)
            if evaluator.best_reward is not None and evaluator.best_reward >= TARGET:
                return False
            capped = time.time() - start > cap
            return not capped

    model.learn(total_timesteps=budget, callback=Evaluate())
    wall_time, cpu_time = time.time() - start, time.process_time() - start_cpu
    print(
        f"RESULT practical=sb3-{algo} best_return={evaluator.best_reward:.1f} "
        f"best_step={evaluator.best_step} env_steps={model.num_timesteps} "
        f"wall_time={wall_time:.1f} evaluations={len(evaluator.history)}"
        + (" capped=1" if capped else "")
    )
    print(f"CPU_TIME {cpu_time:.2f}")
    evaluator.close()


# ---------------------------------------------------------------------- the table
def _value(run: Run, field: str) -> float | None:
    if field == "steps":  # to the target, or all the steps of a run that did not reach it
        return run.best_step if run.solved else run.env_steps
    return getattr(run, field)  # type: ignore[no-any-return]


def twin_label(practical: str) -> str:
    """The twin's name in the table: ``sb3-<algo>``, and the evaluation period where the
    twin is another practical's (REINFORCE's A2C twin is evaluated as REINFORCE is)."""
    algo = TWIN[practical]
    return f"sb3-{algo}" if algo == practical else f"sb3-{algo}@{eval_settings(practical)[0]}"


def _ratio(ours: Run, twin: Run | None, field: str) -> str:
    """ours / twin of ``field``; a twin that did not solve gives an upper bound ("<")."""
    if twin is None or not ours.solved:
        return "-"
    mine, theirs = _value(ours, field), _value(twin, field)
    if mine is None or not theirs:
        return "-"
    return f"{'' if twin.solved else '<'}{mine / theirs:.2f}"


def table(practicals: list[str], seeds: list[int], runs: dict[tuple[str, int], Run]) -> str:
    """Per practical and seed: ours and the twin's steps, wall and CPU seconds to the target,
    and the ratios ours / twin; then per practical the verdicts on the two targets."""
    header = (
        f"{'practical':<9} {'seed':>4} | {'steps':>7} {'wall s':>6} {'cpu s':>6} {'evals':>5} "
        f"{'eval%':>5} | "
        f"{'twin':<12} {'steps':>8} {'wall s':>6} {'cpu s':>6} | "
        f"{'steps':>5} {'wall':>5} {'cpu':>5}"
    )
    bars = [i for i, char in enumerate(header) if char == "|"]
    banner = f"{'':<{bars[0]}}| ours".ljust(bars[1]) + "| SB3 twin"
    lines = [banner.ljust(bars[2]) + "| ours / twin", header, "-" * len(header)]
    verdicts = []
    for name in practicals:
        twin_name = twin_label(name)
        walls, twin_walls, all_twins_solved, points = [], [], True, []
        for seed in seeds:
            ours, twin = runs.get((name, seed)), runs.get((twin_name, seed))
            if ours is None:
                continue
            twin_cells = (
                f"{twin_name:<12} {twin.steps_text():>8} {twin.time_text(twin.wall_time):>6} "
                f"{twin.time_text(twin.cpu_time):>6}"
                if twin is not None
                else f"{'-':<12} {'':>8} {'':>6} {'':>6}"
            )
            lines.append(
                f"{name:<9} {seed:>4} | {ours.steps_text():>7} "
                f"{ours.time_text(ours.wall_time):>6} {ours.time_text(ours.cpu_time):>6} "
                f"{ours.evaluations if ours.evaluations is not None else '-':>5} "
                f"{'-' if ours.eval_share is None else f'{100 * ours.eval_share:.0f}':>5} | "
                f"{twin_cells} | "
                f"{_ratio(ours, twin, 'steps'):>5} {_ratio(ours, twin, 'wall_time'):>5} "
                f"{_ratio(ours, twin, 'cpu_time'):>5}"
            )
            walls.append(ours.wall_time if ours.solved and ours.wall_time else float("inf"))
            if ours.solved and ours.evaluations is not None:
                points.append(ours.evaluations - 1)  # the evaluations before the target's
            if twin is not None and twin.wall_time is not None:
                twin_walls.append(twin.wall_time)
                all_twins_solved &= twin.solved
        if not walls:
            continue
        fast = all(wall <= SOLVE_SECONDS for wall in walls)
        verdict = f"{name}: every seed <= {SOLVE_SECONDS:g} s: {'yes' if fast else 'NO'}"
        if twin_walls:
            ratio = statistics.median(walls) / statistics.median(twin_walls)
            bound = "" if all_twins_solved else "<"  # a twin that did not solve: a bound
            holds = "yes" if ratio <= MAX_RATIO else ("NO" if not bound else "unknown (capped)")
            verdict += (
                f"; median {statistics.median(walls):.1f} s vs {twin_name} "
                f"{statistics.median(twin_walls):.1f} s: ratio {bound}{ratio:.2f} "
                f"(<= {MAX_RATIO:g}: {holds})"
            )
        if points:
            dense = min(points) >= MIN_POINTS
            verdict += (
                f"; >= {MIN_POINTS} evaluations before the target: {'yes' if dense else 'NO'}"
            )
        verdicts.append(verdict)
    return "\n".join([*lines, "", *verdicts])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--practicals", nargs="+", default=PRACTICALS + MAZE,
        choices=PRACTICALS + MAZE + PROJECTS,
    )  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--processes", type=int, default=1, help="runs at a time")
    parser.add_argument("--cap", type=float, default=600.0, help="seconds for an SB3 twin")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per practical")
    parser.add_argument("--no-sb3", action="store_true", help="skip the SB3 twins")
    parser.add_argument("--json", type=Path, default=None, help="write the runs there")
    parser.add_argument("--sb3-worker", nargs=5, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--practical-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_worker is not None:
        algo, seed, every, episodes, cap = args.sb3_worker
        sb3_worker(algo, int(seed), int(every), int(episodes), float(cap))
        return 0
    if args.practical_worker is not None:
        practical_worker(args.practical_worker)
        return 0
    if args.processes < 1:
        parser.error(f"--processes must be >= 1, got {args.processes}")

    maze_ok = True
    for name in [name for name in args.practicals if name in MAZE]:
        for seed in args.seeds:
            passed, line = source_target(name, seed)
            maze_ok &= passed
            print(line, flush=True)
    for name in [name for name in args.practicals if name in PROJECTS]:
        passed, line = project_target(name, max(args.timeout, 2 * PROJECT_SECONDS))
        maze_ok &= passed
        print(line, flush=True)
    practicals = [name for name in args.practicals if name not in MAZE + PROJECTS]
    if not practicals:
        return 0 if maze_ok else 1
    jobs: dict[tuple[str, int], Any] = {}
    twins_done: set[tuple[str, int]] = set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.processes) as pool:
        for name in practicals:
            every, episodes = eval_settings(name)
            for seed in args.seeds:
                jobs[(name, seed)] = pool.submit(run_practical, name, seed, args.timeout)
                twin = (twin_label(name), seed)
                if not args.no_sb3 and twin not in twins_done:
                    twins_done.add(twin)
                    jobs[twin] = pool.submit(run_twin, name, seed, every, episodes, args.cap)
        for future in concurrent.futures.as_completed(jobs.values()):
            print(future.result().line(), flush=True)
    runs = {key: future.result() for key, future in jobs.items()}
    print(
        f"\nsteps and seconds to the target {TARGET:g} (the first evaluation to reach it); "
        f"one torch thread per run, {args.processes} run(s) at a time on {os.cpu_count()} "
        f"cores; REINFORCE's twin is SB3 A2C (SB3 has no REINFORCE)\n"
    )
    print(table(practicals, args.seeds, runs))
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "processes": args.processes,
                    "cores": os.cpu_count(),
                    "cap": args.cap,
                    "runs": [asdict(run) for run in runs.values()],
                },
                indent=1,
            )
        )
    failed = [run for key, run in runs.items() if key[0] in PRACTICALS and not run.solved]
    return 1 if failed or not maze_ok else 0


if __name__ == "__main__":
    sys.exit(main())
