"""``rl-mind arena SUBMISSIONS_DIR --out DIR``: rate every submission of a class.

:func:`collect_submissions` reads every file under the submissions folder (sub-folders
too, hidden files skipped) and keeps the valid agents; :func:`run_arena` plays them in a
round robin with the three bots as fixed anchors (and the reference run's best agent
with ``reference``), fits Bradley–Terry ratings (random at 0, 95% intervals from the fit),
grades them with the teacher's rubric and writes::

    leaderboard.html   the page to show: table, rating plot, cross-play heatmap, the final
    leaderboard.csv    every player: rating, interval, record, win rates against the anchors
    gradebook.csv      one row per author: rank among the submissions, rating, points, grade
    rejected.csv       every file that was not rated, and why (one line each)
    final.mp4          the top two of the leaderboard playing one match

What the reader must not get wrong: one bad file never stops the arena (it lands in
``rejected.csv``, the others are rated); the same files, matches and seed give
byte-identical CSV files.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rl_mind._validation import available_cores
from rl_mind.arena.report import write_outputs
from rl_mind.arena.results import ArenaResult, Player, Rejection
from rl_mind.arena.rubric import DEFAULT_RUBRIC, Rubric
from rl_mind.arena.submission import (
    REFERENCE_NAME,
    SubmissionError,
    load_reference,
    load_submission,
    read_description_file,
    weights_path,
)
from rl_mind.arena.tournament import play_round_robin
from rl_mind.selfplay.ratings import bradley_terry

__all__ = ["BOTS", "collect_submissions", "main", "run_arena"]

BOTS = ("random", "scripted", "predictive")


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _files(root: Path) -> tuple[list[Path], list[Rejection]]:
    """Every non-hidden file under ``root``, sorted; links leading out of it are refused."""
    found: list[Path] = []
    refused: list[Rejection] = []
    for folder, subfolders, names in os.walk(root):  # (links to folders are not followed)
        here = Path(folder)
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for d in subfolders:
            if (here / d).is_symlink():
                refused.append(
                    Rejection(_relative(here / d, root), "a link to a folder (not followed)")
                )
        for name in names:
            if name.startswith("."):
                continue
            path = here / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                refused.append(
                    Rejection(
                        _relative(path, root),
                        "a link to a file outside the submissions folder (not opened)",
                    )
                )
            elif path.is_file():
                found.append(path)
    return sorted(found, key=lambda p: _relative(p, root)), refused


def collect_submissions(
    submissions_dir: str | os.PathLike[str], reserved: Sequence[str] = (*BOTS, REFERENCE_NAME)
) -> tuple[list[Player], list[Rejection]]:
    """Load every submission under ``submissions_dir``: ``(players, rejections)``.

    Sorted by file path. Besides an invalid file, a submission is rejected when its name
    is ``reserved`` (the bots', the reference's) or already taken, or its author already
    submitted (the first file in path order is kept).
    """
    root = Path(submissions_dir).expanduser().resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"arena: {root} is not a folder of submissions")
    files, rejected = _files(root)
    # the weights that a .json description names are part of that submission
    described: set[Path] = set()
    for path in files:
        if path.suffix == ".json":
            # (a broken description is reported when it is loaded itself)
            with contextlib.suppress(SubmissionError, OSError):
                described.add(weights_path(path, read_description_file(path)))
    players: list[Player] = []
    names: dict[str, str] = {}
    authors: dict[str, str] = {}
    for path in files:
        if path.suffix == ".safetensors" and path.resolve() in described:
            continue
        file = _relative(path, root)
        try:
            agent = load_submission(path)
        except SubmissionError as error:
            rejected.append(Rejection(file, str(error)))
            continue
        except Exception as error:  # (one odd file never stops the arena)
            rejected.append(
                Rejection(file, f"could not be loaded ({type(error).__name__}: {error})")
            )
            continue
        d = agent.description
        if d.name in reserved:
            reason = f"the name {d.name!r} is reserved (an anchor of the arena)"
        elif d.name.casefold() in names:
            reason = f"duplicate name {d.name!r} (already used by {names[d.name.casefold()]})"
        elif d.author.casefold() in authors:
            reason = (
                f"duplicate author {d.author!r} (already submitted {authors[d.author.casefold()]})"
            )
        else:
            names[d.name.casefold()] = file
            authors[d.author.casefold()] = file
            players.append(Player(d.name, "submission", agent, d.author, file))
            continue
        rejected.append(Rejection(file, reason))
    rejected.sort(key=lambda r: r.file)
    return players, rejected


def run_arena(
    submissions_dir: str | os.PathLike[str],
    *,
    n_matches: int = 20,
    seed: int = 0,
    jobs: int = 1,
    rubric: Rubric | None = None,
    reference: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> ArenaResult:
    """Load, play and rate (nothing is written: see :func:`write_outputs`).

    Args:
        submissions_dir: the folder of submissions (read recursively).
        n_matches: matches per pair of players (even: half on each side).
        seed: seeds every match (the same files and seed give the same results).
        jobs: processes playing the matches.
        rubric: the grading rubric (default :data:`~rl_mind.arena.rubric.DEFAULT_RUBRIC`).
        reference: a ``rl-mind selfplay`` run directory whose best agent joins the anchors.
        progress: show a progress bar (``None``: when the output is a terminal).
    """
    from rl_mind.notebook import progress_bar

    rubric = rubric if rubric is not None else DEFAULT_RUBRIC
    anchors = [Player(bot, "bot", bot) for bot in BOTS]
    if reference is not None:
        anchors.append(
            Player(REFERENCE_NAME, "reference", load_reference(reference), "reference run")
        )
    rubric.check_anchors({p.name for p in anchors})
    submissions, rejected = collect_submissions(submissions_dir)
    players = (*anchors, *submissions)
    total = len(players) * (len(players) - 1) // 2 * n_matches
    bar = progress_bar(
        total, desc="arena (matches)", disable=None if progress is None else not progress
    )
    try:
        results = play_round_robin(
            [(p.name, p.policy) for p in players],
            n_matches,
            seed=seed,
            jobs=jobs,
            on_matches_done=lambda count: bar.update_to(bar.n + count),
        )
    finally:
        bar.close()
    board = bradley_terry(
        results.wins,
        results.draws,
        results.names,
        anchor="random",
        title="Arena ratings (Bradley–Terry, random = 0)",
    )
    return ArenaResult(players, tuple(rejected), results, board, rubric, n_matches, seed)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-mind arena",
        description=(
            "Rate every Pong Duel agent in SUBMISSIONS_DIR (files from rl_mind.export_agent) "
            "against the others and the bots; write leaderboard.html, leaderboard.csv, "
            "gradebook.csv and rejected.csv into --out."
        ),
    )
    parser.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="folder of submissions")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    parser.add_argument(
        "--matches", type=int, default=20, help="matches per pair, even (default 20)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the matches (default 0)")
    parser.add_argument(
        "--jobs", type=int, default=None, help="processes (default: every core of the machine)"
    )
    parser.add_argument(
        "--rubric", metavar="FILE", default=None, help="grading rubric (.toml or .json)"
    )
    parser.add_argument(
        "--reference",
        metavar="RUN_DIR",
        default=None,
        help="add the best agent of a rl-mind selfplay run",
    )
    parser.add_argument("--no-video", action="store_true", help="skip the video of the final")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``rl-mind arena SUBMISSIONS_DIR --out DIR [--matches N] [--seed S] [--jobs J] ...``."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.matches < 2 or args.matches % 2:
        print(
            f"rl-mind arena: --matches must be even and >= 2, got {args.matches}", file=sys.stderr
        )
        return 2
    out = Path(args.out).expanduser().resolve()
    if out.is_relative_to(Path(args.submissions).expanduser().resolve()):
        # (a second run would read the first one's outputs as submissions)
        print(
            f"rl-mind arena: --out {out} is inside the submissions folder; write the outputs "
            f"somewhere else",
            file=sys.stderr,
        )
        return 2
    jobs = available_cores() if args.jobs is None else args.jobs
    if jobs < 1:
        print(f"rl-mind arena: --jobs must be >= 1, got {jobs}", file=sys.stderr)
        return 2
    try:
        rubric = Rubric.load(args.rubric) if args.rubric is not None else None
        result = run_arena(
            args.submissions,
            n_matches=args.matches,
            seed=args.seed,
            jobs=jobs,
            rubric=rubric,
            reference=args.reference,
            progress=False if args.no_progress else None,
        )
        paths = write_outputs(result, out, video=not args.no_video)
    except (OSError, ValueError) as error:
        print(f"rl-mind arena: {error}", file=sys.stderr)
        return 1
    n_submissions = len(result.submissions)
    print(
        f"{n_submissions} submissions rated, {len(result.rejected)} files rejected; "
        f"{int(np.sum(result.results.wins) + np.sum(result.results.draws) / 2)} matches played"
    )
    for label, path in paths.items():
        print(f"{label + ':':<14} {path}")
    return 0
