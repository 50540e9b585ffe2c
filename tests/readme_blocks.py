"""Extract the fenced Python blocks of rl_mind.md, by their info string."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "rl_mind.md"

_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(info: str = "python") -> list[tuple[int, str]]:
    """``(line number, code)`` of every block whose info string is exactly ``info``."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if match.group("info").strip() == info:
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, match.group("code")))
    return found


def run_in_module(name: str, sources: list[tuple[int, str]]) -> types.ModuleType:
    """Run ``sources`` in order in a fresh module registered as ``name`` (dataclasses and
    pickling need a real module), as a notebook would; returns the module."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        for line, code in sources:
            try:
                exec(compile(code, f"rl_mind.md:{line}", "exec"), module.__dict__)
            except Exception as error:
                raise AssertionError(f"the block at rl_mind.md:{line} failed: {error!r}") from error
    finally:
        sys.modules.pop(name, None)
    return module
