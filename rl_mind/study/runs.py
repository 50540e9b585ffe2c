"""A run directory's files: what a study writes beside the training function's own.

A study gives each run (one variant of the grid, one seed) its own folder, and writes there:

- ``config.json``: the variant's values, by name (what the training function received,
  besides ``seed`` and ``run_dir``);
- ``status.json``: the run's ``state`` (``"running"``, ``"done"`` or ``"failed"``), its
  ``seed``, when it started and finished, and a failed run's ``error`` (the traceback).

The training function writes the rest through its :class:`~rl_mind.evaluation.Evaluator`
(``logs=True``): ``evaluations.csv``, the TensorBoard event files, ``best_actor.pt``, and
whatever checkpoints it saves.

What the reader must not get wrong: every file here is written whole or not at all (to a
temporary name, then renamed), so a run killed at any moment leaves either its previous
status or its new one, never half of one. A ``"running"`` status whose process is gone
(the worker was killed) is the mark of a run to run again.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CONFIG_FILE",
    "STATUS_FILE",
    "STUDY_FILE",
    "read_config",
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


def _read_json(path: Path) -> dict[str, Any] | None:
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
    return _read_json(Path(run_dir) / STATUS_FILE)


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``config.json`` of ``run_dir`` (the variant's values by name), or None."""
    return _read_json(Path(run_dir) / CONFIG_FILE)
