"""``rl-mind practical`` (also ``python -m rl_mind.practicals``): the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rl_mind.practicals.notebooks import (
    configure_nbgrader_course,
    generate_nbgrader_assignment,
    generate_notebooks,
    stale_notebooks,
)
from rl_mind.practicals.reference import (
    REFERENCE_PRACTICALS,
    stale_reference_notebooks,
    write_reference_notebooks,
)

__all__ = ["main"]


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
