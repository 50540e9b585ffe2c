"""Checks for the practicals: ``check_xxx(student_fn)`` in the cell right after each gap.

Each check runs the student's function on prepared cases and either prints one ``✓``
line, or raises :class:`CheckFailure` (an ``AssertionError``) saying on which case what
is wrong (a bootstrap at a terminal step, returns leaking across an episode boundary,
gradients flowing through a target, a sign error, an input changed in place...) and a
hint, without printing the formula. "Run All" stops at the first wrong function, and a
grading tool counts the failed check cell. A notebook cell reads::

    check_gae(gae)

One module per practical (:mod:`rl_mind.checks.dp`, ``.tabular``, ``.dqn``,
``.reinforce``, ``.a2c``, ``.ppo``, ``.td3``, ``.sac``) describes its gaps as :class:`~rl_mind.checks.engine.Spec` s and
defines their checks; the shared engine (:mod:`rl_mind.checks.engine`, with the inputs of
:mod:`rl_mind.checks.inputs`) runs them. The cases' expected outputs are data stored
beside each module (``dqn.pt``), produced from the reference solutions of the practical
sources: ``python -m rl_mind.checks notebooks/src/*.py`` regenerates them. A practical of
the package has its module here, which defines ``SPECS`` (found by
:func:`practical_modules`), and its data file.

A teacher who adds a function to a practical declares its check in the practical source
instead, with :class:`Check` (:mod:`rl_mind.checks.teacher`): its cases are computed from
the reference solution when ``rl-mind practical`` generates the notebooks, and travel in
the notebook, so that no file of the package is needed.

What the reader must not get wrong: a check never swallows the student's exceptions (a
``NotImplementedError`` from an unfilled gap, a shape error) — they propagate with their
traceback, which is what a student needs to see.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from rl_mind.checks import references
from rl_mind.checks.a2c import check_a2c_loss, check_nstep_returns
from rl_mind.checks.dp import (
    check_greedy_policy,
    check_policy_evaluation,
    check_q_from_v,
    check_value_iteration,
)
from rl_mind.checks.dqn import check_dqn_loss, check_dqn_td_target
from rl_mind.checks.engine import Case, CheckFailure, Mistake, Probe, Spec
from rl_mind.checks.limits import Limit
from rl_mind.checks.ppo import check_gae, check_ppo_policy_loss, check_ppo_value_loss
from rl_mind.checks.reinforce import check_discounted_returns, check_reinforce_loss
from rl_mind.checks.sac import check_sac_actor_loss, check_sac_target, check_sac_temperature_loss
from rl_mind.checks.tabular import (
    check_epsilon_greedy,
    check_q_learning_target,
    check_sarsa_target,
    check_td_update,
)
from rl_mind.checks.td3 import check_td3_actor_loss, check_td3_target, check_update_targets
from rl_mind.checks.teacher import Check

__all__ = [
    "CHECKS",
    "SPECS",
    "Case",
    "Check",
    "CheckFailure",
    "Limit",
    "Mistake",
    "Probe",
    "check_a2c_loss",
    "check_discounted_returns",
    "check_dqn_loss",
    "check_dqn_td_target",
    "check_epsilon_greedy",
    "check_gae",
    "check_greedy_policy",
    "check_nstep_returns",
    "check_policy_evaluation",
    "check_ppo_policy_loss",
    "check_ppo_value_loss",
    "check_q_from_v",
    "check_q_learning_target",
    "check_reinforce_loss",
    "check_sac_actor_loss",
    "check_sac_target",
    "check_sac_temperature_loss",
    "check_sarsa_target",
    "check_td3_actor_loss",
    "check_td3_target",
    "check_td_update",
    "check_update_targets",
    "check_value_iteration",
    "expected_data",
    "practical_modules",
    "reference_functions",
    "regenerate",
]

_ENGINE = {"engine", "inputs", "limits", "references", "teacher", "__main__"}


def practical_modules() -> list[ModuleType]:
    """Every module of this package that defines a practical's ``SPECS``."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__))
    modules = [
        importlib.import_module(f"{__name__}.{name}") for name in names if name not in _ENGINE
    ]
    return [module for module in modules if hasattr(module, "SPECS")]


SPECS: dict[str, Spec] = {
    spec.function: spec for module in practical_modules() for spec in module.SPECS
}
"""Gap function name -> its :class:`~rl_mind.checks.engine.Spec`, for every practical."""

CHECKS: dict[str, str] = {name: f"check_{name}" for name in SPECS}
"""Gap function name -> the name of its check function."""


def reference_functions(sources: Sequence[str | Path]) -> dict[str, Callable[..., Any]]:
    """The reference solutions of the gaps defined in the practical ``sources``."""
    return references.reference_functions(sources, SPECS)


def expected_data(references_: dict[str, Callable[..., Any]]) -> dict[str, list[dict[str, Any]]]:
    """The inputs and expected outputs of every case of every practical, by gap function,
    from the reference solutions (what the data files hold)."""
    data: dict[str, list[dict[str, Any]]] = {}
    for module in practical_modules():
        data.update(references.expected_data(module.SPECS, references_))
    return data


def regenerate(sources: Sequence[str | Path]) -> list[Path]:
    """Write the data of every practical whose gaps are defined in ``sources``."""
    return references.regenerate(sources, SPECS)
