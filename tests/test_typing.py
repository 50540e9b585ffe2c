"""The package type-checks clean with mypy, and so does typical student code (generics
carry the action type through collectors and containers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_passes_on_the_package_and_user_code() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "rl_mind", "tests/typing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_catches_a_wrong_action_field(tmp_path: Path) -> None:
    """The generics are real: reading a field the action type lacks is an error."""
    code = (
        "from rl_mind import Action, ReplayBuffer\n"
        "buffer = ReplayBuffer[Action](10)\n"
        "print(buffer.sample(1).action.log_prob)\n"
    )
    path = tmp_path / "wrong.py"
    path.write_text(code)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0 and "log_prob" in result.stdout, result.stdout
