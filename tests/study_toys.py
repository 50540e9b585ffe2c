"""Training functions for the study tests (tests/test_study.py) and the study benchmark.

They live in a module of their own so that worker processes (a local pool, Dask workers,
submitit's jobs) can import them. ``train`` is tiny and deterministic: a linear CartPole
policy perturbed by seeded noise, evaluated with an Evaluator (``logs=True``), so the same
seed gives the same returns wherever it runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import Tensor, nn

from rl_mind import (
    Action,
    Actor,
    Evaluator,
    ReplayBuffer,
    TransitionCollector,
    VecEnv,
    build_mlp,
    save_checkpoint,
    soft_update,
)


class LinearActor(Actor[Action]):
    """Pushes right when ``obs @ w > 0``; starts from a policy that balances the pole
    (push towards where it falls), so that perturbed ones score anywhere in 8..500."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[0.0, 0.0, 1.0, 1.0]]))
            self.linear.bias.zero_()

    def forward(self, obs: Tensor) -> Action:
        return Action((self.linear(obs).squeeze(-1) > 0).long())


def train(
    gain: float = 1.0,
    fail: bool = False,
    *,
    seed: int,
    run_dir: Path,
    steps: int = 300,
    pause: float = 0.0,
) -> None:
    """``steps // 100`` evaluations (2 CartPole episodes each) of a policy whose weights
    take a seeded random step of size ``gain`` before each (no learning: seeded numbers); ``fail`` raises at step 200;
    ``pause`` sleeps that long after each evaluation (a run that lasts)."""
    torch.manual_seed(seed)
    actor = LinearActor()
    evaluator = Evaluator("CartPole-v1", every=100, run_dir=run_dir, logs=True,
                          num_episodes=2, seed=seed)  # fmt: skip
    for step in range(100, steps + 1, 100):
        with torch.no_grad():
            for parameter in actor.parameters():
                parameter.add_(gain * torch.randn_like(parameter))
        evaluator.run_if_needed(step, actor)
        save_checkpoint({"step": step, "actor": actor.state_dict()}, run_dir / "checkpoint.pt")
        if fail and step == 200:
            raise RuntimeError("this run fails on purpose")
        time.sleep(pause)


class QActor(Actor[Action]):
    """Epsilon-greedy on a Q-network ``[B, obs_dim] -> [B, n_actions]``."""

    def __init__(self, q: nn.Module, n_actions: int, epsilon: float = 0.1) -> None:
        super().__init__()
        self.q, self.n_actions, self.epsilon = q, n_actions, epsilon

    def forward(self, obs: Tensor) -> Action:
        greedy = self.act(obs)
        explore = torch.rand(len(obs)) < self.epsilon
        return Action(torch.where(explore, torch.randint(self.n_actions, greedy.shape), greedy))

    def act(self, obs: Tensor) -> Tensor:
        return self.q(obs).argmax(-1)


def dqn(hidden: int = 64, lr: float = 1e-3, *, seed: int, run_dir: Path, steps: int = 3000) -> None:
    """A short DQN on CartPole (the benchmark's run): a fixed amount of work, collecting
    with the package's blocks, evaluating every 1000 steps with ``logs=True``."""
    torch.manual_seed(seed)
    env = VecEnv("CartPole-v1", 1, seed=seed)
    q = build_mlp([env.observation_dim, hidden, hidden, env.n_actions])
    target = build_mlp([env.observation_dim, hidden, hidden, env.n_actions])
    target.load_state_dict(q.state_dict())
    actor = QActor(q, env.n_actions)
    collector = TransitionCollector(env, actor)
    buffer: ReplayBuffer[Action] = ReplayBuffer(10_000)
    optimizer = torch.optim.Adam(q.parameters(), lr=lr)
    evaluator = Evaluator("CartPole-v1", every=1000, run_dir=run_dir, logs=True,
                          num_episodes=4, seed=seed)  # fmt: skip
    while collector.steps < steps:
        buffer.add(collector.collect(1))
        if len(buffer) >= 64:
            batch = buffer.sample(64)
            with torch.no_grad():
                bootstrap = target(batch.next_obs).max(-1).values * ~batch.terminated
            q_values = q(batch.obs).gather(-1, batch.action.value[:, None]).squeeze(-1)
            loss = nn.functional.mse_loss(q_values, batch.reward + 0.99 * bootstrap)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            soft_update(q, target, 0.01)
        evaluator.run_if_needed(collector.steps, actor)
    env.close()
