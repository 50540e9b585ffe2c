"""The reference practicals: complete notebooks (no gaps) generated from the package
modules that the jobs run, e.g. ``notebooks/selfplay_ppo.ipynb`` from
``rl_mind/selfplay/trainer.py``, the module that ``rl-mind selfplay`` runs.

What the reader must not get wrong: the notebook shows the module's cells as they are,
except that a cell made of one ``if __name__ == "__main__":`` block shows its body (in the
module that code runs only as a script; in the notebook it always runs).
"""

from __future__ import annotations

from pathlib import Path

from rl_mind.practicals.source import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    check_markers,
    normalized,
    prepend_install,
    read_percent,
    refuse_install_line,
)

__all__ = [
    "MAIN_GUARD",
    "REFERENCE_PRACTICALS",
    "reference_notebook",
    "stale_reference_notebooks",
    "write_reference_notebooks",
]

#: The complete reference practicals, each written as the package module that a job runs
#: (percent format): notebook name -> module file.
REFERENCE_PRACTICALS: dict[str, Path] = {
    "selfplay_ppo": Path(__file__).resolve().parents[1] / "selfplay" / "trainer.py",
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
    starts with the install line, as in the other practicals (:func:`prepend_install`: with
    the extras the module's code needs). Solution markers are
    refused (a reference practical has no gaps), and so is an install line of the module's
    own.
    """
    import nbformat

    notebook = normalized(read_percent(text), name)
    for i, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            check_markers(cell.source, f"{name}, cell {i}")
            if BEGIN_SOLUTION in cell.source or END_SOLUTION in cell.source:
                raise ValueError(f"{name}, cell {i}: a reference practical has no solution regions")
            refuse_install_line(cell.source, f"{name}, cell {i}", "module's")
            cell.source = _unguarded(cell.source)
    prepend_install(notebook, name)
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
