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
``Trimmer`` classes, ``encode_frame`` / ``decode_frame``, ``HistoryEntry``) are importable
from here, as in 0.4, but live apart (``rl_mind/rendering/_frames_04.py``), built on
:class:`FrameViewer`; like ``FrameViewer.update`` and ``.reset`` they work and warn
(``DeprecationWarning``) with the line to write instead. The viewer itself is in
:mod:`rl_mind.rendering.viewer`.
"""

# rl-mind 0.4's names (_frames_04.__all__): importable from here, as in 0.4, and not in
# __all__ (the reference shows today's API only)
from rl_mind.rendering._frames_04 import *  # noqa: F403
from rl_mind.rendering.viewer import FrameViewer

__all__ = ["FrameViewer"]
