# %% [markdown]
# # Practical 0b — Q-learning and SARSA on a maze
#
# The same maze as in the dynamic-programming practical, but now the agent does not know
# the model: it learns a table of action values $Q(s, a)$ `[S, A]` from the transitions it
# lives through, by **temporal-difference** updates. It explores $\epsilon$-greedily.
#
# Two algorithms differ in one place, the value of the next state in the target:
#
# - **Q-learning** (off-policy) bootstraps from the best next action:
#   $y = r + \gamma \max_{a'} Q(s', a')$;
# - **SARSA** (on-policy) from the action $a'$ the agent actually takes next:
#   $y = r + \gamma\, Q(s', a')$.
#
# You write `epsilon_greedy`, `q_learning_target`, `sarsa_target` and `td_update`. After
# each one, run the check cell below it.
#
# Goal: both reach the optimal policy: the mean discounted return of their greedy policy
# from the start states equals the optimum's, $\frac{1}{|S_0|}\sum_{s \in S_0} V^*(s)$.

# %%
import dataclasses
import os
import time

import matplotlib.pyplot as plt
import torch
from torch import Tensor

from rl_mind import (
    Actor,
    EnvStep,
    Profile,
    VecEnv,
    check_epsilon_greedy,
    check_q_learning_target,
    check_sarsa_target,
    check_td_update,
    record_video,
    run_directory,
    video_display,
)
from rl_mind.envs import MazeMDPEnv, plot_maze

torch.set_num_threads(1)  # small tables: one thread is the fastest


@dataclasses.dataclass
class Config:
    maze: dict = dataclasses.field(
        default_factory=lambda: {"width": 10, "height": 10, "ratio": 0.2, "seed": 0}
    )
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the benchmark sets it
    num_envs: int = 16  # copies of the maze, stepped together
    total_steps: int = Profile.pick(40_000, fast_test=2_000)  # environment steps, per algorithm
    learning_rate: float = 0.5
    initial_q: float = 1.0  # optimistic (no return exceeds 1): untried actions look good
    epsilon_start: float = 0.5
    epsilon_end: float = 0.0  # greedy at the end: SARSA's policy becomes the optimal one too
    exploration_fraction: float = 0.5  # of total_steps, to anneal epsilon
    eval_every: int = Profile.pick(2_000, fast_test=1_000)  # environment steps
    video_steps: int = Profile.pick(60, fast_test=10)


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## The maze, and the optimum to reach
#
# The agent only sees state indices: a `VecEnv` over `MazeMDP-v0` returns them as `long`
# tensors `[B]`, so that `q[obs]` is the `[B, A]` rows of the table. The model is used
# here for one thing only, to measure the agent: the exact value of a policy (a linear
# solve of its Bellman equation) and the optimal values $V^*$ (value iteration, as in the
# dynamic-programming practical).

# %%
maze = MazeMDPEnv(**config.maze)
gamma = maze.gamma
P, r = torch.as_tensor(maze.P), torch.as_tensor(maze.r)
not_terminal = torch.ones(maze.nb_states, dtype=P.dtype)
not_terminal[maze.terminal_states] = 0.0
start_states = torch.tensor(maze.start_states)


def exact_values(actions: Tensor) -> Tensor:
    """``V [S]`` of the deterministic policy ``actions [S]`` (a linear solve)."""
    states = torch.arange(maze.nb_states)
    P_pi = P[states, actions] * not_terminal.unsqueeze(1)
    return torch.linalg.solve(
        torch.eye(maze.nb_states, dtype=P.dtype) - gamma * P_pi, r[states, actions]
    )


v_star = torch.zeros(maze.nb_states, dtype=P.dtype)
for _ in range(1_000):
    v_star = (r + gamma * not_terminal.unsqueeze(1) * (P @ v_star)).max(dim=1).values
optimal_return = v_star[start_states].mean().item()
print(f"{maze.nb_states} states; the optimal mean discounted return is {optimal_return:.4f}")


def greedy_return(q: Tensor) -> float:
    """The mean discounted return, over the start states, of the greedy policy of ``q``."""
    return exact_values(q.argmax(dim=1))[start_states].mean().item()


ax = plot_maze(maze, v_star, title="V*, the values to learn")

# %% [markdown]
# ## 1. The ε-greedy policy
#
# With probability $\epsilon$ a uniformly random action, otherwise the greedy one,
# $\arg\max_a Q(s, a)$. Return the probabilities `[B, A]` of each action in each
# observed state `obs` `[B]`: every action gets $\epsilon / |A|$, and the greedy one
# $1 - \epsilon$ more.


# %%
def epsilon_greedy(q: Tensor, obs: Tensor, epsilon: float) -> Tensor:
    """Action probabilities ``[B, A]`` of the ε-greedy policy of ``q [S, A]`` in ``obs [B]``."""
    ### BEGIN SOLUTION the probabilities [B, A] of the epsilon-greedy policy
    q_obs = q[obs]
    greedy = torch.nn.functional.one_hot(q_obs.argmax(dim=1), q.shape[1]).to(q.dtype)
    return epsilon / q.shape[1] + (1.0 - epsilon) * greedy
    ### END SOLUTION


# %%
check_epsilon_greedy(epsilon_greedy)


# %% [markdown]
# ## 2. The two targets
#
# `step` is what `VecEnv.step` returned (an `EnvStep`, same-step reset mode): `reward`,
# `next_obs` (the true successor), `terminated` and `truncated`, all `[B]`; `next_action`
# `[B]` is the action taken in `next_obs`. A terminal state has no future (no bootstrap);
# a **truncation** (the 200-step time limit) is not terminal: the state still has a
# future, so it bootstraps like any other step. Where an episode ended, `step.obs` is
# already the first state of the next one: the target uses `step.next_obs`.
#
# $$y = r + \gamma\,(1 - \text{terminated})\,\max_{a'} Q(s', a') \qquad \text{(Q-learning)}$$
#
# $$y = r + \gamma\,(1 - \text{terminated})\,Q(s', a') \qquad \text{(SARSA)}$$


# %%
def q_learning_target(q: Tensor, step: EnvStep, next_action: Tensor, gamma: float) -> Tensor:
    """Q-learning's targets ``[B]`` (``next_action`` is not used: Q-learning is off-policy)."""
    ### BEGIN SOLUTION the Q-learning targets [B]: r + gamma * the best next Q-value, no bootstrap at terminal states
    next_value = q[step.next_obs].max(dim=1).values
    return step.reward + gamma * (~step.terminated) * next_value
    ### END SOLUTION


# %%
check_q_learning_target(q_learning_target)


# %%
def sarsa_target(q: Tensor, step: EnvStep, next_action: Tensor, gamma: float) -> Tensor:
    """SARSA's targets ``[B]``: bootstrap from the next action actually taken."""
    ### BEGIN SOLUTION the SARSA targets [B]: r + gamma * q[next_obs, next_action], no bootstrap at terminal states
    next_value = q[step.next_obs, next_action]
    return step.reward + gamma * (~step.terminated) * next_value
    ### END SOLUTION


# %%
check_sarsa_target(sarsa_target)


# %% [markdown]
# ## 3. The update
#
# Move each visited entry a step of size $\alpha$ (`learning_rate`) toward its target, by
# the TD error:
#
# $$Q(s, a) \leftarrow Q(s, a) + \alpha\,\big(y - Q(s, a)\big)$$
#
# Return a new table (`q.clone()`, then update the copy); the other entries do not move.


# %%
def td_update(
    q: Tensor, obs: Tensor, action: Tensor, target: Tensor, learning_rate: float
) -> Tensor:
    """The table ``[S, A]`` after one TD step on the pairs ``(obs [B], action [B])``."""
    ### BEGIN SOLUTION a new table, each (obs, action) entry moved toward its target
    new_q = q.clone()
    new_q[obs, action] = q[obs, action] + learning_rate * (target - q[obs, action])
    return new_q
    ### END SOLUTION


# %%
check_td_update(td_update)

# %% [markdown]
# ## Training
#
# One loop for both algorithms, on `num_envs` copies of the maze stepped together. At each
# step the agent acts, then picks its next action in `next_obs` (SARSA bootstraps from
# it, and it is the action taken next unless the episode ended), and updates the table.
# No collector here: SARSA's target needs the action the agent takes next, which is chosen
# in this loop, and a tabular agent learns from every single step.
#
# Every `eval_every` steps we measure the greedy policy exactly (with the model).


# %%
def sample(probabilities: Tensor) -> Tensor:
    return torch.multinomial(probabilities, 1).squeeze(1)


def train(td_target, seed: int) -> tuple[Tensor, list[tuple[int, float]]]:
    """Learn a Q-table with ``td_target`` (Q-learning's or SARSA's); returns it and the
    learning curve (steps, mean discounted return of the greedy policy)."""
    env = VecEnv("MazeMDP-v0", config.num_envs, seed=seed, same_step_reset=True, kwargs=config.maze)
    q = torch.full((env.n_states, env.n_actions), config.initial_q)
    curve = [(0, greedy_return(q))]
    obs = env.reset()
    action = sample(epsilon_greedy(q, obs, config.epsilon_start))
    for t in range(1, config.total_steps // config.num_envs + 1):
        steps = t * config.num_envs
        progress = min(1.0, steps / (config.exploration_fraction * config.total_steps))
        epsilon = config.epsilon_start + (config.epsilon_end - config.epsilon_start) * progress
        step = env.step(action)
        next_action = sample(epsilon_greedy(q, step.next_obs, epsilon))
        target = td_target(q, step, next_action, gamma)
        q = td_update(q, obs, action, target, config.learning_rate)
        # after an episode's end, the agent acts in the new episode's first state
        restart = sample(epsilon_greedy(q, step.obs, epsilon))
        action = torch.where(step.done, restart, next_action)
        obs = step.obs
        if steps % config.eval_every < config.num_envs:
            curve.append((steps, greedy_return(q)))
    env.close()
    return q, curve


start = time.time()
q_learning, q_learning_curve = train(q_learning_target, config.seed)
sarsa, sarsa_curve = train(sarsa_target, config.seed)
wall_time = time.time() - start
for name, curve in (("Q-learning", q_learning_curve), ("SARSA", sarsa_curve)):
    print(
        f"{name}: the greedy policy's mean return {curve[-1][1]:.4f} (optimum {optimal_return:.4f})"
    )

# %% [markdown]
# ## Learning curves and what was learned

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, curve in (("Q-learning", q_learning_curve), ("SARSA", sarsa_curve)):
    ax.plot(*zip(*curve), label=name)
ax.axhline(optimal_return, color="gray", linestyle="--", label="optimum")
ax.set_xlabel("environment steps")
ax.set_ylabel("mean discounted return (greedy)")
ax.legend()
plt.show()
fig, axes = plt.subplots(1, 2, figsize=(13, 5))
plot_maze(maze, q_learning, q_learning, ax=axes[0], title="Q-learning: max Q and the greedy policy")
ax = plot_maze(maze, sarsa, sarsa, ax=axes[1], title="SARSA: max Q and the greedy policy")

# %% [markdown]
# ## The agent
#
# The greedy actor of the Q-learning table, filmed by `record_video`.


# %%
class GreedyActor(Actor):
    def __init__(self, q: Tensor) -> None:
        super().__init__()
        self.q = q

    def act(self, obs: Tensor) -> Tensor:
        return self.q[obs].argmax(dim=-1)


run_dir = run_directory("tabular")
# (record_video's seed is the episode's; the maze's settings go in one dict, kwargs)
video = record_video(
    GreedyActor(q_learning), "MazeMDP-v0", run_dir, seed=config.seed,
    max_steps=config.video_steps, kwargs=config.maze,
)  # fmt: skip
video_display(video)
best = min(q_learning_curve[-1][1], sarsa_curve[-1][1])
print(
    f"RESULT practical=tabular best_return={best:.4f} best_step={config.total_steps} "
    f"env_steps={2 * config.total_steps} wall_time={wall_time:.1f} optimum={optimal_return:.4f}"
)
