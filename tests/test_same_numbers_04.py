"""rl-mind 0.4.0 itself against this package: code written for 0.4 gets 0.4's numbers.

The same short seeded DDPG and TD3 script (tests/same_numbers_04.py: 0.4's API only, a
TransitionCollector, a ReplayBuffer, soft_update, an Evaluator with run_dir and no writer)
runs under rl-mind 0.4.0, installed from the package index into a virtual environment of its
own (torch==2.13.0 first; kept in pytest's cache folder for the next run), and under this
package from the repository. What may differ is what the migration page's "Same code, other
numbers?" lists, named here; with the page's lines applied, nothing differs.

Slow (CI runs it); where the package index cannot be reached, it skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("same_numbers_04.py")
MIGRATION = ROOT / "docs" / "guide" / "migration.md"
# What the migration page lists, as this script sees it (and the lines that undo it):
BEST_ACTOR_FILE = "best_actor.pt"  # written into run_dir at each improvement (no run_dir: none)
RESEEDED = "seed=None"  # fixed evaluation seeds: from the second evaluation on, other returns


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [str(python), "-m", "pip", *args], capture_output=True, text=True, env=env, timeout=900
    )


def _is_0_4(python: Path) -> bool:
    probe = "import importlib.metadata as m; print(m.version('rl-mind'), m.version('torch'))"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd="/")
    versions = done.stdout.split()  # (torch: 2.13.0, or a local build's 2.13.0+cpu)
    return done.returncode == 0 and [v.split("+")[0] for v in versions] == ["0.4.0", "2.13.0"]


@pytest.fixture(scope="module")
def python_0_4(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a virtual environment with torch==2.13.0 and rl-mind==0.4.0, kept
    in pytest's cache (in this session's temporary folder under ``-p no:cacheprovider``)."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        venv = tmp_path_factory.mktemp("rl-mind-0.4.0") / "venv"
    else:
        venv = Path(cache.mkdir("rl-mind-0.4.0-venv")) / "venv"
    python = venv / "bin" / "python"
    if python.exists() and _is_0_4(python):
        return python
    reach = _pip(
        Path(sys.executable), "download", "--no-deps", "--quiet", "rl-mind==0.4.0",
        "-d", str(tmp_path_factory.mktemp("download")),
    )  # fmt: skip
    if reach.returncode != 0:
        last = (reach.stderr.strip().splitlines() or ["(pip said nothing)"])[-1]
        pytest.skip(f"rl-mind==0.4.0 cannot be fetched from the package index: {last}")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    for requirement in ("torch==2.13.0", "rl-mind==0.4.0"):  # (the pin first)
        done = _pip(python, "install", "--quiet", requirement)
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            pytest.fail(f"pip install {requirement} into {venv} failed:\n{done.stderr[-3000:]}")
    assert _is_0_4(python), f"{venv} does not hold rl-mind 0.4.0 with torch 2.13.0"
    return python


def _start(python: Path | str, out: Path, *args: str, repository: bool) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if repository:  # this package from the repository, however pytest was started
        env["PYTHONPATH"] = str(ROOT)
    env["OMP_NUM_THREADS"] = "1"  # (three runs at once: torch's threads would fight)
    run_dir = out.parent / f"{out.stem}-run"
    run_dir.mkdir()
    return subprocess.Popen(
        [str(python), str(SCRIPT), str(out), str(run_dir), *args],
        env=env, cwd=out.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _result(process: subprocess.Popen[str], out: Path) -> dict[str, Any]:
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, f"{' '.join(map(str, process.args))} failed:\n{output}"
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_a_0_4_script_gets_0_4s_numbers_but_for_what_the_migration_page_lists(
    python_0_4: Path, tmp_path: Path
) -> None:
    runs = {
        "0.4": _start(python_0_4, tmp_path / "old.json", repository=False),
        "now": _start(sys.executable, tmp_path / "now.json", repository=True),
        "lines": _start(sys.executable, tmp_path / "lines.json", "--04-lines", repository=True),
    }
    old, now, lines = (_result(runs[name], tmp_path / f"{file}.json")
                       for name, file in (("0.4", "old"), ("now", "now"), ("lines", "lines")))  # fmt: skip
    assert Path(old["rl_mind"]).is_relative_to(python_0_4.parent.parent), old["rl_mind"]
    assert Path(now["rl_mind"]) == ROOT / "rl_mind", now["rl_mind"]
    setting = f"0.4 with {old['versions']}, this package with {now['versions']}"

    for algorithm in ("ddpg", "td3"):
        old_run, now_run, lines_run = old[algorithm], now[algorithm], lines[algorithm]
        # the parameters after training: identical to the bit (the collector, the buffer's
        # samples, soft_update's arithmetic), and so are the evaluation steps
        for run in (now_run, lines_run):
            differ = sorted(name for name, value in old_run["parameters"].items()
                            if run["parameters"].get(name) != value)  # fmt: skip
            assert run["parameters"].keys() == old_run["parameters"].keys(), setting
            assert differ == [], f"{algorithm}: parameters unlike 0.4's: {differ} ({setting})"
            assert run["steps"] == old_run["steps"] == [150, 300, 450], setting
            assert run["collector_steps"] == old_run["collector_steps"]
        # the returns: the first evaluation starts from the same states (the evaluation
        # VecEnv's seed is 0, the Evaluator's default); the fixed seeds then replay them,
        # where 0.4's environments went on: other returns, unless seed=None
        assert now_run["returns"][0] == old_run["returns"][0], setting
        assert now_run["returns"][1:] != old_run["returns"][1:], "the page says they differ"
        assert lines_run["returns"] == old_run["returns"], setting
        assert lines_run["best_reward"] == old_run["best_reward"]

    # the files written: 0.4 wrote none without a writer; this package adds best_actor.pt
    assert old["files"] == [] and lines["files"] == []
    assert now["files"] == [f"ddpg/{BEST_ACTOR_FILE}", f"td3/{BEST_ACTOR_FILE}"]

    # and the migration page says so, with the lines this test applied
    page = MIGRATION.read_text()
    section = page[page.index("## Same code, other numbers?") :]
    for named in (BEST_ACTOR_FILE, RESEEDED, "run_dir=None", "soft_update"):
        assert named in section, f"the migration page's section does not name {named}"
