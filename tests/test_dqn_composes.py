"""The building blocks compose into a learning loop: the guide's DQN learns CartPole.

The test runs the very block of the guide (docs/guide/collectors.md, so that the guide
cannot drift from working code), then evaluates the greedy policy with the package's own
collector.
"""

from __future__ import annotations

import time

import torch

from rl_mind import EpisodeCollector, VecEnv
from tests.readme_blocks import blocks, run_in_module


def test_the_guide_dqn_reaches_150_on_cartpole() -> None:
    found = blocks("python dqn-example")
    assert len(found) == 1, "the README and the guide must hold exactly one dqn-example block"
    torch.manual_seed(0)
    torch.set_num_threads(1)
    start = time.perf_counter()
    module = run_in_module("rl_mind_readme_dqn", found)
    elapsed = time.perf_counter() - start
    actor = module.actor  # type: ignore[attr-defined]
    actor.epsilon = 0.0  # type: ignore[attr-defined]
    episodes = EpisodeCollector(VecEnv("CartPole-v1", 8, seed=123), actor).collect(8)  # type: ignore[arg-type]
    mean_return = sum(ep.cumulated_reward for ep in episodes) / len(episodes)
    print(f"DQN: mean evaluation return {mean_return:.1f} after {elapsed:.1f} s of training")
    assert mean_return >= 150, f"mean evaluation return {mean_return:.1f} < 150"
