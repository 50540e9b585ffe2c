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

With ``--nbgrader COURSE_DIR`` the command writes instead an **nbgrader source assignment** (``COURSE_DIR/source/<name>/<name>.ipynb``): the cells holding a solution
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

The reference practical (complete, no gaps) is generated the same way from the package
module that the main job runs: ``rl-mind practical --reference notebooks`` writes
``notebooks/selfplay_ppo.ipynb`` from ``rl_mind/selfplay/trainer.py``
(:data:`REFERENCE_PRACTICALS`, :func:`reference_notebook`).

What the reader must not get wrong: the markers are matched per line (``### BEGIN
SOLUTION`` and ``### END SOLUTION`` on their own lines, in one code cell, not nested);
anything else is an error that names the file and the cell. Reading the percent format
needs ``jupytext`` (``pip install jupytext``).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    "reference_notebook",
    "render_nbgrader",
    "render_notebooks",
    "stale_notebooks",
    "stale_reference_notebooks",
    "student_source",
    "write_reference_notebooks",
]

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"

_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
_KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
_INSTALL = re.compile(r"pip\s+install\s+[\"']?rl[-_]mind", re.IGNORECASE)


def install_line() -> str:
    """The line that opens the first code cell of every generated practical, before its
    imports: ``%pip install -q "rl-mind>=<this version>"``.

    One line, as in the notebooks of other courses: pip installs rl-mind where it is
    missing (Colab, a fresh machine), upgrades an older release, and does nothing, without
    the network, where a recent enough release is installed (a course's environment, an
    editable checkout). ``%pip`` installs into the kernel's own interpreter. What one line
    does not do (the practicals guide says it): a kernel that had already imported an older
    release keeps it until it is restarted."""
    from rl_mind import __version__

    return f'%pip install -q "rl-mind>={__version__}"'


def install_check() -> str:
    """The code the generator puts at the top of the first code cell of every practical,
    before any other import: :func:`install_line` (rl-mind 0.5's twenty-line check of the
    installed version became that one line)."""
    return install_line()


def _enclosing_function(lines: list[str], marker_index: int) -> str | None:
    """The name of the ``def`` that contains the line ``marker_index`` (None at top level)."""
    indent = len(lines[marker_index]) - len(lines[marker_index].lstrip())
    for line in reversed(lines[:marker_index]):
        match = _DEF.match(line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return None


def _marker_parts(line: str) -> tuple[str, str]:
    """(indentation, what to write) of a ``### BEGIN SOLUTION`` line."""
    indent = line[: len(line) - len(line.lstrip())]
    return indent, line.strip()[len(BEGIN_SOLUTION) :].strip(" :-\u2014")


def _stub_message(lines: list[str], marker_index: int, description: str) -> tuple[str, str]:
    """(what to write, the NotImplementedError message) for the region at ``marker_index``."""
    function = _enclosing_function(lines, marker_index)
    what = description or (f"the body of {function}()" if function else "the marked code")
    # (short, so that the line fits the cell: what to write is in the comment above it)
    prefix = f"{function}(): " if function else ""
    return what, f"{prefix}not written yet (YOUR CODE HERE)"


# a line meant as a marker but spelt otherwise (e.g. "# BEGIN SOLUTION", "### End Solution"):
# left as it is, it would copy the solution into the student notebook
_NEAR_MARKER = re.compile(r"\s*#+\s*(BEGIN|END)[\s_-]*SOLUTION", re.IGNORECASE)


def _check_markers(source: str, where: str) -> None:
    """Refuse a line that looks like a solution marker but is not spelt as one."""
    for i, line in enumerate(source.split("\n")):
        stripped = line.strip()
        if _NEAR_MARKER.match(line) and not stripped.startswith((BEGIN_SOLUTION, END_SOLUTION)):
            exact = BEGIN_SOLUTION if "BEGIN" in stripped.upper() else END_SOLUTION
            raise ValueError(
                f"{where}, line {i + 1}: {stripped!r} looks like a solution marker but is not "
                f"one; write {exact!r} exactly (as it is, the solution would be copied into "
                f"the student notebook)"
            )


def student_source(source: str, *, where: str = "<cell>") -> str:
    """The code of one cell with each solution region replaced by a stub.

    ``where`` names the cell in error messages. The stub is::

        # YOUR CODE HERE: <what to write>
        raise NotImplementedError("<function>(): not written yet (YOUR CODE HERE)")
    """
    _check_markers(source, where)
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(BEGIN_SOLUTION):
            if inside:
                raise ValueError(
                    f"{where}, line {i + 1}: {BEGIN_SOLUTION!r} inside another solution region; "
                    f"close the first one with {END_SOLUTION!r}"
                )
            inside = True
            indent, description = _marker_parts(line)
            what, message = _stub_message(lines, i, description)
            out.append(f"{indent}# YOUR CODE HERE: {what}")
            out.append(f"{indent}raise NotImplementedError({message!r})")
        elif stripped.startswith(END_SOLUTION):
            if not inside:
                raise ValueError(
                    f"{where}, line {i + 1}: {END_SOLUTION!r} without a {BEGIN_SOLUTION!r} before it"
                )
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: {BEGIN_SOLUTION!r} is never closed by {END_SOLUTION!r}")
    student = "\n".join(out)
    # (a marker at another indentation than the code it replaces, or inside brackets, gives a
    # student cell that does not compile; a cell of notebook magics compiles in neither)
    if _syntax_error(source) is None and (error := _syntax_error(student)) is not None:
        raise ValueError(
            f"{where}: the student version of this cell does not compile ({error.msg}, line "
            f"{error.lineno} of the student cell); put each {BEGIN_SOLUTION!r} on a line of "
            f"its own between statements, at the indentation of the code it replaces"
        )
    return student


def _syntax_error(source: str) -> SyntaxError | None:
    try:
        compile(source, "<cell>", "exec")
    except SyntaxError as error:
        return error
    return None


@dataclass(frozen=True)
class PracticalNotebooks:
    """The two notebooks generated from one source, as ``.ipynb`` JSON text."""

    student: str
    solution: str
    n_gaps: int


def _read_percent(text: str) -> Any:
    try:
        import jupytext
    except ImportError:  # pragma: no cover - jupytext is a test dependency
        raise ImportError(
            "rl-mind practical reads jupytext's percent format: "
            'pip install "rl-mind[teacher]" (or pip install jupytext nbformat)'
        ) from None
    return jupytext.reads(text, fmt="py:percent")


def _normalized(notebook: Any, name: str) -> Any:
    """Fixed metadata and cell ids, no outputs: the same source always gives the same bytes."""
    import nbformat

    notebook.metadata = nbformat.from_dict(
        {"kernelspec": _KERNELSPEC, "language_info": {"name": "python"}}
    )
    stem = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:40] or "cell"
    for i, cell in enumerate(notebook.cells):
        cell.id = f"{stem}-{i:03d}"
        # jupytext's layout hints only matter for writing the text form back.
        cell.metadata = nbformat.from_dict(
            {k: v for k, v in cell.metadata.items() if not k.startswith("lines_to_")}
        )
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    return notebook


def _check_calls(source: str) -> list[str] | None:
    """The functions a check cell checks (``check_gae(gae)`` -> ``["gae"]``), or None when
    the cell is not made of ``check_...(...)`` calls only."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # (a cell of notebook magics)
        return None
    checked = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id.startswith("check_")
        ):
            return None
        checked.append(call.func.id.removeprefix("check_"))
    return checked or None


def _practical(text: str, name: str) -> tuple[Any, dict[int, float]]:
    """The source as a normalized notebook with the install line first, and the points of
    each check cell by cell index (``points`` in the cell's header, else each checked
    function's: a declared check's ``points``, one for the package's checks).

    A check declared in the source (``check_f = Check("f", ...)``) gets its cases, computed
    from the reference solution, written into its cell after the declaration."""
    from rl_mind.checks.teacher import declaration_ends, declared_checks, load_code

    notebook = _normalized(_read_percent(text), name)
    declared = declared_checks(text, where=name)
    loaded: dict[str, int] = {}  # check name -> the cell that declares it
    for i, cell in enumerate(notebook.cells):
        ends = declaration_ends(cell.source) if cell.cell_type == "code" else {}
        lines = cell.source.split("\n")
        # each load right after its declaration (from the last, so that the lines stay valid)
        for check_name, end in sorted(ends.items(), key=lambda item: -item[1]):
            if check_name in declared:
                lines[end:end] = load_code(check_name, declared[check_name][1]).split("\n")
                loaded[check_name] = i
        cell.source = "\n".join(lines)
    if set(declared) != set(loaded):
        raise ValueError(
            f"{name}: declare each check at the top level of a code cell: "
            f"{sorted(set(declared) - set(loaded))}"
        )
    for i, cell in enumerate(notebook.cells):
        checked = _check_calls(cell.source) if cell.cell_type == "code" else None
        for function in checked or []:
            where = loaded.get(f"check_{function}")
            if where is not None and where > i:
                raise ValueError(
                    f"{name}, cell {i}: check_{function}({function}) is called here, but "
                    f"check_{function} is declared after it, in cell {where}: declare it in a "
                    f"cell before the gap (the notebook runs top to bottom)"
                )
    points: dict[int, float] = {}
    for i, cell in enumerate(notebook.cells):
        given = cell.metadata.pop("points", None)
        checked = _check_calls(cell.source) if cell.cell_type == "code" else None
        if cell.cell_type == "code" and _INSTALL.search(cell.source):
            raise ValueError(
                f"{name}, cell {i}: the generator writes the install line itself "
                f"({install_line()!r}); remove the source's own"
            )
        if given is not None and checked is None:
            raise ValueError(
                f"{name}, cell {i}: points={given!r} on a cell that is not a check cell (one "
                f"made of check_<function>(<function>) calls)"
            )
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int | float) or not given > 0
        ):
            raise ValueError(f"{name}, cell {i}: points must be a positive number, got {given!r}")
        if checked is not None:
            points[i] = (
                float(given)
                if given is not None
                else sum(
                    declared[f"check_{f}"][0].points if f"check_{f}" in declared else 1.0
                    for f in checked
                )
            )
    first_code = next((cell for cell in notebook.cells if cell.cell_type == "code"), None)
    if first_code is None:
        raise ValueError(f"{name}: no code cell")
    first_code.source = f"{install_check()}\n\n{first_code.source}"
    return notebook, points


def render_notebooks(text: str, *, name: str = "practical") -> PracticalNotebooks:
    """Student and solution notebooks (``.ipynb`` JSON text) from a percent-format source."""
    import nbformat

    solution, _points = _practical(text, name)
    student = copy.deepcopy(solution)
    n_gaps = 0
    for i, cell in enumerate(student.cells):
        if cell.cell_type != "code" or BEGIN_SOLUTION not in cell.source:
            if cell.cell_type == "code":  # (student_source checks the cells it stubs)
                _check_markers(cell.source, f"{name}, cell {i}")
            if END_SOLUTION in cell.source:
                raise ValueError(f"{name}, cell {i}: {END_SOLUTION!r} outside a code cell region")
            continue
        n_gaps += sum(line.strip().startswith(BEGIN_SOLUTION) for line in cell.source.split("\n"))
        cell.source = student_source(cell.source, where=f"{name}, cell {i}")
    if n_gaps == 0:
        raise ValueError(
            f"{name}: no {BEGIN_SOLUTION!r} region found; mark the reference solution in "
            f"the code cells"
        )
    return PracticalNotebooks(
        student=nbformat.writes(student) + "\n",
        solution=nbformat.writes(solution) + "\n",
        n_gaps=n_gaps,
    )


_TO_WRITE = "# To write: "


def _nbgrader_solution_source(source: str) -> tuple[str, str | None]:
    """A solution cell for nbgrader, and the function of its first region: what to write
    moves from the marker to a comment above it, which nbgrader's own stub keeps."""
    lines = source.split("\n")
    out: list[str] = []
    function = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(BEGIN_SOLUTION):
            indent, description = _marker_parts(line)
            what, _message = _stub_message(lines, i, description)
            function = function or _enclosing_function(lines, i)
            out += [f"{indent}{_TO_WRITE}{what}", f"{indent}{BEGIN_SOLUTION}"]
        else:
            out.append(line)
    return "\n".join(out), function


def _nbgrader_student_source(source: str) -> str:
    """The released version of a solution cell of :func:`render_nbgrader`: the stubs of
    the student notebook (:func:`student_source`), what to write moved back from its
    comment to the marker."""
    lines = source.split("\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        above = lines[i - 1].strip() if i > 0 else ""
        if (
            line.strip().startswith(_TO_WRITE)
            and lines[i + 1 : i + 2]
            and lines[i + 1].strip().startswith(BEGIN_SOLUTION)
        ):
            continue
        if line.strip().startswith(BEGIN_SOLUTION) and above.startswith(_TO_WRITE):
            indent, description = _marker_parts(line)
            what = description or above[len(_TO_WRITE) :]
            out.append(f"{indent}{BEGIN_SOLUTION} {what}")
        else:
            out.append(line)
    return student_source("\n".join(out))


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
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions

    class ClearSolutionsWithMessages(ClearSolutions):  # type: ignore[misc]
        """nbgrader's ClearSolutions, writing rl-mind's stubs in Python code cells."""

        def _replace_solution_region(self, cell: Any, language: str) -> bool:
            if (
                cell.cell_type != "code"
                or language != "python"
                or BEGIN_SOLUTION not in cell.source
            ):
                return bool(super()._replace_solution_region(cell, language))
            cell.source = _nbgrader_student_source(cell.source)
            return True

    default = GenerateAssignment.class_traits()["preprocessors"].default()
    return [ClearSolutionsWithMessages if step is ClearSolutions else step for step in default]


def render_nbgrader(text: str, *, name: str = "practical") -> str:
    """The nbgrader source assignment (``.ipynb`` JSON text) of a percent-format source.

    Cells with a solution region are nbgrader solution cells (autograded answers); check
    cells are autograded test cells with their points; every other cell is locked, so that
    ``nbgrader autograde`` runs the teacher's version of it.
    """
    import nbformat

    render_notebooks(text, name=name)  # the same validation of the markers
    notebook, points = _practical(text, name)
    used: set[str] = set()
    for i, cell in enumerate(notebook.cells):
        meta: dict[str, Any] = {"grade": False, "solution": False, "locked": True}
        grade_id = cell.id
        if cell.cell_type == "code" and BEGIN_SOLUTION in cell.source:
            cell.source, function = _nbgrader_solution_source(cell.source)
            meta.update(solution=True, locked=False)
            grade_id = function or cell.id
        elif i in points:
            checked = _check_calls(cell.source) or []
            meta.update(grade=True, points=points[i])
            grade_id = "check_" + "-".join(checked)
        if grade_id in used:
            grade_id = f"{grade_id}-{cell.id}"
        used.add(grade_id)
        cell.metadata["nbgrader"] = nbformat.from_dict(
            {**meta, "grade_id": grade_id, "schema_version": 3, "task": False}
        )
    return nbformat.writes(notebook) + "\n"


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


# ---------------------------------------------------------------------- the reference practical
#: The complete reference practicals, each written as the package module that a job runs
#: (percent format): notebook name -> module file.
REFERENCE_PRACTICALS: dict[str, Path] = {
    "selfplay_ppo": Path(__file__).resolve().parent / "selfplay" / "trainer.py",
}
MAIN_GUARD = 'if __name__ == "__main__":'


def _unguarded(source: str) -> str:
    """A cell that is one ``if __name__ == "__main__":`` block, as its body (dedented)."""
    first, _, body = source.partition("\n")
    lines = body.split("\n")
    if first.strip() != MAIN_GUARD or not all(
        not line or line.startswith("    ") for line in lines
    ):
        return source
    return "\n".join(line[4:] for line in lines)


def reference_notebook(text: str, *, name: str) -> str:
    """The notebook (``.ipynb`` JSON text) of a complete practical written as a module.

    The cells are the module's, as they are, except that a code cell made of one
    ``if __name__ == "__main__":`` block shows its body: in the module that code runs only
    when the module is run as a script, in the notebook it always runs. The first code cell
    starts with :func:`install_line`, as in the other practicals. Solution markers are
    refused (a reference practical has no gaps), and so is an install line of the module's
    own.
    """
    import nbformat

    notebook = _normalized(_read_percent(text), name)
    for i, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            _check_markers(cell.source, f"{name}, cell {i}")
            if BEGIN_SOLUTION in cell.source or END_SOLUTION in cell.source:
                raise ValueError(f"{name}, cell {i}: a reference practical has no solution regions")
            if _INSTALL.search(cell.source):
                raise ValueError(
                    f"{name}, cell {i}: the generator writes the install line itself "
                    f"({install_line()!r}); remove the module's own"
                )
            cell.source = _unguarded(cell.source)
    first_code = next((cell for cell in notebook.cells if cell.cell_type == "code"), None)
    if first_code is None:
        raise ValueError(f"{name}: no code cell")
    first_code.source = f"{install_check()}\n\n{first_code.source}"
    return nbformat.writes(notebook) + "\n"


def write_reference_notebooks(directory: str | Path) -> list[Path]:
    """Write every reference practical's notebook into ``directory``; returns the paths."""
    written = []
    for name, module in REFERENCE_PRACTICALS.items():
        path = Path(directory) / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(reference_notebook(module.read_text("utf-8"), name=name), "utf-8")
        written.append(path)
    return written


def stale_reference_notebooks(directory: str | Path) -> list[Path]:
    """The reference notebooks in ``directory`` that are missing or differ from their module."""
    stale = []
    for name, module in REFERENCE_PRACTICALS.items():
        path = Path(directory) / f"{name}.ipynb"
        expected = reference_notebook(module.read_text("utf-8"), name=name)
        if not path.is_file() or path.read_text(encoding="utf-8") != expected:
            stale.append(path)
    return stale


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-mind practical",
        description=(
            "Generate the student notebook (each '### BEGIN SOLUTION' ... '### END SOLUTION' "
            "region replaced by a stub raising NotImplementedError) and the solution "
            "notebook from practical sources in jupytext's percent format; or, with "
            "--nbgrader, an nbgrader source assignment."
        ),
    )
    parser.add_argument(
        "sources", nargs="*", type=Path, help="practical sources (.py, percent format)"
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write the reference practicals (complete, generated from the modules "
        "the jobs run: " + ", ".join(f"{n}.ipynb" for n in REFERENCE_PRACTICALS) + ") into DIR",
    )
    parser.add_argument(
        "--student-dir",
        type=Path,
        default=None,
        help="where student notebooks go (default: the parent of a 'src' folder, else beside the source)",
    )
    parser.add_argument(
        "--solution-dir",
        type=Path,
        default=None,
        help="where solution notebooks go (default: 'solutions' beside the student notebooks)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit with status 1 if a generated notebook is missing or out of date",
    )
    mode.add_argument(
        "--nbgrader",
        type=Path,
        default=None,
        metavar="COURSE_DIR",
        help="write each practical as an nbgrader source assignment, "
        "COURSE_DIR/source/<name>/<name>.ipynb (and no student or solution notebook)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rl-mind practical``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.sources and args.reference is None:
        parser.error("give practical sources, or --reference DIR")
    if args.reference is not None and _reference(args.reference, args.check) != 0:
        return 1
    if not args.sources:
        return 0
    missing = [str(path) for path in args.sources if not path.is_file()]
    if missing:
        print(f"rl-mind practical: no such source file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        if args.check:
            stale = stale_notebooks(args.sources, args.student_dir, args.solution_dir)
            for path in stale:
                print(f"out of date: {path}", file=sys.stderr)
            if stale:
                print(
                    "rl-mind practical: regenerate with `rl-mind practical "
                    + " ".join(str(p) for p in args.sources)
                    + "`",
                    file=sys.stderr,
                )
                return 1
            print(f"{len(args.sources)} practical(s) up to date")
            return 0
        if args.nbgrader is not None:
            configured = configure_nbgrader_course(args.nbgrader)
            for source in args.sources:
                path = generate_nbgrader_assignment(source, args.nbgrader)
                print(f"{source} -> {path} (nbgrader source assignment)")
            print(configured, file=sys.stderr if configured.startswith("warning") else sys.stdout)
            names = " ".join(sorted({Path(source).stem for source in args.sources}))
            print(
                f"next, in {args.nbgrader}: `nbgrader generate_assignment NAME` for each of "
                f"{names}, and once the submissions are in, "
                f"`RL_MIND_FAST_TEST=1 nbgrader autograde NAME` (the training cells then run "
                f"at the fast-test budgets)"
            )
            return 0
        for source in args.sources:
            student, solution = generate_notebooks(source, args.student_dir, args.solution_dir)
            print(f"{source} -> {student} (student), {solution} (solution)")
    except ValueError as error:
        print(f"rl-mind practical: {error}", file=sys.stderr)
        return 1
    return 0


def _reference(directory: Path, check: bool) -> int:
    """``--reference DIR``: write the reference notebooks, or with ``--check`` compare them."""
    if not check:
        for path in write_reference_notebooks(directory):
            print(f"reference practical -> {path}")
        return 0
    stale = stale_reference_notebooks(directory)
    for path in stale:
        print(f"out of date: {path}", file=sys.stderr)
    if stale:
        print(f"rl-mind practical: regenerate with `rl-mind practical --reference {directory}`",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"{len(REFERENCE_PRACTICALS)} reference practical(s) up to date")
    return 0
