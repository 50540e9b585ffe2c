# %% [markdown]
# # Practical 0a — Dynamic programming on a maze
#
# Before learning from experience, plan with a model. The maze below is a Markov decision
# process whose whole model is known: from each state $s$ (a free cell) each action $a$
# (north, south, east, west) leads to the next state $s'$ with probability
# $P(s' \mid s, a)$ and earns the reward $r(s, a)$; future rewards are discounted by
# $\gamma$. The episode ends with the action taken in the goal (a **terminal state**,
# outlined in red), which earns 1; everything else earns 0.
#
# You write four functions: the one-step lookahead `q_from_v`, `policy_evaluation`,
# `greedy_policy` (the improvement step) and `value_iteration`. After each one, run the
# check cell below it: it prints ✓ when your function passes; otherwise it stops with ✗,
# the case that fails, what is wrong and a hint.
#
# Goal: the optimal values $V^*$, found two ways (policy iteration and value iteration), and
# an agent that walks the maze to the goal by the shortest path.

# %%
import dataclasses
import os
import time

import torch
import torch.nn.functional as F
from torch import Tensor

from rl_mind import (
    Actor,
    Profile,
    check_greedy_policy,
    check_policy_evaluation,
    check_q_from_v,
    check_value_iteration,
    record_video,
    run_directory,
    video_display,
)
from rl_mind.envs import MazeMDPEnv, plot_maze, plot_sweeps

torch.set_num_threads(1)  # small tables: one thread is the fastest


@dataclasses.dataclass
class Config:
    width: int = 10
    height: int = 10
    ratio: float = 0.2  # the fraction of the cells that are walls
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the maze's (the benchmark sets it)
    tolerance: float = 1e-10  # stop sweeping when no value changes by more than this
    video_steps: int = Profile.pick(60, fast_test=10)


config = Config()
print(config)

# %% [markdown]
# ## The maze and its model
#
# `MazeMDPEnv` (registered as `MazeMDP-v0` by `import rl_mind.envs`) exposes its model as
# arrays: `P` `[S, A, S]`, `r` `[S, A]`, `gamma` and the list `terminal_states`. We turn
# them into torch tensors, with the terminal states as a `[S]` bool mask.

# %%
maze = MazeMDPEnv(config.width, config.height, ratio=config.ratio, seed=config.seed)
P = torch.as_tensor(maze.P)  # [S, A, S] float64
r = torch.as_tensor(maze.r)  # [S, A]
gamma = maze.gamma
terminal = torch.zeros(maze.nb_states, dtype=torch.bool)
terminal[maze.terminal_states] = True
print(f"{maze.nb_states} states, {maze.nb_actions} actions, gamma = {gamma}")
ax = plot_maze(maze, title="The maze (walls dark, the goal in red)")

# %% [markdown]
# ## 1. The one-step lookahead
#
# Everything below is built on the value of taking action $a$ in $s$ and then being worth
# $v$:
#
# $$q(s, a) = r(s, a) + \gamma \sum_{s'} P(s' \mid s, a)\, v(s')$$
#
# except in a terminal state, which has no future: there $q(s, a) = r(s, a)$.
# `P @ v` contracts the last axis of `P` with `v`, giving `[S, A]`. Return `q` `[S, A]`.


# %%
def q_from_v(P: Tensor, r: Tensor, gamma: float, terminal: Tensor, v: Tensor) -> Tensor:
    """``q [S, A]``: the one-step lookahead of ``v [S]`` (no future at terminal states)."""
    ### BEGIN SOLUTION q [S, A]: r(s, a) + gamma * the expected next value, no future at terminal states
    future = gamma * (P @ v)
    return r + torch.where(terminal.unsqueeze(1), torch.zeros_like(future), future)
    ### END SOLUTION


# %%
check_q_from_v(q_from_v)


# %% [markdown]
# ## 2. Policy evaluation
#
# A policy is a `[S, A]` tensor of probabilities, `policy[s, a]` $= \pi(a \mid s)$. Its
# value $V^\pi$ solves the Bellman expectation equation
#
# $$V^\pi(s) = \sum_a \pi(a \mid s)\, q^\pi(s, a)$$
#
# Iterative policy evaluation starts from $v = 0$ and sweeps
# $v(s) \leftarrow \sum_a \pi(a \mid s)\, q(s, a)$ (with your `q_from_v`) until the largest
# change of a sweep is below `tolerance`. A sweep may compute the new `v` from the old one
# (synchronous), or update each state in turn from the newest values (in place): both
# converge to $V^\pi$.


# %%
def policy_evaluation(
    P: Tensor, r: Tensor, gamma: float, terminal: Tensor, policy: Tensor, tolerance: float
) -> Tensor:
    """``V^pi [S]`` of ``policy [S, A]``, swept until no value changes by more than ``tolerance``."""
    ### BEGIN SOLUTION the Bellman expectation sweeps, until they converge
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    while True:
        new_v = (policy * q_from_v(P, r, gamma, terminal, v)).sum(dim=1)
        if (new_v - v).abs().max() < tolerance:
            return new_v
        v = new_v
    ### END SOLUTION


# %%
check_policy_evaluation(policy_evaluation)

# %% [markdown]
# The value of the uniformly random policy: far from the goal, a random walk takes long to
# get there, and the discount makes that late reward small.
#
# For a fixed policy the Bellman equation is *linear*, $v = r_\pi + \gamma P_\pi v$ (no
# future at terminal states), so on a maze this small it can also be solved exactly:
# iterative evaluation must agree.

# %%
uniform = torch.full((maze.nb_states, maze.nb_actions), 1.0 / maze.nb_actions, dtype=P.dtype)
v_uniform = policy_evaluation(P, r, gamma, terminal, uniform, config.tolerance)


def exact_values(policy: Tensor) -> Tensor:
    """``V^pi [S]`` by a linear solve of the Bellman expectation equation."""
    r_pi = (policy * r).sum(dim=1)
    P_pi = torch.einsum("sa,sat->st", policy, P) * (~terminal).unsqueeze(1).to(P.dtype)
    return torch.linalg.solve(torch.eye(len(r_pi), dtype=P.dtype) - gamma * P_pi, r_pi)


print(f"largest gap to the exact V: {(v_uniform - exact_values(uniform)).abs().max():.1e}")
ax = plot_maze(maze, v_uniform, title="V of the uniformly random policy")


# %% [markdown]
# ## 3. Policy improvement: the greedy policy
#
# Given values $v$, the greedy policy takes in each state the action of the best
# lookahead, $\arg\max_a q(s, a)$. Return it as a `[S, A]` float tensor of probabilities:
# one 1 per row, at the greedy action (`F.one_hot(..., num_classes).to(v.dtype)`). Ties are
# common (all the goal's actions earn 1, and many cells have two shortest ways to it): on a
# tie, put the 1 on one of the best actions, or split it between them; a row sums to 1.


# %%
def greedy_policy(P: Tensor, r: Tensor, gamma: float, terminal: Tensor, v: Tensor) -> Tensor:
    """The greedy policy ``[S, A]`` (one-hot rows) with respect to ``v [S]``."""
    ### BEGIN SOLUTION the greedy policy: one 1 per row, at the action of the largest q(s, a)
    q = q_from_v(P, r, gamma, terminal, v)
    return F.one_hot(q.argmax(dim=1), q.shape[1]).to(v.dtype)
    ### END SOLUTION


# %%
check_greedy_policy(greedy_policy)

# %% [markdown]
# ## Policy iteration
#
# Evaluate the policy, make it greedy with respect to its own values, and repeat until the
# policy no longer changes: it is then optimal (the policy improvement theorem).

# %%
policy, iteration, stable = uniform, 0, False
while iteration < 100 and not stable:
    iteration += 1
    v_policy = policy_evaluation(P, r, gamma, terminal, policy, config.tolerance)
    improved = greedy_policy(P, r, gamma, terminal, v_policy)
    stable = torch.equal(improved, policy)
    policy = improved
print(f"policy iteration: {'stable' if stable else 'still changing'} after {iteration} evaluations")
ax = plot_maze(maze, v_policy, policy, title=f"Policy iteration ({iteration} evaluations)")


# %% [markdown]
# ## 4. Value iteration
#
# Value iteration skips the full evaluation: each sweep backs up the best action,
#
# $$v(s) \leftarrow \max_a q(s, a)$$
#
# from $v = 0$, until the largest change of a sweep is below `tolerance`, or after
# `max_sweeps` sweeps (to watch it work: with `tolerance = 0` it stops after exactly
# `max_sweeps`). Synchronous or in-place sweeps are both fine.


# %%
def value_iteration(
    P: Tensor, r: Tensor, gamma: float, terminal: Tensor, tolerance: float, max_sweeps: int
) -> Tensor:
    """``V* [S]``: Bellman optimality sweeps from ``v = 0`` until no value changes by more than
    ``tolerance``, or ``max_sweeps`` sweeps."""
    ### BEGIN SOLUTION the Bellman optimality sweeps, until they converge (or max_sweeps)
    v = torch.zeros(P.shape[0], dtype=P.dtype)
    for _ in range(max_sweeps):
        new_v = q_from_v(P, r, gamma, terminal, v).max(dim=1).values
        if (new_v - v).abs().max() < tolerance:
            return new_v
        v = new_v
    return v
    ### END SOLUTION


# %%
check_value_iteration(value_iteration)

# %% [markdown]
# Sweep by sweep, the goal's reward spreads through the maze, one cell further each sweep
# (the colours share one scale).

# %%
sweeps = [1, 2, 4, 8, 16, 32]
fig = plot_sweeps(
    maze,
    [value_iteration(P, r, gamma, terminal, 0.0, n) for n in sweeps],
    titles=[f"{n} sweep{'s' if n > 1 else ''}" for n in sweeps],
)

# %% [markdown]
# At convergence, value iteration and policy iteration agree, and $V^*$ is the exact value
# of its own greedy policy.

# %%
start = time.time()
v_star = value_iteration(P, r, gamma, terminal, config.tolerance, 100_000)
planning_time = time.time() - start
optimal = greedy_policy(P, r, gamma, terminal, v_star)
print(f"value iteration vs policy iteration: largest gap {(v_star - v_policy).abs().max():.1e}")
print(
    f"V* vs the exact value of its greedy policy: {(v_star - exact_values(optimal)).abs().max():.1e}"
)
ax = plot_maze(maze, v_star, optimal, title="V* and the greedy policy")

# %% [markdown]
# ## The agent
#
# An actor that looks its action up in the table: `act(obs)` gets the state indices
# `[B]` (long) and returns the greedy actions `[B]`. `record_video` films one episode.


# %%
class TablePolicy(Actor):
    def __init__(self, policy: Tensor) -> None:
        super().__init__()
        self.actions = policy.argmax(dim=1)  # [S]

    def act(self, obs: Tensor) -> Tensor:
        return self.actions[obs]


run_dir = run_directory("dp")
maze_settings = {"width": config.width, "height": config.height, "ratio": config.ratio,
                 "seed": config.seed}  # fmt: skip
# (record_video's seed is the episode's; the maze's settings go in one dict, kwargs)
video = record_video(
    TablePolicy(optimal), "MazeMDP-v0", run_dir, seed=config.seed,
    max_steps=config.video_steps, kwargs=maze_settings,
)  # fmt: skip
video_display(video)
mean_start_value = v_star[maze.start_states].mean().item()
print(
    f"RESULT practical=dp best_return={mean_start_value:.4f} best_step=0 env_steps=0 "
    f"wall_time={planning_time:.3f}"
)
