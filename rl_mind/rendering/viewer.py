"""The frame viewer (:class:`FrameViewer`, exported by :mod:`rl_mind.rendering`) and its
PNG codec, which needs no pillow.

What the reader must not get wrong: frames are kept as PNG bytes, at most ``max_frames`` of
them; the ``trim`` policy decides what goes when the history is full.
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from typing import Any, Literal

import numpy as np

from rl_mind._compat_04 import deprecated
from rl_mind._validation import as_int
from rl_mind.notebook import headless_sdl

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


def encode_png(frame: np.ndarray, level: int = 1) -> bytes:
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


def decode_png(data: bytes | memoryview) -> np.ndarray:
    """Decode PNG bytes written by :func:`encode_png` back into ``[height, width, 3]`` uint8."""
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


def as_rgb_frame(frame: Any, who: str = "FrameViewer") -> np.ndarray:
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
        frames_cap = as_int(max_frames)
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
        return decode_png(self._frames[position][1])

    def add(self, frame: np.ndarray) -> None:
        """Append an RGB frame ``[height, width, 3]`` (uint8, or floats in [0, 1])."""
        png = encode_png(as_rgb_frame(frame))
        self._frames.append((self._count, png))
        self._count += 1
        if len(self._frames) > self.max_frames:
            self._trim()
        self._refresh(follow=True)

    def capture(self, env: Any, index: int = 0) -> np.ndarray:
        """Render ``env`` (copy ``index`` of a ``VecEnv`` or gymnasium ``VectorEnv``), add the
        frame, and return it."""
        headless_sdl()
        frame = as_rgb_frame(_render(env, index))
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

    step_count = total_frames
    """rl-mind 0.4: the frames added since the last ``reset`` (:attr:`total_frames`)."""

    trimmer: Any = None
    """rl-mind 0.4: the ``Trimmer`` given to ``RenderWidget`` (or ``None``); today
    :attr:`max_frames` and :attr:`trim` bound the history."""

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
        deprecated("FrameViewer.update(frame): write viewer.add(frame) (and viewer.show() once)")
        if not self._shown:
            self.show()
        self.add(frame)

    def reset(self) -> None:
        """Deprecated (rl-mind 0.4): :meth:`clear`."""
        deprecated("FrameViewer.reset(): write viewer.clear()")
        self.clear()

    def _ipython_display_(self) -> None:
        self.show()

    def __repr__(self) -> str:
        return (
            f"FrameViewer({len(self)} frames kept of {self._count}, {self.nbytes / 1e6:.1f} MB, "
            f"trim={self.trim!r})"
        )


HistoryEntry = tuple[int, bytes]
"""rl-mind 0.4: one frame of a history, ``(step, encoded frame)``."""


def _pixels(width: str | int | None) -> int | None:
    """0.4's CSS width (``"400px"``) as today's pixel count."""
    if width is None or isinstance(width, int):
        return width
    text = str(width).strip().removesuffix("px")
    if not text.isdigit():
        raise ValueError(f"width: expected pixels such as '400px' or 400, got {width!r}")
    return int(text)
