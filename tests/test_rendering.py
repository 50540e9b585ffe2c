"""Tests of rl_mind.rendering: the live frame viewer."""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rl_mind import FrameViewer, VecEnv
from rl_mind.rendering.viewer import decode_png, encode_png

STRIPES_ID = "rl_mind_test_rendering/Stripes-v0"


class StripesEnv(gym.Env[np.ndarray, int]):
    """A frame whose first pixel encodes (seed, step): which copy and which step rendered it."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0
        self.tag = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.tag = seed
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(1, np.float32), 0.0, False, False, {}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        frame = np.zeros((40, 60, 3), np.uint8)
        frame[:, ::4] = 255  # stripes: compress well, like game frames
        frame[0, 0] = (self.tag, self.t, 7)
        return frame


if STRIPES_ID not in gym.registry:
    gym.register(id=STRIPES_ID, entry_point=StripesEnv, disable_env_checker=True)


def numbered_frame(i: int) -> np.ndarray:
    frame = np.zeros((6, 10, 3), np.uint8)
    frame[0, 0] = (i % 256, i // 256, 1)
    return frame


def number_of(frame: np.ndarray) -> int:
    return int(frame[0, 0, 0]) + 256 * int(frame[0, 0, 1])


@settings(max_examples=25, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(1, 9), st.integers(1, 9), st.just(3))))
def test_png_round_trip_is_lossless(frame: np.ndarray) -> None:
    assert np.array_equal(decode_png(encode_png(frame)), frame)


def test_frames_are_kept_compressed_and_decode_exactly() -> None:
    viewer = FrameViewer(max_frames=10)
    env = gym.make(STRIPES_ID, render_mode="rgb_array")
    env.reset(seed=5)
    frames = [viewer.capture(env)]
    for _ in range(4):
        env.step(0)
        frames.append(viewer.capture(env))
    assert len(viewer) == 5 and viewer.total_frames == 5
    for i, frame in enumerate(frames):
        assert np.array_equal(viewer.frame(i), frame)
        assert tuple(viewer.frame(i)[0, 0]) == (5, i, 7)
    assert viewer.nbytes < sum(frame.nbytes for frame in frames) / 10


def test_trim_oldest_keeps_a_sliding_window() -> None:
    viewer = FrameViewer(max_frames=10, trim="oldest")
    for i in range(25):
        viewer.add(numbered_frame(i))
    assert viewer.frame_numbers == list(range(15, 25))
    assert [number_of(viewer.frame(k)) for k in range(10)] == list(range(15, 25))


def test_trim_thin_keeps_the_whole_run_coarser_in_the_past() -> None:
    viewer = FrameViewer(max_frames=16, trim="thin")
    for i in range(1000):
        viewer.add(numbered_frame(i))
        assert len(viewer) <= 16
    numbers = viewer.frame_numbers
    assert numbers[0] == 0 and numbers[-1] == 999  # first and latest frames kept
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    gaps = np.diff(numbers)
    assert gaps[-1] == 1 and gaps[0] > gaps[-1]  # dense near the present
    assert [number_of(viewer.frame(k)) for k in range(len(viewer))] == numbers


def test_capture_one_copy_of_a_vecenv() -> None:
    viewer = FrameViewer()
    with VecEnv(STRIPES_ID, 3, seed=10, render_mode="rgb_array") as env:
        env.reset()
        env.step(torch.zeros(3, dtype=torch.long))
        frame = viewer.capture(env, index=2)
        assert tuple(frame[0, 0]) == (12, 1, 7)  # copy 2 was seeded 10 + 2
        with pytest.raises(IndexError, match="copy 3"):
            viewer.capture(env, index=3)


def test_capture_without_rgb_array_rendering_says_what_to_do() -> None:
    env = gym.make(STRIPES_ID)
    env.reset(seed=0)
    with pytest.raises(ValueError, match='render_mode="rgb_array"'):
        FrameViewer().capture(env)


def test_the_widget_follows_the_latest_frame_and_its_slider_goes_back() -> None:
    pytest.importorskip("ipywidgets")
    viewer = FrameViewer(max_frames=50)
    widget = viewer.widget
    assert widget is viewer.widget  # built once
    for i in range(5):
        viewer.add(numbered_frame(i))
    slider, image, label = viewer._slider, viewer._image, viewer._label
    assert slider.max == 4 and slider.value == 4  # following the latest
    assert number_of(decode_png(image.value)) == 4 and label.value == "frame 5 of 5"
    slider.value = 1  # the student looks back
    assert number_of(decode_png(image.value)) == 1 and label.value == "frame 2 of 5"
    viewer.add(numbered_frame(5))
    assert slider.max == 5 and slider.value == 1  # not dragged away from where they look
    slider.value = 5
    viewer.add(numbered_frame(6))
    assert slider.value == 6 and number_of(decode_png(image.value)) == 6
    viewer.clear()
    assert len(viewer) == 0 and label.value == "no frame yet"


def test_without_ipywidgets_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails
    viewer = FrameViewer()
    viewer.add(numbered_frame(0))  # collecting frames needs no widget
    with pytest.raises(ImportError, match=r"pip install \"rl-mind\[widgets\]\""):
        viewer.widget  # noqa: B018


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="max_frames"):
        FrameViewer(max_frames=1)
    with pytest.raises(ValueError, match="trim"):
        FrameViewer(trim="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[height, width, 3\]"):
        FrameViewer().add(np.zeros((4, 4, 5), np.uint8))
