"""Pong Duel frames drawn with numpy only (no display, no pygame): ``[H, W, 3]`` uint8.

A 480 × 400 frame: a header with the score (left player blue, right player orange) and a
time bar that empties as the match runs, then the dark court with its centre line, the
two paddles and the ball with a short fading trail. Drawing is a few array slices, well
under a millisecond a frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rl_mind.envs.pong_game import PongDuelGame
from rl_mind.envs.pong_rules import PongDuelRules

__all__ = ["FRAME_HEIGHT", "FRAME_WIDTH", "TRAIL_LENGTH", "render_frame", "render_match"]

FRAME_WIDTH = 480
HEADER_HEIGHT = 48
COURT_HEIGHT = 352
FRAME_HEIGHT = HEADER_HEIGHT + COURT_HEIGHT
TRAIL_LENGTH = 6  # the earlier ball positions a view keeps for the fading trail

BACKGROUND = np.array([18, 20, 28], dtype=np.uint8)
COURT = np.array([26, 30, 42], dtype=np.uint8)
LINES = np.array([70, 76, 96], dtype=np.uint8)
HEADER = np.array([12, 13, 18], dtype=np.uint8)
BLUE = np.array([66, 140, 255], dtype=np.uint8)
ORANGE = np.array([255, 140, 40], dtype=np.uint8)
BALL = np.array([245, 245, 245], dtype=np.float64)
TIME_BAR = np.array([120, 200, 120], dtype=np.uint8)
TEXT = np.array([230, 230, 230], dtype=np.uint8)

# 3 × 5 bitmap digits (and a dash), drawn scaled up.
_GLYPHS = {
    "0": ("111", "101", "101", "101", "111"),
    "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"),
    "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"),
    "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"),
    "7": ("111", "001", "010", "010", "010"),
    "8": ("111", "101", "111", "101", "111"),
    "9": ("111", "101", "111", "001", "111"),
    "-": ("000", "000", "111", "000", "000"),
}
_GLYPH_MASKS = {
    c: np.array([[ch == "1" for ch in row] for row in rows]) for c, rows in _GLYPHS.items()
}
_PIXEL = 6  # each glyph pixel is 6 × 6 screen pixels: digits 18 × 30


def _static_background() -> np.ndarray:
    frame = np.empty((FRAME_HEIGHT, FRAME_WIDTH, 3), dtype=np.uint8)
    frame[:] = BACKGROUND
    frame[:HEADER_HEIGHT] = HEADER
    frame[HEADER_HEIGHT + 2 : FRAME_HEIGHT - 2, 2 : FRAME_WIDTH - 2] = COURT
    mid = FRAME_WIDTH // 2
    for top in range(HEADER_HEIGHT + 6, FRAME_HEIGHT - 6, 16):  # dashed centre line
        frame[top : top + 8, mid - 1 : mid + 1] = LINES
    frame[HEADER_HEIGHT : HEADER_HEIGHT + 2] = LINES
    frame[FRAME_HEIGHT - 2 :] = LINES
    return frame


_BACKGROUND_FRAME = _static_background()


def _to_pixels(x: float, y: float) -> tuple[float, float]:
    """Court coordinates to (column, row) pixel coordinates (``y`` up)."""
    col = (x + 1.0) * 0.5 * (FRAME_WIDTH - 1)
    row = HEADER_HEIGHT + (1.0 - y) * 0.5 * (COURT_HEIGHT - 1)
    return col, row


def _disc(
    frame: np.ndarray, col: float, row: float, radius: float, color: np.ndarray, alpha: float
) -> None:
    r = int(np.ceil(radius))
    c0, r0 = int(round(col)), int(round(row))
    top, bottom = max(r0 - r, HEADER_HEIGHT), min(r0 + r + 1, FRAME_HEIGHT)
    left, right = max(c0 - r, 0), min(c0 + r + 1, FRAME_WIDTH)
    if top >= bottom or left >= right:
        return
    rows = np.arange(top, bottom)[:, None] - row
    cols = np.arange(left, right)[None, :] - col
    mask = rows**2 + cols**2 <= radius**2
    patch = frame[top:bottom, left:right]
    blended = (1 - alpha) * patch[mask] + alpha * color
    patch[mask] = blended.astype(np.uint8)


def _text(frame: np.ndarray, text: str, left: int, top: int, color: np.ndarray) -> None:
    for i, char in enumerate(text):
        mask = _GLYPH_MASKS[char]
        big = np.repeat(np.repeat(mask, _PIXEL, axis=0), _PIXEL, axis=1)
        x = left + i * 4 * _PIXEL
        frame[top : top + big.shape[0], x : x + big.shape[1]][big] = color


def render_frame(
    paddle_y: Sequence[float] | np.ndarray,
    ball_x: float,
    ball_y: float,
    score: Sequence[int] | np.ndarray,
    time_left: float,
    trail: Sequence[tuple[float, float]] = (),
    rules: PongDuelRules | None = None,
) -> np.ndarray:
    """One ``[400, 480, 3]`` uint8 frame of a match.

    Args:
        paddle_y: the two paddles' heights (left player first).
        ball_x: the ball centre's ``x`` in court coordinates.
        ball_y: the ball centre's ``y`` in court coordinates.
        score: the two scores (left first).
        time_left: fraction of the time limit left, in ``[0, 1]`` (the header's bar).
        trail: earlier ball positions, oldest first (drawn fading).
        rules: the court's numbers (paddle size, ball radius).
    """
    r = rules if rules is not None else PongDuelRules()
    frame = _BACKGROUND_FRAME.copy()
    # Header: scores and the time bar.
    _text(frame, str(int(score[0]))[-1], FRAME_WIDTH // 2 - 60, 6, BLUE)
    _text(frame, "-", FRAME_WIDTH // 2 - 9, 6, TEXT)
    _text(frame, str(int(score[1]))[-1], FRAME_WIDTH // 2 + 42, 6, ORANGE)
    bar = int(round(np.clip(time_left, 0.0, 1.0) * (FRAME_WIDTH - 8)))
    frame[HEADER_HEIGHT - 7 : HEADER_HEIGHT - 3, 4 : 4 + bar] = TIME_BAR
    # Paddles.
    half_rows = r.paddle_half_length * 0.5 * (COURT_HEIGHT - 1)
    for side, color in ((0, BLUE), (1, ORANGE)):
        x = -r.paddle_x if side == 0 else r.paddle_x
        col, row = _to_pixels(x, float(paddle_y[side]))
        top = max(int(round(row - half_rows)), HEADER_HEIGHT + 2)
        bottom = min(int(round(row + half_rows)) + 1, FRAME_HEIGHT - 2)
        c = int(round(col))
        frame[top:bottom, c - 4 : c + 5] = color
    # Ball, with its trail fading out.
    radius = max(r.ball_radius * 0.5 * (FRAME_WIDTH - 1), 4.0)
    n = len(trail)
    for i, (tx, ty) in enumerate(trail):
        col, row = _to_pixels(tx, ty)
        _disc(
            frame,
            col,
            row,
            radius * (0.5 + 0.4 * (i + 1) / (n + 1)),
            BALL,
            0.15 + 0.35 * (i + 1) / (n + 1),
        )
    col, row = _to_pixels(ball_x, ball_y)
    _disc(frame, col, row, radius, BALL, 1.0)
    return frame


def render_match(
    game: PongDuelGame, index: int = 0, trail: Sequence[tuple[float, float]] = ()
) -> np.ndarray:
    """The frame of match ``index`` of a batched ``game`` (see :func:`render_frame`)."""
    rules = game.rules
    return render_frame(
        game.paddle_y[:, index],
        float(game.ball_x[index]),
        float(game.ball_y[index]),
        game.score[:, index],
        1.0 - float(game.time[index]) / rules.max_steps,
        trail=trail,
        rules=rules,
    )
