"""The notebooks rendered from a practical's one parse: student and solution, or an
nbgrader source assignment, and the files they are written to.

:func:`render_notebooks` and :func:`render_nbgrader` take a source's text, or a
:class:`~rl_mind.practicals.source.Practical` already parsed (the checks the source
declares are computed once, in the parse). The nbgrader assignment's solution cells keep
the markers, with what to write in a comment above each; :func:`nbgrader_preprocessors`
gives ``nbgrader generate_assignment`` the student notebook's stubs for them.

What the reader must not get wrong: generated notebooks carry no outputs, fixed cell ids
and no jupytext metadata, so that they are byte-for-byte reproducible and can be committed;
:func:`stale_notebooks` compares them with what their sources give now.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_mind.practicals.source import (
    BEGIN_SOLUTION,
    Practical,
    Region,
    parse_practical,
    replace_regions,
    solution_regions,
    student_source,
)

__all__ = [
    "NBGRADER_CONFIG",
    "PracticalNotebooks",
    "configure_nbgrader_course",
    "generate_nbgrader_assignment",
    "generate_notebooks",
    "nbgrader_preprocessors",
    "render_nbgrader",
    "render_notebooks",
    "stale_notebooks",
]


@dataclass(frozen=True)
class PracticalNotebooks:
    """The two notebooks generated from one source, as ``.ipynb`` JSON text."""

    student: str
    solution: str
    n_gaps: int


def _parsed(source: str | Practical, name: str) -> Practical:
    return source if isinstance(source, Practical) else parse_practical(source, name)


def render_notebooks(text: str | Practical, *, name: str = "practical") -> PracticalNotebooks:
    """Student and solution notebooks (``.ipynb`` JSON text) from a percent-format source
    (or its :func:`~rl_mind.practicals.source.parse_practical`)."""
    import nbformat

    practical = _parsed(text, name)
    student = copy.deepcopy(practical.notebook)
    for i, source in practical.student.items():
        student.cells[i].source = source
    return PracticalNotebooks(
        student=nbformat.writes(student) + "\n",
        solution=nbformat.writes(practical.notebook) + "\n",
        n_gaps=practical.n_gaps,
    )


# ---------------------------------------------------------------------- nbgrader
_TO_WRITE = "# To write: "


def _nbgrader_solution_source(source: str) -> tuple[str, str | None]:
    """A solution cell for nbgrader, and the function of its first region: what to write
    moves from the marker to a comment above it, which nbgrader's own stub keeps."""
    regions = solution_regions(source)
    lines = source.split("\n")

    def marked(region: Region) -> list[str]:
        head = [f"{region.indent}{_TO_WRITE}{region.what()}", f"{region.indent}{BEGIN_SOLUTION}"]
        return head + lines[region.begin + 1 : region.end + 1]

    function = next((region.function for region in regions if region.function), None)
    return "\n".join(replace_regions(lines, regions, marked)), function


def released_source(source: str) -> str:
    """The released version of a solution cell of :func:`render_nbgrader`: the stubs of
    the student notebook (:func:`~rl_mind.practicals.source.student_source`), what to
    write moved back from its comment to the marker."""
    lines = source.split("\n")
    for region in reversed(solution_regions(source)):
        above = lines[region.begin - 1].strip() if region.begin > 0 else ""
        if above.startswith(_TO_WRITE):
            what = region.description or above[len(_TO_WRITE) :]
            lines[region.begin] = f"{region.indent}{BEGIN_SOLUTION} {what}"
            del lines[region.begin - 1]
    return student_source("\n".join(lines))


def nbgrader_preprocessors() -> list[Any]:
    """The preprocessors of ``nbgrader generate_assignment`` with the stubs of the student
    notebook: each solution region becomes the ``NotImplementedError`` that says what to
    write, as in the notebook of ``rl-mind practical``, instead of nbgrader's bare
    ``raise NotImplementedError()``. ``rl-mind practical --nbgrader`` writes it into the
    course's ``nbgrader_config.py`` (:func:`configure_nbgrader_course`)::

        from rl_mind.practicals import nbgrader_preprocessors
        c.GenerateAssignment.preprocessors = nbgrader_preprocessors()

    (nbgrader's stub is one text for every region, so that it cannot say what each one
    asks; the other preprocessors are nbgrader's own, in its order.)
    """
    from nbgrader import utils
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions

    class ClearSolutionsWithMessages(ClearSolutions):  # type: ignore[misc]
        """nbgrader's ClearSolutions, writing rl-mind's stubs in Python code cells."""

        def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
            python = resources["language"] == "python"
            if cell.cell_type != "code" or not python or BEGIN_SOLUTION not in cell.source:
                return super().preprocess_cell(cell, resources, index)  # type: ignore[no-any-return]
            if not utils.is_solution(cell) and self.enforce_metadata:  # (as nbgrader does)
                raise RuntimeError(
                    "Solution region detected in a non-solution cell; please make sure "
                    "all solution regions are within solution cells."
                )
            cell.source = released_source(cell.source)
            return cell, resources

    default = GenerateAssignment.class_traits()["preprocessors"].default()
    return [ClearSolutionsWithMessages if step is ClearSolutions else step for step in default]


def render_nbgrader(text: str | Practical, *, name: str = "practical") -> str:
    """The nbgrader source assignment (``.ipynb`` JSON text) of a percent-format source
    (or its :func:`~rl_mind.practicals.source.parse_practical`).

    Cells with a solution region are nbgrader solution cells (autograded answers); check
    cells are autograded test cells with their points; every other cell is locked, so that
    ``nbgrader autograde`` runs the teacher's version of it.
    """
    import nbformat

    practical = _parsed(text, name)
    notebook = copy.deepcopy(practical.notebook)
    used: set[str] = set()
    for i, cell in enumerate(notebook.cells):
        meta: dict[str, Any] = {"grade": False, "solution": False, "locked": True}
        grade_id = cell.id
        if i in practical.student:
            cell.source, function = _nbgrader_solution_source(cell.source)
            meta.update(solution=True, locked=False)
            grade_id = function or cell.id
        elif i in practical.points:
            meta.update(grade=True, points=practical.points[i])
            grade_id = "check_" + "-".join(practical.checks[i])
        if grade_id in used:
            grade_id = f"{grade_id}-{cell.id}"
        used.add(grade_id)
        cell.metadata["nbgrader"] = nbformat.from_dict(
            {**meta, "grade_id": grade_id, "schema_version": 3, "task": False}
        )
    return nbformat.writes(notebook) + "\n"


# ---------------------------------------------------------------------- files
def _targets(
    source: Path, student_dir: str | Path | None, solution_dir: str | Path | None
) -> tuple[Path, Path]:
    """Where the student and solution notebooks of ``source`` go (defaults: see
    :func:`generate_notebooks`)."""
    base = source.parent.parent if source.parent.name == "src" else source.parent
    student = Path(student_dir or base) / f"{source.stem}.ipynb"
    solution = Path(solution_dir or base / "solutions") / f"{source.stem}.ipynb"
    if student.resolve() == solution.resolve():  # (the solution would overwrite the gaps)
        raise ValueError(
            f"the student and solution notebooks of {source.name} would both be {student}; "
            f"give different folders (--student-dir, --solution-dir)"
        )
    return student, solution


def generate_notebooks(
    source: str | Path,
    student_dir: str | Path | None = None,
    solution_dir: str | Path | None = None,
) -> tuple[Path, Path]:
    """Write the student and solution notebooks of ``source``; returns their paths.

    By default, for ``notebooks/src/dqn.py``: ``notebooks/dqn.ipynb`` (student) and
    ``notebooks/solutions/dqn.ipynb`` (a source outside a ``src`` folder writes next to
    itself and into ``solutions/`` beside it).
    """
    source = Path(source)
    student_path, solution_path = _targets(source, student_dir, solution_dir)
    notebooks = render_notebooks(source.read_text(encoding="utf-8"), name=source.stem)
    for path, text in ((student_path, notebooks.student), (solution_path, notebooks.solution)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return student_path, solution_path


def generate_nbgrader_assignment(source: str | Path, course_dir: str | Path) -> Path:
    """Write the nbgrader source assignment of ``source`` into the course folder
    ``course_dir``: ``<course_dir>/source/<name>/<name>.ipynb`` (the assignment and the
    notebook are named after the source, ``dqn`` for ``dqn.py``). Returns its path."""
    source = Path(source)
    target = Path(course_dir) / "source" / source.stem / f"{source.stem}.ipynb"
    text = render_nbgrader(source.read_text(encoding="utf-8"), name=source.stem)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    configure_nbgrader_course(course_dir)
    return target


#: The course's nbgrader configuration file, which nbgrader reads from the folder it runs in.
NBGRADER_CONFIG = "nbgrader_config.py"
_PREPROCESSORS_SETTING = "c.GenerateAssignment.preprocessors = nbgrader_preprocessors()"
_OWN_PREPROCESSORS = re.compile(r"^\s*c\.GenerateAssignment\.preprocessors\s*[+]?=", re.M)


def configure_nbgrader_course(course_dir: str | Path) -> str:
    """Make ``nbgrader generate_assignment`` in ``course_dir`` write the student notebook's
    stubs (:func:`nbgrader_preprocessors`); returns what was done, in a sentence.

    - No ``nbgrader_config.py``: writes one, with the course id (the folder's name, as
      ``nbgrader quickstart`` does), 120 seconds per cell, and the setting.
    - A configuration that already uses :func:`nbgrader_preprocessors`: left as it is.
    - A configuration of the teacher's without ``GenerateAssignment.preprocessors``: the
      setting is appended to it, under a comment; nothing else changes.
    - A configuration that sets its own ``GenerateAssignment.preprocessors``: left as it is
      (nbgrader's stubs are then bare, ``raise NotImplementedError()``); the sentence
      returned says so and what to write.
    """
    course = Path(course_dir)
    config = course / NBGRADER_CONFIG
    if config.is_dir():
        raise ValueError(f"{config} is a folder; nbgrader reads its settings from a file there")
    setting = f"from rl_mind.practicals import nbgrader_preprocessors\n\n{_PREPROCESSORS_SETTING}\n"
    why = "# the released stubs say what to write, as the student notebooks' do (rl-mind)\n"
    if not config.exists():
        course.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f"# nbgrader's settings for this course, written by `rl-mind practical --nbgrader`:\n"
            f"# edit them freely (https://nbgrader.readthedocs.io, its configuration options).\n"
            f"from rl_mind.practicals import nbgrader_preprocessors\n\n"
            f"c = get_config()\n"
            f"c.CourseDirectory.course_id = {json.dumps(course.resolve().name)}"
            f"  # the folder's name, as `nbgrader quickstart` does\n"
            f"c.Execute.timeout = 120  # seconds per cell\n"
            f"{why}{_PREPROCESSORS_SETTING}\n",
            encoding="utf-8",
        )
        return f"wrote {config} (the released stubs say what to write)"
    text = config.read_text(encoding="utf-8")
    if "nbgrader_preprocessors" in text:
        return f"{config} already uses nbgrader_preprocessors()"
    if _OWN_PREPROCESSORS.search(text):
        return (
            f"warning: {config} sets its own c.GenerateAssignment.preprocessors, left as it "
            f"is: the released stubs will be nbgrader's bare `raise NotImplementedError()`. "
            f"For stubs that say what to write, set instead `{_PREPROCESSORS_SETTING}` "
            f"(from rl_mind.practicals import nbgrader_preprocessors)"
        )
    separator = "" if text.endswith("\n") or not text else "\n"
    config.write_text(
        f"{text}{separator}\n# added by `rl-mind practical --nbgrader`: {why[2:]}{setting}",
        encoding="utf-8",
    )
    return f"added `{_PREPROCESSORS_SETTING}` to {config} (the released stubs say what to write)"


def stale_notebooks(
    sources: Sequence[str | Path],
    student_dir: str | Path | None = None,
    solution_dir: str | Path | None = None,
) -> list[Path]:
    """The generated notebooks that are missing or differ from what their source gives now."""
    stale: list[Path] = []
    for source in map(Path, sources):
        student_path, solution_path = _targets(source, student_dir, solution_dir)
        notebooks = render_notebooks(source.read_text(encoding="utf-8"), name=source.stem)
        for path, text in ((student_path, notebooks.student), (solution_path, notebooks.solution)):
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
    return stale
