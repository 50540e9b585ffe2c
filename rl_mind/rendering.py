"""Watching an environment live in a notebook: a frame viewer with a history slider.

:class:`FrameViewer` collects RGB frames (from ``env.render()`` of a gymnasium environment,
or of one copy of a :class:`~rl_mind.env.VecEnv`) and shows them in a notebook widget: the
latest frame while the environment runs, and a slider (with a play button) to go back in
the history.

What the reader must not get wrong:

- Memory is bounded: frames are kept as PNG bytes (lossless, typically 20-100 times smaller
  than the raw array), and at most ``max_frames`` of them. When the history is full, the
  ``trim`` policy decides what goes: ``"thin"`` (default) drops every other frame of the
  older half, so the whole run stays visible, coarser in the past and dense near the
  present; ``"oldest"`` drops the oldest frame (a sliding window).
- The environment must be made with ``render_mode="rgb_array"`` (for a ``VecEnv``:
  ``VecEnv(name, B, render_mode="rgb_array")``).
- ``ipywidgets`` is an optional dependency (``pip install "rl-mind[widgets]"``): frames can
  be collected without it, only showing the widget needs it.

rl-mind 0.4's names (``RenderWidget``, ``rollout_frames``, ``animate_frames``, the
``Trimmer`` classes, ``encode_frame`` / ``decode_frame``, ``FrameViewer.update`` and
``.reset``) are kept at the end of the module, built on :class:`FrameViewer`: they work and
warn (``DeprecationWarning``) with the line to write instead.
"""

from __future__ import annotations

import struct
import warnings
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from rl_mind.core import _as_int
from rl_mind.notebook import _headless_sdl

__all__ = ["FrameViewer"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_WIDGETS_MESSAGE = (
    "FrameViewer needs ipywidgets to show its widget, and it is not installed. Install it "
    'with  pip install "rl-mind[widgets]"  (or  pip install ipywidgets), then restart the '
    "kernel."
)


# ---------------------------------------------------------------------- PNG (no pillow needed)
def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _encode_png(frame: np.ndarray, level: int = 1) -> bytes:
    """Encode an RGB frame ``[height, width, 3]`` uint8 as PNG bytes (lossless)."""
    array = np.ascontiguousarray(frame)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(
            f"encode_png: expected an RGB frame [height, width, 3] of uint8, got shape "
            f"{list(array.shape)} and dtype {array.dtype}"
        )
    height, width = array.shape[:2]
    # Each scanline starts with its filter type (0: none).
    rows = np.zeros((height, width * 3 + 1), dtype=np.uint8)
    rows[:, 1:] = array.reshape(height, width * 3)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        _PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
        + _png_chunk(b"IEND", b"")
    )


def _decode_png(data: bytes | memoryview) -> np.ndarray:
    """Decode PNG bytes written by :func:`_encode_png` back into ``[height, width, 3]`` uint8."""
    data = bytes(data)
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError("decode_png: not PNG data")
    position = len(_PNG_SIGNATURE)
    width = height = 0
    compressed = b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, color, interlace) != (8, 2, 0):
                raise ValueError("decode_png: only 8-bit RGB non-interlaced PNG is supported")
        elif kind == b"IDAT":
            compressed += body
    rows = np.frombuffer(zlib.decompress(compressed), dtype=np.uint8).reshape(height, -1)
    if rows[:, 0].any():
        raise ValueError("decode_png: only unfiltered scanlines are supported")
    return rows[:, 1:].reshape(height, width, 3).copy()


# ---------------------------------------------------------------------- frames of an env
def _render(env: Any, index: int) -> np.ndarray:
    """An RGB frame of ``env`` (a gymnasium Env, a gymnasium VectorEnv or a VecEnv)."""
    target = getattr(env, "gym_env", env)  # a VecEnv renders through its gymnasium env
    frame = target.render()
    if frame is None:
        raise ValueError(
            f"{type(env).__name__}.render() returned None: make the environment with "
            f'render_mode="rgb_array" (for a VecEnv: VecEnv(name, num_envs, '
            f'render_mode="rgb_array"))'
        )
    if isinstance(frame, (list, tuple)):
        if not -len(frame) <= index < len(frame):
            raise IndexError(f"copy {index} out of range for {len(frame)} copies")
        frame = frame[index]
    else:
        frame = np.asarray(frame)
        if frame.ndim == 4:
            frame = frame[index]
        elif index not in (0, -1):
            raise IndexError(f"copy {index}: this environment renders a single frame")
    return np.asarray(frame)


def _as_rgb_frame(frame: Any, who: str = "FrameViewer") -> np.ndarray:
    """A rendered frame as contiguous ``[height, width, 3]`` uint8 (grey, RGBA and float
    ``[0, 1]`` frames are converted); ``who`` names the caller in the error."""
    array = np.asarray(frame)
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] not in (3, 4):
        raise ValueError(
            f"{who}: expected an RGB frame [height, width, 3], got an array of shape "
            f"{list(array.shape)}"
        )
    array = array[:, :, :3]
    if array.dtype != np.uint8:
        if np.issubdtype(array.dtype, np.floating) and array.max(initial=0) <= 1.0:
            array = array * 255.0
        array = np.clip(array, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(array)


class FrameViewer:
    """A notebook widget that shows frames as they come, with a history slider.

    Args:
        max_frames: the most frames kept (memory bound).
        trim: what to drop when full: ``"thin"`` (every other frame of the older half) or
            ``"oldest"`` (a sliding window).
        width: display width in pixels (default: the frame's own width); rl-mind 0.4's
            ``"400px"`` is read as 400.

    Use::

        viewer = FrameViewer()
        viewer.show()                  # in its own cell: the widget appears
        for _ in range(200):
            ...                        # step the environment
            viewer.capture(env)        # or viewer.capture(vec_env, index=0), viewer.add(frame)
    """

    def __init__(
        self,
        max_frames: int = 500,
        *,
        trim: Literal["thin", "oldest"] = "thin",
        width: int | str | None = None,
    ) -> None:
        frames_cap = _as_int(max_frames)
        if frames_cap is None or frames_cap < 2:
            raise ValueError(f"FrameViewer: max_frames must be an int >= 2, got {max_frames!r}")
        max_frames = frames_cap
        if trim not in ("thin", "oldest"):
            raise ValueError(f"FrameViewer: trim must be 'thin' or 'oldest', got {trim!r}")
        self.max_frames = max_frames
        self.trim = trim
        self.width = _pixels(width)  # (0.4's CSS width "400px" too)
        self._frames: deque[tuple[int, bytes]] = deque()  # (frame number, PNG bytes)
        self._count = 0
        self._widget: Any = None
        self._image: Any = None
        self._slider: Any = None
        self._label: Any = None
        self._play: Any = None
        self._shown = False
        self._trimmer: Trimmer | None = None  # (rl-mind 0.4: the one RenderWidget was given)

    # ------------------------------------------------------------------ frames
    def __len__(self) -> int:
        return len(self._frames)

    @property
    def frame_numbers(self) -> list[int]:
        """The numbers (0 = first frame added) of the frames kept, oldest first."""
        return [number for number, _png in self._frames]

    @property
    def total_frames(self) -> int:
        """How many frames were added in all (kept or trimmed)."""
        return self._count

    @property
    def nbytes(self) -> int:
        """Memory held by the kept frames (compressed bytes)."""
        return sum(len(png) for _number, png in self._frames)

    def frame(self, position: int) -> np.ndarray:
        """The kept frame at ``position`` (``-1``: the latest), decoded ``[H, W, 3]`` uint8."""
        return _decode_png(self._frames[position][1])

    def add(self, frame: np.ndarray) -> None:
        """Append an RGB frame ``[height, width, 3]`` (uint8, or floats in [0, 1])."""
        png = _encode_png(_as_rgb_frame(frame))
        self._frames.append((self._count, png))
        self._count += 1
        if len(self._frames) > self.max_frames:
            self._trim()
        self._refresh(follow=True)

    def capture(self, env: Any, index: int = 0) -> np.ndarray:
        """Render ``env`` (copy ``index`` of a ``VecEnv`` or gymnasium ``VectorEnv``), add the
        frame, and return it."""
        _headless_sdl()
        frame = _as_rgb_frame(_render(env, index))
        self.add(frame)
        return frame

    def clear(self) -> None:
        """Forget every frame."""
        self._frames.clear()
        self._count = 0
        self._refresh(follow=True)

    def _trim(self) -> None:
        if self.trim == "oldest":
            while len(self._frames) > self.max_frames:
                self._frames.popleft()
            return
        frames = list(self._frames)
        half = len(frames) // 2
        older = frames[:half]
        # Keep the first frame and every other one of the older half.
        kept = older[::2]
        self._frames = deque(kept + frames[half:])

    # ------------------------------------------------------------------ widget
    @property
    def widget(self) -> Any:
        """The ``ipywidgets`` widget (built on first use; needs ipywidgets)."""
        if self._widget is None:
            self._widget = self._build_widget()
            self._refresh(follow=True)
        return self._widget

    def _build_widget(self) -> Any:
        try:
            import ipywidgets as widgets
        except ImportError:
            raise ImportError(_WIDGETS_MESSAGE) from None
        layout = {"width": f"{self.width}px"} if self.width else {}
        self._image = widgets.Image(format="png", layout=layout)
        self._slider = widgets.IntSlider(
            value=0, min=0, max=0, description="frame", continuous_update=True
        )
        self._play = widgets.Play(value=0, min=0, max=0, interval=50, description="play")
        widgets.jslink((self._play, "value"), (self._slider, "value"))
        # Kept in step from Python, so that it also holds without a front-end.
        widgets.dlink((self._slider, "max"), (self._play, "max"))
        self._label = widgets.Label(value="no frame yet")
        self._slider.observe(self._on_slider, names="value")
        return widgets.VBox([self._image, widgets.HBox([self._play, self._slider, self._label])])

    def _on_slider(self, _change: Any) -> None:
        self._show_position(int(self._slider.value))

    def _show_position(self, position: int) -> None:
        if self._image is None or not self._frames:
            return
        position = max(0, min(position, len(self._frames) - 1))
        number, png = self._frames[position]
        self._image.value = png
        self._label.value = f"frame {number + 1} of {self._count}"

    def _refresh(self, follow: bool) -> None:
        if self._slider is None:
            return
        if not self._frames:
            self._slider.max = 0
            self._image.value = b""
            self._label.value = "no frame yet"
            return
        at_end = self._slider.value >= self._slider.max
        self._slider.max = len(self._frames) - 1
        if follow and at_end:
            if self._slider.value != self._slider.max:
                self._slider.value = self._slider.max  # triggers _on_slider
            else:
                self._show_position(self._slider.value)
        else:
            self._show_position(self._slider.value)

    def show(self) -> None:
        """Display the widget (in a notebook)."""
        from IPython.display import display

        self._shown = True
        display(self.widget)

    # ------------------------------------------------------------------ rl-mind 0.4
    # 0.4's public attributes, read from today's state (frames are PNG, 0.4's were WebP).
    @property
    def history(self) -> list[HistoryEntry]:
        """rl-mind 0.4: the kept ``(step, encoded frame)`` entries, oldest first (a copy;
        :meth:`frame` decodes one)."""
        return list(self._frames)

    @property
    def step_count(self) -> int:
        """rl-mind 0.4: the frames added since the last ``reset`` (:attr:`total_frames`)."""
        return self._count

    @property
    def trimmer(self) -> Trimmer | None:
        """rl-mind 0.4: the trimmer given to ``RenderWidget``; today :attr:`max_frames` and
        :attr:`trim` bound the history."""
        return self._trimmer

    @property
    def image(self) -> Any:
        """rl-mind 0.4: the widget's ``ipywidgets.Image`` (the widget is built if needed)."""
        return self._built()._image

    @property
    def label(self) -> Any:
        """rl-mind 0.4: the widget's ``ipywidgets.Label`` (the frame number)."""
        return self._built()._label

    @property
    def slider(self) -> Any:
        """rl-mind 0.4: the widget's ``ipywidgets.IntSlider`` over the kept frames."""
        return self._built()._slider

    @property
    def play(self) -> Any:
        """rl-mind 0.4: the widget's ``ipywidgets.Play`` button, linked to :attr:`slider`."""
        return self._built()._play

    def _built(self) -> FrameViewer:
        _ = self.widget  # (built on first use)
        return self

    def update(self, frame: np.ndarray) -> None:
        """Deprecated (rl-mind 0.4): :meth:`add`, showing the widget on the first frame as
        0.4's viewer did."""
        _deprecated("FrameViewer.update(frame)", "viewer.add(frame) (and viewer.show() once)")
        if not self._shown:
            self.show()
        self.add(frame)

    def reset(self) -> None:
        """Deprecated (rl-mind 0.4): :meth:`clear`."""
        _deprecated("FrameViewer.reset()", "viewer.clear()")
        self.clear()

    def _ipython_display_(self) -> None:
        self.show()

    def __repr__(self) -> str:
        return (
            f"FrameViewer({len(self)} frames kept of {self._count}, {self.nbytes / 1e6:.1f} MB, "
            f"trim={self.trim!r})"
        )


# ---------------------------------------------------------------------- rl-mind 0.4
HistoryEntry = tuple[int, bytes]
"""rl-mind 0.4: one frame of a history, ``(step, encoded frame)``."""


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is rl-mind 0.4's spelling; write {new}", DeprecationWarning, stacklevel=3)


def encode_frame(frame: np.ndarray) -> bytes:
    """Deprecated (rl-mind 0.4): an RGB frame ``[H, W, 3]`` as PNG bytes (0.4 wrote WebP)."""
    _deprecated("encode_frame(frame)", "FrameViewer().add(frame), which keeps frames as PNG")
    return _encode_png(_as_rgb_frame(frame, "encode_frame"))


def decode_frame(data: bytes) -> np.ndarray:
    """Deprecated (rl-mind 0.4): the ``[H, W, 3]`` uint8 frame of :func:`encode_frame`'s bytes."""
    _deprecated("decode_frame(data)", "FrameViewer.frame(position)")
    return _decode_png(data)


class Trimmer:
    """Deprecated (rl-mind 0.4): how many ``(step, frame)`` entries a history keeps. Write
    ``FrameViewer(max_frames=..., trim="oldest" | "thin")`` instead."""

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        """The entries to keep (called after every new frame)."""
        raise NotImplementedError(f"{type(self).__name__}.trim(history): write the entries to keep")


class WindowTrimmer(Trimmer):
    """Deprecated (rl-mind 0.4): the last ``size`` entries; ``FrameViewer(size, trim="oldest")``."""

    def __init__(self, size: int) -> None:
        _deprecated("WindowTrimmer(size)", 'FrameViewer(max_frames=size, trim="oldest")')
        checked = _as_int(size)
        if checked is None or checked < 1:
            raise ValueError(f"WindowTrimmer: size must be an int >= 1, got {size!r}")
        self.size = checked

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        return history[-self.size :] if len(history) > self.size else history


class DecimateTrimmer(Trimmer):
    """Deprecated (rl-mind 0.4): past ``capacity`` entries, keep one in ``1 / keep_ratio``;
    ``FrameViewer(capacity, trim="thin")``."""

    def __init__(self, capacity: int, keep_ratio: float = 0.5) -> None:
        _deprecated("DecimateTrimmer(capacity)", 'FrameViewer(max_frames=capacity, trim="thin")')
        checked = _as_int(capacity)
        if checked is None or checked < 2:
            raise ValueError(f"DecimateTrimmer: capacity must be an int >= 2, got {capacity!r}")
        if not 0 < keep_ratio <= 1:
            raise ValueError(f"DecimateTrimmer: keep_ratio must be in (0, 1], got {keep_ratio!r}")
        self.capacity = checked
        self.stride = max(1, round(1 / keep_ratio))

    def trim(self, history: Sequence[HistoryEntry]) -> Sequence[HistoryEntry]:
        return history[:: self.stride] if len(history) > self.capacity else history


def _pixels(width: str | int | None) -> int | None:
    """0.4's CSS width (``"400px"``) as today's pixel count."""
    if width is None or isinstance(width, int):
        return width
    text = str(width).strip().removesuffix("px")
    if not text.isdigit():
        raise ValueError(f"width: expected pixels such as '400px' or 400, got {width!r}")
    return int(text)


def _viewer_for(trimmer: Trimmer | None, width: str | int | None) -> FrameViewer:
    """The :class:`FrameViewer` that keeps what 0.4's ``trimmer`` kept."""
    if trimmer is None:
        viewer = FrameViewer(1000, width=_pixels(width))
    elif isinstance(trimmer, WindowTrimmer):
        viewer = FrameViewer(max(trimmer.size, 2), trim="oldest", width=_pixels(width))
    elif isinstance(trimmer, DecimateTrimmer):
        viewer = FrameViewer(trimmer.capacity, trim="thin", width=_pixels(width))
    else:
        raise TypeError(
            f"a {type(trimmer).__name__} trimmer: write FrameViewer(max_frames=..., "
            f'trim="oldest" | "thin") and viewer.capture(env) after each step'
        )
    viewer._trimmer = trimmer
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
        _deprecated(
            "RenderWidget(env)", "viewer = FrameViewer(); viewer.show(); viewer.capture(env)"
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
    _deprecated(
        "rollout_frames(env_name, policy)",
        "record_video(actor, env_name, directory) and video_display(path), or "
        "viewer.capture(env) after each step",
    )
    import gymnasium

    _headless_sdl()
    env = gymnasium.make(env_name, render_mode="rgb_array", **kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    try:
        obs, _info = env.reset(seed=seed)
        history: list[HistoryEntry] = [(0, _encode_png(_as_rgb_frame(env.render())))]
        terminated = truncated = False
        step = 0
        while not (terminated or truncated):
            obs, _reward, terminated, truncated, _info = env.step(policy(obs))
            step += 1
            history.append((step, _encode_png(_as_rgb_frame(env.render()))))
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
    _deprecated("animate_frames(history)", "viewer.add(frame) for each frame, then viewer.show()")
    if len(history) == 0:
        raise ValueError("animate_frames: the history is empty, expected (step, frame) pairs")
    viewer = FrameViewer(max(len(history), 2), width=_pixels(width))
    for _step, data in history:
        viewer.add(_decode_png(data))
    viewer.show()
    return viewer
