"""rl_mind.practicals (``rl-mind practical``) and the practicals themselves.

The generator: solution regions become stubs that raise a ``NotImplementedError`` naming
what to write; the output is reproducible; ``--check`` fails on stale notebooks. The
practicals: the committed notebooks are up to date with their sources, every solution
notebook runs headless at the fast-test profile, and every student notebook runs up to its
first gap and stops there with that gap's ``NotImplementedError``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

import rl_mind
from rl_mind.__main__ import main as rl_mind_main
from rl_mind.practicals import (
    configure_nbgrader_course,
    generate_nbgrader_assignment,
    generate_notebooks,
    install_check,
    install_line,
    main,
    nbgrader_preprocessors,
    needed_extras,
    render_nbgrader,
    render_notebooks,
    stale_notebooks,
    student_source,
)
from tests.student_notebooks import wrong_dqn_student

ROOT = Path(__file__).parent.parent
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
PRACTICALS = ["dp", "tabular", "dqn", "reinforce", "a2c", "ppo", "td3", "sac", "overestimation"]
PLANNING = {"dp", "tabular"}  # the maze: pictures and a video, no Evaluator (no learning curve log)
PROJECTS = {"overestimation"}  # a study: its runs' folders, plots with intervals, no video

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
    with pytest.raises(NotImplementedError, match=r"^f\(\): not written yet \(YOUR CODE HERE\)$"):
        namespace["f"](1)


def test_the_text_after_the_marker_names_what_to_write() -> None:
    code = "def td(x):\n    ### BEGIN SOLUTION the TD target y [N]\n    return x\n    ### END SOLUTION\n"
    namespace: dict[str, Any] = {}
    stub = student_source(code)
    assert "    # YOUR CODE HERE: the TD target y [N]\n" in stub
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match=r"td\(\): not written yet"):
        namespace["td"](1)


def test_a_stub_fits_the_cell_whatever_it_asks_for() -> None:
    # what to write is in the comment; the raise line stays short (it used to run to 150
    # characters, behind a scrollbar)
    what = "the mean squared error between Q(s, a) and the targets, averaged over the batch"
    code = (
        f"def a_rather_long_function_name(x):\n    for _ in x:\n        ### BEGIN SOLUTION {what}"
        "\n        pass\n        ### END SOLUTION\n"
    )
    stub = student_source(code)
    (line,) = [line for line in stub.split("\n") if "raise NotImplementedError(" in line]
    assert len(line) <= 100, line
    assert f"# YOUR CODE HERE: {what}" in stub
    for name in PRACTICALS:  # and in every student notebook
        notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        raises = [
            line
            for cell in notebook.cells
            for line in cell.source.split("\n")
            if "raise NotImplementedError(" in line
        ]
        assert raises and all(len(line) <= 100 for line in raises), (name, raises)


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
    assert student.cells[1].source.startswith(install_check() + "\n\nimport math")
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


def test_the_install_line_names_the_extras_the_practical_s_code_needs() -> None:
    # (a student's fresh environment has no pandas, SciPy or Box2D for the project practical)
    assert install_line(("study", "box2d")) == (
        f'%pip install -q "rl-mind[box2d,study]>={rl_mind.__version__}"'
    )
    assert needed_extras("from rl_mind.study import Study\nVecEnv('LunarLanderContinuous-v3')") == (
        "box2d",
        "study",
    )
    assert needed_extras("VecEnv('HalfCheetah-v5')") == ("mujoco",)
    assert needed_extras("VecEnv('CartPole-v1')  # a study of ...") == ()
    first_lines = {}
    for name in ("overestimation", "td3"):
        notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        first = next(c for c in notebook.cells if c.cell_type == "code")
        first_lines[name] = first.source.split("\n")[0]
    assert first_lines == {
        "overestimation": install_line(("box2d", "study")),
        "td3": install_line(),
    }


def test_the_install_line_asks_for_a_release_with_what_the_notebook_uses() -> None:
    # one line, as the notebooks of other courses open (it was a twenty-line check)
    assert install_line() == f'%pip install -q "rl-mind>={rl_mind.__version__}"'
    assert install_check() == install_line()
    assert f'"rl-mind>={rl_mind.__version__}"' in install_check()
    notebooks = render_notebooks(SOURCE, name="demo")
    for text in (notebooks.student, notebooks.solution):
        first_code = next(c for c in nbformat.reads(text, 4).cells if c.cell_type == "code")
        assert first_code.source.split("\n")[0] == install_line()
    # (a source's own line would say another thing than the generator's)
    own = SOURCE.replace("import math", "# %pip install rl-mind\nimport math")
    with pytest.raises(ValueError, match="demo, cell 1: the generator writes the install line"):
        render_notebooks(own, name="demo")


SOURCE_WITH_POINTS = (
    SOURCE
    + """

# %% points=3
check_area(area)
check_double(double)

# %%
check_double(double)
"""
)


def _nbgrader_cells(text: str) -> list[tuple[str, dict[str, Any]]]:
    notebook = nbformat.reads(text, as_version=4)
    return [(cell.source, dict(cell.metadata["nbgrader"])) for cell in notebook.cells]


def test_the_nbgrader_source_assignment_marks_solutions_tests_and_locked_cells() -> None:
    cells = _nbgrader_cells(render_nbgrader(SOURCE_WITH_POINTS, name="demo"))
    for _source, meta in cells:
        assert meta["schema_version"] == 3 and meta["task"] is False
    kinds = [(m["solution"], m["grade"], m["locked"], m.get("points")) for _, m in cells]
    assert kinds == [
        (False, False, True, None),  # the markdown
        (True, False, False, None),  # area()
        (True, False, False, None),  # double()
        (False, False, True, None),  # area(1.0)
        (False, True, True, 3.0),  # two checks, 3 points set in the source
        (False, True, True, 1.0),  # one check: one point by default
    ]
    assert [m["grade_id"] for _, m in cells] == [
        "demo-000", "area", "double", "demo-003", "check_area-double", "check_double"
    ]  # fmt: skip
    # the solution stays between nbgrader's markers; what to write moves to a comment that
    # nbgrader's stub keeps
    area = cells[1][0]
    assert (
        "    # To write: the area of the disc\n    ### BEGIN SOLUTION\n    return math.pi" in area
    )
    assert "    # To write: the body of double()\n    ### BEGIN SOLUTION\n" in cells[2][0]
    assert cells[1][0].startswith(install_line())


def test_points_only_on_check_cells_and_positive() -> None:
    on_code = SOURCE.replace("# %%\narea(1.0)", "# %% points=2\narea(1.0)")
    with pytest.raises(ValueError, match=r"demo, cell 3: points=2 on a cell that is not a check"):
        render_nbgrader(on_code, name="demo")
    for bad in ("0", "-1", '"two"', "true"):
        text = SOURCE + f"\n\n# %% points={bad}\ncheck_area(area)\n"
        with pytest.raises(ValueError, match="points must be a positive number"):
            render_notebooks(text, name="demo")
    # the student and solution notebooks carry no grading metadata
    notebooks = render_notebooks(SOURCE_WITH_POINTS, name="demo")
    for text in (notebooks.student, notebooks.solution):
        assert all(not c.metadata for c in nbformat.reads(text, 4).cells)


def test_the_command_writes_an_nbgrader_source_assignment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src" / "demo.py"
    source.parent.mkdir()
    source.write_text(SOURCE_WITH_POINTS)
    course = tmp_path / "course"
    assert main([str(source), "--nbgrader", str(course)]) == 0
    path = course / "source" / "demo" / "demo.ipynb"
    assert path.read_text() == render_nbgrader(SOURCE_WITH_POINTS, name="demo")
    assert "nbgrader generate_assignment" in capsys.readouterr().out
    assert not (tmp_path / "demo.ipynb").exists()  # only the assignment
    assert generate_nbgrader_assignment(source, course) == path
    with pytest.raises(SystemExit):  # one mode at a time
        main([str(source), "--nbgrader", str(course), "--check"])


def test_the_command_writes_the_course_s_nbgrader_config_with_the_stubs_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "demo.py"
    source.write_text(SOURCE_WITH_POINTS)
    course = tmp_path / "course"
    assert main([str(source), "--nbgrader", str(course)]) == 0
    assert "wrote " in capsys.readouterr().out
    config = (course / "nbgrader_config.py").read_text()
    # the file the grading guide shows, line for line, after its two comment lines
    guide = (ROOT / "docs" / "guide" / "grading.md").read_text()
    shown = guide.split("step 1 writes it:\n\n```python {.no-run}\n", 1)[1].split("```", 1)[0]
    assert config.split("\n", 2)[2] == shown
    # nbgrader's loader runs it: c given, get_config() the same object
    namespace: dict[str, Any] = {}
    from traitlets.config import Config

    settings = Config()
    namespace.update(c=settings, get_config=lambda: settings)
    exec(compile(config, "nbgrader_config.py", "exec"), namespace)
    assert settings.CourseDirectory.course_id == "course"
    written = [step.__name__ for step in settings.GenerateAssignment.preprocessors]
    assert written == [step.__name__ for step in nbgrader_preprocessors()]
    assert "ClearSolutionsWithMessages" in written
    # never overwritten
    (course / "nbgrader_config.py").write_text(config + "c.Execute.timeout = 60\n")
    assert "already uses" in configure_nbgrader_course(course)
    assert (course / "nbgrader_config.py").read_text().endswith("c.Execute.timeout = 60\n")


def test_a_teacher_s_nbgrader_config_gets_the_setting_once_and_its_own_list_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "demo.py"
    source.write_text(SOURCE_WITH_POINTS)
    config = tmp_path / "nbgrader_config.py"
    own = 'c = get_config()\nc.CourseDirectory.course_id = "rl"\n# c.GenerateAssignment.preprocessors = []'
    config.write_text(own)
    assert "added `c.GenerateAssignment.preprocessors" in configure_nbgrader_course(tmp_path)
    added = config.read_text()
    assert added.startswith(own + "\n") and added.endswith(
        "from rl_mind.practicals import nbgrader_preprocessors\n\n"
        "c.GenerateAssignment.preprocessors = nbgrader_preprocessors()\n"
    )
    assert main([str(source), "--nbgrader", str(tmp_path)]) == 0
    assert config.read_text() == added
    # a list of the teacher's own: untouched, and the command says what to write
    theirs = "c.GenerateAssignment.preprocessors = [MyClearSolutions]\n"
    config.write_text(theirs)
    assert main([str(source), "--nbgrader", str(tmp_path)]) == 0
    assert config.read_text() == theirs
    err = capsys.readouterr().err
    assert "sets its own c.GenerateAssignment.preprocessors" in err
    assert "c.GenerateAssignment.preprocessors = nbgrader_preprocessors()" in err
    config.unlink()
    config.mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        configure_nbgrader_course(tmp_path)


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
    path: Path | Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Exception | None]:
    """Run a notebook (a path, or a notebook object) as Jupyter would, at the fast-test
    profile; the executed notebook and the error that stopped it, if any."""
    from nbclient import NotebookClient

    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # Jupyter's
    notebook = nbformat.read(path, as_version=4) if isinstance(path, Path) else path
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
    # only what a student should read: no echo of a returned value, no warning
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "execute_result"], "a value is echoed"
    assert not [o for o in outputs if o.get("name") == "stderr"], "something went to stderr"
    for noise in ("True", "PosixPath", "<Axes", "cases pass"):
        assert noise not in text, noise
    for cell in notebook.cells:
        if cell.source.startswith("check_"):
            (printed,) = [o.text for o in cell.outputs]
            assert re.fullmatch(r"✓ \w+ passes (all \d+ cases|its case)\n", printed), printed
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    if name in PROJECTS:  # curves of the return and the bias, final performance, improvement
        assert images == 4, images
        runs = list(tmp_path.glob("*/*/evaluations.csv"))
        assert len(runs) == 8, runs  # 2 algorithms x 2 critics x 2 seeds at the fast-test profile
        assert all("critic_bias" in run.read_text().splitlines()[0] for run in runs)
        assert re.search(r"RESULT practical=overestimation .*runs=8 done=8 ", text), text
        return
    assert list(tmp_path.glob("*/*.mp4")), "no video of the agent"
    if name in PLANNING:  # the maze, values and policies, value iteration sweep by sweep...
        assert images >= 3, images
        return
    assert images == 1  # the learning curve
    assert list(tmp_path.glob("*/best_actor.pt")), "the evaluator saved no best actor"
    assert list(tmp_path.glob("*/*.mp4")), "no video of the best actor"
    assert list(tmp_path.glob("*/events.out.tfevents.*")), "no TensorBoard log"


@pytest.mark.slow
def test_the_a2c_solution_solves_with_a_dense_learning_curve(tmp_path: Path) -> None:
    # the cheapest practical at its full profile: it reaches the target, and its learning
    # curve has at least 10 evaluations before the one that reached it
    env = {**os.environ, "RL_MIND_SEED": "0", "RL_MIND_OUTPUTS": str(tmp_path)}
    env.pop("RL_MIND_FAST_TEST", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "notebooks" / "src" / "a2c.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    match = re.search(r"best_return=(\S+) .* evaluations=(\d+)", done.stdout)
    assert match is not None, done.stdout[-2000:]
    assert float(match[1]) >= 475.0 and int(match[2]) - 1 >= 10, match[0]


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
    # the student reads one line that says what to do, not the check's frames
    (shown,) = error_output.traceback
    assert "✗ " in shown and "is not written yet" in shown and "YOUR CODE HERE" in shown, shown
    # it stops right after the gap, in the check cell, and not earlier
    assert failed[0] == first_gap + 1
    assert cells[failed[0]].source.startswith("check_")
    ran = [
        i for i, c in enumerate(cells) if c.cell_type == "code" and c.execution_count is not None
    ]
    assert max(ran) == failed[0]
    assert all(i in ran for i, c in enumerate(cells[: failed[0]]) if c.cell_type == "code")


@pytest.mark.slow
def test_run_all_stops_at_the_first_wrong_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a student's DQN notebook: the TD target right, the loss with the [N, 1] broadcast bug
    notebook, error = _execute(wrong_dqn_student(), tmp_path, monkeypatch)
    assert error is not None, "Run All went on past the wrong function"
    cells = notebook.cells
    failed = [
        i
        for i, c in enumerate(cells)
        if any(o.output_type == "error" for o in c.get("outputs", []))
    ]
    assert [cells[i].source for i in failed] == ["check_dqn_loss(dqn_loss)"]
    (output,) = [o for o in cells[failed[0]].outputs if o.output_type == "error"]
    assert output.ename == "CheckFailure"
    assert output.evalue.startswith("dqn_loss: case 1/2 (the greedy actions were taken) fails")
    assert "[N, 1] and td_target is [N]" in output.evalue
    # the student sees the message, not the check's own traceback
    assert output.traceback == [f"\x1b[0;31m✗ {output.evalue}\x1b[0m"]
    ran = [i for i, c in enumerate(cells) if c.cell_type == "code" and c.execution_count]
    assert max(ran) == failed[0], "cells after the failed check ran"
    assert not list(tmp_path.glob("dqn-*")), "the training started"


def test_the_install_line_is_a_pip_install_into_the_kernels_interpreter() -> None:
    import inspect

    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.core.magics.packaging import PackagingMagics

    python = TransformerManager().transform_cell(install_line() + "\n\nimport math\n")
    assert python == (
        f"get_ipython().run_line_magic('pip', 'install -q \"rl-mind>={rl_mind.__version__}\"')"
        "\n\nimport math\n"
    )
    # (IPython's %pip runs `sys.executable -m pip`: the kernel's interpreter, whichever
    # environment Jupyter itself was started from)
    assert "sys.executable" in inspect.getsource(PackagingMagics.pip)


def test_where_a_recent_release_is_installed_the_install_line_needs_no_network() -> None:
    import importlib.metadata

    try:
        installed = importlib.metadata.version("rl-mind")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("rl-mind is not installed here (only on the path): nothing to satisfy")
    if installed != rl_mind.__version__:
        pytest.skip(f"the installed rl-mind is {installed}, this checkout {rl_mind.__version__}")
    arguments = install_line().removeprefix("%pip ").replace('"', "").split()
    done = subprocess.run(
        [sys.executable, "-m", "pip", *arguments, "--no-index", "--no-deps", "--dry-run"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Would install" not in done.stdout, done.stdout
