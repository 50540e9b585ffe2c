# %% [markdown]
# # Project — Overestimation in DDPG and TD3
#
# A critic trained by bootstrapping from its own maximum **overestimates**: the actor climbs
# the critic's errors, and the errors that point up are the ones it finds. Fujimoto et al.
# (2018, the TD3 paper, Figure 1) measured it: DDPG's critic predicts more return than its
# policy obtains, and TD3's **clipped double Q** (the smaller of two critics in the target)
# does not. This project measures it again, the way a report would:
#
# - a **study**: DDPG and TD3, each with and without **LayerNorm** in the critic, over
#   several seeds, run on every core of the machine (`rl_mind.study.Study`);
# - the **critic's bias** at each evaluation: the critic's $Q(s_t, a_t)$ at the states and
#   actions of the evaluation episodes, minus the discounted return actually obtained from
#   there;
# - results with **interval estimates** across seeds (bootstrap confidence intervals of the
#   interquartile mean, and the probability that one variant improves on another), not
#   mean ± std bands.
#
# You write two functions: the TD3 target (clipped double Q with target policy smoothing)
# and the bias of one episode. After each one, run the check cell below it.
#
# The environment is `LunarLanderContinuous-v3` (`pip install "rl-mind[box2d,study]"`);
# CI runs this notebook on `CartPoleContinuous-v1` at a tiny budget.

# %%
import dataclasses
import time
from pathlib import Path

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
    check_td3_target,
    run_directory,
    soft_update,
)
from rl_mind.bias import cut_margin
from rl_mind.checks import Case, Check, Probe
from rl_mind.study import (
    Study,
    final_performance,
    plot_final_performance,
    plot_improvement,
    plot_learning_curves,
)

torch.set_num_threads(1)  # small networks: one thread is the fastest (the study runs one per core)


# %% [markdown]
# ## Hyperparameters
#
# One configuration for every run; the study varies `algo` and `layer_norm` and the seed.
# The full profile is sized to finish within 30 minutes on a 2-core laptop: 4 variants × 3
# seeds = 12 runs of 80,000 steps, 6 runs per core, each about 2.5 minutes of one core
# (about 550 steps a second once learning starts): about 15 minutes in all. DDPG's
# overestimation shows within the first 20,000 steps; the rest lets TD3's critic settle. `RL_MIND_FAST_TEST=1` switches to the tiny budgets that CI runs.


# %%
@dataclasses.dataclass
class Config:
    env_name: str = Profile.pick("LunarLanderContinuous-v3", fast_test="CartPoleContinuous-v1")
    seeds: tuple[int, ...] = Profile.pick((0, 1, 2), fast_test=(0, 1))
    total_steps: int = Profile.pick(80_000, fast_test=500)  # environment steps per run
    learning_starts: int = Profile.pick(5_000, fast_test=200)  # uniformly random actions first
    buffer_size: int = 100_000
    batch_size: int = 128
    actor_learning_rate: float = 1e-3
    critic_learning_rate: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005  # soft update rate of the target networks
    exploration_noise: float = 0.1  # std of the Gaussian noise on the behaviour action
    policy_noise: float = 0.2  # TD3: std of the target policy smoothing noise
    noise_clip: float = 0.5
    policy_delay: int = 2  # TD3: critic updates per actor update (DDPG: 1)
    hidden: int = 64
    eval_every: int = Profile.pick(5_000, fast_test=250)
    eval_episodes: int = Profile.pick(5, fast_test=2)
    eval_seed: int = 1_000  # every run is evaluated on the same episodes


config = Config()
print(config)

# %% [markdown]
# ## 1. The critic target: clipped double Q with target policy smoothing
#
# DDPG's target bootstraps from its one target critic at the target actor's action:
#
# $$y = r + \gamma\,(1 - \text{terminated})\,Q_{\bar\phi}(s', \mu_{\bar\theta}(s'))$$
#
# TD3 adds clipped noise to the target action (kept in the action bounds) and takes the
# **smaller** of two target critics:
#
# $$\tilde a' = \text{clip}\big(\mu_{\bar\theta}(s') + \text{clip}(\sigma\,\xi,\,-c,\,c),\;-1,\;1\big),
#   \qquad y = r + \gamma\,(1 - \text{terminated})\,\min_{j=1,2} Q_{\bar\phi_j}(s', \tilde a')$$
#
# `noise` is $\xi$ `[N, action_dim]`, already sampled; $\sigma$ is `policy_noise`, $c$ is
# `noise_clip`. The deterministic action is `actor_target.act(obs)`; a critic is called as
# `q(obs, action)` → `[N]`. No gradients. (DDPG's target is written for you below.)


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


# %%
def ddpg_target(
    actor_target: Actor[Action], q1_target: nn.Module, batch: Transitions[Action], gamma: float
) -> Tensor:
    """DDPG critic targets ``[N]``: one target critic at the target actor's action."""
    with torch.no_grad():
        next_q = q1_target(batch.next_obs, actor_target.act(batch.next_obs))
        return batch.reward + gamma * (1.0 - batch.terminated.float()) * next_q


# %% [markdown]
# ## 2. The bias of one episode
#
# From each state $s_t$ of an evaluation episode of $T$ steps, the discounted return
# actually obtained is
#
# $$G_t = r_t + \gamma\, r_{t+1} + \dots + \gamma^{T-1-t}\, r_{T-1} + \gamma^{T-t}\, V_T$$
#
# where $V_T$ is the value after the last step: 0 if the episode **terminated**; if it was
# **cut** by the time limit, the task would have gone on, and the critic learnt a value
# that goes on (its targets bootstrap at a cut), so the tail is bootstrapped with the
# critic's own value there, `cut_value` $= Q(s_T, \mu(s_T))$.
#
# That bootstrap puts the critic's own error into $G_t$, with weight $\gamma^{T-t}$: near a
# cut the critic would grade itself. So for a cut episode only the states at least
# `margin` $= H$ steps before the cut count, where $\gamma^H \le 0.01$ (the critic's error at
# the cut weighs at most 1% there); a terminated episode counts in full.
#
# Return $Q(s_t, a_t) - G_t$ for the counted states: `[T]` for a terminated episode, the
# first `T - margin` for a cut one. `q_values` and `rewards` are `[T]`, `terminated` a
# bool, `cut_value` a scalar tensor (ignored when terminated). No gradients.
#
# The `Evaluator` measures exactly this when it is given the critic (`critic=q1,
# gamma=...`): it logs the mean over the states of its evaluation episodes as
# `critic_bias`, in TensorBoard, in `evaluations.csv` and in the study's table.


# %%
def _episode(g: torch.Generator, length: int) -> dict[str, Tensor]:
    return {"q_values": torch.randn(length, generator=g) * 3.0 + 5.0,
            "rewards": torch.rand(length, generator=g) * 2.0 - 0.5}  # fmt: skip


# the check of episode_bias: its cases, what each one tests, and the mistakes it names
check_episode_bias = Check(
    "episode_bias",
    cases=[
        Case(
            "a terminated episode",
            "G_t is the discounted sum of the rewards from step t to the end (the reward of "
            "step t itself is not discounted); the bias is Q minus G at every step",
            lambda g: {
                **_episode(g, 6),
                "gamma": 0.9,
                "terminated": True,
                "cut_value": torch.tensor(7.0),
                "margin": 44,
            },  # fmt: skip
        ),
        Case(
            "an episode cut by the time limit",
            "after a cut the return goes on: add gamma^(T-t) * cut_value to G_t, and keep only "
            "the first T - margin states",
            lambda g: {
                **_episode(g, 12),
                "gamma": 0.5,
                "terminated": False,
                "cut_value": torch.tensor(4.0),
                "margin": 7,
            },  # fmt: skip
        ),
    ],
    probes={
        "the value at the cut changes nothing: bootstrap the tail of a cut episode with "
        "gamma^(T-t) * cut_value": Probe(
            lambda inputs: {**inputs, "cut_value": inputs["cut_value"] + 100.0},
            lambda bias, moved: bool(torch.allclose(bias, moved)),
            base=lambda inputs: {**inputs, "terminated": False, "margin": 0},
        ),
    },
)


# %%
def episode_bias(
    q_values: Tensor,
    rewards: Tensor,
    gamma: float,
    terminated: bool,
    cut_value: Tensor,
    margin: int,
) -> Tensor:
    """``Q(s_t, a_t) - G_t`` for the counted states of one episode (no gradients)."""
    ### BEGIN SOLUTION Q - G for the counted states [T] or [T - margin]
    with torch.no_grad():
        following = torch.zeros(()) if terminated else cut_value.float()
        returns = torch.empty_like(rewards)
        for t in range(len(rewards) - 1, -1, -1):
            following = rewards[t] + gamma * following
            returns[t] = following
        counted = len(rewards) if terminated else max(len(rewards) - margin, 0)
        return q_values[:counted] - returns[:counted]
    ### END SOLUTION


# %%
check_episode_bias(episode_bias)

# %% [markdown]
# The margin of a discount: the smallest $H$ with $\gamma^H \le 0.01$ (`rl_mind.bias.cut_margin`,
# the one the Evaluator's measure uses).

# %%
margin = cut_margin(config.gamma)
print(
    f"gamma = {config.gamma}: a cut episode counts its states up to {margin} steps before the cut"
)


# %% [markdown]
# ## The agent and the training function
#
# A study calls the training function once per run as `train(algo=..., layer_norm=...,
# seed=..., run_dir=...)`, in its own process: the grid's keys are its keyword arguments,
# and the study adds `seed` and `run_dir` (the run's folder, where the `Evaluator` writes
# `evaluations.csv` with `logs=True`). The Evaluator is given the first critic, so it
# measures its bias at every evaluation.
#
# DDPG here is TD3 with one critic, no smoothing and an actor update at every critic
# update ("our DDPG" in the TD3 paper); everything else is shared.


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
    """Q(s, a) ``[N]``; with ``layer_norm``, a LayerNorm after each hidden layer."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int, layer_norm: bool) -> None:
        super().__init__()
        norm = nn.LayerNorm if layer_norm else nn.Identity
        self.q = nn.Sequential(
            nn.Linear(obs_dim + action_dim, hidden), norm(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), norm(hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )  # fmt: skip

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return self.q(torch.cat([obs, action], dim=-1)).squeeze(-1)


def train(algo: str, layer_norm: bool, *, seed: int, run_dir: Path) -> None:
    """One run: ``algo`` ("ddpg" or "td3") with or without LayerNorm in the critics."""
    torch.manual_seed(seed)
    env = VecEnv(config.env_name, 1, seed=seed)
    obs_dim, action_dim = env.observation_dim, env.action_dim
    actor = DeterministicActor(obs_dim, action_dim, config.hidden, config.exploration_noise)
    q1, q2 = (Critic(obs_dim, action_dim, config.hidden, layer_norm) for _ in range(2))
    actor_target = DeterministicActor(obs_dim, action_dim, config.hidden, 0.0)
    q1_target, q2_target = (
        Critic(obs_dim, action_dim, config.hidden, layer_norm) for _ in range(2)
    )
    for network, target in [(actor, actor_target), (q1, q1_target), (q2, q2_target)]:
        target.load_state_dict(network.state_dict())
    critics = [q1, q2] if algo == "td3" else [q1]
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=config.actor_learning_rate)
    critic_optimizer = torch.optim.Adam(
        [p for q in critics for p in q.parameters()], lr=config.critic_learning_rate
    )
    policy_delay = config.policy_delay if algo == "td3" else 1
    buffer: ReplayBuffer[Action] = ReplayBuffer(config.buffer_size)
    collector = TransitionCollector(env, actor)
    evaluator = Evaluator(
        config.env_name, every=config.eval_every, run_dir=run_dir, logs=True,
        num_episodes=config.eval_episodes, seed=config.eval_seed, critic=q1, gamma=config.gamma,
    )  # fmt: skip
    update = 0
    while collector.steps < config.total_steps:
        actor.uniform_random = collector.steps < config.learning_starts
        buffer.add(collector.collect(1))
        if collector.steps >= config.learning_starts:
            batch = buffer.sample(config.batch_size)
            if algo == "td3":
                noise = torch.randn_like(batch.action.value)
                target = td3_target(actor_target, q1_target, q2_target, batch, noise,
                                    config.gamma, config.policy_noise, config.noise_clip)  # fmt: skip
            else:
                target = ddpg_target(actor_target, q1_target, batch, config.gamma)
            loss = sum(F.mse_loss(q(batch.obs, batch.action.value), target) for q in critics)
            critic_optimizer.zero_grad()
            loss.backward()
            critic_optimizer.step()
            update += 1
            if update % policy_delay == 0:
                actor_loss = -q1(batch.obs, actor.act(batch.obs)).mean()
                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()
                for network, target_network in zip(
                    [actor, q1, q2], [actor_target, q1_target, q2_target]
                ):
                    soft_update(network, target_network, config.tau)
        evaluator.run_if_needed(collector.steps, actor)
    evaluator.close()
    env.close()


# %% [markdown]
# ## The study
#
# 2 algorithms × 2 critics × the seeds, one process per core. Running the cell again
# resumes the study: only the runs that are missing or failed run.

# %%
start = time.time()
study = Study(
    train,
    grid={"algo": ["ddpg", "td3"], "layer_norm": [False, True]},
    seeds=list(config.seeds),
    directory=run_directory("overestimation"),
)
summary = study.run()
wall_time = time.time() - start
table = study.table()

# %% [markdown]
# ## Reading the results
#
# Each plot says its aggregate and its interval: the **interquartile mean** (IQM) across
# the seeds, the mean of the middle half of the runs, with a 95% **stratified bootstrap
# confidence interval**. With 3 seeds, mean ± std says little: the std of 3 numbers is
# itself a guess, and overlapping bands are not a test.
#
# First the learning curves (evaluation return), then the critic's bias: above 0, the
# critic predicts more than its policy obtains.

# %%
ax = plot_learning_curves(table, "return")

# %%
ax = plot_learning_curves(table, "critic_bias")

# %% [markdown]
# The final performance of each variant (each dot: one seed's last evaluation), and the
# probability that a run of one variant beats a run of another: 0.5 (the dashed line) is
# "no evidence of a difference"; an interval that stays clear of it is evidence.

# %%
ax = plot_final_performance(table, "return")

# %%
pairs = [("algo=td3, layer_norm=False", "algo=ddpg, layer_norm=False"),
         ("algo=td3, layer_norm=True", "algo=ddpg, layer_norm=True"),
         ("algo=ddpg, layer_norm=True", "algo=ddpg, layer_norm=False")]  # fmt: skip
ax = plot_improvement(table, "return", pairs=pairs)

# %% [markdown]
# ## Does DDPG overestimate more than TD3, on every seed?
#
# The bias of a run is the mean of its `critic_bias` over the evaluations of the second half
# of its training (the curve above, averaged once the critic has learnt for a while). For
# each seed and critic, DDPG's against TD3's.

# %%
critic = table["layer_norm"].map({False: "plain", True: "LayerNorm"}).rename("critic")
late = table["step"] > config.total_steps / 2
run_bias = table[late].groupby([critic[late], "seed", "algo"])["critic_bias"].mean().unstack("algo")
run_bias["ddpg - td3"] = run_bias["ddpg"] - run_bias["td3"]
print("the critic's bias of each run (the mean over the second half of its evaluations):")
print(run_bias.round(2).to_string())
final = final_performance(table, "return")
final.index = [label.replace(", layer_norm=False", "").replace(", layer_norm=True", " + LayerNorm")
               for label in final.index]  # fmt: skip
print("\nthe final return (IQM across seeds, 95% bootstrap CI):")
print(final.drop(columns="scores").round(1).to_string())
larger = "yes" if (run_bias["ddpg - td3"] > 0).all() else "no"
positive = "yes" if (run_bias["ddpg"] > 0).all() else "no"
print(
    f"RESULT practical=overestimation env={config.env_name} runs={summary.total} "
    f"done={len(summary.done)} ddpg_bias_larger_on_every_seed={larger} "
    f"ddpg_bias_positive_on_every_seed={positive} wall_time={wall_time:.1f}"
)
