"""Typed tensor containers, actions and actors: the vocabulary every other module speaks.

A :class:`TensorStruct` is a frozen dataclass whose fields are tensors, nested
``TensorStruct``s, or plain metadata. It behaves like one tensor along its *leading*
dimension: ``s[index]``, ``len(s)``, ``Cls.cat``, ``Cls.stack``, ``s.to(device)``... act on
every tensor field at once, so that a batch of transitions is indexed like a tensor while
each field keeps a name that an editor completes (``batch.action.log_prob``).

What the reader must not get wrong:

- Every *batched* field shares the leading dimension (checked at construction; the error
  names the field and the sizes). A field declared with ``unbatched()`` (for instance the
  final observation of an :class:`~rl_mind.data.Episode`) is carried along but is not
  indexed, concatenated or stacked.
- Structs are frozen: the only in-place write is ``s.set_(index, value)``, which writes
  into the existing tensors (used by buffers); rebinding a field is an error. ``set_``
  validates everything first, then writes: a call that raises leaves the struct as it was.
- An :class:`Actor` returns an :class:`Action` (or a subclass such as
  :class:`StochasticAction`) from ``actor(obs)``: the training behaviour. ``actor.act(obs)``
  is the deterministic evaluation behaviour and returns a plain tensor of actions.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeVar

import torch
from torch import Tensor, nn
from typing_extensions import Self

__all__ = [
    "Action",
    "ActionT",
    "Actor",
    "Observation",
    "StochasticAction",
    "TensorStruct",
    "unbatched",
]

Index: TypeAlias = int | slice | Tensor | Sequence[int]


def unbatched(**kwargs: Any) -> Any:
    """A dataclass field that is carried along but has no leading (batch or time) dimension.

    Indexing, ``cat`` and ``stack`` leave it as it is (``cat``/``stack`` require it to be
    equal in every item); ``to``, ``clone``, ``detach`` and ``apply`` still map over it when
    it is a tensor.
    """
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata["unbatched"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def _as_int(value: Any) -> int | None:
    """``value`` as an int when it is a whole-number type (an int or a numpy integer, such
    as a count computed with numpy; not a bool), else None: for the checks of counts."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _checked_device(device: Any, owner: str) -> torch.device:
    """``device`` (a ``torch.device``, a string such as ``"cuda:0"``, or None for the CPU)
    as a ``torch.device``, refused at once when it is malformed or absent from this machine.
    (torch itself fails only later, at the first tensor put there, and with an
    ``AssertionError`` on a CPU-only build.)"""
    if device is None:
        return torch.device("cpu")
    if isinstance(device, torch.device):  # (TensorStruct.to checks one at every call)
        result = device
    elif isinstance(device, bool) or not isinstance(device, str | int):
        raise TypeError(
            f"{owner}: device must be a torch.device or a string such as 'cpu' or 'cuda', "
            f"got {type(device).__name__}"
        )
    else:
        try:
            result = torch.device(device)
        except (RuntimeError, TypeError, ValueError) as error:
            raise ValueError(
                f"{owner}: device {device!r} is not a torch device (expected e.g. 'cpu', "
                f"'cuda' or 'cuda:1'): {error}"
            ) from None
    kind = result.type
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            gpu_build = torch.version.cuda or getattr(torch.version, "hip", None)  # (ROCm)
            build = "" if gpu_build else f" (torch {torch.__version__} is a CPU-only build)"
            raise ValueError(
                f"{owner}: device {device!r} is not available: this machine has no CUDA GPU "
                f"torch can use{build}; use 'cpu', or pick the device with "
                f"'cuda' if torch.cuda.is_available() else 'cpu'"
            )
        if result.index is not None and result.index >= count:
            raise ValueError(
                f"{owner}: device {device!r} is not available: this machine has {count} CUDA "
                f"GPU(s), 'cuda:0' to 'cuda:{count - 1}'"
            )
    elif kind == "mps" and not torch.backends.mps.is_available():
        raise ValueError(
            f"{owner}: device {device!r} is not available on this machine "
            f"(torch.backends.mps.is_available() is False); use 'cpu'"
        )
    return result


def _same_value(first: Any, other: Any) -> bool:
    """Equality of two field values: tensors and structs by content, the rest with ``==``."""
    if isinstance(first, Tensor):
        return (
            isinstance(other, Tensor) and first.shape == other.shape and torch.equal(first, other)
        )
    if isinstance(first, TensorStruct):
        if type(other) is not type(first):
            return False
        return all(
            _same_value(getattr(first, name), getattr(other, name)) for name, _ in first._fields()
        )
    return bool(other == first)


def _cast_hint(source: torch.dtype, target: torch.dtype) -> str:
    """What to do with a value of dtype ``source`` that ``target`` storage would truncate."""
    if source.is_complex:
        return f"write value.real (or value.abs()) converted with .to({target})"
    if target == torch.bool:
        return "convert it first, e.g. value != 0"
    return f"convert it first, e.g. value.round().to({target}) if the values are whole numbers"


def _range_lost(value: Tensor, target: torch.dtype) -> tuple[float, float] | None:
    """The range of ``target`` when some of the values of ``value`` (of a dtype that casts to
    ``target`` without changing kind) lie outside it, as a narrower integer or float type
    would wrap or turn them into inf; else None. Only a narrower ``target`` is looked at."""
    source = value.dtype
    info: torch.finfo | torch.iinfo
    if source.is_floating_point and target.is_floating_point:
        info = torch.finfo(target)
        if torch.finfo(source).max <= info.max:
            return None
        outside = (value.abs() > info.max) & value.isfinite()
    elif not (
        source.is_floating_point or target.is_floating_point or torch.bool in (source, target)
    ):
        info, wide = torch.iinfo(target), torch.iinfo(source)
        if info.min <= wide.min and wide.max <= info.max:
            return None
        outside = (value < info.min) | (value > info.max)
    else:
        return None
    return (info.min, info.max) if bool(outside.any()) else None


def _is_batched(field: dataclasses.Field[Any]) -> bool:
    return not field.metadata.get("unbatched", False)


@dataclasses.dataclass(frozen=True)
class TensorStruct:
    """Base class of frozen dataclasses of tensors with tensor-like operations.

    Subclass it with ``@dataclass(frozen=True)``. Fields may be tensors, nested
    ``TensorStruct``s, or plain metadata (passed through unchanged). Batched fields (the
    default) share a leading dimension ``N`` (``[N, ...]``).
    """

    # Per-class cache of (name, is_batched) pairs, filled on first use.
    _field_cache: ClassVar[dict[type, tuple[tuple[str, bool], ...]]] = {}

    @classmethod
    def _fields(cls) -> tuple[tuple[str, bool], ...]:
        cached = TensorStruct._field_cache.get(cls)
        if cached is None:
            cached = tuple((f.name, _is_batched(f)) for f in dataclasses.fields(cls))
            TensorStruct._field_cache[cls] = cached
        return cached

    def __post_init__(self) -> None:
        self._batch_size()

    def _batch_size(self) -> int | None:
        """The shared leading size of the batched fields (``None`` if there is none)."""
        if self.__dict__.get("_is_item", False):
            return None
        size: int | None = None
        first_name = ""
        for name, batched in self._fields():
            if not batched:
                continue
            value = getattr(self, name)
            if isinstance(value, Tensor):
                if value.dim() == 0:
                    raise ValueError(
                        f"{type(self).__name__}.{name}: expected a tensor with a leading "
                        f"dimension, got a 0-d tensor (scalar); use value.unsqueeze(0) or "
                        f"declare the field with unbatched()"
                    )
                n = value.shape[0]
            elif isinstance(value, TensorStruct):
                n_or_none = value._batch_size()
                if n_or_none is None:
                    continue
                n = n_or_none
            else:
                continue
            if size is None:
                size, first_name = n, name
            elif n != size:
                raise ValueError(
                    f"{type(self).__name__}: fields must share their leading dimension, but "
                    f"{first_name!r} has {size} and {name!r} has {n}"
                )
        return size

    # ------------------------------------------------------------------ construction
    @classmethod
    def _trusted(cls, *values: Any) -> Self:
        """Build from field values in order, without the leading-size check: for the
        package's own structs whose fields agree by construction (a slice, a stack of checked
        structs, a step's rows); user code goes through the checked constructor."""
        fields = cls._fields()
        if len(values) != len(fields):
            raise TypeError(f"{cls.__name__} has {len(fields)} fields, got {len(values)} values")
        struct = object.__new__(cls)
        for (name, _batched), value in zip(fields, values):
            object.__setattr__(struct, name, value)  # (frozen: plain assignment refuses)
        return struct

    def _replace_fields(self, fn: Callable[[str, bool, Any], Any]) -> Self:
        values = {name: fn(name, batched, getattr(self, name)) for name, batched in self._fields()}
        if self.__dict__.get("_is_item", False):
            return type(self)._item(values)
        return type(self)(**values)

    @classmethod
    def _item(cls, values: dict[str, Any]) -> Self:
        """One item of a batch (``s[i]``): its batched fields have lost their leading
        dimension, so it is built without the leading-dimension check and has no length."""
        item = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(item, name, value)
        object.__setattr__(item, "_is_item", True)
        return item

    def apply(self, fn: Callable[[Tensor], Tensor]) -> Self:
        """A new struct with ``fn`` applied to every tensor (nested structs included)."""

        def one(_name: str, _batched: bool, value: Any) -> Any:
            if isinstance(value, Tensor):
                return fn(value)
            if isinstance(value, TensorStruct):
                return value.apply(fn)
            return value

        return self._replace_fields(one)

    def _apply_batched(self, fn: Callable[[Tensor], Tensor]) -> Self:
        """Like :meth:`apply`, on batched fields only (unbatched fields pass through).

        ``fn`` is one of the struct's own shape operations (an index, a flatten), which keep
        the leading sizes equal, so the result skips the constructor's check.
        """
        values = []
        for name, batched in self._fields():
            value = getattr(self, name)
            if batched:
                if isinstance(value, Tensor):
                    value = fn(value)
                elif isinstance(value, TensorStruct):
                    value = value._apply_batched(fn)
            values.append(value)
        return type(self)._trusted(*values)

    def tensors(self) -> Iterator[Tensor]:
        """Every tensor of the struct, nested ones included, in field order."""
        for name, _batched in self._fields():
            value = getattr(self, name)
            if isinstance(value, Tensor):
                yield value
            elif isinstance(value, TensorStruct):
                yield from value.tensors()

    # ------------------------------------------------------------------ tensor-like ops
    def __len__(self) -> int:
        if self.__dict__.get("_is_item", False):
            raise TypeError(f"{type(self).__name__} is a single item (s[i]), it has no length")
        size = self._batch_size()
        if size is None:
            raise TypeError(f"{type(self).__name__} has no batched tensor field, so no length")
        return size

    def __getitem__(self, index: Index) -> Self:
        """Index every batched field along the leading dimension.

        ``index`` is an int (the dimension is removed), a slice, a long index tensor or a
        bool mask of length ``len(self)``.
        """
        if isinstance(index, Tensor):
            if index.dim() == 0 and not (index.is_floating_point() or index.dtype == torch.bool):
                index = int(index)  # e.g. an argmax: one item, like an int
        elif isinstance(index, numbers.Integral) and not isinstance(index, (int, bool)):
            index = int(index)  # e.g. numpy.int64
        if isinstance(index, Tensor) and index.dtype == torch.bool:
            n = len(self)
            if index.shape != (n,):
                raise IndexError(
                    f"{type(self).__name__}: a boolean mask must have shape [{n}], "
                    f"got {list(index.shape)}"
                )
        if isinstance(index, int):
            n = len(self)
            if not -n <= index < n:
                raise IndexError(
                    f"{type(self).__name__}: index {index} out of range for length {n}"
                )
            # the leading dimension is removed: a [T, B] struct gives a [B] struct, a struct
            # of [N] fields gives one item (0-d fields), which has no length
            values = {
                name: value[index]
                if batched and isinstance(value, (Tensor, TensorStruct))
                else value
                for name, batched in self._fields()
                for value in (getattr(self, name),)
            }
            try:
                return type(self)(**values)
            except ValueError:
                return type(self)._item(values)
        return self._apply_batched(lambda t: t[index])

    def set_(self, index: Index, value: Self) -> None:
        """Write ``value`` into the rows ``index`` of every batched tensor, in place.

        Validate everything first, then write: every field (nested structs included) is
        checked before any is written (its type, that it fits the rows, that its dtype
        converts without losing its kind, that it is on the same device, that its values
        fit a narrower dtype), so a call that raises leaves the struct as it was. An integer
        value may go into a floating-point field; a floating-point value into an integer or
        bool field is refused (it would be truncated: 0.5 -> 0), as is a complex value into
        a real field, or 300 into a uint8 field."""
        for target, source in self._writes(index, value, type(self).__name__, ""):
            target[index] = source

    def _writes(
        self, index: Index, value: Any, owner: str, prefix: str
    ) -> list[tuple[Tensor, Tensor]]:
        """The ``(tensor, value)`` pairs that ``set_`` writes, each checked: the value is a
        tensor whose shape broadcasts to the rows ``index`` of the tensor, whose dtype casts
        to the tensor's without changing kind, on the tensor's device."""
        if type(value) is not type(self):
            field = f" field {prefix[:-1]!r}:" if prefix else ""
            raise TypeError(
                f"{owner}.set_:{field} expected a {type(self).__name__}, got {type(value).__name__}"
            )
        writes: list[tuple[Tensor, Tensor]] = []
        for name, batched in self._fields():
            if not batched:
                continue
            mine, theirs = getattr(self, name), getattr(value, name)
            if isinstance(mine, TensorStruct):
                writes += mine._writes(index, theirs, owner, f"{prefix}{name}.")
            elif isinstance(mine, Tensor):
                where = f"{owner}.set_: field {prefix + name!r}"
                if not isinstance(theirs, Tensor):
                    raise TypeError(f"{where} is a {type(theirs).__name__}, expected a tensor")
                rows = mine[index].shape
                try:
                    fits = torch.broadcast_shapes(theirs.shape, rows) == rows
                except RuntimeError:
                    fits = False
                if not fits:
                    raise ValueError(
                        f"{where} of shape {list(theirs.shape)} does not fit the rows of shape "
                        f"{list(rows)} it would be written to"
                    )
                if theirs.dtype is not mine.dtype and not torch.can_cast(theirs.dtype, mine.dtype):
                    raise ValueError(
                        f"{where} is {theirs.dtype}, which the struct's {mine.dtype} tensor "
                        f"would truncate; {_cast_hint(theirs.dtype, mine.dtype)}"
                    )
                if theirs.device != mine.device:
                    fix = (
                        "the meta device holds no values to write"
                        if theirs.is_meta
                        else f"move it first with .to({str(mine.device)!r})"
                    )
                    raise ValueError(
                        f"{where} is on {theirs.device}, the struct's tensor on {mine.device}; "
                        f"{fix}"
                    )
                lost = None if theirs.dtype is mine.dtype else _range_lost(theirs, mine.dtype)
                if lost is not None:
                    raise ValueError(
                        f"{where} holds values outside [{lost[0]:.6g}, {lost[1]:.6g}], the range "
                        f"of the struct's {mine.dtype} tensor, which would not keep them; clamp "
                        f"them first, e.g. value.clamp({lost[0]:.6g}, {lost[1]:.6g})"
                    )
                writes.append((mine, theirs))
        return writes

    @classmethod
    def _check_items(cls, items: Sequence[Self], op: str) -> None:
        if isinstance(items, TensorStruct) or not isinstance(items, Sequence):
            what = type(items).__name__
            hint = (
                f" (a single {what}: wrap it in a list)" if isinstance(items, TensorStruct) else ""
            )
            raise TypeError(
                f"{cls.__name__}.{op}: expected a list of {cls.__name__}, got {what}{hint}"
            )
        if len(items) == 0:
            raise ValueError(f"{cls.__name__}.{op}: expected at least one item, got an empty list")
        first = type(items[0])
        for i, item in enumerate(items):
            if type(item) is not first:
                raise TypeError(
                    f"{cls.__name__}.{op}: all items must be of the same type; item 0 is a "
                    f"{first.__name__} and item {i} is a {type(item).__name__}"
                )
        if not issubclass(first, cls):
            raise TypeError(f"{cls.__name__}.{op}: items are {first.__name__}, not {cls.__name__}")

    @classmethod
    def _combine(
        cls, items: Sequence[Self], op: str, combine: Callable[[list[Tensor]], Tensor]
    ) -> Self:
        cls._check_items(items, op)
        struct_type = type(items[0])
        values: list[Any] = []
        for name, batched in struct_type._fields():
            column = [getattr(item, name) for item in items]
            first = column[0]
            if not batched:
                for i, other in enumerate(column[1:], start=1):
                    same = _same_value(first, other)
                    if not same:
                        raise ValueError(
                            f"{struct_type.__name__}.{op}: unbatched field {name!r} differs "
                            f"between item 0 and item {i}"
                        )
                values.append(first)
            elif isinstance(first, Tensor):
                try:
                    values.append(combine(column))
                except (RuntimeError, TypeError) as error:
                    for i, other in enumerate(column):
                        if not isinstance(other, Tensor):
                            raise TypeError(
                                f"{struct_type.__name__}.{op}: field {name!r} of item {i} is "
                                f"a {type(other).__name__}, expected a tensor"
                            ) from None
                    shapes = [list(t.shape) for t in column]
                    raise ValueError(
                        f"{struct_type.__name__}.{op}: field {name!r} has incompatible "
                        f"shapes {shapes}: {error}"
                    ) from None
            elif isinstance(first, TensorStruct):
                try:
                    values.append(type(first)._combine(column, op, combine))
                except (TypeError, ValueError) as error:  # say which field it is
                    kind = TypeError if isinstance(error, TypeError) else ValueError
                    raise kind(f"{struct_type.__name__}.{op}: field {name!r}: {error}") from None
            else:
                values.append(first)
        # every item passed the constructor's check, so the combined fields agree
        return struct_type._trusted(*values)

    @classmethod
    def cat(cls, items: Sequence[Self]) -> Self:
        """Concatenate structs along the leading dimension (``[N1, ...] + [N2, ...]``).

        Plain metadata (a field that holds no tensor) is the first item's; unbatched fields
        must be equal in every item."""
        return cls._combine(items, "cat", lambda ts: torch.cat(ts, dim=0))

    @classmethod
    def stack(cls, items: Sequence[Self]) -> Self:
        """Stack structs along a new leading dimension (``K × [N, ...] -> [K, N, ...]``);
        metadata and unbatched fields as in :meth:`cat`."""
        return cls._combine(items, "stack", lambda ts: torch.stack(ts, dim=0))

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """``tensor.to(...)`` on every tensor: a device, a dtype, or both (and ``copy``,
        ``non_blocking``), in any form ``Tensor.to`` takes them.

        A dtype only converts floating-point tensors, so that integer actions and bool flags
        keep their meaning, whatever else comes with it. A device is checked first: one this
        machine lacks (``"cuda"`` on a CPU-only machine) is a ``ValueError``.
        """
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        flags = []  # non_blocking, copy: positional after the device and dtype, as in torch
        for arg in args:
            if isinstance(arg, torch.dtype):
                dtype = arg
            elif isinstance(arg, Tensor):  # s.to(other): other's device and dtype
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, bool):
                flags.append(arg)
            else:
                device = arg
        if len(flags) > 2:
            raise TypeError(f"{type(self).__name__}.to: expected a device and/or a dtype")
        kwargs.update(zip(("non_blocking", "copy"), flags))
        if device is not None:
            device = _checked_device(device, f"{type(self).__name__}.to")
        leaves_meta = device is not None and device.type != "meta"

        def convert(tensor: Tensor) -> Tensor:
            if leaves_meta and tensor.is_meta:
                raise ValueError(
                    f"{type(self).__name__}.to: a tensor is on the meta device, which holds "
                    f"no values to copy to {device}; build the struct on a real device"
                )
            kept = dtype is None or not tensor.is_floating_point()
            return tensor.to(device, None if kept else dtype, **kwargs)

        return self.apply(convert)

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
        return self._apply_batched(lambda t: t.unsqueeze(dim))

    def flatten_leading(self, n_dims: int = 2) -> Self:
        """Merge the first ``n_dims`` dimensions of every batched tensor
        (``[T, B, ...] -> [T*B, ...]``).

        ``n_dims`` lies between 1 (nothing to merge) and the fewest dimensions of a batched
        tensor (every field must have the dimensions merged)."""
        count = _as_int(n_dims)
        fewest = min((t.dim() for t in self._batched_tensors()), default=0)
        if count is None or not 1 <= count <= fewest:
            kind = TypeError if count is None else ValueError
            raise kind(
                f"{type(self).__name__}.flatten_leading: n_dims must be an int from 1 to "
                f"{fewest} (the fewest dimensions of a batched field), got {n_dims!r}"
            )
        return self._apply_batched(lambda t: t.flatten(0, count - 1))

    def _batched_tensors(self) -> Iterator[Tensor]:
        """Every batched tensor, those of nested batched structs included, in field order."""
        for name, batched in self._fields():
            value = getattr(self, name)
            if not batched:
                continue
            if isinstance(value, Tensor):
                yield value
            elif isinstance(value, TensorStruct):
                yield from value._batched_tensors()


Observation: TypeAlias = Tensor | TensorStruct
"""What an actor receives: a tensor ``[B, obs_dim]`` (or ``[B]`` state indices), or a
``TensorStruct`` with one field per key for ``Dict`` observation spaces."""


@dataclasses.dataclass(frozen=True)
class Action(TensorStruct):
    """Actions for ``B`` environments: ``value`` is ``[B]`` (discrete, long) or
    ``[B, action_dim]`` (continuous, float)."""

    value: Tensor


@dataclasses.dataclass(frozen=True)
class StochasticAction(Action):
    """A sampled action with its log-probability ``log_prob`` ``[B]`` under the policy."""

    log_prob: Tensor


ActionT = TypeVar("ActionT", bound=Action)
"""The type of action an actor produces; it flows through every generic container."""


class Actor(nn.Module, Generic[ActionT]):
    """A policy network: ``actor(obs)`` → ``ActionT`` (training behaviour, e.g. sampling or
    exploration noise), ``actor.act(obs)`` → actions tensor (deterministic evaluation
    behaviour; by default ``self(obs).value``, override it for e.g. the arg-max or the mean).

    Subclasses implement :meth:`forward`. ``obs`` is ``[B, obs_dim]`` (``[B]`` state indices
    for tabular environments, a ``TensorStruct`` for ``Dict`` observations).
    """

    def forward(self, obs: Observation) -> ActionT:
        raise NotImplementedError(f"{type(self).__name__}.forward(obs) must return an Action")

    if TYPE_CHECKING:

        def __call__(self, obs: Observation) -> ActionT: ...

    def act(self, obs: Observation) -> Tensor:
        """The deterministic action ``[B]`` or ``[B, action_dim]`` used for evaluation."""
        return self(obs).value

    @property
    def device(self) -> torch.device:
        """The device of the first parameter or buffer (CPU for a parameter-less actor)."""
        for tensor in self.parameters():
            return tensor.device
        for buffer in self.buffers():
            return buffer.device
        return torch.device("cpu")
