"""A practical's source: its solution regions, read by one parser, and the one parse of
a practical that every notebook is rendered from.

A source is a Python file in jupytext's percent format whose code cells mark the reference
solution with ``### BEGIN SOLUTION [what to write]`` and ``### END SOLUTION`` lines.
:func:`solution_regions` is the one reader of those markers: the student stubs
(:func:`student_source`) and nbgrader's cells (:mod:`rl_mind.practicals.notebooks`) are
written from the regions it returns. :func:`parse_practical` reads a whole source once:
the normalized notebook with the install line first, the points of each check cell, the
student version of each cell with a gap; the checks a source declares are computed from the
reference solution there, once.

What the reader must not get wrong: the markers are matched per line (on their own lines,
in one code cell, not nested); a line that looks like a marker but is spelt otherwise is an
error, since it would copy the solution into the student notebook.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BEGIN_SOLUTION",
    "END_SOLUTION",
    "INSTALL",
    "Practical",
    "Region",
    "EXTRAS",
    "install_check",
    "install_line",
    "needed_extras",
    "check_calls",
    "check_markers",
    "normalized",
    "parse_practical",
    "prepend_install",
    "read_percent",
    "refuse_install_line",
    "replace_regions",
    "solution_regions",
    "student_source",
]

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"

_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
_KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
#: An install line of the package (the generator writes its own: a source has none).
INSTALL = re.compile(r"pip\s+install\s+[\"']?rl[-_]mind", re.IGNORECASE)


#: The package's extras a practical's code needs, by what its code names: the study's table
#: and intervals (pandas, SciPy), Gymnasium's Box2D and MuJoCo environments.
EXTRAS = {
    "box2d": re.compile(r"\b(LunarLander|BipedalWalker|CarRacing)"),
    "mujoco": re.compile(r"\b(Ant|HalfCheetah|Hopper|Humanoid\w*|InvertedDoublePendulum|"
                         r"InvertedPendulum|Pusher|Reacher|Swimmer|Walker2d)-v\d"),
    "study": re.compile(r"\brl_mind\.study\b"),
}  # fmt: skip


def needed_extras(code: str) -> tuple[str, ...]:
    """The extras of :data:`EXTRAS` that ``code`` needs, in alphabetical order."""
    return tuple(name for name, pattern in sorted(EXTRAS.items()) if pattern.search(code))


def install_line(extras: Sequence[str] = ()) -> str:
    """The line that opens the first code cell of every generated practical, before its
    imports: ``%pip install -q "rl-mind>=<this version>"``, with the ``extras`` the
    practical needs (``"rl-mind[box2d,study]>=..."``: :func:`needed_extras`).

    One line, as in the notebooks of other courses: pip installs rl-mind where it is
    missing (Colab, a fresh machine), upgrades an older release, and does nothing, without
    the network, where a recent enough release is installed (a course's environment, an
    editable checkout). ``%pip`` installs into the kernel's own interpreter. What one line
    does not do (the practicals guide says it): a kernel that had already imported an older
    release keeps it until it is restarted."""
    from rl_mind import __version__

    package = f"rl-mind[{','.join(sorted(extras))}]" if extras else "rl-mind"
    return f'%pip install -q "{package}>={__version__}"'


def install_check() -> str:
    """The code the generator puts at the top of the first code cell of every practical,
    before any other import: :func:`install_line` (a twenty-line check of the installed
    version, before it became that one line)."""
    return install_line()


def _enclosing_function(lines: list[str], marker_index: int) -> str | None:
    """The name of the ``def`` that contains the line ``marker_index`` (None at top level)."""
    indent = len(lines[marker_index]) - len(lines[marker_index].lstrip())
    for line in reversed(lines[:marker_index]):
        match = _DEF.match(line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return None


# a line meant as a marker but spelt otherwise (e.g. "# BEGIN SOLUTION", "### End Solution"):
# left as it is, it would copy the solution into the student notebook
_NEAR_MARKER = re.compile(r"\s*#+\s*(BEGIN|END)[\s_-]*SOLUTION", re.IGNORECASE)


def check_markers(source: str, where: str) -> None:
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


@dataclass(frozen=True)
class Region:
    """One solution region of a cell: the lines of its markers (``begin``, ``end``, indices
    into the cell's lines), their indentation, the marker's text (``description``, may be
    empty) and the function that holds it (``None`` at top level)."""

    begin: int
    end: int
    indent: str
    description: str
    function: str | None

    def what(self) -> str:
        """What the student writes: the marker's text, else the body of the function."""
        return self.description or (
            f"the body of {self.function}()" if self.function else "the marked code"
        )

    def stub(self) -> list[str]:
        """The two lines that replace the region in the student's cell."""
        what = self.what()
        # (short, so that the line fits the cell: what to write is in the comment above it)
        prefix = f"{self.function}(): " if self.function else ""
        message = f"{prefix}not written yet (YOUR CODE HERE)"
        return [
            f"{self.indent}# YOUR CODE HERE: {what}",
            f"{self.indent}raise NotImplementedError({message!r})",
        ]


def solution_regions(source: str, where: str = "<cell>") -> list[Region]:
    """The solution regions of one cell's code, in order; ``where`` names the cell in the
    ``ValueError`` for a marker that is misspelt, nested, unopened or never closed."""
    check_markers(source, where)
    lines = source.split("\n")
    regions: list[Region] = []
    begin: int | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(BEGIN_SOLUTION):
            if begin is not None:
                raise ValueError(
                    f"{where}, line {i + 1}: {BEGIN_SOLUTION!r} inside another solution region; "
                    f"close the first one with {END_SOLUTION!r}"
                )
            begin = i
        elif stripped.startswith(END_SOLUTION):
            if begin is None:
                raise ValueError(
                    f"{where}, line {i + 1}: {END_SOLUTION!r} without a {BEGIN_SOLUTION!r} before it"
                )
            marker = lines[begin]
            indent = marker[: len(marker) - len(marker.lstrip())]
            description = marker.strip()[len(BEGIN_SOLUTION) :].strip(" :-\u2014")
            function = _enclosing_function(lines, begin)
            regions.append(Region(begin, i, indent, description, function))
            begin = None
    if begin is not None:
        raise ValueError(f"{where}: {BEGIN_SOLUTION!r} is never closed by {END_SOLUTION!r}")
    return regions


def replace_regions(lines: list[str], regions: list[Region], replacement: Any) -> list[str]:
    """``lines`` with each region (its markers included) replaced by ``replacement(region)``."""
    out: list[str] = []
    kept = 0
    for region in regions:
        out += lines[kept : region.begin] + replacement(region)
        kept = region.end + 1
    return out + lines[kept:]


def student_source(source: str, *, where: str = "<cell>") -> str:
    """The code of one cell with each solution region replaced by a stub.

    ``where`` names the cell in error messages. The stub is::

        # YOUR CODE HERE: <what to write>
        raise NotImplementedError("<function>(): not written yet (YOUR CODE HERE)")
    """
    regions = solution_regions(source, where)
    student = "\n".join(replace_regions(source.split("\n"), regions, Region.stub))
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


def read_percent(text: str) -> Any:
    """The notebook of a percent-format source (``jupytext``)."""
    try:
        import jupytext
    except ImportError:  # pragma: no cover - jupytext is a test dependency
        raise ImportError(
            "rl-mind practical reads jupytext's percent format: "
            'pip install "rl-mind[teacher]" (or pip install jupytext nbformat)'
        ) from None
    return jupytext.reads(text, fmt="py:percent")


def normalized(notebook: Any, name: str) -> Any:
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


def check_calls(source: str) -> list[str] | None:
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


def refuse_install_line(source: str, where: str, whose: str) -> None:
    """Refuse a code cell (``where``) that holds an install line of its own: the generator
    writes it (:func:`prepend_install`); ``whose`` names the file in the message (the
    ``"source's"``, the ``"module's"``)."""
    if INSTALL.search(source):
        raise ValueError(
            f"{where}: the generator writes the install line itself ({install_line()!r}); "
            f"remove the {whose} own"
        )


def prepend_install(notebook: Any, name: str) -> None:
    """Put the install line first in the first code cell of ``notebook``: :func:`install_line`
    with the extras its code needs (:func:`needed_extras`). A notebook without a code cell is
    a ``ValueError`` naming ``name``."""
    first_code = next((cell for cell in notebook.cells if cell.cell_type == "code"), None)
    if first_code is None:
        raise ValueError(f"{name}: no code cell")
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    first_code.source = f"{install_line(needed_extras(code))}\n\n{first_code.source}"


def _practical(text: str, name: str) -> tuple[Any, dict[int, float], dict[int, list[str]]]:
    """The source as a normalized notebook with the install line first, the points of each
    check cell by cell index (``points`` in the cell's header, else each checked function's:
    a declared check's ``points``, one for the package's checks), and the functions each
    check cell checks (:func:`check_calls`), by cell index.

    A check declared in the source (``check_f = Check("f", ...)``) gets its cases, computed
    from the reference solution, written into its cell after the declaration."""
    from rl_mind.checks.teacher import declaration_ends, declared_checks, load_code

    notebook = normalized(read_percent(text), name)
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
    checks = {
        i: checked
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (checked := check_calls(cell.source)) is not None
    }
    for i, checked in checks.items():
        for function in checked:
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
        if cell.cell_type == "code":
            refuse_install_line(cell.source, f"{name}, cell {i}", "source's")
        if given is not None and i not in checks:
            raise ValueError(
                f"{name}, cell {i}: points={given!r} on a cell that is not a check cell (one "
                f"made of check_<function>(<function>) calls)"
            )
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int | float) or not given > 0
        ):
            raise ValueError(f"{name}, cell {i}: points must be a positive number, got {given!r}")
        if i in checks:
            points[i] = (
                float(given)
                if given is not None
                else sum(
                    declared[f"check_{f}"][0].points if f"check_{f}" in declared else 1.0
                    for f in checks[i]
                )
            )
    prepend_install(notebook, name)
    return notebook, points, checks


@dataclass(frozen=True)
class Practical:
    """One parse of a practical source: ``notebook``, the solution notebook (normalized,
    the install line first, declared checks' cases written in); ``points`` of each check
    cell and ``student`` source of each cell with a gap, by cell index; ``n_gaps``; the
    functions each check cell checks (``checks``, by cell index: :func:`check_calls`)."""

    name: str
    notebook: Any
    points: dict[int, float]
    student: dict[int, str]
    n_gaps: int
    checks: dict[int, list[str]]


def parse_practical(text: str, name: str = "practical") -> Practical:
    """Read a percent-format source once (see :class:`Practical`); a ``ValueError`` naming
    the source and the cell for anything a notebook could not be made from."""
    notebook, points, checks = _practical(text, name)
    student: dict[int, str] = {}
    n_gaps = 0
    for i, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or BEGIN_SOLUTION not in cell.source:
            if cell.cell_type == "code":  # (student_source checks the cells it stubs)
                check_markers(cell.source, f"{name}, cell {i}")
            if END_SOLUTION in cell.source:
                raise ValueError(f"{name}, cell {i}: {END_SOLUTION!r} outside a code cell region")
            continue
        n_gaps += sum(line.strip().startswith(BEGIN_SOLUTION) for line in cell.source.split("\n"))
        student[i] = student_source(cell.source, where=f"{name}, cell {i}")
    if n_gaps == 0:
        raise ValueError(
            f"{name}: no {BEGIN_SOLUTION!r} region found; mark the reference solution in "
            f"the code cells"
        )
    return Practical(name, notebook, points, student, n_gaps, checks)
