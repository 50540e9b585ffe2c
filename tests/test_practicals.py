"""rl_mind.practicals (``rl-mind practical``) and the practicals themselves.

The generator: solution regions become stubs that raise a ``NotImplementedError`` naming
what to write; the output is reproducible; ``--check`` fails on stale notebooks. The
practicals: the committed notebooks are up to date with their sources, every solution
notebook runs headless at the fast-test profile, and every student notebook runs up to its
first gap and stops there with that gap's ``NotImplementedError``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from rl_mind.__main__ import main as rl_mind_main
from rl_mind.practicals import (
    generate_notebooks,
    main,
    render_notebooks,
    stale_notebooks,
    student_source,
)

ROOT = Path(__file__).parent.parent
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
PRACTICALS = ["dqn", "reinforce", "a2c", "ppo", "td3", "sac"]

SOURCE = '''# %% [markdown]
# # A practical
# Some $x$ to explain.

# %%
import math


def area(radius):
    """The area of a disc."""
    ### BEGIN SOLUTION the area of the disc
    return math.pi * radius**2
    ### END SOLUTION


# %%
def double(x):
    ### BEGIN SOLUTION
    y = 2 * x
    return y
    ### END SOLUTION


# %%
area(1.0)
'''


# ----------------------------------------------------------------------------- the generator
def test_a_solution_region_becomes_a_stub_at_the_same_indentation() -> None:
    code = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n"
    stub = student_source(code)
    assert "return x + y" not in stub and "SOLUTION" not in stub
    assert (
        "    y = 1\n    # YOUR CODE HERE: the body of f()\n    raise NotImplementedError(" in stub
    )
    namespace: dict[str, Any] = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match=r"^f\(\): write the body of f\(\), then run"):
        namespace["f"](1)


def test_the_text_after_the_marker_names_what_to_write() -> None:
    code = "def td(x):\n    ### BEGIN SOLUTION the TD target y [N]\n    return x\n    ### END SOLUTION\n"
    namespace: dict[str, Any] = {}
    exec(student_source(code), namespace)
    with pytest.raises(NotImplementedError, match=r"td\(\): write the TD target y \[N\]"):
        namespace["td"](1)


def test_a_top_level_region_is_stubbed_too() -> None:
    stub = student_source("x = 1\n### BEGIN SOLUTION\ny = x + 1\n### END SOLUTION\n")
    assert stub.startswith("x = 1\n# YOUR CODE HERE: the marked code\nraise NotImplementedError(")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("### BEGIN SOLUTION\nx = 1\n", "never closed"),
        ("x = 1\n### END SOLUTION\n", "without a"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another"),
    ],
)
def test_badly_nested_markers_are_an_error_naming_the_cell(code: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        student_source(code, where="dqn, cell 3")
    assert "dqn, cell 3" in str(info.value)


@pytest.mark.parametrize(
    "marker", ["# BEGIN SOLUTION", "### begin solution", "## BEGIN_SOLUTION", "### End Solution"]
)
def test_a_misspelt_marker_is_refused_rather_than_leaking_the_solution(marker: str) -> None:
    # (left as it is, the region it opens would be copied into the student notebook)
    code = f"def f():\n    {marker}\n    return 42\n"
    with pytest.raises(ValueError, match=r"dqn, cell 3, line 2: .*looks like a solution marker"):
        student_source(code, where="dqn, cell 3")
    # also in a cell without any correct marker, next to a correct region elsewhere
    text = SOURCE + f"\n# %%\n{marker}\nanswer = 42\n"
    with pytest.raises(ValueError, match=r"demo, cell \d+, line 1: .*write '### (BEGIN|END) "):
        render_notebooks(text, name="demo")


@pytest.mark.parametrize(
    "code",
    [
        # a marker at column 0 inside a function body: the stub lands outside the def
        "def f(x):\n### BEGIN SOLUTION\n    return x\n### END SOLUTION\n",
        # a region inside a call's brackets: the stub is a statement among arguments
        "y = max(\n    ### BEGIN SOLUTION\n    1, 2\n    ### END SOLUTION\n)\n",
    ],
)
def test_a_region_whose_stub_would_not_compile_is_refused(code: str) -> None:
    # (the student notebook used to be written, with exit status 0, and fail when run)
    compile(code, "<source>", "exec")  # the source itself is valid
    with pytest.raises(ValueError, match=r"dqn, cell 2: the student version .* does not compile"):
        student_source(code, where="dqn, cell 2")


def test_a_cell_of_notebook_magics_is_stubbed_without_a_compile_check() -> None:
    code = "%matplotlib inline\nx = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION\n"
    assert "raise NotImplementedError" in student_source(code)


def test_a_source_without_any_solution_region_is_refused() -> None:
    with pytest.raises(ValueError, match="no '### BEGIN SOLUTION' region"):
        render_notebooks("# %%\nx = 1\n", name="empty")


def test_the_two_notebooks_are_valid_and_differ_only_in_the_gaps() -> None:
    notebooks = render_notebooks(SOURCE, name="demo")
    assert notebooks.n_gaps == 2
    student = nbformat.reads(notebooks.student, as_version=4)
    solution = nbformat.reads(notebooks.solution, as_version=4)
    nbformat.validate(student)
    nbformat.validate(solution)
    assert [c.cell_type for c in student.cells] == ["markdown", "code", "code", "code"]
    assert (
        student.cells[0].source == solution.cells[0].source == "# A practical\nSome $x$ to explain."
    )
    assert "math.pi * radius**2" in solution.cells[1].source
    assert "math.pi" not in student.cells[1].source.split("def area")[1]
    assert "the area of the disc" in student.cells[1].source
    assert student.cells[3].source == solution.cells[3].source == "area(1.0)"
    assert student.metadata.kernelspec.name == "python3"


def test_generation_is_reproducible() -> None:
    assert render_notebooks(SOURCE, name="demo") == render_notebooks(SOURCE, name="demo")
    data = json.loads(render_notebooks(SOURCE, name="demo").student)
    assert [cell["id"] for cell in data["cells"]] == [f"demo-{i:03d}" for i in range(4)]
    assert "jupytext" not in data["metadata"]


def test_the_command_writes_both_notebooks_and_check_mode_detects_stale_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src" / "demo.py"
    source.parent.mkdir()
    source.write_text(SOURCE)
    assert rl_mind_main(["practical", str(source)]) == 0
    student, solution = tmp_path / "demo.ipynb", tmp_path / "solutions" / "demo.ipynb"
    assert student.is_file() and solution.is_file()
    assert main(["--check", str(source)]) == 0
    assert stale_notebooks([source]) == []

    source.write_text(SOURCE.replace("2 * x", "3 * x"))
    assert main(["--check", str(source)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert stale_notebooks([source]) == [solution]

    student.unlink()
    assert student in stale_notebooks([source])


def test_the_output_folders_can_be_chosen(tmp_path: Path) -> None:
    source = tmp_path / "demo.py"
    source.write_text(SOURCE)
    student, solution = generate_notebooks(source, tmp_path / "out", tmp_path / "keys")
    assert student == tmp_path / "out" / "demo.ipynb"
    assert solution == tmp_path / "keys" / "demo.ipynb"
    assert main(["--check", str(source), "--student-dir", str(tmp_path / "out"),
                 "--solution-dir", str(tmp_path / "keys")]) == 0  # fmt: skip


def test_one_folder_for_both_notebooks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (the solution notebook would overwrite the student one)
    source = tmp_path / "demo.py"
    source.write_text(SOURCE)
    out = str(tmp_path / "out")
    assert main([str(source), "--student-dir", out, "--solution-dir", out]) == 1
    assert "would both be" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_command_reports_a_missing_source_and_a_bad_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nope.py")]) == 2
    assert "no such source file" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("# %%\n### BEGIN SOLUTION\nx = 1\n")
    assert main([str(bad)]) == 1
    assert "never closed" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the practicals
def test_every_practical_has_a_source_and_both_notebooks() -> None:
    assert sorted(source.stem for source in SOURCES) == sorted(PRACTICALS)


def test_the_generated_notebooks_are_up_to_date_with_their_sources() -> None:
    stale = stale_notebooks(SOURCES)
    assert stale == [], f"regenerate with `rl-mind practical notebooks/src/*.py`: {stale}"


def test_each_gap_is_followed_by_a_visible_check_cell() -> None:
    for source in SOURCES:
        notebook = nbformat.reads(
            render_notebooks(source.read_text(), name=source.stem).solution, 4
        )
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        for i, cell in enumerate(code):
            for function in re.findall(
                r"^def (\w+)\(.*?### BEGIN SOLUTION", cell.source, re.S | re.M
            ):
                assert code[i + 1].source.strip() == f"check_{function}({function})", source.stem


def _execute(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Exception | None]:
    from nbclient import NotebookClient

    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    try:
        client.execute()
    except Exception as error:  # CellExecutionError: inspected by the tests
        return notebook, error
    return notebook, None


@pytest.mark.slow
@pytest.mark.parametrize("name", PRACTICALS)
def test_the_solution_notebook_runs_at_the_fast_test_profile(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook, error = _execute(
        ROOT / "notebooks" / "solutions" / f"{name}.ipynb", tmp_path, monkeypatch
    )
    assert error is None, error
    text = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    n_checks = sum(cell.source.startswith("check_") for cell in notebook.cells)
    assert n_checks >= 2 and text.count("✓") == n_checks and "✗" not in text, text
    assert f"RESULT practical={name} " in text
    assert list(tmp_path.glob("*/best_actor.pt")), "the evaluator saved no best actor"
    assert list(tmp_path.glob("*/*.mp4")), "no video of the best actor"
    assert list(tmp_path.glob("*/events.out.tfevents.*")), "no TensorBoard log"


@pytest.mark.slow
@pytest.mark.parametrize("name", PRACTICALS)
def test_the_student_notebook_stops_at_its_first_gap(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ROOT / "notebooks" / f"{name}.ipynb"
    notebook, error = _execute(path, tmp_path, monkeypatch)
    assert error is not None, "the student notebook ran to the end"
    cells = notebook.cells
    first_gap = next(i for i, c in enumerate(cells) if "raise NotImplementedError(" in c.source)
    expected = re.search(r"raise NotImplementedError\('(.*)'\)", cells[first_gap].source)
    assert expected is not None
    failed = [
        i
        for i, c in enumerate(cells)
        if any(o.output_type == "error" for o in c.get("outputs", []))
    ]
    assert len(failed) == 1
    (error_output,) = [o for o in cells[failed[0]].outputs if o.output_type == "error"]
    assert error_output.ename == "NotImplementedError", error_output
    assert error_output.evalue == expected.group(1)
    # it stops right after the gap, in the check cell, and not earlier
    assert failed[0] == first_gap + 1
    assert cells[failed[0]].source.startswith("check_")
    ran = [
        i for i, c in enumerate(cells) if c.cell_type == "code" and c.execution_count is not None
    ]
    assert max(ran) == failed[0]
    assert all(i in ran for i, c in enumerate(cells[: failed[0]]) if c.cell_type == "code")
