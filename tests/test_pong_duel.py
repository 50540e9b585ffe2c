"""Pong Duel: rules, symmetry, determinism, the gymnasium / VecEnv / PettingZoo views, rendering."""

import time

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import rl_mind.envs  # noqa: F401  (registers the environments)
from rl_mind import Action, Actor
from rl_mind.envs import (
    PongDuelEnv,
    PongDuelGame,
    PongDuelParallelEnv,
    PongDuelRules,
    PongDuelVectorEnv,
    PredictiveOpponent,
    ScriptedOpponent,
)

ENV_ID = "rl_mind/PongDuel-v0"


def _play(game, policies, steps):
    """Step ``game`` with numpy policies for both players; returns the state history."""
    history = []
    for _ in range(steps):
        obs = game.observe()
        actions = np.stack([policies[0].act_numpy(obs[0]), policies[1].act_numpy(obs[1])])
        result = game.step(actions)
        ended = result.terminated | result.truncated
        history.append(
            (
                game.ball_x.copy(),
                game.ball_y.copy(),
                game.paddle_y.copy(),
                game.score.copy(),
                result,
            )
        )
        if ended.any():
            game.reset_matches(ended)
    return history


# ---------------------------------------------------------------------- rules and symmetry
def test_observation_of_player_1_equals_player_0_view_of_the_mirrored_state():
    game = PongDuelGame(64, seed=0)
    game.reset()
    _play(game, (ScriptedOpponent(), PredictiveOpponent()), 137)
    obs = game.observe()
    np.testing.assert_array_equal(obs[1], game.mirrored().observe()[0])
    np.testing.assert_array_equal(obs[0], game.mirrored().observe()[1])


def test_mirrored_game_plays_the_mirrored_trajectory_exactly():
    game = PongDuelGame(32, seed=1)
    game.reset()
    _play(game, (ScriptedOpponent(), PredictiveOpponent()), 10)  # past the random first serve
    mirror = game.mirrored()
    rng = np.random.default_rng(0)
    for _ in range(400):
        actions = rng.integers(0, 3, (2, 32))
        r = game.step(actions)
        rm = mirror.step(actions[::-1])
        np.testing.assert_array_equal(mirror.ball_x, -game.ball_x)
        np.testing.assert_array_equal(mirror.ball_y, game.ball_y)
        np.testing.assert_array_equal(mirror.paddle_y, game.paddle_y[::-1])
        np.testing.assert_array_equal(rm.reward, -r.reward)
        np.testing.assert_array_equal(rm.outcome, -r.outcome)


def test_same_policy_on_both_sides_wins_about_half_the_matches():
    game = PongDuelGame(1000, seed=123)
    game.reset()
    policy = ScriptedOpponent()
    outcome = np.zeros(1000)
    finished = np.zeros(1000, dtype=bool)
    while not finished.all():
        obs = game.observe()
        result = game.step(np.stack([policy.act_numpy(obs[0]), policy.act_numpy(obs[1])]))
        new = (result.terminated | result.truncated) & ~finished
        outcome[new] = result.outcome[new]
        finished |= new
    wins, losses = (outcome > 0).mean(), (outcome < 0).mean()
    assert abs(wins - losses) < 0.08, (wins, losses)


def test_rewards_are_zero_sum_shaping_per_point_and_one_at_the_end():
    game = PongDuelGame(256, PongDuelRules(point_reward=0.2), seed=4)
    game.reset()
    history = _play(game, (ScriptedOpponent(), PredictiveOpponent()), 1500)
    rewards = np.concatenate([h[4].reward for h in history])
    ends = np.concatenate([h[4].terminated for h in history])
    values = set(np.round(rewards, 6).tolist())
    assert values <= {0.0, 0.2, -0.2, 1.2, -1.2}
    assert np.all(np.abs(np.abs(rewards[ends]) - 1.2) < 1e-9)
    assert np.all(np.abs(rewards[~ends]) <= 0.2 + 1e-9)


def test_a_match_ends_at_three_points_and_the_scorer_is_rewarded():
    game = PongDuelGame(300, seed=5)
    game.reset()
    history = _play(game, (ScriptedOpponent(), ScriptedOpponent()), 1200)
    for _, _, _, score, result in history:
        ended = np.flatnonzero(result.terminated)
        assert np.all(np.max(score[:, ended], axis=0) == 3)
        assert np.all(result.outcome[ended] == np.where(score[0, ended] == 3, 1, -1))
        assert np.all(np.sign(result.reward[ended]) == result.outcome[ended])


def test_time_limit_is_a_truncation_scored_as_a_draw():
    env = PongDuelEnv(opponent="scripted", max_steps=40)
    env.reset(seed=0)
    for step in range(1, 41):
        _, reward, terminated, truncated, info = env.step(0)
        assert not terminated
        assert truncated == (step == 40)
    assert info["outcome"] == 0 and reward == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_vector_env_reports_the_time_limit_as_truncated_not_terminated():
    env = PongDuelVectorEnv(8, "scripted", max_steps=30)
    env.reset(seed=0)
    for _ in range(29):
        _, _, terminated, truncated, _ = env.step(np.zeros(8, dtype=np.int64))
        assert not terminated.any() and not truncated.any()
    _, reward, terminated, truncated, _ = env.step(np.zeros(8, dtype=np.int64))
    assert truncated.all() and not terminated.any() and np.all(reward == 0)


def test_batched_game_and_single_games_play_identical_trajectories():
    n, seed, steps = 6, 42, 700
    batched = PongDuelGame(n, seed=seed)
    batched.reset()
    history = _play(batched, (PredictiveOpponent(), ScriptedOpponent()), steps)
    for i in range(n):
        single = PongDuelGame(1, seed=seed + i)
        single.reset()
        single_history = _play(single, (PredictiveOpponent(), ScriptedOpponent()), steps)
        for (bx, by, py, sc, r), (sx, sy, spy, ssc, sr) in zip(
            history, single_history, strict=True
        ):
            assert bx[i] == sx[0] and by[i] == sy[0]
            np.testing.assert_array_equal(py[:, i], spy[:, 0])
            np.testing.assert_array_equal(sc[:, i], ssc[:, 0])
            assert r.reward[i] == sr.reward[0] and r.terminated[i] == sr.terminated[0]


def test_vector_env_and_single_envs_agree_from_the_same_seed():
    n, seed = 4, 7
    vec = PongDuelVectorEnv(n, "scripted")
    obs, _ = vec.reset(seed=seed)
    singles = [PongDuelEnv("scripted") for _ in range(n)]
    single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    np.testing.assert_array_equal(obs, np.stack(single_obs))
    learner = PredictiveOpponent()
    for _ in range(300):
        actions = learner.act_numpy(obs)
        obs, reward, terminated, truncated, _ = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, te, tr, _ = env.step(actions[i])
            if te or tr:
                env.reset()
            np.testing.assert_array_equal(obs[i], o)
            assert reward[i] == np.float32(r) and terminated[i] == te and truncated[i] == tr


def test_reset_with_a_seed_is_deterministic_and_arrays_are_fresh():
    env = PongDuelVectorEnv(16, "random")
    first, _ = env.reset(seed=3)
    steps = [env.step(np.ones(16, dtype=np.int64)) for _ in range(50)]
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(first, again)
    for old in steps:
        new = env.step(np.ones(16, dtype=np.int64))
        np.testing.assert_array_equal(old[0], new[0])
        np.testing.assert_array_equal(old[1], new[1])
    obs_a = env.step(np.zeros(16, dtype=np.int64))[0]
    obs_b = env.step(np.zeros(16, dtype=np.int64))[0]
    assert not np.shares_memory(obs_a, obs_b)


# ---------------------------------------------------------------------- opponents
def test_scripted_beats_random_in_more_than_90_percent_of_matches():
    from rl_mind import play_matches

    stats = play_matches("scripted", "random", 200, seed=0)
    assert stats.win_rate > 0.9, stats


def test_predictive_loses_to_the_ball_follower_most_of_the_time():
    from rl_mind import play_matches

    stats = play_matches("predictive", "scripted", 200, seed=1)
    assert 0.1 < stats.win_rate < 0.4, stats  # about 22 : 78


class _CountingActor(Actor[Action]):
    """Always 'up'; counts its calls and the batch sizes it saw."""

    def __init__(self):
        super().__init__()
        self.calls: list[int] = []

    def forward(self, obs):
        self.calls.append(len(obs))
        return Action(torch.ones(len(obs), dtype=torch.long))


def test_each_opponent_plays_all_its_copies_in_one_batched_call():
    a, b = _CountingActor(), _CountingActor()
    env = PongDuelVectorEnv(10, "scripted")
    env.set_opponents(a, [0, 2, 4])
    env.set_opponents(b, [1, 3])
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.zeros(10, dtype=np.int64))
    assert a.calls == [3] * 5 and b.calls == [2] * 5
    assert env.opponents[:5] == [a, b, a, b, a] and env.opponents[5:] == ["scripted"] * 5


def test_set_opponents_takes_a_mask_and_refuses_bad_indices_before_scheduling_any():
    env = PongDuelVectorEnv(3, "random")
    # (a bool mask used to be read as the indices 0 and 1)
    env.set_opponents("scripted", np.array([True, False, True]))
    env.set_opponents("predictive", torch.tensor([False, True, False]))
    env.reset(seed=0)
    assert env.opponents == ["scripted", "predictive", "scripted"]
    with pytest.raises(ValueError, match=r"mask of copies must have shape \[3\], got \[2\]"):
        env.set_opponents("random", [True, False])
    with pytest.raises(TypeError, match="copy indices .* or a bool mask, got dtype float64"):
        env.set_opponents("random", [0.0, 1.5])
    with pytest.raises(ValueError, match=r"index 3 out of range \[0, 3\)"):
        env.set_opponents("random", [0, 3])  # (copy 0 is not scheduled either)
    assert env._pending == {}


def test_opponent_changes_only_when_its_copy_match_ends():
    env = PongDuelVectorEnv(4, "random", autoreset_mode=AutoresetMode.SAME_STEP, max_steps=20)
    env.reset(seed=0)
    env.step(np.zeros(4, dtype=np.int64))
    env.set_opponents("scripted", [1])
    for _ in range(18):
        env.step(np.zeros(4, dtype=np.int64))
        assert env.opponents == ["random"] * 4
    _, _, _, truncated, info = env.step(np.zeros(4, dtype=np.int64))  # step 20: all truncated
    assert truncated.all() and info["_final_obs"].all()
    assert env.opponents == ["random", "scripted", "random", "random"]
    results = env.pop_results()
    assert [r.env_index for r in results] == [0, 1, 2, 3]
    assert all(r.opponent == "random" and r.outcome == 0 and r.length == 20 for r in results)
    assert env.pop_results() == []


def test_opponent_sampler_picks_the_opponent_of_every_new_match():
    picks = []

    def sampler(index):
        picks.append(index)
        return "predictive" if index % 2 else "scripted"

    env = PongDuelVectorEnv(4, "random", opponent_sampler=sampler, max_steps=10)
    env.reset(seed=0)
    assert picks == [0, 1, 2, 3]
    assert env.opponents == ["scripted", "predictive", "scripted", "predictive"]
    for _ in range(11):  # next-step mode: the step after the end starts the new match
        env.step(np.zeros(4, dtype=np.int64))
    assert picks == [0, 1, 2, 3, 0, 1, 2, 3]


@pytest.mark.parametrize("sampler", ["random", 3])
def test_an_opponent_sampler_that_is_not_a_function_is_refused_at_once(sampler):
    # (it failed at reset: "'str' object is not callable")
    with pytest.raises(TypeError, match=r"opponent_sampler must be a function env_index -> opp"):
        PongDuelVectorEnv(2, opponent_sampler=sampler)


def test_actor_opponent_uses_its_sampling_behaviour_under_no_grad():
    seen_grad = []

    class Sampler(Actor[Action]):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(10, 3)

        def forward(self, obs):
            seen_grad.append(torch.is_grad_enabled())
            return Action(torch.distributions.Categorical(logits=self.linear(obs)).sample())

        def act(self, obs):  # must not be used by the environment
            raise AssertionError("the opponent must play actor(obs).value")

    env = PongDuelVectorEnv(3, Sampler())
    env.reset(seed=0)
    env.step(np.zeros(3, dtype=np.int64))
    assert seen_grad and not any(seen_grad)


def test_a_batched_callable_opponent_works():
    env = PongDuelVectorEnv(5, lambda obs: torch.full((len(obs),), 2))
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros(5, dtype=np.int64))
    assert np.all(env.game.paddle_y[1] < 0)  # the opponent moved down


# ---------------------------------------------------------------------- bad input
def test_bad_actions_and_unknown_opponents_are_clear_errors():
    game = PongDuelGame(3, seed=0)
    game.reset()
    with pytest.raises(ValueError, match="shape"):
        game.step(np.zeros((3,), dtype=np.int64))
    with pytest.raises(ValueError, match="0 \\(stay\\)"):
        game.step(np.full((2, 3), 3))
    env = PongDuelVectorEnv(3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="0, 1 or 2"):
        env.step(np.array([0, 1, -1]))
    with pytest.raises(ValueError, match="integers"):
        env.step(np.array([0.5, 1.0, 0.0]))
    single = PongDuelEnv()
    single.reset(seed=0)
    with pytest.raises(ValueError, match="one action"):
        single.step(5)
    with pytest.raises(ValueError, match="unknown Pong Duel opponent 'scriptd'"):
        PongDuelVectorEnv(2, "scriptd")
    with pytest.raises(ValueError, match="unknown Pong Duel opponent"):
        gymnasium.make(ENV_ID, opponent="nobody")
    with pytest.raises(ValueError, match="unknown Pong Duel opponent"):
        env.set_opponents("nobody", [0])
    with pytest.raises(TypeError, match="opponent"):
        PongDuelVectorEnv(2, 42)
    with pytest.raises(ValueError, match="autoreset_mode"):
        PongDuelVectorEnv(2, autoreset_mode="sometimes")
    bad = PongDuelVectorEnv(2, lambda obs: torch.full((len(obs),), 7))
    bad.reset(seed=0)
    with pytest.raises(ValueError, match="0 \\(stay\\), 1 \\(up\\) or 2"):
        bad.step(np.zeros(2, dtype=np.int64))


# ---------------------------------------------------------------------- gymnasium, VecEnv, PettingZoo
def test_single_match_env_passes_check_env_and_does_not_reset_itself():
    env = gymnasium.make(ENV_ID, opponent="random")
    check_env(env.unwrapped)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(1)
        done = terminated or truncated
    assert max(info["score"]) == 3 or truncated
    assert max(env.unwrapped.game.score[:, 0]) == max(info["score"])  # state kept, not reset


def test_make_vec_uses_the_native_vector_env_in_both_modes():
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        env = gymnasium.make_vec(ENV_ID, 4, autoreset_mode=mode)
        assert isinstance(env.unwrapped, PongDuelVectorEnv)
        assert env.metadata["autoreset_mode"] is mode
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 10) and obs.dtype == np.float32
        assert env.single_observation_space.contains(obs[0])


@pytest.mark.parametrize("same_step_reset", [True, False])
def test_vecenv_and_collectors_work_on_pong_duel(same_step_reset):
    from rl_mind import RolloutCollector, TransitionCollector, VecEnv

    class Random(Actor[Action]):
        def forward(self, obs):
            return Action(torch.randint(0, 3, (len(obs),)))

    env = VecEnv(
        ENV_ID, 16, seed=0, same_step_reset=same_step_reset, opponent="scripted", max_steps=60
    )
    assert env.gym_unwrapped.metadata["autoreset_mode"] == (
        AutoresetMode.SAME_STEP if same_step_reset else AutoresetMode.NEXT_STEP
    )
    assert isinstance(env.gym_unwrapped, PongDuelVectorEnv)
    if same_step_reset:
        rollout = RolloutCollector(env, Random()).collect(130)
        assert rollout.obs.shape == (130, 16, 10)
        done = rollout.done
        assert done.sum() >= 32  # every copy ends at least twice (60-step limit)
        # next_obs at an ending step is the final observation (no time left), not a reset one
        assert torch.all(rollout.next_obs[done][:, 9] == 0)
        assert torch.all(rollout.obs[1:][done[:-1]][:, 9] == 1)
    else:
        transitions = TransitionCollector(env, Random()).collect(130)
        assert len(transitions) < 130 * 16  # the reset rows were dropped
        assert torch.all(transitions.next_obs[:, 9] < 1)
    env.close()


def test_parallel_view_passes_pettingzoo_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(PongDuelParallelEnv(max_steps=300), num_cycles=400)


def test_parallel_view_is_zero_sum_and_mirrored():
    env = PongDuelParallelEnv()
    obs, _ = env.reset(seed=0)
    total = 0.0
    while env.agents:
        actions = {"player_0": 1, "player_1": 2}
        obs, rewards, _, _, _ = env.step(actions)
        assert rewards["player_0"] == -rewards["player_1"]
        total += rewards["player_0"]
        np.testing.assert_array_equal(obs["player_1"], env.game.mirrored().observe(0)[0])
    assert abs(total) > 1.0  # someone won


# ---------------------------------------------------------------------- rendering
def test_rendered_frame_shows_court_paddles_ball_and_is_fast():
    env = PongDuelEnv(render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(20):
        env.step(1)
    frame = env.render()
    assert frame.shape == (400, 480, 3) and frame.dtype == np.uint8
    blue = (frame[..., 2] > 200) & (frame[..., 0] < 100)
    orange = (frame[..., 0] > 200) & (frame[..., 1] > 100) & (frame[..., 2] < 80)
    white = frame.min(axis=-1) > 230
    assert blue[:, :240].sum() > 100 and orange[:, 240:].sum() > 100 and white.sum() > 20
    start = time.perf_counter()
    for _ in range(20):
        env.render()
    assert (time.perf_counter() - start) / 20 < 0.010


def test_record_video_films_one_match(tmp_path):
    from rl_mind.evaluation import record_video

    class Up(Actor[Action]):
        def forward(self, obs):
            return Action(torch.ones(len(obs), dtype=torch.long))

    path = record_video(Up(), ENV_ID, tmp_path, max_steps=1500, opponent="scripted")
    assert path.exists() and path.stat().st_size > 1000
