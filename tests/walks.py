"""Walks: follow one value through the calls that pass it on, and count how often a reader
following it changes files.

``python tests/walks.py selfplay|arena`` prints the walk's call tree, its trail of files and
its numbers (``--json``: the walk as one line of JSON, which ``tests/test_walks.py`` reads
to hold the numbers).

How a walk is counted. It runs the real code under :func:`sys.setprofile`. The walk starts
at one function, given the followed value. A call of a function of ``rl_mind`` joins the
walk when it is made directly from a function of the walk and one of its arguments passes
the value on:

- the value itself, or an object that holds it in its attributes (up to two levels down: a
  trainer built around the configuration, through ``self``);
- one of the value's fields: the same object, or an equal number or string under the
  field's own name (``num_envs=config.num_envs``, ``seed=config.seed``).

Calls from the same caller to the same function (a loop) count once: the walk is the call
tree with repeated siblings folded, read depth first, as a reader reads it. The *trail* is
the files the reader is in as he enters each function and comes back to its caller. A
*stay* is a run of one file on that trail; a *climb back* is a return from a function to
its caller in another file; a *return* is a stay in a file the reader had already left
(stays minus files).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import torch

import rl_mind

PACKAGE = Path(rl_mind.__file__).resolve().parent  # (the files of the package imported)
_SCALARS = (int, float, str, bool, type(None))


@dataclasses.dataclass
class _Call:
    code: CodeType
    children: list[_Call] = dataclasses.field(default_factory=list)

    @property
    def file(self) -> str:
        return Path(self.code.co_filename).resolve().relative_to(PACKAGE).as_posix()

    def child(self, code: CodeType) -> _Call:
        """The child calling ``code`` (a repeated call folds into the first)."""
        for child in self.children:
            if child.code is code:
                return child
        self.children.append(_Call(code))
        return self.children[-1]


@dataclasses.dataclass(frozen=True)
class Walk:
    """A walk's call tree (one ``file:function`` line per call, indented) and its numbers."""

    tree: list[str]
    trail: list[str]  # the stays' files, in order
    climbs: int

    @property
    def stays(self) -> int:
        return len(self.trail)

    @property
    def files(self) -> int:
        return len(set(self.trail))

    @property
    def returns(self) -> int:
        return self.stays - self.files

    def entered(self, file: str) -> int:
        """How many stays are in ``file`` (``"selfplay/trainer.py"``)."""
        return self.trail.count(file)

    def summary(self) -> str:
        return (
            f"{self.stays} stays in {self.files} files, {self.climbs} climbs back, "
            f"{self.returns} returns"
        )


def _fields(value: Any) -> dict[str, Any]:
    fields = {}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return {**getattr(value, "__dict__", {}), **fields}


def _holds(candidate: Any, value: Any, depth: int = 2) -> bool:
    if candidate is value:
        return True
    if depth == 0 or isinstance(candidate, _SCALARS + (torch.Tensor,)):
        return False
    attributes = getattr(candidate, "__dict__", None)
    if not isinstance(attributes, dict):
        return False
    return any(_holds(item, value, depth - 1) for item in list(attributes.values()))


def _passes(frame: FrameType, value: Any, fields: dict[str, Any]) -> bool:
    """Whether the call of ``frame`` is given ``value``, an object holding it, or a field."""
    code = frame.f_code
    arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    given = frame.f_locals
    for name in arguments:
        if name not in given:
            continue
        argument = given[name]
        if _holds(argument, value):
            return True
        if name == "self":
            continue
        for field, item in fields.items():
            if argument is item and not isinstance(item, _SCALARS):
                return True
            if name == field and type(argument) is type(item) and argument == item:
                return True
    return False


def walk(function: Callable[..., Any], value: Any, *args: Any, **kwargs: Any) -> Walk:
    """Call ``function(*args, **kwargs)`` and walk ``value`` from it."""
    package = str(PACKAGE) + os.sep
    fields = _fields(value)
    root = _Call(function.__code__)
    stack: list[_Call | None] = []  # None: a call outside the walk

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and stack:
            stack.pop()
        if event != "call":
            return
        code = frame.f_code
        if not stack:  # before the walk's function is entered, or after it returned
            if code is root.code and not root.children:
                stack.append(root)
            return
        caller = stack[-1]
        if caller is not None and code.co_filename.startswith(package):
            stack.append(caller.child(code) if _passes(frame, value, fields) else None)
        else:
            stack.append(None)

    sys.setprofile(profile)
    try:
        function(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return _counted(root)


def _counted(root: _Call) -> Walk:
    tree: list[str] = []
    files: list[str] = []  # the file of each entry and each return, depth first
    climbs = 0

    def visit(call: _Call, depth: int) -> None:
        nonlocal climbs
        tree.append("  " * depth + f"{call.file}:{call.code.co_name}")
        files.append(call.file)
        for child in call.children:
            visit(child, depth + 1)
            files.append(call.file)
            climbs += child.file != call.file

    visit(root, 0)
    trail = [file for i, file in enumerate(files) if i == 0 or files[i - 1] != file]
    return Walk(tree, trail, climbs)


def selfplay_walk(folder: Path) -> Walk:
    """``rl-mind selfplay``'s ``job.train`` with ``config``: three updates, the round robin
    and the video (the fast-test profile's networks; the bar off)."""
    from rl_mind.selfplay.job import train
    from rl_mind.selfplay.trainer import SelfPlayConfig

    config = SelfPlayConfig(seed=11, num_envs=32, num_steps=32, minibatch_size=512,
                            snapshot_every=2, eval_matches=8, eval_every_seconds=1e6)  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        return walk(train, config, config, minutes=10.0, run_dir=folder / "run",
                    max_updates=3, progress=False)  # fmt: skip


def arena_walk(folder: Path) -> Walk:
    """The arena's ``write_outputs`` with ``result``: three submissions, 4 matches a pair,
    the final's video."""
    from rl_mind.arena import export_agent
    from rl_mind.arena.report import write_outputs
    from rl_mind.arena.run import run_arena
    from rl_mind.selfplay.trainer import PongPolicy

    for k in range(3):
        torch.manual_seed(k)
        export_agent(PongPolicy((96, 96), True), folder / "class" / f"s{k}.safetensors",
                     name=f"agent {k}", author=f"student {k}")  # fmt: skip
    result = run_arena(folder / "class", n_matches=4, seed=0, jobs=1, progress=False)
    return walk(write_outputs, result, result, folder / "out", video=True)


WALKS = {"selfplay": selfplay_walk, "arena": arena_walk}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in WALKS or sys.argv[2:] not in ([], ["--json"]):
        sys.exit(f"usage: python tests/walks.py {{{'|'.join(WALKS)}}} [--json]")
    os.environ.setdefault("RL_MIND_FAST_TEST", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        found = WALKS[sys.argv[1]](Path(tmp))
    if sys.argv[2:] == ["--json"]:
        print(json.dumps(dataclasses.asdict(found)))
    else:
        print("\n".join(found.tree))
        print("trail:", " > ".join(found.trail))
        print(found.summary())
