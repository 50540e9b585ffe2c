"""What learning code consumes: transitions, a replay buffer, episodes, rollouts, minibatches.

- :class:`Transitions` ``[N]``: independent ``(s, a, r, s', terminated)`` samples for
  off-policy learning (DQN, DDPG, TD3, SAC), stored in a :class:`ReplayBuffer`.
- :class:`Episode` ``[T]``: one whole episode, for Monte-Carlo returns (REINFORCE).
- :class:`Rollout` ``[T, B]``: a fixed-length on-policy segment of ``B`` copies (A2C, PPO).

What the reader must not get wrong: a transition only records ``terminated``. A truncated
transition (time limit) is a perfectly normal transition whose ``next_obs`` is the true last
observation, so the target bootstraps from it. A ``Rollout`` keeps ``truncated`` too,
because returns and GAE must stop at every episode boundary but bootstrap only at
truncations.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, overload

import numpy as np
import torch
from torch import Tensor

from rl_mind.core import (
    ActionT,
    Observation,
    TensorStruct,
    _as_int,
    _checked_device,
    _same_value,
    unbatched,
)

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
        final = self.final_obs
        if isinstance(self.obs, Tensor):
            if not isinstance(final, Tensor):
                raise TypeError("Episode.final_obs must be a tensor when obs is a tensor")
            return torch.cat([self.obs, final.unsqueeze(0)])
        if not isinstance(final, TensorStruct):
            raise TypeError("Episode.final_obs must be a TensorStruct when obs is one")
        return type(self.obs).cat([self.obs, final.unsqueeze(0)])


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


StructT = TypeVar("StructT", bound=TensorStruct)


def _leaf_paths(struct: TensorStruct, prefix: str = "") -> tuple[list[str], list[str], list[str]]:
    """Dotted paths, in field order, of every batched tensor, every nested batched struct,
    and every unbatched field (carried along as it is) of ``struct``. Any other batched
    field is refused: the buffer stores tensors (it would pass for metadata)."""
    leaves: list[str] = []
    nodes: list[str] = []
    fixed: list[str] = []
    for name, batched in struct._fields():
        value = getattr(struct, name)
        if not batched:
            fixed.append(prefix + name)
        elif isinstance(value, Tensor):
            leaves.append(prefix + name)
        elif isinstance(value, TensorStruct):
            nodes.append(prefix + name)
            sub_leaves, sub_nodes, sub_fixed = _leaf_paths(value, f"{prefix}{name}.")
            leaves += sub_leaves
            nodes += sub_nodes
            fixed += sub_fixed
        else:
            raise TypeError(
                f"ReplayBuffer.add: field {prefix + name!r} is a {type(value).__name__}, "
                f"expected a tensor (convert it with torch.as_tensor)"
            )
    return leaves, nodes, fixed


def _refuse_meta(value: Any, name: str) -> None:
    """A ``ValueError`` for a field whose tensor (or one of whose tensors, for a struct) is on
    the meta device: it has a shape but no values to store."""
    if isinstance(value, TensorStruct):
        on_meta = any(tensor.is_meta for tensor in value.tensors())
    else:
        on_meta = isinstance(value, Tensor) and value.is_meta
    if on_meta:
        raise ValueError(
            f"ReplayBuffer.add: field {name!r} is on the meta device, which holds no values to "
            f"store; add tensors on a real device (e.g. 'cpu')"
        )


def _getter(paths: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A ``struct -> tuple of the values at paths`` function."""
    if not paths:
        return lambda _struct: ()
    if len(paths) == 1:
        single = operator.attrgetter(paths[0])
        return lambda struct: (single(struct),)
    return operator.attrgetter(*paths)


def _rebuild(template: StructT, leaves: Iterator[Tensor]) -> StructT:
    """``template`` with its batched tensors replaced, in order, by ``leaves`` (unchecked);
    unbatched fields are kept as they are."""
    values = []
    for name, batched in template._fields():
        value = getattr(template, name)
        if batched:
            if isinstance(value, Tensor):
                value = next(leaves)
            elif isinstance(value, TensorStruct):
                value = _rebuild(value, leaves)
        values.append(value)
    return type(template)._trusted(*values)


def _numpy_view(tensor: Tensor) -> Tensor | np.ndarray:
    """A numpy view of a CPU tensor (the same memory), or the tensor itself when it is on
    another device or of a dtype numpy lacks (bfloat16)."""
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


def _to_device(value: Any, device: torch.device) -> Any:
    """A tensor or struct moved to ``device``; anything else as it is."""
    return value.to(device) if isinstance(value, Tensor | TensorStruct) else value


def _unbatched_to(struct: StructT, device: torch.device) -> StructT:
    """``struct`` with its unbatched tensors and structs (nested ones included) on ``device``."""
    values = []
    for name, batched in struct._fields():
        value = getattr(struct, name)
        if not batched:
            value = _to_device(value, device)
        elif isinstance(value, TensorStruct):
            value = _unbatched_to(value, device)
        values.append(value)
    return type(struct)._trusted(*values)


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

    def __init__(self, capacity: int, device: torch.device | str | None = None) -> None:
        count = _as_int(capacity)
        if count is None or count <= 0:
            raise ValueError(f"ReplayBuffer capacity must be a positive int, got {capacity!r}")
        self.capacity = count
        self.device = _checked_device(device, "ReplayBuffer")
        self._template: Transitions[ActionT] | None = None
        self._storage: list[Tensor] = []
        self._targets: list[Tensor | np.ndarray] = []  # what add writes into (see _allocate)
        self._layout: list[tuple[tuple[int, ...], torch.dtype]] = []
        self._item_layout: list[tuple[Any, Any]] = []  # (shape, dtype) of a target's item
        self._leaf_names: list[str] = []
        self._get_leaves: Callable[[Any], tuple[Any, ...]] = _getter([])
        self._get_nodes: Callable[[Any], tuple[Any, ...]] = _getter([])
        self._node_types: tuple[type, ...] = ()
        # unbatched fields (e.g. an action's scale): stored once, every add must agree
        self._fixed_names: list[str] = []
        self._get_fixed: Callable[[Any], tuple[Any, ...]] = _getter([])
        self._fixed_values: tuple[Any, ...] = ()
        self._position = 0  # where the next item goes
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"ReplayBuffer(capacity={self.capacity}, size={self._size}, device={self.device})"

    def _allocate(self, transitions: Transitions[ActionT]) -> None:
        """Fix the storage layout from the first add. Its fields are checked first (tensors
        holding values), and ``_template``, the mark of an allocated buffer, is set last: a
        first add that raises fixes nothing, and the next add allocates afresh."""
        leaf_paths, node_paths, fixed_paths = _leaf_paths(transitions)
        get_leaves, get_fixed = _getter(leaf_paths), _getter(fixed_paths)
        leaves = get_leaves(transitions)
        for name, value in zip([*leaf_paths, *fixed_paths], leaves + get_fixed(transitions)):
            _refuse_meta(value, name)
        self._leaf_names = leaf_paths
        self._get_leaves = get_leaves
        self._get_nodes = _getter(node_paths)
        self._fixed_names = fixed_paths
        self._get_fixed = get_fixed
        self._node_types = tuple(type(node) for node in self._get_nodes(transitions))
        self._layout = [(tuple(t.shape[1:]), t.dtype) for t in leaves]
        self._storage = [
            torch.empty((self.capacity, *shape), dtype=dtype, device=self.device)
            for shape, dtype in self._layout
        ]
        # on the CPU, adds write through numpy views of the storage (numpy writes a few rows
        # for less than torch does); elsewhere, or for a dtype numpy lacks, into the tensors
        self._targets = [_numpy_view(store) for store in self._storage]
        self._item_layout = [(target.shape[1:], target.dtype) for target in self._targets]
        # what sample rebuilds: the batched tensors come from the storage, the unbatched
        # fields from here, moved to the buffer's device too
        template = _unbatched_to(transitions, self.device) if fixed_paths else transitions
        self._fixed_values = self._get_fixed(template)
        self._template = template

    def _check_types(
        self, transitions: Transitions[ActionT], template: Transitions[ActionT]
    ) -> None:
        """An add must carry the struct types of the first one (``template``) and its
        unbatched fields."""
        try:
            same_types = type(transitions) is type(template) and (
                tuple(map(type, self._get_nodes(transitions))) == self._node_types
            )
        except AttributeError:  # (a nested struct of another type lacks a field)
            same_types = False
        if not same_types:
            raise TypeError(
                f"ReplayBuffer stores {type(template).__name__} with "
                f"{type(template.action).__name__}, got {type(transitions).__name__} with "
                f"{type(transitions.action).__name__} (or different observation fields)"
            )
        if self._fixed_names:
            self._check_fixed(transitions)

    def _refuse(self, leaves: tuple[Any, ...]) -> None:
        """Raise the error that says which field does not fit the storage, and why."""
        for name, leaf, (shape, dtype) in zip(self._leaf_names, leaves, self._layout):
            if not isinstance(leaf, Tensor):  # (as at the first add)
                raise TypeError(
                    f"ReplayBuffer.add: field {name!r} is a {type(leaf).__name__}, expected "
                    f"a tensor (convert it with torch.as_tensor)"
                )
            _refuse_meta(leaf, name)
            if leaf.shape[1:] != shape or leaf.dtype != dtype:
                raise ValueError(
                    f"ReplayBuffer: field {name!r} has per-item shape {list(leaf.shape[1:])} "
                    f"and dtype {leaf.dtype}, but the buffer stores {list(shape)} {dtype} (set "
                    f"by the first add)"
                )
        raise ValueError("ReplayBuffer.add: these transitions cannot be stored")

    def _check_fixed(self, transitions: Transitions[ActionT]) -> None:
        """Unbatched fields must be those of the first add (they are stored once)."""
        try:
            values = self._get_fixed(transitions)
        except AttributeError:
            return  # not the stored struct types: the type check says so
        for name, value, stored in zip(self._fixed_names, values, self._fixed_values):
            _refuse_meta(value, name)
            if not _same_value(stored, _to_device(value, self.device)):
                raise ValueError(
                    f"ReplayBuffer: the unbatched field {name!r} is {value!r}, but the buffer "
                    f"stores {stored!r} (set by the first add; an unbatched field is stored "
                    f"once, so every add must carry the same value)"
                )

    def add(self, transitions: Transitions[ActionT]) -> None:
        """Append ``N`` transitions (``[N, ...]``), overwriting the oldest when full.

        Validate everything first, then write: an add that raises (another struct type, a
        per-item shape or dtype other than the storage's, a field on the meta device, an
        unbatched field that differs) leaves the buffer as it was, its length, contents and
        position; a first add that raises does not fix the storage layout."""
        if not isinstance(transitions, Transitions):
            raise TypeError(
                f"ReplayBuffer.add expects Transitions, got {type(transitions).__name__}"
            )
        if self._template is None:
            self._allocate(transitions)
        else:
            self._check_types(transitions, self._template)
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
        size = _as_int(batch_size)
        if size is None or size <= 0:
            raise ValueError(f"sample: batch_size must be a positive int, got {batch_size!r}")
        batch_size = size
        if self._size == 0 or self._template is None:
            raise ValueError("sample: the replay buffer is empty; add transitions first")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"sample: generator must be a torch.Generator or None, got "
                f"{type(generator).__name__} (the second argument is the generator: "
                f"sample(batch_size, generator=torch.Generator().manual_seed(seed)))"
            )
        device = generator.device if generator is not None else self.device
        index = torch.randint(0, self._size, (batch_size,), generator=generator, device=device)
        if index.device != self.device:
            index = index.to(self.device)
        return _rebuild(
            self._template, iter([store.index_select(0, index) for store in self._storage])
        )


def _index_rows(data: Any, index: Tensor) -> Any:
    """``data[index]`` for a tensor or struct and a long ``index`` of valid, non-negative
    rows, on each tensor's own device (the index is moved where a tensor lives, e.g. a GPU).
    """

    def rows(tensor: Tensor) -> Tensor:
        if tensor.device != index.device:
            return tensor.index_select(0, index.to(tensor.device))
        return tensor.index_select(0, index)

    if isinstance(data, Tensor):
        return rows(data)
    return data._apply_batched(rows)


def _leading_size(data: Any) -> int:
    if isinstance(data, Tensor):
        if data.dim() == 0:
            raise ValueError("minibatches: expected tensors with a leading dimension, got a scalar")
        return int(data.shape[0])
    if isinstance(data, TensorStruct):
        return len(data)
    raise TypeError(
        f"minibatches expects a tensor, a TensorStruct or a tuple of them, got {type(data).__name__}"
    )


@overload
def minibatches(
    data: StructT, batch_size: int, shuffle: bool = True, generator: torch.Generator | None = None
) -> Iterator[StructT]: ...
@overload
def minibatches(
    data: Tensor, batch_size: int, shuffle: bool = True, generator: torch.Generator | None = None
) -> Iterator[Tensor]: ...
@overload
def minibatches(
    data: tuple[Any, ...],
    batch_size: int,
    shuffle: bool = True,
    generator: torch.Generator | None = None,
) -> Iterator[tuple[Any, ...]]: ...
def minibatches(
    data: Any, batch_size: int, shuffle: bool = True, generator: torch.Generator | None = None
) -> Iterator[Any]:
    """Split ``data`` (``[N, ...]``) into minibatches of ``batch_size`` rows (the last may be
    smaller); one pass yields every row exactly once, in random order if ``shuffle``.

    ``data`` is a tensor, a ``TensorStruct`` (e.g. ``rollout.flatten()``) or a tuple of them
    with the same leading size (e.g. ``(batch, advantages, returns)``); each minibatch has the
    same structure.
    """
    size = _as_int(batch_size)
    if size is None or size <= 0:
        raise ValueError(f"minibatches: batch_size must be a positive int, got {batch_size!r}")
    batch_size = size
    items = data if isinstance(data, tuple) else (data,)
    if len(items) == 0:
        raise ValueError("minibatches: got an empty tuple, expected at least one tensor or struct")
    sizes = [_leading_size(item) for item in items]
    if len(set(sizes)) != 1:
        raise ValueError(f"minibatches: all items must share their leading size, got {sizes}")
    # (the checks above run at the call, the rows are drawn and handed out as it is iterated)
    return _minibatches(data, items, sizes[0], batch_size, shuffle, generator)


def _minibatches(
    data: Any,
    items: tuple[Any, ...],
    n: int,
    batch_size: int,
    shuffle: bool,
    generator: torch.Generator | None,
) -> Iterator[Any]:
    device = items[0].device
    if shuffle:
        order = torch.randperm(
            n, generator=generator, device=generator.device if generator else "cpu"
        )
        order = order.to(device)
    else:
        order = torch.arange(n, device=device)
    for start in range(0, n, batch_size):
        index = order[start : start + batch_size]
        if isinstance(data, tuple):
            yield tuple(_index_rows(item, index) for item in items)
        else:
            yield _index_rows(data, index)
