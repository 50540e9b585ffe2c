"""Typed tensor containers, actions and actors: the vocabulary every other module speaks.

A :class:`TensorStruct` is a frozen dataclass of tensors that acts like one tensor along its
*leading* dimension (``s[i]``, ``len``, ``cat``, ``to``...). What the reader must not get wrong:

- Batched fields share the leading dimension (checked at construction); an ``unbatched()``
  field (an Episode's final observation) is carried along, never indexed, cat or stacked.
- ``s[i]`` drops the leading dimension like a tensor: ``[T, B]`` fields give a ``[B]`` struct,
  ``[N]`` fields an item without length. ``s.set_(index, value)`` is the one in-place write.
- ``actor(obs)`` returns an :class:`Action` (training), ``actor.act(obs)`` a tensor (evaluation).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeVar

import torch
from torch import Tensor, nn
from typing_extensions import Self

from rl_mind._validation import as_int, checked_device

__all__ = [
    "Action",
    "ActionT",
    "Actor",
    "Observation",
    "StochasticAction",
    "TensorStruct",
    "unbatched",
]

Index: TypeAlias = int | slice | Tensor | Sequence[int]  # (a tensor: long indices or bool mask)
_Write: TypeAlias = tuple[Tensor, Tensor]  # (a tensor of a struct, the value set_ writes in it)


def unbatched(**kwargs: Any) -> Any:
    """A dataclass field without a leading dimension: ``to`` and ``apply`` map it, indexing,
    ``cat`` and ``stack`` leave it as it is (they require it equal in every item)."""
    metadata = {**(kwargs.pop("metadata", None) or {}), "unbatched": True}
    return dataclasses.field(metadata=metadata, **kwargs)


def same_value(first: Any, other: Any) -> bool:
    """Equality of two field values: tensors and structs by content, the rest with ``==``."""
    if isinstance(first, Tensor):
        return isinstance(other, Tensor) and torch.equal(first, other)  # (False for other shapes)
    if isinstance(first, TensorStruct):
        pairs = ((getattr(first, name), getattr(other, name)) for name, _ in first._fields())
        return type(other) is type(first) and all(same_value(a, b) for a, b in pairs)
    return bool(other == first)


def _check_write(where: str, value: Any, target: Tensor, rows: torch.Size) -> None:
    """Raise unless the rows (of shape ``rows``) of ``target`` can take ``value`` unchanged: an
    integer may go into a float tensor, but not 0.5 into a long one (0), nor 300 into uint8."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{where} is a {type(value).__name__}, expected a tensor")
    try:
        fits = torch.broadcast_shapes(value.shape, rows) == rows
    except RuntimeError:
        fits = False
    source, dtype = value.dtype, target.dtype
    if not fits:
        problem = f"of shape {list(value.shape)} does not fit the rows of shape {list(rows)}"
    elif not torch.can_cast(source, dtype):
        fix = f"value.real.to({dtype})" if source.is_complex else f"value.round().to({dtype})"
        fix = "value != 0" if dtype == torch.bool else fix
        problem = f"is {source}, which the struct's {dtype} tensor would truncate; convert it "
        problem += f"first, e.g. {fix}"
    elif value.device != target.device:
        problem = f"is on {value.device}, the struct's tensor on {target.device}; "
        move = f"move it first with .to({str(target.device)!r})"
        problem += "the meta device holds no values to write" if value.is_meta else move
    elif source is dtype or source.is_floating_point != dtype.is_floating_point or dtype.is_complex:
        return
    else:  # another dtype of the same kind may wrap integers or turn floats into inf
        info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
        wide = value.double() if dtype.is_floating_point else value.long()  # (compares exactly)
        if not bool((((wide < info.min) | (wide > info.max)) & wide.isfinite()).any()):
            return
        low, high = f"{info.min:.6g}", f"{info.max:.6g}"
        problem = f"holds values outside [{low}, {high}], the range of the struct's {dtype} "
        problem += f"tensor; clamp them first, e.g. value.clamp({low}, {high})"
    raise ValueError(f"{where} {problem}")


@dataclasses.dataclass(frozen=True)
class TensorStruct:
    """Base of ``@dataclass(frozen=True)`` classes of tensors, nested structs and metadata
    (passed through); batched fields (the default) share a leading size ``[N, ...]``."""

    _is_item: ClassVar[bool] = False  # True on an item s[i]: its fields lost their leading dim

    @classmethod
    @functools.cache
    def _fields(cls) -> tuple[tuple[str, bool], ...]:
        """``(name, is_batched)`` for every field, in order (computed once per class)."""
        return tuple((f.name, not f.metadata.get("unbatched")) for f in dataclasses.fields(cls))

    def __post_init__(self) -> None:
        self._batch_size()

    def _batch_size(self) -> int | None:
        """The shared leading size of the batched fields (None without any)."""
        size, first_name = None, ""
        for name, batched in self._fields():
            value = getattr(self, name)
            if not batched or not isinstance(value, (Tensor, TensorStruct)):
                continue
            if isinstance(value, Tensor) and value.dim() == 0:
                raise ValueError(
                    f"{type(self).__name__}.{name}: expected a tensor with a leading dimension, "
                    "got a 0-d tensor; use value.unsqueeze(0) or declare the field unbatched()"
                )
            n = value.shape[0] if isinstance(value, Tensor) else value._batch_size()
            if size is None:
                size, first_name = n, name
            elif n is not None and n != size:
                raise ValueError(
                    f"{type(self).__name__}: fields must share their leading dimension, but "
                    f"{first_name!r} has {size} and {name!r} has {n}"
                )
        return size

    @classmethod
    def _trusted(cls, *values: Any, item: bool = False) -> Self:
        """Build from field values in order, unchecked (their sizes agree); ``item``: an ``s[i]``."""
        fields = cls._fields()
        if len(values) != len(fields):
            raise TypeError(f"{cls.__name__} has {len(fields)} fields, got {len(values)} values")
        struct = object.__new__(cls)
        for (name, _batched), value in zip(fields, values):
            object.__setattr__(struct, name, value)  # (frozen: plain assignment refuses)
        if item:
            object.__setattr__(struct, "_is_item", True)
        return struct

    def apply(self, fn: Callable[[Tensor], Tensor], batched_only: bool = False) -> Self:
        """A new struct with ``fn`` applied to every tensor (nested structs included), or to
        those of the batched fields only (unchecked then: ``fn`` keeps the leading sizes equal)."""
        values = []
        for name, batched in self._fields():
            value = getattr(self, name)
            if batched or not batched_only:
                if isinstance(value, Tensor):
                    value = fn(value)
                elif isinstance(value, TensorStruct):
                    value = value.apply(fn, batched_only)
            values.append(value)
        if batched_only or self._is_item:  # (an item stays one unless its batched fields change)
            return type(self)._trusted(*values, item=self._is_item and not batched_only)
        return type(self)(**{name: value for (name, _), value in zip(self._fields(), values)})

    def tensors(self, batched_only: bool = False) -> Iterator[Tensor]:
        """Every tensor of the struct (or of its batched fields), nested ones included."""
        for name, batched in self._fields():
            value, wanted = getattr(self, name), batched or not batched_only
            if wanted and isinstance(value, Tensor):
                yield value
            elif wanted and isinstance(value, TensorStruct):
                yield from value.tensors(batched_only)

    def __len__(self) -> int:
        if self._is_item or (size := self._batch_size()) is None:
            why = "is a single item (s[i])" if self._is_item else "has no batched tensor field"
            raise TypeError(f"{type(self).__name__} {why}, so it has no length")
        return size

    def __getitem__(self, index: Index) -> Self:
        """Index every batched field along the leading dimension, like a tensor (see ``Index``)."""
        if isinstance(index, Tensor) and index.dtype == torch.bool and index.shape != (len(self),):
            shapes = f"[{len(self)}], got {list(index.shape)}"
            raise IndexError(f"{type(self).__name__}: a boolean mask must have shape {shapes}")
        if isinstance(index, Tensor) and index.dim() == 0 and not index.is_floating_point():
            index = int(index)  # e.g. an argmax: one item, like an int (a 0-d mask was refused)
        if (whole := as_int(index)) is None:  # (numpy ints too)
            return self.apply(lambda t: t[index], batched_only=True)
        n = len(self)
        if not -n <= whole < n:
            raise IndexError(f"{type(self).__name__}: index {whole} out of range for length {n}")
        values = {name: getattr(self, name) for name, _ in self._fields()}
        for name, batched in self._fields():
            if batched and isinstance(values[name], (Tensor, TensorStruct)):
                values[name] = values[name][whole]
        try:  # [T, B] fields give a [B] struct
            return type(self)(**values)
        except ValueError:  # [N] fields give 0-d ones: an item
            return type(self)._trusted(*values.values(), item=True)

    def set_(self, index: Index, value: Self) -> None:
        """Write ``value`` into the rows ``index`` of every batched tensor, once all are checked."""
        for target, source in self._writes(index, value, type(self).__name__, ""):
            target[index] = source

    def _writes(self, index: Index, value: Any, owner: str, prefix: str) -> list[_Write]:
        """The ``(tensor, value)`` pairs that ``set_`` writes, each checked."""
        if type(value) is not type(self):
            field = f" field {prefix[:-1]!r}:" if prefix else ""
            raise TypeError(
                f"{owner}.set_:{field} expected a {type(self).__name__}, got {type(value).__name__}"
            )
        writes: list[_Write] = []
        for name, batched in self._fields():
            mine, theirs = getattr(self, name), getattr(value, name)
            if batched and isinstance(mine, TensorStruct):
                writes += mine._writes(index, theirs, owner, f"{prefix}{name}.")
            elif batched and isinstance(mine, Tensor):
                where = f"{owner}.set_: field {prefix + name!r}"
                _check_write(where, theirs, mine, mine[index].shape)
                writes.append((mine, theirs))
        return writes

    @classmethod
    def _combine(cls, items: Sequence[Self], op: str) -> Self:
        """``cat`` or ``stack`` (``op``) of the batched fields; metadata: item 0's."""
        where = f"{cls.__name__}.{op}"
        if not isinstance(items, Sequence):
            what = type(items).__name__
            single = isinstance(items, TensorStruct)
            hint = f" (a single {what}: wrap it in a list)" if single else ""
            raise TypeError(f"{where}: expected a list of {cls.__name__}, got {what}{hint}")
        if len(items) == 0:
            raise ValueError(f"{where}: expected at least one item, got an empty list")
        struct_type = type(items[0])
        for i, item in enumerate(items):
            if type(item) is not struct_type:
                raise TypeError(
                    f"{where}: all items must be of the same type; item 0 is a "
                    f"{struct_type.__name__} and item {i} is a {type(item).__name__}"
                )
        values: list[Any] = []
        for name, batched in struct_type._fields():
            column = [getattr(item, name) for item in items]
            value = first = column[0]  # (metadata and unbatched fields: the first item's)
            if not batched:
                for i, other in enumerate(column[1:], start=1):
                    if not same_value(first, other):
                        raise ValueError(
                            f"{where}: unbatched field {name!r} differs between item 0 and item {i}"
                        )
            elif isinstance(first, Tensor | TensorStruct):
                joins = torch if isinstance(first, Tensor) else type(first)
                try:  # torch.cat (or stack), or a nested struct's own cat (or stack)
                    value = getattr(joins, op)(column)
                except (RuntimeError, TypeError, ValueError) as error:  # say which field it is
                    got = [list(t.shape) for t in column if isinstance(t, Tensor)]
                    shapes = f" has incompatible shapes {got}" if joins is torch else ""
                    kind = TypeError if isinstance(error, TypeError) else ValueError
                    raise kind(f"{where}: field {name!r}{shapes}: {error}") from None
            values.append(value)
        return struct_type._trusted(*values)  # (each item was checked: the joined fields agree)

    @classmethod
    def cat(cls, items: Sequence[Self]) -> Self:
        """Concatenate along the leading dimension: ``[N1, ...] + [N2, ...] -> [N1 + N2, ...]``."""
        return cls._combine(items, "cat")

    @classmethod
    def stack(cls, items: Sequence[Self]) -> Self:
        """Stack along a new leading dimension: ``K × [N, ...] -> [K, N, ...]``."""
        return cls._combine(items, "stack")

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """``Tensor.to`` on every tensor, with any of its arguments; a dtype converts only float
        tensors (integer actions and bool flags keep theirs); a missing device is a ValueError."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        for arg in args:
            if isinstance(arg, Tensor):  # s.to(other): other's device and dtype
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, torch.dtype):
                dtype = arg
            elif not isinstance(arg, bool):
                device = arg
        flags = [arg for arg in args if isinstance(arg, bool)]  # non_blocking, copy, as in torch
        device = None if device is None else checked_device(device, f"{type(self).__name__}.to")
        if device is not None and device.type != "meta" and any(t.is_meta for t in self.tensors()):
            raise ValueError(
                f"{type(self).__name__}.to: a tensor is on the meta device, which holds no "
                f"values to copy to {device}; build the struct on a real device"
            )
        return self.apply(
            lambda t: t.to(device, dtype if t.is_floating_point() else None, *flags, **kwargs)
        )

    def clone(self) -> Self:
        """A deep copy of every tensor."""
        return self.apply(lambda t: t.clone())

    def detach(self) -> Self:
        """Every tensor detached from the autograd graph (no copy)."""
        return self.apply(lambda t: t.detach())

    @property
    def device(self) -> torch.device:
        """The device of the first tensor field."""
        for tensor in self.tensors():
            return tensor.device
        raise TypeError(f"{type(self).__name__} has no tensor field, so no device")

    def unsqueeze(self, dim: int = 0) -> Self:
        """Every tensor with a new dimension of size one at ``dim`` (batched fields only)."""
        return self.apply(lambda t: t.unsqueeze(dim), batched_only=True)

    def flatten_leading(self, n_dims: int = 2) -> Self:
        """Merge the first ``n_dims`` batched dimensions: ``[T, B, ...] -> [T*B, ...]``."""
        count = as_int(n_dims)
        fewest = min((t.dim() for t in self.tensors(batched_only=True)), default=0)
        if count is None or not 1 <= count <= fewest:
            raise (TypeError if count is None else ValueError)(
                f"{type(self).__name__}.flatten_leading: n_dims must be an int from 1 to "
                f"{fewest} (the fewest dimensions of a batched field), got {n_dims!r}"
            )
        return self.apply(lambda t: t.flatten(0, count - 1), batched_only=True)


Observation: TypeAlias = Tensor | TensorStruct
"""What an actor receives: ``[B, obs_dim]`` (``[B]`` state indices), or a struct (``Dict``)."""


@dataclasses.dataclass(frozen=True)
class Action(TensorStruct):
    """``B`` actions: ``value`` is ``[B]`` (discrete, long) or ``[B, action_dim]`` (float)."""

    value: Tensor


@dataclasses.dataclass(frozen=True)
class StochasticAction(Action):
    """A sampled action with its log-probability ``log_prob`` ``[B]`` under the policy."""

    log_prob: Tensor


ActionT = TypeVar("ActionT", bound=Action)
"""The type of action an actor produces; it flows through every generic container."""


class Actor(nn.Module, Generic[ActionT]):
    """A policy network (subclasses implement :meth:`forward`): ``actor(obs)`` → ``ActionT`` is
    the training behaviour (e.g. sampling), ``actor.act(obs)`` → tensor the deterministic one."""

    def forward(self, obs: Observation) -> ActionT:
        raise NotImplementedError(f"{type(self).__name__}.forward(obs) must return an Action")

    if TYPE_CHECKING:

        def __call__(self, obs: Observation) -> ActionT: ...

    def act(self, obs: Observation) -> Tensor:
        """The deterministic action ``[B]`` or ``[B, action_dim]`` (override it: e.g. arg-max)."""
        return self(obs).value

    @property
    def device(self) -> torch.device:
        """The device of the first parameter or buffer (CPU for a parameter-less actor)."""
        tensor = next(itertools.chain(self.parameters(), self.buffers()), None)
        return torch.device("cpu") if tensor is None else tensor.device
