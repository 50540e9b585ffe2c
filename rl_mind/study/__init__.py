"""Studies: a project's variants × seeds, their results and how to read them.

``rl_mind.study.intervals``: interval estimates across seeds (bootstrap CIs, the IQM, the
probability of improvement); ``rl_mind.study.plots``: the plots that read a study's table.
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

__all__ = [
    "IntervalEstimate",
    "final_performance",
    "improvement_probabilities",
    "interval_estimate",
    "iqm",
    "learning_curves",
    "plot_final_performance",
    "plot_improvement",
    "plot_learning_curves",
    "probability_of_improvement",
]
