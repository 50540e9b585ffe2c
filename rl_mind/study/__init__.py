"""Studies: a training function's variants × seeds, run on every core or on a cluster.

Imported on demand (``from rl_mind.study import load_table``), not by ``import rl_mind``:
the table needs pandas (the ``study`` extra), and the engines Dask or submitit.

- :mod:`rl_mind.study.runner`: :class:`Study` (a training function, a grid of variants,
  seeds, a directory) and :class:`StudySummary`.
- :mod:`rl_mind.study.engines`: where the runs execute (local processes, Dask, submitit).
- :mod:`rl_mind.study.progress`: the study's one progress display.
- :mod:`rl_mind.study.table`: :func:`load_table`, the runs' evaluations as a DataFrame.
- :mod:`rl_mind.study.runs`: one :class:`Run` per variant and seed, the files of its
  directory (``config.json``, ``status.json``, written atomically), and
  :func:`execute_run`, what every engine runs.
"""

from rl_mind.study.runner import Study, StudySummary
from rl_mind.study.runs import (
    CONFIG_FILE,
    STATUS_FILE,
    STUDY_FILE,
    Run,
    execute_run,
    read_config,
    read_status,
    write_json,
)
from rl_mind.study.table import load_table

__all__ = [
    "CONFIG_FILE",
    "STATUS_FILE",
    "STUDY_FILE",
    "Run",
    "Study",
    "StudySummary",
    "execute_run",
    "load_table",
    "read_config",
    "read_status",
    "write_json",
]
