"""``rl-mind study FILE.py``: run, resume or summarise the study a Python file declares.

The file declares a :class:`~rl_mind.study.Study` at module level (named ``study``, or the
only one in the file)::

    # overestimation.py
    from rl_mind.study import Study

    def train(algo="td3", layer_norm=False, *, seed, run_dir): ...

    study = Study(train, grid={"algo": ["ddpg", "td3"], "layer_norm": [False, True]},
                  seeds=[0, 1, 2], directory="studies/overestimation")

Then ``rl-mind study overestimation.py`` runs what is not done yet (all of it the first
time), ``--summary`` only says where the study stands, and ``--engine dask`` or
``--engine slurm`` runs it beyond local processes. The exit status is 0 when every run is
done, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from rl_mind.study.engines import ENGINES
from rl_mind.study.runner import Study

__all__ = ["load_study", "main"]


def _load_module(path: Path) -> ModuleType:
    # Imported under its own name, with its folder on sys.path, so that worker processes
    # (started by fork, spawn, Dask or submitit) find its training function by that name.
    folder, name = str(path.parent), path.stem
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"rl-mind study: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    # Processes started afresh (submitit's jobs, Dask's workers) find the file's folder on
    # their path, and cloudpickle (which both use) sends the file's functions by value.
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, *filter(None, paths)])
    with contextlib.suppress(ImportError):
        import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    return module


def load_study(path: str | Path) -> Study:
    """The :class:`~rl_mind.study.Study` that the Python file ``path`` declares at module
    level: the one named ``study``, or the only one. The file runs as it is imported (keep
    the training itself under ``if __name__ == "__main__":`` or in functions)."""
    path = Path(path).expanduser().resolve()
    if not path.is_file() or path.suffix != ".py":
        raise ValueError(f"rl-mind study: expected a Python file declaring a Study, got {path}")
    module = _load_module(path)
    found = {name: value for name, value in vars(module).items() if isinstance(value, Study)}
    if "study" in found:
        return found["study"]
    if len(found) == 1:
        return next(iter(found.values()))
    raise ValueError(f"rl-mind study: {path} declares {len(found)} studies "
                     f"({', '.join(found) or 'none'}); name the one to run `study`")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rl-mind study`` with ``argv`` (the arguments after ``study``)."""
    parser = argparse.ArgumentParser(
        prog="rl-mind study", description="Run, resume or summarise the study a file declares."
    )
    parser.add_argument("file", help="a Python file with a module-level Study (named `study`)")
    parser.add_argument("--workers", type=int, default=None,
                        help="runs at once (default: one per core)")  # fmt: skip
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="local processes (default), a Dask LocalCluster, or SLURM through "
                             "submitit")  # fmt: skip
    parser.add_argument("--scheduler", default=None,
                        help="with --engine dask: the address of a running Dask scheduler to "
                             "use instead of a local cluster (tcp://host:8786)")  # fmt: skip
    parser.add_argument("--summary", action="store_true",
                        help="only say where the study stands; run nothing")  # fmt: skip
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.scheduler is not None and args.engine != "dask":
        parser.error("--scheduler goes with --engine dask")
    study = load_study(args.file)
    if args.summary:
        summary = study.summary()
        print(summary)
        return 0 if summary.complete else 1
    engine: object = args.engine
    if args.scheduler is not None:
        from distributed import Client

        engine = Client(args.scheduler)
    summary = study.run(args.workers, engine=engine)
    return 0 if summary.complete else 1
