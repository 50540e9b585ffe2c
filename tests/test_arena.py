"""The class arena: exporting agents, refusing hostile files, rating, grading, the page."""

from __future__ import annotations

import csv
import json
import os
import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from torch import nn

import rl_mind
from rl_mind.arena import (
    AgentDescription,
    ArenaAgent,
    Rubric,
    SubmissionError,
    export_agent,
    load_reference,
    load_submission,
)
from rl_mind.arena.run import main as arena_main
from rl_mind.arena.run import run_arena
from rl_mind.arena.submission import METADATA_KEY
from rl_mind.arena.tournament import play_round_robin, schedule
from rl_mind.nn import build_mlp
from rl_mind.selfplay import bradley_terry
from rl_mind.selfplay.job import train
from rl_mind.selfplay.trainer import PongPolicy, SelfPlayConfig


# ---------------------------------------------------------------------- helpers
def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _policy(seed: int, hidden: tuple[int, ...] = (96, 96)) -> PongPolicy:
    torch.manual_seed(seed)
    return PongPolicy(hidden, True)


class _PlainPolicy(nn.Module):
    """A student's own network: ReLU, three hidden layers, the bare observation."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.net = build_mlp([10, 64, 32, 16, 3], activation=nn.ReLU)
        with torch.no_grad():  # (larger logits: the actions vary with the observation)
            self.net[-1].weight.mul_(30.0)

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).argmax(dim=-1)


class _ExtraFeature(_PlainPolicy):
    """A forward that the description cannot express (it reorders the observation)."""

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.flip(-1)).argmax(dim=-1)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A short self-play run: enough updates to beat the random bot, with snapshots."""
    folder = tmp_path_factory.mktemp("run")
    config = SelfPlayConfig(
        seed=0,
        num_envs=64,
        num_steps=64,
        minibatch_size=2048,
        snapshot_every=8,
        eval_matches=8,
        eval_every_seconds=1e6,
    )
    return train(
        config,
        minutes=10.0,
        run_dir=folder,
        max_updates=24,
        leaderboard=False,
        video=False,
        progress=False,
    )


# ---------------------------------------------------------------------- export
def test_export_writes_data_that_plays_like_the_policy(tmp_path: Path) -> None:
    policy = _policy(1)
    path = export_agent(policy, tmp_path / "agent.safetensors", name="Ada's bot", author="Ada L.")
    assert path == (tmp_path / "agent.safetensors").resolve()
    header = path.read_bytes()
    length = int.from_bytes(header[:8], "little")
    meta = json.loads(header[8 : 8 + length])["__metadata__"]
    description = json.loads(meta[METADATA_KEY])
    assert description == {
        "format": "rl-mind agent 1",
        "name": "Ada's bot",
        "author": "Ada L.",
        "hidden_sizes": [96, 96],
        "activation": "relu",  # (the self-play networks' default)
        "ball_forecast": True,
        "rl_mind_version": rl_mind.__version__,
    }
    agent = load_submission(path)
    assert isinstance(agent, ArenaAgent) and agent.name == "Ada's bot"
    obs = torch.rand(512, 10) * 2 - 1
    np.testing.assert_array_equal(agent.act(obs).numpy(), policy.act(obs).numpy())
    torch.manual_seed(1)
    tanh_policy = PongPolicy((96, 96), True, "tanh")
    tanh_agent = load_submission(export_agent(tanh_policy, tmp_path / "tanh.safetensors",
                                              name="t", author="Ada L."))  # fmt: skip
    assert tanh_agent.description.activation == "tanh"
    np.testing.assert_array_equal(tanh_agent.act(obs).numpy(), tanh_policy.act(obs).numpy())
    assert rl_mind.export_agent is export_agent


def test_export_takes_what_the_description_can_express(tmp_path: Path) -> None:
    policy = _PlainPolicy()
    agent = load_submission(export_agent(policy, tmp_path / "p.safetensors", name="p", author="q"))
    assert agent.description.hidden_sizes == (64, 32, 16)
    assert agent.description.activation == "relu" and not agent.description.ball_forecast
    obs = torch.rand(256, 10)
    np.testing.assert_array_equal(agent.act(obs).numpy(), policy.act(obs).numpy())


def test_export_refuses_what_it_cannot_rebuild(tmp_path: Path) -> None:
    target = tmp_path / "x.safetensors"
    with pytest.raises(ValueError, match="plays differently"):
        export_agent(_ExtraFeature(), target, name="x", author="y")
    with pytest.raises(ValueError, match="name"):
        export_agent(_policy(0), target, name="=HYPERLINK(1)", author="y")
    with pytest.raises(ValueError, match="author"):
        export_agent(_policy(0), target, name="x", author="<script>")
    with pytest.raises(ValueError, match=r"\.safetensors"):
        export_agent(_policy(0), tmp_path / "x.pt", name="x", author="y")
    with pytest.raises(TypeError, match="nn.Sequential"):
        export_agent(nn.Linear(10, 3), target, name="x", author="y")
    odd = _PlainPolicy()
    odd.net[1] = nn.LeakyReLU(0.3)  # not the allow-list's default slope
    with pytest.raises(ValueError, match="activations"):
        export_agent(odd, target, name="x", author="y")
    nan = _policy(0)
    with torch.no_grad():
        nan.net[0].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        export_agent(nan, target, name="x", author="y")
    assert not target.exists(), "nothing is written when the export is refused"


# ---------------------------------------------------------------------- hostile files
class _Marker:
    """Unpickling this creates the marker file: what a malicious pickle would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (Path.touch, (self.marker,))


def _description(**changes: Any) -> dict[str, Any]:
    values = AgentDescription("x", "y", (96, 96)).to_json()
    values.update(changes)
    return values


def _write_raw(path: Path, tensors: dict[str, torch.Tensor], description: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(description)})


def _hostile_folder(root: Path, marker: Path) -> dict[str, str]:
    """Two good agents and one file per way of being bad; returns file -> expected reason."""
    export_agent(_policy(1), root / "alice" / "agent.safetensors", name="Alice", author="Alice")
    export_agent(_policy(2), root / "bob.safetensors", name="Bob", author="Bob")
    good = dict(_policy(3).net.state_dict(prefix="net."))
    # hand-assembled: a description naming weights beside it (the weights carry no description)
    (root / "carol").mkdir()
    save_file(good, str(root / "carol" / "weights.safetensors"))
    (root / "carol" / "agent.json").write_text(
        json.dumps(_description(name="Carol", author="Carol", weights="weights.safetensors"))
    )
    evil = pickle.dumps({"net.0.weight": _Marker(marker)})
    (root / "mallory").mkdir()
    (root / "mallory" / "agent.pkl").write_bytes(evil)
    torch.save({"net.0.weight": _Marker(marker)}, root / "mallory" / "checkpoint.pt")
    (root / "mallory" / "agent.safetensors").write_bytes(evil)
    (root / "mallory2").mkdir()
    shutil.copy(root / "mallory" / "checkpoint.pt", root / "mallory2" / "agent.pt")
    (root / "mallory2" / "agent.json").write_text(
        json.dumps(_description(name="Mallory", author="Mallory", weights="agent.pt"))
    )
    data = (root / "bob.safetensors").read_bytes()
    (root / "truncated.safetensors").write_bytes(data[: len(data) // 2])
    nan = {k: v.clone() for k, v in good.items()}
    nan["net.2.weight"][3, 4] = float("nan")
    _write_raw(root / "nan.safetensors", nan, _description(name="NaN", author="Nan"))
    small = dict(_policy(4, (64, 64)).net.state_dict(prefix="net."))
    _write_raw(root / "shapes.safetensors", small, _description(name="Shapes", author="Sha"))
    (root / "eve").mkdir()
    (root / "eve" / "agent.json").write_text(
        json.dumps(_description(name="Eve", author="Eve", weights="../alice/agent.safetensors"))
    )
    (root / "eve2").mkdir()
    (root / "eve2" / "agent.json").write_text(
        json.dumps(_description(name="Eve2", author="Eve2", weights="/etc/passwd"))
    )
    _write_raw(root / "future.safetensors", good, _description(format="rl-mind agent 9"))
    export_agent(_policy(5), root / "zz-copy.safetensors", name="Alice", author="Zed")
    export_agent(_policy(6), root / "zz-random.safetensors", name="random", author="Rand")
    return {
        "mallory/agent.pkl": "not a submission",
        "mallory/checkpoint.pt": "not a submission",
        "mallory/agent.safetensors": "corrupt or truncated",
        "mallory2/agent.json": "must be a .safetensors file",
        "mallory2/agent.pt": "not a submission",
        "truncated.safetensors": "corrupt or truncated",
        "nan.safetensors": "NaN or infinite weights in net.2.weight",
        "shapes.safetensors": "wrong shape",
        "eve/agent.json": "points outside the submission's folder",
        "eve2/agent.json": "points outside the submission's folder",
        "future.safetensors": "unknown format 'rl-mind agent 9'",
        "zz-copy.safetensors": "duplicate name 'Alice'",
        "zz-random.safetensors": "reserved",
    }


def test_hostile_files_are_refused_with_a_reason_and_the_others_rated(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    # (the test could fail: the pickle really does create the marker when unpickled)
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Marker(proof)))
    assert proof.exists()
    root = tmp_path / "submissions"
    root.mkdir()
    expected = _hostile_folder(root, marker)
    out = tmp_path / "out"
    code = arena_main(
        [
            str(root),
            "--out",
            str(out),
            "--matches",
            "2",
            "--jobs",
            "1",
            "--no-video",
            "--no-progress",
        ]
    )
    assert code == 0
    assert not marker.exists(), "a pickle in a submission was unpickled"
    rejected = {row["file"]: row["reason"] for row in _read_csv(out / "rejected.csv")}
    assert set(rejected) == set(expected)
    for file, reason in expected.items():
        assert reason in rejected[file], (file, rejected[file])
        assert "\n" not in rejected[file]
    rated = {row["name"] for row in _read_csv(out / "leaderboard.csv")}
    assert rated == {"random", "scripted", "predictive", "Alice", "Bob", "Carol"}
    with pytest.raises(SubmissionError, match="not opened"):
        load_submission(root / "mallory" / "checkpoint.pt")
    assert not marker.exists()


# ---------------------------------------------------------------------- the round robin
def test_the_schedule_plays_each_pair_equally_on_both_sides() -> None:
    left, right = schedule(4, 6)
    assert len(left) == 6 * 6
    for i in range(4):
        for j in range(4):
            if i != j:
                assert int(((left == i) & (right == j)).sum()) == 3
    with pytest.raises(ValueError, match="even"):
        play_round_robin([("random", "random"), ("scripted", "scripted")], 3)


def test_batched_round_robin_agrees_with_the_bots_known_order() -> None:
    results = play_round_robin(
        [("random", "random"), ("scripted", "scripted"), ("predictive", "predictive")], 40, seed=1
    )
    total = results.wins + results.wins.T + results.draws
    assert np.all(total[~np.eye(3, dtype=bool)] == 40)
    assert results.stats("scripted", "random").win_rate > 0.9
    assert results.stats("predictive", "random").win_rate > 0.9
    board = bradley_terry(results.wins, results.draws, results.names, anchor="random")
    assert board.rating("random") == 0.0 < board.rating("scripted")


# ---------------------------------------------------------------------- export -> arena
def test_export_then_arena_rates_and_grades_a_class(tiny_run: Any, tmp_path: Path) -> None:
    trainer = tiny_run.trainer
    root = tmp_path / "class"
    first, last = trainer.archived_policy(0), trainer.archived_policy(len(trainer.archive) - 1)
    export_agent(first, root / "ann" / "agent.safetensors", name="untrained", author="Ann")
    export_agent(last, root / "ben" / "agent.safetensors", name="last snapshot", author="Ben")
    export_agent(trainer.averaged_policy, root / "cy.safetensors", name="averaged", author="Cy")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(
        "[beat]\nthreshold = 0.6\nrandom = 3\nscripted = 5\nreference = 1\n"
        "[rank]\nfirst = 6\nlast = 2\n"
    )
    out = tmp_path / "out"
    args = [str(root), "--out", str(out), "--matches", "20", "--seed", "7", "--jobs", "1"]
    args += ["--rubric", str(rubric), "--reference", str(tiny_run.run_dir), "--no-progress"]
    assert arena_main(args) == 0
    board = {row["name"]: row for row in _read_csv(out / "leaderboard.csv")}
    assert set(board) == {"random", "scripted", "predictive", "reference"} | {
        "untrained",
        "last snapshot",
        "averaged",
    }
    rating = {name: float(row["rating"]) for name, row in board.items()}
    assert rating["random"] == 0.0
    assert rating["random"] < rating["scripted"]
    assert rating["averaged"] > rating["random"] and rating["last snapshot"] > rating["random"]
    assert rating["untrained"] < rating["last snapshot"]
    for row in board.values():
        assert float(row["rating_low"]) <= float(row["rating"]) <= float(row["rating_high"])
        assert int(row["matches"]) == 20 * 6
    # the reference is the run's averaged agent (the run has no leaderboard.csv)
    reference = load_reference(tiny_run.run_dir)
    obs = torch.rand(256, 10) * 2 - 1
    np.testing.assert_array_equal(
        reference.act(obs).numpy(), trainer.averaged_policy.act(obs).numpy()
    )
    # the gradebook, recomputed by hand from the leaderboard and the rubric
    grades = _read_csv(out / "gradebook.csv")
    assert [row["author"] for row in grades] == ["Ann", "Ben", "Cy"]
    students = sorted(
        (n for n in board if board[n]["kind"] == "submission"), key=lambda n: -rating[n]
    )
    for row in grades:
        position = students.index(row["name"]) + 1
        assert int(row["rank"]) == position
        assert row["rating"] == board[row["name"]]["rating"]
        expected = {"random": 3.0, "scripted": 5.0, "reference": 1.0}
        total = 0.0
        for anchor, points in expected.items():
            earned = points if float(row[f"score_vs_{anchor}"]) >= 0.6 else 0.0
            assert float(row[f"points_{anchor}"]) == earned
            total += earned
        rank_points = 6 + (2 - 6) * (position - 1) / 2
        assert float(row["points_rank"]) == pytest.approx(rank_points)
        assert float(row["grade"]) == pytest.approx(total + rank_points)
    assert "points_predictive" not in grades[0], "only the rubric's anchors give points"
    page = (out / "leaderboard.html").read_text()
    assert 'src="data:video/mp4;base64,' in page and (out / "final.mp4").stat().st_size > 0


def test_the_reference_is_the_runs_best_rated_agent(tiny_run: Any, tmp_path: Path) -> None:
    from rl_mind.arena import load_agent
    from rl_mind.selfplay.trainer import AGENT_NAME

    trainer = tiny_run.trainer
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run.run_dir, run_dir)
    entry = trainer.archive[1]
    rows = [f"snapshot {entry['id']} (step {entry['step']})", AGENT_NAME, "scripted"]
    (run_dir / "leaderboard.csv").write_text("player,rating\n" + "".join(f"{r},0\n" for r in rows))
    obs = torch.rand(512, 10) * 2 - 1
    best = trainer.archived_policy(1).act(obs).numpy()
    np.testing.assert_array_equal(load_reference(run_dir).act(obs).numpy(), best)
    played = load_agent(run_dir)  # what `rl-mind play RUN_DIR` plays
    assert isinstance(played, ArenaAgent) and played.name == "run"
    np.testing.assert_array_equal(played.act(obs).numpy(), best)
    assert load_agent("scripted") == "scripted"
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        load_reference(tmp_path)


def test_the_commands_are_registered(capsys: pytest.CaptureFixture[str]) -> None:
    from rl_mind.__main__ import main

    assert main([]) == 0
    usage = capsys.readouterr().out
    assert "arena" in usage and "play" in usage
    with pytest.raises(SystemExit) as exit_:
        main(["arena", "--help"])
    assert exit_.value.code == 0 and "--rubric" in capsys.readouterr().out


def test_same_files_and_seed_give_byte_identical_csv(tmp_path: Path) -> None:
    root = tmp_path / "class"
    for k in range(5):
        export_agent(_policy(k), root / f"s{k}.safetensors", name=f"agent {k}", author=f"S{k}")
    (root / "notes.txt").write_text("not a submission")
    outputs = []
    for run, jobs in enumerate(("1", "1", "2")):
        out = tmp_path / f"out{run}"
        args = [str(root), "--out", str(out), "--matches", "6", "--seed", "3", "--jobs", jobs]
        assert arena_main([*args, "--no-video", "--no-progress"]) == 0
        outputs.append(
            {
                name: (out / name).read_bytes()
                for name in ("leaderboard.csv", "gradebook.csv", "rejected.csv")
            }
        )
    assert outputs[0] == outputs[1], "the same inputs and seed gave different files"
    assert outputs[0] == outputs[2], "the number of processes changed the results"


def test_rubric_files_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "r.json"
    good.write_text(json.dumps({"beat": {"predictive": 4, "threshold": 0.7}, "rank": {"first": 3}}))
    rubric = Rubric.load(good)
    assert rubric.beat == {"predictive": 4.0} and rubric.threshold == 0.7
    assert rubric.rank_points(1, 5) == 3.0 and rubric.rank_points(5, 5) == 0.0
    assert rubric.maximum == 7.0
    for text, message in (
        ({"beats": {}}, "unknown sections"),
        ({"rank": {"best": 1}}, "unknown keys"),
        ({"beat": {"random": "two"}}, "finite number"),
        ({"beat": {"threshold": 2}}, r"\[0, 1\]"),
    ):
        good.write_text(json.dumps(text))
        with pytest.raises(ValueError, match=message):
            Rubric.load(good)
    with pytest.raises(ValueError, match="do not play"):
        Rubric(beat={"reference": 1.0}).check_anchors({"random", "scripted", "predictive"})
    with pytest.raises(ValueError, match="do not play"):
        run_arena(tmp_path, rubric=Rubric(beat={"reference": 1.0}), progress=False)


def test_arena_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main([str(tmp_path), "--out", str(tmp_path / "o"), "--matches", "3"]) == 2
    assert "even" in capsys.readouterr().err
    assert arena_main([str(tmp_path), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "inside the submissions folder" in capsys.readouterr().err
    missing = tmp_path / "nowhere"
    assert arena_main([str(missing), "--out", str(tmp_path / "o2"), "--no-progress"]) == 1
    assert "not a folder" in capsys.readouterr().err


# ---------------------------------------------------------------------- the page, in a browser
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _open_in_chromium(page: Path, folder: Path) -> tuple[str, set[str]]:
    """Chromium's DOM of ``page`` after loading, and the addresses the page asked the
    network for (in Chromium's net log: requests made on behalf of a file:// page; the
    browser's own background requests are left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    netlog = folder / "netlog.json"
    command = [
        str(_chromium()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={folder / 'profile'}",
        f"--log-net-log={netlog}",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(folder)},
    )
    assert "<body" in done.stdout, f"chromium printed no page: {done.stderr[-2000:]}"
    log = json.loads(netlog.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    fetched = {
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start_job
        and "file://" in event["params"].get("network_isolation_key", "")
        and not event["params"]["url"].startswith(("file:", "data:"))
    }
    return done.stdout, fetched


@pytest.mark.skipif(
    _chromium() is None,
    reason="no headless browser installed (Debian: apt-get install chromium; .ci/run does)",
)
def test_the_page_renders_offline_in_a_headless_browser(tmp_path: Path) -> None:
    import base64
    import re

    # (the check can fail: a page with an image on the web does show up in the net log)
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png">')
    assert _open_in_chromium(control, tmp_path / "control")[1] == {"http://example.invalid/x.png"}

    root = tmp_path / "class"
    for k in range(3):
        export_agent(_policy(k), root / f"s{k}.safetensors", name=f"agent {k}", author=f"S{k}")
    (root / "bad.pt").write_bytes(b"x")
    out = tmp_path / "out"
    args = [str(root), "--out", str(out), "--matches", "4", "--jobs", "1", "--no-progress"]
    assert arena_main(args) == 0
    dom, fetched = _open_in_chromium(out / "leaderboard.html", tmp_path / "browser")
    assert not fetched, f"the page fetched {sorted(fetched)}"
    body = dom.split('id="leaderboard"', 1)[1].split("</table>", 1)[0]
    names = re.findall(r'<td class="name">([^<]*)</td>', body)
    assert sorted(names) == sorted(
        ["random", "scripted", "predictive", "agent 0", "agent 1", "agent 2"]
    )
    for plot in ("rating-plot", "cross-play"):
        found = re.search(rf'<img id="{plot}"[^>]*src="data:image/png;base64,([^"]+)"', dom)
        assert found is not None, f"no {plot} image in the page"
        assert base64.b64decode(found.group(1))[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r'<video id="final"[^>]*src="data:video/mp4;base64,', dom)
    assert "bad.pt" in dom.split('id="rejected"', 1)[1]
    assert not re.search(r'(src|href)="(https?:)?//', dom), "the page links to the network"
