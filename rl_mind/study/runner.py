"""A study: a plain training function, a grid of variants, seeds; every run in its folder.

::

    def train(algo="td3", layer_norm=False, *, seed, run_dir):  # the two added parameters
        ...
        evaluator = Evaluator("Pendulum-v1", every=5_000, run_dir=run_dir, logs=True)
        ...

    study = Study(train, grid={"algo": ["ddpg", "td3"], "layer_norm": [False, True]},
                  seeds=[0, 1, 2], directory="studies/overestimation")
    study.run()         # one process per core; study.run(engine="dask") or "slurm"
    study.table()       # a pandas DataFrame: algo, layer_norm, seed, step, return, ..., run

The function is called once per run as ``train(**variant, seed=seed, run_dir=run_dir)``:
the grid's keys are its keyword arguments, so a function that already takes its
hyperparameters as arguments joins a study by accepting ``seed`` and ``run_dir`` and
passing ``run_dir`` to its Evaluator with ``logs=True``.

What the reader must not get wrong:

- A run is done when its ``status.json`` says so, and a done run is never run again: its
  files are not touched. Running a study again (after an interruption, a crash, a killed
  worker) runs only the runs that are missing, failed, or were left ``"running"`` by a
  process that is gone; such a run starts from scratch, in an emptied folder.
- A training function that raises does not stop the study: its run is marked failed
  with the traceback, and the summary lists it.
- Everything is checked before anything is written: a bad grid, duplicate seeds, a value
  that JSON cannot write, or a directory of another study is an error, and no run starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_mind.study.engines import open_engine
from rl_mind.study.progress import StudyProgress
from rl_mind.study.runs import STUDY_FILE, Run, read_json, read_status, write_json

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Study", "StudySummary"]

RESERVED = ("seed", "run_dir")  # the keyword arguments the study passes itself


@dataclasses.dataclass(frozen=True, repr=False)
class StudySummary:
    """Where a study stands: its runs' names by state, and each failed run's error (the
    last line of its traceback; the whole of it is in the run's ``status.json``)."""

    directory: Path
    done: tuple[str, ...]
    failed: Mapping[str, str]
    running: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.done) + len(self.failed) + len(self.running) + len(self.missing)

    @property
    def complete(self) -> bool:
        """Whether every run is done."""
        return len(self.done) == self.total

    def __repr__(self) -> str:
        return f"StudySummary({self._counts()})"

    def _counts(self) -> str:
        counts = [f"{len(self.done)} done"]
        counts += [f"{len(self.failed)} failed"] if self.failed else []
        counts += [f"{len(self.running)} left running"] if self.running else []
        counts += [f"{len(self.missing)} not run"] if self.missing else []
        return f"{self.total} runs, {', '.join(counts)}"

    def __str__(self) -> str:
        lines = [f"study {self.directory}: {self._counts()}"]
        for name, error in self.failed.items():
            lines.append(f"  failed {name}: {error}")
        if self.failed:
            lines.append("  (each failed run's traceback is in its status.json; running the "
                         "study again runs the failed runs again)")  # fmt: skip
        return "\n".join(lines)


# ---------------------------------------------------------------------- validation
def _json_value(value: Any, where: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"Study: {where} = {value!r} cannot be written as JSON (the run's "
                        f"config.json): use str, int, float (finite), bool, None, or lists "
                        f"and dicts of them ({error})") from None  # fmt: skip


def _check_grid(grid: Any) -> dict[str, tuple[Any, ...]]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"Study: grid must be a dict of lists of values, e.g. "
                        f"{{'algo': ['ddpg', 'td3']}}, got {type(grid).__name__}")  # fmt: skip
    if not grid:
        raise ValueError("Study: the grid is empty; expected at least one key with its values, "
                         "e.g. grid={'algo': ['td3']} (one variant, run over the seeds)")  # fmt: skip
    checked: dict[str, tuple[Any, ...]] = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise TypeError(f"Study: the grid's keys are the training function's keyword "
                            f"arguments (identifiers), got {key!r}")  # fmt: skip
        if key in RESERVED:
            raise ValueError(f"Study: the grid cannot set {key!r}: the study passes it "
                             f"(seeds=... for the seeds)")  # fmt: skip
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
            raise TypeError(f"Study: grid[{key!r}] must be a list of values, got {values!r} "
                            f"(for one value, write [{values!r}])")  # fmt: skip
        if not values:
            raise ValueError(f"Study: grid[{key!r}] is empty; expected at least one value")
        texts = []
        for index, value in enumerate(values):
            _json_value(value, f"grid[{key!r}][{index}]")
            texts.append(json.dumps(value, sort_keys=True))
        if len(set(texts)) != len(texts):
            raise ValueError(f"Study: grid[{key!r}] has duplicate values {list(values)!r}; "
                             f"each variant would run twice")  # fmt: skip
        checked[key] = tuple(values)
    return checked


def _check_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence | range):
        raise TypeError(f"Study: seeds must be a list of ints, got {seeds!r}")
    if not seeds:
        raise ValueError("Study: seeds is empty; expected at least one seed, e.g. [0, 1, 2]")
    bad = [seed for seed in seeds if isinstance(seed, bool) or not isinstance(seed, int)]
    if bad:
        raise TypeError(f"Study: seeds must be ints, got {bad[0]!r} in {list(seeds)!r}")
    duplicates = sorted({seed for seed in seeds if list(seeds).count(seed) > 1})
    if duplicates:
        raise ValueError(f"Study: duplicate seeds {duplicates} in {list(seeds)!r}; each seed "
                         f"gives one run of each variant, so a repeated seed repeats runs")  # fmt: skip
    return tuple(int(seed) for seed in seeds)


def _check_function(function: Any, keys: Sequence[str]) -> None:
    if not callable(function):
        raise TypeError(f"Study: expected a training function, got {type(function).__name__}")
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # (a builtin: nothing to check)
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = {name for name, p in parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}  # fmt: skip
    missing = [name for name in (*keys, *RESERVED) if name not in accepted]
    if missing:
        name = getattr(function, "__name__", repr(function))
        raise TypeError(f"Study: the training function {name}{inspect.signature(function)} "
                        f"must accept the keyword arguments {missing}: it is called as "
                        f"{name}(**variant, seed=seed, run_dir=run_dir)")  # fmt: skip


def _text(value: Any) -> str:
    if value is None or isinstance(value, str | int | float):  # (bool too: False, not false)
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _run_name(config: Mapping[str, Any], seed: int) -> str:
    name = ",".join([*(f"{key}={_text(value)}" for key, value in config.items()), f"seed={seed}"])
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)


def _function_name(function: Callable[..., Any]) -> str:
    inner = getattr(function, "func", function)  # (a functools.partial: its function)
    return str(getattr(inner, "__qualname__", getattr(inner, "__name__", repr(inner))))


# ---------------------------------------------------------------------- the study
class Study:
    """A training function run over a grid of variants × seeds, one folder per run.

    Args:
        function: the training function, called as ``function(**variant, seed=seed,
            run_dir=run_dir)`` for each run (``run_dir`` a ``pathlib.Path``). It writes its
            results into ``run_dir``: an :class:`~rl_mind.evaluation.Evaluator` given
            ``run_dir=run_dir, logs=True`` writes ``evaluations.csv`` and TensorBoard
            files there. Its return value is ignored.
        grid: the variants: for each keyword argument of ``function`` that varies, its
            values; every combination is a variant (``{"algo": ["ddpg", "td3"],
            "layer_norm": [False, True]}`` gives four). Values must be JSON-writable.
        seeds: the seeds each variant runs with (distinct ints).
        directory: the study's folder; each run's folder is inside it, and ``study.json``
            indexes them. A folder of another study (another function name, grid or
            seeds) is refused, so is a non-empty folder that is no study.

    Raises:
        ValueError, TypeError: on bad input (an empty grid, duplicate seeds, a value JSON
            cannot write, a function that does not accept the grid's keys, ``seed`` and
            ``run_dir``, another study's directory); nothing is written then.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        grid: Mapping[str, Sequence[Any]],
        seeds: Sequence[int],
        directory: str | os.PathLike[str],
    ) -> None:
        self.grid = _check_grid(grid)
        self.seeds = _check_seeds(seeds)
        _check_function(function, list(self.grid))
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(f"Study: directory must be a path, got {type(directory).__name__}")
        self.function = function
        self.directory = Path(directory).expanduser().resolve()
        variants = [dict(zip(self.grid, values, strict=True))
                    for values in itertools.product(*self.grid.values())]  # fmt: skip
        self.runs: tuple[Run, ...] = tuple(
            Run(name, variant, seed, self.directory / name)
            for variant in variants
            for seed in self.seeds
            for name in [_run_name(variant, seed)]
        )
        names = [run.name for run in self.runs]
        if len(set(names)) != len(names):
            raise ValueError(f"Study: two variants give the same folder name among {names}; "
                             f"make the grid's values differ in letters or digits")  # fmt: skip
        self._check_directory()

    def index(self) -> dict[str, Any]:
        """What ``study.json`` holds: the function's name, the grid, the seeds, the runs."""
        return {
            "function": _function_name(self.function),
            "module": getattr(self.function, "__module__", None),
            "grid": {key: list(values) for key, values in self.grid.items()},
            "seeds": list(self.seeds),
            "runs": [
                {"name": run.name, "config": dict(run.config), "seed": run.seed}
                for run in self.runs
            ],  # fmt: skip
        }

    def _check_directory(self) -> None:
        directory = self.directory
        if directory.exists() and not directory.is_dir():
            raise ValueError(f"Study: directory {directory} is a file; expected a folder")
        existing = read_json(directory / STUDY_FILE) if directory.is_dir() else None
        if existing is None:
            if directory.is_dir() and any(p.name != ".lock" for p in directory.iterdir()):
                raise ValueError(f"Study: {directory} is not empty and holds no {STUDY_FILE}: "
                                 f"it is not a study's directory; choose a new or empty "
                                 f"folder")  # fmt: skip
            return
        mine = json.loads(json.dumps(self.index()))
        differences = [key for key in ("function", "grid", "seeds")
                       if existing.get(key) != mine[key]]  # fmt: skip
        if differences:
            theirs = ", ".join(f"{key}={existing.get(key)!r}" for key in differences)
            ours = ", ".join(f"{key}={mine[key]!r}" for key in differences)
            raise ValueError(f"Study: {directory} belongs to another study ({theirs}; this "
                             f"study has {ours}); choose another directory for this "
                             f"one")  # fmt: skip

    def __repr__(self) -> str:
        grid = ", ".join(f"{key}={list(values)!r}" for key, values in self.grid.items())
        return (f"Study({_function_name(self.function)}, {len(self.runs)} runs: {grid}, "
                f"seeds={list(self.seeds)}, directory={str(self.directory)!r})")  # fmt: skip

    # ---------------------------------------------------------------- reading
    def summary(self) -> StudySummary:
        """Where the study stands, read from its runs' ``status.json`` files."""
        states: dict[str, list[str]] = {"done": [], "running": [], "missing": []}
        failed: dict[str, str] = {}
        for run in self.runs:
            status = read_status(run.directory)
            state = "missing" if status is None else status.get("state", "missing")
            if state == "failed":
                lines = str(status.get("error") or "failed").strip().splitlines()  # type: ignore[union-attr]
                failed[run.name] = lines[-1] if lines else "failed"
            else:
                states.setdefault(state, []).append(run.name)
        return StudySummary(self.directory, tuple(states["done"]), failed,
                            tuple(states["running"]), tuple(states["missing"]))  # fmt: skip

    def table(self, *, unfinished: bool = False) -> pd.DataFrame:
        """The evaluations of the study's runs as a DataFrame
        (:func:`~rl_mind.study.load_table` of the study's directory)."""
        from rl_mind.study.table import load_table

        if not (self.directory / STUDY_FILE).is_file():
            raise ValueError(f"Study.table: {self.directory} holds no runs yet; call "
                             f"study.run() first")  # fmt: skip
        return load_table(self.directory, unfinished=unfinished)

    # ---------------------------------------------------------------- running
    def run(
        self, workers: int | None = None, *, engine: Any = "local", progress: bool = True
    ) -> StudySummary:
        """Run every run that is not done, and return the summary (also printed).

        Args:
            workers: how many runs at once: local processes (default: one per core), or
                Dask workers of the cluster that ``engine="dask"`` starts. ``workers=1``
                runs them one after the other in this process.
            engine: ``"local"`` (processes on this machine), ``"dask"`` (a Dask
                ``LocalCluster``, the ``dask`` extra), ``"slurm"`` (submitit's
                ``AutoExecutor``: SLURM jobs on a cluster, local processes elsewhere; the
                ``slurm`` extra), or an engine you built: a ``distributed.Client``
                connected to your cluster, a submitit executor whose parameters you set,
                or any ``concurrent.futures.Executor``.
            progress: show one progress display for the study (a bar in a notebook or a
                terminal, plain lines otherwise).

        A run that raises is marked failed and the study goes on. A run whose worker dies
        (killed, out of memory) is run again from scratch once; a second death marks it
        failed. Interrupting the study leaves the runs under way to run again next time.
        """
        self._check_directory()  # (again: another study may have taken it since)
        todo = [run for run in self.runs if run.state != "done"]
        with open_engine(engine, workers, self.function, len(todo), self.directory) as executor:
            # (all checks are done: from here on, the study writes)
            self.directory.mkdir(parents=True, exist_ok=True)
            with _study_lock(self.directory):
                if not (self.directory / STUDY_FILE).is_file():
                    write_json(self.directory / STUDY_FILE, self.index())
                display = StudyProgress(len(self.runs), len(self.runs) - len(todo),
                                        enabled=progress)  # fmt: skip
                try:
                    executor.run_all(todo, display)
                finally:
                    display.close()
        summary = self.summary()
        if progress:
            print(summary)
        return summary


@contextlib.contextmanager
def _study_lock(directory: Path) -> Iterator[None]:
    """Hold ``directory/.lock`` while the study runs: a second ``run`` of the same study
    (another notebook, another terminal) would take the first one's runs for dead ones."""
    try:
        import fcntl
    except ImportError:  # (Windows: no lock)
        yield
        return
    with (directory / ".lock").open("a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError(f"Study: {directory} is being run by another process; wait for "
                               f"it to finish, or stop it first") from None  # fmt: skip
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)
