"""Records of evaluations: :class:`EvalResult`, and a run's ``evaluations.csv``.

An :class:`~rl_mind.evaluation.Evaluator` given ``logs=True`` appends one row to
``run_dir/evaluations.csv`` per evaluation; a study reads runs through that file
(:func:`read_evaluations`), never through the evaluator that wrote it.

What the reader must not get wrong: ``mean_return`` is the mean over the evaluation's
episodes (one per copy of the evaluation environment), against the training ``step``; the
extra metrics of a run (``critic_bias``, ...) are columns after :data:`CSV_COLUMNS`.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from torch import Tensor

__all__ = ["CSV_COLUMNS", "EVALUATIONS_FILE", "EvalResult", "append_evaluation", "read_evaluations"]


@dataclasses.dataclass(frozen=True)
class EvalResult:
    """One evaluation: the training ``step`` it ran at, ``rewards`` ``[B]`` (the return of the
    episode of each copy), whether it ``is_best`` so far, the episodes' ``lengths`` ``[B]``,
    and ``extras``: further metrics of the evaluation by name (logged as ``eval/<name>`` and
    as columns of ``evaluations.csv``)."""

    step: int
    rewards: Tensor
    is_best: bool
    lengths: Tensor | None = None
    extras: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def mean(self) -> float:
        """Mean return over the copies."""
        return float(self.rewards.float().mean())

    @property
    def std(self) -> float:
        """Standard deviation of the returns over the copies (population: 0 for one copy)."""
        return float(self.rewards.float().std(correction=0))

    @property
    def min(self) -> float:
        return float(self.rewards.min())

    @property
    def max(self) -> float:
        return float(self.rewards.max())

    def statistics(self) -> dict[str, float]:
        """``mean_return``, ``std_return``, ``min_return``, ``max_return`` and (with
        ``lengths``) ``mean_length``: the columns of :data:`CSV_COLUMNS` after ``step``, and
        with the ``extras`` the TensorBoard scalars ``eval/<name>``."""
        statistics = {"mean_return": self.mean, "std_return": self.std,
                      "min_return": self.min, "max_return": self.max}  # fmt: skip
        if self.lengths is not None:
            statistics["mean_length"] = float(self.lengths.float().mean())
        return statistics

    def __repr__(self) -> str:
        best = ", best" if self.is_best else ""
        statistics = f"mean={self.mean:.2f}, std={self.std:.2f}, episodes={len(self.rewards)}"
        return f"EvalResult(step={self.step}, {statistics}{best})"


EVALUATIONS_FILE = "evaluations.csv"
CSV_COLUMNS = ("step", "mean_return", "std_return", "min_return", "max_return", "mean_length")


def append_evaluation(result: EvalResult, path: Path) -> None:
    """Append ``result`` as one row of the ``evaluations.csv`` at ``path`` (the header first,
    in a new or empty file): :data:`CSV_COLUMNS`, then ``result.extras`` by name."""
    statistics = result.statistics()  # (no mean_length without lengths: an empty cell)
    row = [result.step, *(statistics.get(column, "") for column in CSV_COLUMNS[1:])]
    names = sorted(result.extras)
    with path.open("a", newline="") as file:  # (an OSError here: the evaluation is still due)
        writer = csv.writer(file)
        if file.tell() == 0:
            writer.writerow([*CSV_COLUMNS, *names])
        writer.writerow([*row, *(result.extras[name] for name in names)])


def read_evaluations(path: str | os.PathLike[str]) -> list[dict[str, float]]:
    """The rows of an ``evaluations.csv`` (or of the one in the folder ``path``), as dicts of
    floats by column (``step`` as an int); an empty cell (no ``mean_length``) is NaN."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / EVALUATIONS_FILE
    with path.open(newline="") as file:
        rows = list(csv.DictReader(file))
    if rows and "step" not in rows[0]:
        raise ValueError(f"read_evaluations: {path} has no 'step' column; expected the columns "
                         f"{', '.join(CSV_COLUMNS)} (an Evaluator's logs=True)")  # fmt: skip
    return [{name: int(value) if name == "step" else float(value or "nan")
             for name, value in row.items()} for row in rows]  # fmt: skip
