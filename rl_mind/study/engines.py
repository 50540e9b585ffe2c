"""Where a study's runs execute: local processes, a Dask cluster, or SLURM through submitit.

Every engine runs the same thing, :func:`~rl_mind.study.runs.execute_run`, and is driven
the same way: each run is submitted, and the handle it gives back (a
``concurrent.futures.Future``, a Dask ``Future``, a submitit ``Job``) is polled with
``done()`` and read with ``result()``. None of them is written here: the local engine is
the standard library's ``ProcessPoolExecutor``, the others are Dask's and submitit's own.

What the reader must not get wrong: the engine can lose a run (its worker killed, out of
memory, a SLURM job cancelled); ``result()`` then raises. Such a run is submitted again,
once, and starts from scratch (its folder emptied); a second loss marks it failed, and so
does a run the engine could not start four times (a worker that cannot import the
training function's module). A run
whose function raised is not lost: its ``status.json`` says ``"failed"``, with the
traceback, and it is not run again in this session.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from rl_mind._validation import available_cores
from rl_mind.study.progress import StudyProgress
from rl_mind.study.runs import STATUS_FILE, Run, execute_run, now, read_status, write_json

__all__ = ["ENGINES", "StudyExecutor", "open_engine"]

ENGINES = ("local", "dask", "slurm")


class _Finished:
    """The handle of a run executed in this process (``workers=1``)."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status

    def done(self) -> bool:
        return True

    def result(self) -> dict[str, Any]:
        return self.status


class StudyExecutor:
    """Submits runs to an engine and follows them to their end.

    Args:
        submit: runs ``execute_run`` for a run on the engine; returns its handle.
        restart: called when the engine broke (a local pool whose worker died) before the
            lost runs are submitted again; None where the engine recovers by itself.
        cancel: stops the ``(handle, run)`` under way (the study was interrupted).
        poll: seconds between two looks at the handles.
    """

    def __init__(
        self,
        submit: Callable[[Run], Any],
        *,
        restart: Callable[[], None] | None = None,
        cancel: Callable[[list[tuple[Any, Run]]], None] | None = None,
        poll: float = 0.2,
    ) -> None:
        self.submit, self.restart, self.cancel, self.poll = submit, restart, cancel, poll

    def run_all(self, runs: list[Run], display: StudyProgress) -> None:
        """Run ``runs`` to their end (done, or failed), showing progress on ``display``."""
        session = now()
        pending = collections.deque(runs)
        active: list[tuple[Any, Run]] = []
        losses: collections.Counter[str] = collections.Counter()
        broken = False
        try:
            while pending or active:
                if not (broken and active):  # (a broken pool: wait for all its handles first)
                    if broken and self.restart is not None:
                        self.restart()
                    broken = False
                    while pending:
                        run = pending.popleft()
                        active.append((self.submit(run), run))
                ended = [(handle, run) for handle, run in active if handle.done()]
                for handle, run in ended:
                    active.remove((handle, run))
                    try:
                        status = handle.result()
                    except Exception as error:  # the engine lost the run
                        broken = True
                        self._lost(run, error, session, losses, pending, display)
                    else:
                        ok = status.get("state") == "done"
                        display.ended(run.name, ok, status.get("seconds"))
                if active and not ended:
                    time.sleep(self.poll)
                display.running(sum(_started(run, session) for _handle, run in active))
        except BaseException:
            if self.cancel is not None and active:
                self.cancel(active)
            raise

    def _lost(
        self,
        run: Run,
        error: BaseException,
        session: str,
        losses: collections.Counter[str],
        pending: collections.deque[Run],
        display: StudyProgress,
    ) -> None:
        # A run lost while under way is made again once; one lost before it began (queued in
        # a pool that broke, or a job that could not start) is submitted again up to 3 times.
        began = _started(run, session)
        losses[run.name] += 1
        if losses[run.name] < (2 if began else 4):
            pending.append(run)  # (from scratch: execute_run empties its folder)
            return
        reason = ("lost it twice under way (its worker died: killed, or out of memory?)" if began
                  else f"could not start it {losses[run.name]} times")  # fmt: skip
        run.directory.mkdir(parents=True, exist_ok=True)
        status = read_status(run.directory) or {"seed": run.seed}
        first_line = (str(error).strip().splitlines() or [""])[0]
        status.update(state="failed", error=f"the engine {reason}: {type(error).__name__}: "
                      f"{first_line}", engine_error=str(error))  # fmt: skip
        write_json(run.directory / STATUS_FILE, status)
        display.ended(run.name, False)


def _started(run: Run, session: str) -> bool:
    """Whether ``run`` began in this session and has not ended (its status says running)."""
    status = read_status(run.directory)
    return bool(
        status and status.get("state") == "running" and status.get("started", "") >= session
    )


# ---------------------------------------------------------------------- the engines
def _check_workers(workers: Any) -> int:
    if workers is None:
        return available_cores()
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(
            f"Study.run: workers must be an int >= 1 or None (one per core), got {workers!r}"
        )
    if workers < 1:
        raise ValueError(f"Study.run: workers must be >= 1, got {workers}")
    return workers


def _check_picklable(function: Callable[..., Any]) -> None:
    try:
        pickle.dumps(function)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise TypeError(f"Study.run: the training function cannot be sent to worker processes "
                        f"({error}); define it in a .py file next to your notebook and import "
                        f"it, or run with workers=1 or engine='dask'") from None  # fmt: skip


def _extra(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"Study.run: this engine needs {module}: pip install "
                          f"'rl-mind[{extra}]'") from None  # fmt: skip


Call = Callable[[Run], tuple[Any, ...]]  # a run -> the arguments of its submit


@contextlib.contextmanager
def _local_pool(function: Callable[..., Any], size: int, call: Call) -> Iterator[StudyExecutor]:
    """``size`` worker processes of the standard library's ``ProcessPoolExecutor``."""
    context = multiprocessing.get_context()
    if context.get_start_method() != "fork":
        _check_picklable(function)

    def new_pool() -> concurrent.futures.ProcessPoolExecutor:
        # (execute_run gives each run one thread already; starting the workers at one keeps
        # its restore a no-op there: on torch's native thread pool, which takes the thread
        # count once, restoring the default after a run warns)
        return concurrent.futures.ProcessPoolExecutor(
            size, mp_context=context, initializer=torch.set_num_threads, initargs=(1,)
        )

    pools = [new_pool()]

    def restart() -> None:  # (a pool whose worker died is broken for good)
        pools[-1].shutdown(wait=True)
        pools.append(new_pool())

    def cancel(active: list[tuple[Any, Run]]) -> None:
        # (a notebook's interrupt reaches this process only: stop the workers' runs too)
        for handle, run in active:
            handle.cancel()
            pid = (read_status(run.directory) or {}).get("pid")
            if isinstance(pid, int) and pid != os.getpid():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)

    try:
        yield StudyExecutor(
            lambda run: pools[-1].submit(*call(run)), restart=restart, cancel=cancel
        )
    finally:
        pools[-1].shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def _dask(engine: Any, size: int, call: Call) -> Iterator[StudyExecutor]:
    """A ``distributed.Client`` given, or a ``LocalCluster`` of ``size`` worker processes
    (one thread each) started here and closed at the end."""
    distributed = _extra("distributed", "dask")
    client, cluster = engine, None
    if engine == "dask":
        cluster = distributed.LocalCluster(n_workers=size, threads_per_worker=1, processes=True,
                                           dashboard_address=None)  # fmt: skip
        client = distributed.Client(cluster)

    def cancel(active: list[tuple[Any, Run]]) -> None:
        client.cancel([future for future, _run in active])

    try:  # (pure=False: a run submitted again is a new task, not the lost one's result)
        yield StudyExecutor(lambda run: client.submit(*call(run), pure=False), cancel=cancel,
                            poll=0.5)  # fmt: skip
    finally:
        if cluster is not None:
            client.close()
            cluster.close()


@contextlib.contextmanager
def _submitit(engine: Any, directory: Path, call: Call) -> Iterator[StudyExecutor]:
    """A submitit executor given, or an ``AutoExecutor`` (SLURM where there is one, local
    processes elsewhere) logging into the study's ``submitit/`` folder: one job per run."""
    submitit = _extra("submitit", "slurm")
    executor = engine
    if engine == "slurm":
        executor = submitit.AutoExecutor(folder=directory / "submitit")
        executor.update_parameters(cpus_per_task=1, timeout_min=24 * 60)

    def cancel(active: list[tuple[Any, Run]]) -> None:
        for job, _run in active:
            job.cancel(check=False)

    yield StudyExecutor(lambda run: executor.submit(*call(run)), cancel=cancel, poll=1.0)


@contextlib.contextmanager
def open_engine(
    engine: Any, workers: Any, function: Callable[..., Any], runs: int, directory: Path
) -> Iterator[StudyExecutor]:
    """A :class:`StudyExecutor` on ``engine`` (see :meth:`Study.run
    <rl_mind.study.Study.run>`) for ``runs`` runs of the study in ``directory``. Everything
    is checked before anything starts, and what this function started is stopped on exit.
    One run, or ``workers=1``, runs in this process."""
    count = _check_workers(workers)
    if isinstance(engine, str) and engine not in ENGINES:
        raise ValueError(f"Study.run: engine must be one of {ENGINES} or an executor "
                         f"(a distributed.Client, a submitit executor), got {engine!r}")  # fmt: skip
    if not isinstance(engine, str) and not callable(getattr(engine, "submit", None)):
        raise TypeError(f"Study.run: engine must be one of {ENGINES} or an object with a "
                        f"submit method, got {type(engine).__name__}")  # fmt: skip

    def call(run: Run) -> tuple[Any, ...]:
        return (execute_run, function, dict(run.config), run.seed, str(run.directory))

    module = "" if isinstance(engine, str) else type(engine).__module__
    size = max(1, min(count, runs))
    if runs == 0 or (engine == "local" and size == 1):
        yield StudyExecutor(lambda run: _Finished(execute_run(*call(run)[1:])))
    elif engine == "local":
        with _local_pool(function, size, call) as executor:
            yield executor
    elif engine == "dask" or module.startswith("distributed"):
        with _dask(engine, size, call) as executor:
            yield executor
    elif engine == "slurm" or module.startswith("submitit"):
        with _submitit(engine, directory, call) as executor:
            yield executor
    else:  # any concurrent.futures.Executor

        def cancel(active: list[tuple[Any, Run]]) -> None:
            for future, _run in active:
                future.cancel()

        yield StudyExecutor(lambda run: engine.submit(*call(run)), cancel=cancel)
