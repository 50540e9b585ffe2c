"""Tests of the main job (``rl-mind selfplay``) and of the self-play PPO trainer behind it.

All at the fast-test profile (tests/conftest.py sets ``RL_MIND_FAST_TEST=1``).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from rl_mind.evaluation import CheckpointError, load_checkpoint, save_checkpoint
from rl_mind.selfplay import trainer as trainer_module
from rl_mind.selfplay.checkpoint import (
    CHECKPOINT_NAME,
    config_of_checkpoint,
    load_trainer_state,
    read_job_checkpoint,
    trainer_state,
)
from rl_mind.selfplay.job import main, train
from rl_mind.selfplay.pool import Snapshot
from rl_mind.selfplay.trainer import (
    AGENT_NAME,
    PongCritic,
    PongPolicy,
    PoolOpponent,
    SelfPlayConfig,
    SelfPlayTrainer,
    TrainingBatch,
    ball_forecast,
    explained_variance,
    gae_advantages,
    mirror_observation,
    network_input,
    ppo_loss,
)


def fast_config(**changes: object) -> SelfPlayConfig:
    return SelfPlayConfig.fast_test(**changes)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the algorithm's pieces
def test_the_leaderboard_plays_from_the_runs_seed_with_the_learner_as_it_is_now() -> None:
    trainer = SelfPlayTrainer(fast_config(seed=4))
    try:
        trainer.update()  # (no snapshot at update 1: snapshot_every is 2)
        assert trainer.archive[-1]["step"] != trainer.env_steps
        board, steps = trainer_module.leaderboard(trainer)
        assert trainer.archive[-1]["step"] == trainer.env_steps  # the learner joined
        assert steps[trainer_module.snapshot_name(trainer.archive[-1])] == trainer.env_steps
        again, _ = trainer_module.leaderboard(trainer, seed=4)
        assert [(r.name, r.rating) for r in again.rows] == [(r.name, r.rating) for r in board.rows]
        with pytest.raises(ValueError, match=r"leaderboard: seed must be .*got -1"):
            trainer_module.leaderboard(trainer, seed=-1)
    finally:
        trainer.close()


def test_the_ball_forecast_is_where_the_game_takes_the_ball() -> None:
    """Fly the ball with the game's own steps (paddles out of the way), note where it crosses
    the paddle line it flies towards, and compare with the forecast made at the start."""
    from rl_mind.envs.pong_game import PongDuelGame

    rng = np.random.default_rng(0)
    m = 400
    game = PongDuelGame(m, seed=0)
    game.reset()
    game.ball_x[:] = rng.uniform(-0.8, 0.8, m)
    game.ball_y[:] = rng.uniform(-0.9, 0.9, m)
    speed = rng.uniform(0.04, 0.25, m)
    angle = rng.uniform(-1.2, 1.2, m) + np.where(rng.random(m) < 0.5, np.pi, 0.0)
    game.ball_vx[:], game.ball_vy[:] = speed * np.cos(angle), speed * np.sin(angle)
    for player in (0, 1):
        obs = torch.from_numpy(game.observe(player))
        forecast = ball_forecast(obs)
        assert forecast.shape == (m, 3)
        torch.testing.assert_close(forecast[:, 1], forecast[:, 0] - obs[:, 0])
    forecast = ball_forecast(torch.from_numpy(game.observe(0))).numpy()  # player 0's view
    # the other player's (mirrored) view forecasts the same crossing: same height, same steps
    other = ball_forecast(torch.from_numpy(game.observe(1))).numpy()
    np.testing.assert_allclose(other[:, [0, 2]], forecast[:, [0, 2]], atol=1e-5)
    face = 0.9 - 0.025
    crossed_y = np.full(m, np.nan)
    crossed_step = np.zeros(m)
    points = np.full(m, -1)  # points scored by the end of the step of the crossing
    for step in range(1, 200):
        # the paddles stay as far as possible from the ball, so that nobody hits it
        game.paddle_y[:] = np.where(game.ball_y > 0, -0.85, 0.85)
        x_before, vx_before = game.ball_x.copy(), game.ball_vx.copy()
        game.step(np.zeros((2, m), dtype=np.int64), check=False)
        passed = np.isnan(crossed_y) & (np.abs(game.ball_x) >= face) & (np.abs(x_before) < face)
        # where the line was crossed in this step (interpolated back from the position after it)
        y = game.ball_y - game.ball_vy * (game.ball_x - np.sign(vx_before) * face) / vx_before
        crossed_y[passed] = y[passed]
        crossed_step[passed] = step
        points[passed] = game.score.sum(axis=0)[passed]
    # Compared: the balls that crossed the line before any point was scored (a fast ball
    # can cross the line and the goal line in one step, and the serve then moves it), and
    # without a wall bounce in the step of the crossing (it would spoil the interpolation).
    clean = points == 0
    clean &= np.abs(crossed_y) < 0.975 - np.abs(game.ball_vy)
    assert clean.mean() > 0.6
    np.testing.assert_allclose(forecast[clean, 0], crossed_y[clean], atol=1e-5)
    # the steps until the crossing / 40, capped at 2 (80 steps)
    steps, expected = forecast[clean, 2] * 40, np.minimum(crossed_step[clean], 80.0)
    assert np.all((expected - 1 < steps + 1e-4) & (steps <= expected + 1e-4))


def test_the_networks_read_the_observation_and_the_forecast() -> None:
    obs = torch.randn(5, 10)
    assert torch.equal(network_input(obs)[:, :10], obs)
    assert torch.equal(network_input(obs)[:, 10:], ball_forecast(obs))
    assert torch.equal(network_input(obs, forecast=False), obs)
    assert network_input(torch.randn(2, 3, 10)).shape == (2, 3, 13)  # any batch shape
    assert network_input(obs[0]).shape == (13,)
    with pytest.raises(ValueError, match=r"observations are \[\.\.\., 10\].*got shape \(5, 9\)"):
        network_input(obs[:, :9])
    with_forecast, without = PongPolicy(), PongPolicy(ball_forecast=False)
    assert with_forecast.net[0].in_features == 13 and without.net[0].in_features == 10
    for policy in (with_forecast, without):
        assert policy(obs).value.shape == (5,) and policy.act(obs).shape == (5,)
    assert PongCritic()(obs).shape == PongCritic(ball_forecast=False)(obs).shape == (5,)


def test_the_networks_are_relu_mlps_unless_tanh_is_asked_for() -> None:
    for activation, module in (("relu", nn.ReLU), ("tanh", nn.Tanh)):
        policy = PongPolicy(activation=activation)
        critic = PongCritic(activation=activation)
        for net in (policy.net, critic.net):
            hidden = [type(layer) for layer in net if not isinstance(layer, nn.Linear)]
            assert hidden == [module, module]
        config = fast_config(activation=activation)
        trainer = SelfPlayTrainer(config)
        try:
            assert type(trainer.policy.net[1]) is module is type(trainer.critic.net[1])
            assert type(trainer.archived_policy(0).net[1]) is module
        finally:
            trainer.close()
    assert type(PongPolicy().net[1]) is nn.ReLU  # the default
    with pytest.raises(ValueError, match=r"activation must be one of \('relu', 'tanh'\)"):
        PongPolicy(activation="gelu")


def test_gae_bootstraps_a_truncation_but_not_a_termination() -> None:
    reward = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    value = torch.zeros(3, 2)
    next_value = torch.full((3, 2), 10.0)
    terminated = torch.tensor([[False, False], [True, False], [False, False]])
    truncated = torch.tensor([[False, False], [False, True], [False, False]])
    adv = gae_advantages(
        reward, value, next_value, terminated, truncated, gamma=0.5, gae_lambda=1.0
    )
    # step 1: terminated copy gets its reward only; truncated copy bootstraps from V(next_obs)
    assert adv[1, 0].item() == pytest.approx(1.0)
    assert adv[1, 1].item() == pytest.approx(1.0 + 0.5 * 10.0)
    # step 2 (a new match) does not leak into step 1; step 0 sees step 1 through the recursion
    assert adv[2, 0].item() == pytest.approx(5.0)
    assert adv[0, 0].item() == pytest.approx(0.5 * 10.0 + 0.5 * 1.0 * adv[1, 0].item())


def test_gae_refuses_flags_that_are_not_bool_and_network_input_numpy() -> None:
    # (~ of 0/1 long flags is -1/-2: the advantages came out silently wrong)
    reward = value = next_value = torch.zeros(3, 2)
    flags = torch.zeros(3, 2, dtype=torch.bool)
    for bad, message in (
        (torch.zeros(3, 2, dtype=torch.long), r"terminated must be a bool tensor.*torch.int64"),
        (torch.zeros(3, 2), r"terminated must be a bool tensor.*torch.float32"),
        (torch.zeros(3, dtype=torch.bool), r"terminated has shape \[3\], expected .* \[3, 2\]"),
    ):
        with pytest.raises((TypeError, ValueError), match=message):
            gae_advantages(reward, value, next_value, bad, flags, gamma=0.9, gae_lambda=0.9)
    with pytest.raises(TypeError, match="truncated must be a bool tensor"):
        gae_advantages(reward, value, next_value, flags, flags.long(), gamma=0.9, gae_lambda=0.9)
    with pytest.raises(TypeError, match=r"network_input: expected a tensor.*ndarray.*as_tensor"):
        network_input(np.zeros((2, 10), np.float32))  # type: ignore[arg-type]


def test_mirror_observation_is_the_other_players_view_of_the_same_state() -> None:
    from rl_mind.envs import PongDuelGame

    game = PongDuelGame(64, seed=3)
    game.reset_matches(np.arange(64))
    rng = np.random.default_rng(0)
    for _ in range(60):
        result = game.step(rng.integers(0, 3, size=(2, 64)))
        ended = np.flatnonzero(result.terminated | result.truncated)
        if len(ended):
            game.reset_matches(ended)
        both = torch.from_numpy(game.observe())
        torch.testing.assert_close(mirror_observation(both[0]), both[1], atol=1e-6, rtol=0)
        torch.testing.assert_close(mirror_observation(both[1]), both[0], atol=1e-6, rtol=0)


def test_ppo_loss_has_no_gradient_from_samples_clipped_in_the_advantage_direction() -> None:
    torch.manual_seed(0)
    policy, critic = PongPolicy(), PongCritic()
    obs = torch.randn(64, 10)
    with torch.no_grad():
        action = policy(obs).value
        log_prob = policy.distribution(obs).log_prob(action)
    advantages = torch.randn(64)
    returns = torch.zeros(64)
    config = fast_config()
    # old log-probabilities far below the new ones: ratio >> 1 + clip everywhere
    batch = TrainingBatch(obs, action, log_prob - 5.0, advantages, returns, value=returns)
    loss, stats = ppo_loss(policy, critic, batch, config)
    assert stats["clip_fraction"].item() == pytest.approx(1.0)
    policy.zero_grad()
    loss.backward()
    # positive advantages are clipped (no gradient), negative ones are not; the entropy
    # bonus also pushes the logits, so compare with the entropy-only gradient
    entropy_only = -config.entropy_coef * policy.distribution(obs).entropy().mean()
    grads = [p.grad.clone() for p in policy.parameters()]  # type: ignore[union-attr]
    policy.zero_grad()
    entropy_only.backward()
    differs = any(
        not torch.allclose(g, p.grad)  # type: ignore[arg-type]
        for g, p in zip(grads, policy.parameters())
    )
    assert differs, "the negative advantages should still move the policy"


def test_the_policy_samples_its_distribution_with_its_log_probabilities() -> None:
    torch.manual_seed(0)
    policy = PongPolicy()
    with torch.no_grad():
        last = policy.net[-1]
        assert isinstance(last, nn.Linear)
        last.weight.zero_()
        last.bias.copy_(torch.tensor([1.5, 0.0, -1.0]))  # probabilities 0.76 / 0.17 / 0.06
        out = policy(torch.randn(2, 20_000, 10))  # any batch shape
        assert out.value.shape == out.log_prob.shape == (2, 20_000)
        expected = policy.distribution(torch.zeros(1, 10)).probs[0]
        frequencies = torch.bincount(out.value.flatten(), minlength=3) / out.value.numel()
        torch.testing.assert_close(frequencies, expected, atol=0.01, rtol=0)
        obs = torch.randn(7, 10)
        out = policy(obs)
        torch.testing.assert_close(out.log_prob, policy.distribution(obs).log_prob(out.value))


def test_successor_values_reuse_the_next_steps_values_only_where_the_match_went_on() -> None:
    """One side's advantages are those of V(next_obs) computed on every successor: where the
    match went on, next_obs[t] is obs[t + 1], whose value is reused."""
    trainer = SelfPlayTrainer(fast_config(seed=2))
    try:
        rollout = trainer.collector.collect(300)
        trainer.live.moves.clear()
        obs, next_obs = rollout.obs, rollout.next_obs
        assert isinstance(obs, torch.Tensor) and isinstance(next_obs, torch.Tensor)
        assert rollout.done.any() and not rollout.done.all()
        with torch.no_grad():
            side = trainer.one_side(rollout)
            expected = gae_advantages(
                rollout.reward, trainer.critic(obs), trainer.critic(next_obs),
                rollout.terminated, rollout.truncated, trainer.config.gamma,
                trainer.config.gae_lambda,
            )  # fmt: skip
        torch.testing.assert_close(side.advantages, expected.flatten(), atol=1e-5, rtol=0)
        torch.testing.assert_close(side.value, trainer.critic(obs).flatten().detach())
    finally:
        trainer.close()


def test_the_live_opponent_records_its_moves_in_step_with_the_learner() -> None:
    trainer = SelfPlayTrainer(fast_config(latest_opponent_probability=1.0))
    try:
        assert trainer.n_live == trainer.config.num_envs  # every match: the live learner
        rollout = trainer.collector.collect(20)
        assert len(trainer.live.moves) == 20
        obs, action, log_prob = trainer.live.rollout(20)
        assert obs.shape == (20, trainer.config.num_envs, 10) and action.shape == (20, 8)
        torch.testing.assert_close(obs, mirror_observation(rollout.obs), atol=1e-6, rtol=0)
        with torch.no_grad():  # the log-probabilities of what it did, under its policy
            expected = trainer.policy.distribution(obs).log_prob(action)
        torch.testing.assert_close(log_prob, expected)
        with pytest.raises(
            RuntimeError, match="played 0 steps since the last rollout, expected 20"
        ):
            trainer.live.rollout(20)
    finally:
        trainer.close()


@pytest.mark.parametrize(("probability", "factor"), [(1.0, 2), (0.0, 1)])
def test_an_update_trains_on_the_live_opponents_moves_too(probability: float, factor: int) -> None:
    config = fast_config(latest_opponent_probability=probability)
    trainer = SelfPlayTrainer(config)
    try:
        stats = trainer.update()
        assert stats.samples == factor * config.num_steps * config.num_envs
        assert trainer.env_steps == config.num_steps * config.num_envs
        assert np.isfinite(stats.policy_loss) and np.isfinite(stats.approx_kl)
    finally:
        trainer.close()


@pytest.mark.parametrize("fraction", [0.2, 0.0])
def test_the_agent_averages_the_learners_weights(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = SelfPlayTrainer(fast_config(policy_averaging=fraction))
    try:
        expected = [p.detach().clone() for p in trainer.policy.parameters()]
        for n in range(1, 5):
            trainer.update()
            tau = 1.0 / (1.0 + fraction * n)
            for average, live in zip(expected, trainer.policy.parameters(), strict=True):
                average += tau * (live.detach() - average)
        for average, actual in zip(expected, trainer.averaged_policy.parameters(), strict=True):
            torch.testing.assert_close(actual, average)
        differs = any(
            not torch.equal(a, b)
            for a, b in zip(trainer.averaged_policy.parameters(), trainer.policy.parameters())
        )
        assert differs == (fraction > 0)  # 0: the agent is the learner
        assert not any(p.requires_grad for p in trainer.averaged_policy.parameters())

        played: list[object] = []
        real = trainer_module.play_matches

        def recording(player: object, *args: object, **kwargs: object) -> object:
            played.append(player)
            return real(player, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(trainer_module, "play_matches", recording)
        trainer.evaluate(n_matches=2)
        assert played and all(p is trainer.averaged_policy for p in played)  # the agent
    finally:
        trainer.close()


def test_evaluating_does_not_change_what_the_training_draws() -> None:
    # a run evaluated every update learns exactly what an unevaluated run learns: the
    # evaluation matches are seeded and leave torch's random generator as they found it
    weights = []
    for evaluate in (True, False):
        trainer = SelfPlayTrainer(fast_config(seed=4))  # (seeds torch's generator)
        try:
            for _ in range(3):
                trainer.update()
                if evaluate:
                    trainer.evaluate(n_matches=4)
            weights.append([p.detach().clone() for p in trainer.policy.parameters()])
        finally:
            trainer.close()
    assert all(torch.equal(a, b) for a, b in zip(*weights))


def test_a_checkpoint_of_the_first_format_restarts_the_agent_from_the_learner() -> None:
    trainer = SelfPlayTrainer(fast_config())
    try:
        trainer.update()
        state = trainer_state(trainer)
        del state["averaged_policy"]
        state["format"] = "rl-mind selfplay checkpoint 1"
        restored = SelfPlayTrainer(fast_config())
        try:
            load_trainer_state(restored, state)
            for a, b in zip(
                restored.averaged_policy.parameters(), trainer.policy.parameters(), strict=True
            ):
                assert torch.equal(a, b)
            with pytest.raises(ValueError, match="expected the format .*checkpoint 2"):
                load_trainer_state(restored, {**state, "format": "something else"})
            # the first format predates the ball forecast: its networks read the bare
            # observation, and a trainer with the forecast refuses them by name
            old = {**state, "config": dict(state["config"])}
            del old["config"]["ball_forecast"], old["config"]["policy_averaging"]
            assert config_of_checkpoint(old).ball_forecast is False
            assert config_of_checkpoint(state).ball_forecast is True
            with pytest.raises(ValueError, match="ball_forecast=False, this trainer True"):
                load_trainer_state(restored, old)
            # a checkpoint saved before the activation setting has tanh networks
            del old["config"]["activation"]
            assert config_of_checkpoint(old).activation == "tanh"
            assert config_of_checkpoint(state).activation == "relu"
            without = {**state, "config": dict(state["config"])}
            del without["config"]["activation"]
            with pytest.raises(ValueError, match="activation='tanh', this trainer 'relu'"):
                load_trainer_state(restored, without)
        finally:
            restored.close()
    finally:
        trainer.close()


# ---------------------------------------------------------------------- the command
def test_selfplay_command_writes_logs_checkpoint_leaderboard_and_a_playable_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    assert main(["--minutes", "0.2", "--run-dir", str(run_dir), "--no-progress"]) == 0
    out = capsys.readouterr().out
    for label in ("checkpoint:", "leaderboard:", "match video:", "tensorboard --logdir"):
        assert label in out
    # checkpoint: the whole training state, loadable safely
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)
    assert state["trainer"]["counters"]["updates"] > 0
    assert len(state["trainer"]["pool"]["snapshots"]) >= 2
    # TensorBoard scalars
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in (
        "charts/win_rate_vs_random",
        "charts/win_rate_vs_scripted",
        "charts/win_rate_vs_predictive",
        "charts/online_elo",
        "charts/win_rate_vs_latest",
        "charts/win_rate_vs_pool",
        "losses/policy_loss",
        "losses/value_loss",
        "losses/entropy",
        "losses/approx_kl",
        "losses/clip_fraction",
        "losses/explained_variance",
    ):
        assert tag in tags
    # leaderboard: table and plot, with the bots and the snapshots
    table = (run_dir / "leaderboard.md").read_text()
    for name in ("random", "scripted", "predictive", "snapshot 0 (step 0)", AGENT_NAME):
        assert name in table
    assert (run_dir / "leaderboard.png").stat().st_size > 1000
    assert (run_dir / "evaluations.csv").read_text().startswith("updates,")
    # the video plays: decode it back
    videos = list(run_dir.glob("match-best-vs-scripted-*.mp4"))
    assert len(videos) == 1
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(videos[0]))
    meta = next(reader)
    frames = list(reader)
    assert meta["size"] == (480, 400)
    assert len(frames) > 10


# ---------------------------------------------------------------------- what the job shows
ROOT = Path(__file__).resolve().parent.parent
EVALUATION_LINE = re.compile(
    r"training (\d+:\d\d)/0:06  update (\d+)  ([\d,]+) game steps  "
    r"win rate vs random \d+% scripted \d+% predictive \d+%"
)


def test_the_command_says_where_it_writes_then_prints_each_evaluation_to_a_pipe(
    tmp_path: Path,
) -> None:
    run_dir = (tmp_path / "run").resolve()
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "rl_mind", "selfplay", "--minutes", "0.1", "--run-dir",
         str(run_dir), "--no-video"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RL_MIND_FAST_TEST": "1", "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("self-play PPO on Pong Duel: 0.1 minutes of training (seed 0")
    assert "round robin" in lines[0] and "video" not in lines[0]  # (--no-video)
    assert lines[1:3] == [
        f"run directory: {run_dir}",
        f"watch it live: tensorboard --logdir {run_dir}",
    ]
    shown = [
        (int(m[2]), int(m[3].replace(",", ""))) for m in map(EVALUATION_LINE.fullmatch, lines) if m
    ]
    with (run_dir / "evaluations.csv").open() as file:
        rows = [
            (int(float(r["updates"])), int(float(r["env_steps"]))) for r in csv.DictReader(file)
        ]
    assert len(rows) >= 2 and shown == rows  # one line per evaluation, as it was made
    assert EVALUATION_LINE.fullmatch(lines[3])  # the first, right after the start lines
    assert "\r" not in done.stdout and "it/s" not in done.stdout + done.stderr  # no bar


def test_the_bar_counts_seconds_of_training_and_fits_in_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(fast_config(), minutes=0.05, run_dir=tmp_path / "run", progress=True,
          leaderboard=False, video=False)  # fmt: skip
    out = capsys.readouterr().out
    renders = [line.rstrip() for line in re.split(r"[\r\n]", out) if "|" in line]
    assert re.fullmatch(
        r"training 0:03/0:03 \|█{10}\| random \d+% scripted \d+% predictive \d+%", renders[-1]
    )
    widest = [re.sub(r"\d+%", "100%", render) for render in renders]  # (tqdm's 10-column bar)
    assert max(map(len, widest)) <= 80
    assert not re.search(r"it/s|s/it|/step", out)


def test_without_leaderboard_and_video_the_runs_trainer_is_the_one_its_checkpoint_holds(
    tmp_path: Path,
) -> None:
    # (3 updates, a snapshot every 2: the learner as it ended joins the archive only where
    # the leaderboard or the video takes it; the checkpoint is saved before either)
    run = train(fast_config(snapshot_every=2), minutes=1.0, run_dir=tmp_path / "run",
                max_updates=3, progress=False, leaderboard=False, video=False)  # fmt: skip
    saved = read_job_checkpoint(run.run_dir)["trainer"]
    assert run.trainer.updates == 3
    assert [e["step"] for e in run.trainer.archive] == [e["step"] for e in saved["archive"]]
    assert len(run.trainer.archive) == len(run.trainer.pool) == 2  # (updates 0 and 2)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run that spent its budget, with its leaderboard and its video."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    run = train(fast_config(seed=2), minutes=0.02, run_dir=run_dir, progress=False)
    assert not run.interrupted and run.video is not None
    return run_dir


def _files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in folder.iterdir()}


def test_resuming_a_run_whose_budget_is_spent_says_so_and_touches_nothing(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    before = _files(run_dir)
    assert main(["--resume", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "nothing to do" in out and "budget of 0.02 minutes" in out
    assert "--minutes" in out  # (what to do to train on)
    assert _files(run_dir) == before
    run = train(resume=run_dir, progress=False)
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)["trainer"]
    assert run.already_done and not run.interrupted and run.video is run.leaderboard is None
    assert run.final_evaluation == state["eval_history"][-1]
    assert _files(run_dir) == before


def _scalar_points(run_dir: Path) -> list[tuple[str, int]]:
    """Every (tag, step) logged to TensorBoard in ``run_dir``, over all its event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points = []
    for events_file in sorted(run_dir.glob("events.out.tfevents.*")):
        events = EventAccumulator(str(events_file))
        events.Reload()
        for tag in events.Tags()["scalars"]:
            points += [(tag, event.step) for event in events.Scalars(tag)]
    return points


def _evaluated_updates(run_dir: Path) -> list[int]:
    with (run_dir / "evaluations.csv").open() as file:
        return [int(float(row["updates"])) for row in csv.DictReader(file)]


@pytest.fixture(scope="module")
def extended_run(finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the finished run, trained on with a longer budget (``--minutes``)."""
    run_dir = tmp_path_factory.mktemp("extended") / "run"
    shutil.copytree(finished_run, run_dir)
    updates = load_checkpoint(run_dir / CHECKPOINT_NAME)["trainer"]["counters"]["updates"]
    assert main(["--resume", str(run_dir), "--minutes", "0.04", "--no-progress"]) == 0
    after = load_checkpoint(run_dir / CHECKPOINT_NAME)["trainer"]["counters"]
    assert after["updates"] > updates and after["train_seconds"] >= 0.04 * 60
    return run_dir


def test_a_longer_budget_trains_a_finished_run_on_with_one_video(extended_run: Path) -> None:
    assert len(list(extended_run.glob("match-best-vs-scripted-*.mp4"))) == 1
    assert '"minutes": 0.04' in (extended_run / "config.json").read_text()


def test_a_longer_budget_does_not_evaluate_the_last_update_twice(extended_run: Path) -> None:
    updates = _evaluated_updates(extended_run)
    assert updates == sorted(set(updates))
    points = _scalar_points(extended_run)
    assert len(points) == len(set(points))


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SelfPlayTrainer]:
    """A run stopped by Ctrl-C (a real SIGINT) after its third update."""
    run_dir = tmp_path_factory.mktemp("interrupted") / "run"

    def press_ctrl_c(trainer: SelfPlayTrainer) -> None:
        if trainer.updates == 3:
            os.kill(os.getpid(), signal.SIGINT)

    run = train(
        fast_config(seed=5),
        minutes=10.0,
        run_dir=run_dir,
        progress=False,
        on_update=press_ctrl_c,
    )
    assert run.interrupted and run.leaderboard is None and run.video is None
    return run_dir, run.trainer


@pytest.fixture
def run_copy(interrupted_run: tuple[Path, SelfPlayTrainer], tmp_path: Path) -> Path:
    """A copy of the interrupted run's folder, for a test to change."""
    run_dir = tmp_path / "run"
    shutil.copytree(interrupted_run[0], run_dir)
    return run_dir


def test_ctrl_c_saves_a_checkpoint_at_the_end_of_the_update(
    interrupted_run: tuple[Path, SelfPlayTrainer],
) -> None:
    run_dir, trainer = interrupted_run
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)["trainer"]
    assert state["counters"]["updates"] == trainer.updates == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def test_a_resumed_run_continues_with_identical_counters_and_pool(
    interrupted_run: tuple[Path, SelfPlayTrainer], tmp_path: Path
) -> None:
    source, before = interrupted_run
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)
    restored = SelfPlayTrainer(config_of_checkpoint(state["trainer"]))
    try:
        with pytest.raises(ValueError, match=r"pass load_checkpoint\(path\)\['trainer'\]"):
            load_trainer_state(restored, state)  # (the job's whole checkpoint)
        load_trainer_state(restored, state["trainer"])
        assert (restored.updates, restored.env_steps) == (before.updates, before.env_steps)
        assert restored.train_seconds == before.train_seconds
        assert [(s.id, s.step, s.wins, s.draws, s.losses) for s in restored.pool] == [
            (s.id, s.step, s.wins, s.draws, s.losses) for s in before.pool
        ]
        for a, b in zip(restored.pool, before.pool):
            for (name, x), y in zip(a.policy.state_dict().items(), b.policy.state_dict().values()):
                assert torch.equal(x, y), name
        for x, y in zip(restored.policy.parameters(), before.policy.parameters()):
            assert torch.equal(x, y)
        for x, y in zip(
            restored.averaged_policy.parameters(), before.averaged_policy.parameters(), strict=True
        ):
            assert torch.equal(x, y)
        assert restored.pool.rng.bit_generator.state == before.pool.rng.bit_generator.state
        assert [e["id"] for e in restored.archive] == [e["id"] for e in before.archive]
        assert restored.eval_history == before.eval_history
    finally:
        restored.close()

    seen: list[int] = []
    run = train(
        resume=run_dir, max_updates=6, progress=False, leaderboard=False, video=False,
        on_update=lambda trainer: seen.append(trainer.updates),
    )  # fmt: skip
    assert not run.interrupted
    assert seen == [4, 5, 6]  # continued from update 3
    after = load_checkpoint(run_dir / CHECKPOINT_NAME)["trainer"]
    assert after["counters"]["updates"] == 6
    assert (
        after["counters"]["env_steps"]
        == 6 * run.trainer.config.num_steps * run.trainer.config.num_envs
    )
    ids = [s["id"] for s in after["pool"]["snapshots"]]
    assert ids[: len(before.pool)] == [s.id for s in before.pool]  # the old pool, then more


def test_a_resumed_run_writes_no_evaluation_and_no_scalar_twice(run_copy: Path) -> None:
    run = train(resume=run_copy, max_updates=5, progress=False, leaderboard=False, video=False)
    assert run.trainer.updates == 5
    updates = _evaluated_updates(run_copy)
    assert updates[-2:] == [3, 5] and updates == sorted(set(updates))  # (at the resume, the end)
    points = _scalar_points(run_copy)
    assert len(list(run_copy.glob("events.out.tfevents.*"))) == 2  # (one a part)
    assert len(points) == len(set(points))
    assert ("charts/win_rate_vs_random", run.trainer.env_steps) in points


def test_a_truncated_checkpoint_is_refused_with_an_error_naming_the_file(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy
    checkpoint = run_dir / CHECKPOINT_NAME
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt") as error:
        train(resume=run_dir, progress=False)
    assert str(checkpoint) in str(error.value)
    assert main(["--resume", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert str(checkpoint) in err and "not loaded" in err
    assert checkpoint.read_bytes() == data[: len(data) // 2]  # never overwritten


def test_a_corrupt_checkpoint_through_the_command_is_one_line_naming_the_file(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = run_copy / CHECKPOINT_NAME
    data = bytearray(checkpoint.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # (damage inside the content, the length kept)
    checkpoint.write_bytes(bytes(data))
    assert main(["--resume", str(run_copy), "--no-progress", "--no-video"]) == 1
    captured = capsys.readouterr()
    err_lines = captured.err.strip().splitlines()
    assert len(err_lines) == 1 and str(checkpoint) in err_lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert checkpoint.read_bytes() == bytes(data)  # never overwritten


@pytest.mark.parametrize(
    ("remove", "named"),
    [
        (("trainer", "rng"), "trainer.rng"),
        (("trainer", "rng", "minibatches"), "trainer.rng.minibatches"),
        (("trainer", "counters"), "trainer.counters"),
        (("trainer", "counters", "env_steps"), "trainer.counters.env_steps"),
        (("trainer", "optimizer"), "trainer.optimizer"),
        (("trainer", "averaged_policy"), "trainer.averaged_policy"),
        (("minutes",), "minutes"),
    ],
)
def test_a_checkpoint_lacking_a_part_is_refused_naming_the_file_and_the_part(
    run_copy: Path, capsys: pytest.CaptureFixture[str], remove: tuple[str, ...], named: str
) -> None:
    checkpoint = run_copy / CHECKPOINT_NAME
    state = load_checkpoint(checkpoint)
    holder = state
    for key in remove[:-1]:
        holder = holder[key]
    del holder[remove[-1]]
    save_checkpoint(state, checkpoint)  # (a readable checkpoint, with its checksum)
    with pytest.raises(CheckpointError, match=re.escape(named)) as error:
        train(resume=run_copy, progress=False)
    assert str(checkpoint) in str(error.value) and "\n" not in str(error.value)
    assert main(["--resume", str(run_copy), "--no-progress", "--no-video"]) == 1
    captured = capsys.readouterr()
    err_lines = captured.err.strip().splitlines()
    assert len(err_lines) == 1 and named in err_lines[0] and str(checkpoint) in err_lines[0]
    assert "Traceback" not in captured.err


def test_a_checkpoint_whose_networks_do_not_fit_is_refused_naming_the_file(
    run_copy: Path,
) -> None:
    checkpoint = run_copy / CHECKPOINT_NAME
    state = load_checkpoint(checkpoint)
    state["trainer"]["policy"]["net.0.weight"] = torch.zeros(3, 3)
    save_checkpoint(state, checkpoint)
    with pytest.raises(CheckpointError, match="could not be restored") as error:
        train(resume=run_copy, progress=False)
    assert str(checkpoint) in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("seed", "status", "message"),
    [
        (str(10**23), 1, "seed must be a non-negative int, got 100000000000000000000000"),
        (str(2**32), 1, "seed must be a non-negative int, got 4294967296"),
        ("10**23", 2, "--seed must be an int from 0 to 2**32 - 1, got '10**23'"),
        ("1.5", 2, "--seed must be an int from 0 to 2**32 - 1, got '1.5'"),
        ("seven", 2, "--seed must be an int from 0 to 2**32 - 1, got 'seven'"),
    ],
)
def test_a_seed_out_of_range_or_not_an_int_is_one_line_before_any_run_directory(
    seed: str,
    status: int,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path / "outputs"))
    run_dir = tmp_path / "run"
    assert main(["--seed", seed, "--run-dir", str(run_dir), "--minutes", "0.01"]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not run_dir.exists()
    assert main(["--seed", seed, "--minutes", "0.01"]) == status  # (the default run dir)
    capsys.readouterr()
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").iterdir())
    SelfPlayConfig(seed=2**32 - 1)  # the largest seed is taken


def test_a_run_saved_on_a_gpu_resumes_on_a_machine_without_one_with_device_cpu(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_copy
    state = load_checkpoint(run_dir / CHECKPOINT_NAME)
    state["trainer"]["config"]["device"] = "cuda:99"  # (a device no machine has)
    save_checkpoint(state, run_dir / CHECKPOINT_NAME)
    # without --device: the saved device is refused by name, with what to do
    assert main(["--resume", str(run_dir), "--no-progress", "--no-video"]) == 1
    assert "device 'cuda:99' is not available" in capsys.readouterr().err
    # the networks' tensors load on the CPU, and the trainer takes the device given
    trainer = SelfPlayTrainer(config_of_checkpoint(state["trainer"], device="cpu"))
    try:
        load_trainer_state(trainer, state["trainer"])
        assert trainer.updates == 3
    finally:
        trainer.close()
    run = train(
        resume=run_dir, device="cpu", max_updates=4, progress=False, leaderboard=False,
        video=False,
    )  # fmt: skip
    assert run.trainer.config.device == "cpu" and run.trainer.updates == 4


def test_the_command_refuses_to_overwrite_a_run_and_a_missing_checkpoint(
    interrupted_run: tuple[Path, SelfPlayTrainer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, _ = interrupted_run
    assert main(["--run-dir", str(source), "--minutes", "0.01"]) == 1
    assert "--resume" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path)]) == 1
    assert "no checkpoint.pt" in capsys.readouterr().err


@pytest.mark.parametrize("minutes", ["inf", "nan", "-1"])
def test_the_command_refuses_a_budget_that_is_not_a_finite_number_before_writing(
    minutes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (inf and nan used to fail after config.json and the TensorBoard file were written)
    run_dir = tmp_path / "run"
    assert main(["--minutes", minutes, "--run-dir", str(run_dir)]) == 2
    assert "--minutes must be a finite number >= 0" in capsys.readouterr().err
    assert not run_dir.exists()
    with pytest.raises(ValueError, match="minutes must be a finite number"):
        train(fast_config(), minutes=float(minutes), run_dir=run_dir, progress=False)
    assert not run_dir.exists()


def test_the_command_reports_a_run_dir_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    assert main(["--run-dir", str(a_file), "--minutes", "0.01"]) == 1
    assert str(a_file) in capsys.readouterr().err  # (a message, not a traceback)
    assert a_file.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("num_envs", 0),
        ("num_envs", "8"),
        ("num_steps", -1),
        ("update_epochs", 0),
        ("minibatch_size", 0),
        ("snapshot_every", 0),
        ("pool_capacity", 2.0),
        ("eval_matches", True),
        ("seed", -1),
        ("learning_rate", 0.0),
        ("clip_coef", float("nan")),
        ("max_grad_norm", -0.5),
        ("entropy_coef", -0.01),
        ("gamma", 1.5),
        ("gae_lambda", -0.1),
        ("latest_opponent_probability", 2),
        ("policy_averaging", -0.2),
        ("train_on_opponent", 1),
        ("ball_forecast", "yes"),
        ("hidden_sizes", (64, 0)),
        ("hidden_sizes", "64,64"),
        ("pool_sampling", "best"),
        ("activation", "sigmoid"),
        ("activation", None),
    ],
)
def test_a_bad_setting_is_refused_with_its_name(name: str, value: object) -> None:
    with pytest.raises(
        ValueError, match=rf"SelfPlayConfig: {name} must be .*got {re.escape(repr(value))}"
    ):
        SelfPlayConfig(**{name: value})  # type: ignore[arg-type]


def test_explained_variance_is_one_for_a_perfect_prediction_and_refuses_other_shapes() -> None:
    target = torch.tensor([1.0, 2.0, 4.0, 8.0])
    assert explained_variance(target.clone(), target) == pytest.approx(1.0)
    assert explained_variance(torch.full((4,), 3.75), target) == pytest.approx(0.0)
    assert math.isnan(explained_variance(target, torch.ones(4)))  # a constant target
    # ([N, 1] against [N] would broadcast to [N, N] and read -0.67 for a perfect prediction)
    with pytest.raises(ValueError, match=r"same shape, got \[4, 1\] and \[4\]"):
        explained_variance(target.unsqueeze(1), target)


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("gpu", "'gpu' is not a torch device"),
        ("cuda:99", "'cuda:99' is not available"),  # (no machine has 100 GPUs)
        (1.0, "must be a torch.device or a string"),
    ],
)
def test_a_device_this_machine_lacks_is_refused_before_anything_runs(
    device: object, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises((ValueError, TypeError), match=f"SelfPlayConfig: .*{re.escape(message)}"):
        SelfPlayConfig(device=device)  # type: ignore[arg-type]
    if isinstance(device, str):  # the command says so, and writes nothing
        run_dir = tmp_path / "run"
        assert main(["--device", device, "--run-dir", str(run_dir), "--minutes", "0.01"]) == 1
        assert message in capsys.readouterr().err
        assert not run_dir.exists()


def test_settings_are_normalized_and_the_command_reports_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = SelfPlayConfig(hidden_sizes=[32, 16], device=torch.device("cpu"))  # type: ignore[arg-type]
    assert config.hidden_sizes == (32, 16) and config.device == "cpu"
    assert SelfPlayConfig(**dataclasses.asdict(config)) == config
    assert config_of_checkpoint({"config": dataclasses.asdict(config)}) == config
    assert main(["--seed", "-1", "--run-dir", str(tmp_path / "run"), "--minutes", "0.01"]) == 1
    assert "seed must be a non-negative int, got -1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing written for a run that cannot start


def test_a_single_sample_minibatch_gives_a_finite_loss() -> None:
    policy, critic = PongPolicy(), PongCritic()
    one = TrainingBatch(
        obs=torch.randn(1, 10),
        action=torch.tensor([1]),
        log_prob=torch.tensor([-1.1]),
        advantages=torch.tensor([0.3]),
        returns=torch.tensor([0.5]),
        value=torch.tensor([0.5]),
    )
    loss, _ = ppo_loss(policy, critic, one, fast_config())
    assert torch.isfinite(loss)


def test_pooled_snapshots_play_each_match_with_its_own_snapshot() -> None:
    """The batched pool opponent gives every row its own snapshot's action distribution."""
    torch.manual_seed(0)
    snapshots = [PongPolicy() for _ in range(3)]
    for policy in snapshots:  # make the three policies clearly different
        for parameter in policy.parameters():
            parameter.data.normal_(0.0, 1.0)

    def snapshot(k: int) -> Snapshot:
        return Snapshot(id=k, step=0, policy=snapshots[k])

    pooled = PoolOpponent(PongPolicy(), n_copies=4, offset=2)  # copies 2 to 5 of the game
    assignment = {2: 2, 3: 0, 4: 1, 5: 2}
    for env_index, k in assignment.items():
        pooled.start_match(env_index, snapshot(k))
    obs = torch.randn(4, 10)  # the four pool matches, in copy order 2, 3, 4, 5
    draws = torch.stack([pooled(obs) for _ in range(3000)])  # [3000, 4]
    for row, env_index in enumerate(assignment):
        expected = snapshots[assignment[env_index]].distribution(obs[row]).probs.detach()
        frequency = torch.bincount(draws[:, row], minlength=3).float() / len(draws)
        assert torch.allclose(frequency, expected, atol=0.04), (env_index, frequency, expected)
    with pytest.raises(RuntimeError, match="plays 4 matches but got 3"):
        pooled(obs[:3])
    # a new match (copy 2 now plays snapshot 1), then a new snapshot (copy 4 plays a fresh
    # snapshot 3): the rows follow, nothing stale is reused
    pooled.start_match(2, snapshot(1))
    assignment[2] = 1
    for change in (None, (4, 3)):
        if change is not None:
            snapshots.append(PongPolicy())
            for parameter in snapshots[-1].parameters():
                parameter.data.normal_(0.0, 1.0)
            pooled.start_match(change[0], snapshot(change[1]))
            assignment[change[0]] = change[1]
        draws = torch.stack([pooled(obs) for _ in range(3000)])
        for row, env_index in enumerate(assignment):
            expected = snapshots[assignment[env_index]].distribution(obs[row]).probs.detach()
            frequency = torch.bincount(draws[:, row], minlength=3).float() / len(draws)
            assert torch.allclose(frequency, expected, atol=0.04), (env_index, frequency, expected)


def test_pooled_snapshots_credit_each_ended_match_to_its_snapshot() -> None:
    policy = PongPolicy()
    pooled = PoolOpponent(policy, n_copies=2, offset=0)
    pooled.start_match(0, Snapshot(id=7, step=0, policy=policy))  # match 1 of copy 0
    pooled.start_match(1, Snapshot(id=2, step=0, policy=policy))  # match 1 of copy 1
    pooled.start_match(0, Snapshot(id=9, step=0, policy=policy))  # match 1 ended; match 2
    pooled.start_match(0, Snapshot(id=7, step=0, policy=policy))  # match 2 ended; match 3
    assert pooled.ended == [[7, 9], []]  # the ended matches of each copy, oldest first


def test_a_whole_run_credits_every_ended_pool_match_to_the_pool() -> None:
    trainer = SelfPlayTrainer(fast_config(latest_opponent_probability=0.0, seed=1))
    try:
        matches = 0
        for _ in range(6):
            matches += trainer.update().matches
        credited = sum(s.wins + s.draws + s.losses for s in trainer.pool)
        assert matches > 0 and credited == matches  # (the pool is large enough: no eviction)
        assert all(not queue for queue in trainer.pool_opponent.ended)
    finally:
        trainer.close()
