"""Batched play on numpy observations, shared by the game's opponents and the match engine.

- :func:`act_on_numpy`: the one adapter from a torch policy (an ``Actor``, an ``nn.Module``,
  a callable on tensors) to numpy actions; the callers check the actions they get.
- :func:`rows_by_owner`: the rows each policy acts on, when many policies share a batch.

What the reader must not get wrong: the rows of a group come in ascending order, so that a
policy that draws random numbers (the random bot, a sampling actor) draws them for the same
rows in the same order, and a seeded run replays exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["act_on_numpy", "rows_by_owner"]


def act_on_numpy(policy: Any, obs: np.ndarray) -> np.ndarray:
    """``policy(obs)`` under ``torch.no_grad()`` on the policy's device, as a numpy array:
    an ``Action``'s ``value``, or the tensor / array it returned (unchecked)."""
    obs_tensor = torch.from_numpy(obs)
    if isinstance(policy, nn.Module):
        parameter = next(policy.parameters(), None)
        if parameter is not None and parameter.device != obs_tensor.device:
            obs_tensor = obs_tensor.to(parameter.device)
    with torch.no_grad():
        out = policy(obs_tensor)
    value = getattr(out, "value", out)  # an Action, or a plain tensor / array
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def rows_by_owner(owners: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(owner, rows)`` for each distinct value of ``owners`` ``[N]`` (ints), in ascending
    order: the rows where it appears, ascending."""
    order = np.argsort(owners, kind="stable")
    sorted_owners = owners[order]
    starts = np.flatnonzero(np.r_[True, sorted_owners[1:] != sorted_owners[:-1]])
    ends = np.r_[starts[1:], len(owners)]
    return [(int(sorted_owners[s]), order[s:e]) for s, e in zip(starts, ends) if e > s]
