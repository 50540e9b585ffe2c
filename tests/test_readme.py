"""Every ```python block of rl_mind.md runs, in order, in one namespace (as in a notebook).

Blocks fenced as ```python no-run are shown only (fragments of a loop); the
```python dqn-example block is run and checked by tests/test_dqn_composes.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import matplotlib
import pytest

import rl_mind
from tests.readme_blocks import README, blocks, run_in_module


def test_readme_code_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # blocks may write runs, videos, plots
    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path / "outputs"))
    found = blocks("python")
    assert len(found) >= 5, "rl_mind.md lost its examples"
    run_in_module("rl_mind_readme", found)


def test_readme_documents_every_public_name() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [name for name in rl_mind.__all__ if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"public names not documented in rl_mind.md: {missing}"


def test_readme_starts_with_the_two_newcomer_commands() -> None:
    head = README.read_text(encoding="utf-8")[:3000]
    assert "rl-mind selfplay" in head, "the first command runs the main job"
    assert "pip install" in head and "pytest" in head, "the second installs and runs the tests"
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    test_command = re.search(
        r"^\s*(pip install -e \"\.\[test\]\" && python -m pytest[^\n]*)", head, re.M
    )
    assert test_command is not None, "rl_mind.md must show the test command on its own line"
    assert test_command.group(1).strip() in ci, ".ci/run must run the README's test command"
    assert os.access(README.parent / ".ci" / "run", os.R_OK)
