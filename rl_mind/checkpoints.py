"""Checkpoints: a training state written atomically and read back safely, verified intact.

:func:`save_checkpoint` writes a (nested) dict of tensors, numbers and strings;
:func:`load_checkpoint` reads it back; a file that cannot be read safely is a
:class:`CheckpointError`.

What the reader must not get wrong:

- A checkpoint is written to a temporary file in the same folder, flushed to disk, then
  renamed over the old one: a crash in the middle of a save leaves the previous checkpoint
  intact. It holds ``torch.save``'s bytes of the object with their SHA-256 checksum, and is
  read with ``torch.load(..., weights_only=True)``: opening a checkpoint someone sent you
  never runs their code, and a truncated or corrupt file is a :class:`CheckpointError`
  naming it, never loaded (the checksum is checked before anything is rebuilt).
- **Validate everything first, then mutate**: :func:`save_checkpoint` refuses, before
  touching the file, what :func:`load_checkpoint` would refuse.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from rl_mind._validation import checked_device

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read safely (truncated, corrupt, unverifiable or
    unsafe). Its message is one line that names the file and says that it was not loaded."""


# A checkpoint file is an ordinary torch file holding a dict of three entries: this format
# name, "content" (torch.save's bytes of the saved object, as a uint8 tensor) and "sha256"
# (their checksum), so that damage anywhere in the content is found before it is unpickled.
_CHECKPOINT_FORMAT = "rl-mind checkpoint 1"


# Types that ``torch.load(..., weights_only=True)`` reads back.
_LEAF_TYPES: tuple[type, ...] = (
    Tensor,
    int,
    float,
    bool,
    complex,
    str,
    bytes,
    type(None),
    torch.Size,
    torch.dtype,
    torch.device,
)


def _check_key(part: Any, key: Any, where: str) -> None:
    """A dict key (``part``: the key, or an item of a tuple key) must be a plain value."""
    if type(part) is tuple:
        for item in part:
            _check_key(item, key, where)
    elif type(part) not in (str, int, float, bool, type(None)):
        inside = "" if part is key else f" (its item {part!r})"
        raise TypeError(
            f"save_checkpoint: key {key!r} at {where}{inside} is a {type(part).__name__}; "
            f"use str or int keys"
        )


def _check_checkpointable(obj: Any, where: str) -> None:
    """Raise a TypeError naming the first value that weights_only loading would refuse."""
    kind = type(obj)
    if kind in _LEAF_TYPES or kind is nn.Parameter:
        return
    if kind in (dict, OrderedDict):
        for key, value in obj.items():
            _check_key(key, key, where)
            _check_checkpointable(value, f"{where}[{key!r}]")
        return
    if kind in (list, tuple, set):
        for i, value in enumerate(obj):
            _check_checkpointable(value, f"{where}[{i}]")
        return
    if isinstance(obj, np.ndarray):
        hint = "convert it with torch.as_tensor(value)"
    elif isinstance(obj, np.generic):
        hint = "convert it with value.item()"
    elif isinstance(obj, nn.Module):
        hint = "save module.state_dict() instead"
    elif isinstance(obj, torch.optim.Optimizer):
        hint = "save optimizer.state_dict() instead"
    elif isinstance(obj, Tensor):
        hint = "it is a Tensor subclass: save value.as_subclass(torch.Tensor) instead"
    else:
        hint = "convert it to tensors, numbers, strings, lists or dicts"
    raise TypeError(
        f"save_checkpoint: {where} is a {kind.__module__}.{kind.__qualname__}, which "
        f"torch.load(weights_only=True) cannot read back; {hint}"
    )


def save_checkpoint(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``obj`` to ``path`` atomically, with a checksum; returns the absolute path.

    ``obj`` is a (nested) dict / list / tuple of tensors, numbers, strings, bools and
    ``None`` (a ``state_dict()`` of a module or an optimizer, step counters, RNG states as
    tensors...), anything ``torch.load(..., weights_only=True)`` reads back; other values
    (a module, a numpy array, a ``Tensor`` subclass) are refused with a ``TypeError``
    naming where they are (``obj['rng'][1]``). ``obj`` is serialized and read back in
    memory first, as :func:`load_checkpoint` will read it, so what loading would refuse is
    refused here, before the file is touched.

    The file holds ``torch.save``'s bytes of ``obj`` and their SHA-256 checksum. It is
    written to a temporary name in the same folder, flushed to disk (``fsync``), then
    renamed over ``path`` (``os.replace``, atomic): a crash in the middle leaves the
    previous checkpoint intact and never a half-written ``path``. The folder is created if
    needed.
    """
    target = Path(path).expanduser().resolve()
    if target.is_dir():
        raise ValueError(f"save_checkpoint: {target} is a folder, expected a file path")
    _check_checkpointable(obj, "obj")
    content = _serialized(obj)
    checkpoint = {
        "format": _CHECKPOINT_FORMAT,
        "sha256": hashlib.sha256(content).hexdigest(),
        "content": torch.frombuffer(bytearray(content), dtype=torch.uint8),
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save(checkpoint, file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp_name, mode_of_new_files())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_directory(target.parent)
    return target


def mode_of_new_files() -> int:
    """The mode ``open()`` gives a new file: 0o666 less the process's umask. (``mkstemp``
    makes its file owner-only and the rename keeps that, which locks a shared folder's
    readers out of a checkpoint or a video.)"""
    try:  # Linux tells the umask without changing it
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o077)  # elsewhere: read by setting it, for an instant, to a strict one
    os.umask(mask)
    return 0o666 & ~mask


def _serialized(obj: Any) -> bytes:
    """``torch.save``'s bytes of ``obj``, read back with ``weights_only=True`` as
    :func:`load_checkpoint` will read them (a ``TypeError`` if that refuses them)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    content = buffer.getvalue()
    try:
        torch.load(io.BytesIO(content), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise TypeError(
            f"save_checkpoint: obj holds a value that torch.load(weights_only=True) cannot "
            f"read back ({_refusal_reason(error)}); convert it to tensors, numbers, strings, "
            f"lists or dicts"
        ) from None
    return content


def _refusal_reason(error: pickle.UnpicklingError) -> str:
    """What a ``weights_only`` refusal names (torch's message spans many lines)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if "WeightsUnpickler error:" in line:
            reason = line.split("WeightsUnpickler error:", 1)[1]
            return reason.split(" Please use", 1)[0].strip().rstrip(".")
    return lines[0] if lines else type(error).__name__


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str | torch.device | None = "cpu"
) -> Any:
    """Read a checkpoint written by :func:`save_checkpoint`, verified intact.

    Uses ``torch.load(..., weights_only=True, map_location=map_location)``: only tensors
    and plain containers are rebuilt, never arbitrary objects, so opening a checkpoint
    someone sent you never runs their code. Tensors land on ``map_location`` (CPU by
    default, so that a checkpoint written on a GPU opens on a laptop; ``load_state_dict``
    then copies them onto the module's device).

    Validate everything first: the archive's CRCs and the content's SHA-256 checksum are
    checked before the content is unpickled, so a damaged file is refused, never loaded
    with some values changed. (The checksum finds damage, not tampering: safety from a
    file someone sent you comes from ``weights_only``.)

    Raises ``FileNotFoundError`` if there is no file, a ``ValueError`` for a
    ``map_location`` this machine lacks, and :class:`CheckpointError` (a ``ValueError``;
    a one-line message naming the file) if it is truncated, corrupt, not a checkpoint of
    :func:`save_checkpoint` (a plain ``torch.save`` file has no checksum to verify: read
    one you trust with ``torch.load(path, weights_only=True)``), or holds objects that
    ``weights_only`` loading refuses.
    """
    if isinstance(map_location, str | torch.device):  # (not reported as a corrupt file)
        map_location = checked_device(map_location, "load_checkpoint: map_location")
    source = Path(path).expanduser().resolve()
    if not source.exists():
        raise FileNotFoundError(f"load_checkpoint: no checkpoint at {source}")
    if not source.is_file():
        raise CheckpointError(f"load_checkpoint: {source} is not a file")
    content = _verified_content(_read_torch_file(source), source)
    try:
        return torch.load(io.BytesIO(content), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise CheckpointError(_unsafe_message(source, error)) from None
    except Exception as error:  # (the checksum matched: these are the bytes that were saved)
        raise CheckpointError(
            f"checkpoint {source} is intact but its content could not be loaded "
            f"({_first_line(error)}); it was not loaded"
        ) from None


def _read_torch_file(source: Path) -> Any:
    """The object in the torch file ``source``, its archive's CRCs checked first."""
    size = source.stat().st_size
    with source.open("rb") as file:  # (a file one may not read: an OSError, not corrupt)
        try:
            with zipfile.ZipFile(file) as archive:
                bad_record = archive.testzip()
            if bad_record is None:
                file.seek(0)
                return torch.load(file, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as error:
            raise CheckpointError(_unsafe_message(source, error)) from None
        # A damaged file can make the zip or the torch reader fail with any exception.
        except Exception as error:
            raise CheckpointError(
                f"checkpoint {source} ({size} bytes) is truncated or corrupt, or not a torch "
                f"checkpoint ({_first_line(error)}); it was not loaded"
            ) from None
    raise CheckpointError(
        f"checkpoint {source} is corrupt: its record {bad_record!r} fails its CRC or header "
        f"check; it was not loaded"
    )


def _verified_content(checkpoint: Any, source: Path) -> bytes:
    """The saved object's bytes, once their SHA-256 checksum matches."""
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != _CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"checkpoint {source} carries no rl-mind checksum (a plain torch.save file, or "
            f"one saved by an older rl-mind), so nothing proves it intact and it was not "
            f"loaded; if you trust the file, read it with torch.load(path, weights_only=True)"
        )
    content, checksum = checkpoint.get("content"), checkpoint.get("sha256")
    if not (
        isinstance(content, Tensor)
        and content.dtype == torch.uint8
        and content.dim() == 1
        and isinstance(checksum, str)
    ):
        raise CheckpointError(
            f"checkpoint {source} is corrupt: its content or its checksum is missing or "
            f"malformed; it was not loaded"
        )
    data = content.numpy().tobytes()
    if hashlib.sha256(data).hexdigest() != checksum:
        raise CheckpointError(
            f"checkpoint {source} is corrupt: its content does not match its SHA-256 "
            f"checksum; it was not loaded"
        )
    return data


def _unsafe_message(source: Path, error: pickle.UnpicklingError) -> str:
    return (
        f"checkpoint {source} holds objects other than tensors and plain containers, so "
        f"torch.load(weights_only=True) refused to run its code ({_refusal_reason(error)}); "
        f"it was not loaded. Only if you trust its author, load it with "
        f"torch.load(path, weights_only=False)"
    )
