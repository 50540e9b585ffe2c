"""Videos: one episode of an actor filmed headless into an ``.mp4``.

:func:`record_video` films one deterministic episode (``actor.act``) of a gymnasium
environment; :func:`write_video` encodes any RGB frames; :func:`actor_policy` turns an actor
into the ``obs -> action`` function of a single gymnasium environment.

What the reader must not get wrong:

- The actor runs in ``eval()`` mode under ``torch.no_grad()`` on its own device; its
  train/eval modes are restored afterwards, its ``requires_grad`` flags untouched.
- A video file appears under its name only once it is complete (a temporary name, then a
  rename), and a later recording never overwrites an earlier one.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from rl_mind._validation import as_int
from rl_mind.checkpoints import mode_of_new_files
from rl_mind.core import Actor, Observation
from rl_mind.env import ObsConverter, dict_struct_class, env_spec
from rl_mind.notebook import headless_sdl, safe_name
from rl_mind.rendering.viewer import as_rgb_frame

__all__ = ["actor_policy", "record_video", "write_video"]

Wrapper = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]


# ====================================================================== actors
def actor_device(actor: nn.Module) -> torch.device:
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


def check_action_shape(actions: Any, action_space: spaces.Space[Any], batch: int) -> Tensor:
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
def evaluation_mode(actor: nn.Module) -> Iterator[None]:
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
        converter = ObsConverter(observation_space, device)
        empty: Any = gym.vector.utils.create_empty_array(observation_space, n=1)

        def convert_with_space(obs: Any) -> Observation:
            batch = gym.vector.utils.concatenate(observation_space, [obs], copy.deepcopy(empty))
            return converter(batch)

        return convert_with_space

    def convert(obs: Any) -> Observation:
        if isinstance(obs, dict):
            # gymnasium's Dict space sorts its keys; so does the VecEnv's struct.
            keys = tuple(sorted(obs))
            return dict_struct_class(keys)(**{key: convert(obs[key]) for key in keys})
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
    device = actor_device(actor)
    convert = _single_obs_converter(observation_space, device)

    def policy(obs: Any) -> Any:
        batch = convert(obs)
        with torch.no_grad():
            actions = check_action_shape(actor.act(batch), action_space, 1)
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


# ====================================================================== writing and filming
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
            rgb = _pad_even(as_rgb_frame(frame, "write_video"))
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
        os.chmod(temp_name, mode_of_new_files())
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
    spec = env_spec(env_name, "record_video")
    modes = _render_modes(spec)
    headless_sdl()
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
    wrappers: Sequence[Wrapper] = (),
    *,
    seed: int | None = 0,
    max_steps: int = 1000,
    fps: float | None = None,
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
    steps_cap = as_int(max_steps)
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
            yield as_rgb_frame(env.render(), f"{env_name}: render()")
            for _ in range(max_steps):
                obs, _reward, terminated, truncated, _info = env.step(policy(obs))
                yield as_rgb_frame(env.render(), f"{env_name}: render()")
                if terminated or truncated:
                    break

        folder.mkdir(parents=True, exist_ok=True)
        path = _reserve_video_path(folder, safe_name(name if name is not None else env_name))
        try:
            with evaluation_mode(actor):
                return write_video(frames(), path, fps=float(rate))
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
    finally:
        env.close()
