"""The self-play PPO reference practical (notebooks/selfplay_ppo.ipynb) runs end to end.

Executed headless with nbclient at the fast-test profile, as CI does; it must end with the
match video embedded in the notebook.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "selfplay_ppo.ipynb"
SOURCE = ROOT / "notebooks" / "selfplay_ppo.py"


def test_the_notebook_is_generated_from_its_jupytext_source() -> None:
    jupytext = pytest.importorskip("jupytext")
    from_source = jupytext.read(SOURCE)
    committed = jupytext.read(NOTEBOOK)

    def cells(nb: object) -> list[tuple[str, str]]:
        return [(c.cell_type, c.source.strip()) for c in nb.cells]  # type: ignore[attr-defined]

    assert cells(committed) == cells(from_source), (
        "regenerate with `jupytext --to ipynb notebooks/selfplay_ppo.py`"
    )


def test_the_notebook_runs_end_to_end_and_embeds_the_match_video(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", cwd=str(tmp_path)).execute()
    elapsed = time.perf_counter() - start
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert not errors
    last_outputs = code_cells[-1].outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in last_outputs)
    assert "<video" in html and "data:video/mp4;base64," in html
    images = [o for c in code_cells for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # the court, the win-rate curves, the leaderboard
    runs = list(tmp_path.glob("selfplay-notebook-*"))
    assert len(runs) == 1
    run = runs[0]
    assert list(run.glob("events.out.tfevents.*"))
    assert "random" in (run / "leaderboard.md").read_text()
    assert list(run.glob("match-best-vs-scripted-*.mp4"))
    assert elapsed < 120
