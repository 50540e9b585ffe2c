"""Interval estimates across seeds: bootstrap confidence intervals, the IQM, and the
probability of improvement (rliable's definitions, Agarwal et al., NeurIPS 2021).

A study has a few seeds per variant. Their mean ± std says little: with 3 to 5 runs the std
is itself a noisy guess, and "the bands overlap" is not a test. Instead:

- the **interquartile mean** (IQM, :func:`iqm`): the mean of the middle 50% of the runs,
  robust to one lucky or broken seed, and less noisy than the median;
- a **bootstrap confidence interval** of the aggregate (:func:`interval_estimate`):
  resample the runs with replacement many times, recompute the aggregate each time, and
  keep the central 95% of the values (the percentile method). **Stratified**: with several
  tasks (environments), the runs of each task are resampled on their own, so that every
  resample keeps the design of the study;
- the **probability of improvement** (:func:`probability_of_improvement`): the chance that
  a run of variant X beats a run of variant Y on the same task, ties counting one half, with
  its bootstrap interval. 0.5 means "no evidence of a difference".

The resampling is SciPy's :func:`scipy.stats.bootstrap`, seeded (``seed``): the same call
gives the same interval. What the reader must not get wrong: an interval says how precisely
a few seeds pin down the aggregate, not how much single runs vary; and it needs at least 2
runs per task (a single run has no spread to resample).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "AGGREGATES",
    "IntervalEstimate",
    "interval_estimate",
    "iqm",
    "probability_of_improvement",
]


def iqm(scores: ArrayLike, axis: int = -1) -> Any:
    """The interquartile mean along ``axis``: the mean of the scores left once the lowest and
    the highest 25% are cut (``scipy.stats.trim_mean(scores, 0.25)``, as rliable: ``n // 4``
    scores at each end, so the IQM of 3 runs is their mean)."""
    from scipy.stats import trim_mean

    return trim_mean(np.asarray(scores, dtype=float), 0.25, axis=axis)


AGGREGATES: dict[str, Callable[..., Any]] = {"mean": np.mean, "iqm": iqm, "median": np.median}
"""The aggregates across runs, by name: ``"mean"``, ``"iqm"`` (:func:`iqm`), ``"median"``."""


class IntervalEstimate(NamedTuple):
    """An aggregate and its confidence interval: ``point``, ``low``, ``high`` (floats, or
    arrays ``[S]`` for scores with a step axis), with the ``confidence`` level."""

    point: Any
    low: Any
    high: Any
    confidence: float


def _strata(
    scores: ArrayLike | Mapping[str, ArrayLike], name: str
) -> dict[str, NDArray[np.float64]]:
    """The runs of each task: one array ``[R_k, ...]`` per task (one task "" for an array)."""
    tasks = dict(scores) if isinstance(scores, Mapping) else {"": scores}
    arrays = {task: np.asarray(value, dtype=float) for task, value in tasks.items()}
    if not arrays:
        raise ValueError(f"{name}: expected scores, got an empty mapping of tasks")
    for task, array in arrays.items():
        where = f" of task {task!r}" if task else ""
        if array.ndim == 0 or array.shape[0] < 2:
            raise ValueError(f"{name}: expected the scores{where} of at least 2 runs (seeds), "
                             f"one per row, got shape {array.shape}; one run has no interval")  # fmt: skip
        if not np.isfinite(array).all():
            raise ValueError(f"{name}: the scores{where} hold NaN or infinite values; drop the "
                             f"runs without a score first")  # fmt: skip
    if len({array.shape[1:] for array in arrays.values()}) > 1:
        shapes = {task: array.shape for task, array in arrays.items()}
        raise ValueError(f"{name}: the tasks' scores differ in shape beyond the runs axis: "
                         f"{shapes}")  # fmt: skip
    return arrays


def _bootstrap(
    data: list[NDArray[np.float64]],
    statistic: Callable[..., Any],
    confidence: float,
    n_resamples: int,
    seed: int,
    name: str,
) -> tuple[Any, Any]:
    from scipy.stats import bootstrap

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"{name}: confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"{name}: n_resamples must be an int >= 100, got {n_resamples!r}")
    result = bootstrap(tuple(data), statistic, n_resamples=n_resamples, vectorized=True,
                       axis=0, confidence_level=confidence, method="percentile",
                       rng=np.random.default_rng(seed), batch=1000)  # fmt: skip
    interval = result.confidence_interval
    return interval.low, interval.high


def _scalar(value: Any) -> Any:
    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array


def interval_estimate(
    scores: ArrayLike | Mapping[str, ArrayLike],
    aggregate: str = "iqm",
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> IntervalEstimate:
    """The ``aggregate`` of the runs' scores and its stratified bootstrap confidence interval.

    Args:
        scores: ``[R]`` (one score per run: a final return), or ``[R, S]`` (a score per run
            and step: a learning curve, one interval per step), or a list of such arrays,
            one per task (the strata: each task's runs are resampled on their own, and the
            aggregate is taken over all the runs of a resample).
        aggregate: ``"iqm"`` (the interquartile mean), ``"mean"`` or ``"median"``.
        confidence: the level of the interval (0.95: the central 95% of the resamples).
        n_resamples: the bootstrap resamples.
        seed: seeds the resampling: the same arguments give the same interval.

    Returns:
        The point estimate (the aggregate of the scores themselves) and the percentile
        interval. The scores of a constant give a point: ``low == point == high``.
    """
    name = "interval_estimate"
    if aggregate not in AGGREGATES:
        raise ValueError(f"{name}: aggregate must be one of {sorted(AGGREGATES)}, "
                         f"got {aggregate!r}")  # fmt: skip
    function = AGGREGATES[aggregate]
    data = list(_strata(scores, name).values())

    def statistic(*samples: NDArray[np.float64], axis: int = -1) -> Any:
        return function(np.concatenate(samples, axis=axis), axis=axis)

    low, high = _bootstrap(data, statistic, confidence, n_resamples, seed, name)
    point = function(np.concatenate(data, axis=0), axis=0)
    return IntervalEstimate(_scalar(point), _scalar(low), _scalar(high), confidence)


def _improvement(x: NDArray[np.float64], y: NDArray[np.float64], axis: int = -1) -> Any:
    """P(X > Y) over all pairs of runs, ties counting one half (Mann-Whitney's U / (n m))."""
    x, y = np.moveaxis(x, axis, -1)[..., :, None], np.moveaxis(y, axis, -1)[..., None, :]
    return (x > y).mean(axis=(-2, -1)) + 0.5 * (x == y).mean(axis=(-2, -1))


def probability_of_improvement(
    x: ArrayLike | Mapping[str, ArrayLike],
    y: ArrayLike | Mapping[str, ArrayLike],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> IntervalEstimate:
    """The probability that variant X improves on variant Y, with its bootstrap interval.

    rliable's definition: on each task, the probability that a run of X scores higher than
    a run of Y (over every pair of runs, a tie counting one half), averaged over the tasks.
    The interval resamples the runs of X and of Y independently within each task.

    Args:
        x: the final scores ``[R_x]`` of the runs of X, or a dict of such arrays by task.
        y: the final scores ``[R_y]`` of the runs of Y (the numbers of runs may differ), or
            a dict of such arrays by task, with the same tasks as ``x``.
        confidence: the level of the interval, as :func:`interval_estimate`.
        n_resamples: the bootstrap resamples.
        seed: seeds the resampling.

    Returns:
        An :class:`IntervalEstimate` in [0, 1]: 1 when every run of X beats every run of Y,
        0.5 for identical variants.
    """
    name = "probability_of_improvement"
    xs, ys = _strata(x, name), _strata(y, name)
    if xs.keys() != ys.keys() or any(a.ndim != 1 for a in [*xs.values(), *ys.values()]):
        shapes = [{task: a.shape for task, a in tasks.items()} for tasks in (xs, ys)]
        raise ValueError(f"{name}: expected one score per run ([R]) for X and Y, on the same "
                         f"tasks, got {shapes[0]} and {shapes[1]}")  # fmt: skip

    def statistic(*samples: NDArray[np.float64], axis: int = -1) -> Any:
        pairs = zip(samples[0::2], samples[1::2])
        return np.mean([_improvement(a, b, axis) for a, b in pairs], axis=0)

    data = [array for task in xs for array in (xs[task], ys[task])]
    low, high = _bootstrap(data, statistic, confidence, n_resamples, seed, name)
    point = statistic(*data, axis=0)
    return IntervalEstimate(_scalar(point), _scalar(low), _scalar(high), confidence)
