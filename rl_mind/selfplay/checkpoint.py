"""The checkpoint of a ``rl-mind selfplay`` run, and the best weights of a run.

A run directory's ``checkpoint.pt`` (written with :func:`~rl_mind.checkpoints.save_checkpoint`,
read with ``weights_only``) holds ``{"format": JOB_FORMAT, "minutes": budget, "trainer":
trainer_state(trainer)}``. The job writes and resumes it (:mod:`rl_mind.selfplay.job`); the
class arena and ``rl-mind play`` read a run's best agent from it with :func:`best_weights`.

What the reader must not get wrong:

- A state is checked whole before anything is restored: a missing part, a network of
  another shape or a counter that is not a number is refused (:class:`CheckpointError`
  naming the file), and a trainer is never left half-restored.
- "The best weights of a run" are those of the player ranked highest in its
  ``leaderboard.csv`` among its snapshots and its agent (averaged weights); a run without
  a leaderboard (interrupted) gives its agent. Snapshot names are made and read back by
  :func:`~rl_mind.selfplay.trainer.snapshot_name` / :func:`~rl_mind.selfplay.trainer.snapshot_id`.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from rl_mind.checkpoints import CheckpointError, load_checkpoint
from rl_mind.selfplay.trainer import SelfPlayConfig, SelfPlayTrainer, best_rated

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_NAME",
    "JOB_FORMAT",
    "TRAINER_STATE_PARTS",
    "best_weights",
    "config_of_checkpoint",
    "job_state",
    "load_trainer_state",
    "missing_parts",
    "read_job_checkpoint",
    "restored_trainer",
    "trainer_state",
]

CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "rl-mind selfplay checkpoint 2"  # the trainer's state
FORMAT_1 = "rl-mind selfplay checkpoint 1"  # (no averaged agent, no forecast)
JOB_FORMAT = "rl-mind selfplay job 1"  # checkpoint.pt: the trainer's state and the budget


# ---------------------------------------------------------------------- the trainer's state
def trainer_state(trainer: SelfPlayTrainer) -> dict[str, Any]:
    """The whole training state of ``trainer``, readable with ``torch.load(weights_only=True)``:
    networks, optimizer, pool, archive, counters, evaluations, online Elo, random states."""
    return {
        "format": CHECKPOINT_FORMAT,
        "config": dataclasses.asdict(trainer.config),
        "policy": trainer.policy.state_dict(),
        "averaged_policy": trainer.averaged_policy.state_dict(),
        "critic": trainer.critic.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "pool": trainer.pool.state_dict(),
        "archive": trainer.archive,
        "counters": {
            "updates": trainer.updates,
            "env_steps": trainer.env_steps,
            "train_seconds": trainer.train_seconds,
        },
        "eval_history": trainer.eval_history,
        "online_elo": {
            "ratings": dict(trainer.online_elo.ratings),
            "games": dict(trainer.online_elo.games),
            "points": dict(trainer.online_elo.points),
        },
        "rng": {
            "torch": torch.get_rng_state(),
            "minibatches": trainer.minibatch_generator.get_state(),
        },
    }


#: The parts of a :func:`trainer_state`, with the entries that the dict-valued ones hold.
TRAINER_STATE_PARTS: dict[str, tuple[str, ...]] = {
    "config": (),
    "policy": (),
    "critic": (),
    "optimizer": (),
    "pool": (),
    "archive": (),
    "counters": ("updates", "env_steps", "train_seconds"),
    "eval_history": (),
    "online_elo": ("ratings", "games", "points"),
    "rng": ("torch", "minibatches"),
}


def missing_parts(state: Mapping[str, Any]) -> list[str]:
    """The parts of a :func:`trainer_state` that ``state`` lacks (``"rng.torch"`` for an
    entry of a part); empty when it has them all. (The first format had no agent.)"""
    missing = [] if state.get("format") != CHECKPOINT_FORMAT else ["averaged_policy"]
    missing = [part for part in missing if part not in state]
    for part, entries in TRAINER_STATE_PARTS.items():
        if part not in state:
            missing.append(part)
        elif entries:
            value = state[part]
            held = value if isinstance(value, Mapping) else {}
            missing += [f"{part}.{entry}" for entry in entries if entry not in held]
    return missing


def config_of_checkpoint(
    state: Mapping[str, Any], device: str | torch.device | None = None
) -> SelfPlayConfig:
    """The config a :func:`trainer_state` was saved with, on ``device`` when given (a run
    saved on a GPU resumes on a machine without one). A checkpoint of the first format
    predates ``ball_forecast``: its networks saw the bare observation; one without
    ``activation`` has tanh networks."""
    values = dict(state["config"])
    if device is not None:
        values["device"] = device
    if state.get("format") == FORMAT_1:
        values.setdefault("ball_forecast", False)
    values.setdefault("activation", "tanh")  # (saved before the setting: tanh networks)
    known = {field.name for field in dataclasses.fields(SelfPlayConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"SelfPlayConfig: unknown settings {unknown}")
    return SelfPlayConfig(**values)


def load_trainer_state(trainer: SelfPlayTrainer, state: Mapping[str, Any]) -> None:
    """Restore a :func:`trainer_state` into ``trainer`` (built with the saved config, see
    :func:`config_of_checkpoint`); its matches restart fresh.

    A checkpoint of the first format (before the averaged agent) is accepted: its agent
    restarts from the learner's weights.
    """
    if state.get("format") not in (CHECKPOINT_FORMAT, FORMAT_1):
        if isinstance(state.get("trainer"), Mapping):  # (the job's checkpoint.pt)
            raise ValueError(
                "this is the checkpoint of a rl-mind selfplay run, whose trainer state is "
                "under 'trainer': pass load_checkpoint(path)['trainer']"
            )
        raise ValueError(
            f"not a rl-mind selfplay checkpoint: expected the format {CHECKPOINT_FORMAT!r}, "
            f"got {state.get('format')!r}"
        )
    missing = missing_parts(state)
    if missing:  # (checked before anything is restored)
        raise ValueError(f"the trainer state lacks {', '.join(missing)}")
    config = trainer.config
    saved = config_of_checkpoint(state, device=config.device)
    for name in ("hidden_sizes", "ball_forecast", "activation"):
        if getattr(saved, name) != getattr(config, name):
            raise ValueError(
                f"the checkpoint's networks have {name}={getattr(saved, name)!r}, this "
                f"trainer {getattr(config, name)!r}; build the trainer with the saved "
                f"config (config_of_checkpoint(state))"
            )
    trainer.policy.load_state_dict(state["policy"])
    trainer.averaged_policy.load_state_dict(state.get("averaged_policy", state["policy"]))
    trainer.critic.load_state_dict(state["critic"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.pool.load_state_dict(state["pool"], trainer.new_policy)
    trainer.archive = [dict(entry) for entry in state["archive"]]
    counters = state["counters"]
    trainer.updates = int(counters["updates"])
    trainer.env_steps = int(counters["env_steps"])
    trainer.train_seconds = float(counters["train_seconds"])
    trainer.eval_history = [dict(item) for item in state["eval_history"]]
    elo = state["online_elo"]
    trainer.online_elo.ratings = dict(elo["ratings"])
    trainer.online_elo.games = dict(elo["games"])
    trainer.online_elo.points = dict(elo["points"])
    rng = state["rng"]
    torch.set_rng_state(rng["torch"])
    trainer.minibatch_generator.set_state(rng["minibatches"])
    # Fresh matches (their opponents drawn from the restored pool), seeded from the
    # counters so that a resumed run does not replay the serves of the first one.
    trainer.env.close()  # (the matches in progress are dropped)
    trainer.new_matches(config.seed + 1_000 * trainer.updates + 1)


# ---------------------------------------------------------------------- the job's file
def job_state(trainer: SelfPlayTrainer, minutes: float) -> dict[str, Any]:
    """What the job saves in ``checkpoint.pt``: the trainer's state and the run's budget."""
    return {"format": JOB_FORMAT, "minutes": float(minutes), "trainer": trainer_state(trainer)}


def read_job_checkpoint(run_dir: Path) -> dict[str, Any]:
    """The :func:`job_state` in ``run_dir/checkpoint.pt``, checked whole: a
    :class:`CheckpointError` naming the file if it is not one, ``FileNotFoundError`` if absent."""
    path = run_dir / CHECKPOINT_NAME
    if not path.exists():
        raise FileNotFoundError(
            f"--resume {run_dir}: there is no {CHECKPOINT_NAME} in this folder; pass the run "
            f"directory printed by an earlier `rl-mind selfplay`"
        )
    state = load_checkpoint(path)  # CheckpointError naming the file if truncated/corrupt
    if not isinstance(state, dict) or state.get("format") != JOB_FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a rl-mind selfplay checkpoint")
    trainer = state.get("trainer")
    missing = [part for part in ("minutes", "trainer") if part not in state]
    if isinstance(trainer, Mapping):
        missing += [f"trainer.{part}" for part in missing_parts(trainer)]
    elif "trainer" in state:
        missing.append("trainer (not a dict)")
    if missing:
        raise CheckpointError(
            f"checkpoint {path} lacks {', '.join(missing)}: it was not loaded (it was not "
            f"written by rl-mind selfplay, or was changed since)"
        )
    return state


def restored_trainer(state: Mapping[str, Any], device: str | None, path: Path) -> SelfPlayTrainer:
    """The trainer of a job's checkpoint ``state`` read from ``path``. A part that does not
    fit (a network of another shape, a counter that is not a number) is a
    :class:`CheckpointError` naming the file; a device this machine lacks, a ValueError."""

    def refused(error: Exception) -> CheckpointError:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return CheckpointError(f"checkpoint {path} could not be restored: {reason}")

    try:
        config = config_of_checkpoint(state["trainer"], device=device)
    except (KeyError, TypeError) as error:  # (a ValueError names a bad setting or device)
        raise refused(error) from None
    trainer = SelfPlayTrainer(config)
    try:
        load_trainer_state(trainer, state["trainer"])
    except (RuntimeError, KeyError, TypeError, ValueError) as error:
        trainer.close()
        raise refused(error) from None
    return trainer


# ---------------------------------------------------------------------- the best weights
def best_weights(run_dir: str | Path) -> tuple[SelfPlayConfig, dict[str, torch.Tensor]] | None:
    """The config and the policy weights (a ``state_dict``) of a run's best agent: the
    highest-ranked of its snapshots and agent in ``leaderboard.csv``, else its agent.

    ``None`` when ``run_dir/checkpoint.pt`` is not a run's checkpoint; ``FileNotFoundError``
    when there is none; the checkpoint is read with ``weights_only`` (no code runs).
    """
    folder = Path(run_dir)
    state = load_checkpoint(folder / CHECKPOINT_NAME)
    trainer = state.get("trainer") if isinstance(state, dict) else None
    if not isinstance(trainer, dict) or "averaged_policy" not in trainer:
        return None
    config = config_of_checkpoint(trainer, device="cpu")
    ranking = []
    if (folder / "leaderboard.csv").is_file():
        with (folder / "leaderboard.csv").open(newline="") as file:
            ranking = [row.get("player", "") for row in csv.DictReader(file)]
    best = best_rated(trainer["archive"], ranking)
    return config, trainer["averaged_policy"] if best is None else trainer["archive"][best][
        "policy"
    ]
