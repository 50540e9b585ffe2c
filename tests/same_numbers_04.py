"""Short seeded DDPG and TD3 runs on Pendulum written with rl-mind 0.4's API only (run by
tests/test_same_numbers_04.py under rl-mind 0.4.0 and under this package).

``python same_numbers_04.py OUT_JSON RUN_DIR [--04-lines]``: trains, evaluates with an
``Evaluator`` given ``run_dir`` and no writer, and writes to ``OUT_JSON`` the parameters
after training (hex of their bytes), the steps and returns of every evaluation, and the
files under ``RUN_DIR``. ``--04-lines`` applies the lines the migration page gives to get
0.4's behaviour back (this package only: 0.4 has none of these arguments).
"""

from __future__ import annotations

import copy
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import rl_mind
from rl_mind import (
    Action,
    Actor,
    Evaluator,
    ReplayBuffer,
    TransitionCollector,
    VecEnv,
    build_mlp,
    soft_update,
)

ENV, TOTAL_STEPS, LEARNING_STARTS, BATCH, EVERY = "Pendulum-v1", 500, 100, 32, 150
GAMMA, TAU, POLICY_DELAY, NOISE, POLICY_NOISE, NOISE_CLIP = 0.99, 0.05, 2, 0.1, 0.2, 0.5


class DeterministicActor(Actor[Action]):
    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.net = build_mlp([obs_dim, 32, 32, action_dim], output_activation=nn.Tanh())
        self.explore = True

    def forward(self, obs: Tensor) -> Action:
        action = 2.0 * self.net(obs)
        if self.explore:
            action = (action + NOISE * 2.0 * torch.randn_like(action)).clamp(-2.0, 2.0)
        return Action(action)

    def act(self, obs: Tensor) -> Tensor:
        return 2.0 * self.net(obs)


class Critic(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.net = build_mlp([obs_dim + action_dim, 32, 32, 1])

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return self.net(torch.cat([obs, action], dim=-1)).squeeze(-1)


def train(algorithm: str, run_dir: Path, lines_04: bool) -> dict[str, Any]:
    """DDPG (one critic, an actor update at every step) or TD3 (twin critics, target policy
    smoothing, delayed actor updates), evaluated into ``run_dir``."""
    td3 = algorithm == "td3"
    torch.manual_seed(0)
    env = VecEnv(ENV, 2, seed=1)
    # this package's lines that give 0.4's behaviour back (the migration page lists them)
    # (seed=None: 0.4's unseeded evaluations; no run_dir: no best_actor.pt written)
    extra = {"seed": None} if lines_04 else {}
    evaluator_dir = None if lines_04 else run_dir
    evaluator = Evaluator(VecEnv(ENV, 2, seed=0), EVERY, run_dir=evaluator_dir, **extra)
    actor = DeterministicActor(env.observation_dim, env.action_dim)
    critics = [Critic(env.observation_dim, env.action_dim) for _ in range(2 if td3 else 1)]
    actor_target, critic_targets = copy.deepcopy(actor), copy.deepcopy(critics)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
    critic_parameters = [parameter for critic in critics for parameter in critic.parameters()]
    critic_optimizer = torch.optim.Adam(critic_parameters, lr=1e-3)
    buffer: ReplayBuffer[Action] = ReplayBuffer(10_000)
    collector = TransitionCollector(env, actor)
    update = 0
    while collector.steps < TOTAL_STEPS:
        buffer.add(collector.collect(1))
        if collector.steps >= LEARNING_STARTS:
            batch = buffer.sample(BATCH)
            with torch.no_grad():
                next_action = actor_target.act(batch.next_obs)
                if td3:
                    noise = torch.randn_like(next_action) * POLICY_NOISE
                    next_action = next_action + noise.clamp(-NOISE_CLIP, NOISE_CLIP)
                    next_action = next_action.clamp(-2.0, 2.0)
                next_qs = [target(batch.next_obs, next_action) for target in critic_targets]
                next_q = torch.min(*next_qs) if td3 else next_qs[0]
                target = batch.reward + GAMMA * (~batch.terminated) * next_q
            critic_loss = sum(
                F.mse_loss(critic(batch.obs, batch.action.value), target) for critic in critics
            )
            critic_optimizer.zero_grad()
            critic_loss.backward()  # type: ignore[union-attr]
            critic_optimizer.step()
            update += 1
            if update % (POLICY_DELAY if td3 else 1) == 0:
                actor_loss = -critics[0](batch.obs, actor.act(batch.obs)).mean()
                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()
                soft_update(actor, actor_target, TAU)
                for critic, critic_target in zip(critics, critic_targets):
                    soft_update(critic, critic_target, TAU)
        evaluator.run_if_needed(collector.steps, actor)
    networks = {"actor": actor, "actor_target": actor_target}
    networks.update({f"critic{i}": critic for i, critic in enumerate(critics)})
    networks.update({f"critic_target{i}": target for i, target in enumerate(critic_targets)})
    return {
        "parameters": {
            f"{name}.{key}": value.detach().numpy().tobytes().hex()
            for name, network in networks.items()
            for key, value in network.state_dict().items()
        },
        "steps": [int(result.step) for result in evaluator.history],
        "returns": [result.rewards.tolist() for result in evaluator.history],
        "best_reward": evaluator.best_reward,
        "collector_steps": collector.steps,
    }


def main(out: Path, run_dir: Path, lines_04: bool) -> None:
    result = {algorithm: train(algorithm, run_dir / algorithm, lines_04)
              for algorithm in ("ddpg", "td3")}  # fmt: skip
    result["files"] = sorted(
        path.relative_to(run_dir).as_posix() for path in run_dir.rglob("*") if path.is_file()
    )
    result["versions"] = {name: version(name) for name in ("torch", "gymnasium", "numpy")}
    result["rl_mind"] = str(Path(rl_mind.__file__).resolve().parent)
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), "--04-lines" in sys.argv[3:])
