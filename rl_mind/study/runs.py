"""A run directory's files: what a study writes beside the training function's own.

A study gives each run (one variant of the grid, one seed) its own folder, and writes there:

- ``config.json``: the variant's values, by name (what the training function received,
  besides ``seed`` and ``run_dir``);
- ``status.json``: the run's ``state`` (``"running"``, ``"done"`` or ``"failed"``), its
  ``seed``, when it started and finished, and a failed run's ``error`` (the traceback).

:func:`execute_run` is what every engine runs for a run: it writes those files around the
training function's call. The training function writes the rest through its :class:`~rl_mind.evaluation.Evaluator`
(``logs=True``): ``evaluations.csv``, the TensorBoard event files, ``best_actor.pt``, and
whatever checkpoints it saves.

What the reader must not get wrong: every file here is written whole or not at all (to a
temporary name, then renamed), so a run killed at any moment leaves either its previous
status or its new one, never half of one. A ``"running"`` status whose process is gone
(the worker was killed) is the mark of a run to run again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "CONFIG_FILE",
    "Run",
    "STATUS_FILE",
    "STUDY_FILE",
    "read_config",
    "execute_run",
    "read_status",
    "write_json",
]

CONFIG_FILE = "config.json"
STATUS_FILE = "status.json"
STUDY_FILE = "study.json"


def write_json(path: str | os.PathLike[str], data: Mapping[str, Any] | list[Any]) -> None:
    """Write ``data`` as JSON at ``path`` atomically: into a temporary file of the same
    folder, flushed to disk, then renamed over ``path`` (a reader sees the old file or the
    new one, never a half-written one)."""
    path = Path(path)
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    # (open(..., "x") rather than mkstemp: the file gets the umask's mode, readable by the
    # group where a cluster's shared folder needs it)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "x", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def read_status(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``status.json`` of ``run_dir`` as a dict (``state``, ``seed``, ``started``,
    ``finished``, ``seconds``, ``error``, ...), or None where the run has none (not started,
    or made outside a study)."""
    return read_json(Path(run_dir) / STATUS_FILE)


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``config.json`` of ``run_dir`` (the variant's values by name), or None."""
    return read_json(Path(run_dir) / CONFIG_FILE)


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a study: a variant of the grid (``config``, by name) and a ``seed``, in
    its own ``directory`` (``name`` is the folder's name, e.g. ``algo=td3,seed=0``)."""

    name: str
    config: Mapping[str, Any]
    seed: int
    directory: Path

    @property
    def state(self) -> str:
        """``"missing"`` (never started), ``"running"``, ``"done"`` or ``"failed"``, as its
        ``status.json`` says (a ``"running"`` run whose process is gone stays so until the
        study runs it again)."""
        status = read_status(self.directory)
        return "missing" if status is None else str(status.get("state", "missing"))


def now() -> str:
    """The time now, in UTC to the second, as ISO 8601 (``2026-01-31T09:30:00+00:00``): a
    run's ``started`` and ``finished``; such strings compare in time order."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def execute_run(
    function: Callable[..., Any], config: Mapping[str, Any], seed: int, run_dir: str
) -> dict[str, Any]:
    """Run ``function(**config, seed=seed, run_dir=run_dir)`` in ``run_dir`` with one torch
    thread, writing its ``config.json`` and ``status.json``; return the final status.

    This is what every engine runs (a local process, a Dask worker, a SLURM job). A run
    whose status already says ``"done"`` is not run again. Any other folder (a failed run,
    or one whose worker was killed) is emptied first, so the run starts from scratch; a
    folder that holds files but no ``status.json`` is no run's, and is refused
    (``ValueError``), never emptied. An exception of ``function`` is caught: the status
    says ``"failed"``, with the traceback.
    """
    directory = Path(run_dir)
    previous = read_status(directory)
    if previous is not None and previous.get("state") == "done":
        return previous
    if previous is None and directory.is_dir() and any(directory.iterdir()):
        raise ValueError(f"execute_run: {directory} holds files but no {STATUS_FILE}: it is "
                         f"not a study's run folder, and is left as it is")  # fmt: skip
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    # (the status first: a folder of this study always has one, unless it is empty)
    status: dict[str, Any] = {"state": "running", "seed": seed, "started": now(),
                              "host": socket.gethostname(), "pid": os.getpid()}  # fmt: skip
    write_json(directory / STATUS_FILE, status)
    write_json(directory / CONFIG_FILE, dict(config))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (one run per core: more threads would fight over the cores)
    start = time.perf_counter()
    try:
        function(**config, seed=seed, run_dir=directory)
    except Exception:
        status.update(state="failed", error=traceback.format_exc())
    else:
        status.update(state="done")
    finally:
        torch.set_num_threads(threads)
    status.update(finished=now(), seconds=round(time.perf_counter() - start, 3))
    write_json(directory / STATUS_FILE, status)
    return status
