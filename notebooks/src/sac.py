# %% [markdown]
# # Practical 6 — Soft Actor-Critic (SAC) on continuous CartPole
#
# SAC learns a **stochastic** policy that maximizes the return *and* its own entropy:
# $J(\pi) = \mathbb{E}\left[\sum_t \gamma^t \big(r_t + \alpha\,\mathcal{H}(\pi(\cdot|s_t))\big)\right]$.
# The temperature $\alpha$ sets the price of randomness; it is tuned automatically so that
# the policy's entropy stays near a target. Like TD3, SAC is off-policy (replay buffer),
# uses two critics and the smaller of the two, and slowly moving target critics.
#
# The environment is `CartPoleContinuous-v1` (from `import rl_mind.envs`): CartPole whose
# action is a force in $[-1, 1]$.
#
# You write three functions: `sac_target`, `sac_actor_loss` and `sac_temperature_loss`.
# After each one, run the check cell below it.
#
# Goal: a mean evaluation return of **475** (the maximum is 500).

# %%
import copy
import dataclasses
import math
import os
import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributions import Normal

import rl_mind.envs  # noqa: F401  (registers CartPoleContinuous-v1)
from rl_mind import (
    Action,
    Actor,
    Evaluator,
    Profile,
    ReplayBuffer,
    StochasticAction,
    TransitionCollector,
    Transitions,
    VecEnv,
    build_mlp,
    check_sac_actor_loss,
    check_sac_target,
    check_sac_temperature_loss,
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
# of 3e-3 (larger than the usual 3e-4 to 1e-3) take larger steps, minibatches of 128 make
# each update cheaper, a discount of 0.98 (a horizon of about 50 steps instead of 100)
# keeps the critics' targets smaller and quicker to learn, and the target critics follow
# twice as fast (`tau = 0.01`). An evaluation every 500 steps is about a tenth of the
# steps the fastest seed needs (a learning curve of ten points or more).


# %%
@dataclasses.dataclass
class Config:
    env_name: str = "CartPoleContinuous-v1"
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the benchmark sets it
    total_steps: int = Profile.pick(100_000, fast_test=600)  # environment steps
    buffer_size: int = 100_000
    batch_size: int = 128
    learning_starts: int = Profile.pick(1_000, fast_test=300)
    actor_learning_rate: float = 3e-3
    critic_learning_rate: float = 3e-3
    alpha_learning_rate: float = 3e-3
    gamma: float = 0.98
    tau: float = 0.01  # soft update rate of the target critics
    initial_alpha: float = 0.2
    hidden: int = 64
    eval_every: int = Profile.pick(500, fast_test=300)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. The soft critic target
#
# The value of the next state includes the entropy bonus of the policy there. With an
# action sampled from the *current* policy, $\tilde a' \sim \pi(\cdot|s')$, and the target
# critics $Q_{\bar\phi_1}, Q_{\bar\phi_2}$:
#
# $$y = r + \gamma\,(1 - \text{terminated})\,\Big(\min_{j=1,2} Q_{\bar\phi_j}(s', \tilde a')
#   - \alpha \log\pi(\tilde a'|s')\Big)$$
#
# `actor(obs)` returns a `StochasticAction`: `.value` `[N, 1]` and `.log_prob` `[N]`. A
# critic is called as `q(obs, action)` → `[N]`. `alpha` is a float. No gradients.


# %%
def sac_target(
    actor: Actor[StochasticAction],
    q1_target: nn.Module,
    q2_target: nn.Module,
    batch: Transitions[Action],
    alpha: float,
    gamma: float,
) -> Tensor:
    """Soft TD targets ``[N]`` (no gradients)."""
    ### BEGIN SOLUTION the soft TD targets y [N] (no gradients)
    with torch.no_grad():
        next_action = actor(batch.next_obs)
        next_q = torch.min(
            q1_target(batch.next_obs, next_action.value),
            q2_target(batch.next_obs, next_action.value),
        )
        soft_value = next_q - alpha * next_action.log_prob
        return batch.reward + gamma * (1.0 - batch.terminated.float()) * soft_value
    ### END SOLUTION


# %%
check_sac_target(sac_target)


# %% [markdown]
# ## 2. The actor loss
#
# The policy is pushed toward actions the critics like, and kept random by the entropy
# term. With $\tilde a \sim \pi_\theta(\cdot|s)$ sampled **with gradients** (the
# reparameterization trick: `actor(obs)` does it):
#
# $$L(\theta) = \frac{1}{N}\sum_i \Big(\alpha \log\pi_\theta(\tilde a_i|s_i)
#   - \min_{j=1,2} Q_{\phi_j}(s_i, \tilde a_i)\Big)$$
#
# Return a scalar.


# %%
def sac_actor_loss(
    actor: Actor[StochasticAction], q1: nn.Module, q2: nn.Module, obs: Tensor, alpha: float
) -> Tensor:
    """The SAC policy loss (a scalar)."""
    ### BEGIN SOLUTION the actor loss (a scalar)
    action = actor(obs)
    q = torch.min(q1(obs, action.value), q2(obs, action.value))
    return (alpha * action.log_prob - q).mean()
    ### END SOLUTION


# %%
check_sac_actor_loss(sac_actor_loss)


# %% [markdown]
# ## 3. The temperature loss
#
# $\alpha$ is learned through $\log\alpha$ (so that it stays positive). The loss raises
# $\alpha$ when the policy's entropy $-\log\pi$ is below the target entropy $\bar{\mathcal
# H}$ (here $-\text{action\_dim}$), and lowers it otherwise:
#
# $$L(\log\alpha) = -\frac{1}{N}\sum_i \log\alpha\,\big(\log\pi(\tilde a_i|s_i) + \bar{\mathcal H}\big)$$
#
# where the log-probabilities are constants (this loss trains $\alpha$ only). `log_alpha`
# is a 0-d tensor with gradients, `log_prob` `[N]`. Return a scalar.


# %%
def sac_temperature_loss(log_alpha: Tensor, log_prob: Tensor, target_entropy: float) -> Tensor:
    """The temperature loss (a scalar), trains ``log_alpha`` only."""
    ### BEGIN SOLUTION the temperature loss (a scalar)
    return -(log_alpha * (log_prob + target_entropy).detach()).mean()
    ### END SOLUTION


# %%
check_sac_temperature_loss(sac_temperature_loss)


# %% [markdown]
# ## The agent
#
# A squashed Gaussian policy: $u \sim \mathcal N(\mu(s), \sigma(s))$, $a = \tanh(u)$, and
# $\log\pi(a|s) = \log\mathcal N(u) - \sum \log(1 - \tanh^2 u)$ (the change of variables).
# `actor.act(obs)` is the deterministic $\tanh(\mu(s))$, used for evaluation.


# %%
class SquashedGaussianActor(Actor[StochasticAction]):
    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.body = build_mlp([obs_dim, hidden, hidden], output_activation=nn.ReLU)
        self.mean = nn.Linear(hidden, action_dim)
        self.log_std = nn.Linear(hidden, action_dim)
        self.uniform_random = False  # uniformly random actions (to fill the buffer first)

    def forward(self, obs: Tensor) -> StochasticAction:
        features = self.body(obs)
        log_std = self.log_std(features).clamp(-5.0, 2.0)
        distribution = Normal(self.mean(features), log_std.exp())
        u = distribution.rsample()
        if self.uniform_random:
            u = torch.atanh(torch.rand_like(u) * 1.98 - 0.99)
        # log(1 - tanh(u)^2), written in a numerically stable form
        log_det = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
        log_prob = (distribution.log_prob(u) - log_det).sum(dim=-1)
        return StochasticAction(torch.tanh(u), log_prob)

    def act(self, obs: Tensor) -> Tensor:
        return torch.tanh(self.mean(self.body(obs)))


class Critic(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.q = build_mlp([obs_dim + action_dim, hidden, hidden, 1])

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return self.q(torch.cat([obs, action], dim=-1)).squeeze(-1)


env = VecEnv(config.env_name, 1, seed=config.seed)
actor = SquashedGaussianActor(env.observation_dim, env.action_dim, config.hidden)
q1 = Critic(env.observation_dim, env.action_dim, config.hidden)
q2 = Critic(env.observation_dim, env.action_dim, config.hidden)
q1_target, q2_target = copy.deepcopy(q1), copy.deepcopy(q2)
log_alpha = torch.tensor(math.log(config.initial_alpha), requires_grad=True)
target_entropy = -float(env.action_dim)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=config.actor_learning_rate)
critic_optimizer = torch.optim.Adam(
    [*q1.parameters(), *q2.parameters()], lr=config.critic_learning_rate
)
alpha_optimizer = torch.optim.Adam([log_alpha], lr=config.alpha_learning_rate)
buffer: ReplayBuffer[StochasticAction] = ReplayBuffer(config.buffer_size)
collector = TransitionCollector(env, actor)

run_dir = run_directory("sac")
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
# One environment step, then one update of the critics, the actor and the temperature,
# and the soft update of the target critics. Before `learning_starts`, actions are
# uniformly random (to fill the buffer).

# %%
start = time.time()
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    update = 0
    while collector.steps < config.total_steps:
        actor.uniform_random = collector.steps < config.learning_starts
        buffer.add(collector.collect(1))
        if collector.steps >= config.learning_starts:
            batch = buffer.sample(config.batch_size)
            alpha = log_alpha.exp().item()
            target = sac_target(actor, q1_target, q2_target, batch, alpha, config.gamma)
            q1_loss = F.mse_loss(q1(batch.obs, batch.action.value), target)
            q2_loss = F.mse_loss(q2(batch.obs, batch.action.value), target)
            critic_optimizer.zero_grad()
            (q1_loss + q2_loss).backward()
            critic_optimizer.step()

            actor_loss = sac_actor_loss(actor, q1, q2, batch.obs, alpha)
            actor_optimizer.zero_grad()
            actor_loss.backward()
            actor_optimizer.step()

            with torch.no_grad():
                log_prob = actor(batch.obs).log_prob
            alpha_loss = sac_temperature_loss(log_alpha, log_prob, target_entropy)
            alpha_optimizer.zero_grad()
            alpha_loss.backward()
            alpha_optimizer.step()

            soft_update(q1, q1_target, config.tau)
            soft_update(q2, q2_target, config.tau)
            update += 1
            if update % 100 == 0:
                writer.add_scalar("losses/q1_loss", q1_loss.item(), collector.steps)
                writer.add_scalar("losses/actor_loss", actor_loss.item(), collector.steps)
                writer.add_scalar("losses/alpha", alpha, collector.steps)
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
    f"RESULT practical=sac best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
