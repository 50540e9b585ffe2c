"""Test-wide settings: the fast-test compute profile, one torch thread, a headless backend."""

from __future__ import annotations

import os

os.environ.setdefault("RL_MIND_FAST_TEST", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import torch  # noqa: E402

torch.set_num_threads(1)
