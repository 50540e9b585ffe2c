"""rl_mind.study.intervals: bootstrap CIs, the IQM and the probability of improvement, on
cases with a known answer (rliable's definitions)."""

from __future__ import annotations

import numpy as np
import pytest

from rl_mind.study.intervals import interval_estimate, iqm, probability_of_improvement


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([1.0, 2.0, 3.0, 4.0, 100.0, -100.0, 5.0, 6.0]) == pytest.approx(3.5)
    assert iqm([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 9.0, 9.0]], axis=1).tolist() == [2.5, 4.5]


@pytest.mark.parametrize("aggregate", ["iqm", "mean", "median"])
def test_the_interval_of_a_constant_is_a_point(aggregate: str) -> None:
    estimate = interval_estimate(np.full(5, 7.0), aggregate)
    assert estimate.point == estimate.low == estimate.high == 7.0


def test_the_interval_holds_the_point_and_narrows_with_more_runs() -> None:
    rng = np.random.default_rng(1)
    few, many = rng.normal(10.0, 2.0, 5), rng.normal(10.0, 2.0, 100)
    for scores in (few, many):
        estimate = interval_estimate(scores, "mean")
        assert estimate.low < estimate.point < estimate.high
        assert estimate.point == pytest.approx(scores.mean())
    width = [
        interval_estimate(s, "mean").high - interval_estimate(s, "mean").low for s in (few, many)
    ]
    assert width[1] < width[0] / 2


def test_the_mean_s_interval_covers_the_true_mean_about_as_often_as_it_says() -> None:
    rng = np.random.default_rng(2)
    covered = [
        (lambda e: e.low <= 0.0 <= e.high)(interval_estimate(rng.normal(0, 1, 20), "mean",
                                                              n_resamples=1000, seed=i))
        for i in range(200)
    ]  # fmt: skip
    assert 0.88 <= np.mean(covered) <= 0.99  # (the percentile interval is a little narrow)


def test_the_same_seed_gives_the_same_interval_and_another_seed_another() -> None:
    scores = np.random.default_rng(3).normal(size=6)
    assert interval_estimate(scores, seed=4) == interval_estimate(scores, seed=4)
    assert interval_estimate(scores, seed=4) != interval_estimate(scores, seed=5)
    x, y = scores, scores + 0.3
    assert probability_of_improvement(x, y, seed=1) == probability_of_improvement(x, y, seed=1)


def test_curves_get_one_interval_per_step_equal_to_each_step_alone() -> None:
    curves = np.random.default_rng(4).normal(size=(5, 3))  # [R runs, S steps]
    estimate = interval_estimate(curves, "iqm")
    assert estimate.point.shape == estimate.low.shape == (3,)
    for step in range(3):
        alone = interval_estimate(curves[:, step], "iqm")
        assert estimate.point[step] == pytest.approx(alone.point)
        assert alone.low - 0.2 < estimate.low[step] <= estimate.point[step] <= estimate.high[step]


def test_stratified_resampling_keeps_each_task_s_runs_apart() -> None:
    # two tasks on very different scales: an unstratified resample could draw only one task
    tasks = {"easy": [100.0, 101.0, 102.0], "hard": [0.0, 1.0, 2.0]}
    estimate = interval_estimate(tasks, "mean")
    assert estimate.point == pytest.approx(51.0)
    assert 50.0 <= estimate.low <= estimate.high <= 52.0
    pooled = interval_estimate([*tasks["easy"], *tasks["hard"]], "mean")
    assert pooled.high - pooled.low > 10 * (estimate.high - estimate.low)


def test_a_variant_better_on_every_seed_has_a_probability_of_improvement_of_one() -> None:
    rng = np.random.default_rng(5)
    y = rng.normal(0.0, 1.0, 5)
    x = y.max() + 1.0 + rng.random(5)
    estimate = probability_of_improvement(x, y)
    assert estimate.point == estimate.low == estimate.high == 1.0
    assert probability_of_improvement(y, x).point == 0.0


def test_identical_variants_have_a_probability_of_improvement_of_one_half() -> None:
    x = np.random.default_rng(6).normal(size=5)
    estimate = probability_of_improvement(x, x.copy())
    assert estimate.point == 0.5 and estimate.low < 0.5 < estimate.high
    # two variants drawn from one distribution: near 0.5, and the interval holds 0.5
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=30), rng.normal(size=30)
    estimate = probability_of_improvement(a, b)
    assert abs(estimate.point - 0.5) < 0.15 and estimate.low < 0.5 < estimate.high


def test_probability_of_improvement_counts_ties_one_half_and_averages_tasks() -> None:
    # pairs: (1 vs 1) tie, (1 vs 0) win, (0 vs 1) loss, (0 vs 0) tie -> 0.5
    assert probability_of_improvement([1.0, 0.0], [1.0, 0.0]).point == 0.5
    # task a: X always better (1); task b: X always worse (0) -> 0.5
    x = {"a": [5.0, 6.0], "b": [0.0, 1.0]}
    y = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    assert probability_of_improvement(x, y).point == 0.5
    assert probability_of_improvement([3.0, 1.0, 2.0], [0.0, 2.5]).point == pytest.approx(4 / 6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: interval_estimate([1.0]), "at least 2 runs"),
        (lambda: interval_estimate([1.0, float("nan")]), "NaN"),
        (lambda: interval_estimate([1.0, 2.0], "max"), "aggregate must be one of"),
        (lambda: interval_estimate([1.0, 2.0], confidence=95), r"confidence must be in \(0, 1\)"),
        (lambda: interval_estimate([1.0, 2.0], n_resamples=10), "n_resamples"),
        (lambda: interval_estimate({"a": [1.0, 2.0], "b": [[1.0], [2.0]]}), "differ in shape"),
        (lambda: probability_of_improvement({"a": [1.0, 2.0]}, {"b": [1.0, 2.0]}), "same tasks"),
        (lambda: probability_of_improvement([[1.0], [2.0]], [[1.0], [2.0]]), "one score per run"),
    ],
)
def test_bad_input_is_a_clear_error(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
