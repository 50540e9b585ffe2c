"""Studies (rl_mind.study): the table of runs, the runner, resuming, bad input, the engines.

The training functions are tiny and deterministic (tests/study_toys.py): an Evaluator with
``logs=True`` on a short CartPole, so that the same seed gives the same returns on every
engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rl_mind.records import EvalResult, append_evaluation
from rl_mind.study import Study, load_table, write_json
from tests.study_toys import busy_train, train

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


# ---------------------------------------------------------------------- the runner
def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and its modification time."""
    return {str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}  # fmt: skip


def toy_study(directory: Path, **grid: list[object]) -> Study:
    return Study(train, grid=grid or {"gain": [0.2, 0.5]}, seeds=[0, 1], directory=directory)


def test_a_study_runs_every_variant_and_seed_in_its_own_folder(tmp_path: Path) -> None:
    study = toy_study(tmp_path / "study")
    summary = study.run(workers=2, progress=False)
    assert summary.complete and len(summary.done) == 4 and not summary.failed
    names = sorted(path.name for path in (tmp_path / "study").iterdir() if path.is_dir())
    assert names == ["gain=0.2,seed=0", "gain=0.2,seed=1", "gain=0.5,seed=0", "gain=0.5,seed=1"]
    run = tmp_path / "study" / "gain=0.5,seed=1"
    assert json.loads((run / "config.json").read_text()) == {"gain": 0.5}
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "done" and status["seed"] == 1 and status["seconds"] >= 0
    assert list(run.glob("events.out.tfevents.*")) and (run / "checkpoint.pt").is_file()
    index = json.loads((tmp_path / "study" / "study.json").read_text())
    assert index["function"] == "train" and index["grid"] == {"gain": [0.2, 0.5]}
    assert [entry["name"] for entry in index["runs"]] == [run.name for run in study.runs]
    # the table: one row per (run, evaluation), the variant's column first
    table = study.table()
    assert list(table.columns[:4]) == ["gain", "seed", "step", "return"]
    assert len(table) == 4 * 3 and table.groupby("run").size().tolist() == [3, 3, 3, 3]
    # the returns are the function's own (the same run outside the study gives them)
    train(gain=0.5, seed=1, run_dir=tmp_path / "alone")
    alone = load_table(tmp_path / "alone")
    assert table[table["run"] == run.name]["return"].tolist() == alone["return"].tolist()
    # a study run again runs nothing, and touches no file
    before = snapshot(tmp_path / "study")
    assert study.run(workers=2, progress=False).complete
    assert snapshot(tmp_path / "study") == before


def test_a_run_that_raises_is_marked_failed_and_the_study_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = Study(train, grid={"fail": [False, True]}, seeds=[3], directory=tmp_path / "s")
    summary = study.run(workers=1)
    assert summary.done == ("fail=False,seed=3",) and not summary.complete
    assert summary.failed == {"fail=True,seed=3": "RuntimeError: this run fails on purpose"}
    printed = capsys.readouterr().out
    assert "1 failed" in printed and "failed fail=True,seed=3: RuntimeError" in printed
    status = json.loads((tmp_path / "s" / "fail=True,seed=3" / "status.json").read_text())
    assert status["state"] == "failed" and 'raise RuntimeError("this run fails' in status["error"]
    assert study.table()["run"].unique().tolist() == ["fail=False,seed=3"]
    assert study.table(unfinished=True)["run"].tolist()[-2:] == ["fail=True,seed=3"] * 2
    # running it again runs the failed run only (from an emptied folder), once
    done = snapshot(tmp_path / "s" / "fail=False,seed=3")
    assert study.run(workers=1, progress=False).failed.keys() == {"fail=True,seed=3"}
    assert snapshot(tmp_path / "s" / "fail=False,seed=3") == done
    assert study.table(unfinished=True)["run"].tolist().count("fail=True,seed=3") == 2


def test_the_summary_counts_the_runs_by_state(tmp_path: Path) -> None:
    study = toy_study(tmp_path / "s")
    summary = study.summary()
    assert summary.missing == tuple(run.name for run in study.runs) and summary.total == 4
    assert [run.state for run in study.runs] == ["missing"] * 4
    assert "4 runs, 0 done, 4 not run" in str(summary)
    assert not (tmp_path / "s").exists()  # (reading writes nothing)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"grid": {}}, ValueError, "the grid is empty"),
        ({"grid": {"gain": []}}, ValueError, r"grid\['gain'\] is empty"),
        ({"grid": {"gain": 0.5}}, TypeError, "must be a list of values"),
        ({"grid": {"gain": [0.5, 0.5]}}, ValueError, "duplicate values"),
        ({"seeds": [0, 1, 0]}, ValueError, r"duplicate seeds \[0\]"),
        ({"seeds": []}, ValueError, "seeds is empty"),
        ({"seeds": [0, 1.5]}, TypeError, "seeds must be ints"),
        ({"grid": {"gain": [0.5, object()]}}, TypeError, r"grid\['gain'\]\[1\] = <object"),
        ({"grid": {"gain": [float("nan")]}}, TypeError, "cannot be written as JSON"),
        ({"grid": {"seed": [1]}}, ValueError, "cannot set 'seed'"),
        ({"grid": {"lr": [0.1]}}, TypeError, r"must accept the keyword arguments \['lr'\]"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    tmp_path: Path, arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    given = {"function": train, "grid": {"gain": [0.5]}, "seeds": [0],
             "directory": tmp_path / "study", **arguments}  # fmt: skip
    with pytest.raises(error, match=message):
        Study(**given)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_directory_of_another_study_is_refused(tmp_path: Path) -> None:
    toy_study(tmp_path / "s", gain=[0.2]).run(workers=1, progress=False)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"belongs to another study \(grid=.*0\.2"):
        toy_study(tmp_path / "s", gain=[0.2, 0.5])
    with pytest.raises(ValueError, match="belongs to another study"):
        Study(train, grid={"gain": [0.2]}, seeds=[0, 1, 2], directory=tmp_path / "s")
    with pytest.raises(ValueError, match="belongs to another study.*function='busy_train'"):
        Study(busy_train, grid={"size": [1]}, seeds=[0, 1], directory=tmp_path / "s")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and holds no study.json"):
        toy_study(tmp_path / "other")
    assert snapshot(tmp_path) == {
        **before,
        "other/notes.txt": snapshot(tmp_path)["other/notes.txt"],
    }
    # the same study again is welcome: it resumes
    assert toy_study(tmp_path / "s", gain=[0.2]).summary().complete


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"workers": 0}, ValueError, "workers must be >= 1"),
        ({"workers": "2"}, TypeError, "workers must be an int"),
        ({"engine": "ray"}, ValueError, "engine must be one of"),
        ({"engine": 3}, TypeError, "with a submit method"),
    ],
)
def test_a_bad_engine_or_worker_count_starts_nothing(
    tmp_path: Path, arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        toy_study(tmp_path / "s").run(progress=False, **arguments)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
