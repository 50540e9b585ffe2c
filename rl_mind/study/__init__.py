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
- :mod:`rl_mind.study.intervals`: interval estimates across seeds (bootstrap CIs, the IQM,
  the probability of improvement).
- :mod:`rl_mind.study.plots`: learning curves, final performance and probabilities of
  improvement read from the table, with their intervals (``rl-mind compare``).
"""

from rl_mind.study.intervals import (
    IntervalEstimate,
    interval_estimate,
    iqm,
    probability_of_improvement,
)
from rl_mind.study.plots import (
    final_performance,
    improvement_probabilities,
    learning_curves,
    plot_final_performance,
    plot_improvement,
    plot_learning_curves,
)
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
    "IntervalEstimate",
    "Run",
    "Study",
    "StudySummary",
    "execute_run",
    "final_performance",
    "improvement_probabilities",
    "interval_estimate",
    "iqm",
    "learning_curves",
    "load_table",
    "plot_final_performance",
    "plot_improvement",
    "plot_learning_curves",
    "probability_of_improvement",
    "read_config",
    "read_status",
    "write_json",
]
