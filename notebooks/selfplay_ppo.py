# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reference practical — PPO learns Pong Duel by self-play
#
# In every practical so far the agent faced a fixed world: CartPole does not adapt to
# you. In a **two-player game** the hardest part of the world is the *other player*. Who
# should our agent train against? A scripted bot only teaches it to beat that bot. A
# human is too slow. **Self-play** answers: against *itself* — and against its own past.
#
# This notebook is complete (no gaps): it is the reference that `rl-mind selfplay` runs as a
# script. Every piece of the package is at work:
#
# | piece | here |
# |---|---|
# | `VecEnv` (same-step reset) over the natively vectorized game | 128 matches stepped at once |
# | `RolloutCollector` | `[T, B]` rollouts of the learner |
# | GAE with the truncation bootstrap, clipped PPO loss, `minibatches` | the update |
# | `OpponentPool` (snapshots, prioritized sampling) | who the learner plays |
# | `play_matches`, `round_robin`, `bradley_terry` | evaluation and ratings |
# | TensorBoard, `progress_bar`, `record_video`, `video_display` | watching it learn |
#
# With the full profile the training takes 5 minutes on a laptop CPU and ends well above
# the scripted bot. (CI runs this notebook with `RL_MIND_FAST_TEST=1`, tiny budgets: the
# code runs, nothing is learned.)

# %%
# On Colab or a fresh machine: %pip install rl-mind
import copy
import dataclasses
import math
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import Tensor, nn
from torch.distributions import Categorical
from torch.utils.tensorboard import SummaryWriter

import rl_mind.envs  # noqa: F401  (registers rl_mind/PongDuel-v0: an explicit opt-in)
from rl_mind import (
    Actor,
    OpponentPool,
    Profile,
    Rollout,
    RolloutCollector,
    StochasticAction,
    VecEnv,
    bradley_terry,
    build_mlp,
    minibatches,
    play_matches,
    progress_bar,
    record_video,
    round_robin,
    run_directory,
    setup_tensorboard,
    video_display,
)
from rl_mind.envs import PongDuelEnv

torch.set_num_threads(1)  # small networks: a second thread halves the throughput

# %% [markdown]
# ## Hyperparameters
#
# CleanRL style: every number in one place. `Profile.pick(full, fast_test=...)` gives the
# tiny CI budgets when `RL_MIND_FAST_TEST=1`.


# %%
@dataclasses.dataclass
class Config:
    seed: int = int(os.environ.get("RL_MIND_SEED", "0"))
    minutes: float = Profile.pick(5.0, fast_test=0.1)  # training-time budget
    num_envs: int = Profile.pick(128, fast_test=8)  # B parallel matches
    num_steps: int = Profile.pick(128, fast_test=32)  # T steps per rollout
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    update_epochs: int = Profile.pick(4, fast_test=2)
    minibatch_size: int = Profile.pick(4096, fast_test=128)
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    latest_probability: float = 0.5  # opponent = the live learner, else a pool snapshot
    snapshot_every: int = Profile.pick(10, fast_test=2)  # updates
    pool_capacity: int = 64
    policy_averaging: float = 0.2  # the agent averages the learner's recent weights
    eval_every_seconds: float = Profile.pick(30.0, fast_test=3.0)
    eval_matches: int = Profile.pick(100, fast_test=4)
    leaderboard_snapshots: int = Profile.pick(8, fast_test=3)
    leaderboard_matches: int = Profile.pick(64, fast_test=2)
    video_max_steps: int = Profile.pick(1500, fast_test=60)


config = Config()
torch.manual_seed(config.seed)
print(config)

# %% [markdown]
# ## 1. The game: Pong Duel
#
# Two paddles, one ball, first to 3 points; a match is cut after 1,500 steps (a
# **truncation**, scored as a draw). Actions: 0 stay, 1 up, 2 down. Reward: +1 / −1 at the
# end of a match, plus ±0.2 per point (zero-sum shaping, which speeds learning up).
#
# The observation (10 floats) is given **from the acting player's point of view,
# mirrored** so that "me" is always on the left. This is what makes self-play simple: one
# policy plays either side, and the same network can be both players of a match.
#
# Three bots ship with the game: `random`, `scripted` (follows the ball) and `predictive`
# (goes where the ball will cross its line). The predictive bot *loses* to the scripted one,
# yet it is the harder opponent for a learned agent: strength in games is **not
# transitive** (think rock–paper–scissors). Keep that in mind when we rate players.

# %%
env = PongDuelEnv(opponent="scripted", render_mode="rgb_array")
obs, _ = env.reset(seed=config.seed)
for _ in range(30):
    obs, *_ = env.step(env.action_space.sample())
plt.figure(figsize=(5, 4))
plt.imshow(env.render())
plt.axis("off")
plt.title("Pong Duel: blue (left) is the learner, orange the opponent")
plt.show()
env.close()
print("observation:", np.round(obs, 2))
print(
    "scripted vs predictive:", play_matches("scripted", "predictive", config.eval_matches, seed=0)
)

# %% [markdown]
# ## 2. What the networks see, actor and critic
#
# The key question of Pong is *where will the ball cross my line?* The answer is simple
# geometry: between bounces the ball flies straight, and each wall mirrors it, so the
# crossing height is the straight-line height **folded** back into the court (a triangle
# wave). A small MLP would need many samples to learn that fold from the 10 raw numbers, so
# we hand it over: the networks read the observation followed by a **forecast** (where the
# ball will cross the paddle line it flies towards, that height relative to our paddle,
# and the steps until then). This is feature engineering, and it is worth it: in 10-minute
# runs of `rl-mind selfplay`, the agent wins 9 matches out of 10 against `scripted` after
# 1.5–2 minutes instead of 7–10, and 61–65% against `predictive` at the end instead of
# 44–49% (measured with 64-unit networks).
# (`rl-mind selfplay` does the same; `SelfPlayConfig(ball_forecast=False)` turns it off.)


# %%
FACE_X, WALL, MAX_SPEED = 0.9 - 0.025, 1 - 0.025, 0.25  # from the rules of the game


def with_forecast(obs: Tensor) -> Tensor:
    """obs [..., 10] -> [..., 13]: the observation, then where the ball crosses next."""
    ball_x, ball_y = obs[..., 2], obs[..., 3]
    vx, vy = obs[..., 4] * MAX_SPEED, obs[..., 5] * MAX_SPEED  # (velocities come scaled)
    # distance to the line the ball flies towards: ours (x = -FACE_X) if vx < 0
    distance = torch.where(vx < 0, ball_x + FACE_X, FACE_X - ball_x).clamp(min=0.0)
    steps = distance / vx.abs().clamp(min=1e-3)
    folded = torch.remainder(ball_y + vy * steps + WALL, 4 * WALL)  # unfold the bounces
    y = torch.where(folded > 2 * WALL, 4 * WALL - folded, folded) - WALL
    forecast = torch.stack([y, y - obs[..., 0], (steps / 40).clamp(max=2.0)], dim=-1)
    return torch.cat([obs, forecast], dim=-1)


# %% [markdown]
# Two separate tanh MLPs, 13 → 96 → 96, with orthogonal initialisation (the output layer of
# the policy scaled by 0.01, so that the first policy is almost uniform). The actor is an
# `Actor[StochasticAction]`: calling it samples an action and returns its log-probability
# (what the collector records), `act` takes the most likely action (used for the video).
#
# Why 96 units? The size of the networks decides how long self-play keeps improving. With
# 64 units the snapshots stopped getting stronger after about 8 minutes of a 10-minute run
# (in two runs of four, the last one no longer beat those of the minutes before); with 128
# every update costs twice as much, and 10 minutes were not enough to catch up against
# `predictive`.


# %%
def orthogonal_init(mlp: nn.Sequential, output_gain: float) -> nn.Sequential:
    linears = [m for m in mlp if isinstance(m, nn.Linear)]
    for i, layer in enumerate(linears):
        nn.init.orthogonal_(layer.weight, output_gain if i == len(linears) - 1 else math.sqrt(2))
        nn.init.zeros_(layer.bias)
    return mlp


class Policy(Actor[StochasticAction]):
    def __init__(self) -> None:
        super().__init__()
        self.net = orthogonal_init(build_mlp([13, 96, 96, 3], activation=nn.Tanh), 0.01)

    def distribution(self, obs: Tensor) -> Categorical:
        return Categorical(logits=self.net(with_forecast(obs)))

    def forward(self, obs: Tensor) -> StochasticAction:
        distribution = self.distribution(obs)
        action = distribution.sample()
        return StochasticAction(action, distribution.log_prob(action))

    def act(self, obs: Tensor) -> Tensor:
        return self.net(with_forecast(obs)).argmax(dim=-1)


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = orthogonal_init(build_mlp([13, 96, 96, 1], activation=nn.Tanh), 1.0)

    def forward(self, obs: Tensor) -> Tensor:
        return self.net(with_forecast(obs)).squeeze(-1)


policy, critic = Policy(), Critic()
optimizer = torch.optim.Adam(
    [*policy.parameters(), *critic.parameters()], lr=config.learning_rate, eps=1e-5
)

# %% [markdown]
# ## 3. Who does the learner play? An opponent pool
#
# The naive answer, *always the latest version of itself*, fails in two ways:
#
# - **Forgetting and cycles.** Against one opponent, the learner only needs to beat *that*
#   strategy. It drifts to whatever exploits it, forgets how to beat older strategies, and
#   those can come back: the population chases its own tail, as in rock–paper–scissors.
# - **No signal.** Against an exact copy every match is a coin flip; the advantages are
#   noisy and nothing says "you got better than last week".
#
# So we keep a **pool of frozen snapshots**: every `snapshot_every` updates a copy of the
# policy is frozen and added (the first one is the random initialisation). Each match
# starts against the live learner with probability 0.5 (its moves are on-policy, so we
# train on both sides of those matches), otherwise against a snapshot drawn by
# **prioritized fictitious self-play** (PFSP): snapshot $i$ is drawn with probability
# $\propto p_i^2$, where $p_i$ is its estimated probability of still beating the learner.
# Opponents that are already beaten are rarely played; the ones that still win, often.
#
# The game asks for the opponent of a match only when the match starts
# (`opponent_sampler`), and plays every distinct opponent in one batched forward pass.

# %%
pool = OpponentPool(config.pool_capacity, sampling="pfsp", keep_first=True, seed=config.seed)
pool.add(policy, step=0)  # the random initialisation
snapshot_id = {id(pool.latest.policy): pool.latest.id}  # opponent object -> snapshot id
sampler_rng = np.random.default_rng(config.seed + 1)
B, T = config.num_envs, config.num_steps


class LiveOpponent:
    """The live learner as an opponent; records what it saw and did, to train on it."""

    def __init__(self) -> None:
        self.records: list[tuple[Tensor, Tensor, Tensor]] = []

    def __call__(self, obs: Tensor) -> Tensor:  # obs [K, 10]: the matches it plays
        with torch.no_grad():
            out = policy(obs)
        self.records.append((obs, out.value, out.log_prob))
        return out.value


live = LiveOpponent()
live_mask = np.zeros(B, dtype=bool)  # [B]: which matches the live learner plays now


def sample_opponent(env_index: int) -> object:
    """Called by the game whenever match `env_index` starts."""
    live_mask[env_index] = sampler_rng.random() < config.latest_probability
    return live if live_mask[env_index] else pool.sample().policy


# %% [markdown]
# ## 4. Collecting rollouts
#
# A same-step-reset `VecEnv` over the natively vectorized game, and a `RolloutCollector`:
# each `collect(T)` returns a `Rollout [T, B]` of the learner's side (player 0). The
# collector calls our learner exactly once per step, just before the game consults the
# opponents: the learner notes which matches the live opponent plays at that step, so that
# each of the live opponent's records finds its row.

# %%
masks: list[np.ndarray] = []


def learner(obs: Tensor) -> StochasticAction:
    masks.append(live_mask.copy())
    return policy(obs)


envs = VecEnv(
    "rl_mind/PongDuel-v0",
    B,
    seed=config.seed,
    same_step_reset=True,
    opponent_sampler=sample_opponent,
)
collector = RolloutCollector(envs, learner)
rollout = collector.collect(4)
print(rollout.obs.shape, rollout.action.value.shape, rollout.reward.shape)
masks.clear()
live.records.clear()

# %% [markdown]
# ## 5. Advantages (GAE) with the truncation bootstrap
#
# $\delta_t = r_t + \gamma\,(1-\text{terminated}_t)\,V(s'_t) - V(s_t)$ and
# $A_t = \delta_t + \gamma\lambda\,(1-\text{done}_t)\,A_{t+1}$, where $s'_t$ is `next_obs[t]`,
# the true successor (the final observation where a match ended). A match cut by the time
# limit is **truncated**, not terminated: it still bootstraps from $V(s'_t)$. Nothing flows
# across the end of a match.
#
# The live opponent's side needs only what it recorded itself (observations, actions,
# log-probabilities): the game is zero-sum (its reward is $-r_t$), the match ends are
# shared, and its successor observation is the **mirror** of the learner's. An opponent
# changes only when its match ends, so its rows form whole trajectories and GAE runs on
# them unchanged.


# %%
def gae(
    reward: Tensor, value: Tensor, next_value: Tensor, terminated: Tensor, truncated: Tensor
) -> Tensor:
    """Advantages [T, B] from [T, B] rewards, V(obs), V(next_obs), end flags."""
    delta = reward + config.gamma * (~terminated).float() * next_value - value
    continues = (~(terminated | truncated)).float()
    advantages = torch.zeros_like(reward)
    running = torch.zeros_like(reward[0])
    for t in reversed(range(len(reward))):
        running = delta[t] + config.gamma * config.gae_lambda * continues[t] * running
        advantages[t] = running
    return advantages


def mirror(obs: Tensor) -> Tensor:
    """Player 1's view [..., 10] of the state that player 0 sees as `obs`."""
    out = obs[..., [1, 0, 2, 3, 4, 5, 6, 8, 7, 9]].clone()
    out[..., 2], out[..., 4] = -obs[..., 2], -obs[..., 4]
    out[..., 6] = obs[..., 3] - obs[..., 1]
    return out


def training_data(rollout: Rollout[StochasticAction]) -> tuple[Tensor, ...]:
    """Flat (obs, action, log_prob, advantages, returns) of both sides of the rollout."""
    with torch.no_grad():
        value = critic(rollout.obs)
        adv = gae(
            rollout.reward, value, critic(rollout.next_obs), rollout.terminated, rollout.truncated
        )
        sides = [
            (
                rollout.obs.flatten(0, 1),
                rollout.action.value.flatten(),
                rollout.action.log_prob.flatten(),
                adv.flatten(),
                (adv + value).flatten(),
            )
        ]
        mask = torch.from_numpy(np.stack(masks))  # [T, B] live-opponent rows
        if mask.any():
            obs = torch.zeros(T, B, 10)
            action = torch.zeros(T, B, dtype=torch.long)
            log_prob = torch.zeros(T, B)
            for t, (o, a, lp) in zip(torch.nonzero(mask.any(1)).flatten().tolist(), live.records):
                obs[t, mask[t]], action[t, mask[t]], log_prob[t, mask[t]] = o, a, lp
            value = critic(obs)
            adv = gae(
                -rollout.reward,
                value,
                critic(mirror(rollout.next_obs)),
                rollout.terminated,
                rollout.truncated,
            )
            sides.append((obs[mask], action[mask], log_prob[mask], adv[mask], (adv + value)[mask]))
        masks.clear()
        live.records.clear()
        return tuple(torch.cat(parts) for parts in zip(*sides))


# %% [markdown]
# ## 6. The clipped PPO loss
#
# With $\rho = \exp(\log\pi_\theta(a|s) - \log\pi_{\text{old}}(a|s))$ and advantages
# normalised within the minibatch, PPO minimises
# $-\min(\rho A, \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon) A)$ plus the value loss,
# minus an entropy bonus that keeps the policy exploring. We also log the **approximate
# KL** ($\mathbb{E}[(\rho-1) - \log\rho]$: how far one update moved the policy) and the
# **clip fraction** (how many samples hit the clip).


# %%
def ppo_loss(
    obs: Tensor, action: Tensor, old_log_prob: Tensor, adv: Tensor, returns: Tensor
) -> tuple[Tensor, dict[str, float]]:
    distribution = policy.distribution(obs)
    log_ratio = distribution.log_prob(action) - old_log_prob
    ratio = log_ratio.exp()
    if len(adv) > 1:  # the std of one sample is NaN
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    policy_loss = -torch.min(
        ratio * adv, ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef) * adv
    ).mean()
    value_loss = 0.5 * (critic(obs) - returns).pow(2).mean()
    entropy = distribution.entropy().mean()
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    stats = {
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "approx_kl": ((ratio - 1) - log_ratio).mean().item(),
        "clip_fraction": ((ratio - 1).abs() > config.clip_coef).float().mean().item(),
    }
    return loss, stats


# %% [markdown]
# ## 7. Training
#
# One update: collect a rollout, compute the advantages of both sides, `update_epochs`
# passes of `minibatches`, then record the results of the matches that ended (they update
# the PFSP statistics of the pool). Every `eval_every_seconds` we play the bots with
# `play_matches` (both sides equally); the win rates go to TensorBoard and to the progress
# bar.
#
# **Which policy do we keep?** Under self-play the learner keeps adapting to its latest
# opponents: its win rate against a fixed bot swings by 10–20 points from one minute to
# the next, even late in training. So the **agent** we evaluate and keep is not the
# learner's latest weights but their running average (**Polyak averaging**): after update
# $n$, $\bar\theta \leftarrow \bar\theta + \tau_n(\theta - \bar\theta)$ with
# $\tau_n = 1 / (1 + 0.2\,n)$, a moving average whose horizon grows with the run (about two
# thirds of it comes from the last fifth of the updates). The learner, and the snapshots in
# the pool, stay the live weights: only what we *report* is averaged.

# %%
agent = copy.deepcopy(policy).requires_grad_(False)  # the averaged weights
run_dir = run_directory("selfplay-notebook")
setup_tensorboard(run_dir.parent)
writer = SummaryWriter(str(run_dir))
bots = ("random", "scripted", "predictive")
history: list[dict[str, float]] = []
bar = progress_bar(round(60 * config.minutes), desc="self-play (training seconds)")
updates, env_steps, train_seconds, next_eval = 0, 0, 0.0, 0.0
while train_seconds < 60 * config.minutes:
    if train_seconds >= next_eval:  # evaluation, not counted in the budget
        result = {
            bot: play_matches(agent, bot, config.eval_matches, seed=updates).win_rate
            for bot in bots
        }
        history.append({"steps": env_steps, **result})
        for bot, rate in result.items():
            writer.add_scalar(f"eval/win_rate_vs_{bot}", rate, env_steps)
        next_eval = train_seconds + config.eval_every_seconds
    start = time.perf_counter()
    rollout = collector.collect(T)
    env_steps += T * B
    data = training_data(rollout)
    stats: dict[str, list[float]] = {}
    # equal minibatches: the live opponent's steps make the batch size vary
    minibatch_size = math.ceil(len(data[0]) / math.ceil(len(data[0]) / config.minibatch_size))
    for _epoch in range(config.update_epochs):
        for batch in minibatches(data, minibatch_size):
            loss, batch_stats = ppo_loss(*batch)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(
                [*policy.parameters(), *critic.parameters()], config.max_grad_norm
            )
            optimizer.step()
            for key, value in batch_stats.items():
                stats.setdefault(key, []).append(value)
    for match in envs.gym_unwrapped.pop_results():  # matches that ended: learner's outcome
        if id(match.opponent) in snapshot_id:
            pool.record(snapshot_id[id(match.opponent)], match.outcome)
    updates += 1
    tau = 1 / (1 + config.policy_averaging * updates)
    with torch.no_grad():  # the agent moves a fraction tau towards the learner
        for average, weight in zip(agent.parameters(), policy.parameters()):
            average.lerp_(weight, tau)
    if updates % config.snapshot_every == 0:
        snapshot = pool.add(policy, step=env_steps)
        snapshot_id[id(snapshot.policy)] = snapshot.id
    train_seconds += time.perf_counter() - start
    returns = data[4]
    with torch.no_grad():
        explained = 1 - (returns - critic(data[0])).var() / returns.var()
    writer.add_scalar("losses/explained_variance", explained.item(), env_steps)
    for key, values in stats.items():
        writer.add_scalar(f"losses/{key}", float(np.mean(values)), env_steps)
    last = history[-1]
    bar.update_to(
        int(min(train_seconds, 60 * config.minutes)), **{bot: f"{last[bot]:.0%}" for bot in bots}
    )
bar.close()
writer.close()
print(f"{updates} updates, {env_steps:,} game steps, {len(pool)} snapshots in the pool")

# %%
steps = [h["steps"] for h in history]
for bot in bots:
    plt.plot(steps, [h[bot] for h in history], marker="o", label=f"vs {bot}")
plt.xlabel("game steps")
plt.ylabel("win rate")
plt.ylim(0, 1)
plt.legend()
plt.title("Win rates of the agent (averaged weights) against the bots")
plt.show()

# %% [markdown]
# ## 8. What the ratings mean: a round-robin leaderboard
#
# A win rate against one bot says little in a non-transitive game. A **rating** puts every
# player on one scale: under the Bradley–Terry model (the model behind Elo), player $i$
# beats player $j$ with probability
# $1 / (1 + 10^{-(R_i - R_j)/400})$: a difference of 400 points means 10 : 1 odds, 0 means
# even. Ratings are only defined up to a constant, so we **anchor** `random` at 0.
#
# Online Elo (updating ratings after each training match) drifts against frozen
# snapshots: the result depends on the order of the matches, and old ratings are never
# revised. Instead we play a **round robin** (every pair of players, both sides equally)
# between snapshots spread over the run and the three bots, and fit all ratings at once.
# If self-play works, the snapshot ratings climb with training time, past the bots.
# Because strength is not transitive, the fit is a summary: a player can be rated above
# another and still lose to it.

# %%
entries = [s for s in pool]
picked = sorted({round(i) for i in np.linspace(0, len(entries) - 1, config.leaderboard_snapshots)})
players: dict[str, object] = {bot: bot for bot in bots}
snapshot_steps: dict[str, float] = {}
for i in picked:
    players[entries[i].name] = entries[i].policy
    snapshot_steps[entries[i].name] = entries[i].step
players["final learner"] = policy
snapshot_steps["final learner"] = env_steps
players["agent (averaged)"] = agent
snapshot_steps["agent (averaged)"] = env_steps
board = bradley_terry(
    round_robin(players, config.leaderboard_matches, seed=config.seed), anchor="random"
)
print(board)
(run_dir / "leaderboard.md").write_text(board.to_markdown())
figure, axes = plt.subplots(1, 2, figsize=(13, 4.5))
board.plot(ax=axes[0])
board.plot(ax=axes[1], x=snapshot_steps, xlabel="game steps of the snapshot")
figure.tight_layout()
figure.savefig(run_dir / "leaderboard.png")
plt.show()

# %% [markdown]
# ## 9. Watch a match
#
# The best-rated of our players (the snapshots, the final learner, the agent), blue, left,
# playing its most likely action, against the scripted bot (orange). `record_video` films one match headless into the run folder, and
# `video_display` embeds it in this notebook.

# %%
best_name = next(row.name for row in board.rows if row.name in snapshot_steps)
best = players[best_name]
print("best-rated player:", best_name)
video = record_video(
    best,  # type: ignore[arg-type]
    "rl_mind/PongDuel-v0",
    run_dir,
    seed=config.seed,
    max_steps=config.video_max_steps,
    name="match-best-vs-scripted",
    opponent="scripted",
)
envs.close()
video_display(video, width=480)

# %% [markdown]
# ## To go further
#
# - Set `latest_probability = 1.0` (pure self-play against the latest policy) and compare
#   the win rates against the bots, and the leaderboard: does the learner cycle?
# - Replace PFSP by `sampling="uniform"`: which opponents does the learner play, and does
#   it matter here?
# - Train with `point_reward=0` (only the match result): how much slower is it?
# - Set `policy_averaging = 0` (the agent is the learner's latest weights) and compare the
#   win-rate curves: how much do they swing late in training?
# - The same training as a script, with checkpoints and resume:
#   `rl-mind selfplay --minutes 10`.
