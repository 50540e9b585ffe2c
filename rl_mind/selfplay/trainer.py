"""PPO self-play on Pong Duel: the training behind ``rl-mind selfplay`` and the reference practical.

One :class:`SelfPlayTrainer` update is the CleanRL-style PPO iteration, built from the
package's blocks:

1. :class:`~rl_mind.collectors.RolloutCollector` plays ``num_steps`` steps of ``num_envs``
   matches of a same-step-reset :class:`~rl_mind.env.VecEnv` over the natively vectorized
   game. The learner is player 0 of every match. The opponent of each match (player 1) is
   chosen when the match starts: the **live learner itself** with probability
   ``latest_opponent_probability``, else a frozen snapshot drawn from an
   :class:`~rl_mind.selfplay.OpponentPool` by prioritized fictitious self-play. All the
   snapshots in play answer in one batched forward pass (their weights stacked), not one
   small pass per snapshot.
2. The live-learner opponent's moves are on-policy too, so they are trained on: the
   opponent callable records what it saw and did, and its rewards, ends and successor
   observations follow from player 0's (zero-sum game, mirrored observations).
3. :func:`gae_advantages` with the truncation bootstrap, then ``update_epochs`` passes of
   :func:`~rl_mind.data.minibatches` over the clipped PPO loss (:func:`ppo_loss`), with the
   value loss and the entropy bonus.
4. Every ``snapshot_every`` updates a frozen copy of the learner joins the pool (the first
   one is the random initialisation).
5. The **agent** the run produces (what :meth:`SelfPlayTrainer.evaluate` plays against the
   bots, and what the checkpoint keeps as ``averaged_policy``) is an average of the
   learner's weights over about the last ``policy_averaging`` fraction of the updates
   (Polyak averaging). Under self-play the learner keeps adapting to its latest
   opponents, and its win rate against a fixed bot swings by 10–20 points from one minute
   to the next; the average is steadier. ``policy_averaging=0`` makes the agent the learner.

The networks (:class:`PongPolicy`, :class:`PongCritic`) read the observation followed by
:func:`ball_forecast`: where the ball will next cross a paddle line, wall bounces unfolded,
which a small MLP would otherwise need many samples to learn (``ball_forecast=False``: the
bare observation).

What the reader must not get wrong:

- ``next_obs`` of a same-step rollout is the **true successor** (the final observation at
  the end of a match): a truncated match (time limit) bootstraps from ``V(next_obs)``, a
  terminated one does not, and no advantage flows across the end of a match.
- An opponent changes only when its match ends, so the live-learner opponent's steps form
  whole trajectories inside a rollout: GAE runs on them exactly as on the learner's.
- On resume (:meth:`SelfPlayTrainer.load_state_dict`) everything learned is restored
  (networks, optimizer, pool and its results, counters, random states); the matches that
  were in progress are not, the environment starts fresh matches.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.distributions import Categorical

from rl_mind.collectors import RolloutCollector
from rl_mind.core import Actor, Observation, StochasticAction, _as_int, _checked_device
from rl_mind.data import minibatches
from rl_mind.env import VecEnv
from rl_mind.envs.pong_game import PongDuelRules
from rl_mind.nn import build_mlp
from rl_mind.notebook import Profile
from rl_mind.selfplay.matches import MatchStats, play_matches, round_robin
from rl_mind.selfplay.pool import SAMPLING_STRATEGIES, OpponentPool
from rl_mind.selfplay.ratings import EloTable, Leaderboard, bradley_terry

__all__ = [
    "AGENT_NAME",
    "BOTS",
    "CHECKPOINT_FORMAT",
    "PongCritic",
    "PongPolicy",
    "SelfPlayConfig",
    "SelfPlayTrainer",
    "UpdateStats",
    "ball_forecast",
    "explained_variance",
    "gae_advantages",
    "mirror_observation",
    "network_input",
    "ppo_loss",
]

ENV_NAME = "rl_mind/PongDuel-v0"
OBSERVATION_SIZE = 10
FORECAST_SIZE = 3  # what ball_forecast adds to an observation
N_ACTIONS = 3
BOTS = ("random", "scripted", "predictive")
AGENT_NAME = "agent (averaged weights)"  # its name on the leaderboard
CHECKPOINT_FORMAT = "rl-mind selfplay checkpoint 2"
_CHECKPOINT_FORMAT_1 = "rl-mind selfplay checkpoint 1"  # (no averaged agent)


# ====================================================================== configuration
@dataclasses.dataclass
class SelfPlayConfig:
    """Every number of the self-play PPO run (the defaults are the full profile).

    ``SelfPlayConfig.for_profile()`` returns these, or :meth:`fast_test` under
    ``RL_MIND_FAST_TEST=1``.
    """

    num_envs: int = 128  # B parallel matches
    num_steps: int = 128  # T steps per update
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    update_epochs: int = 4
    minibatch_size: int = 4096
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    # 96-wide: 64-wide networks stopped improving after about 8 minutes (in two runs of
    # four their last snapshot no longer beat those of the minutes before); 128-wide ones
    # ran at half the game steps/s and won less against `predictive` in 10 minutes
    # (bench_selfplay)
    hidden_sizes: tuple[int, ...] = (96, 96)
    ball_forecast: bool = True  # the networks also see where the ball will cross next
    latest_opponent_probability: float = 0.5  # else a pool snapshot
    train_on_opponent: bool = True  # also learn from the live-learner opponent's moves
    snapshot_every: int = 10  # updates between two snapshots
    pool_capacity: int = 64
    pool_sampling: str = "pfsp"
    # the agent (evaluated, kept) averages the learner's weights over about this fraction
    # of the updates so far (0: the agent is the learner itself)
    policy_averaging: float = 0.2
    eval_every_seconds: float = 20.0
    eval_matches: int = 100  # per bot
    checkpoint_every_seconds: float = 60.0
    leaderboard_snapshots: int = 8  # snapshots in the final round robin
    leaderboard_matches: int = 64  # per pair
    video_max_steps: int = 1500
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        """Check every setting, so that a typo fails here with the setting's name rather
        than deep inside a training update."""

        def fail(name: str, expected: str) -> None:
            raise ValueError(
                f"SelfPlayConfig: {name} must be {expected}, got {getattr(self, name)!r}"
            )

        def is_int(value: Any) -> bool:
            return _as_int(value) is not None

        def is_number(value: Any) -> bool:
            return (is_int(value) or isinstance(value, float | np.floating)) and math.isfinite(
                value
            )

        for name in (
            "num_envs",
            "num_steps",
            "update_epochs",
            "minibatch_size",
            "snapshot_every",
            "pool_capacity",
            "eval_matches",
            "leaderboard_snapshots",
            "leaderboard_matches",
            "video_max_steps",
        ):
            if not is_int(getattr(self, name)) or getattr(self, name) <= 0:
                fail(name, "a positive int")
        if not is_int(self.seed) or self.seed < 0:
            fail("seed", "a non-negative int")
        for name in (
            "learning_rate",
            "clip_coef",
            "max_grad_norm",
            "eval_every_seconds",
            "checkpoint_every_seconds",
        ):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                fail(name, "a positive number")
        for name in ("entropy_coef", "value_coef"):
            if not is_number(getattr(self, name)) or getattr(self, name) < 0:
                fail(name, "a number >= 0")
        for name in ("gamma", "gae_lambda", "latest_opponent_probability", "policy_averaging"):
            if not is_number(getattr(self, name)) or not 0 <= getattr(self, name) <= 1:
                fail(name, "a number in [0, 1]")
        for name in ("train_on_opponent", "ball_forecast"):
            if not isinstance(getattr(self, name), bool):
                fail(name, "True or False")
        if not isinstance(self.hidden_sizes, tuple | list) or not all(
            is_int(h) and h > 0 for h in self.hidden_sizes
        ):
            fail("hidden_sizes", "a tuple of positive ints (the hidden layer widths)")
        self.hidden_sizes = tuple(int(h) for h in self.hidden_sizes)
        if not isinstance(self.pool_sampling, str) or self.pool_sampling not in SAMPLING_STRATEGIES:
            fail("pool_sampling", f"one of {SAMPLING_STRATEGIES}")
        # (a device this machine lacks fails here, not at the first network moved there)
        self.device = str(_checked_device(self.device, "SelfPlayConfig"))

    @classmethod
    def fast_test(cls, **changes: Any) -> SelfPlayConfig:
        """Tiny budgets for CI: everything runs in seconds (it learns nothing)."""
        values: dict[str, Any] = dict(
            num_envs=8,
            num_steps=32,
            minibatch_size=128,
            update_epochs=2,
            snapshot_every=2,
            eval_every_seconds=5.0,
            eval_matches=4,
            checkpoint_every_seconds=3.0,
            leaderboard_snapshots=3,
            leaderboard_matches=2,
            video_max_steps=60,
        )
        values.update(changes)
        return cls(**values)

    @classmethod
    def for_profile(cls, **changes: Any) -> SelfPlayConfig:
        """The full configuration, or :meth:`fast_test` under the fast-test profile."""
        return cls.fast_test(**changes) if Profile.is_fast_test() else cls(**changes)

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["hidden_sizes"] = list(self.hidden_sizes)
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SelfPlayConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"SelfPlayConfig: unknown settings {unknown}")
        config = dict(values)
        if "hidden_sizes" in config:
            config["hidden_sizes"] = tuple(int(h) for h in config["hidden_sizes"])
        return cls(**config)

    @classmethod
    def of_checkpoint(
        cls, state: Mapping[str, Any], device: str | torch.device | None = None
    ) -> SelfPlayConfig:
        """The config a :meth:`SelfPlayTrainer.state_dict` was saved with, on ``device`` when
        given (a run saved on a GPU resumes on a machine without one). A checkpoint of the
        first format predates ``ball_forecast`` and ``policy_averaging``: its networks saw
        the bare observation."""
        values = dict(state["config"])
        if device is not None:
            values["device"] = device
        if state.get("format") == _CHECKPOINT_FORMAT_1:
            values.setdefault("ball_forecast", False)
        return cls.from_dict(values)


# ====================================================================== networks
def _tensor(obs: Observation) -> Tensor:
    if not isinstance(obs, Tensor):
        raise TypeError(f"Pong Duel observations are [N, 10] tensors, got {type(obs).__name__}")
    return obs


def _tanh_by_sigmoid(x: Tensor) -> Tensor:
    return torch.sigmoid(x * 2) * 2 - 1


class _TanhFunction(torch.autograd.Function):
    """``tanh`` through ``sigmoid``, with the usual derivative ``1 - tanh²``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        y = _tanh_by_sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)


def _fast_tanh(x: Tensor) -> Tensor:
    """``tanh(x)`` computed as ``2·sigmoid(2x) - 1`` (the same function, to 2e-7).

    Why: on the CPU, torch's ``tanh`` kernel is about 3× slower than ``sigmoid`` at these
    sizes (torch 2.13, one thread: 0.67 ms against 0.21 ms for ``[4096, 64]``), and the
    activations of the policy, the critic and the pooled snapshots were a fifth of the
    training time.
    """
    if x.requires_grad and torch.is_grad_enabled():
        return _TanhFunction.apply(x)  # type: ignore[no-any-return]
    return _tanh_by_sigmoid(x)


class _FastTanh(nn.Tanh):
    """``nn.Tanh`` computed by :func:`_fast_tanh` (same function, same module interface)."""

    def forward(self, input: Tensor) -> Tensor:
        return _fast_tanh(input)


def _orthogonal(layer: nn.Module, gain: float) -> None:
    if isinstance(layer, nn.Linear):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)


def _init_mlp(mlp: nn.Sequential, output_gain: float) -> None:
    linears = [m for m in mlp if isinstance(m, nn.Linear)]
    for layer in linears[:-1]:
        _orthogonal(layer, math.sqrt(2.0))
    _orthogonal(linears[-1], output_gain)


# The numbers of the game's rules the forecast needs.
_RULES = PongDuelRules()
_FACE_X = _RULES.paddle_x - _RULES.ball_radius  # where a paddle meets the ball's centre
_WALL = 1.0 - _RULES.ball_radius  # where the walls reflect the ball's centre
_MAX_SPEED = _RULES.max_speed  # the observation's velocities are divided by it


def ball_forecast(obs: Tensor) -> Tensor:
    """Where the ball will next cross a paddle line: ``[..., 10]`` observations → ``[..., 3]``.

    The three numbers: the height ``y`` at which the ball will cross the line it flies
    towards (the player's own when ``ball vx < 0``, in the mirrored view, the opponent's
    otherwise), ``y`` minus the player's paddle height, and the steps until then / 40 (at
    most 2). Between bounces the ball flies straight, and the walls at ``±wall`` reflect it,
    so the crossing height is the straight-line height folded into the court: a triangle
    wave of period ``4·wall`` (the rule the ``predictive`` bot plays by). A small MLP on the
    bare observation would have to learn that fold; the networks get it as input instead
    (:func:`network_input`).
    """
    return network_input(obs)[..., OBSERVATION_SIZE:]


def network_input(obs: Tensor, forecast: bool = True) -> Tensor:
    """What the networks read: the observation ``[..., 10]`` followed by :func:`ball_forecast`
    (``[..., 13]``); the bare observation when not ``forecast``.

    Computed with numpy on the CPU (the observation is data: no gradient flows through
    it), 4× faster than the same ~20 small torch ops at the batch sizes of self-play
    (18 against 71 µs for ``[128, 10]``); the result comes back on ``obs``'s device.
    """
    if not isinstance(obs, Tensor):
        raise TypeError(
            f"network_input: expected a tensor of observations, got {type(obs).__name__} "
            f"(convert with torch.as_tensor(obs))"
        )
    if not forecast:
        return obs
    shape = obs.shape
    if not shape or shape[-1] != OBSERVATION_SIZE:
        raise ValueError(
            f"Pong Duel observations are [..., {OBSERVATION_SIZE}] tensors, got shape {tuple(shape)}"
        )
    a = obs.detach().cpu().numpy().reshape(-1, OBSERVATION_SIZE)  # (a CPU tensor: a view)
    out = np.empty((len(a), OBSERVATION_SIZE + FORECAST_SIZE), a.dtype)
    out[:, :OBSERVATION_SIZE] = a
    ball_x, ball_y, vx, vy = a[:, 2], a[:, 3], a[:, 4], a[:, 5]
    # distance to the line the ball flies towards: the own one (x = -face) when vx < 0
    distance = _FACE_X - ball_x * np.sign(vx)
    np.maximum(distance, 0.0, out=distance)
    speed = np.abs(vx)  # (velocities are observed divided by the maximum speed)
    np.maximum(speed, 1e-3 / _MAX_SPEED, out=speed)
    speed *= _MAX_SPEED
    steps = distance / speed
    line = vy * steps  # the straight-line height at the crossing, shifted by the wall
    line *= _MAX_SPEED
    line += ball_y
    line += _WALL
    folded = np.remainder(line, 4 * _WALL, out=line)
    folded -= 2 * _WALL
    y = out[:, OBSERVATION_SIZE]
    np.abs(folded, out=y)  # the fold: y = wall - |folded - 2·wall|
    np.subtract(_WALL, y, out=y)
    np.subtract(y, a[:, 0], out=out[:, OBSERVATION_SIZE + 1])
    steps *= 1 / 40
    np.minimum(steps, 2.0, out=out[:, OBSERVATION_SIZE + 2])
    result = torch.from_numpy(out).view(*shape[:-1], OBSERVATION_SIZE + FORECAST_SIZE)
    return result if obs.device.type == "cpu" else result.to(obs.device)


class PongPolicy(Actor[StochasticAction]):
    """The policy: a tanh MLP ``13 → 96 → 96 → 3`` giving the logits of a categorical.

    Its input is :func:`network_input`: the observation and the :func:`ball_forecast`
    (``ball_forecast=False``: the bare observation, ``10 → 96 → 96 → 3``).
    ``policy(obs [N, 10])`` samples (training behaviour, and what a snapshot plays in the
    pool); ``policy.act(obs)`` takes the most likely action; ``policy.distribution(obs)``
    is what the loss differentiates.
    """

    def __init__(
        self, hidden_sizes: tuple[int, ...] = (96, 96), ball_forecast: bool = True
    ) -> None:
        super().__init__()
        self.ball_forecast = ball_forecast
        inputs = OBSERVATION_SIZE + (FORECAST_SIZE if ball_forecast else 0)
        self.net = build_mlp([inputs, *hidden_sizes, N_ACTIONS], activation=_FastTanh)
        _init_mlp(self.net, output_gain=0.01)  # near-uniform first policy

    def distribution(self, obs: Tensor) -> Categorical:
        # No argument validation: it costs ~5% of the training time at these batch sizes.
        logits = self.net(network_input(obs, self.ball_forecast))
        return Categorical(logits=logits, validate_args=False)

    def forward(self, obs: Observation) -> StochasticAction:
        # What ``distribution(obs)`` samples, without building the distribution object:
        # at the collector's batch sizes that made sampling 2.5× slower (96 against 37 µs).
        inputs = network_input(_tensor(obs), self.ball_forecast)
        log_probs = self.net(inputs).log_softmax(dim=-1)  # [..., 3]
        flat = log_probs.reshape(-1, N_ACTIONS)
        action = torch.multinomial(flat.exp(), 1)  # [N, 1]
        batch_shape = log_probs.shape[:-1]  # [N], or e.g. [T, B] for [T, B, 10]
        return StochasticAction(action.view(batch_shape), flat.gather(1, action).view(batch_shape))

    def act(self, obs: Observation) -> Tensor:
        return self.net(network_input(_tensor(obs), self.ball_forecast)).argmax(dim=-1)


class PongCritic(nn.Module):
    """The value function: a separate tanh MLP ``13 → 96 → 96 → 1`` on :func:`network_input`;
    ``critic(obs [N, 10]) -> [N]``."""

    def __init__(
        self, hidden_sizes: tuple[int, ...] = (96, 96), ball_forecast: bool = True
    ) -> None:
        super().__init__()
        self.ball_forecast = ball_forecast
        inputs = OBSERVATION_SIZE + (FORECAST_SIZE if ball_forecast else 0)
        self.net = build_mlp([inputs, *hidden_sizes, 1], activation=_FastTanh)
        _init_mlp(self.net, output_gain=1.0)

    def forward(self, obs: Tensor) -> Tensor:
        return self.net(network_input(obs, self.ball_forecast)).squeeze(-1)


# ====================================================================== the algorithm's pieces
def mirror_observation(obs: Tensor) -> Tensor:
    """Player 1's observation ``[..., 10]`` from player 0's of the same state (and back).

    The game is mirrored so that "me" is always on the left: swap the paddles and the
    scores, negate the ball's x and x-velocity, recompute ``ball y - own y``.
    """
    mirrored = obs[..., [1, 0, 2, 3, 4, 5, 6, 8, 7, 9]].clone()
    mirrored[..., 2] = -obs[..., 2]
    mirrored[..., 4] = -obs[..., 4]
    mirrored[..., 6] = obs[..., 3] - obs[..., 1]
    return mirrored


def gae_advantages(
    reward: Tensor,
    value: Tensor,
    next_value: Tensor,
    terminated: Tensor,
    truncated: Tensor,
    gamma: float,
    gae_lambda: float,
) -> Tensor:
    """Generalized advantage estimation over a same-step rollout; all arguments ``[T, B]``.

    ``next_value`` is ``V(next_obs)``, the value of the true successor (the final
    observation where a match ended). The one-step error bootstraps from it unless the
    state is terminal, so a **truncated** match (time limit) still bootstraps; the
    recursion stops at every end of a match, terminated or truncated, so nothing flows
    from one match into the next.
    """
    for name, flags in (("terminated", terminated), ("truncated", truncated)):
        # (~ of 0/1 integer flags is -1/-2: the advantages would be silently wrong)
        if not isinstance(flags, Tensor) or flags.dtype != torch.bool:
            what = flags.dtype if isinstance(flags, Tensor) else type(flags).__name__
            raise TypeError(
                f"gae_advantages: {name} must be a bool tensor (as a Rollout holds it), got "
                f"{what}; use flags.bool()"
            )
        if flags.shape != reward.shape:
            raise ValueError(
                f"gae_advantages: {name} has shape {list(flags.shape)}, expected the "
                f"rewards' {list(reward.shape)} ([T, B])"
            )
    not_terminal = (~terminated).float()
    continues = (~(terminated | truncated)).float()
    delta = reward + gamma * not_terminal * next_value - value
    advantages = torch.zeros_like(reward)
    running = torch.zeros_like(reward[0])
    for t in reversed(range(reward.shape[0])):
        running = delta[t] + gamma * gae_lambda * continues[t] * running
        advantages[t] = running
    return advantages


def _values(
    critic: nn.Module, obs: Tensor, next_obs: Tensor, ended: Tensor
) -> tuple[Tensor, Tensor]:
    """``V(obs)`` and ``V(next_obs)`` of a same-step rollout (``[T, B, ...]`` → two ``[T, B]``).

    In a same-step rollout ``next_obs[t]`` is ``obs[t + 1]`` wherever the match went on, so
    the critic runs on ``next_obs`` only where a match ended (the final observation) and at
    the last step, instead of a second full pass.
    """
    T, B = ended.shape
    value = critic(obs.flatten(0, 1)).view(T, B)
    fresh = ended.clone()
    fresh[-1] = True
    next_value = torch.empty_like(value)
    next_value[:-1] = value[1:]
    next_value[fresh] = critic(next_obs[fresh])
    return value, next_value


def ppo_loss(
    policy: PongPolicy,
    critic: PongCritic,
    obs: Tensor,
    action: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    returns: Tensor,
    config: SelfPlayConfig,
) -> tuple[Tensor, dict[str, Tensor]]:
    """The PPO loss of a minibatch ``[N]``: clipped surrogate + value loss − entropy bonus.

    Advantages are normalized within the minibatch. Returns the loss and detached
    diagnostics: ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl`` (the
    ``(r - 1) - log r`` estimator) and ``clip_fraction``.
    """
    distribution = policy.distribution(obs)
    log_ratio = distribution.log_prob(action) - old_log_prob
    ratio = log_ratio.exp()
    if len(advantages) > 1:  # the std of a single sample is undefined (NaN)
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef) * advantages
    policy_loss = -torch.min(unclipped, clipped).mean()
    value_loss = 0.5 * (critic(obs) - returns).pow(2).mean()
    entropy = distribution.entropy().mean()
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    with torch.no_grad():
        stats = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": entropy.detach(),
            "approx_kl": ((ratio - 1) - log_ratio).mean(),
            "clip_fraction": ((ratio - 1).abs() > config.clip_coef).float().mean(),
        }
    return loss, stats


def explained_variance(prediction: Tensor, target: Tensor) -> float:
    """``1 - Var(target - prediction) / Var(target)``: 1 is perfect, 0 no better than a constant."""
    if prediction.shape != target.shape:  # ([N, 1] against [N] would broadcast to [N, N])
        raise ValueError(
            f"explained_variance: prediction and target must have the same shape, got "
            f"{list(prediction.shape)} and {list(target.shape)} (squeeze the value head's "
            f"last dimension)"
        )
    variance = target.var()
    if float(variance) == 0.0:
        return float("nan")
    return float(1.0 - (target - prediction).var() / variance)


# ====================================================================== the live opponent
class _LiveOpponent:
    """The live learner as the opponent of some matches; records what it saw and did.

    The game calls it once per step with the observations ``[K, 10]`` of the K matches it
    plays (in increasing copy order); ``records`` keeps ``(obs, action, log_prob)``.
    """

    name = "latest"

    def __init__(self, policy: PongPolicy) -> None:
        self.policy = policy
        self.recording = True
        self.records: list[tuple[Tensor, Tensor, Tensor]] = []

    def __call__(self, obs: Tensor) -> Tensor:
        device = self.policy.device
        with torch.no_grad():
            out = self.policy(obs.to(device))
        if self.recording:
            self.records.append((obs, out.value.cpu(), out.log_prob.cpu()))
        return out.value.cpu()


class _PooledSnapshots:
    """Every pool snapshot the matches play, as one opponent: one batched forward pass.

    A pool of ~50 snapshots means ~35 different opponents among 64 matches at each step;
    one small forward pass each would cost most of the training time. Instead the layers
    of the snapshots in use are stacked, transposed (``[S, in, out]``), and each match's
    row goes through its own snapshot's weights with batched products ``[1, in] @ [in, out]``
    (on the CPU, 4× faster than the column form ``[out, in] @ [in, 1]``). The game calls
    it with the observations of the matches it plays, in increasing copy order (the copies
    marked in ``active``); ``snapshot_id`` says which snapshot each copy plays.
    """

    name = "pool"

    def __init__(self, num_envs: int) -> None:
        self.active = np.zeros(num_envs, dtype=bool)
        self.snapshot_id = np.full(num_envs, -1, dtype=np.int64)
        self.policies: dict[int, PongPolicy] = {}  # snapshot id -> its frozen policy
        self.finished: list[list[int]] = [[] for _ in range(num_envs)]  # ids of ended matches
        self._stack_ids: list[int] = []  # empty: restack at the next call
        self._stack_position = np.zeros(0, dtype=np.int64)  # snapshot id -> row of the stack
        self._weights: list[Tensor] = []
        self._biases: list[Tensor] = []
        # the layers of each row of the last call, gathered from the stacks: kept until a
        # match starts or ends (every few steps), as the gather is most of the pass's cost
        self._row_ids = np.zeros(0, dtype=np.int64)
        self._row_layers: list[tuple[Tensor, Tensor]] = []
        self._forecast = True  # whether the snapshots read the ball forecast

    def assign(self, env_index: int, snapshot_id: int | None, policy: Any = None) -> None:
        """Copy ``env_index`` starts a match against snapshot ``snapshot_id`` (None: not a
        pool match). The snapshot of the match that just ended there is queued in
        ``finished`` (for the pool's win statistics)."""
        if self.active[env_index]:
            self.finished[env_index].append(int(self.snapshot_id[env_index]))
        self.active[env_index] = snapshot_id is not None
        self.snapshot_id[env_index] = -1 if snapshot_id is None else snapshot_id
        if snapshot_id is not None and snapshot_id not in self.policies:
            self.policies[snapshot_id] = policy
            self._stack_ids = []  # rebuilt at the next call

    def pop_finished(self, env_index: int) -> int | None:
        """The snapshot of the oldest ended pool match of copy ``env_index`` not yet popped."""
        queue = self.finished[env_index]
        return queue.pop(0) if queue else None

    def _restack(self) -> None:
        in_use = {int(i) for i in self.snapshot_id[self.active]}
        self.policies = {k: v for k, v in self.policies.items() if k in in_use}
        self._stack_ids = sorted(self.policies)
        self._stack_position = np.zeros(max(self._stack_ids) + 1, dtype=np.int64)
        self._stack_position[self._stack_ids] = np.arange(len(self._stack_ids))
        linears = [
            [m for m in self.policies[k].net if isinstance(m, nn.Linear)] for k in self._stack_ids
        ]
        self._weights = [  # [S, in, out]
            torch.stack([ls[j].weight.detach().T for ls in linears]).contiguous()
            for j in range(len(linears[0]))
        ]
        self._biases = [  # [S, 1, out]
            torch.stack([ls[j].bias.detach() for ls in linears]).unsqueeze(1)
            for j in range(len(linears[0]))
        ]
        self._row_ids = np.zeros(0, dtype=np.int64)  # gather again from the new stacks
        self._forecast = self.policies[self._stack_ids[0]].ball_forecast

    def __call__(self, obs: Tensor) -> Tensor:
        rows = np.flatnonzero(self.active)
        if len(rows) != len(obs):
            raise RuntimeError(
                f"the pooled opponent plays {len(rows)} matches but got {len(obs)} observations"
            )
        if not self._stack_ids:  # a snapshot joined since the last stack (see assign)
            self._restack()
        row_ids = self.snapshot_id[rows]
        if not np.array_equal(row_ids, self._row_ids):
            index = torch.from_numpy(self._stack_position[row_ids])
            self._row_layers = [
                (weight[index], bias[index])  # [K, in, out], [K, 1, out]
                for weight, bias in zip(self._weights, self._biases)
            ]
            self._row_ids = row_ids
        device = self._weights[0].device
        hidden = network_input(obs.to(device), self._forecast).unsqueeze(1)  # [K, 1, in]
        with torch.no_grad():
            last = len(self._row_layers) - 1
            for j, (weight, bias) in enumerate(self._row_layers):
                hidden = torch.baddbmm(bias, hidden, weight)  # bias + hidden @ weight
                if j < last:
                    hidden = _fast_tanh(hidden)
            action = torch.multinomial(hidden.squeeze(1).softmax(dim=-1), 1).squeeze(1)
        return action.cpu()


class _LearnerWithClock:
    """The learner as the collector sees it: also notes which matches the live opponent
    plays at each step (the game consults that opponent right after the learner acts)."""

    def __init__(self, policy: PongPolicy, live_mask: np.ndarray) -> None:
        self.policy = policy
        self.live_mask = live_mask  # [B] bool, kept up to date by the opponent sampler
        self.masks: list[np.ndarray] = []

    def __call__(self, obs: Observation) -> StochasticAction:
        self.masks.append(self.live_mask.copy())
        return self.policy(obs.to(self.policy.device))


# ====================================================================== statistics
@dataclasses.dataclass
class UpdateStats:
    """What one update measured (means over its minibatches)."""

    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clip_fraction: float
    explained_variance: float
    samples: int  # learner + live-opponent steps trained on
    win_rate_vs_latest: float
    win_rate_vs_pool: float
    matches: int


def _rng_state_to_tensors(state: Any) -> Any:
    if isinstance(state, np.ndarray):
        return torch.from_numpy(state.astype(np.int64))
    if isinstance(state, dict):
        return {k: _rng_state_to_tensors(v) for k, v in state.items()}
    if isinstance(state, tuple | list):
        return [_rng_state_to_tensors(v) for v in state]
    if isinstance(state, np.generic):
        return state.item()
    return state


# ====================================================================== the trainer
class SelfPlayTrainer:
    """PPO by self-play on Pong Duel (see the module docstring).

    Build it, call :meth:`update` in a loop (one rollout and one PPO update), :meth:`evaluate`
    from time to time; :meth:`state_dict` / :meth:`load_state_dict` save and restore the
    whole training state; :meth:`leaderboard` plays the final round robin.

    Attributes: ``policy`` (:class:`PongPolicy`), ``critic``, ``optimizer``, ``pool``
    (:class:`~rl_mind.selfplay.OpponentPool`), ``archive`` (every snapshot ever taken, for
    the leaderboard: ``{"id", "step", "seconds", "policy"}`` with a state dict), ``updates``,
    ``env_steps`` (game steps: matches × steps), ``train_seconds`` (collection and updates,
    evaluations excluded), ``eval_history``,
    ``online_elo`` (:class:`~rl_mind.selfplay.EloTable` of the agent against the bots),
    ``averaged_policy`` (the agent: a frozen :class:`PongPolicy` whose weights average the
    learner's, see :meth:`average_weights`).
    """

    def __init__(self, config: SelfPlayConfig | None = None) -> None:
        import rl_mind.envs  # noqa: F401  (registers the game)

        self.config = config = config if config is not None else SelfPlayConfig.for_profile()
        self.device = torch.device(config.device)
        torch.manual_seed(config.seed)
        np.random.seed(config.seed)
        random.seed(config.seed)
        self.policy = PongPolicy(config.hidden_sizes, config.ball_forecast).to(self.device)
        self.critic = PongCritic(config.hidden_sizes, config.ball_forecast).to(self.device)
        self.optimizer = torch.optim.Adam(
            [*self.policy.parameters(), *self.critic.parameters()],
            lr=config.learning_rate,
            eps=1e-5,
        )
        self.pool = OpponentPool(
            config.pool_capacity,
            sampling=config.pool_sampling,
            keep_first=config.pool_capacity >= 2,
            seed=config.seed,
        )
        self.sampler_rng = np.random.default_rng(config.seed + 1)
        self.minibatch_generator = torch.Generator().manual_seed(config.seed + 2)
        self.archive: list[dict[str, Any]] = []
        self.updates = 0
        self.env_steps = 0
        self.train_seconds = 0.0
        self.eval_history: list[dict[str, float]] = []
        self.online_elo = EloTable(k=4.0, fixed={"random": 0.0})
        self.averaged_policy = PongPolicy(config.hidden_sizes, config.ball_forecast)
        self.averaged_policy.to(self.device)
        self.averaged_policy.load_state_dict(self.policy.state_dict())
        self.averaged_policy.eval()
        self.averaged_policy.requires_grad_(False)
        self.live = _LiveOpponent(self.policy)
        self._live_mask = np.zeros(config.num_envs, dtype=bool)
        self.take_snapshot()  # the random initialisation
        self._open_env(config.seed)

    # ------------------------------------------------------------------ environment
    def _sample_opponent(self, env_index: int) -> Any:
        """Called by the game whenever match ``env_index`` starts: its opponent."""
        live = bool(self.sampler_rng.random() < self.config.latest_opponent_probability)
        self._live_mask[env_index] = live
        if live:
            self.pooled.assign(env_index, None)
            return self.live
        snapshot = self.pool.sample()
        self.pooled.assign(env_index, snapshot.id, snapshot.policy)
        return self.pooled

    def _open_env(self, seed: int) -> None:
        self.pooled = _PooledSnapshots(self.config.num_envs)
        self.env = VecEnv(
            ENV_NAME,
            self.config.num_envs,
            seed=seed,
            same_step_reset=True,
            opponent_sampler=self._sample_opponent,
        )
        self.learner = _LearnerWithClock(self.policy, self._live_mask)
        self.collector = RolloutCollector(self.env, self.learner)

    def close(self) -> None:
        self.env.close()

    # ------------------------------------------------------------------ pool
    def take_snapshot(self) -> None:
        """Add a frozen copy of the learner to the pool and to the archive."""
        snapshot = self.pool.add(self.policy, self.env_steps)
        self.archive.append(
            {
                "id": snapshot.id,
                "step": self.env_steps,
                "seconds": self.train_seconds,
                "policy": {
                    k: v.detach().cpu().clone() for k, v in self.policy.state_dict().items()
                },
            }
        )

    def archived_policy(self, index: int) -> PongPolicy:
        """The archived snapshot ``self.archive[index]`` as a frozen :class:`PongPolicy`."""
        policy = PongPolicy(self.config.hidden_sizes, self.config.ball_forecast)
        policy.load_state_dict(self.archive[index]["policy"])
        policy.eval()
        policy.requires_grad_(False)
        return policy

    # ------------------------------------------------------------------ one update
    def update(self) -> UpdateStats:
        """Collect one rollout (``num_steps × num_envs`` matches' steps) and do one PPO update."""
        config = self.config
        start = time.perf_counter()
        self.learner.masks.clear()
        self.live.records.clear()
        self.live.recording = config.train_on_opponent
        self.policy.eval()
        rollout = self.collector.collect(config.num_steps)  # [T, B]
        masks = np.stack(self.learner.masks)  # [T, B]: live-opponent matches at each step
        games = self.env.gym_unwrapped.pop_results()
        T, B = rollout.reward.shape
        self.env_steps += T * B  # game steps (the live opponent's moves come on top)

        with torch.no_grad():
            obs = _tensor(rollout.obs).to(self.device)
            next_obs = _tensor(rollout.next_obs).to(self.device)
            reward = rollout.reward.to(self.device)
            terminated = rollout.terminated.to(self.device)
            truncated = rollout.truncated.to(self.device)
            value, next_value = _values(self.critic, obs, next_obs, terminated | truncated)
            advantages = gae_advantages(
                reward, value, next_value, terminated, truncated, config.gamma, config.gae_lambda
            )
            parts: list[tuple[Tensor, ...]] = [
                (
                    obs.flatten(0, 1),
                    rollout.action.value.flatten().to(self.device),
                    rollout.action.log_prob.flatten().to(self.device),
                    advantages.flatten(),
                    (advantages + value).flatten(),
                    value.flatten(),
                )
            ]
            if config.train_on_opponent and masks.any():
                parts.append(self._opponent_part(masks, next_obs, reward, terminated, truncated))
            batch = tuple(torch.cat(items) for items in zip(*parts))
        obs_n, action_n, log_prob_n, advantages_n, returns_n, value_n = batch

        self.policy.train()
        sums: dict[str, float] = {}
        count = 0
        # Equal minibatches: the live opponent's steps make the batch size vary, and a
        # leftover minibatch of a few samples would have meaningless normalized advantages.
        n_minibatches = math.ceil(len(obs_n) / config.minibatch_size)
        minibatch_size = math.ceil(len(obs_n) / n_minibatches)
        for _epoch in range(config.update_epochs):
            for mb in minibatches(
                (obs_n, action_n, log_prob_n, advantages_n, returns_n),
                minibatch_size,
                generator=self.minibatch_generator,
            ):
                mb_obs, mb_action, mb_log_prob, mb_advantages, mb_returns = mb
                loss, stats = ppo_loss(
                    self.policy,
                    self.critic,
                    mb_obs,
                    mb_action,
                    mb_log_prob,
                    mb_advantages,
                    mb_returns,
                    config,
                )
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(
                    [*self.policy.parameters(), *self.critic.parameters()],
                    config.max_grad_norm,
                )
                self.optimizer.step()
                for key, value_ in stats.items():
                    sums[key] = sums.get(key, 0.0) + float(value_)
                count += 1
        self.policy.eval()
        self.updates += 1
        self.average_weights()

        outcomes_latest, outcomes_pool = [], []
        for game in games:
            if game.opponent is self.live:
                outcomes_latest.append(game.outcome)
            else:
                outcomes_pool.append(game.outcome)
                snapshot_id = self.pooled.pop_finished(game.env_index)
                if snapshot_id is not None:  # (an evicted snapshot's result is ignored)
                    self.pool.record(snapshot_id, game.outcome)
        self.train_seconds += time.perf_counter() - start
        if self.updates % config.snapshot_every == 0:
            self.take_snapshot()

        def win_rate(outcomes: list[int]) -> float:
            return float(np.mean([o > 0 for o in outcomes])) if outcomes else float("nan")

        return UpdateStats(
            **{key: total / max(count, 1) for key, total in sums.items()},
            explained_variance=explained_variance(value_n, returns_n),
            samples=len(obs_n),
            win_rate_vs_latest=win_rate(outcomes_latest),
            win_rate_vs_pool=win_rate(outcomes_pool),
            matches=len(games),
        )

    def average_weights(self) -> None:
        """Move the agent's weights towards the learner's (done after every update).

        At update ``n`` the agent takes ``τ = 1 / (1 + policy_averaging · n)`` of the
        learner's weights: a moving average whose horizon grows with the run, so that about
        two thirds of it comes from the last ``policy_averaging`` fraction of the updates
        (at ``n = 1,400``, ten minutes of training, ``τ ≈ 0.0036``). Early on it follows the
        learner closely (``τ = 0.5`` at update 5); ``policy_averaging = 0`` copies it.
        """
        tau = 1.0 / (1.0 + self.config.policy_averaging * self.updates)
        with torch.no_grad():
            for average, live in zip(
                self.averaged_policy.parameters(), self.policy.parameters(), strict=True
            ):
                average.lerp_(live, tau)
            for buffer, live_buffer in zip(
                self.averaged_policy.buffers(), self.policy.buffers(), strict=True
            ):
                buffer.copy_(live_buffer)

    def _opponent_part(
        self,
        masks: np.ndarray,
        next_obs: Tensor,
        reward: Tensor,
        terminated: Tensor,
        truncated: Tensor,
    ) -> tuple[Tensor, ...]:
        """The live-learner opponent's steps, as flat ``[N]`` training data with advantages.

        Its observations, actions and log-probabilities were recorded by the opponent
        itself (one record per step where it played); rewards are the negation of player
        0's, match ends are shared, successors are the mirror of player 0's.
        """
        config = self.config
        T, B = masks.shape
        steps_played = np.flatnonzero(masks.any(axis=1))
        if len(steps_played) != len(self.live.records):
            raise RuntimeError(
                f"self-play bookkeeping: the live opponent played {len(self.live.records)} "
                f"steps, expected {len(steps_played)}"
            )
        mask = torch.from_numpy(masks).to(self.device)
        obs = torch.zeros(T, B, OBSERVATION_SIZE, device=self.device)
        action = torch.zeros(T, B, dtype=torch.long, device=self.device)
        log_prob = torch.zeros(T, B, device=self.device)
        for t, (o, a, lp) in zip(steps_played.tolist(), self.live.records):
            obs[t, mask[t]] = o.to(self.device)
            action[t, mask[t]] = a.to(self.device)
            log_prob[t, mask[t]] = lp.to(self.device)
        # the critic only where the live opponent played (elsewhere the values are never
        # read: its matches are whole, so GAE cannot flow in from the other rows)
        value = torch.zeros(T, B, device=self.device)
        next_value = torch.zeros(T, B, device=self.device)
        value[mask] = self.critic(obs[mask])
        next_value[mask] = self.critic(mirror_observation(next_obs[mask]))
        advantages = gae_advantages(
            -reward, value, next_value, terminated, truncated, config.gamma, config.gae_lambda
        )
        return (
            obs[mask],
            action[mask],
            log_prob[mask],
            advantages[mask],
            (advantages + value)[mask],
            value[mask],
        )

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, n_matches: int | None = None, seed: int | None = None) -> dict[str, float]:
        """Win rates of the agent (``averaged_policy``, sampling as trained) against the
        bots; logged in ``eval_history`` and in the online Elo table."""
        n = n_matches if n_matches is not None else self.config.eval_matches
        self.live.recording = False
        result: dict[str, float] = {
            "updates": float(self.updates),
            "env_steps": float(self.env_steps),
            "seconds": self.train_seconds,
        }
        for bot in BOTS:
            stats: MatchStats = play_matches(
                self.averaged_policy, bot, n, seed=seed if seed is not None else self.updates
            )
            result[f"win_rate_vs_{bot}"] = stats.win_rate
            result[f"score_vs_{bot}"] = stats.score
            self.online_elo.update("learner", bot, stats.wins, stats.draws, stats.losses)
        result["online_elo"] = self.online_elo["learner"]
        self.eval_history.append(result)
        return result

    def leaderboard_indices(self, n_snapshots: int | None = None) -> list[int]:
        """The archive indices of the leaderboard's snapshots: up to ``n_snapshots`` (default
        ``config.leaderboard_snapshots``) evenly spread over the run, first and last included."""
        k = n_snapshots if n_snapshots is not None else self.config.leaderboard_snapshots
        return sorted({round(i) for i in np.linspace(0, len(self.archive) - 1, max(k, 1))})

    def leaderboard(
        self, n_snapshots: int | None = None, n_matches: int | None = None, seed: int = 0
    ) -> tuple[Leaderboard, dict[str, float]]:
        """Round robin of up to ``n_snapshots`` archived snapshots (evenly spread over the
        run, the first and the last included), the agent (``AGENT_NAME``: the averaged
        weights, unless ``policy_averaging`` is 0) and the three bots; Bradley–Terry ratings
        anchored at ``random = 0``. Returns the leaderboard and the training step of each
        snapshot (for the plot)."""
        n = n_matches if n_matches is not None else self.config.leaderboard_matches
        indices = self.leaderboard_indices(n_snapshots)
        players: dict[str, Any] = {bot: bot for bot in BOTS}
        steps: dict[str, float] = {}
        for i in indices:
            entry = self.archive[i]
            name = f"snapshot {entry['id']} (step {entry['step']})"
            players[name] = self.archived_policy(i)
            steps[name] = float(entry["step"])
        if self.config.policy_averaging > 0:
            players[AGENT_NAME] = self.averaged_policy
        results = round_robin(players, n, seed=seed)
        board = bradley_terry(results.wins, results.draws, results.names, anchor="random")
        return board, steps

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The whole training state, readable with ``torch.load(weights_only=True)``."""
        return {
            "format": CHECKPOINT_FORMAT,
            "config": self.config.to_dict(),
            "policy": self.policy.state_dict(),
            "averaged_policy": self.averaged_policy.state_dict(),
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "pool": self.pool.state_dict(),
            "archive": self.archive,
            "counters": {
                "updates": self.updates,
                "env_steps": self.env_steps,
                "train_seconds": self.train_seconds,
            },
            "eval_history": self.eval_history,
            "online_elo": {
                "ratings": dict(self.online_elo.ratings),
                "games": dict(self.online_elo.games),
                "points": dict(self.online_elo.points),
            },
            "rng": {
                "torch": torch.get_rng_state(),
                "numpy": _rng_state_to_tensors(np.random.get_state()),
                "python": _rng_state_to_tensors(random.getstate()),
                "sampler": self.sampler_rng.bit_generator.state,
                "minibatches": self.minibatch_generator.get_state(),
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (the config must match).

        A checkpoint of the first format (before the averaged agent) is accepted: its agent
        restarts from the learner's weights.
        """
        if state.get("format") not in (CHECKPOINT_FORMAT, _CHECKPOINT_FORMAT_1):
            if isinstance(state.get("trainer"), Mapping):  # (the job's checkpoint.pt)
                raise ValueError(
                    "this is the checkpoint of a rl-mind selfplay run, whose trainer state is "
                    "under 'trainer': pass load_checkpoint(path)['trainer']"
                )
            raise ValueError(
                f"not a rl-mind selfplay checkpoint: expected the format {CHECKPOINT_FORMAT!r}, "
                f"got {state.get('format')!r}"
            )
        saved = SelfPlayConfig.of_checkpoint(state, device=self.config.device)
        for name in ("hidden_sizes", "ball_forecast"):
            if getattr(saved, name) != getattr(self.config, name):
                raise ValueError(
                    f"the checkpoint's networks have {name}={getattr(saved, name)!r}, this "
                    f"trainer {getattr(self.config, name)!r}; build the trainer with the saved "
                    f"config (SelfPlayConfig.of_checkpoint(state))"
                )
        self.policy.load_state_dict(state["policy"])
        self.averaged_policy.load_state_dict(state.get("averaged_policy", state["policy"]))
        self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])
        hidden, forecast = self.config.hidden_sizes, self.config.ball_forecast
        self.pool.load_state_dict(state["pool"], lambda: PongPolicy(hidden, forecast))
        self.archive = [dict(entry) for entry in state["archive"]]
        counters = state["counters"]
        self.updates = int(counters["updates"])
        self.env_steps = int(counters["env_steps"])
        self.train_seconds = float(counters["train_seconds"])
        self.eval_history = [dict(item) for item in state["eval_history"]]
        elo = state["online_elo"]
        self.online_elo.ratings = dict(elo["ratings"])
        self.online_elo.games = dict(elo["games"])
        self.online_elo.points = dict(elo["points"])
        rng = state["rng"]
        torch.set_rng_state(rng["torch"])
        numpy_state = rng["numpy"]
        np.random.set_state(
            (
                numpy_state[0],
                numpy_state[1].numpy().astype(np.uint32),
                int(numpy_state[2]),
                int(numpy_state[3]),
                float(numpy_state[4]),
            )
        )
        python_state = rng["python"]
        random.setstate((python_state[0], tuple(python_state[1]), python_state[2]))
        self.sampler_rng.bit_generator.state = dict(rng["sampler"])
        self.minibatch_generator.set_state(rng["minibatches"])
        # Fresh matches (their opponents drawn from the restored pool), seeded from the
        # counters so that a resumed run does not replay the serves of the first one.
        self.env.close()
        self._live_mask[:] = False
        self._open_env(self.config.seed + 1_000 * self.updates + 1)
