# %% [markdown]
# # Practical 1 — Deep Q-Network (DQN) on CartPole
#
# DQN learns the action-value function $Q(s, a)$: the expected discounted return after
# taking action $a$ in state $s$ and acting greedily afterwards. It acts
# $\epsilon$-greedily, stores every transition $(s, a, r, s', \text{terminated})$ in a
# **replay buffer**, and regresses $Q(s, a)$ toward a **TD target** computed with a slowly
# updated copy of the network, the **target network**.
#
# You write two functions: `dqn_td_target` and `dqn_loss`. After each one, run the check
# cell below it: it prints ✓ when your function passes; otherwise it stops with ✗, the case
# that fails, what is wrong and a hint (so "Run All" stops at the first wrong function).
#
# Goal: a mean evaluation return of **475** (the maximum is 500) on `CartPole-v1`.

# %%
import copy
import dataclasses
import os
import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rl_mind import (
    Action,
    Actor,
    Evaluator,
    Profile,
    ReplayBuffer,
    TransitionCollector,
    Transitions,
    VecEnv,
    build_mlp,
    check_dqn_loss,
    check_dqn_td_target,
    progress_bar,
    run_directory,
    setup_tensorboard,
)

torch.set_num_threads(1)  # small networks: one thread is the fastest


# %% [markdown]
# ## Hyperparameters
#
# `Profile.pick(full, fast_test=...)` returns the tiny value when `RL_MIND_FAST_TEST=1` is
# set (CI runs this notebook in seconds that way).


# %%
@dataclasses.dataclass
class Config:
    env_name: str = "CartPole-v1"
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the benchmark sets it
    total_steps: int = Profile.pick(100_000, fast_test=1_000)  # environment steps
    num_envs: int = 4
    steps_per_iteration: int = 64  # per copy: collect 64 x 4 transitions, then train
    gradient_steps: int = Profile.pick(128, fast_test=8)  # per iteration
    buffer_size: int = 100_000
    batch_size: int = 64
    learning_starts: int = Profile.pick(1_000, fast_test=256)
    learning_rate: float = 2.3e-3
    gamma: float = 0.99
    target_update_every: int = 10  # gradient steps between two copies to the target network
    epsilon_start: float = 1.0
    epsilon_end: float = 0.04
    exploration_fraction: float = 0.16  # of total_steps, to anneal epsilon
    hidden: int = 256
    eval_every: int = Profile.pick(400, fast_test=500)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. The TD target
#
# For a transition $(s, a, r, s')$ the target is the reward plus the discounted value of
# the best action in the next state, estimated by the **target network** $Q_{\bar\theta}$:
#
# $$y = r + \gamma\,(1 - \text{terminated})\,\max_{a'} Q_{\bar\theta}(s', a')$$
#
# A terminal $s'$ (the pole fell) has no future: no bootstrap there. A transition cut by
# the time limit is *not* terminal (`terminated` is False and `next_obs` is the true last
# observation), so it bootstraps like any other. The target is a constant for the loss:
# compute it under `torch.no_grad()`.
#
# `batch` is a `Transitions`: `batch.next_obs` `[N, 4]`, `batch.reward` `[N]`,
# `batch.terminated` `[N]` (bool). Return `y` `[N]`.


# %%
def dqn_td_target(target_network: nn.Module, batch: Transitions[Action], gamma: float) -> Tensor:
    """TD targets ``[N]`` (no gradients) for a batch of transitions."""
    ### BEGIN SOLUTION the TD targets y [N], computed without gradients
    with torch.no_grad():
        next_q = target_network(batch.next_obs).max(dim=1).values
        return batch.reward + gamma * (1.0 - batch.terminated.float()) * next_q
    ### END SOLUTION


# %%
check_dqn_td_target(dqn_td_target)


# %% [markdown]
# ## 2. The loss
#
# The Q-network is regressed toward the targets, on the actions that were actually taken
# (`batch.action.value` `[N]`, use `gather`):
#
# $$L(\theta) = \frac{1}{N}\sum_i \left(Q_\theta(s_i, a_i) - y_i\right)^2$$
#
# the mean squared error (`F.mse_loss`), a scalar.


# %%
def dqn_loss(q_network: nn.Module, batch: Transitions[Action], td_target: Tensor) -> Tensor:
    """Mean squared TD error (a scalar) of ``q_network`` on ``batch``."""
    ### BEGIN SOLUTION the mean squared error between Q(s, a) and the targets
    q_taken = q_network(batch.obs).gather(1, batch.action.value.long().unsqueeze(1)).squeeze(1)
    return F.mse_loss(q_taken, td_target)
    ### END SOLUTION


# %%
check_dqn_loss(dqn_loss)


# %% [markdown]
# ## The agent
#
# An $\epsilon$-greedy actor around the Q-network: `actor(obs)` explores (a random action
# with probability $\epsilon$), `actor.act(obs)` is greedy (used for evaluation).


# %%
class EpsilonGreedyActor(Actor[Action]):
    def __init__(self, q_network: nn.Module, n_actions: int) -> None:
        super().__init__()
        self.q_network = q_network
        self.n_actions = n_actions
        self.epsilon = 1.0

    def act(self, obs: Tensor) -> Tensor:
        return self.q_network(obs).argmax(dim=-1)

    def forward(self, obs: Tensor) -> Action:
        greedy = self.act(obs)
        random = torch.randint(self.n_actions, greedy.shape, device=greedy.device)
        explore = torch.rand(greedy.shape, device=greedy.device) < self.epsilon
        return Action(torch.where(explore, random, greedy))


env = VecEnv(config.env_name, config.num_envs, seed=config.seed)
q_network = build_mlp([env.observation_dim, config.hidden, config.hidden, env.n_actions])
target_network = copy.deepcopy(q_network)
actor = EpsilonGreedyActor(q_network, env.n_actions)
optimizer = torch.optim.Adam(q_network.parameters(), lr=config.learning_rate)
buffer: ReplayBuffer[Action] = ReplayBuffer(config.buffer_size)
collector = TransitionCollector(env, actor)

run_dir = run_directory("dqn")
evaluator = Evaluator(
    config.env_name,
    every=config.eval_every,
    run_dir=run_dir,
    num_episodes=config.eval_episodes,
    logs=True,  # TensorBoard files (and evaluations.csv) in run_dir
)
setup_tensorboard(run_dir)
writer = evaluator.writer

# %% [markdown]
# ## Training
#
# Collect `steps_per_iteration` steps in every copy into the buffer, then take
# `gradient_steps` steps on minibatches sampled from it; every `target_update_every`
# gradient steps the target network becomes a copy of the Q-network.

# %%
start = time.time()
gradient_step = 0
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    while collector.steps < config.total_steps:
        progress = collector.steps / (config.exploration_fraction * config.total_steps)
        actor.epsilon = max(
            config.epsilon_end,
            config.epsilon_start + (config.epsilon_end - config.epsilon_start) * progress,
        )
        buffer.add(collector.collect(config.steps_per_iteration))
        if collector.steps >= config.learning_starts:
            for _ in range(config.gradient_steps):
                batch = buffer.sample(config.batch_size)
                td_target = dqn_td_target(target_network, batch, config.gamma)
                loss = dqn_loss(q_network, batch, td_target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                gradient_step += 1
                if gradient_step % config.target_update_every == 0:
                    target_network.load_state_dict(q_network.state_dict())
            writer.add_scalar("losses/td_loss", loss.item(), collector.steps)
        writer.add_scalar("charts/epsilon", actor.epsilon, collector.steps)
        if len(collector.episode_returns) > 0:
            writer.add_scalar(
                "charts/episode_return", collector.episode_returns.mean().item(), collector.steps
            )
        evaluator.run_if_needed(collector.steps, actor)
        bar.update_to(collector.steps)
        if evaluator.best_reward >= config.target_return:  # (-inf before the first evaluation)
            break
wall_time = time.time() - start
env.close()
if not evaluator.history:  # a run shorter than eval_every: evaluate its last actor once
    evaluator.run(collector.steps, actor)

# %% [markdown]
# ## Learning curve and the best actor

# %%
ax = evaluator.plot()  # the mean evaluation return (± std) against training steps

# %%
evaluator.visualize_best(max_steps=Profile.pick(500, fast_test=20))
print(
    f"RESULT practical=dqn best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
