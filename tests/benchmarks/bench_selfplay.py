"""Benchmark of the self-play PPO reference (the training of ``rl-mind selfplay``), full profile.

For each seed: train for ``--minutes`` of training time, evaluate the agent (the trainer's
``averaged_policy``, what the job evaluates and keeps) against ``random``, ``scripted`` and
``predictive`` on ``--eval-matches`` (≥ 400) matches at fixed checkpoints of training time
(evaluation time is not counted), then a round robin of snapshots spread over the run. The
learner itself (the live weights) is evaluated on the same matches too, for comparison
(``learner_<bot>`` in the JSON; not a milestone). Reports, per milestone, the training time
and game steps at which it was first reached and from which it stayed reached at every
later checkpoint:

- ≥ 95% wins against random (target: within 1 minute);
- ≥ 60% against scripted (target: within 2 minutes), ≥ 88% (target: at 10 minutes);
- ≥ 60% against predictive (target: at 10 minutes, median over the seeds);
- the Spearman correlation of the snapshots' Bradley–Terry ratings with their training time
  (target ≥ 0.8), and whether the last snapshot beats every earlier one of the round robin
  (``--snapshots`` spread over the run, about a minute apart in a 10-minute run; ``--eval-matches``
  fresh matches against each).

Usage (one core per seed; torch at one thread)::

    python tests/benchmarks/bench_selfplay.py --minutes 10 --seeds 0 1 2 --out bench.json

``--set KEY=VALUE`` (repeatable) changes a :class:`SelfPlayConfig` setting for an experiment,
e.g. ``--set num_envs=256 --set hidden_sizes=128,128``; the JSON records the whole config.

``--speed`` measures the training's game steps per second alone, in fresh processes (``--rounds``,
default 5): the pool filled with 40 snapshots (as after a few minutes of a run), two updates
to start the pool matches, then ``--speed-updates`` timed updates, by the wall clock and by
the process's CPU time (steadier on a shared machine). ``--against DIR`` also runs the same
measurement on the checkout in DIR (e.g. a ``git worktree`` of an older commit), alternating
with this one (ABBA order), and gives the ratio; ``--unbatched-pool`` also runs this checkout
with every pool snapshot as an opponent of its own (the game then plays each one on its
matches with a forward pass of its own), to show what the batched ``PoolOpponent`` buys::

    git worktree add /tmp/before <commit>
    python tests/benchmarks/bench_selfplay.py --speed --rounds 7 --against /tmp/before

Win rates against a bot are not monotonic under self-play (20 points from one minute to the
next): read both columns, and the mean of the second half's evaluations, a steadier measure
for comparing settings than the last evaluation alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rl_mind.selfplay import play_matches
from rl_mind.selfplay.trainer import BOTS, SelfPlayConfig, SelfPlayTrainer

# (bot, threshold, target minutes, kind): "within" = first reached by then; "after" = the
# evaluation at that time (the last one for a shorter run) is at or above the threshold.
MILESTONES = (
    ("random", 0.95, 1.0, "within"),
    ("scripted", 0.60, 2.0, "within"),
    ("scripted", 0.88, 10.0, "after"),
    ("predictive", 0.60, 10.0, "after"),
)
CHECKPOINT_MINUTES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0)


def spearman(x: list[float], y: list[float]) -> float:
    def ranks(values: list[float]) -> np.ndarray:
        order = np.argsort(values, kind="stable")
        r = np.empty(len(values))
        r[order] = np.arange(len(values))
        return r

    if len(x) < 2:
        return float("nan")
    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def run_seed(
    seed: int,
    minutes: float,
    eval_matches: int,
    snapshots: int,
    rr_matches: int,
    changes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    # (imported here: --speed --against runs older checkouts, which lack them)
    from rl_mind.selfplay.report import leaderboard, leaderboard_indices, take_final_snapshot

    torch.set_num_threads(1)
    trainer = SelfPlayTrainer(SelfPlayConfig(seed=seed, **(changes or {})))
    checkpoints = [m for m in CHECKPOINT_MINUTES if m < minutes] + [minutes]
    evaluations: list[dict[str, float]] = []
    wall_start = time.perf_counter()
    for target in checkpoints:
        while trainer.train_seconds < 60 * target:
            trainer.update()
        row: dict[str, float] = {
            "minutes": trainer.train_seconds / 60,
            "env_steps": trainer.env_steps,
            "updates": trainer.updates,
        }
        for bot in BOTS:
            match_seed = 10_000 + trainer.updates
            stats = play_matches(trainer.averaged_policy, bot, eval_matches, seed=match_seed)
            row[bot], row[f"score_{bot}"] = stats.win_rate, stats.score
            row[f"learner_{bot}"] = play_matches(
                trainer.policy, bot, eval_matches, seed=match_seed
            ).win_rate
        evaluations.append(row)
        print(
            f"seed {seed} {row['minutes']:5.2f} min {trainer.env_steps:>11,} steps: "
            + "  ".join(f"{bot} {row[bot]:.1%}" for bot in BOTS)
            + "  (learner: "
            + "  ".join(f"{row[f'learner_{bot}']:.1%}" for bot in BOTS)
            + ")",
            flush=True,
        )
    milestones = []
    for bot, threshold, target_minutes, kind in MILESTONES:
        reached = [row[bot] >= threshold for row in evaluations]
        at_target = [row for row in evaluations if row["minutes"] <= target_minutes * 1.01]
        first = next((i for i, ok in enumerate(reached) if ok), None)
        stays = next((i for i in range(len(reached)) if all(reached[i:])), None)
        milestones.append(
            {
                "bot": bot,
                "threshold": threshold,
                "target_minutes": target_minutes,
                "first_minutes": None if first is None else evaluations[first]["minutes"],
                "first_env_steps": None if first is None else evaluations[first]["env_steps"],
                "stays_from_minutes": None if stays is None else evaluations[stays]["minutes"],
                "stays_from_env_steps": None if stays is None else evaluations[stays]["env_steps"],
                "kind": kind,
                "met": (
                    first is not None and evaluations[first]["minutes"] <= target_minutes * 1.01
                    if kind == "within"
                    else bool(at_target) and at_target[-1][bot] >= threshold
                ),
            }
        )
    # the evaluations of the second half averaged: a steadier measure of a setting than the
    # last evaluation alone (win rates against a bot swing by 20 points from one minute to
    # the next under self-play)
    second_half = [row for row in evaluations if row["minutes"] >= minutes / 2 * 0.99]
    second_half_mean = {
        key: float(np.mean([row[key] for row in second_half]))
        for key in (*BOTS, *(f"learner_{bot}" for bot in BOTS))
    }
    take_final_snapshot(trainer)
    board, steps = leaderboard(trainer, n_snapshots=snapshots, n_matches=rr_matches, seed=seed)
    names = sorted(steps, key=lambda name: steps[name])
    ratings = [board.rating(name) for name in names]
    rho = spearman([steps[n] for n in names], ratings)
    # the last snapshot against every earlier one of the round robin (fresh matches, as many
    # as an evaluation against a bot: 100 matches give a ±5% standard error)
    *earlier, last_index = leaderboard_indices(trainer, snapshots)
    last = trainer.archived_policy(last_index)
    last_vs = []
    for i in earlier:
        stats = play_matches(last, trainer.archived_policy(i), eval_matches, seed=seed + i)
        last_vs.append(
            {
                "snapshot": trainer.archive[i]["id"],
                "step": trainer.archive[i]["step"],
                "score": stats.score,
                "win_rate": stats.win_rate,
            }  # fmt: skip
        )
    trainer.close()
    return {
        "seed": seed,
        "config": dataclasses.asdict(trainer.config),
        "minutes": minutes,
        "wall_minutes": (time.perf_counter() - wall_start) / 60,
        "game_steps_per_second": trainer.env_steps / max(trainer.train_seconds, 1e-9),
        "evaluations": evaluations,
        "milestones": milestones,
        "second_half_mean": second_half_mean,
        "leaderboard": [
            {"player": r.name, "rating": r.rating, "stderr": r.stderr} for r in board.rows
        ],
        "spearman_rating_vs_time": rho,
        "last_vs_earlier": last_vs,
        "last_beats_all_earlier": all(item["score"] > 0.5 for item in last_vs),
        "load_average": os.getloadavg(),
    }


def _minutes(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} min"


def parse_changes(items: list[str]) -> dict[str, Any]:
    """``["pool_capacity=256", ...]`` → ``{"pool_capacity": 256}``, typed like the defaults."""
    defaults = dataclasses.asdict(SelfPlayConfig())
    changes: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or key not in defaults:
            raise SystemExit(
                f"--set expects KEY=VALUE with KEY one of {sorted(defaults)}, got {item!r}"
            )
        if key == "seed":
            raise SystemExit("--set seed: give the seeds with --seeds")
        default = defaults[key]
        try:
            if isinstance(default, bool):
                truth = {
                    "1": True,
                    "true": True,
                    "yes": True,
                    "0": False,
                    "false": False,
                    "no": False,
                }
                changes[key] = truth[text.lower()]
            elif isinstance(default, tuple):
                changes[key] = tuple(int(v) for v in text.split(","))
            else:
                changes[key] = type(default)(text)
        except (KeyError, ValueError):
            raise SystemExit(
                f"--set {key}: expected a value like the default {default!r}, got {text!r}"
            ) from None
    return changes


def speed_once(changes: dict[str, Any], updates: int, unbatched: bool) -> dict[str, float]:
    """One measurement of ``--speed`` (in this process, torch at one thread); it uses only
    what older checkouts of the trainer have too (but for ``unbatched``)."""
    torch.set_num_threads(1)
    if unbatched:  # each pool match against its snapshot's own policy; no PFSP results

        def sample_opponent(self: SelfPlayTrainer, env_index: int) -> Any:
            return self.live if env_index < self.n_live else self.pool.sample().policy

        SelfPlayTrainer.sample_opponent = sample_opponent  # type: ignore[assignment,method-assign]
        SelfPlayTrainer.credit_results = lambda self: ([], [])  # type: ignore[assignment,method-assign]
    trainer = SelfPlayTrainer(SelfPlayConfig(seed=0, **changes))
    generator = torch.Generator().manual_seed(1)
    for _ in range(39):  # different snapshots (small steps from the initial weights)
        with torch.no_grad():
            for parameter in trainer.policy.parameters():
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        trainer.take_snapshot()
    for _ in range(2):
        trainer.update()
    steps, seconds, cpu = trainer.env_steps, trainer.train_seconds, time.process_time()
    for _ in range(updates):
        trainer.update()
    cpu = time.process_time() - cpu
    steps, seconds = trainer.env_steps - steps, trainer.train_seconds - seconds
    trainer.close()
    return {"wall": steps / seconds, "cpu": steps / cpu}


def speed(
    changes: dict[str, Any], rounds: int, updates: int, against: str | None, unbatched: bool
) -> dict[str, Any]:
    """``--speed``: game steps/s of the training in fresh processes, of this checkout and
    (``against``) of another one, or (``unbatched``) of this one with an unbatched pool,
    alternating; medians and the ratios to this checkout."""
    here = str(Path(__file__).resolve().parents[2])
    checkouts = {"this checkout": here} | ({"against": against} if against else {})
    if unbatched:
        checkouts["unbatched pool"] = here
    results = {name: {"wall": [], "cpu": []} for name in checkouts}  # type: ignore[var-annotated]
    for round_ in range(rounds):
        for name in list(checkouts)[:: 1 if round_ % 2 == 0 else -1]:  # (ABBA: no order bias)
            command = [sys.executable, __file__, "--speed-once", json.dumps(changes),
                       str(updates), str(name == "unbatched pool")]  # fmt: skip
            env = dict(os.environ, PYTHONPATH=checkouts[name])
            out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            measured = json.loads(out.stdout.strip().splitlines()[-1])
            for clock in ("wall", "cpu"):
                results[name][clock].append(measured[clock])
        print(f"round {round_ + 1}/{rounds} (load {os.getloadavg()[0]:.1f}): " + ", ".join(
            f"{name} {r['wall'][-1]:,.0f} (cpu {r['cpu'][-1]:,.0f})" for name, r in results.items()
        ), flush=True)  # fmt: skip
    medians = {name: {clock: statistics.median(v) for clock, v in r.items()}
               for name, r in results.items()}  # fmt: skip
    for clock in ("wall", "cpu"):
        here_median = medians["this checkout"][clock]
        line = ", ".join(
            f"{name} {m[clock]:,.0f}" + ("" if name == "this checkout" else
                                         f" (this checkout / it: {here_median / m[clock]:.2f})")
            for name, m in medians.items()
        )  # fmt: skip
        print(f"median game steps/s by the {clock} clock: {line}")
    return {"checkouts": checkouts, "speed": results, "medians": medians,
            "load_average": os.getloadavg()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--eval-matches", type=int, default=400)
    parser.add_argument("--snapshots", type=int, default=10)
    parser.add_argument("--rr-matches", type=int, default=100)
    parser.add_argument("--pool-sampling", default=None, help="pfsp (default), uniform or latest")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a SelfPlayConfig setting (repeatable), e.g. --set pool_capacity=256",
    )
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--speed", action="store_true", help="measure game steps/s only")
    parser.add_argument("--rounds", type=int, default=5, help="--speed: fresh processes each")
    parser.add_argument("--speed-updates", type=int, default=12, help="--speed: timed updates")
    parser.add_argument("--against", default=None, help="--speed: another checkout, compared")
    parser.add_argument(
        "--unbatched-pool", action="store_true", help="--speed: also without PoolOpponent"
    )
    if len(sys.argv) == 5 and sys.argv[1] == "--speed-once":  # (a --speed child process)
        measured = speed_once(json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "True")
        print(json.dumps(measured))
        return
    args = parser.parse_args()
    changes = parse_changes(args.set)
    if args.pool_sampling is not None:
        changes["pool_sampling"] = args.pool_sampling
    if args.speed:
        result = speed(changes, args.rounds, args.speed_updates, args.against, args.unbatched_pool)
        if args.out:
            with open(args.out, "w") as file:
                json.dump(result, file, indent=1)
        return
    if args.eval_matches < 400:
        print("note: the targets are defined on >= 400 evaluation matches")
    results = []
    for seed in args.seeds:
        result = run_seed(
            seed,
            args.minutes,
            args.eval_matches,
            args.snapshots,
            args.rr_matches,
            changes,
        )
        results.append(result)
        print(
            f"\nseed {seed}: {result['game_steps_per_second']:,.0f} game steps/s, load {result['load_average']}"
        )
        for m in result["milestones"]:
            print(
                f"  >= {m['threshold']:.0%} vs {m['bot']:<10} ({m['kind']} {m['target_minutes']:g} min): "
                f"first {_minutes(m['first_minutes'])} / {m['first_env_steps']} steps; "
                f"stays from {_minutes(m['stays_from_minutes'])}; met: {m['met']}"
            )
        print(
            "  mean of the second half's evaluations: "
            + ", ".join(f"{key} {rate:.1%}" for key, rate in result["second_half_mean"].items())
        )
        print(f"  Spearman(rating, training time) = {result['spearman_rating_vs_time']:.2f}")
        print(f"  last snapshot beats every earlier one: {result['last_beats_all_earlier']}")
        if args.out:
            with open(args.out, "w") as file:
                json.dump(results, file, indent=1, default=float)
    finals = {bot: [r["evaluations"][-1][bot] for r in results] for bot in BOTS}
    print("\nfinal win rates (median over seeds): "
          + ", ".join(f"{bot} {np.median(v):.1%}" for bot, v in finals.items()))  # fmt: skip
    halves = {bot: [r["second_half_mean"][bot] for r in results] for bot in BOTS}
    print("second-half means (median over seeds): "
          + ", ".join(f"{bot} {np.median(v):.1%}" for bot, v in halves.items()))  # fmt: skip


if __name__ == "__main__":
    main()
