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

__all__ = ["IntervalEstimate", "interval_estimate", "iqm", "probability_of_improvement"]
