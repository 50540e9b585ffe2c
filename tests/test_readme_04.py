"""rl-mind 0.4's README examples run unchanged against this release.

tests/data/readme_0_4.md is 0.4.0's README as the package index shows it. Its Python blocks
are fragments of a notebook: each runs, as it is, in a fresh namespace that holds what the
fragment takes from the cells before it (a filled replay buffer, an actor, ``gamma``), the
way a 0.4 notebook would have defined them; then what it built is checked.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.readme_blocks import ROOT, Block, blocks

README_04 = ROOT / "tests" / "data" / "readme_0_4.md"


def _transitions(n: int, stochastic: bool = False) -> Any:
    from rl_mind import Action, StochasticAction, Transitions

    value = torch.arange(n) % 2
    return Transitions(
        obs=torch.arange(n, dtype=torch.float32)[:, None].repeat(1, 4),
        action=StochasticAction(value, torch.full((n,), -0.7)) if stochastic else Action(value),
        reward=torch.ones(n),
        next_obs=torch.arange(1, n + 1, dtype=torch.float32)[:, None].repeat(1, 4),
        terminated=torch.arange(n) % 5 == 4,
    )


def _imports() -> dict[str, Any]:
    """What every 0.4 notebook imported at its top (its README's tables name them)."""
    from dataclasses import dataclass

    from torch import Tensor

    from rl_mind import Action, Actor, ReplayBuffer, StochasticAction, TensorStruct, Transitions

    return {
        "dataclass": dataclass,
        "Tensor": Tensor,
        "torch": torch,
        "Action": Action,
        "Actor": Actor,
        "ReplayBuffer": ReplayBuffer,
        "StochasticAction": StochasticAction,
        "TensorStruct": TensorStruct,
        "Transitions": Transitions,
    }


def _buffer(namespace: dict[str, Any]) -> None:
    from rl_mind import ReplayBuffer

    buffer: Any = ReplayBuffer(1_000)
    buffer.add(_transitions(200))
    namespace["buffer"] = buffer


def _chunks(namespace: dict[str, Any]) -> None:
    from rl_mind import Action

    namespace["chunk_a"], namespace["chunk_b"] = _transitions(3), _transitions(5)
    for i in range(3):
        namespace[f"a{i}"] = Action(torch.full((2,), i))


def _masked(namespace: dict[str, Any]) -> None:
    from rl_mind import ReplayBuffer

    buffer: Any = ReplayBuffer(1_000)
    buffer.add(_transitions(200, stochastic=True))
    namespace["batch"] = buffer.sample(64)
    namespace["mask"] = ~namespace["batch"].terminated


def _storage(namespace: dict[str, Any]) -> None:
    namespace["storage"] = _transitions(10).clone()
    namespace["indices"] = torch.tensor([7, 2])
    namespace["transitions"] = _transitions(2)


def _off_policy(namespace: dict[str, Any]) -> None:
    from rl_mind import Action, Actor

    class Deterministic(Actor[Action]):
        def __init__(self) -> None:
            super().__init__()
            self.model = nn.Linear(4, 1)

        def forward(self, obs: torch.Tensor) -> Action:
            return Action(torch.tanh(self.model(obs)))

    class GaussianNoise(Actor[Action]):  # the 0.4 DDPG notebook's exploration wrapper
        def __init__(self, actor: Actor[Action], sigma: float) -> None:
            super().__init__()
            self.actor, self.sigma = actor, sigma

        def forward(self, obs: torch.Tensor) -> Action:
            value = self.actor.act(obs)
            return Action((value + self.sigma * torch.randn_like(value)).clamp(-1, 1))

    namespace.update(actor=Deterministic(), GaussianNoise=GaussianNoise, gamma=0.99)
    namespace["next_q"] = torch.zeros(64)


def _check_dataclass(namespace: dict[str, Any]) -> None:
    cls = namespace["Transitions"]
    item = cls(torch.zeros(3, 2), namespace["Action"](torch.zeros(3)), torch.ones(3),
               torch.zeros(3, 2), torch.zeros(3, dtype=torch.bool))  # fmt: skip
    assert len(item[:2]) == 2


def _check_indexing(namespace: dict[str, Any]) -> None:
    batch = namespace["batch"]
    assert len(batch) == 64 and len(batch[:32]) == 32


def _check_cat(namespace: dict[str, Any]) -> None:
    chunks = namespace["Transitions"].cat([namespace["chunk_a"], namespace["chunk_b"]])
    assert len(chunks) == 8
    assert namespace["Action"].stack([namespace[f"a{i}"] for i in range(3)]).value.shape == (3, 2)


def _check_masked(namespace: dict[str, Any]) -> None:
    sub = namespace["sub"]
    assert len(sub) == int(namespace["mask"].sum()) and not sub.terminated.any()
    assert sub.action.log_prob.shape == (len(sub),)


def _check_storage(namespace: dict[str, Any]) -> None:
    assert namespace["storage"].obs[7, 0] == 0 and namespace["storage"].obs[2, 0] == 1


def _check_policy(namespace: dict[str, Any]) -> None:
    policy = namespace["DiscretePolicy"]()
    policy.model = nn.Linear(4, 2)
    action = policy(torch.zeros(5, 4))
    assert action.value.shape == (5,) and action.log_prob.shape == (5,)
    assert policy.act(torch.zeros(5, 4)).shape == (5,)


def _check_off_policy(namespace: dict[str, Any]) -> None:
    assert namespace["collector"].steps >= 30_000
    assert len(namespace["buffer"]) > 1_000
    history = namespace["evaluator"].history
    assert len(history) >= 10 and all(result.rewards.shape == (10,) for result in history)


# Each block's first line, what it takes from the cells before it, what it must have built.
Setup = Callable[[dict[str, Any]], None]
EXAMPLES: list[tuple[str, Setup, Callable[[dict[str, Any]], None]]] = [
    ("@dataclass(frozen=True)", lambda ns: None, _check_dataclass),
    ("batch = buffer.sample(64)", _buffer, _check_indexing),
    ("Transitions.cat([chunk_a, chunk_b])", _chunks, _check_cat),
    ("sub = batch[mask]", _masked, _check_masked),
    ("storage.set_(indices, transitions)", _storage, _check_storage),
    ("class DiscretePolicy(Actor[StochasticAction]):", lambda ns: None, _check_policy),
    ("import rl_mind.envs", _off_policy, _check_off_policy),
]


def _examples() -> list[Block]:
    return blocks("python", [README_04])


def test_every_python_block_of_the_0_4_readme_has_an_example_here() -> None:
    found = _examples()
    assert len(found) == len(EXAMPLES)
    for block, (first_line, _setup, _check) in zip(found, EXAMPLES, strict=True):
        assert block.code.startswith(first_line), block.where


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=[pytest.mark.slow] if i == len(EXAMPLES) - 1 else [])
        for i in range(len(EXAMPLES))
    ],
    ids=lambda i: EXAMPLES[i][0][:30],
)
def test_a_0_4_readme_block_runs_unchanged(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    block = _examples()[index]
    _first_line, setup, check = EXAMPLES[index]
    module = types.ModuleType(f"readme_04_{index}")  # a dataclass needs a real module
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    namespace.update(_imports())
    setup(namespace)
    torch.manual_seed(0)
    started = time.perf_counter()
    exec(compile(block.code, block.where, "exec"), namespace)
    print(f"{block.where}: {time.perf_counter() - started:.1f} s")
    check(namespace)
