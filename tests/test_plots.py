"""rl_mind.study.plots and ``rl-mind compare``: the study's table read into curves, final
performance and probabilities of improvement with intervals, and drawn into PNG files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rl_mind.__main__ import main as rl_mind_main
from rl_mind.study.compare import compare_table
from rl_mind.study.plots import (
    final_performance,
    improvement_probabilities,
    learning_curves,
    plot_final_performance,
    plot_improvement,
    plot_learning_curves,
    variant_columns,
)

matplotlib.use("Agg")

STEPS = [1000, 2000, 3000, 4000]


def table(seeds: int = 4, shift: dict[str, float] | None = None) -> pd.DataFrame:
    """A study's table: algo x layer_norm, ``seeds`` runs each; the return of seed s at step
    k is ``k * 10 + s + shift[algo]``, the critic's bias ``shift[algo] / 10``."""
    shift = shift or {"ddpg": 0.0, "td3": 100.0}
    rows = []
    for algo, layer_norm, seed in np.ndindex(2, 2, seeds):
        name = ("ddpg", "td3")[algo]
        for k, step in enumerate(STEPS):
            value = (k + 1) * 10 + seed + shift[name]
            rows.append({"algo": name, "layer_norm": bool(layer_norm), "seed": seed,
                         "step": step, "return": value, "std_return": 1.0,
                         "critic_bias": shift[name] / 10 + k,
                         "run": f"{name}-{layer_norm}-{seed}"})  # fmt: skip
    return pd.DataFrame(rows)


def write_runs(folder: Path, returns: dict[int, list[float]], steps: list[int] = STEPS) -> None:
    for seed, values in returns.items():
        run = folder / f"seed-{seed}"
        run.mkdir(parents=True)
        lines = ["step,mean_return,std_return,min_return,max_return,mean_length,critic_bias"]
        lines += [f"{step},{value},0,{value},{value},10,{value / 100}"
                  for step, value in zip(steps, values)]  # fmt: skip
        (run / "evaluations.csv").write_text("\n".join(lines) + "\n")


def test_the_variant_columns_are_the_columns_constant_within_each_run() -> None:
    assert variant_columns(table()) == ["algo", "layer_norm"]
    tagged = table()
    tagged.attrs["variants"] = ["algo"]
    assert variant_columns(tagged) == ["algo"]


def test_learning_curves_aggregate_each_variant_s_seeds_at_each_step() -> None:
    curves = learning_curves(table(), aggregate="mean")
    assert sorted(curves["variant"].unique()) == sorted(
        f"algo={a}, layer_norm={n}" for a in ("ddpg", "td3") for n in (False, True)
    )
    td3 = curves[curves["variant"] == "algo=td3, layer_norm=True"]
    assert td3["step"].tolist() == STEPS
    assert td3["point"].tolist() == pytest.approx([110 + 1.5, 120 + 1.5, 130 + 1.5, 140 + 1.5])
    assert (td3["low"] < td3["point"]).all() and (td3["point"] < td3["high"]).all()
    assert (td3["runs"] == 4).all()


def test_slightly_different_steps_are_aligned_and_a_shorter_run_shortens_the_curve() -> None:
    frame = table(seeds=2)
    frame = frame[frame["algo"] == "td3"].copy()
    frame.loc[frame["seed"] == 1, "step"] += 4  # evaluated 4 steps later (num_envs = 4)
    curves = learning_curves(frame, by=["algo"], aggregate="mean")
    assert curves["step"].tolist() == [1002, 2002, 3002, 4002]  # the k-th evaluations' medians
    assert curves["point"].tolist() == pytest.approx([110.5, 120.5, 130.5, 140.5])
    frame.loc[frame["seed"] == 1, "step"] += 996  # a different schedule: interpolated
    curves = learning_curves(frame, by=["algo"], aggregate="mean")
    assert curves["step"].tolist() == [2500, 3500]  # (the medians inside [2000, 4000])
    shorter = table(seeds=2)
    shorter = shorter[
        (shorter["algo"] == "ddpg") & ~((shorter["seed"] == 0) & (shorter["step"] == 4000))
    ]
    assert learning_curves(shorter, by=["algo"])["step"].max() == 3000


def test_final_performance_is_each_run_s_last_evaluation() -> None:
    final = final_performance(table(), aggregate="mean", by=["algo"])
    assert final.loc["td3", "scores"] == [140.0, 141.0, 142.0, 143.0] * 2
    assert final.loc["td3", "point"] == pytest.approx(141.5)
    assert final.loc["ddpg", "low"] <= final.loc["ddpg", "point"] <= final.loc["ddpg", "high"]
    one = final_performance(table(seeds=1), by=["algo"])
    assert one["runs"].tolist() == [2, 2]  # (both layer_norm values: 2 runs per algo)
    single = final_performance(table(seeds=1))
    assert single["runs"].tolist() == [1, 1, 1, 1] and single["low"].isna().all()


def test_the_probability_of_improvement_of_a_variant_better_on_every_seed_is_one() -> None:
    probabilities = improvement_probabilities(table(), by=["algo"])
    assert probabilities[["x", "y"]].values.tolist() == [["ddpg", "td3"]]
    assert probabilities["point"].tolist() == [0.0]
    same = improvement_probabilities(table(shift={"ddpg": 0.0, "td3": 0.0}), by=["algo"],
                                     pairs=[("td3", "ddpg")])  # fmt: skip
    assert same["point"].tolist() == [0.5] and same["low"][0] < 0.5 < same["high"][0]


def test_the_plots_state_their_method_and_write_pngs(tmp_path: Path) -> None:
    curves = plot_learning_curves(table(), path=tmp_path / "curves.png")
    assert "IQM across runs; 95% bootstrap CI (percentile" in curves.get_title()
    assert len(curves.collections) == 4  # one band per variant
    bias = plot_learning_curves(table(), "critic_bias", "mean")
    assert bias.get_ylabel() == "critic_bias" and "mean across runs" in bias.get_title()
    final = plot_final_performance(table(), path=tmp_path / "final.png")
    assert "IQM" in final.get_title()
    assert [label.get_text() for label in final.get_yticklabels()][
        0
    ] == "algo=ddpg, layer_norm=False (4)"
    improvement = plot_improvement(table(), by=["algo"], path=tmp_path / "improvement.png")
    assert [label.get_text() for label in improvement.get_yticklabels()] == ["P(ddpg > td3)"]
    for name in ("curves", "final", "improvement"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: learning_curves([1, 2]), TypeError, "a pandas DataFrame"),
        (lambda: learning_curves(table(), "loss"), ValueError, "no column 'loss'"),
        (lambda: learning_curves(table().iloc[:0]), ValueError, "empty"),
        (lambda: final_performance(table(), aggregate="max"), ValueError, "aggregate"),
        (lambda: learning_curves(table(), by=["lr"]), ValueError, r"\['lr'\] are not in"),
        (lambda: improvement_probabilities(table(), by=["algo"], pairs=[("ddpg", "sac")]),
         ValueError, r"called \['sac'\]"),
    ],
)  # fmt: skip
def test_bad_input_is_a_clear_error(call: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]


def test_compare_groups_plain_runs_by_the_folder_named(tmp_path: Path) -> None:
    write_runs(tmp_path / "ddpg", {0: [1, 2, 3, 4], 1: [2, 3, 4, 5], 2: [0, 1, 2, 3]})
    write_runs(tmp_path / "td3", {0: [5, 6, 7, 8], 1: [6, 7, 8, 9], 2: [7, 8, 9, 10]})
    both = compare_table([tmp_path / "ddpg", tmp_path / "td3"])
    assert variant_columns(both) == ["variant"]
    assert sorted(both["run"].unique()) == [
        f"{v}/seed-{s}" for v in ("ddpg", "td3") for s in range(3)
    ]
    assert both["return"].tolist()[:4] == [1, 2, 3, 4]


def test_compare_reads_a_study_s_configs_as_its_variants(tmp_path: Path) -> None:
    write_runs(tmp_path / "study", {0: [1, 2, 3, 4], 1: [2, 3, 4, 5]})
    for seed, algo in ((0, "ddpg"), (1, "td3")):
        config = {"algo": algo, "seed": seed}
        (tmp_path / "study" / f"seed-{seed}" / "config.json").write_text(json.dumps(config))
    study = compare_table([tmp_path / "study"])
    assert variant_columns(study) == ["algo"]
    assert study.groupby("algo")["seed"].first().to_dict() == {"ddpg": 0, "td3": 1}


def test_the_compare_command_writes_the_plots_and_prints_the_final_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_runs(tmp_path / "ddpg", {0: [1, 2, 3, 4], 1: [2, 3, 4, 5], 2: [0, 1, 2, 3]})
    write_runs(tmp_path / "td3", {0: [5, 6, 7, 8], 1: [6, 7, 8, 9], 2: [7, 8, 9, 10]})
    out = tmp_path / "plots"
    code = rl_mind_main(
        ["compare", str(tmp_path / "ddpg"), str(tmp_path / "td3"), "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    names = ["critic_bias", "final_performance", "improvement", "learning_curves"]
    assert sorted(path.stem for path in out.glob("*.png")) == names
    assert "final return (iqm across runs, 95% bootstrap CI)" in printed
    # td3's final returns 8, 9, 10: IQM 9, interval 8 to 10, 3 runs
    assert re.search(r"^td3 +9\.00 +8\.00 +10\.00 +3$", printed, re.MULTILINE), printed
    assert rl_mind_main(["compare", str(tmp_path / "nothing-here")]) == 2
    assert "does not exist" in capsys.readouterr().err
