"""CartPoleContinuous-v1: registration, spaces, the force scaling, the time limit, rendering."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rl_mind.envs  # noqa: F401  (registers the environments)
from rl_mind.envs import CartPoleContinuousEnv


def test_cartpole_continuous_is_registered_with_box_action_and_passes_check_env():
    env = gymnasium.make("CartPoleContinuous-v1")
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert env.observation_space.shape == (4,)
    assert env.spec is not None and env.spec.max_episode_steps == 500
    check_env(env.unwrapped)
    env.close()


def test_force_is_scaled_to_force_mag_like_discrete_cartpole():
    # a = +1 must reproduce discrete CartPole's action 1 (push right), a = -1 action 0.
    cont, disc = CartPoleContinuousEnv(), gymnasium.make("CartPole-v1").unwrapped
    for a_cont, a_disc in [(1.0, 1), (-1.0, 0)]:
        cont.reset(seed=3)
        disc.reset(seed=3)
        for _ in range(5):
            o1, *_ = cont.step(np.array([a_cont], dtype=np.float32))
            o2, *_ = disc.step(a_disc)
            np.testing.assert_allclose(o1, o2, rtol=1e-6)


def test_zero_force_differs_from_full_push_and_out_of_range_is_clipped():
    env = CartPoleContinuousEnv()
    env.reset(seed=0)
    o_zero, *_ = env.step(np.array([0.0]))
    env.reset(seed=0)
    o_push, *_ = env.step(np.array([1.0]))
    env.reset(seed=0)
    o_big, *_ = env.step(np.array([5.0]))
    assert o_zero[1] != pytest.approx(o_push[1])
    np.testing.assert_allclose(o_big, o_push)


def test_bad_actions_are_clear_errors():
    env = CartPoleContinuousEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan]))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.array([0.1, 0.2]))


def test_time_limit_is_a_truncation_at_500_steps():
    env = gymnasium.make("CartPoleContinuous-v1")
    obs, _ = env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        # A simple PD controller keeps the pole up for the whole episode.
        force = np.clip(10.0 * obs[2] + 2.0 * obs[3] + 0.5 * obs[1] + 0.1 * obs[0], -1, 1)
        obs, _, terminated, truncated, _ = env.step(np.array([force], dtype=np.float32))
        steps += 1
    assert steps == 500 and truncated and not terminated


def test_rgb_array_rendering():
    env = gymnasium.make("CartPoleContinuous-v1", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
    assert frame.shape == (400, 600, 3)
    env.close()
