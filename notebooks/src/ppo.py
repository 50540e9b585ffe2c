# %% [markdown]
# # Practical 4 — Proximal Policy Optimization (PPO) on CartPole
#
# PPO is an on-policy actor-critic method. It collects a **rollout** of `T` steps in `B`
# copies of the environment with the current policy, estimates how much better than
# expected each action was (the **advantage**, here with GAE), then takes several epochs of
# minibatch gradient steps on a **clipped surrogate objective** that keeps the new policy
# close to the one that collected the data.
#
# You write three functions: `gae` (the advantages), `ppo_policy_loss` (the clipped
# surrogate) and `ppo_value_loss` (the critic's loss). After each one, run the check cell:
# it tests your function on prepared cases (including episode ends inside the rollout) and
# tells you what is wrong.
#
# Goal: a mean evaluation return of **475** (the maximum is 500) on `CartPole-v1`.

# %%
import dataclasses
import os
import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributions import Categorical

from rl_mind import (
    Actor,
    Evaluator,
    Profile,
    RolloutCollector,
    StochasticAction,
    VecEnv,
    build_mlp,
    check_gae,
    check_ppo_policy_loss,
    check_ppo_value_loss,
    minibatches,
    progress_bar,
    run_directory,
    setup_tensorboard,
)

torch.set_num_threads(1)  # small networks: one thread is the fastest


# %% [markdown]
# ## Hyperparameters
#
# All in one place. `Profile.pick(full, fast_test=...)` returns the full value, or a tiny
# one when the environment variable `RL_MIND_FAST_TEST=1` is set (that is how CI runs this
# notebook in seconds).


# %%
@dataclasses.dataclass
class Config:
    env_name: str = "CartPole-v1"
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))  # the benchmark sets it
    total_steps: int = Profile.pick(150_000, fast_test=1_024)  # environment steps, all copies
    num_envs: int = 8  # B
    n_steps: int = 32  # T, steps per copy in a rollout
    gamma: float = 0.98
    gae_lambda: float = 0.8
    update_epochs: int = Profile.pick(20, fast_test=2)
    batch_size: int = 256  # minibatch size
    learning_rate: float = 1e-3  # annealed linearly to 0
    clip_coef: float = 0.2  # annealed linearly to 0
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    eval_every: int = Profile.pick(375, fast_test=512)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. Generalized advantage estimation
#
# The critic estimates $V(s)$. The **TD error** of step $t$ says how much better the step
# went than the critic expected:
#
# $$\delta_t = r_t + \gamma\,(1 - \text{terminated}_t)\,V(s'_t) - V(s_t)$$
#
# where $s'_t$ is `next_obs[t]`, the *true* successor of $s_t$ (at the end of an episode,
# its last observation). The **GAE** advantage is an exponentially weighted sum of the TD
# errors that follow, within the same episode:
#
# $$A_t = \delta_t + \gamma\lambda\,(1 - \text{done}_t)\,A_{t+1}, \qquad A_T = 0$$
#
# Two traps: an episode may end anywhere inside the rollout (`done = terminated | truncated`:
# the next row belongs to a new episode, so the sum stops); and a **truncated** step (the
# time limit) is not terminal: its TD error still bootstraps from $V(s'_t)$. Only
# `terminated` removes the bootstrap.
#
# Shapes: every input is `[T, B]`; return the advantages `[T, B]`. They are targets: they
# must not carry gradients.


# %%
def gae(
    reward: Tensor,
    value: Tensor,
    next_value: Tensor,
    terminated: Tensor,
    truncated: Tensor,
    gamma: float,
    gae_lambda: float,
) -> Tensor:
    """Advantages ``[T, B]`` from rewards, V(obs), V(next_obs) and the end flags ``[T, B]``."""
    ### BEGIN SOLUTION the GAE advantages [T, B] (no gradients)
    with torch.no_grad():
        not_terminal = (~terminated).float()
        not_done = (~(terminated | truncated)).float()
        delta = reward + gamma * not_terminal * next_value - value
        advantages = torch.zeros_like(reward)
        running = torch.zeros_like(reward[0])
        for t in reversed(range(len(reward))):
            running = delta[t] + gamma * gae_lambda * not_done[t] * running
            advantages[t] = running
        return advantages
    ### END SOLUTION


# %%
check_gae(gae)


# %% [markdown]
# ## 2. The clipped surrogate objective
#
# With the probability ratio $\rho_t(\theta) = \pi_\theta(a_t|s_t) / \pi_{\text{old}}(a_t|s_t)
# = \exp(\log\pi_\theta(a_t|s_t) - \log\pi_{\text{old}}(a_t|s_t))$, PPO maximizes
#
# $$L^{\text{clip}}(\theta) = \mathbb{E}_t\left[\min\left(\rho_t A_t,\;
#   \text{clip}(\rho_t, 1-\epsilon, 1+\epsilon)\,A_t\right)\right]$$
#
# The minimum makes the objective pessimistic: moving the ratio beyond $1\pm\epsilon$ in
# the direction the advantage favours earns nothing more. We *minimize* a loss, so return
# $-L^{\text{clip}}$ (a scalar, averaged over the minibatch). `new_log_prob` carries
# gradients; `old_log_prob` and `advantages` are data.


# %%
def ppo_policy_loss(
    new_log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, clip_coef: float
) -> Tensor:
    """The clipped surrogate loss (a scalar) from ``[N]`` log-probabilities and advantages."""
    ### BEGIN SOLUTION the clipped surrogate loss (a scalar to minimize)
    ratio = torch.exp(new_log_prob - old_log_prob)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef) * advantages
    return -torch.min(unclipped, clipped).mean()
    ### END SOLUTION


# %%
check_ppo_policy_loss(ppo_policy_loss)


# %% [markdown]
# ## 3. The value loss
#
# The critic regresses the returns $R_t = A_t + V_{\text{old}}(s_t)$ (the GAE targets):
#
# $$L^{V} = \mathbb{E}_t\left[(V_\theta(s_t) - R_t)^2\right]$$
#
# the mean squared error (`F.mse_loss`), a scalar.


# %%
def ppo_value_loss(values: Tensor, returns: Tensor) -> Tensor:
    """Mean squared error between ``values`` ``[N]`` (with gradients) and ``returns`` ``[N]``."""
    ### BEGIN SOLUTION the value loss (a scalar)
    return F.mse_loss(values, returns)
    ### END SOLUTION


# %%
check_ppo_value_loss(ppo_value_loss)


# %% [markdown]
# ## The agent
#
# The actor outputs the logits of a categorical distribution: `actor(obs)` samples an
# action and returns it with its log-probability (a `StochasticAction`), `actor.act(obs)` is
# the greedy action used for evaluation. The critic is a separate MLP: $V(s)$.


# %%
class CategoricalActor(Actor[StochasticAction]):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.logits = build_mlp([obs_dim, hidden, hidden, n_actions], nn.Tanh)

    def distribution(self, obs: Tensor) -> Categorical:
        return Categorical(logits=self.logits(obs))

    def forward(self, obs: Tensor) -> StochasticAction:
        distribution = self.distribution(obs)
        action = distribution.sample()
        return StochasticAction(action, distribution.log_prob(action))

    def act(self, obs: Tensor) -> Tensor:
        return self.logits(obs).argmax(dim=-1)


env = VecEnv(config.env_name, config.num_envs, seed=config.seed, same_step_reset=True)
actor = CategoricalActor(env.observation_dim, env.n_actions, config.hidden)
critic = build_mlp([env.observation_dim, config.hidden, config.hidden, 1], nn.Tanh)
parameters = [*actor.parameters(), *critic.parameters()]
optimizer = torch.optim.Adam(parameters, lr=config.learning_rate, eps=1e-5)
collector = RolloutCollector(env, actor)

run_dir = run_directory("ppo")
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
# Each iteration: collect a rollout `[T, B]`, compute $V(s_t)$ and $V(s'_t)$ without
# gradients, the advantages and returns, then `update_epochs` passes over the flattened
# rollout in minibatches. Advantages are normalized per minibatch (a standard trick).

# %%
rollout_size = config.num_envs * config.n_steps
n_iterations = config.total_steps // rollout_size
start = time.time()
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    for iteration in range(n_iterations):
        progress_left = 1.0 - iteration / n_iterations
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate * progress_left
        clip_coef = config.clip_coef * progress_left

        rollout = collector.collect(config.n_steps)
        with torch.no_grad():
            value = critic(rollout.obs).squeeze(-1)  # [T, B]
            next_value = critic(rollout.next_obs).squeeze(-1)  # [T, B]
        advantages = gae(
            rollout.reward,
            value,
            next_value,
            rollout.terminated,
            rollout.truncated,
            config.gamma,
            config.gae_lambda,
        )
        returns = advantages + value

        data = (rollout.flatten(), advantages.flatten(), returns.flatten())
        for _epoch in range(config.update_epochs):
            for batch, batch_advantages, batch_returns in minibatches(data, config.batch_size):
                distribution = actor.distribution(batch.obs)
                new_log_prob = distribution.log_prob(batch.action.value)
                batch_advantages = (batch_advantages - batch_advantages.mean()) / (
                    batch_advantages.std() + 1e-8
                )
                policy_loss = ppo_policy_loss(
                    new_log_prob, batch.action.log_prob, batch_advantages, clip_coef
                )
                value_loss = ppo_value_loss(critic(batch.obs).squeeze(-1), batch_returns)
                entropy = distribution.entropy().mean()
                loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
                optimizer.step()

        steps = collector.steps
        writer.add_scalar("losses/policy_loss", policy_loss.item(), steps)
        writer.add_scalar("losses/value_loss", value_loss.item(), steps)
        writer.add_scalar("losses/entropy", entropy.item(), steps)
        if len(collector.episode_returns) > 0:
            writer.add_scalar(
                "charts/episode_return", collector.episode_returns.mean().item(), steps
            )
        evaluator.run_if_needed(steps, actor)
        bar.update_to(steps)
        if evaluator.best_reward >= config.target_return:  # (-inf before the first evaluation)
            break
wall_time = time.time() - start
env.close()
if not evaluator.history:  # a run shorter than eval_every: evaluate its last actor once
    evaluator.run(collector.steps, actor)

# %% [markdown]
# ## Learning curve and the best actor
#
# The evaluator played `eval_episodes` greedy episodes every `eval_every` steps and kept a
# copy of the best actor.

# %%
ax = evaluator.plot()  # the mean evaluation return (± std) against training steps

# %%
evaluator.visualize_best(max_steps=Profile.pick(500, fast_test=20))
print(
    f"RESULT practical=ppo best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
