"""The walks of ``tests/walks.py`` (a value followed through the calls that pass it on):
how often a reader following the self-play job's configuration, or the arena's result,
changes files. Held where the redesign of the floors above the building blocks left them
(the walks counted before it, on the same scenarios: 33 stays and 16 climbs back for the
configuration, 17 stays and 8 climbs back for the arena's result)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import walks
from tests.walks import PACKAGE, Walk, _Call, _counted


def walked(name: str, folder: Path) -> Walk:
    """The walk ``name`` measured by ``python tests/walks.py NAME --json`` in a fresh
    interpreter: not in the suite's process, where earlier tests' threads and objects live
    on (the profiler of a walk must see only the walked code)."""
    env = {**os.environ, "RL_MIND_FAST_TEST": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, walks.__file__, name, "--json"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return Walk(**json.loads(done.stdout.splitlines()[-1]))


def _function(file: str, name: str) -> _Call:
    source = f"def {name}():\n    pass\n"
    code = compile(source, str(PACKAGE / file), "exec").co_consts[0]
    return _Call(code)


def test_a_walk_counts_stays_climbs_back_and_returns() -> None:
    job, trainer, env = (_function(f, n) for f, n in
                         [("job.py", "train"), ("trainer.py", "init"), ("env.py", "make")])  # fmt: skip
    job.children = [trainer, _function("job.py", "announce"), _function("checkpoint.py", "save")]
    trainer.children = [env, _function("trainer.py", "snapshot")]
    found = _counted(job)
    assert found.trail == ["job.py", "trainer.py", "env.py", "trainer.py", "job.py",
                           "checkpoint.py", "job.py"]  # fmt: skip
    assert (found.stays, found.files, found.climbs, found.returns) == (7, 4, 3, 3)
    assert found.entered("trainer.py") == 2
    assert found.tree[:3] == ["job.py:train", "  trainer.py:init", "    env.py:make"]


def test_the_arena_reports_its_result_in_one_file_and_the_video(tmp_path: Path) -> None:
    found = walked("arena", tmp_path)
    assert found.trail == ["arena/report.py", "videos.py", "arena/report.py"], found.tree
    assert (found.stays, found.climbs) == (3, 1)  # (the target: at most 9 and 1)


@pytest.mark.slow
def test_the_self_play_configuration_walk(tmp_path: Path) -> None:
    found = walked("selfplay", tmp_path)
    tree = "\n".join(found.tree)
    assert found.stays <= 19, tree  # (the target: at most 20)
    assert found.climbs <= 9, tree  # (the target, 3, is not reached by this count)
    assert found.entered("selfplay/trainer.py") <= 7, tree  # (11 before)
    assert found.tree[0] == "selfplay/job.py:train"
    assert "selfplay/checkpoint.py:job_state" in tree and "videos.py:record_video" in tree
