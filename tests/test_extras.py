"""Gymnasium's Box2D and MuJoCo environments, the ``box2d`` and ``mujoco`` extras (rl-mind
0.4 installed them with the package): a VecEnv runs them where they are installed, and
where they are not, the error names the extra to install."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gymnasium
import pytest
import torch

from rl_mind import VecEnv


@pytest.mark.parametrize(
    ("env_id", "module", "extra"),
    [("LunarLander-v3", "Box2D", "box2d"), ("HalfCheetah-v5", "mujoco", "mujoco")],
)
def test_a_vecenv_steps_the_extras_environments(
    env_id: str, module: str, extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f'{module} is not installed: pip install "rl-mind[{extra}]"')
    monkeypatch.chdir(tmp_path)  # (MuJoCo writes its MUJOCO_LOG.TXT into the working folder)
    with VecEnv(env_id, 2, seed=0) as env:
        obs = env.reset()
        assert obs.shape == (2, env.observation_dim)
        if env.is_continuous:
            actions = torch.zeros(2, env.action_dim)
        else:
            actions = torch.zeros(2, dtype=torch.long)
        step = env.step(actions)
        assert step.reward.shape == (2,) and torch.isfinite(step.reward).all()


def test_a_missing_extra_is_named_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine without Box2D: importing gymnasium's box2d package fails.
    monkeypatch.setitem(sys.modules, "Box2D", None)
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(
        gymnasium.error.DependencyNotInstalled, match=r'pip install "rl-mind\[box2d\]"'
    ):
        VecEnv("LunarLander-v3", 1)
