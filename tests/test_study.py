"""Studies (rl_mind.study): the table of runs, the runner, resuming, bad input, the engines.

The training functions are tiny and deterministic (tests/study_toys.py): an Evaluator with
``logs=True`` on a short CartPole, so that the same seed gives the same returns on every
engine.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from rl_mind.records import EvalResult, append_evaluation
from rl_mind.study import Study, execute_run, load_table, write_json
from rl_mind.study.cli import load_study
from rl_mind.study.cli import main as study_main
from rl_mind.study.progress import StudyProgress
from tests.readme_blocks import ROOT
from tests.study_toys import dqn, train

pd = pytest.importorskip("pandas")


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
    umask = os.umask(0)
    os.umask(umask)
    for written in ("status.json", "config.json", "../study.json"):  # (shared folders: umask)
        assert stat.S_IMODE((run / written).stat().st_mode) == 0o666 & ~umask
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
    with pytest.raises(ValueError, match="belongs to another study.*function='dqn'"):
        Study(dqn, grid={"hidden": [8]}, seeds=[0, 1], directory=tmp_path / "s")
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


# ---------------------------------------------------------------------- kill -9, resume
STUDY_FILE_TEXT = """
from rl_mind.study import Study
from tests.study_toys import train

study = Study(train, grid={{"gain": [0.2, 0.5, 1.0]}}, seeds=[0, 1], directory={directory!r})
"""


def start_study(tmp_path: Path, *arguments: str) -> tuple[subprocess.Popen[str], Path]:
    """``rl-mind study`` in a new process group, on runs that pause 0.4 s per evaluation."""
    directory = tmp_path / "study"
    source = tmp_path / "declared.py"
    source.write_text(STUDY_FILE_TEXT.format(directory=str(directory)).replace(
        "train, grid", "functools.partial(train, pause=0.4), grid").replace(
        "from rl_mind", "import functools\nfrom rl_mind"))  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "rl_mind", "study", str(source), "--workers", "2", *arguments]
    process = subprocess.Popen(command, env=environment, text=True, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    return process, directory


def states(directory: Path) -> dict[str, dict[str, object]]:
    return {path.parent.name: json.loads(path.read_text())
            for path in directory.glob("*/status.json")}  # fmt: skip


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def running_worker(directory: Path, driver: int) -> tuple[str, int] | None:
    for name, status in states(directory).items():
        if status["state"] == "running" and status["pid"] != driver:
            return name, int(status["pid"])  # type: ignore[call-overload]
    return None


def test_a_killed_worker_is_replaced_and_its_run_made_again_from_scratch(tmp_path: Path) -> None:
    process, directory = start_study(tmp_path)
    try:
        wait_for(lambda: sum(s["state"] == "done" for s in states(directory).values()) >= 2
                 and running_worker(directory, process.pid) is not None, process)  # fmt: skip
        finished = {name: snapshot(directory / name) for name, status in states(directory).items()
                    if status["state"] == "done"}  # fmt: skip
        killed, pid = running_worker(directory, process.pid)  # type: ignore[misc]
        os.kill(pid, signal.SIGKILL)
        interrupted = states(directory)[killed] == {**states(directory)[killed], "pid": pid,
                                                    "state": "running"}  # fmt: skip
        output = process.communicate(timeout=120)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, output
    assert "6 runs, 6 done" in output
    assert {name: status["state"] for name, status in states(directory).items()} == {
        run: "done" for run in states(directory)} and len(states(directory)) == 6  # fmt: skip
    if interrupted:  # (else it ended in the instant before the kill)
        assert states(directory)[killed]["pid"] != pid  # (made again, by another worker)
    for name, files in finished.items():
        assert snapshot(directory / name) == files, f"{name}'s files changed"
    table = load_table(directory)
    assert table.groupby("run")["step"].apply(list).tolist() == [[100, 200, 300]] * 6


def test_a_study_killed_with_its_workers_resumes_what_is_not_done(tmp_path: Path) -> None:
    process, directory = start_study(tmp_path)
    try:
        wait_for(lambda: sum(s["state"] == "done" for s in states(directory).values()) >= 2
                 and running_worker(directory, process.pid) is not None, process)  # fmt: skip
        os.killpg(process.pid, signal.SIGKILL)  # (the driver and its workers: a crash)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    left = states(directory)
    finished = {
        name: snapshot(directory / name) for name, s in left.items() if s["state"] == "done"
    }
    interrupted = [name for name, s in left.items() if s["state"] == "running"]
    assert finished and interrupted and len(finished) < 6
    summary = load_study(tmp_path / "declared.py").run(workers=2, progress=False)
    assert summary.complete and len(summary.done) == 6
    for name, files in finished.items():
        assert snapshot(directory / name) == files, f"{name} was run again"
    for name in interrupted:  # (run again from scratch, by another worker)
        assert states(directory)[name]["pid"] != left[name]["pid"], f"{name} was not run again"
    table = load_table(directory)
    assert table.groupby("run")["step"].apply(list).tolist() == [[100, 200, 300]] * 6
    # `rl-mind study --summary` says so, and runs nothing
    before = snapshot(directory)
    assert study_main([str(tmp_path / "declared.py"), "--summary"]) == 0
    assert snapshot(directory) == before


def test_a_study_being_run_is_not_run_twice_at_once(tmp_path: Path) -> None:
    process, directory = start_study(tmp_path)
    try:
        wait_for(lambda: running_worker(directory, process.pid) is not None, process)
        with pytest.raises(RuntimeError, match="being run by another process"):
            load_study(tmp_path / "declared.py").run(workers=1, progress=False)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)


# ---------------------------------------------------------------------- the engines
ENGINE_GRID = {"gain": [0.2, 1.0]}


@pytest.fixture(scope="module")
def local_table(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    directory = tmp_path_factory.mktemp("local") / "study"
    study = Study(train, grid=ENGINE_GRID, seeds=[0, 1], directory=directory)
    assert study.run(workers=2, progress=False).complete
    return study.table()


def test_a_dask_local_cluster_gives_the_same_table(
    tmp_path: Path, local_table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # (the workers import tests.study_toys)
    study = Study(train, grid=ENGINE_GRID, seeds=[0, 1], directory=tmp_path / "study")
    assert study.run(workers=2, engine="dask", progress=False).complete
    hosts = {json.loads(run.directory.joinpath("status.json").read_text())["pid"]
             for run in study.runs}  # fmt: skip
    assert os.getpid() not in hosts and len(hosts) >= 2  # (worker processes, several)
    pd.testing.assert_frame_equal(study.table(), local_table)
    assert local_table["return"].nunique() > 3  # (the returns differ by seed and variant)


def test_submitits_local_executor_gives_the_same_table(
    tmp_path: Path, local_table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitit = pytest.importorskip("submitit")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    executor = submitit.LocalExecutor(folder=tmp_path / "logs")
    study = Study(train, grid=ENGINE_GRID, seeds=[0, 1], directory=tmp_path / "study")
    assert study.run(engine=executor, progress=False).complete
    pids = {json.loads(run.directory.joinpath("status.json").read_text())["pid"]
            for run in study.runs}  # fmt: skip
    assert len(pids) == 4 and os.getpid() not in pids  # (one job each)
    pd.testing.assert_frame_equal(study.table(), local_table)


# ---------------------------------------------------------------------- the display, the command
def test_the_progress_display_is_plain_lines_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = StudyProgress(total=4, done_before=1)  # (pytest's output is no terminal)
    assert display.bar is None and display.time_left() is None
    display.running(2)
    display.ended("algo=td3,seed=0", True, 75.0)
    display.ended("algo=td3,seed=1", False)
    display.close()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "study: 3 of 4 runs to do (1 done before)"
    assert lines[1].startswith("study: 2/4 done, 1 running, 0 failed, ")
    assert lines[1].endswith(" left (algo=td3,seed=0 done in 1 min 15 s)")
    assert lines[2].startswith("study: 2/4 done, 0 running, 1 failed, ")
    assert "(algo=td3,seed=1 FAILED)" in lines[2]


def test_the_progress_display_is_a_bar_in_a_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rl_mind.study.progress.is_notebook", lambda: True)
    display = StudyProgress(total=3, done_before=0)
    assert display.bar is not None and display.bar.bar.total == 3
    display.running(2)
    display.ended("a", True, 1.0)
    assert display.bar.n == 1
    display.close()
    assert display.bar is None


def test_rl_mind_study_is_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    from rl_mind.__main__ import main

    assert main(["--help"]) == 0
    assert "study" in capsys.readouterr().out
    with pytest.raises(ValueError, match="expected a Python file declaring a Study"):
        main(["study", "no_such_file.py"])


def test_a_folder_that_is_no_run_is_never_emptied(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("months of work")
    with pytest.raises(ValueError, match="not a study's run folder"):
        execute_run(train, {}, 0, str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "months of work"
    # an empty folder (a run killed right after creating it) is a run's to fill
    (tmp_path / "empty").mkdir()
    assert execute_run(train, {"gain": 0.2}, 0, str(tmp_path / "empty"))["state"] == "done"


class UnstartableExecutor(concurrent.futures.Executor):
    """An engine whose jobs never start (as a worker that cannot import the function)."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(
        self, fn: Callable[..., object], /, *args: object, **kwargs: object
    ) -> Future[object]:
        self.submitted += 1
        future: Future[object] = Future()
        future.set_exception(ModuleNotFoundError("No module named 'my_project'"))
        return future


def test_a_run_the_engine_cannot_start_is_failed_after_a_few_tries(tmp_path: Path) -> None:
    engine = UnstartableExecutor()
    study = Study(train, grid={"gain": [0.2]}, seeds=[0], directory=tmp_path / "s")
    summary = study.run(engine=engine, progress=False)
    assert engine.submitted == 4
    assert summary.failed == {
        "gain=0.2,seed=0": "the engine could not start it 4 times: ModuleNotFoundError: "
        "No module named 'my_project'"
    }


OWN_TRAIN = """
import torch
from rl_mind.records import EvalResult, append_evaluation
from rl_mind.study import Study

def train(scale=1.0, *, seed, run_dir):
    torch.manual_seed(seed)
    for step in (1, 2):
        append_evaluation(EvalResult(step, scale * torch.randn(3), False), run_dir / "evaluations.csv")

study = Study(train, grid={{"scale": [1.0, 2.0]}}, seeds=[0], directory={directory!r})
"""


def test_rl_mind_study_sends_a_files_own_function_to_submitit_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("submitit")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # (restored after: the command extends it)
    monkeypatch.setattr(sys, "path", list(sys.path))
    source = tmp_path / "own_train_study.py"  # (a module no job could import by its name)
    source.write_text(OWN_TRAIN.format(directory=str(tmp_path / "study")))
    try:
        assert study_main([str(source), "--engine", "slurm"]) == 0  # (no SLURM here: local jobs)
    finally:
        sys.modules.pop("own_train_study", None)
    table = load_table(tmp_path / "study")
    assert table["run"].unique().tolist() == ["scale=1.0,seed=0", "scale=2.0,seed=0"]
    assert (tmp_path / "study" / "submitit").is_dir()
