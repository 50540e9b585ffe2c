# %% [markdown]
# # Practical 5 — DDPG and TD3 on continuous CartPole
#
# DDPG learns a **deterministic** policy $\mu_\theta(s)$ for continuous actions and a critic
# $Q_\phi(s, a)$, off-policy from a replay buffer: the critic is regressed toward a TD
# target, and the actor climbs the critic ($\max_\theta Q_\phi(s, \mu_\theta(s))$). **TD3**
# fixes DDPG's overestimation with three changes: two critics and the smaller of their
# targets (**clipped double Q**), noise on the target action (**target policy smoothing**),
# and fewer actor updates than critic updates (**delayed policy updates**). All targets
# come from slowly moving copies of the networks (**soft updates**).
#
# The environment is `CartPoleContinuous-v1` (from `import rl_mind.envs`): CartPole whose
# action is a force in $[-1, 1]$.
#
# You write three functions: `td3_target`, `td3_actor_loss` and `update_targets`. After each
# one, run the check cell below it.
#
# Goal: a mean evaluation return of **475** (the maximum is 500).

# %%
import copy
import dataclasses
import os
import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import rl_mind.envs  # noqa: F401  (registers CartPoleContinuous-v1)
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
    check_td3_actor_loss,
    check_td3_target,
    check_update_targets,
    progress_bar,
    run_directory,
    setup_tensorboard,
    soft_update,
)

torch.set_num_threads(1)  # small networks: one thread is the fastest


# %% [markdown]
# ## Hyperparameters
#
# `Profile.pick(full, fast_test=...)` returns the tiny value when `RL_MIND_FAST_TEST=1` is
# set (CI runs this notebook in seconds that way).
#
# The values are tuned to solve this task within a minute of one CPU core: learning rates
# of 3e-3 (larger than the usual 1e-3) take larger steps, and minibatches of 128 make each
# update cheaper. An evaluation every 1,000 steps is about a tenth of the steps the
# fastest seed needs (a learning curve of ten points or more).


# %%
@dataclasses.dataclass
class Config:
    env_name: str = "CartPoleContinuous-v1"
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the benchmark sets it
    total_steps: int = Profile.pick(100_000, fast_test=600)  # environment steps
    num_envs: int = 1  # B copies, stepped together
    updates_per_iteration: int = 1  # critic updates after each step of the B copies
    buffer_size: int = 100_000
    batch_size: int = 128
    learning_starts: int = Profile.pick(1_000, fast_test=300)
    actor_learning_rate: float = 3e-3
    critic_learning_rate: float = 3e-3
    gamma: float = 0.99
    tau: float = 0.02  # soft update rate of the target networks
    exploration_noise: float = 0.1  # std of the Gaussian noise on the behaviour action
    policy_noise: float = 0.2  # std of the target policy smoothing noise
    noise_clip: float = 0.5
    policy_delay: int = 2  # critic updates per actor update
    hidden: int = 64
    eval_every: int = Profile.pick(1_000, fast_test=300)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. The critic target: clipped double Q with target policy smoothing
#
# With target networks $\mu_{\bar\theta}$, $Q_{\bar\phi_1}$, $Q_{\bar\phi_2}$, the target
# action is the target actor's deterministic action plus clipped noise, kept in the action
# bounds:
#
# $$\tilde a' = \text{clip}\big(\mu_{\bar\theta}(s') + \text{clip}(\sigma\,\xi,\,-c,\,c),\;-1,\;1\big),
#   \qquad \xi \sim \mathcal{N}(0, 1)$$
#
# and the target uses the **smaller** of the two target critics:
#
# $$y = r + \gamma\,(1 - \text{terminated})\,\min_{j=1,2} Q_{\bar\phi_j}(s', \tilde a')$$
#
# `noise` is $\xi$ `[N, 1]`, already sampled (so that the check is reproducible);
# $\sigma$ is `policy_noise`, $c$ is `noise_clip`. The deterministic action is
# `actor_target.act(obs)`; a critic is called as `q(obs, action)` → `[N]`. No gradients.
#
# (Plain DDPG is the special case: one critic, no smoothing.)


# %%
def td3_target(
    actor_target: Actor[Action],
    q1_target: nn.Module,
    q2_target: nn.Module,
    batch: Transitions[Action],
    noise: Tensor,
    gamma: float,
    policy_noise: float,
    noise_clip: float,
) -> Tensor:
    """TD3 critic targets ``[N]`` (no gradients)."""
    ### BEGIN SOLUTION the TD3 targets y [N] (smoothing, clipped double Q, no gradients)
    with torch.no_grad():
        smoothing = (noise * policy_noise).clamp(-noise_clip, noise_clip)
        next_action = (actor_target.act(batch.next_obs) + smoothing).clamp(-1.0, 1.0)
        next_q = torch.min(
            q1_target(batch.next_obs, next_action), q2_target(batch.next_obs, next_action)
        )
        return batch.reward + gamma * (1.0 - batch.terminated.float()) * next_q
    ### END SOLUTION


# %%
check_td3_target(td3_target)


# %% [markdown]
# ## 2. The actor loss
#
# The actor is trained to maximize the first critic at its own deterministic action (the
# gradient flows from $Q_{\phi_1}$ through the action into $\theta$):
#
# $$L(\theta) = -\frac{1}{N}\sum_i Q_{\phi_1}\big(s_i, \mu_\theta(s_i)\big)$$
#
# Return a scalar.


# %%
def td3_actor_loss(actor: Actor[Action], q1: nn.Module, obs: Tensor) -> Tensor:
    """The deterministic policy-gradient loss (a scalar)."""
    ### BEGIN SOLUTION the actor loss (a scalar)
    return -q1(obs, actor.act(obs)).mean()
    ### END SOLUTION


# %%
check_td3_actor_loss(td3_actor_loss)


# %% [markdown]
# ## 3. Soft updates of the target networks
#
# After each actor update, every target network moves a small step toward its network
# (Polyak averaging), which keeps the targets slowly moving:
#
# $$\bar\phi \leftarrow \tau\,\phi + (1 - \tau)\,\bar\phi$$
#
# `soft_update(source, target, tau)` from `rl_mind` does it for one pair (in place). Update
# every pair `(networks[i], target_networks[i])`.


# %%
def update_targets(networks: list[nn.Module], target_networks: list[nn.Module], tau: float) -> None:
    """Move each target network a fraction ``tau`` toward its network (in place)."""
    ### BEGIN SOLUTION the soft update of every target network (use soft_update)
    for network, target in zip(networks, target_networks):
        soft_update(network, target, tau)
    ### END SOLUTION


# %%
check_update_targets(update_targets)


# %% [markdown]
# ## The agent
#
# `actor.act(obs)` is $\mu_\theta(s) = \tanh(\text{MLP}(s))$, in $[-1, 1]$; `actor(obs)` adds
# Gaussian exploration noise (the behaviour policy). A critic takes the observation and the
# action and returns $Q$ `[N]`.


# %%
class DeterministicActor(Actor[Action]):
    def __init__(self, obs_dim: int, action_dim: int, hidden: int, noise: float) -> None:
        super().__init__()
        self.mu = build_mlp([obs_dim, hidden, hidden, action_dim], output_activation=nn.Tanh)
        self.noise = noise
        self.uniform_random = False  # uniformly random actions (to fill the buffer first)

    def act(self, obs: Tensor) -> Tensor:
        return self.mu(obs)

    def forward(self, obs: Tensor) -> Action:
        action = self.act(obs)
        if self.uniform_random:
            return Action(torch.rand_like(action) * 2.0 - 1.0)
        return Action((action + self.noise * torch.randn_like(action)).clamp(-1.0, 1.0))


class Critic(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.q = build_mlp([obs_dim + action_dim, hidden, hidden, 1])

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return self.q(torch.cat([obs, action], dim=-1)).squeeze(-1)


env = VecEnv(config.env_name, config.num_envs, seed=config.seed)
actor = DeterministicActor(
    env.observation_dim, env.action_dim, config.hidden, config.exploration_noise
)
q1 = Critic(env.observation_dim, env.action_dim, config.hidden)
q2 = Critic(env.observation_dim, env.action_dim, config.hidden)
actor_target, q1_target, q2_target = copy.deepcopy(actor), copy.deepcopy(q1), copy.deepcopy(q2)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=config.actor_learning_rate)
critic_optimizer = torch.optim.Adam(
    [*q1.parameters(), *q2.parameters()], lr=config.critic_learning_rate
)
buffer: ReplayBuffer[Action] = ReplayBuffer(config.buffer_size)
collector = TransitionCollector(env, actor)

run_dir = run_directory("td3")
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
# One step of the `B` copies, then `updates_per_iteration` critic updates; every
# `policy_delay` critic updates, one actor update and the soft updates of the targets. Before `learning_starts`, the actions
# are uniformly random (to fill the buffer).

# %%
start = time.time()
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    update = 0
    while collector.steps < config.total_steps:
        actor.uniform_random = collector.steps < config.learning_starts
        buffer.add(collector.collect(1))
        if collector.steps >= config.learning_starts:
            for _ in range(config.updates_per_iteration):
                batch = buffer.sample(config.batch_size)
                noise = torch.randn_like(batch.action.value)
                target = td3_target(
                    actor_target, q1_target, q2_target, batch, noise,
                    config.gamma, config.policy_noise, config.noise_clip,
                )  # fmt: skip
                q1_loss = F.mse_loss(q1(batch.obs, batch.action.value), target)
                q2_loss = F.mse_loss(q2(batch.obs, batch.action.value), target)
                critic_optimizer.zero_grad()
                (q1_loss + q2_loss).backward()
                critic_optimizer.step()
                update += 1
                if update % config.policy_delay == 0:
                    actor_loss = td3_actor_loss(actor, q1, batch.obs)
                    actor_optimizer.zero_grad()
                    actor_loss.backward()
                    actor_optimizer.step()
                    update_targets(
                        [actor, q1, q2], [actor_target, q1_target, q2_target], config.tau
                    )
                if update % 100 == 0:
                    writer.add_scalar("losses/q1_loss", q1_loss.item(), collector.steps)
                    writer.add_scalar("losses/actor_loss", actor_loss.item(), collector.steps)
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
    f"RESULT practical=td3 best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
