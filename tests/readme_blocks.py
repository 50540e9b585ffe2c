"""Extract the fenced Python blocks of rl_mind.md and of the guide pages, by their kind.

A block's kind is its language followed by its classes: ```` ```python ```` is
``"python"`` (run by tests/test_readme.py), ```` ```python {.no-run} ```` is
``"python no-run"`` (shown only), ```` ```python {.dqn-example} ```` is
``"python dqn-example"`` (run and checked by tests/test_dqn_composes.py). The attribute
form is the one MkDocs (pymdownx.superfences) renders; the package index and GitHub read
the language from the first word.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "rl_mind.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


class Block(NamedTuple):
    where: str  # "rl_mind.md:12", "docs/guide/vecenv.md:40"
    code: str


def guide_pages() -> list[Path]:
    """Every Markdown page of the documentation site, in a stable order."""
    return sorted(DOCS.rglob("*.md"))


def kind(info: str) -> str:
    """``"python {.no-run}"`` (or ``"python no-run"``) -> ``"python no-run"``."""
    language, _, attributes = info.strip().partition(" ")
    return " ".join([language, *re.findall(r"[\w-]+", attributes)])


def blocks(info: str = "python", documents: list[Path] | None = None) -> list[Block]:
    """Every block of kind ``info`` in ``documents`` (default: the README and the guide)."""
    found = []
    for document in documents if documents is not None else [README, *guide_pages()]:
        text = document.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if kind(match.group("info")) == info:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(f"{document.relative_to(ROOT)}:{line}", match.group("code")))
    return found


def run_in_module(name: str, sources: list[Block]) -> types.ModuleType:
    """Run ``sources`` in order in a fresh module registered as ``name`` (dataclasses and
    pickling need a real module), as a notebook would; returns the module."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        for where, code in sources:
            try:
                exec(compile(code, where, "exec"), module.__dict__)
            except Exception as error:
                raise AssertionError(f"the block at {where} failed: {error!r}") from error
    finally:
        sys.modules.pop(name, None)
    return module
