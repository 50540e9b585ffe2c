# %% [markdown]
# # Practical 2 — REINFORCE with a baseline on CartPole
#
# REINFORCE is the simplest policy-gradient method. It plays whole episodes with the
# current stochastic policy $\pi_\theta$, computes the **discounted return** $G_t$ that
# followed each step, and increases the log-probability of each action in proportion to
# how much better than expected it turned out: $G_t - b(s_t)$, where the **baseline**
# $b(s_t) = V_\phi(s_t)$ is a learned estimate of the return. The baseline does not bias
# the gradient; it reduces its variance.
#
# You write three functions: `discounted_returns`, `reinforce_loss` and `baseline_loss`.
# After each one, run the check cell below it.
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
    EpisodeCollector,
    Evaluator,
    Profile,
    StochasticAction,
    VecEnv,
    build_mlp,
    check_discounted_returns,
    check_reinforce_loss,
    progress_bar,
    run_directory,
    setup_tensorboard,
)
from rl_mind.checks import Case, Check, Probe

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
    total_steps: int = Profile.pick(500_000, fast_test=1_000)  # environment steps
    num_envs: int = 8
    episodes_per_update: int = 8
    gamma: float = 0.99
    learning_rate: float = 1e-3
    critic_learning_rate: float = 1e-3
    max_grad_norm: float = 1.0
    hidden: int = 64
    eval_every: int = Profile.pick(1_500, fast_test=500)
    eval_episodes: int = Profile.pick(8, fast_test=2)
    target_return: float = 475.0  # stop once the evaluation reaches it


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. Discounted returns
#
# For one episode with rewards $r_0, \dots, r_{T-1}$ (here `rewards[t]` is the reward
# received after the action of step $t$), the return from step $t$ is
#
# $$G_t = \sum_{k=t}^{T-1} \gamma^{k-t}\, r_k = r_t + \gamma\, G_{t+1}, \qquad G_T = 0$$
#
# Compute it backward, from the last step. Input `rewards` `[T]`; return `[T]`.


# %%
def discounted_returns(rewards: Tensor, gamma: float) -> Tensor:
    """The discounted return ``[T]`` from every step of one episode."""
    ### BEGIN SOLUTION the discounted returns G_t [T] of one episode
    returns = torch.zeros_like(rewards)
    future = 0.0
    for t in reversed(range(len(rewards))):
        future = rewards[t] + gamma * future
        returns[t] = future
    return returns
    ### END SOLUTION


# %%
check_discounted_returns(discounted_returns)


# %% [markdown]
# ## 2. The policy-gradient loss with a baseline
#
# The policy gradient is
# $\nabla_\theta J = \mathbb{E}\left[\sum_t \nabla_\theta \log\pi_\theta(a_t|s_t)\,(G_t - V_\phi(s_t))\right]$.
# Its loss, averaged over all the steps of the batch, is
#
# $$L(\theta) = -\frac{1}{N}\sum_i \log\pi_\theta(a_i|s_i)\,\big(G_i - V_\phi(s_i)\big)$$
#
# where the advantage $G_i - V_\phi(s_i)$ is a **constant weight**: the policy loss must not
# train the baseline (the baseline has its own loss, which you write next). Inputs `[N]`:
# `log_prob` and `values` carry gradients, `returns` does not. Return a scalar.


# %%
def reinforce_loss(log_prob: Tensor, returns: Tensor, values: Tensor) -> Tensor:
    """The REINFORCE policy loss (a scalar) with the baseline ``values``."""
    ### BEGIN SOLUTION the policy-gradient loss with a baseline (a scalar)
    advantages = (returns - values).detach()
    return -(log_prob * advantages).mean()
    ### END SOLUTION


# %%
check_reinforce_loss(reinforce_loss)


# %% [markdown]
# ## 3. The baseline's loss
#
# The baseline $V_\phi$ learns to predict the return: its loss is the mean squared error
#
# $$L(\phi) = \frac{1}{N}\sum_i \big(V_\phi(s_i) - G_i\big)^2$$
#
# Inputs `[N]`: `values` carries gradients, `returns` does not. Return a scalar.
#
# The check of this function is declared in the practical itself, in the next cell: its
# cases are built from a seed, and their expected results were computed from the reference
# solution when this notebook was generated.


# %%
# the check of baseline_loss: its cases, what each one tests, and the mistakes it names
check_baseline_loss = Check(
    "baseline_loss",
    cases=[
        Case(
            "a batch of values and returns",
            "the loss is the mean, over the batch, of the squared difference between each "
            "value and its return",
            lambda g: {
                "values": torch.randn(10, generator=g) * 2.0,
                "returns": torch.randn(10, generator=g) * 3.0 + 1.0,
            },
        ),
    ],
    kind="loss",
    grad_inputs=("values",),
    probes={
        "the loss does not grow four times when every error doubles: square each error "
        "(value minus return)": Probe(
            lambda inputs: {**inputs, "returns": 2.0 * inputs["returns"] - inputs["values"]},
            lambda loss, doubled: not torch.allclose(doubled, 4.0 * loss, rtol=1e-4),
        ),
        "the loss does not change when the returns are shuffled: compare each value with "
        "its own return, square each error, then average": Probe(
            lambda inputs: {**inputs, "returns": inputs["returns"].flip(0)},
            lambda loss, shuffled: torch.allclose(shuffled, loss, rtol=1e-4),
        ),
    },
)


# %%
def baseline_loss(values: Tensor, returns: Tensor) -> Tensor:
    """The baseline's loss (a scalar): how far ``values`` are from the ``returns``."""
    ### BEGIN SOLUTION the mean squared error between the values and the returns (a scalar)
    return F.mse_loss(values, returns)
    ### END SOLUTION


# %%
check_baseline_loss(baseline_loss)


# %% [markdown]
# ## The agent
#
# `actor(obs)` samples from a categorical distribution over the two actions; `actor.act`
# takes the most likely action (evaluation). The baseline is a separate network.


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


env = VecEnv(config.env_name, config.num_envs, seed=config.seed)
actor = CategoricalActor(env.observation_dim, env.n_actions, config.hidden)
critic = build_mlp([env.observation_dim, config.hidden, config.hidden, 1], nn.Tanh)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=config.learning_rate)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=config.critic_learning_rate)
collector = EpisodeCollector(env, actor)

run_dir = run_directory("reinforce")
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
# Each iteration plays `episodes_per_update` whole episodes with the current policy, then
# takes one gradient step on the policy and one on the baseline.

# %%
start = time.time()
with progress_bar(config.total_steps, evaluator, target=config.target_return) as bar:
    while collector.steps < config.total_steps:
        episodes = collector.collect(config.episodes_per_update)
        obs = torch.cat([episode.obs for episode in episodes])
        actions = torch.cat([episode.action.value for episode in episodes])
        returns = torch.cat(
            [discounted_returns(episode.reward, config.gamma) for episode in episodes]
        )

        log_prob = actor.distribution(obs).log_prob(actions)
        values = critic(obs).squeeze(-1)
        policy_loss = reinforce_loss(log_prob, returns, values)
        actor_optimizer.zero_grad()
        policy_loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), config.max_grad_norm)
        actor_optimizer.step()

        value_loss = baseline_loss(critic(obs).squeeze(-1), returns)
        critic_optimizer.zero_grad()
        value_loss.backward()
        critic_optimizer.step()

        steps = collector.steps
        writer.add_scalar("losses/policy_loss", policy_loss.item(), steps)
        writer.add_scalar("losses/value_loss", value_loss.item(), steps)
        writer.add_scalar(
            "charts/episode_return",
            sum(episode.cumulated_reward for episode in episodes) / len(episodes),
            steps,
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

# %%
ax = evaluator.plot()  # the mean evaluation return (± std) against training steps

# %%
evaluator.visualize_best(max_steps=Profile.pick(500, fast_test=20))
print(
    f"RESULT practical=reinforce best_return={evaluator.best_reward:.1f} "
    f"best_step={evaluator.best_step} env_steps={collector.steps} wall_time={wall_time:.1f} "
    f"evaluations={len(evaluator.history)}"
)
evaluator.close()
