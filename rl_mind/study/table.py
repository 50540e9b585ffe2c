"""The results of runs as one table: :func:`load_table`.

The table is a pandas ``DataFrame`` with one row per (run, evaluation), in these columns:

- the variant's columns (a study's grid keys, read from each run's ``config.json``);
- ``seed``;
- ``step`` and ``return`` (the evaluation's ``mean_return``, against the training step);
- every other column of the run's ``evaluations.csv``: ``std_return``, ``min_return``,
  ``max_return``, ``mean_length``, then the run's extra metrics (``critic_bias``, ...);
- ``run``: the name of the run's folder.

It loads from a study's directory, and from any folders holding an ``evaluations.csv``
(what an :class:`~rl_mind.evaluation.Evaluator` given ``logs=True`` writes), so runs made
without the study runner compare the same way. Runs are read only through their files.

What the reader must not get wrong: a study's runs that did not finish (failed, or still
running) are left out unless ``unfinished=True``: their curves stop early, and a final
performance computed over them would mix budgets.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_mind.records import CSV_COLUMNS, EVALUATIONS_FILE, read_evaluations
from rl_mind.study.runs import STUDY_FILE, read_config, read_json, read_status

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_table"]


def _run_folders(path: Path, *, unfinished: bool) -> tuple[list[Path], list[str]]:
    """The run folders under ``path`` (in a study's order, else sorted) and the variant's
    column names that ``path`` declares (a study's grid keys; none otherwise)."""
    if path.is_file():
        if path.name != EVALUATIONS_FILE:
            raise ValueError(f"load_table: {path} is a file; expected a study directory, a run "
                             f"folder, or an {EVALUATIONS_FILE}")  # fmt: skip
        return [path.parent], []
    index = read_json(path / STUDY_FILE)
    if index is not None:
        folders = [path / run["name"] for run in index.get("runs", [])]
        keys = list(index.get("grid", {}))
    elif (path / EVALUATIONS_FILE).is_file():
        folders, keys = [path], []
    else:
        folders = sorted(csv.parent for csv in path.rglob(EVALUATIONS_FILE))
        keys = []
        if not folders:
            raise ValueError(f"load_table: no {EVALUATIONS_FILE} under {path}; expected a study "
                             f"directory or folders of runs whose Evaluator had logs=True")  # fmt: skip
    kept = []
    for folder in folders:
        status = read_status(folder)
        finished = status is None or status.get("state") == "done"
        if (finished or unfinished) and (folder / EVALUATIONS_FILE).is_file():
            kept.append(folder)
    return kept, keys


def _hashable(value: Any) -> Any:
    """JSON lists as tuples, so that a variant's column can be grouped by."""
    return tuple(_hashable(item) for item in value) if isinstance(value, list) else value


def _rows(folder: Path, variant_keys: list[str]) -> Iterator[dict[str, Any]]:
    config = read_config(folder) or {}
    status = read_status(folder) or {}
    seed = status.get("seed", config.get("seed"))
    for key in config:
        if key != "seed" and key not in variant_keys:
            variant_keys.append(key)
    variant = {key: _hashable(value) for key, value in config.items() if key != "seed"}
    for evaluation in read_evaluations(folder):
        row: dict[str, Any] = {**variant, "seed": seed}
        row["step"] = evaluation.pop("step")
        row["return"] = evaluation.pop("mean_return")
        row.update(evaluation)
        row["run"] = folder.name
        yield row


def load_table(*paths: str | os.PathLike[str], unfinished: bool = False) -> pd.DataFrame:
    """The evaluations of runs as a pandas ``DataFrame``, one row per (run, evaluation).

    Args:
        paths: study directories, run folders, ``evaluations.csv`` files, or any folders
            under which run folders hold an ``evaluations.csv`` (searched recursively).
        unfinished: also include a study's runs that failed or are still running (their
            ``status.json`` does not say ``"done"``). Runs made outside a study have no
            status and are always included.

    Returns:
        The columns: the variant's (from each run's ``config.json``; a study's grid keys
        first, in the grid's order), ``seed``, ``step``, ``return`` (``mean_return``), the
        other columns of ``evaluations.csv`` (``std_return``, ..., then extra metrics such
        as ``critic_bias``), and ``run`` (the run folder's name). A run without a
        ``config.json`` has no variant values (NaN) and, without a status, no seed.

    Raises:
        FileNotFoundError: a path that does not exist.
        ValueError: a folder with no ``evaluations.csv`` under it (and no ``study.json``).
    """
    import pandas as pd  # (an optional dependency: the `study` extra)

    if not paths:
        raise TypeError("load_table: expected at least one path (a study directory or run "
                        "folders holding an evaluations.csv)")  # fmt: skip
    resolved = [Path(path).expanduser().resolve() for path in paths]
    for path in resolved:
        if not path.exists():
            raise FileNotFoundError(f"load_table: {path} does not exist")
    variant_keys: list[str] = []
    folders: list[Path] = []
    for path in resolved:
        found, keys = _run_folders(path, unfinished=unfinished)
        variant_keys += [key for key in keys if key not in variant_keys]
        folders += [folder for folder in found if folder not in folders]  # (each run once)
    rows = [row for folder in folders for row in _rows(folder, variant_keys)]
    metrics = [name for name in CSV_COLUMNS if name not in ("step", "mean_return")]
    extras = sorted({name for row in rows for name in row} - {*variant_keys, *metrics} -
                    {"seed", "step", "return", "run"})  # fmt: skip
    columns = [*variant_keys, "seed", "step", "return", *metrics, *extras, "run"]
    table = pd.DataFrame(rows, columns=columns)
    if len(table) and table["seed"].isna().any():
        table["seed"] = table["seed"].astype("Int64")  # (runs without a seed: <NA>)
    elif len(table):
        table["seed"] = table["seed"].astype("int64")
    table["step"] = table["step"].astype("int64")
    return table
