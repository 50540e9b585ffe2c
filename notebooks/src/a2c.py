# %% [markdown]
# # Practical 3 — Advantage Actor-Critic (A2C) on CartPole
#
# A2C runs `B` copies of the environment in lockstep for `T` steps (a **rollout**), then
# updates an actor and a critic from it. Instead of waiting for the end of an episode (as
# REINFORCE does), it **bootstraps**: the return of the last steps of the rollout is
# completed with the critic's estimate $V(s')$ of what would follow.
#
# You write two functions: `nstep_returns` and `a2c_loss`. After each one, run the check
# cell below it.
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
    check_a2c_loss,
    check_nstep_returns,
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
    total_steps: int = Profile.pick(500_000, fast_test=1_000)  # environment steps, all copies
    num_envs: int = 8  # B
    n_steps: int = 8  # T
    gamma: float = 0.99
    learning_rate: float = 1e-3
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    eval_every: int = Profile.pick(800, fast_test=500)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. Bootstrapped returns over a rollout
#
# The rollout has `T` steps of `B` copies (`[T, B]` tensors). With `next_value[t]` $=
# V(s'_t)$, the critic's value of the *true* successor of step $t$ (at an episode end, its
# last observation), the return of step $t$ is computed backward:
#
# $$R_t = r_t + \gamma\,(1 - \text{terminated}_t)\,
#   \begin{cases} V(s'_t) & \text{if the episode ended at } t \text{ or } t = T-1\\
#                 R_{t+1} & \text{otherwise}\end{cases}$$
#
# Three traps: a **terminal** step has no future (no bootstrap); a **truncated** step (time
# limit) is not terminal: bootstrap from $V(s'_t)$; and at any episode end inside the
# rollout the next row is a *new* episode, whose rewards must not leak back. The returns are
# targets: no gradients.


# %%
def nstep_returns(
    reward: Tensor, next_value: Tensor, terminated: Tensor, truncated: Tensor, gamma: float
) -> Tensor:
    """Bootstrapped returns ``[T, B]`` of a rollout (no gradients)."""
    ### BEGIN SOLUTION the bootstrapped returns R_t [T, B] (no gradients)
    with torch.no_grad():
        done = terminated | truncated
        returns = torch.zeros_like(reward)
        future = next_value[-1]
        for t in reversed(range(len(reward))):
            # at an episode end, or the end of the rollout, bootstrap from V(s'_t)
            bootstrap = (
                next_value[t]
                if t == len(reward) - 1
                else torch.where(done[t], next_value[t], future)
            )
            returns[t] = reward[t] + gamma * (~terminated[t]).float() * bootstrap
            future = returns[t]
        return returns
    ### END SOLUTION


# %%
check_nstep_returns(nstep_returns)


# %% [markdown]
# ## 2. Actor and critic losses
#
# The advantage $A_t = R_t - V(s_t)$ says how much better the step went than the critic
# expected. The actor follows the policy gradient weighted by the advantage, a **constant**
# for the actor (the critic must not be trained by the policy loss); the critic regresses
# the returns:
#
# $$L^{\pi} = -\frac{1}{N}\sum_i \log\pi(a_i|s_i)\,A_i, \qquad
#   L^{V} = \frac{1}{N}\sum_i \big(V(s_i) - R_i\big)^2$$
#
# Inputs `[N]`: `log_prob` and `values` carry gradients. Return `(policy_loss, value_loss)`.


# %%
def a2c_loss(log_prob: Tensor, values: Tensor, returns: Tensor) -> tuple[Tensor, Tensor]:
    """``(policy_loss, value_loss)``, two scalars."""
    ### BEGIN SOLUTION the actor and critic losses (two scalars)
    advantages = (returns - values).detach()
    policy_loss = -(log_prob * advantages).mean()
    value_loss = F.mse_loss(values, returns)
    return policy_loss, value_loss
    ### END SOLUTION


# %%
check_a2c_loss(a2c_loss)


# %% [markdown]
# ## The agent
#
# `actor(obs)` samples an action with its log-probability; `actor.act` is greedy. The
# critic is a separate MLP, trained with the same optimizer.


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
optimizer = torch.optim.Adam(parameters, lr=config.learning_rate)
collector = RolloutCollector(env, actor)

run_dir = run_directory("a2c")
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
# One gradient step per rollout, on all its `T × B` steps at once.

# %%
start = time.time()
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    while collector.steps < config.total_steps:
        rollout = collector.collect(config.n_steps)
        with torch.no_grad():
            next_value = critic(rollout.next_obs).squeeze(-1)  # [T, B]
        returns = nstep_returns(
            rollout.reward, next_value, rollout.terminated, rollout.truncated, config.gamma
        )

        batch = rollout.flatten()
        distribution = actor.distribution(batch.obs)
        log_prob = distribution.log_prob(batch.action.value)
        values = critic(batch.obs).squeeze(-1)
        policy_loss, value_loss = a2c_loss(log_prob, values, returns.flatten())
        entropy = distribution.entropy().mean()
        loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
        optimizer.step()

        steps = collector.steps
        if len(collector.episode_returns) > 0:
            writer.add_scalar(
                "charts/episode_return", collector.episode_returns.mean().item(), steps
            )
            writer.add_scalar("losses/policy_loss", policy_loss.item(), steps)
            writer.add_scalar("losses/value_loss", value_loss.item(), steps)
            writer.add_scalar("losses/entropy", entropy.item(), steps)
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

# %%
ax = evaluator.plot()  # the mean evaluation return (± std) against training steps

# %%
evaluator.visualize_best(max_steps=Profile.pick(500, fast_test=20))
print(
    f"RESULT practical=a2c best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
