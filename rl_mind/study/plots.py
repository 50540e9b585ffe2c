"""Reading a study's results: learning curves, final performance and the probability of
improvement, each with interval estimates across seeds (:mod:`rl_mind.study.intervals`).

Every function reads **the table of a study** (a pandas ``DataFrame``, one row per run and
evaluation: the variant's columns, ``seed``, ``step``, ``return``, the other columns of
``evaluations.csv`` such as ``critic_bias``, and ``run``), from a study directory or from any
run folders holding an ``evaluations.csv``.

What the reader must not get wrong:

- A **variant** is a combination of the values of the variant's columns (``by``; by
  default the table's ``attrs["variants"]``, else every column that is constant within each
  run and is not a metric); its **runs** (one per seed) are the samples of the intervals.
- **Steps are aligned** per variant, by evaluation: the k-th evaluation of every run is
  one point of the curve, at the median of their steps, as long as they are closer to each
  other than half the gap to the next evaluation (the Evaluator's schedule, "every steps
  past the last", makes them equal, or a few steps apart with several environment copies).
  Otherwise each run's curve is interpolated linearly onto those median steps, within the
  steps every run reached. Either way a run that stopped early shortens its variant's curve
  rather than being extrapolated.
- **Final performance** is each run's value at its last evaluation.
- Every plot writes its aggregate and interval method on itself.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rl_mind.records import CSV_COLUMNS
from rl_mind.study.intervals import AGGREGATES, interval_estimate, probability_of_improvement

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "final_performance",
    "improvement_probabilities",
    "learning_curves",
    "plot_final_performance",
    "plot_improvement",
    "plot_learning_curves",
    "variant_columns",
]

# columns of the table that are never a variant's: what every run has, and what it measured
BASE_COLUMNS = ("run", "seed", "return", *CSV_COLUMNS)


def variant_columns(table: pd.DataFrame) -> list[str]:
    """The columns whose values make a variant: the table's ``attrs["variants"]`` if set,
    else the columns before ``seed`` (the study's table puts them first) that hold a value,
    else every column other than the metrics and ``run``, ``step`` that is constant within
    each run (a metric such as ``critic_bias`` changes from one evaluation to the next)."""
    _check_table(table, "variant_columns")
    if "variants" in table.attrs:
        return [column for column in table.attrs["variants"] if column in table.columns]
    columns = list(table.columns)
    if "seed" in columns:
        return [column for column in columns[: columns.index("seed")]
                if column not in BASE_COLUMNS and not table[column].isna().all()]  # fmt: skip
    candidates = [column for column in columns if column not in BASE_COLUMNS]
    runs = table.groupby("run", sort=False, dropna=False)
    return [column for column in candidates if bool((runs[column].nunique(dropna=False) <= 1).all())
            and not table[column].isna().all()]  # fmt: skip


def _check_table(table: Any, name: str, metric: str | None = None, aggregate: str = "iqm") -> None:
    import pandas as pd

    if aggregate not in AGGREGATES:
        raise ValueError(f"{name}: aggregate must be one of {sorted(AGGREGATES)}, "
                         f"got {aggregate!r}")  # fmt: skip
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{name}: expected the table of a study (a pandas DataFrame, e.g. "
                        f"rl_mind.study.load_table(study_dir)), got {type(table).__name__}")  # fmt: skip
    missing = [column for column in ("run", "step", metric) if column and column not in table]
    if missing:
        raise ValueError(f"{name}: the table has no column {', '.join(map(repr, missing))}; its "
                         f"columns are {list(table.columns)}")  # fmt: skip
    if table.empty:
        raise ValueError(f"{name}: the table is empty (no evaluation was logged)")


def _labels(table: pd.DataFrame, by: Sequence[str] | None) -> Any:
    """The variant of each row as a label, ``"algo=td3, layer_norm=True"`` (the run's name
    when there is no variant column)."""
    columns = variant_columns(table) if by is None else list(by)
    unknown = [column for column in columns if column not in table.columns]
    if unknown:
        raise ValueError(f"the variant's columns {unknown} are not in the table; its columns "
                         f"are {list(table.columns)}")  # fmt: skip
    if not columns:
        return table["run"].astype(str)
    if len(columns) == 1:
        return table[columns[0]].astype(str)
    return (
        table[columns]
        .astype(str)
        .apply(lambda row: ", ".join(f"{column}={value}" for column, value in row.items()), axis=1)
    )


def _runs(table: pd.DataFrame, metric: str, by: Sequence[str] | None) -> dict[str, list[Any]]:
    """``{variant: [(steps [n], values [n]) of each run]}``, NaN values dropped, in the
    table's order of appearance."""
    labels = _labels(table, by)
    variants: dict[str, list[Any]] = {}
    for (label, _run), rows in table.groupby([labels, table["run"]], sort=False, dropna=False):
        rows = rows.sort_values("step")
        values = rows[metric].to_numpy(dtype=float)
        finite = np.isfinite(values)
        steps = rows["step"].to_numpy(dtype=float)[finite]
        variants.setdefault(str(label), []).append((steps, values[finite]))
    return variants


def _align(runs: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Steps ``[S]`` and values ``[R, S]`` of the runs of one variant (see the module)."""
    runs = [(steps, values) for steps, values in runs if len(steps)]
    if not runs:
        return np.zeros(0), np.zeros((0, 0))
    count = min(len(steps) for steps, _values in runs)
    kth = np.stack([steps[:count] for steps, _values in runs])  # [R, count]
    grid = np.median(kth, axis=0)
    spread, gaps = np.ptp(kth, axis=0), np.diff(grid)
    if count == 1 or spread.max() < 0.5 * gaps.min():  # the same evaluations, a few steps apart
        return grid, np.stack([values[:count] for _steps, values in runs])
    low, high = max(steps[0] for steps, _ in runs), min(steps[-1] for steps, _ in runs)
    grid = grid[(grid >= low) & (grid <= high)]
    return grid, np.stack([np.interp(grid, steps, values) for steps, values in runs])


def learning_curves(
    table: pd.DataFrame,
    metric: str = "return",
    aggregate: str = "iqm",
    *,
    by: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> pd.DataFrame:
    """The ``aggregate`` of ``metric`` across the runs of each variant at each step, with its
    bootstrap confidence interval: a DataFrame with the columns ``variant, step, point, low,
    high, runs`` (``low``/``high`` NaN for a variant of one run)."""
    import pandas as pd

    _check_table(table, "learning_curves", metric, aggregate)
    frames = []
    for label, runs in _runs(table, metric, by).items():
        steps, values = _align(runs)
        if not len(steps):
            continue
        if len(values) >= 2:
            estimate = interval_estimate(values, aggregate, confidence=confidence,
                                         n_resamples=n_resamples, seed=seed)  # fmt: skip
            point, low, high = estimate.point, estimate.low, estimate.high
        else:
            point, low, high = values[0], np.full(len(steps), np.nan), np.full(len(steps), np.nan)
        frames.append(pd.DataFrame({"variant": label, "step": steps, "point": point, "low": low,
                                    "high": high, "runs": len(values)}))  # fmt: skip
    if not frames:
        raise ValueError(f"learning_curves: no run has a finite {metric!r} value")
    return pd.concat(frames, ignore_index=True)


def _final_scores(table: pd.DataFrame, metric: str, by: Sequence[str] | None) -> dict[str, Any]:
    """``{variant: scores [R]}``: each run's ``metric`` at its last evaluation with a value."""
    return {label: np.array([values[-1] for _steps, values in runs if len(values)])
            for label, runs in _runs(table, metric, by).items()}  # fmt: skip


def final_performance(
    table: pd.DataFrame,
    metric: str = "return",
    aggregate: str = "iqm",
    *,
    by: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each variant's ``aggregate`` of its runs' final ``metric`` (at their last evaluation),
    with its bootstrap confidence interval: a DataFrame indexed by variant with the columns
    ``point, low, high, runs, scores`` (``scores``: the runs' final values)."""
    import pandas as pd

    _check_table(table, "final_performance", metric, aggregate)
    rows = []
    for label, scores in _final_scores(table, metric, by).items():
        if len(scores) >= 2:
            estimate = interval_estimate(scores, aggregate, confidence=confidence,
                                         n_resamples=n_resamples, seed=seed)  # fmt: skip
            point, low, high = estimate.point, estimate.low, estimate.high
        else:
            point = float(scores[0]) if len(scores) else math.nan
            low = high = math.nan
        rows.append({"variant": label, "point": point, "low": low, "high": high,
                     "runs": len(scores), "scores": scores.tolist()})  # fmt: skip
    return pd.DataFrame(rows).set_index("variant")


def improvement_probabilities(
    table: pd.DataFrame,
    metric: str = "return",
    *,
    by: Sequence[str] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """P(X > Y) of the final ``metric`` for each pair of variants (``pairs`` of labels, by
    default every pair in the table's order), with its bootstrap interval: a DataFrame with
    the columns ``x, y, point, low, high``. Variants of fewer than 2 runs are left out."""
    import pandas as pd

    _check_table(table, "improvement_probabilities", metric)
    scores = {label: s for label, s in _final_scores(table, metric, by).items() if len(s) >= 2}
    if pairs is None:
        pairs = list(itertools.combinations(scores, 2))
    unknown = sorted({label for pair in pairs for label in pair} - set(scores))
    if unknown:
        raise ValueError(f"improvement_probabilities: no variant of at least 2 runs is called "
                         f"{unknown}; the variants are {list(scores)}")  # fmt: skip
    rows = []
    for x, y in pairs:
        estimate = probability_of_improvement(scores[x], scores[y], confidence=confidence,
                                              n_resamples=n_resamples, seed=seed)  # fmt: skip
        rows.append({"x": x, "y": y, "point": estimate.point, "low": estimate.low,
                     "high": estimate.high})  # fmt: skip
    return pd.DataFrame(rows, columns=["x", "y", "point", "low", "high"])


def _method(aggregate: str, confidence: float, n_resamples: int) -> str:
    name = {"iqm": "IQM", "mean": "mean", "median": "median"}[aggregate]
    return (f"{name} across runs; {confidence:.0%} bootstrap CI "
            f"(percentile, {n_resamples:,} resamples)")  # fmt: skip


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _figure, new = plt.subplots(figsize=size)
    return new


def _save(ax: Axes, path: str | os.PathLike[str] | None) -> None:
    if path is not None:
        figure: Any = ax.figure
        figure.savefig(Path(path).expanduser(), dpi=100, bbox_inches="tight")


def plot_learning_curves(
    table: pd.DataFrame,
    metric: str = "return",
    aggregate: str = "iqm",
    *,
    by: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Axes:
    """Learning curves of ``metric`` per variant: the ``aggregate`` across runs against the
    training steps, in a band of its bootstrap CI (:func:`learning_curves`); the method is
    written on the plot. Draws on ``ax`` (a new figure if None), saves a PNG to ``path`` if
    given, and returns the axes."""
    curves = learning_curves(table, metric, aggregate, by=by, confidence=confidence,
                             n_resamples=n_resamples, seed=seed)  # fmt: skip
    ax = _axes(ax, (7, 4))
    for label, curve in curves.groupby("variant", sort=False):
        runs = int(curve["runs"].iloc[0])
        name = f"{label} ({runs} run{'s' if runs > 1 else ''}{': no CI' if runs < 2 else ''})"
        line = ax.plot(curve["step"], curve["point"], label=name)[0]
        if runs >= 2:
            ax.fill_between(curve["step"], curve["low"], curve["high"], alpha=0.25,
                            color=line.get_color(), linewidth=0)  # fmt: skip
    if metric == "critic_bias":
        ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel("training steps")
    ax.set_ylabel(metric)
    ax.set_title(_method(aggregate, confidence, n_resamples), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    _save(ax, path)
    return ax


def plot_final_performance(
    table: pd.DataFrame,
    metric: str = "return",
    aggregate: str = "iqm",
    *,
    by: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Axes:
    """Final performance per variant: the ``aggregate`` of the runs' final ``metric`` with its
    CI as a bar, and each run's value as a dot (:func:`final_performance`)."""
    final = final_performance(table, metric, aggregate, by=by, confidence=confidence,
                              n_resamples=n_resamples, seed=seed)  # fmt: skip
    ax = _axes(ax, (7, 0.6 * len(final) + 1.2))
    for row, (_label, result) in enumerate(final.iterrows()):
        if not math.isnan(result["low"]):
            ax.plot([result["low"], result["high"]], [row, row], linewidth=8, alpha=0.35,
                    solid_capstyle="butt", color=f"C{row}")  # fmt: skip
        ax.plot([result["point"]], [row], marker="|", markersize=16, color=f"C{row}")
        ax.plot(result["scores"], [row] * len(result["scores"]), linestyle="none", marker="o",
                markersize=3, color="black")  # fmt: skip
    ax.set_yticks(range(len(final)), [f"{label} ({int(runs)})" for label, runs
                                      in final["runs"].items()])  # fmt: skip
    ax.set_ylim(-0.7, len(final) - 0.3)
    ax.set_xlabel(f"final {metric} (each dot: a run; in brackets: the runs)")
    ax.set_title(_method(aggregate, confidence, n_resamples), fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    _save(ax, path)
    return ax


def plot_improvement(
    table: pd.DataFrame,
    metric: str = "return",
    *,
    by: Sequence[str] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Axes:
    """The probability of improvement P(X > Y) of the final ``metric`` for pairs of variants,
    with its bootstrap CI (:func:`improvement_probabilities`); 0.5 is marked: an interval
    that holds it is no evidence of a difference."""
    probabilities = improvement_probabilities(table, metric, by=by, pairs=pairs,
                                              confidence=confidence, n_resamples=n_resamples,
                                              seed=seed)  # fmt: skip
    if probabilities.empty:
        raise ValueError("plot_improvement: no pair of variants with at least 2 runs each")
    ax = _axes(ax, (7, 0.6 * len(probabilities) + 1.2))
    for row, pair in probabilities.iterrows():
        ax.plot([pair["low"], pair["high"]], [row, row], linewidth=8, alpha=0.35,
                solid_capstyle="butt", color=f"C{row}")  # fmt: skip
        ax.plot([pair["point"]], [row], marker="|", markersize=16, color=f"C{row}")
    ax.set_yticks(range(len(probabilities)),
                  [f"P({pair.x} > {pair.y})" for pair in probabilities.itertuples()])  # fmt: skip
    ax.axvline(0.5, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.7, len(probabilities) - 0.3)
    ax.set_xlabel(f"probability of improvement (final {metric})")
    ax.set_title(f"P(a run of X beats a run of Y); {confidence:.0%} bootstrap CI "
                 f"(percentile, {n_resamples:,} resamples)", fontsize=9)  # fmt: skip
    ax.grid(alpha=0.3, axis="x")
    _save(ax, path)
    return ax
