"""What the checks feed the student's functions: tiny networks and stored inputs.

A case's inputs are stored as plain data (tensors, numbers, and dicts that describe a
network or a batch of transitions) so that they fit in a ``weights_only`` file; the engine
turns them into live objects (:func:`materialize`) afresh for every call, so that nothing
one call does can leak into the next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from rl_mind.core import Action, Actor, StochasticAction
from rl_mind.data import Transitions
from rl_mind.env import EnvStep

__all__ = [
    "NETWORKS",
    "ROLLOUT_CASES",
    "changed_parts",
    "env_step",
    "flags",
    "materialize",
    "network",
    "rand",
    "rollout_inputs",
    "transitions",
]


class QNetwork(nn.Module):
    """``obs [N, obs_dim] -> Q-values [N, n_actions]`` (a linear layer)."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim, n_actions)

    def forward(self, obs: Tensor) -> Tensor:
        return self.linear(obs)


class Critic(nn.Module):
    """``(obs [N, obs_dim], action [N, action_dim]) -> Q [N]``."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim + action_dim, 1)

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        return torch.tanh(self.linear(torch.cat([obs, action], dim=-1))).squeeze(-1) * 3.0


class DeterministicActor(Actor[Action]):
    """``act(obs)`` = tanh of a linear layer; ``forward`` adds a fixed 'exploration' offset,
    so that using ``actor(obs)`` where ``actor.act(obs)`` is meant shows up."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(obs_dim, action_dim)

    def forward(self, obs: Any) -> Action:
        return Action((self.act(obs) + 0.25).clamp(-1.0, 1.0))

    def act(self, obs: Any) -> Tensor:
        return torch.tanh(self.linear(obs))


class StochasticActor(Actor[StochasticAction]):
    """``actor(obs)`` returns a (deterministic, for reproducibility) 'sample' and its
    log-probability, both differentiable; ``act(obs)`` returns another action (the mean)."""

    def __init__(self, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.mean = nn.Linear(obs_dim, action_dim)
        self.spread = nn.Linear(obs_dim, 1)

    def forward(self, obs: Any) -> StochasticAction:
        value = torch.tanh(self.mean(obs) + 0.3)
        log_prob = -(self.spread(obs).squeeze(-1) ** 2) - 0.5
        return StochasticAction(value, log_prob)

    def act(self, obs: Any) -> Tensor:
        return torch.tanh(self.mean(obs))


NETWORKS: dict[str, Callable[[int, int], nn.Module]] = {
    "q_network": QNetwork,
    "critic": Critic,
    "deterministic_actor": DeterministicActor,
    "stochastic_actor": StochasticActor,
}
"""The networks a stored input may name: ``kind -> class(n_in, n_out)``. A practical that
needs another one adds it here."""


# ---------------------------------------------------------------------- building stored inputs
def rand(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    """Normal noise of ``shape`` from ``g``, times ``scale``."""
    return torch.randn(*shape, generator=g) * scale


def network(
    kind: str, g: torch.Generator, n_in: int, n_out: int, scale: float = 1.0
) -> dict[str, Any]:
    """A stored network of ``kind`` (a key of :data:`NETWORKS`) with random parameters."""
    module = NETWORKS[kind](n_in, n_out)
    state = {name: rand(g, *p.shape, scale=scale) for name, p in module.named_parameters()}
    return {"__network__": kind, "sizes": [n_in, n_out], "state": state}


def transitions(
    g: torch.Generator,
    n: int,
    obs_dim: int,
    action: Tensor,
    terminated: Tensor,
    obs_scale: float = 1.0,
) -> dict[str, Any]:
    """A stored batch of ``n`` transitions (random observations and rewards)."""
    return {
        "__transitions__": True,
        "obs": rand(g, n, obs_dim, scale=obs_scale),
        "action": action,
        "reward": rand(g, n),
        "next_obs": rand(g, n, obs_dim, scale=obs_scale),
        "terminated": terminated,
    }


_ENV_STEP_FIELDS = ("obs", "next_obs", "reward", "terminated", "truncated", "autoreset")


def env_step(
    obs: Tensor, next_obs: Tensor, reward: Tensor, terminated: Tensor, truncated: Tensor
) -> dict[str, Any]:
    """A stored :class:`~rl_mind.env.EnvStep` of the same-step reset mode (no reset rows)."""
    autoreset = torch.zeros_like(terminated)
    values = (obs, next_obs, reward, terminated, truncated, autoreset)
    return {"__env_step__": True, **dict(zip(_ENV_STEP_FIELDS, values))}


def flags(t: int, b: int, cells: Sequence[tuple[int, int]]) -> Tensor:
    """A ``[t, b]`` bool tensor, True at ``cells``."""
    result = torch.zeros(t, b, dtype=torch.bool)
    for i, j in cells:
        result[i, j] = True
    return result


# rollouts [T, B] (A2C, PPO): (T, terminated cells, truncated cells), B = 3, one difficulty
# more per case
_ROLLOUT_LAYOUTS: tuple[tuple[int, list[tuple[int, int]], list[tuple[int, int]]], ...] = (
    (1, [], []),
    (5, [], []),
    (5, [(4, 0), (4, 2)], []),
    (6, [(2, 0), (4, 1)], []),
    (6, [], [(1, 0), (3, 2)]),
)

ROLLOUT_CASES = (
    "one step, no episode end (T = 1)",
    "several steps, no episode end",
    "a terminal step at the end of the rollout",
    "an episode that terminates inside the rollout",
    "an episode truncated inside the rollout (time limit)",
)


def rollout_inputs(g: torch.Generator, case: int) -> dict[str, Any]:
    """``reward``, ``value``, ``next_value``, ``terminated``, ``truncated`` ``[T, B]`` of
    the rollout layout ``case`` (see :data:`ROLLOUT_CASES`)."""
    t, terminated, truncated = _ROLLOUT_LAYOUTS[case]
    return {
        "reward": rand(g, t, 3) + 1.0,
        "value": rand(g, t, 3, scale=2.0),
        "next_value": rand(g, t, 3, scale=2.0) + 3.0,
        "terminated": flags(t, 3, terminated),
        "truncated": flags(t, 3, truncated),
    }


# ---------------------------------------------------------------------- live inputs
def materialize(raw: Any, requires_grad: bool = False) -> Any:
    """A live input from stored data: a fresh network, ``Transitions`` or tensor."""
    if isinstance(raw, dict) and "__network__" in raw:
        module = NETWORKS[raw["__network__"]](*raw["sizes"])
        module.load_state_dict(raw["state"])
        return module
    if isinstance(raw, dict) and "__transitions__" in raw:
        return Transitions(
            obs=raw["obs"].clone(),
            action=Action(raw["action"].clone()),
            reward=raw["reward"].clone(),
            next_obs=raw["next_obs"].clone(),
            terminated=raw["terminated"].clone(),
        )
    if isinstance(raw, dict) and "__env_step__" in raw:
        return EnvStep(**{name: raw[name].clone() for name in _ENV_STEP_FIELDS})
    if isinstance(raw, list):
        return [materialize(item, requires_grad) for item in raw]
    if isinstance(raw, Tensor):
        return raw.clone().requires_grad_(requires_grad)
    return raw


def changed_parts(label: str, live: Any, raw: Any) -> list[str]:
    """The parts of the live input ``live`` that no longer equal the stored ``raw``
    (``"batch.reward"``, ``"networks[1]"``...): what the function changed in place."""
    if isinstance(raw, dict) and "__network__" in raw:
        state = live.state_dict()
        same = all(torch.equal(state[key], value) for key, value in raw["state"].items())
        return [] if same else [label]
    if isinstance(raw, dict) and "__transitions__" in raw:
        fields = {
            "obs": live.obs,
            "action": live.action.value,
            "reward": live.reward,
            "next_obs": live.next_obs,
            "terminated": live.terminated,
        }
        return [
            f"{label}.{name}" for name, now in fields.items() if not torch.equal(now, raw[name])
        ]
    if isinstance(raw, dict) and "__env_step__" in raw:
        return [
            f"{label}.{name}"
            for name in _ENV_STEP_FIELDS
            if not torch.equal(getattr(live, name), raw[name])
        ]
    if isinstance(raw, list):
        return [
            part
            for i, (item, stored) in enumerate(zip(live, raw))
            for part in changed_parts(f"{label}[{i}]", item, stored)
        ]
    if isinstance(raw, Tensor):
        return [] if torch.equal(live.detach(), raw) else [label]
    return []
