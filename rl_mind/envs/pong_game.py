"""Pong Duel's batched two-player game core: ``M`` matches stepped together with numpy array ops.

This module holds the rules and nothing else: no opponent, no auto-reset, no gymnasium.
The views in :mod:`rl_mind.envs.pong_duel` (single match, vectorized, single-agent) and
:mod:`rl_mind.envs.pong_parallel` (two players, PettingZoo parallel API) are built on it,
and a self-play trainer that wants *both* sides' observations (to train on the moves of
the "latest policy" opponent too) can use :class:`PongDuelGame` directly.

The rules (:class:`~rl_mind.envs.pong_rules.PongDuelRules` holds every number):

- Court ``x ∈ [-1, 1]``, ``y ∈ [-1, 1]`` (``y`` up). Player 0 is on the left, its paddle at
  ``x = -0.9``; player 1 on the right at ``x = +0.9``. Paddles have half-length 0.15 and move
  0.035 a step; actions are 0 stay, 1 up (``+y``), 2 down.
- The ball (radius 0.025) is served from the centre (``x = 0``) at a random height in
  ``[-0.5, 0.5]`` and a random angle within ±30°, at speed 0.04. Walls reflect it. Each paddle
  hit multiplies the speed by 1.15 (up to 0.25) and sends the ball back at an angle set by
  where it meets the paddle: 0° at the centre, up to ±60° at the edge.
- A point is scored when the ball's centre passes a goal line (``|x| > 1``). After a point
  the ball is served towards the player who conceded; the first serve of a match goes to a
  random side. First to 3 points wins (``terminated``). After 1,500 steps the match is cut
  (``truncated``) and scored as a draw.
- Reward of player 0 (player 1 gets the opposite, the game is zero-sum): ``+point_reward``
  per point scored, ``-point_reward`` per point conceded, and ``+1`` / ``-1`` when the match
  is won / lost (0 for a draw).

Observations are 10 floats from the acting player's point of view, **mirrored** so that
"me" is always on the left (``x → -x`` for player 1), so one policy plays either side:
``[own paddle y, opponent paddle y, ball x, ball y, ball vx / 0.25, ball vy / 0.25,
ball y - own paddle y, own score / 3, opponent score / 3, time left / 1500]``.

What the reader must not get wrong:

- The game never resets a match by itself: when ``step`` reports a match as finished, the
  caller calls :meth:`PongDuelGame.reset_matches` (the gymnasium views do this for you).
- Randomness is per match (a counter-based generator seeded with ``seed + i`` for match
  ``i``), so ``M`` batched matches and ``M`` single games seeded ``seed, seed+1, ...`` play
  exactly the same trajectories, whatever ``M`` is.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from rl_mind.envs.pong_opponents import as_numpy_policy
from rl_mind.envs.pong_rules import PongDuelRules

__all__ = ["OBSERVATION_SIZE", "PongDuelGame", "PongDuelStep"]

OBSERVATION_SIZE = 10

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


class PongDuelStep(NamedTuple):
    """What :meth:`PongDuelGame.step` returns, one entry per match (``[M]`` arrays).

    ``reward`` is player 0's (player 1's is ``-reward``); ``terminated``: someone reached
    ``points_to_win``; ``truncated``: the time limit cut the match (a draw); ``outcome``:
    +1 player 0 won, -1 player 1 won, 0 draw or not finished.
    """

    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    outcome: np.ndarray


_SHIFT_30, _SHIFT_27, _SHIFT_31 = (np.uint64(k) for k in (30, 27, 31))
_SHIFTS_21 = tuple(np.uint64(k) for k in (43, 22, 1))
_MASK_21 = np.uint64(2**21 - 1)


def _splitmix64(state: np.ndarray) -> np.ndarray:
    """Advance ``state`` (uint64, in place) and return one 64-bit output per entry."""
    state += _GOLDEN
    z = state ^ (state >> _SHIFT_30)
    z *= _MIX_1
    z ^= z >> _SHIFT_27
    z *= _MIX_2
    z ^= z >> _SHIFT_31
    return z


def _seed_streams(seed: int, count: int) -> np.ndarray:
    """The generator states of matches ``0..count-1`` for ``seed`` (stream ``i`` from ``seed + i``)."""
    keys = (np.arange(count, dtype=np.uint64) + np.uint64(seed % 2**64)) * np.uint64(2)
    # Scramble the key so that neighbouring seeds give unrelated streams.
    return _splitmix64(keys ^ np.uint64(0x5DEECE66D))


class PongDuelGame:
    """``num_matches`` (``M``) Pong Duel matches, both players, stepped with numpy array ops.

    State arrays (read them, e.g. to render; write them only in tests): ``paddle_y [2, M]``,
    ``ball_x``, ``ball_y``, ``ball_vx``, ``ball_vy``, ``ball_speed`` ``[M]``, ``score [2, M]``
    (int64), ``time [M]`` (steps played in the current match), ``match_over [M]`` (bool,
    set when a match ends and cleared by :meth:`reset_matches`).

    Args:
        num_matches: ``M``, the number of matches stepped together.
        rules: the numbers of the game (:class:`PongDuelRules`), including ``point_reward``.
        seed: seeds match ``i`` with ``seed + i`` (``None``: fresh entropy).
    """

    #: The actions of each player: 0 stay, 1 up, 2 down.
    n_actions = 3

    def __init__(
        self, num_matches: int, rules: PongDuelRules | None = None, seed: int | None = None
    ) -> None:
        if not isinstance(num_matches, int | np.integer) or num_matches < 1:
            raise ValueError(
                f"PongDuelGame: num_matches must be a positive int, got {num_matches!r}"
            )
        self.num_matches = int(num_matches)
        self.rules = rules if rules is not None else PongDuelRules()
        r = self.rules
        m = self.num_matches
        self.paddle_y = np.zeros((2, m))
        self.ball_x = np.zeros(m)
        self.ball_y = np.zeros(m)
        self.ball_vx = np.zeros(m)
        self.ball_vy = np.zeros(m)
        self.ball_speed = np.zeros(m)
        self.score = np.zeros((2, m), dtype=np.int64)
        self.time = np.zeros(m, dtype=np.int64)
        self.match_over = np.zeros(m, dtype=bool)
        self._rng_state = np.zeros(m, dtype=np.uint64)
        # Constants used every step, precomputed once.
        self._paddle_moves = np.array([0.0, r.paddle_speed, -r.paddle_speed])
        self._paddle_limit = 1.0 - r.paddle_half_length
        self._wall = 1.0 - r.ball_radius
        self._left_face = -r.paddle_x + r.ball_radius
        self._right_face = r.paddle_x - r.ball_radius
        self._reach = r.paddle_half_length + r.ball_radius
        self._obs_scale = np.array(
            [1.0, 1.0, 1.0, 1.0, 1 / r.max_speed, 1 / r.max_speed, 1.0]
            + [1 / r.points_to_win] * 2
            + [1 / r.max_steps]
        )
        self._seeded = False
        self._bots_made = 0
        if seed is not None:
            self.seed(seed)

    # ------------------------------------------------------------------ randomness
    def seed(self, seed: int | None = None) -> None:
        """Seed match ``i``'s random stream with ``seed + i`` (``None``: fresh entropy)."""
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        if not isinstance(seed, int | np.integer):
            raise TypeError(f"PongDuelGame: seed must be an int or None, got {type(seed).__name__}")
        self._rng_state[:] = _seed_streams(int(seed), self.num_matches)
        self._seeded = True

    def _uniforms(self, idx: np.ndarray, count: int) -> np.ndarray:
        """``count`` (<= 3) uniform floats in ``[0, 1)`` per match in ``idx``: ``[count, len(idx)]``.

        One 64-bit draw from each match's own stream, cut into 21-bit uniforms (a resolution
        of 5e-7 is plenty for a serve, and one draw instead of three is faster).
        """
        state = self._rng_state[idx]
        z = _splitmix64(state)
        self._rng_state[idx] = state
        out = np.empty((count, len(idx)))
        for k in range(count):
            out[k] = (z >> _SHIFTS_21[k]) & _MASK_21
        out *= 1.0 / 2**21
        return out

    # ------------------------------------------------------------------ resets
    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start a new match everywhere; with ``seed``, reseed first. Returns obs ``[2, M, 10]``."""
        if seed is not None or not self._seeded:
            self.seed(seed)
        self.reset_matches(np.arange(self.num_matches))
        return self.observe()

    def reset_matches(self, indices: np.ndarray) -> None:
        """Start a new match in the slots ``indices`` (int array or ``[M]`` bool mask).

        Each slot's random stream continues, so a slot plays the same sequence of matches
        whether it is stepped alone or among others.
        """
        if not self._seeded:
            self.seed(None)
        idx = np.asarray(indices)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        if idx.size == 0:
            return
        self.paddle_y[:, idx] = 0.0
        self.score[:, idx] = 0
        self.time[idx] = 0
        self.match_over[idx] = False
        side, height, angle = self._uniforms(idx, 3)
        self._serve(idx, side < 0.5, height, angle)

    def _serve(
        self, idx: np.ndarray, towards_left: np.ndarray, u_height: np.ndarray, u_angle: np.ndarray
    ) -> None:
        """Serve from the centre; ``u_height``, ``u_angle``: uniforms in [0, 1) per match."""
        r = self.rules
        height = (2.0 * u_height - 1.0) * r.serve_max_height
        angle = (2.0 * u_angle - 1.0) * math.radians(r.serve_max_angle_deg)
        self.ball_x[idx] = 0.0
        self.ball_y[idx] = height
        self.ball_speed[idx] = r.serve_speed
        self.ball_vx[idx] = np.where(towards_left, -1.0, 1.0) * (r.serve_speed * np.cos(angle))
        self.ball_vy[idx] = r.serve_speed * np.sin(angle)

    # ------------------------------------------------------------------ dynamics
    def check_actions(self, actions: object) -> np.ndarray:
        """``actions`` as an int64 ``[2, M]`` array, or a ``ValueError`` saying what is wrong."""
        a = np.asarray(actions)
        if a.shape != (2, self.num_matches):
            raise ValueError(
                f"PongDuelGame.step: expected actions of shape (2, {self.num_matches}) (one "
                f"action per player and match), got shape {a.shape}"
            )
        if a.dtype.kind not in "iub":
            if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                a = a.astype(np.int64)
            else:
                raise ValueError(
                    f"PongDuelGame.step: actions must be integers 0 (stay), 1 (up), 2 (down), "
                    f"got dtype {a.dtype}"
                )
        if a.size and (a.min() < 0 or a.max() > 2):
            raise ValueError(
                f"PongDuelGame.step: actions must be 0 (stay), 1 (up) or 2 (down), got values "
                f"in [{a.min()}, {a.max()}]"
            )
        return a

    def step(self, actions: np.ndarray, *, check: bool = True) -> PongDuelStep:
        """Play one step of every match. ``actions [2, M]``: row 0 player 0's, row 1 player 1's.

        Matches already over keep being simulated but their results mean nothing: reset them
        with :meth:`reset_matches`. ``check=False`` skips the action check (for trusted callers
        that already validated).
        """
        a = self.check_actions(actions) if check else actions
        py = self.paddle_y
        py += self._paddle_moves[a]
        np.clip(py, -self._paddle_limit, self._paddle_limit, out=py)

        bx, by, vx, vy = self.ball_x, self.ball_y, self.ball_vx, self.ball_vy
        bx += vx
        by += vy
        wall = self._wall
        if (np.abs(by) > wall).any():
            hit = np.flatnonzero(np.abs(by) > wall)
            y = by[hit]
            by[hit] = np.where(y > 0, 2 * wall - y, -2 * wall - y)
            vy[hit] = -vy[hit]

        # A paddle is hit when the ball crosses the paddle's face line this step within reach.
        left, right = self._left_face, self._right_face
        crossing = ((bx <= left) & (bx - vx > left)) | ((bx >= right) & (bx - vx < right))
        if crossing.any():
            self._bounce(np.flatnonzero(crossing))

        m = self.num_matches
        reward = np.zeros(m)
        terminated = np.zeros(m, dtype=bool)
        outcome = np.zeros(m, dtype=np.int8)
        self.time += 1
        if ((bx < -1.0) | (bx > 1.0)).any():
            self._score_points(
                np.flatnonzero((bx < -1.0) | (bx > 1.0)), reward, terminated, outcome
            )
        truncated = self.time >= self.rules.max_steps
        if truncated.any():
            truncated &= ~terminated & ~self.match_over
        self.match_over |= terminated | truncated
        return PongDuelStep(reward, terminated, truncated, outcome)

    def _bounce(self, idx: np.ndarray) -> None:
        r = self.rules
        x, vx, vy = self.ball_x[idx], self.ball_vx[idx], self.ball_vy[idx]
        left = vx < 0
        face = np.where(left, self._left_face, self._right_face)
        # Where the ball was when it crossed the face line (it moved past it this step).
        y_cross = self.ball_y[idx] - vy * ((x - face) / vx)
        paddle = np.where(left, self.paddle_y[0, idx], self.paddle_y[1, idx])
        offset = (y_cross - paddle) / self._reach
        hit = np.abs(offset) <= 1.0
        if not hit.any():
            return
        idx, left, face, y_cross, offset = idx[hit], left[hit], face[hit], y_cross[hit], offset[hit]
        speed = np.minimum(self.ball_speed[idx] * r.speed_up, r.max_speed)
        angle = offset * math.radians(r.max_bounce_angle_deg)
        self.ball_speed[idx] = speed
        self.ball_vx[idx] = np.where(left, 1.0, -1.0) * (speed * np.cos(angle))
        self.ball_vy[idx] = speed * np.sin(angle)
        self.ball_x[idx] = face
        self.ball_y[idx] = np.clip(y_cross, -self._wall, self._wall)

    def _score_points(
        self, idx: np.ndarray, reward: np.ndarray, terminated: np.ndarray, outcome: np.ndarray
    ) -> None:
        r = self.rules
        # A finished match keeps drifting until it is reset, but scores nothing more (and
        # draws nothing from its random stream, so that its next match is the same
        # whenever the caller resets it).
        idx = idx[~self.match_over[idx]]
        if idx.size == 0:
            return
        left_scored = self.ball_x[idx] > 1.0  # ball past the right goal line: player 0 scores
        self.score[0, idx] += left_scored
        self.score[1, idx] += ~left_scored
        sign = np.where(left_scored, 1.0, -1.0)
        reward[idx] = sign * r.point_reward
        won = (self.score[0, idx] >= r.points_to_win) | (self.score[1, idx] >= r.points_to_win)
        if won.any():
            ended = idx[won]
            reward[ended] += sign[won] * r.win_reward
            terminated[ended] = True
            outcome[ended] = np.where(left_scored[won], 1, -1)
        # Serve again towards the player who conceded, except where the match just ended
        # (the final state keeps the ball past the line, as the last frame shows it).
        serve = ~won
        if serve.any():
            serve_idx = idx[serve]
            height, angle = self._uniforms(serve_idx, 2)
            self._serve(serve_idx, ~left_scored[serve], height, angle)

    # ------------------------------------------------------------------ observations
    def observe(self, player: int | None = None, indices: np.ndarray | None = None) -> np.ndarray:
        """Fresh float32 observations: ``[2, M, 10]`` (both players), or ``[M, 10]`` for one.

        Each player's view is mirrored so that it is on the left (see the module docstring).
        With ``indices`` (and a ``player``), only those matches: ``[len(indices), 10]``.
        """
        if indices is not None:
            if player not in (0, 1):
                raise ValueError("PongDuelGame.observe: indices need a player (0 or 1)")
            return self.subset(indices).observe(player)
        if player is None:
            out = np.empty((2, OBSERVATION_SIZE, self.num_matches), dtype=np.float32)
            self._observe_into(0, out[0])
            self._observe_into(1, out[1])
            return out.transpose(0, 2, 1).copy()
        if player not in (0, 1):
            raise ValueError(f"PongDuelGame.observe: player must be 0, 1 or None, got {player!r}")
        one = np.empty((OBSERVATION_SIZE, self.num_matches), dtype=np.float32)
        self._observe_into(player, one)
        return one.T.copy()

    def _observe_into(self, player: int, out: np.ndarray) -> None:
        """Write player ``player``'s observation into ``out [10, M]`` (row per feature)."""
        s = self._obs_scale
        own, other = self.paddle_y[player], self.paddle_y[1 - player]
        sign = 1.0 if player == 0 else -1.0
        out[0] = own
        out[1] = other
        np.multiply(self.ball_x, sign, out=out[2])
        out[3] = self.ball_y
        np.multiply(self.ball_vx, sign * s[4], out=out[4])
        np.multiply(self.ball_vy, s[5], out=out[5])
        np.subtract(self.ball_y, own, out=out[6])
        np.multiply(self.score[player], s[7], out=out[7])
        np.multiply(self.score[1 - player], s[8], out=out[8])
        np.multiply(self.rules.max_steps - self.time, s[9], out=out[9])

    # ------------------------------------------------------------------ utilities
    def builtin_policy(self, name: str) -> Any:
        """A built-in opponent by name (``"random"``, ``"scripted"``, ``"predictive"``)."""
        if not isinstance(name, str):
            raise TypeError(
                f"PongDuelGame.builtin_policy: expected a name, got {type(name).__name__}"
            )
        # a seeded game plays the same random moves: a bot's stream comes from the game's
        # seed (and differs for each bot asked for, e.g. random against random)
        self._bots_made += 1
        seed = np.random.SeedSequence([int(self._rng_state[0]), self._bots_made])
        return as_numpy_policy(name, self.rules, seed if self._seeded else None)

    def mirrored(self) -> PongDuelGame:
        """A copy of this game with the players swapped (``x → -x``): for symmetry checks."""
        other = self.copy()
        other.paddle_y = self.paddle_y[::-1].copy()
        other.score = self.score[::-1].copy()
        other.ball_x = -self.ball_x
        other.ball_vx = -self.ball_vx
        return other

    def copy(self) -> PongDuelGame:
        """An independent copy of the whole state (random streams included)."""
        other = PongDuelGame(self.num_matches, self.rules)
        for name in (
            "paddle_y",
            "ball_x",
            "ball_y",
            "ball_vx",
            "ball_vy",
            "ball_speed",
            "score",
            "time",
            "match_over",
            "_rng_state",
        ):
            setattr(other, name, getattr(self, name).copy())
        other._seeded, other._bots_made = self._seeded, self._bots_made
        return other

    def subset(self, indices: np.ndarray) -> PongDuelGame:
        """A new game holding a copy of the matches ``indices`` (e.g. one match, to render it)."""
        idx = np.atleast_1d(np.asarray(indices))
        other = PongDuelGame(len(idx), self.rules)
        other.paddle_y = self.paddle_y[:, idx].copy()
        other.score = self.score[:, idx].copy()
        for name in ("ball_x", "ball_y", "ball_vx", "ball_vy", "ball_speed", "time"):
            setattr(other, name, getattr(self, name)[idx].copy())
        other.match_over = self.match_over[idx].copy()
        other._rng_state = self._rng_state[idx].copy()
        other._seeded = self._seeded
        return other
