"""Grading a practical with nbgrader, the real package, as a teacher would.

A throwaway course in a temporary folder: ``rl-mind practical --nbgrader`` writes a
practical as a source assignment, ``nbgrader generate_assignment`` makes the students'
version, two students hand it in (one with the reference solutions, one with a typical
mistake in one function), and ``nbgrader autograde`` grades them: full points for the
first, that function's point lost for the second. DQN, and the maze practicals (dynamic
programming, Q-learning and SARSA).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from rl_mind.practicals import main, render_notebooks

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "notebooks" / "src"


def nbgrader(course: Path, *args: str) -> None:
    """Run ``nbgrader ARGS`` in the course folder (the training cells at the fast-test
    budgets, as the teacher's guide says)."""
    env = {**os.environ, "RL_MIND_FAST_TEST": "1", "RL_MIND_OUTPUTS": str(course / "outputs")}
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def submit(course: Path, student: str, solutions: dict[str, str], name: str = "dqn") -> None:
    """Hand in the released notebook with the solution cells filled with ``solutions``."""
    notebook = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solutions:
            cell.source = solutions[grade_id]
    folder = course / "submitted" / student / name
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{name}.ipynb")


def new_course(tmp_path: Path, name: str) -> Path:
    """A course folder holding the practical ``name`` as a generated assignment, made with
    the guide's commands and nothing else (the command writes nbgrader_config.py)."""
    course = tmp_path / "course"
    assert main([str(SOURCES / f"{name}.py"), "--nbgrader", str(course)]) == 0
    nbgrader(course, "generate_assignment", name)
    return course


def stubs(notebook: nbformat.NotebookNode) -> list[str]:
    """The stub lines of a notebook: its ``NotImplementedError`` and ``YOUR CODE HERE`` lines."""
    return [
        line.strip()
        for cell in notebook.cells
        for line in cell.source.split("\n")
        if "NotImplementedError" in line or "YOUR CODE HERE" in line
    ]


def student_notebook(name: str) -> nbformat.NotebookNode:
    text = (SOURCES / f"{name}.py").read_text()
    return nbformat.reads(render_notebooks(text, name=name).student, 4)


def test_the_guide_grades_with_these_commands_and_writes_no_configuration_by_hand() -> None:
    guide = (ROOT / "docs" / "guide" / "grading.md").read_text()
    block = guide.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [
        line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")
    ]
    assert commands[:4] == [  # what new_course and the tests below run, in this order
        "rl-mind practical notebooks/src/dqn.py --nbgrader course",
        "cd course",
        "nbgrader generate_assignment dqn",
        "RL_MIND_FAST_TEST=1 nbgrader autograde dqn",
    ]
    assert "nbgrader_config.py" not in "\n".join(commands)


def test_a_teachers_own_configuration_gets_the_stubs_setting_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    # a course that has its settings already (as `nbgrader quickstart` writes them)
    course = tmp_path / "course"
    course.mkdir()
    own = 'c = get_config()\nc.CourseDirectory.course_id = "rl-2026"\n# c.Execute.timeout = 30'
    (course / "nbgrader_config.py").write_text(own)
    assert main([str(SOURCES / "dqn.py"), "--nbgrader", str(course)]) == 0
    config = (course / "nbgrader_config.py").read_text()
    assert config.startswith(own + "\n")
    nbgrader(course, "generate_assignment", "dqn")
    release = nbformat.read(course / "release" / "dqn" / "dqn.ipynb", as_version=4)
    assert stubs(release) == stubs(student_notebook("dqn"))
    assert "raise NotImplementedError()" not in stubs(release)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert [a.name for a in gradebook.assignments] == ["dqn"]
    assert main([str(SOURCES / "dqn.py"), "--nbgrader", str(course)]) == 0
    assert (course / "nbgrader_config.py").read_text() == config  # (added once)


@pytest.mark.slow
def test_nbgrader_gives_the_reference_full_points_and_a_wrong_loss_one_point_less(
    tmp_path: Path,
) -> None:
    course = new_course(tmp_path, "dqn")

    # the students' version has stubs where the solutions were
    source = nbformat.read(course / "source" / "dqn" / "dqn.ipynb", as_version=4)
    solutions = {
        cell.metadata.nbgrader.grade_id: cell.source
        for cell in source.cells
        if cell.metadata.nbgrader.solution
    }
    assert sorted(solutions) == ["dqn_loss", "dqn_td_target"]
    released = (course / "release" / "dqn" / "dqn.ipynb").read_text()
    assert "F.mse_loss(q_taken, td_target)" not in released
    assert "raise NotImplementedError()" not in released
    # the stubs say what to write, as the student notebook's do, line for line
    release = nbformat.read(course / "release" / "dqn" / "dqn.ipynb", as_version=4)
    student = student_notebook("dqn")
    assert stubs(release) == stubs(student) and len(stubs(student)) == 4
    assert any(
        line.startswith("# YOUR CODE HERE: ")
        and "the mean squared error between Q(s, a) and the targets" in line
        for line in stubs(release)
    )
    assert any(
        line.startswith("raise NotImplementedError(") and "dqn_loss(): not written yet" in line
        for line in stubs(release)
    )

    submit(course, "reference", solutions)
    broadcast = solutions["dqn_loss"].replace(".unsqueeze(1)).squeeze(1)", ".unsqueeze(1))")
    assert broadcast != solutions["dqn_loss"]
    submit(course, "mistake", {**solutions, "dqn_loss": broadcast})
    nbgrader(course, "autograde", "dqn")

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        reference = gradebook.find_submission("dqn", "reference")
        mistake = gradebook.find_submission("dqn", "mistake")
        assert reference.max_score == mistake.max_score == 2.0  # one point per gap
        assert reference.score == 2.0
        assert mistake.score == 1.0
        lost = gradebook.find_grade("check_dqn_loss", "dqn", "dqn", "mistake")
        kept = gradebook.find_grade("check_dqn_td_target", "dqn", "dqn", "mistake")
        assert (lost.score, kept.score) == (0.0, 1.0)
    graded = nbformat.read(course / "autograded" / "mistake" / "dqn" / "dqn.ipynb", as_version=4)
    errors = [
        o for cell in graded.cells for o in cell.get("outputs", []) if o.output_type == "error"
    ]
    assert [o.ename for o in errors] == ["CheckFailure"]
    assert "gather gives [N, 1] and td_target is [N]" in errors[0].evalue


# (practical, its gaps, the function a student gets wrong, the mistake, what the check says)
MAZE_MISTAKES = [
    (
        "dp",
        ["greedy_policy", "policy_evaluation", "q_from_v", "value_iteration"],
        "value_iteration",
        (".max(dim=1).values", ".mean(dim=1)"),
        "not an average over actions",
    ),
    (
        "tabular",
        ["epsilon_greedy", "q_learning_target", "sarsa_target", "td_update"],
        "sarsa_target",
        ("q[step.next_obs, next_action]", "q[step.next_obs].max(dim=1).values"),
        "not from the best action",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "gaps", "wrong", "mistake", "phrase"), MAZE_MISTAKES)
def test_nbgrader_grades_the_maze_practicals(
    name: str,
    gaps: list[str],
    wrong: str,
    mistake: tuple[str, str],
    phrase: str,
    tmp_path: Path,
) -> None:
    course = new_course(tmp_path, name)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
    solutions = {
        cell.metadata.nbgrader.grade_id: cell.source
        for cell in source.cells
        if cell.metadata.nbgrader.solution
    }
    assert sorted(solutions) == gaps
    released = (course / "release" / name / f"{name}.ipynb").read_text()
    assert (
        "raise NotImplementedError(" in released and "raise NotImplementedError()" not in released
    )
    submit(course, "reference", solutions, name)
    mistaken = solutions[wrong].replace(*mistake)
    assert mistaken != solutions[wrong]
    submit(course, "mistake", {**solutions, wrong: mistaken}, name)
    nbgrader(course, "autograde", name)

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        reference = gradebook.find_submission(name, "reference")
        mistake_ = gradebook.find_submission(name, "mistake")
        assert reference.max_score == mistake_.max_score == float(len(gaps))
        assert reference.score == len(gaps) and mistake_.score == len(gaps) - 1
        assert gradebook.find_grade(f"check_{wrong}", name, name, "mistake").score == 0.0
    graded = nbformat.read(course / "autograded" / "mistake" / name / f"{name}.ipynb", 4)
    errors = [
        o for cell in graded.cells for o in cell.get("outputs", []) if o.output_type == "error"
    ]
    assert [o.ename for o in errors] == ["CheckFailure"]
    assert phrase in errors[0].evalue


def test_the_released_stubs_are_the_student_notebooks_for_every_practical() -> None:
    from nbgrader.preprocessors import ClearSolutions

    from rl_mind.practicals import nbgrader_preprocessors, render_nbgrader, render_notebooks
    from rl_mind.practicals.source import parse_practical

    (clear,) = [step for step in nbgrader_preprocessors() if issubclass(step, ClearSolutions)]
    assert clear is not ClearSolutions
    for source in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        practical = parse_practical(source.read_text(), name=source.stem)  # (rendered twice)
        assignment = nbformat.reads(render_nbgrader(practical), 4)
        student = nbformat.reads(render_notebooks(practical).student, 4)
        released, _ = clear().preprocess(assignment, {})
        solution_cells = [
            i for i, cell in enumerate(released.cells) if cell.metadata.nbgrader.solution
        ]
        assert solution_cells, source.stem
        for i in solution_cells:
            assert released.cells[i].source == student.cells[i].source, (source.stem, i)
