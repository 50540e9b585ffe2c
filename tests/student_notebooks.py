"""Student notebooks with a wrong answer, for the tests that run a practical as a student
would (tests/test_practicals.py headless, tests/test_browser.py in a browser)."""

from __future__ import annotations

from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def wrong_dqn_student() -> nbformat.NotebookNode:
    """The student's DQN notebook, every gap filled with the solution's code but the loss,
    written with the [N, 1] broadcast bug (the TD target is right)."""
    student = nbformat.read(NOTEBOOKS / "dqn.ipynb", as_version=4)
    solution = nbformat.read(NOTEBOOKS / "solutions" / "dqn.ipynb", as_version=4)
    for mine, reference in zip(student.cells, solution.cells):
        if "raise NotImplementedError(" in mine.source:
            mine.source = reference.source
            if "def dqn_loss" in mine.source:
                mine.source = mine.source.replace(".unsqueeze(1)).squeeze(1)", ".unsqueeze(1))")
    return student
