"""``rl-mind practical``: student and solution notebooks from one practical source.

A teacher writes each practical once, as a Python file in jupytext's *percent* format
(cells separated by ``# %%`` lines, markdown cells by ``# %% [markdown]``), with the
reference solution inside nbgrader's markers::

    def td_target(...):
        ### BEGIN SOLUTION the TD targets y [N], without gradients
        ...reference code...
        ### END SOLUTION

Two notebooks come out of it:

- the **student** notebook, where each marked region is replaced by a stub at the same
  indentation: a ``# YOUR CODE HERE:`` comment naming what to write (the text after
  ``### BEGIN SOLUTION``, or else the enclosing function) and a short ``raise
  NotImplementedError`` that fits the cell;
- the **solution** notebook, the source as it is (markers included, so that the reader
  sees where the gaps are).

Both start with one line, ``%pip install -q "rl-mind>=<this version>"``, before any other
import (:func:`install_line`, written by the generator: a source has none of its own).

With ``--nbgrader COURSE_DIR`` the command writes instead an **nbgrader source
assignment** (``COURSE_DIR/source/<name>/<name>.ipynb``): the cells holding a solution
region are solution cells, the check cells (``check_xxx(xxx)``) autograded test cells worth
one point per function checked (a check declared in the source, its ``points``), or
``points`` set in the source's cell header (``# %% points=2``), and every other cell is
locked. The command also writes the course's ``nbgrader_config.py`` where it has none, or
adds one setting to the teacher's (:func:`configure_nbgrader_course`): nbgrader's
``ClearSolutions`` replaced by :func:`nbgrader_preprocessors`' own, so that the released
stubs say what to write, as the student notebook's do. The teacher then runs
``nbgrader generate_assignment`` and ``nbgrader autograde`` as they are.

A check the source declares (``check_f = Check("f", ...)``, see
:mod:`rl_mind.checks.teacher`) gets its cases, computed from the reference solution, written
into its cell, in every notebook generated.

Generated notebooks carry no outputs, fixed cell ids and no jupytext metadata, so that
they are byte-for-byte reproducible and can be committed; ``rl-mind practical --check``
(and :func:`stale_notebooks`, from a test) fails when they are out of date.

The package: :mod:`~rl_mind.practicals.source` (the one parse of a source and of its
solution markers), :mod:`~rl_mind.practicals.notebooks` (student, solution and nbgrader
notebooks rendered from it), :mod:`~rl_mind.practicals.reference` (the reference
practicals) and :mod:`~rl_mind.practicals.cli` (the command line).

The reference practical (complete, no gaps) is generated the same way from the package
module that the main job runs: ``rl-mind practical --reference notebooks`` writes
``notebooks/selfplay_ppo.ipynb`` from ``rl_mind/selfplay/trainer.py``
(:data:`REFERENCE_PRACTICALS`, :func:`reference_notebook`).

What the reader must not get wrong: the markers are matched per line (``### BEGIN
SOLUTION`` and ``### END SOLUTION`` on their own lines, in one code cell, not nested);
anything else is an error that names the file and the cell. Reading the percent format
needs ``jupytext`` (``pip install jupytext``).
"""

from rl_mind.practicals.cli import main
from rl_mind.practicals.notebooks import (
    NBGRADER_CONFIG,
    PracticalNotebooks,
    configure_nbgrader_course,
    generate_nbgrader_assignment,
    generate_notebooks,
    nbgrader_preprocessors,
    render_nbgrader,
    render_notebooks,
    stale_notebooks,
)
from rl_mind.practicals.reference import (
    REFERENCE_PRACTICALS,
    reference_notebook,
    stale_reference_notebooks,
    write_reference_notebooks,
)
from rl_mind.practicals.source import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    install_check,
    install_line,
    needed_extras,
    student_source,
)

__all__ = [
    "BEGIN_SOLUTION",
    "END_SOLUTION",
    "REFERENCE_PRACTICALS",
    "NBGRADER_CONFIG",
    "PracticalNotebooks",
    "configure_nbgrader_course",
    "generate_nbgrader_assignment",
    "generate_notebooks",
    "install_check",
    "install_line",
    "main",
    "nbgrader_preprocessors",
    "needed_extras",
    "reference_notebook",
    "render_nbgrader",
    "render_notebooks",
    "stale_notebooks",
    "stale_reference_notebooks",
    "student_source",
    "write_reference_notebooks",
]
