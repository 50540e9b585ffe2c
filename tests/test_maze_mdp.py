"""MazeMDP-v0: both spellings, the model against sampled transitions, value iteration to V*,
the episode's end, VecEnv, videos and pictures."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import rl_mind.envs
import rl_mind.mazemdp_env
from rl_mind import Actor, VecEnv, record_video
from rl_mind.envs import MazeMDPEnv, plot_maze, plot_sweeps

matplotlib.use("Agg")

SMALL = {"width": 6, "height": 5, "ratio": 0.2, "seed": 4}
# rl-mind 0.4 (mazemdp 1.3.1) draws these walls for width=height=10, ratio=0.2, seed=0
WALLS_04_SEED_0 = [5, 12, 17, 27, 32, 33, 36, 38, 45, 49, 51, 53, 61, 62, 64, 65, 74, 79, 96, 97]


def exact_values(maze: MazeMDPEnv, policy: np.ndarray) -> np.ndarray:
    """V^pi of a deterministic policy ``[S]``: the linear solve of its Bellman equation
    (terminal states have no future)."""
    n = maze.nb_states
    future = maze.P[np.arange(n), policy].copy()
    future[maze.terminal_states] = 0.0
    return np.linalg.solve(np.eye(n) - maze.gamma * future, maze.r[np.arange(n), policy])


def value_iteration(maze: MazeMDPEnv, tolerance: float = 1e-12) -> np.ndarray:
    not_terminal = np.ones(maze.nb_states)
    not_terminal[maze.terminal_states] = 0.0
    v = np.zeros(maze.nb_states)
    while True:
        new = (maze.r + maze.gamma * not_terminal[:, None] * (maze.P @ v)).max(axis=1)
        if np.abs(new - v).max() < tolerance:
            return new
        v = new


def test_both_spellings_build_the_same_maze_and_it_is_04s() -> None:
    new = gym.make("MazeMDP-v0", **SMALL).unwrapped
    old = gym.make("MazeMDP-v0", kwargs=SMALL).unwrapped
    assert isinstance(old, rl_mind.mazemdp_env.MazeMDPEnv)
    np.testing.assert_array_equal(new.P, old.P)
    np.testing.assert_array_equal(new.r, old.r)
    assert new.terminal_states == old.terminal_states == [new.nb_states - 1]
    default = gym.make("MazeMDP-v0").unwrapped
    assert default.walls == WALLS_04_SEED_0 and default.nb_states == 80 and default.gamma == 0.9
    explicit = MazeMDPEnv(10, 10, walls=WALLS_04_SEED_0)
    np.testing.assert_array_equal(explicit.P, default.P)
    assert gym.make("MazeMDP-v0").spec.max_episode_steps == 200


def test_the_model_matches_sampled_transitions() -> None:
    maze = MazeMDPEnv(**SMALL, hit=True)
    assert maze.P.shape == (maze.nb_states, 4, maze.nb_states) and maze.r.shape == (
        maze.nb_states,
        4,
    )
    np.testing.assert_allclose(maze.P.sum(axis=2), 1.0)
    rng = np.random.default_rng(0)
    counts = np.zeros_like(maze.P)
    for i in range(3000):
        s, a = int(rng.integers(maze.nb_states)), int(rng.integers(4))
        maze.reset(seed=i)
        maze.state = s  # (a test may place the agent anywhere)
        next_state, reward, terminated, truncated, _ = maze.step(a)
        assert reward == maze.r[s, a]
        assert terminated == (s in maze.terminal_states) and not truncated
        counts[s, a, int(next_state)] += 1
    seen = counts.sum(axis=2) > 0
    np.testing.assert_array_equal(counts[seen] / counts.sum(axis=2)[seen][:, None], maze.P[seen])
    assert set(np.unique(maze.r)) == {-0.5, 0.0, 1.0}  # hit=True: bumping costs 0.5


def test_value_iteration_reaches_v_star_of_its_greedy_policy() -> None:
    for maze in (MazeMDPEnv(**SMALL), gym.make("MazeMDP-v0", kwargs=SMALL).unwrapped):
        v = value_iteration(maze)
        not_terminal = np.ones(maze.nb_states)
        not_terminal[maze.terminal_states] = 0.0
        greedy = (maze.r + maze.gamma * not_terminal[:, None] * (maze.P @ v)).argmax(axis=1)
        np.testing.assert_allclose(v, exact_values(maze, greedy), atol=1e-9)
        assert v[maze.terminal_states[0]] == 1.0 and (v > 0).all()


def test_an_episode_ends_with_the_action_taken_in_the_goal() -> None:
    maze = MazeMDPEnv(3, 1, walls=[])  # a corridor: states 0, 1, 2 from west to east
    maze.reset(seed=0)
    maze.state = 0
    assert maze.step(2)[1:3] == (0.0, False)  # east, to 1
    state, reward, terminated, _, _ = maze.step(2)  # east, into the goal: nothing yet
    assert (int(state), reward, terminated) == (2, 0.0, False)
    assert maze.step(0)[1:3] == (1.0, True)  # any action in the goal ends the episode


def test_explicit_mazes_start_states_and_uniform_resets() -> None:
    maze = MazeMDPEnv(4, 4, walls=[5, 6], terminal_states=[0, 13], start_states=[3, 7])
    assert maze.nb_states == 14 and maze.terminal_states == [0, 13]
    assert {int(maze.reset(seed=i)[0]) for i in range(40)} == {3, 7}
    starts = {int(maze.reset(seed=i, options={"uniform": True})[0]) for i in range(400)}
    assert starts == set(range(14))
    default = MazeMDPEnv(4, 4, walls=[5, 6])
    assert 13 not in {int(default.reset(seed=i)[0]) for i in range(200)}  # never in the goal
    assert maze.coord_x[1] == 0 and maze.coord_y[1] == 1  # column 0, row 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"walls": [1], "ratio": 0.2}, ValueError, "either walls"),
        ({"walls": [99]}, ValueError, r"walls must lie in \[0, 16\)"),
        ({"walls": [1, 1]}, ValueError, "duplicates"),
        ({"ratio": 1.5}, ValueError, r"ratio must be a number in \[0, 1\)"),
        ({"gamma": 0.0}, ValueError, r"gamma must be a number in \(0, 1\]"),
        ({"width": 2.5}, TypeError, "width must be an int"),
        ({"hit": "yes"}, TypeError, "hit must be a bool"),
        ({"terminal_states": [0]}, ValueError, "terminal_states needs explicit walls"),
        ({"walls": [1, 4]}, ValueError, "cannot be reached"),  # state 0 walled in
        ({"render_mode": "human"}, ValueError, "render_mode"),
        ({"kwargs": {"width": 4, "colour": 1}}, TypeError, "unknown maze arguments"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        MazeMDPEnv(**{"width": 4, "height": 4, **kwargs})


def test_bad_actions_and_steps_before_reset_are_refused() -> None:
    maze = MazeMDPEnv(**SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        maze.step(0)
    maze.reset(seed=0)
    with pytest.raises(ValueError, match="expected an action"):
        maze.step(4)


def test_check_env_vecenv_and_truncation() -> None:
    check_env(gym.make("MazeMDP-v0", render_mode="rgb_array", **SMALL).unwrapped)
    with VecEnv("MazeMDP-v0", 3, seed=0, same_step_reset=True, kwargs=SMALL) as env:
        assert env.n_states == MazeMDPEnv(**SMALL).nb_states
        obs = env.reset()
        assert obs.dtype == torch.long and obs.shape == (3,)
        q = torch.zeros(env.n_states, env.n_actions)
        assert q[obs].shape == (3, 4)
        # always north: an agent that never reaches the goal is cut at 200 steps
        for _ in range(200):
            step = env.step(torch.zeros(3, dtype=torch.long))
            assert not step.terminated.any()
        assert step.truncated.all()


class Greedy(Actor):  # type: ignore[type-arg]
    def __init__(self, policy: np.ndarray) -> None:
        super().__init__()
        self.policy = torch.as_tensor(policy)

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy[obs]


def test_a_video_of_an_agent_walking_the_maze(tmp_path: Path) -> None:
    maze = MazeMDPEnv(**SMALL)
    not_terminal = np.ones(maze.nb_states)
    not_terminal[maze.terminal_states] = 0.0
    v = value_iteration(maze)
    greedy = (maze.r + maze.gamma * not_terminal[:, None] * (maze.P @ v)).argmax(axis=1)
    path = record_video(Greedy(greedy), "MazeMDP-v0", tmp_path, seed=0, kwargs=SMALL)
    assert path.suffix == ".mp4" and path.stat().st_size > 0
    env = gym.make("MazeMDP-v0", render_mode="rgb_array", **SMALL)
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (5 * 32, 6 * 32, 3)
    blue = (frame == np.array([30, 110, 220], dtype=np.uint8)).all(axis=2)
    state = env.unwrapped.state
    row, column = env.unwrapped.cells[state]
    assert blue[row * 32 : (row + 1) * 32, column * 32 : (column + 1) * 32].any()  # the agent
    assert blue.sum() == blue[row * 32 : (row + 1) * 32, column * 32 : (column + 1) * 32].sum()


def test_pictures_values_arrows_walls_goal_and_sweeps() -> None:
    maze = MazeMDPEnv(**SMALL)
    v = value_iteration(maze)
    policy = np.zeros(maze.nb_states, dtype=np.int64)
    ax = plot_maze(maze, torch.as_tensor(v), policy, title="V*")
    (arrows,) = ax.collections
    assert len(arrows.get_offsets()) == maze.nb_states - 1  # none on the goal
    assert ax.get_title() == "V*" and len(ax.images) == 1
    shown = ax.images[0].get_array()
    assert shown.mask.sum() == len(maze.walls)  # walls are masked (drawn dark)
    assert sum(t.get_text() == "1.00" for t in ax.texts) == 1  # the goal's value, written
    q = np.random.default_rng(0).normal(size=(maze.nb_states, 4))
    plot_maze(maze, q, q)  # Q-values: their max, their argmax
    fig = plot_sweeps(maze, [v * 0, v / 2, v], titles=["0", "1", "2"])
    assert len(fig.axes) == 3
    assert {tuple(a.images[0].get_clim()) for a in fig.axes} == {(0.0, 1.0)}  # one scale
    maze.draw_v_pi(v, policy, title="0.4's spelling")
    maze.draw_v(v)
    maze.draw_pi(q)
    with pytest.raises(TypeError, match="record_video"):
        maze.draw_v(v, recorder=object())
    with pytest.raises(ValueError, match=r"values must be \[24\]"):
        plot_maze(maze, np.zeros(3))
    with pytest.raises(ValueError, match="actions must be in 0..3"):
        plot_maze(maze, policy=np.full(maze.nb_states, 7))
    with pytest.raises(TypeError, match="expected a MazeMDP environment"):
        plot_maze(gym.make("CartPole-v1"))
    assert rl_mind.envs.ACTION_NAMES == ("north", "south", "east", "west")
    plt.close("all")


def test_0_4s_other_drawing_and_its_retired_methods() -> None:
    maze = gym.make("MazeMDP-v0", kwargs={"width": 5, "height": 4, "ratio": 0.2, "seed": 3})
    inner = maze.unwrapped
    assert isinstance(inner, MazeMDPEnv)
    v = value_iteration(inner)
    inner.draw_v_pi_a(v, np.zeros(inner.nb_states, np.int64), agent_pos=0, title="0.4")
    assert plt.gca().get_title() == "0.4"
    plt.close("all")
    with pytest.raises(AttributeError, match=r"set_timeout .*max_episode_steps"):
        inner.set_timeout(10)
    with pytest.raises(AttributeError, match=r"sample_transition .*env\.P\[s, a\]"):
        inner.sample_transition()
    with pytest.raises(AttributeError, match="plot_maze"):
        inner.set_render_func(print)
    with pytest.raises(AttributeError, match="has no attribute 'not_a_method'"):
        inner.not_a_method  # noqa: B018


def test_an_unregistered_maze_says_to_import_rl_mind_envs() -> None:
    import subprocess
    import sys

    # (a fresh interpreter: importing rl_mind alone registers no environment)
    code = (
        "import rl_mind\n"
        "for make in (lambda: rl_mind.VecEnv('MazeMDP-v0', 1),\n"
        "             lambda: rl_mind.record_video(None, 'MazeMDP-v0', '.')):\n"
        "    try:\n"
        "        make()\n"
        "    except ValueError as error:\n"
        "        print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().split("\n")
    assert len(lines) == 2, done.stdout + done.stderr
    for line in lines:
        assert "unknown environment id 'MazeMDP-v0'" in line
        assert "registered by `import rl_mind.envs`" in line
