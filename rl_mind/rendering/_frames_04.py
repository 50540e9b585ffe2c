"""rl-mind 0.4's rendering names, built on :class:`~rl_mind.rendering.viewer.FrameViewer`:
``RenderWidget``, ``rollout_frames``, ``animate_frames``, the ``Trimmer`` classes,
``encode_frame`` / ``decode_frame`` and ``HistoryEntry``. Each works and warns
(:func:`rl_mind._compat_04.deprecated`) with the line to write instead; they stay importable
from :mod:`rl_mind.rendering`, as in 0.4, and from the package root.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rl_mind._compat_04 import deprecated
from rl_mind._validation import as_int
from rl_mind.notebook import headless_sdl
from rl_mind.rendering.viewer import (
    FrameViewer,
    HistoryEntry,
    as_rgb_frame,
    decode_png,
    encode_png,
)

__all__ = [
    "DecimateTrimmer",
    "HistoryEntry",
    "RenderWidget",
    "Trimmer",
    "WindowTrimmer",
    "animate_frames",
    "decode_frame",
    "encode_frame",
    "rollout_frames",
]


def encode_frame(frame: np.ndarray) -> bytes:
    """Deprecated (rl-mind 0.4): an RGB frame ``[H, W, 3]`` as PNG bytes (0.4 wrote WebP)."""
    deprecated("encode_frame(frame): write FrameViewer().add(frame), which keeps frames as PNG")
    return encode_png(as_rgb_frame(frame, "encode_frame"))


def decode_frame(data: bytes) -> np.ndarray:
    """Deprecated (rl-mind 0.4): the ``[H, W, 3]`` uint8 frame of :func:`encode_frame`'s bytes."""
    deprecated("decode_frame(data): write FrameViewer.frame(position)")
    return decode_png(data)


class Trimmer:
    """Deprecated (rl-mind 0.4): how many ``(step, frame)`` entries a history keeps. Write
    ``FrameViewer(max_frames=..., trim="oldest" | "thin")`` instead."""

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        """The entries to keep (called after every new frame)."""
        raise NotImplementedError(f"{type(self).__name__}.trim(history): write the entries to keep")


class WindowTrimmer(Trimmer):
    """Deprecated (rl-mind 0.4): the last ``size`` entries; ``FrameViewer(size, trim="oldest")``."""

    def __init__(self, size: int) -> None:
        deprecated('WindowTrimmer(size): write FrameViewer(max_frames=size, trim="oldest")')
        checked = as_int(size)
        if checked is None or checked < 1:
            raise ValueError(f"WindowTrimmer: size must be an int >= 1, got {size!r}")
        self.size = checked

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        return history[-self.size :] if len(history) > self.size else history


class DecimateTrimmer(Trimmer):
    """Deprecated (rl-mind 0.4): past ``capacity`` entries, keep one in ``1 / keep_ratio``;
    ``FrameViewer(capacity, trim="thin")``."""

    def __init__(self, capacity: int, keep_ratio: float = 0.5) -> None:
        deprecated('DecimateTrimmer(capacity): write FrameViewer(max_frames=capacity, trim="thin")')
        checked = as_int(capacity)
        if checked is None or checked < 2:
            raise ValueError(f"DecimateTrimmer: capacity must be an int >= 2, got {capacity!r}")
        if not 0 < keep_ratio <= 1:
            raise ValueError(f"DecimateTrimmer: keep_ratio must be in (0, 1], got {keep_ratio!r}")
        self.capacity = checked
        self.stride = max(1, round(1 / keep_ratio))

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        return history[:: self.stride] if len(history) > self.capacity else history


def _viewer_for(trimmer: Trimmer | None, width: str | int | None) -> FrameViewer:
    """The :class:`FrameViewer` that keeps what 0.4's ``trimmer`` kept."""
    if trimmer is None:
        viewer = FrameViewer(1000, width=width)
    elif isinstance(trimmer, WindowTrimmer):
        viewer = FrameViewer(max(trimmer.size, 2), trim="oldest", width=width)
    elif isinstance(trimmer, DecimateTrimmer):
        viewer = FrameViewer(trimmer.capacity, trim="thin", width=width)
    else:
        raise TypeError(
            f"a {type(trimmer).__name__} trimmer: write FrameViewer(max_frames=..., "
            f'trim="oldest" | "thin") and viewer.capture(env) after each step'
        )
    viewer.trimmer = trimmer
    return viewer


class RenderWidget:
    """Deprecated (rl-mind 0.4): an environment that shows a frame after every ``reset`` and
    ``step``. Write instead::

        viewer = FrameViewer()
        viewer.show()
        ...                       # env.reset() / env.step(action)
        viewer.capture(env)       # after each: viewer.capture(vec_env, index=k) for a VecEnv

    ``env`` is a gymnasium environment or a :class:`~rl_mind.env.VecEnv` made with
    ``render_mode="rgb_array"`` (``k``: the copy shown). Other attributes are the
    environment's.
    """

    def __init__(
        self,
        env: Any,
        width: str | int = "400px",
        fps: int = 30,
        trimmer: Trimmer | None = None,
        k: int = 0,
    ) -> None:
        deprecated(
            "RenderWidget(env): write viewer = FrameViewer(); viewer.show(); viewer.capture(env)"
        )
        self.env = env
        self.k = k
        self.viewer = _viewer_for(trimmer, width)
        self.viewer.show()

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        """Reset the environment, forget the frames, show the first one."""
        result = self.env.reset(*args, **kwargs)
        self.viewer.clear()
        self.viewer.capture(self.env, self.k)
        return result

    def step(self, action: Any) -> Any:
        """Step the environment and show the new frame."""
        result = self.env.step(action)
        self.viewer.capture(self.env, self.k)
        return result

    def __getattr__(self, name: str) -> Any:
        if name in ("env", "k", "viewer"):  # not set yet (a failed __init__)
            raise AttributeError(name)
        return getattr(self.env, name)


def rollout_frames(
    env_name: str,
    policy: Callable[[Any], Any],
    seed: int = 0,
    trimmer: Trimmer | None = None,
    wrappers: Sequence[Callable[[Any], Any]] = (),
    **kwargs: Any,
) -> list[HistoryEntry]:
    """Deprecated (rl-mind 0.4): one episode of ``policy`` (``obs -> action``) as a list of
    ``(step, encoded frame)``; write ``record_video(actor, env_name, directory)`` (a video
    file) or capture the frames into a :class:`FrameViewer`."""
    deprecated(
        "rollout_frames(env_name, policy): write record_video(actor, env_name, directory) and "
        "video_display(path), or viewer.capture(env) after each step"
    )
    import gymnasium

    headless_sdl()
    env = gymnasium.make(env_name, render_mode="rgb_array", **kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    try:
        obs, _info = env.reset(seed=seed)
        history: list[HistoryEntry] = [(0, encode_png(as_rgb_frame(env.render())))]
        terminated = truncated = False
        step = 0
        while not (terminated or truncated):
            obs, _reward, terminated, truncated, _info = env.step(policy(obs))
            step += 1
            history.append((step, encode_png(as_rgb_frame(env.render()))))
            if trimmer is not None:
                history = list(trimmer.trim(history))
    finally:
        env.close()
    return history


def animate_frames(
    history: Sequence[HistoryEntry], fps: int = 30, width: str | int = "400px"
) -> FrameViewer:
    """Deprecated (rl-mind 0.4): show a ``(step, encoded frame)`` history in a
    :class:`FrameViewer` (returned) with its slider and play button."""
    deprecated(
        "animate_frames(history): write viewer.add(frame) for each frame, then viewer.show()"
    )
    if len(history) == 0:
        raise ValueError("animate_frames: the history is empty, expected (step, frame) pairs")
    viewer = FrameViewer(max(len(history), 2), width=width)
    for _step, data in history:
        viewer.add(decode_png(data))
    viewer.show()
    return viewer
