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

from rl_mind import Action, Actor, Evaluator, save_checkpoint


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


def busy_train(size: int = 1, *, seed: int, run_dir: Path, seconds: float = 1.0) -> None:
    """CPU work for about ``seconds`` (the benchmark's run), with an Evaluator's logs."""
    torch.manual_seed(seed)
    actor = LinearActor()
    evaluator = Evaluator("CartPole-v1", every=1, run_dir=run_dir, logs=True, num_episodes=2,
                          seed=seed)  # fmt: skip
    matrix = torch.randn(64 * size, 64 * size)
    start, step = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            matrix = torch.tanh(matrix @ matrix.T / matrix.shape[0])
        step += 1
    evaluator.run_if_needed(step, actor)
