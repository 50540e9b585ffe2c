"""Evaluation: how well an actor does, a learning curve, the best actor, a video.

:class:`Evaluator` plays one deterministic episode (``actor.act``) in each copy of its own
:class:`~rl_mind.env.VecEnv` every ``every`` training steps, logs the returns to
TensorBoard, and keeps a deep copy of the best actor (saved into ``run_dir``).
:func:`record_video` films one episode of an actor into an ``.mp4``; :func:`actor_policy`
turns an actor into the ``obs -> action`` function of a single gymnasium environment.
:func:`save_checkpoint` / :func:`load_checkpoint` write and read checkpoints safely.

What the reader must not get wrong:

- Every evaluation replays the **same episode seeds** (copy ``i`` is reset with
  ``seed + i``), so two evaluations compare actors, not luck; otherwise the "best actor"
  is largely picked by the noise of the starting states.
- Only the **first episode** of each copy counts. Copies whose episode ends early keep
  being stepped (their later rewards are masked out) until every copy has finished, or
  until ``max_steps``, where the unfinished episodes are cut and count their return so far.
- The evaluation runs under ``torch.no_grad()`` with the actor in ``eval()`` mode; the
  actor's train/eval modes are restored afterwards, its ``requires_grad`` flags untouched.
- A checkpoint is written to a temporary file in the same folder, flushed to disk, then
  renamed over the old one: a crash in the middle of a save leaves the previous checkpoint
  intact. It holds ``torch.save``'s bytes of the object with their SHA-256 checksum, and is
  read with ``torch.load(..., weights_only=True)``: opening a checkpoint someone sent you
  never runs their code, and a truncated or corrupt file is a :class:`CheckpointError`
  naming it, never loaded (the checksum is checked before anything is rebuilt).
- **Validate everything first, then mutate**: a call that raises leaves every object and
  every file as it was. :func:`save_checkpoint` refuses, before touching the file, what
  :func:`load_checkpoint` would refuse; :meth:`Evaluator.run` writes ``best_actor.pt``
  before it records anything, so an evaluation whose save fails is not recorded at all.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime
import hashlib
import io
import os
import pickle
import tempfile
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from rl_mind.core import ActionT, Actor, Observation, _as_int, _checked_device
from rl_mind.env import VecEnv, _Converter, _dict_struct_class, _env_spec
from rl_mind.notebook import _headless_sdl, _safe_name, outputs_directory, video_display
from rl_mind.rendering import _as_rgb_frame

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from torch.utils.tensorboard import SummaryWriter

__all__ = [
    "CheckpointError",
    "EvalResult",
    "Evaluator",
    "actor_policy",
    "load_checkpoint",
    "record_video",
    "save_checkpoint",
    "write_video",
]

Wrapper = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]


# ====================================================================== checkpoints
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
        os.chmod(temp_name, _mode_of_new_files())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_directory(target.parent)
    return target


def _mode_of_new_files() -> int:
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
        map_location = _checked_device(map_location, "load_checkpoint: map_location")
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


# ====================================================================== actors
def _actor_device(actor: nn.Module) -> torch.device:
    device = getattr(actor, "device", None)
    if isinstance(device, torch.device):
        return device
    for parameter in actor.parameters():
        return parameter.device
    for buffer in actor.buffers():
        return buffer.device
    return torch.device("cpu")


def _expected_action_shape(action_space: spaces.Space[Any], batch: int) -> tuple[int, ...]:
    if isinstance(action_space, spaces.Discrete):
        return (batch,)
    if isinstance(action_space, spaces.Box):
        return (batch, *action_space.shape)
    raise TypeError(f"expected a Discrete or Box action space, got {action_space}")


def _check_action_shape(actions: Any, action_space: spaces.Space[Any], batch: int) -> Tensor:
    expected = _expected_action_shape(action_space, batch)
    if not isinstance(actions, Tensor):
        raise TypeError(
            f"actor.act(obs) must return a tensor of actions of shape {list(expected)}, got "
            f"a {type(actions).__name__}"
        )
    if tuple(actions.shape) != expected:
        what = (
            "one action index per environment copy"
            if isinstance(action_space, spaces.Discrete)
            else "[num_envs, *action_shape]"
        )
        raise ValueError(
            f"actor.act(obs) returned actions of shape {list(actions.shape)}; expected "
            f"{list(expected)} ({what}, for the action space {action_space})"
        )
    return actions


@contextlib.contextmanager
def _evaluation_mode(actor: nn.Module) -> Iterator[None]:
    """``eval()`` mode and ``no_grad`` inside; every submodule's mode restored afterwards."""
    modes = [(module, module.training) for module in actor.modules()]
    actor.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for module, training in modes:
            module.training = training


def _single_obs_converter(
    observation_space: spaces.Space[Any] | None, device: torch.device
) -> Callable[[Any], Observation]:
    """One gymnasium observation -> a batch of one (``[1, ...]``), as a VecEnv returns it."""
    if observation_space is not None:
        converter = _Converter(observation_space, device)
        empty: Any = gym.vector.utils.create_empty_array(observation_space, n=1)

        def convert_with_space(obs: Any) -> Observation:
            batch = gym.vector.utils.concatenate(observation_space, [obs], copy.deepcopy(empty))
            return converter(batch)

        return convert_with_space

    def convert(obs: Any) -> Observation:
        if isinstance(obs, dict):
            # gymnasium's Dict space sorts its keys; so does the VecEnv's struct.
            keys = tuple(sorted(obs))
            return _dict_struct_class(keys)(**{key: convert(obs[key]) for key in keys})
        if isinstance(obs, (int, np.integer)) and not isinstance(obs, bool):
            return torch.tensor([int(obs)], dtype=torch.long, device=device)
        array = np.asarray(obs)
        tensor = torch.from_numpy(np.ascontiguousarray(array[None]))
        if array.dtype.kind == "f":
            tensor = tensor.float()
        elif array.dtype.kind in "iub":
            tensor = tensor.long()
        return tensor.to(device)

    return convert


def _discrete_action(action: Tensor, space: spaces.Discrete) -> int:
    """One discrete action (a 0-d integer tensor) as the int gymnasium wants, checked
    against ``space`` (as :class:`~rl_mind.env.VecEnv` checks them)."""
    if action.is_floating_point() or action.is_complex() or action.dtype == torch.bool:
        raise ValueError(
            f"actor.act(obs) returned discrete actions of dtype {action.dtype}; expected "
            f"integers (torch.long): use .long() if the values are whole numbers"
        )
    value = int(action.item())
    low, high = int(space.start), int(space.start + space.n)
    if not low <= value < high:
        raise ValueError(
            f"actor.act(obs) returned the discrete action {value}; expected one in "
            f"[{low}, {high - 1}] (the action space {space})"
        )
    return value


def actor_policy(
    actor: Actor[Any],
    action_space: spaces.Space[Any],
    observation_space: spaces.Space[Any] | None = None,
) -> Callable[[Any], Any]:
    """Turn an actor into the ``obs -> action`` function of one gymnasium environment.

    The returned function takes one observation as gymnasium gives it (an array for
    ``Box``, an int state index for ``Discrete``, a dict for ``Dict``), makes a batch of
    one on the actor's device, calls ``actor.act`` under ``torch.no_grad()``, and returns
    the action as gymnasium wants it: an ``int`` for ``Discrete``, an array of
    ``action_space.shape`` and dtype for ``Box``. Give ``observation_space`` to convert
    observations exactly as :class:`~rl_mind.env.VecEnv` does (dtypes, nested dicts);
    without it they are inferred (float arrays to float32, integers to long).

    The actor's train/eval mode is left as it is: call ``actor.eval()`` first if it has
    dropout or batch norm (:func:`record_video` does).
    """
    if not isinstance(action_space, (spaces.Discrete, spaces.Box)):
        raise TypeError(
            f"actor_policy: expected a Discrete or Box action space, got {action_space}"
        )
    device = _actor_device(actor)
    convert = _single_obs_converter(observation_space, device)

    def policy(obs: Any) -> Any:
        batch = convert(obs)
        with torch.no_grad():
            actions = _check_action_shape(actor.act(batch), action_space, 1)
        action = actions[0].detach().cpu()
        if isinstance(action_space, spaces.Discrete):
            return _discrete_action(action, action_space)
        if not action.is_floating_point():
            raise ValueError(
                f"actor.act(obs) returned continuous actions of dtype {action.dtype}; "
                f"expected floating-point ones"
            )
        if not bool(torch.isfinite(action).all()):
            raise ValueError(
                f"actor.act(obs) returned continuous actions that are not finite: {action.tolist()}"
            )
        return action.numpy().astype(action_space.dtype, copy=False).reshape(action_space.shape)

    return policy


# ====================================================================== videos
def _pad_even(frame: np.ndarray) -> np.ndarray:
    """Repeat the bottom row / right column so that height and width are even (H.264).

    Repeating the edge, rather than adding black, keeps the colours of the last row from
    bleeding (yuv420p shares one colour sample between 2x2 pixels)."""
    height, width = frame.shape[:2]
    pad_h, pad_w = height % 2, width % 2
    if pad_h or pad_w:
        frame = np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    return frame


def _reserve_video_path(directory: Path, stem: str) -> Path:
    """A new ``<stem>-YYYYmmdd-HHMMSS[-k].mp4`` in ``directory``, claimed atomically."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for k in range(1, 100_000):
        candidate = directory / (f"{stem}-{stamp}.mp4" if k == 1 else f"{stem}-{stamp}-{k}.mp4")
        try:
            fd = os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        return candidate
    raise RuntimeError(f"no free video file name for {stem} in {directory}")


def write_video(
    frames: Iterable[np.ndarray], path: str | os.PathLike[str], fps: float = 30
) -> Path:
    """Encode RGB frames ``[height, width, 3]`` (uint8) into a browser-playable ``.mp4``.

    Frames are streamed to ffmpeg (moviepy's writer, with the ffmpeg binary of
    ``imageio-ffmpeg``: no display, no system ffmpeg), so memory stays flat for long
    episodes. H.264 (``libx264``), ``yuv420p``; odd heights or widths are padded with one
    row or column (the edge repeated). The file appears under ``path`` only once complete (temporary name,
    then rename). Returns the absolute path.
    """
    from moviepy.video.io.ffmpeg_writer import FFMPEG_VideoWriter

    target = Path(path).expanduser().resolve()
    if target.suffix.lower() != ".mp4":
        raise ValueError(f"write_video: expected a path ending in .mp4, got {target}")
    if not fps > 0:
        raise ValueError(f"write_video: fps must be positive, got {fps}")
    # (one frame given as the whole video would be read row by row: a video of rows)
    if isinstance(frames, np.ndarray | torch.Tensor) and frames.ndim != 4:
        raise ValueError(
            f"write_video: an array of frames must be [time, height, width, 3], got shape "
            f"{list(frames.shape)}; for a single frame, pass [frame]"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".mp4")
    os.close(fd)
    writer = None
    size: tuple[int, int] | None = None
    try:
        for i, frame in enumerate(frames):
            rgb = _pad_even(_as_rgb_frame(frame, "write_video"))
            if writer is None:
                size = (rgb.shape[1], rgb.shape[0])
                writer = FFMPEG_VideoWriter(
                    temp_name,
                    size,
                    fps,
                    codec="libx264",
                    preset="medium",
                    ffmpeg_params=["-pix_fmt", "yuv420p", "-movflags", "+faststart"],
                )
            elif (rgb.shape[1], rgb.shape[0]) != size:
                raise ValueError(
                    f"write_video: frame {i} is {rgb.shape[1]}x{rgb.shape[0]}, but the first "
                    f"frame was {size[0]}x{size[1]} (width x height); every frame must have "  # type: ignore[index]
                    f"the same size"
                )
            writer.write_frame(rgb)
        if writer is None:
            raise ValueError("write_video: no frames to write")
        writer.close()
        writer = None
        os.chmod(temp_name, _mode_of_new_files())
        os.replace(temp_name, target)
    except BaseException:
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return target


def _render_modes(spec: gym.envs.registration.EnvSpec) -> list[str] | None:
    """The render modes an environment declares in its metadata (None if unknown)."""
    creator: Any = spec.entry_point
    try:
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
    except Exception:
        return None
    metadata = getattr(creator, "metadata", None)
    if not isinstance(metadata, dict):
        return None
    modes = metadata.get("render_modes")
    return list(modes) if modes is not None else None


def _make_rgb_env(
    env_name: str, wrappers: Sequence[Wrapper], env_kwargs: dict[str, Any]
) -> gym.Env[Any, Any]:
    mode = env_kwargs.pop("render_mode", "rgb_array")
    if mode != "rgb_array":
        raise ValueError(
            f"record_video renders with render_mode='rgb_array'; got render_mode={mode!r}"
        )
    spec = _env_spec(env_name, "record_video")
    modes = _render_modes(spec)
    _headless_sdl()
    if modes is not None and "rgb_array" not in modes:
        raise ValueError(
            f"{env_name} cannot be filmed: it has no 'rgb_array' render mode (its render "
            f"modes are {modes})"
        )
    try:
        env = gym.make(env_name, render_mode="rgb_array", **env_kwargs)
    except TypeError as error:  # (gymnasium's message names any other unknown keyword)
        if "unexpected keyword argument 'render_mode'" in str(error):
            raise ValueError(
                f"{env_name} cannot be filmed: its constructor does not accept "
                f"render_mode='rgb_array' (render modes: {modes})"
            ) from None
        raise
    for wrapper in wrappers:
        env = wrapper(env)
    if env.render_mode != "rgb_array":
        available = env.metadata.get("render_modes", modes)
        env.close()
        raise ValueError(
            f"{env_name} cannot be filmed: it has no 'rgb_array' render mode (its render "
            f"modes are {available})"
        )
    return env


def record_video(
    actor: Actor[Any],
    env_name: str,
    directory: str | os.PathLike[str],
    *,
    seed: int | None = 0,
    max_steps: int = 1000,
    fps: float | None = None,
    wrappers: Sequence[Wrapper] = (),
    name: str | None = None,
    **env_kwargs: Any,
) -> Path:
    """Film one deterministic episode (``actor.act``) of ``env_name``; returns the ``.mp4``.

    The environment is made with ``render_mode="rgb_array"`` (``env_kwargs`` and
    ``wrappers`` as for :class:`~rl_mind.env.VecEnv`), reset with ``seed``, and stepped
    until the episode ends or ``max_steps`` steps have passed; the clip has one frame per
    state (the first observation's included), so at most ``max_steps + 1`` frames, at
    ``fps`` (default: the environment's ``metadata["render_fps"]``, else 30). Runs
    headless (see :func:`write_video`). The file is ``<directory>/<name>-<timestamp>.mp4``
    (``name`` defaults to the environment id); a later call never overwrites it.

    The actor runs in ``eval()`` mode under ``torch.no_grad()`` on its own device; its
    mode is restored afterwards. An environment without ``rgb_array`` rendering raises a
    ``ValueError`` naming the render modes it has.
    """
    steps_cap = _as_int(max_steps)
    if steps_cap is None or steps_cap < 0:
        raise ValueError(f"record_video: max_steps must be an int >= 0, got {max_steps!r}")
    max_steps = steps_cap
    folder = Path(directory).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"record_video: {folder} is a file, expected a folder")
    env = _make_rgb_env(env_name, wrappers, dict(env_kwargs))
    try:
        rate = fps if fps is not None else env.metadata.get("render_fps") or 30
        policy = actor_policy(actor, env.action_space, env.observation_space)

        def frames() -> Iterator[np.ndarray]:
            obs, _info = env.reset(seed=seed)
            yield _as_rgb_frame(env.render(), f"{env_name}: render()")
            for _ in range(max_steps):
                obs, _reward, terminated, truncated, _info = env.step(policy(obs))
                yield _as_rgb_frame(env.render(), f"{env_name}: render()")
                if terminated or truncated:
                    break

        folder.mkdir(parents=True, exist_ok=True)
        path = _reserve_video_path(folder, _safe_name(name if name is not None else env_name))
        try:
            with _evaluation_mode(actor):
                return write_video(frames(), path, fps=float(rate))
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
    finally:
        env.close()


# ====================================================================== evaluator
def _check_steps_and_actor(steps: Any, actor: Any, method: str) -> None:
    """``Evaluator.run``'s arguments: a training step count (an int >= 0) and an actor."""
    if isinstance(steps, nn.Module) and not isinstance(actor, nn.Module):
        raise TypeError(
            f"Evaluator.{method}(steps, actor): the arguments are swapped (got the actor "
            f"first); call evaluator.{method}(steps, actor)"
        )
    count = _as_int(steps)
    if count is None or count < 0:
        raise ValueError(
            f"Evaluator.{method}: steps (the training steps so far) must be an int >= 0, "
            f"got {steps!r}"
        )
    if not callable(actor):
        raise TypeError(
            f"Evaluator.{method}: expected an Actor to evaluate, got {type(actor).__name__}"
        )


@dataclasses.dataclass(frozen=True)
class EvalResult:
    """One evaluation: the training ``step`` it was run at, ``rewards`` ``[B]`` (the return of
    the episode played in each copy), whether it ``is_best`` so far, and the episode
    ``lengths`` ``[B]``."""

    step: int
    rewards: Tensor
    is_best: bool
    lengths: Tensor | None = None

    @property
    def mean(self) -> float:
        """Mean return over the copies."""
        return float(self.rewards.float().mean())

    @property
    def std(self) -> float:
        """Standard deviation of the returns over the copies (population: 0 for one copy)."""
        return float(self.rewards.float().std(correction=0))

    @property
    def min(self) -> float:
        return float(self.rewards.min())

    @property
    def max(self) -> float:
        return float(self.rewards.max())

    def __repr__(self) -> str:
        best = ", best" if self.is_best else ""
        return (
            f"EvalResult(step={self.step}, mean={self.mean:.2f}, std={self.std:.2f}, "
            f"episodes={len(self.rewards)}{best})"
        )


BEST_ACTOR_FILE = "best_actor.pt"


def _save_best_actor(best: nn.Module, result: EvalResult, path: Path) -> None:
    state = {name: tensor.detach().cpu() for name, tensor in best.state_dict().items()}
    checkpoint = {
        "state_dict": state,
        "step": result.step,
        "mean_return": result.mean,
        "rewards": result.rewards.clone(),
    }
    try:
        save_checkpoint(checkpoint, path)
    except OSError as error:
        raise OSError(
            f"Evaluator.run: could not save the best actor to {path} ({error}); the "
            f"evaluation at step {result.step} was not recorded (history, best_reward, "
            f"best_step and {BEST_ACTOR_FILE} are as they were) and is still due: the next "
            f"run_if_needed evaluates again"
        ) from error


class Evaluator(Generic[ActionT]):
    """Evaluates an actor every ``every`` training steps, logs it, and keeps the best one.

    Args:
        env: the evaluation environment, its own (not the training one): a gymnasium id,
            from which a ``VecEnv`` of ``num_episodes`` copies is built, or a ``VecEnv`` in
            next-step reset mode (same-step reset is refused: evaluation plays whole
            episodes and never needs it).
        every: evaluate when at least ``every`` more training steps have passed
            (:meth:`run_if_needed`).
        run_dir: a folder (created if needed) for the TensorBoard event file (unless
            ``writer`` is given) and the best actor's checkpoint ``best_actor.pt``.
        writer: a ``torch.utils.tensorboard.SummaryWriter`` to log into instead.
        num_episodes: the number of copies ``B`` (one episode each) when ``env`` is an id.
        seed: copy ``i`` is reset with ``seed + i`` at every evaluation.
        max_steps: cap on the steps of one evaluation; unfinished episodes are cut there.
        wrappers: passed to ``VecEnv`` (and to :func:`record_video` for
            :meth:`visualize_best`) when ``env`` is an id.
        **env_kwargs: passed on as ``wrappers`` are.

    Logged scalars (against the training step): ``eval/mean_return``,
    ``eval/std_return``, ``eval/min_return``, ``eval/max_return``, ``eval/mean_length``.
    """

    def __init__(
        self,
        env: VecEnv | str,
        every: int,
        run_dir: str | os.PathLike[str] | None = None,
        writer: SummaryWriter | None = None,
        *,
        num_episodes: int = 8,
        seed: int = 0,
        max_steps: int = 10_000,
        wrappers: Sequence[Wrapper] = (),
        **env_kwargs: Any,
    ) -> None:
        every_count, steps_cap = _as_int(every), _as_int(max_steps)
        if every_count is None or every_count <= 0:
            raise ValueError(
                f"Evaluator: every must be a positive number of training steps, got {every!r}"
            )
        if steps_cap is None or steps_cap <= 0:
            raise ValueError(f"Evaluator: max_steps must be a positive int, got {max_steps!r}")
        every, max_steps = every_count, steps_cap
        seed_value = _as_int(seed)
        if seed_value is None or seed_value < 0:
            # (else the VecEnv, or only the first evaluation's reset, refuses it)
            raise ValueError(
                f"Evaluator: seed must be an int >= 0 (copy i is reset with seed + i at every "
                f"evaluation), got {seed!r}"
            )
        seed = seed_value
        if writer is not None and not callable(getattr(writer, "add_scalar", None)):
            # (else it fails at the first evaluation, after best_actor.pt is written)
            raise TypeError(
                f"Evaluator: writer must be a torch.utils.tensorboard.SummaryWriter, got "
                f"{type(writer).__name__} (for a log folder, pass run_dir)"
            )
        self.run_dir: Path | None = None
        if run_dir is not None:
            folder = Path(run_dir).expanduser().resolve()
            if folder.exists() and not folder.is_dir():
                raise ValueError(
                    f"Evaluator: run_dir {folder} is a file; expected a folder (e.g. "
                    f"rl_mind.run_directory('my_run'))"
                )
            self.run_dir = folder
        if isinstance(env, str):
            self.env = VecEnv(env, num_episodes, seed=seed, wrappers=wrappers, **env_kwargs)
            self._owns_env = True
            self._video_wrappers: Sequence[Wrapper] = tuple(wrappers)
            self._video_kwargs: dict[str, Any] = dict(env_kwargs)
        elif isinstance(env, VecEnv):
            if env.same_step_reset:
                raise ValueError(
                    "Evaluator: the evaluation VecEnv uses same-step reset; evaluation plays "
                    "whole episodes, one per copy, so build it with same_step_reset=False "
                    "(or pass the environment id and let the Evaluator build its own)"
                )
            if wrappers or env_kwargs:
                raise ValueError(
                    "Evaluator: wrappers and environment kwargs are only used when env is an "
                    "id; the given VecEnv is already built"
                )
            self.env = env
            self._owns_env = False
            self._video_wrappers = tuple(getattr(env, "wrappers", ()) or ())
            self._video_kwargs = dict(getattr(env, "env_kwargs", {}) or {})
        else:
            raise TypeError(
                f"Evaluator: env must be a gymnasium id or a VecEnv, got {type(env).__name__}"
            )
        self._video_kwargs.pop("render_mode", None)
        if self.run_dir is not None:  # (only now: a refused environment leaves no folder)
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
            except BaseException:
                if self._owns_env:
                    self.env.close()
                raise
        self.every = every
        self.seed = seed
        self.max_steps = max_steps
        self.history: list[EvalResult] = []
        self.best_reward: float | None = None
        self.best_actor: Actor[ActionT] | None = None
        self.best_step: int | None = None
        self._writer = writer
        self._owns_writer = False
        self._next_due = 0

    # ------------------------------------------------------------------ properties
    @property
    def writer(self) -> SummaryWriter | None:
        """The TensorBoard writer (created in ``run_dir`` at the first evaluation)."""
        if self._writer is None and self.run_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.run_dir))
            self._owns_writer = True
        return self._writer

    @property
    def best_checkpoint_path(self) -> Path | None:
        """``run_dir / "best_actor.pt"`` (None without a ``run_dir``)."""
        return self.run_dir / BEST_ACTOR_FILE if self.run_dir is not None else None

    # ------------------------------------------------------------------ evaluating
    def run_if_needed(self, steps: int, actor: Actor[ActionT]) -> EvalResult | None:
        """Evaluate ``actor`` if ``every`` training steps have passed since the last time.

        ``steps`` is the number of training steps so far. The first call always evaluates
        (the start of the learning curve); afterwards evaluations happen at the first call
        with ``steps`` at or beyond the next multiple of ``every``. Returns the
        :class:`EvalResult` when it ran, else ``None``.
        """
        _check_steps_and_actor(steps, actor, "run_if_needed")
        if steps < self._next_due:
            return None
        return self.run(steps, actor)

    def run(self, steps: int, actor: Actor[ActionT]) -> EvalResult:
        """Evaluate ``actor`` now: one deterministic episode per copy, logged at ``steps``.

        Validate everything first, then mutate: the files are written before anything is
        recorded. When the actor is the best so far, ``best_actor.pt`` is saved first; if
        that fails (a full disk, a folder it may not write), the error is raised and
        nothing is recorded: ``history``, ``best_reward``, ``best_step``, ``best_actor``
        and ``best_actor.pt`` stay as they were, and the evaluation is still due. There is
        no retry inside the call; the next :meth:`run_if_needed` evaluates again (and saves
        that actor if it is the best). Only the TensorBoard scalars are written last.
        """
        _check_steps_and_actor(steps, actor, "run")
        rewards, lengths = self._play(actor)
        mean = float(rewards.mean())
        is_best = self.best_reward is None or mean > self.best_reward
        result = EvalResult(int(steps), rewards, is_best, lengths)
        writer = self.writer  # (made at the first run: a folder it cannot write fails here)
        best = None
        if is_best:
            best = copy.deepcopy(actor)
            for parameter in best.parameters():
                parameter.grad = None
            if self.run_dir is not None:
                _save_best_actor(best, result, self.run_dir / BEST_ACTOR_FILE)
        # (the files are written: only now is the evaluation recorded)
        self.history.append(result)
        self._next_due = (int(steps) // self.every + 1) * self.every
        if best is not None:
            self.best_reward, self.best_step, self.best_actor = mean, int(steps), best
        if writer is not None:
            self._log(writer, result)
        return result

    def _play(self, actor: Actor[ActionT]) -> tuple[Tensor, Tensor]:
        """Returns and lengths ``[B]`` (CPU) of the first episode of each copy."""
        env = self.env
        device = _actor_device(actor)
        B = env.num_envs
        returns = torch.zeros(B, dtype=torch.float32, device=env.device)
        lengths = torch.zeros(B, dtype=torch.long, device=env.device)
        finished = torch.zeros(B, dtype=torch.bool, device=env.device)
        with _evaluation_mode(actor):
            obs = env.reset(seed=self.seed)
            for _ in range(self.max_steps):
                actions = _check_action_shape(actor.act(obs.to(device)), env.action_space, B)
                step = env.step(actions)
                # Copies whose first episode is over keep stepping, their rewards masked.
                running = ~finished
                returns += step.reward * running
                lengths += running.long()
                finished |= step.done
                if bool(finished.all()):
                    break
                obs = step.obs
        return returns.cpu(), lengths.cpu()

    @staticmethod
    def _log(writer: SummaryWriter, result: EvalResult) -> None:
        scalars = {
            "eval/mean_return": result.mean,
            "eval/std_return": result.std,
            "eval/min_return": result.min,
            "eval/max_return": result.max,
        }
        if result.lengths is not None:
            scalars["eval/mean_length"] = float(result.lengths.float().mean())
        for tag, value in scalars.items():
            writer.add_scalar(tag, value, global_step=result.step)
        writer.flush()

    # ------------------------------------------------------------------ showing
    def plot(self, ax: Axes | None = None, path: str | os.PathLike[str] | None = None) -> Axes:
        """The learning curve: mean evaluation return ± std against training steps, the
        best evaluation marked. Draws on ``ax`` (a new figure if None), saves a PNG to
        ``path`` if given, and returns the axes."""
        if not self.history:
            raise ValueError("Evaluator.plot: no evaluation has run yet (call run_if_needed)")
        import matplotlib.pyplot as plt

        if ax is None:
            _figure, ax = plt.subplots(figsize=(6, 3.5))
        steps = np.array([result.step for result in self.history])
        means = np.array([result.mean for result in self.history])
        stds = np.array([result.std for result in self.history])
        ax.plot(steps, means, marker="o", markersize=3, label="mean return")
        ax.fill_between(steps, means - stds, means + stds, alpha=0.25, label="± std")
        if self.best_step is not None and self.best_reward is not None:
            ax.plot(
                [self.best_step], [self.best_reward], marker="*", markersize=14,
                linestyle="none", color="tab:red", label=f"best ({self.best_reward:.1f})",
            )  # fmt: skip
        ax.set_xlabel("training steps")
        ax.set_ylabel("evaluation return")
        ax.set_title(f"{self.env.env_name}: {self.env.num_envs} evaluation episodes")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        if path is not None:
            ax.figure.savefig(  # type: ignore[union-attr]
                Path(path).expanduser(), dpi=100, bbox_inches="tight"
            )
        return ax

    def visualize_best(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        seed: int | None = None,
        max_steps: int = 1000,
        fps: float | None = None,
    ) -> Path:
        """Film one episode of the best actor (:func:`record_video`) and show it: inline in a
        notebook, the file path printed from a script. The video goes to ``directory``
        (default: ``run_dir``, else ``outputs_directory()/videos``); returns its path."""
        if self.best_actor is None:
            raise RuntimeError(
                "Evaluator.visualize_best: no evaluation has run yet, so there is no best "
                "actor; call run_if_needed(steps, actor) or run(steps, actor) first"
            )
        if directory is None:
            directory = self.run_dir if self.run_dir is not None else outputs_directory() / "videos"
        path = record_video(
            self.best_actor,
            self.env.env_name,
            directory,
            seed=self.seed if seed is None else seed,
            max_steps=max_steps,
            fps=fps,
            wrappers=self._video_wrappers,
            name=f"best-{self.env.env_name}",
            **self._video_kwargs,
        )
        video_display(path)
        return path

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close the environment and the writer if the evaluator made them. Idempotent."""
        if self._owns_env:
            self.env.close()
        if self._owns_writer and self._writer is not None:
            self._writer.close()
            self._writer = None
            self._owns_writer = False

    def __enter__(self) -> Evaluator[ActionT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        best = f"{self.best_reward:.2f}" if self.best_reward is not None else "none"
        return (
            f"Evaluator({self.env.env_name!r}, every={self.every}, "
            f"episodes={self.env.num_envs}, evaluations={len(self.history)}, best={best})"
        )
