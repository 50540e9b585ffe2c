"""What learning code consumes: transitions, a replay buffer, episodes, rollouts, minibatches.

- :class:`Transitions` ``[N]``: ``(s, a, r, s', terminated)`` samples for off-policy learning
  (DQN, DDPG, TD3, SAC), stored in a :class:`ReplayBuffer`.
- :class:`Episode` ``[T]``: one whole episode, for Monte-Carlo returns (REINFORCE).
- :class:`Rollout` ``[T, B]``: a fixed-length on-policy segment of ``B`` copies (A2C, PPO).

What the reader must not get wrong: a transition only records ``terminated``; a truncated one
(time limit) is a normal transition whose ``next_obs`` is the true last observation, so the
target bootstraps from it. A ``Rollout`` keeps ``truncated`` too: returns and GAE stop at
every episode boundary but bootstrap only at truncations.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from torch import Tensor

from rl_mind._validation import as_int, checked_device
from rl_mind.core import ActionT, Observation, TensorStruct, same_value, unbatched

__all__ = ["Episode", "ReplayBuffer", "Rollout", "Transitions", "minibatches"]


@dataclasses.dataclass(frozen=True)
class Transitions(TensorStruct, Generic[ActionT]):
    """A flat batch of ``N`` transitions.

    - ``obs``: ``[N, ...]`` the observation acted on.
    - ``action``: the action taken (``action.value`` ``[N]`` or ``[N, action_dim]``).
    - ``reward``: ``[N]`` float32.
    - ``next_obs``: ``[N, ...]`` the true successor of ``obs`` (the final observation at the
      end of an episode, never the first observation of the next one).
    - ``terminated``: ``[N]`` bool, ``next_obs`` is terminal (its value is 0).
    """

    obs: Observation
    action: ActionT
    reward: Tensor
    next_obs: Observation
    terminated: Tensor


@dataclasses.dataclass(frozen=True)
class Episode(TensorStruct, Generic[ActionT]):
    """One whole episode of ``T`` steps.

    - ``obs``: ``[T, ...]`` the observations acted on, ``s_0 … s_{T-1}``.
    - ``action``: ``[T]`` (or ``[T, action_dim]``) the actions taken.
    - ``reward``: ``[T]`` float32, ``r_1 … r_T``.
    - ``final_obs``: ``[...]`` the last observation ``s_T`` (no time dimension).
    - ``terminated``: ``True`` if ``s_T`` is terminal, ``False`` if the episode was truncated.
    """

    obs: Observation
    action: ActionT
    reward: Tensor
    final_obs: Observation = unbatched()
    terminated: bool = unbatched(default=False)

    @property
    def cumulated_reward(self) -> float:
        """The undiscounted return ``r_1 + … + r_T``."""
        return float(self.reward.sum())

    @property
    def all_obs(self) -> Observation:
        """``[T + 1, ...]``: ``obs`` with ``final_obs`` appended, so that
        ``critic(ep.all_obs)`` gives ``V(s_0) … V(s_T)``."""
        obs, final = self.obs, self.final_obs.unsqueeze(0)
        if isinstance(obs, Tensor):
            return torch.cat([obs, final])  # type: ignore[list-item]
        return type(obs).cat([obs, final])  # type: ignore[list-item]


@dataclasses.dataclass(frozen=True)
class Rollout(TensorStruct, Generic[ActionT]):
    """``T`` consecutive steps of ``B`` copies, every step a valid transition.

    Fields are ``[T, B, ...]``: ``obs``, ``action``, ``reward``, ``next_obs`` (the true
    successor, the final observation at an episode end), ``terminated`` and ``truncated``
    (bool). An episode boundary may fall anywhere inside the rollout: at a ``done`` step the
    next row's ``obs`` starts a new episode.
    """

    obs: Observation
    action: ActionT
    reward: Tensor
    next_obs: Observation
    terminated: Tensor
    truncated: Tensor

    @property
    def done(self) -> Tensor:
        """``[T, B]`` bool: the episode ended at this step (terminated or truncated)."""
        return self.terminated | self.truncated

    def flatten(self) -> Rollout[ActionT]:
        """The same steps as a flat batch ``[T * B, ...]`` (row ``t * B + b``)."""
        if self.reward.dim() < 2:
            raise ValueError(
                f"Rollout.flatten expects [T, B] fields, reward has shape {list(self.reward.shape)}"
            )
        return self.flatten_leading(2)


DataT = TypeVar("DataT", bound="Tensor | TensorStruct | tuple[Any, ...]")
StructT = TypeVar("StructT", bound=TensorStruct)  #: rl-mind 0.4's name, kept for its notebooks


def _walk(struct: TensorStruct, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """``(dotted path, kind, value)`` of every field of ``struct`` and of its batched nested
    structs, in field order; ``kind``: ``"unbatched"``, ``"struct"`` or ``"tensor"`` (batched)."""
    for name, batched in struct._fields():
        path, value = prefix + name, getattr(struct, name)
        nested = batched and isinstance(value, TensorStruct)
        kind = "struct" if nested else "tensor" if batched else "unbatched"
        yield path, kind, value
        if kind == "struct":
            yield from _walk(value, path + ".")


def _getter(paths: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A ``struct -> (values at paths)`` function (``attrgetter`` alone: a bare value for one)."""
    if len(paths) == 1:
        single = operator.attrgetter(paths[0])
        return lambda struct: (single(struct),)
    return operator.attrgetter(*paths) if paths else lambda _struct: ()


def _check_storable(name: str, value: Any, batched: bool) -> None:
    """Refuse a batched field that is not a tensor, or any on the meta device (no values)."""
    if batched and not isinstance(value, Tensor):
        raise TypeError(
            f"ReplayBuffer.add: field {name!r} is a {type(value).__name__}, expected a tensor "
            f"(convert it with torch.as_tensor)"
        )
    tensors = value.tensors() if isinstance(value, TensorStruct) else [value]
    if any(isinstance(tensor, Tensor) and tensor.is_meta for tensor in tensors):
        raise ValueError(
            f"ReplayBuffer.add: field {name!r} is on the meta device, which holds no values to "
            f"store; add tensors on a real device (e.g. 'cpu')"
        )


def _numpy_view(tensor: Tensor) -> Tensor | np.ndarray:
    """A numpy view of a CPU tensor (the same memory), else the tensor (a GPU's, a bfloat16)."""
    if tensor.device.type != "cpu":
        return tensor
    try:
        return tensor.numpy()
    except TypeError:
        return tensor


def _as_numpy(tensor: Tensor) -> np.ndarray:
    """The values of a tensor (of a dtype numpy has) as a numpy array, shared when it can be."""
    if tensor.requires_grad or not tensor.is_cpu:
        tensor = tensor.detach().cpu()
    return tensor.numpy()


class ReplayBuffer(Generic[ActionT]):
    """A ring buffer of :class:`Transitions` with uniform sampling (with replacement).

    Storage is allocated on the first ``add``, from the incoming shapes and dtypes, on
    ``device`` (default: CPU). When full, each ``add`` overwrites the oldest items; an
    ``add`` larger than ``capacity`` keeps its newest ``capacity`` items. Every ``add``
    is checked against the storage (same struct types, per-item shapes and dtypes) before
    anything is written, so a rejected one changes nothing. An ``unbatched()`` field is
    stored once, from the first ``add``: later adds must carry the same value, and samples
    carry it along.
    """

    # The layout, fixed by the first add (_allocate) and checked at every later one.
    _targets: list[Tensor | np.ndarray]  # what add writes into: the storage or numpy views
    _item_layout: list[tuple[Any, Any]]  # (shape, dtype) of a target's item
    _leaf_names: list[str]  # the batched tensors' dotted paths, in the order of _targets
    _get_leaves: Callable[[Any], tuple[Any, ...]]
    _get_nodes: Callable[[Any], tuple[Any, ...]]  # the batched nested structs
    _node_types: tuple[type, ...]
    _fixed_names: list[str]  # the unbatched fields: stored once, every add must agree
    _get_fixed: Callable[[Any], tuple[Any, ...]]

    def __init__(self, capacity: int, device: torch.device | str | None = None) -> None:
        count = as_int(capacity)
        if count is None or count <= 0:
            raise ValueError(f"ReplayBuffer capacity must be a positive int, got {capacity!r}")
        self.capacity = count
        self.device = checked_device(device, "ReplayBuffer")
        # the first add's structs with the storage ([capacity, ...]) as their batched tensors
        self._stored: Transitions[ActionT] | None = None
        self._position = 0  # where the next item goes
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"ReplayBuffer(capacity={self.capacity}, size={self._size}, device={self.device})"

    def _allocate(self, transitions: Transitions[ActionT]) -> None:
        """Fix the layout from the first add, once its fields are checked. ``_stored``, the
        mark of an allocated buffer, is set last: a first add that raises fixes nothing."""
        paths: dict[str, list[str]] = {"tensor": [], "struct": [], "unbatched": []}
        for path, kind, value in _walk(transitions):
            paths[kind].append(path)
            if kind != "struct":  # (a struct's tensors are checked as fields of their own)
                _check_storable(path, value, batched=kind == "tensor")
        self._leaf_names, self._fixed_names = paths["tensor"], paths["unbatched"]
        self._get_leaves, self._get_fixed = _getter(paths["tensor"]), _getter(paths["unbatched"])
        self._get_nodes = _getter(paths["struct"])
        self._node_types = tuple(map(type, self._get_nodes(transitions)))
        storage = [
            torch.empty((self.capacity, *leaf.shape[1:]), dtype=leaf.dtype, device=self.device)
            for leaf in self._get_leaves(transitions)
        ]
        # on the CPU, adds write through numpy views of the storage (numpy writes a few rows
        # for less than torch does); elsewhere, or for a dtype numpy lacks, into the tensors
        self._targets = [_numpy_view(store) for store in storage]
        self._item_layout = [(target.shape[1:], target.dtype) for target in self._targets]
        stores = iter(storage)  # (in field order, as apply visits the tensors)
        # `to` moves the unbatched fields to the device; the storage is there already
        self._stored = transitions.apply(lambda _leaf: next(stores), batched_only=True).to(
            self.device
        )

    def _check_like_first(
        self, transitions: Transitions[ActionT], stored: Transitions[ActionT]
    ) -> None:
        """A later add must carry the struct types and the unbatched values of the first."""
        try:
            same_types = type(transitions) is type(stored) and (
                tuple(map(type, self._get_nodes(transitions))) == self._node_types
            )
        except AttributeError:  # (a nested struct of another type lacks a field)
            same_types = False
        if not same_types:
            raise TypeError(
                f"ReplayBuffer stores {type(stored).__name__} with "
                f"{type(stored.action).__name__}, got {type(transitions).__name__} with "
                f"{type(transitions.action).__name__} (or different observation fields)"
            )
        fixed = zip(self._fixed_names, self._get_fixed(transitions), self._get_fixed(stored))
        for name, value, kept in fixed:
            _check_storable(name, value, batched=False)
            moved = value.to(self.device) if isinstance(value, Tensor | TensorStruct) else value
            if not same_value(kept, moved):
                raise ValueError(
                    f"ReplayBuffer: the unbatched field {name!r} is {value!r}, but the buffer "
                    f"stores {kept!r} (set by the first add; an unbatched field is stored "
                    f"once, so every add must carry the same value)"
                )

    def _refuse(self, leaves: tuple[Any, ...]) -> None:
        """Raise the error that says which field does not fit the storage, and why."""
        for name, leaf, store in zip(self._leaf_names, leaves, self._get_leaves(self._stored)):
            _check_storable(name, leaf, batched=True)
            if leaf.shape[1:] != store.shape[1:] or leaf.dtype != store.dtype:
                raise ValueError(
                    f"ReplayBuffer: field {name!r} has per-item shape {list(leaf.shape[1:])} "
                    f"and dtype {leaf.dtype}, but the buffer stores {list(store.shape[1:])} "
                    f"{store.dtype} (set by the first add)"
                )
        raise ValueError("ReplayBuffer.add: these transitions cannot be stored")

    def add(self, transitions: Transitions[ActionT]) -> None:
        """Append ``N`` transitions (``[N, ...]``), overwriting the oldest when full."""
        if not isinstance(transitions, Transitions):
            raise TypeError(
                f"ReplayBuffer.add expects Transitions, got {type(transitions).__name__}"
            )
        if self._stored is None:
            self._allocate(transitions)
        else:
            self._check_like_first(transitions, self._stored)
        leaves = self._get_leaves(transitions)
        try:  # each field as its storage takes it, checked to have the storage's layout
            values: list[Any] = [
                _as_numpy(leaf) if isinstance(target, np.ndarray) else leaf.detach().to(self.device)
                for target, leaf in zip(self._targets, leaves)
            ]
            fits = [(value.shape[1:], value.dtype) for value in values] == self._item_layout
        except (AttributeError, TypeError, RuntimeError, NotImplementedError):
            fits = False  # not a tensor, on the meta device, or a dtype numpy lacks
        if not fits:
            self._refuse(leaves)
        n = len(values[0])
        if n > self.capacity:  # keep the newest `capacity` items
            values = [value[n - self.capacity :] for value in values]
            n = self.capacity
        start = self._position
        if start + n <= self.capacity:
            for target, value in zip(self._targets, values):
                target[start : start + n] = value
        else:  # the rows past the end go round to the start
            first = self.capacity - start
            for target, value in zip(self._targets, values):
                target[start:] = value[:first]
                target[: n - first] = value[first:]
        self._position = (start + n) % self.capacity
        self._size = min(self._size + n, self.capacity)

    def sample(
        self, batch_size: int, generator: torch.Generator | None = None
    ) -> Transitions[ActionT]:
        """``batch_size`` transitions drawn uniformly with replacement, on the buffer's device."""
        size = as_int(batch_size)
        if size is None or size <= 0:
            raise ValueError(f"sample: batch_size must be a positive int, got {batch_size!r}")
        if self._stored is None or self._size == 0:
            raise ValueError("sample: the replay buffer is empty; add transitions first")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"sample: generator must be a torch.Generator or None, got "
                f"{type(generator).__name__} (the second argument is the generator: "
                f"sample(batch_size, generator=torch.Generator().manual_seed(seed)))"
            )
        device = self.device if generator is None else generator.device
        index = torch.randint(0, self._size, (size,), generator=generator, device=device)
        index = index.to(self.device)  # (drawn where the generator is, used on the buffer's)
        return self._stored.apply(lambda store: store.index_select(0, index), batched_only=True)


def minibatches(
    data: DataT, batch_size: int, shuffle: bool = True, generator: torch.Generator | None = None
) -> Iterator[DataT]:
    """Split ``data`` (``[N, ...]``) into minibatches of ``batch_size`` rows (the last may be
    smaller); one pass yields every row exactly once, in random order if ``shuffle``.

    ``data`` is a tensor, a ``TensorStruct`` (e.g. ``rollout.flatten()``) or a tuple of them
    with the same leading size (e.g. ``(batch, advantages, returns)``); each minibatch has the
    same structure. Bad arguments are refused at the call.
    """
    size = as_int(batch_size)
    if size is None or size <= 0:
        raise ValueError(f"minibatches: batch_size must be a positive int, got {batch_size!r}")
    items = data if isinstance(data, tuple) else (data,)
    if len(items) == 0:
        raise ValueError("minibatches: got an empty tuple, expected at least one tensor or struct")
    for item in items:
        if not isinstance(item, Tensor | TensorStruct):
            raise TypeError(
                f"minibatches expects a tensor, a TensorStruct or a tuple of them, got "
                f"{type(item).__name__}"
            )
    sizes = [len(item) for item in items]  # (a 0-d tensor or an item s[i] has none: TypeError)
    if len(set(sizes)) != 1:
        raise ValueError(f"minibatches: all items must share their leading size, got {sizes}")

    def one_pass() -> Iterator[Any]:  # (a generator: the order is drawn as it starts)
        n, where = sizes[0], generator.device if generator else "cpu"  # (the generator's device)
        order = torch.randperm(n, generator=generator, device=where) if shuffle else torch.arange(n)
        order = order.to(items[0].device)
        for start in range(0, n, size):
            index = order[start : start + size]
            batch = tuple(item[index.to(item.device)] for item in items)
            yield batch if isinstance(data, tuple) else batch[0]

    return one_pass()
