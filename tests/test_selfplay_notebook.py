"""The self-play PPO reference practical (notebooks/selfplay_ppo.ipynb).

It is generated from rl_mind/selfplay/trainer.py, the module that ``rl-mind selfplay`` runs,
so the committed notebook must be up to date with it. Executed headless with nbclient at
the fast-test profile, as CI does, it must end with the match video embedded in the
notebook; and trained for a few updates from a seed, it must reach exactly the weights the
job reaches from that seed in as many updates.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch

from rl_mind.arena import load_submission
from rl_mind.practicals import (
    REFERENCE_PRACTICALS,
    install_line,
    main,
    reference_notebook,
    stale_reference_notebooks,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "selfplay_ppo.ipynb"
MODULE = ROOT / "rl_mind" / "selfplay" / "trainer.py"
SEED, UPDATES = 3, 3  # the notebook and the job train from this seed for this many updates


def test_the_committed_notebook_is_generated_from_the_module_the_job_runs() -> None:
    assert REFERENCE_PRACTICALS["selfplay_ppo"] == MODULE.resolve()
    stale = stale_reference_notebooks(ROOT / "notebooks")
    assert stale == [], "regenerate with `rl-mind practical --reference notebooks`"


def test_the_notebook_shows_the_module_and_the_main_guard_is_dropped(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    text = MODULE.read_text(encoding="utf-8")
    notebook = nbformat.reads(reference_notebook(text, name="selfplay_ppo"), as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert "__main__" not in code.replace('``if __name__ == "__main__":``', "")
    for definition in ("class SelfPlayConfig", "def gae_advantages", "def ppo_loss",
                       "class SelfPlayTrainer", "def train_for"):  # fmt: skip
        assert definition in code
    # the game's numbers come from the game, never retyped (the ball forecast, which the
    # notebook uses, lives with the game)
    forecast = (ROOT / "rl_mind" / "envs" / "pong_forecast.py").read_text(encoding="utf-8")
    assert "PongDuelRules()" in forecast and "0.875" not in forecast and "0.975" not in forecast
    assert "0.875" not in code and "0.975" not in code
    # a stale notebook fails the check; writing it again makes it up to date
    stale = tmp_path / "selfplay_ppo.ipynb"
    stale.write_text(NOTEBOOK.read_text(encoding="utf-8").replace("Pong Duel", "Pong"))
    assert stale_reference_notebooks(tmp_path) == [stale]
    assert main(["--reference", str(tmp_path), "--check"]) == 1
    assert main(["--reference", str(tmp_path)]) == 0
    assert stale_reference_notebooks(tmp_path) == []


def test_a_solution_marker_in_a_reference_practical_is_refused() -> None:
    with pytest.raises(ValueError, match="no solution regions"):
        reference_notebook("# %%\nx = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION\n", name="x")


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, float, Path, Path]:
    """The notebook run headless at the fast-test profile, with its parameters set to train
    from ``SEED`` for ``UPDATES`` updates (as papermill injects parameters), and a cell
    that saves the trained weights."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    outputs = tmp_path_factory.mktemp("notebook")
    weights = outputs / "weights.pt"
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = notebook.cells
    parameters = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    cells.insert(
        parameters + 1,
        nbformat.v4.new_code_cell(f"seed, max_updates, minutes = {SEED}, {UPDATES}, 10.0"),
    )
    training = next(i for i, c in enumerate(cells) if "train_for(trainer" in c.source)
    save = (
        "torch.save({'policy': trainer.policy.state_dict(), 'critic': trainer.critic.state_dict(), "
        f"'agent': trainer.averaged_policy.state_dict()}}, {str(weights)!r})"
    )
    cells.insert(training + 1, nbformat.v4.new_code_cell(save))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RL_MIND_FAST_TEST", "1")
        patch.setenv("RL_MIND_OUTPUTS", str(outputs))
        patch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        start = time.perf_counter()
        client = nbclient.NotebookClient(
            notebook,
            timeout=240,
            kernel_name="python3",
            resources={"metadata": {"path": str(outputs)}},
        )
        client.execute()
        elapsed = time.perf_counter() - start
    return notebook, elapsed, outputs, weights


def test_the_notebook_runs_end_to_end_and_embeds_the_match_video(
    executed: tuple[Any, float, Path, Path],
) -> None:
    nb, elapsed, tmp_path, _ = executed
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert not errors
    video_cell = next(c for c in code_cells if "video_display(" in c.source)
    html = "".join(o.get("data", {}).get("text/html", "") for o in video_cell.outputs)
    assert "<video" in html and "data:video/mp4;base64," in html
    images = [o for c in code_cells for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # the court, the win-rate curves, the leaderboard
    # the leaderboard is a table (Markdown), not its text printed
    board = next(c for c in code_cells if "leaderboard(trainer" in c.source)
    tables = [
        o.data["text/markdown"] for o in board.outputs if "text/markdown" in o.get("data", {})
    ]
    assert len(tables) == 1 and "| rank | player | rating |" in tables[0], board.outputs
    assert not any("| rank |" in o.get("text", "") for o in board.outputs)
    # the bar counts training seconds: its final state, kept in the notebook, says so
    training = next(c for c in code_cells if "train_for(trainer" in c.source)
    (bar,) = [o.data for o in training.outputs if "text/html" in o.get("data", {})]
    assert "self-play (training seconds)" in bar["text/plain"] and "s/s" in bar["text/plain"]
    assert "step" not in bar["text/plain"].replace("game_steps", ""), bar["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" not in bar
    runs = list(tmp_path.glob("selfplay-notebook-*"))
    assert len(runs) == 1
    run = runs[0]
    assert list(run.glob("events.out.tfevents.*"))
    assert "random" in (run / "leaderboard.md").read_text()
    assert list(run.glob("match-best-vs-scripted-*.mp4"))
    # the last cell exports the agent for the class arena, and the file loads as the arena
    # loads it
    assert "rl_mind.export_agent(" in code_cells[-1].source
    agent = load_submission(run / "agent.safetensors")
    assert agent.description.author == "Your Name"
    assert agent.description.name == "self-play PPO"
    assert elapsed < 120


def test_the_notebook_starts_with_the_install_line_of_the_other_practicals() -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    first_code = next(c for c in notebook.cells if c.cell_type == "code")
    assert first_code.source.splitlines()[0] == install_line()
    # the module has none of its own (the generator writes it), and one is refused
    assert "pip install" not in MODULE.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="writes the install line itself"):
        reference_notebook('# %%\n# %pip install "rl-mind>=0.1"\nx = 1\n', name="x")
    # a module whose code needs an extra gets it in its install line, as a practical does
    lander = nbformat.reads(
        reference_notebook('# %%\nimport gymnasium\ngymnasium.make("LunarLander-v3")\n',
                           name="x"), as_version=4)  # fmt: skip
    assert lander.cells[0].source.splitlines()[0] == install_line(["box2d"])


def test_the_notebook_and_the_job_reach_the_same_weights_from_the_same_seed(
    executed: tuple[Any, float, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rl_mind.selfplay.job import train
    from rl_mind.selfplay.trainer import SelfPlayConfig

    *_, weights = executed
    from_notebook = torch.load(weights, weights_only=True)
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path))
    run = train(
        SelfPlayConfig.fast_test(seed=SEED), minutes=10.0, run_dir=tmp_path / "job",
        max_updates=UPDATES, progress=False, leaderboard=False, video=False,
    )  # fmt: skip
    assert run.trainer.updates == UPDATES
    from_job = {
        "policy": run.trainer.policy.state_dict(),
        "critic": run.trainer.critic.state_dict(),
        "agent": run.trainer.averaged_policy.state_dict(),
    }
    for network, state in from_job.items():
        assert state.keys() == from_notebook[network].keys()
        for name, tensor in state.items():
            assert torch.equal(tensor, from_notebook[network][name]), f"{network}.{name}"
    # (and training did move them: the comparison is not of two untouched initialisations)
    initial = run.trainer.archived_policy(0).state_dict()
    assert not all(torch.equal(initial[k], v) for k, v in from_job["policy"].items())
