"""Studies (rl_mind.study): the table of runs, the runner, resuming, bad input, the engines.

The training functions are tiny and deterministic (tests/study_toys.py): an Evaluator with
``logs=True`` on a short CartPole, so that the same seed gives the same returns on every
engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rl_mind.records import EvalResult, append_evaluation
from rl_mind.study import load_table, write_json

pytest.importorskip("pandas")


def write_run(folder: Path, returns: list[float], extras: dict[str, float] | None = None) -> None:
    folder.mkdir(parents=True)
    for step, value in enumerate(returns, start=1):
        result = EvalResult(100 * step, torch.tensor([value, value + 2.0]), False,
                            torch.tensor([5, 7]), extras or {})  # fmt: skip
        append_evaluation(result, folder / "evaluations.csv")


# ---------------------------------------------------------------------- the table
def test_the_table_loads_plain_run_folders(tmp_path: Path) -> None:
    write_run(tmp_path / "runs" / "first", [1.0, 3.0], {"critic_bias": 0.25})
    write_run(tmp_path / "runs" / "second", [2.0])
    table = load_table(tmp_path / "runs")
    assert list(table.columns) == ["seed", "step", "return", "std_return", "min_return",
                                   "max_return", "mean_length", "critic_bias", "run"]  # fmt: skip
    assert table["run"].tolist() == ["first", "first", "second"]
    assert table["step"].tolist() == [100, 200, 100]
    assert table["return"].tolist() == [2.0, 4.0, 3.0]  # (the mean of [v, v + 2])
    assert table["mean_length"].tolist() == [6.0, 6.0, 6.0]
    assert table["critic_bias"].iloc[0] == 0.25 and table["critic_bias"].isna().iloc[2]
    assert table["seed"].isna().all()  # (no study: no seed)
    # a run folder, or its evaluations.csv, gives that run alone, and each run counts once
    alone = load_table(tmp_path / "runs" / "first", tmp_path / "runs" / "first" / "evaluations.csv")
    assert alone["run"].tolist() == ["first", "first"]


def test_the_table_reads_a_runs_config_and_seed(tmp_path: Path) -> None:
    write_run(tmp_path / "a", [1.0])
    write_json(tmp_path / "a" / "config.json", {"algo": "td3", "sizes": [64, 64]})
    write_json(tmp_path / "a" / "status.json", {"state": "done", "seed": 4})
    write_run(tmp_path / "b", [1.0])
    write_json(tmp_path / "b" / "config.json", {"algo": "ddpg", "sizes": [32], "seed": 1})
    write_run(tmp_path / "c", [1.0])
    write_json(tmp_path / "c" / "config.json", {"algo": "ddpg", "sizes": [32]})
    write_json(tmp_path / "c" / "status.json", {"state": "failed", "seed": 2})
    table = load_table(tmp_path)
    assert list(table.columns[:3]) == ["algo", "sizes", "seed"]
    assert table[["algo", "seed", "run"]].values.tolist() == [["td3", 4, "a"], ["ddpg", 1, "b"]]
    assert table["sizes"].tolist() == [(64, 64), (32,)]  # (lists as tuples: groupby works)
    assert table.groupby("sizes")["return"].count().to_dict() == {(32,): 1, (64, 64): 1}
    assert load_table(tmp_path, unfinished=True)["run"].tolist() == ["a", "b", "c"]


def test_the_table_refuses_what_holds_no_runs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_table(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="no evaluations.csv under"):
        load_table(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="is a file"):
        load_table(tmp_path / "notes.txt")
    with pytest.raises(TypeError, match="at least one path"):
        load_table()
