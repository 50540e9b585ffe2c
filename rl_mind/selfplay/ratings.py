"""Ratings of players from match results: an online Elo table and a Bradley–Terry fit.

Both use the Elo scale: a difference of 400 points means the stronger player scores
10 : 1 (expected score ``1 / (1 + 10 ** (-diff / 400))``), a draw counting half a win.

- :class:`EloTable` updates ratings after every match. Cheap and online, but against frozen
  snapshots it **drifts**: the result depends on the order of the matches and old ratings
  are never revised.
- :func:`bradley_terry` fits all ratings at once from a round-robin results matrix
  (maximum likelihood, draws as half wins, a virtual draw per pair as a weak prior so
  that an unbeaten player gets a finite rating), **anchored** at a fixed player (by
  convention ``"random"`` = 0). This is the one to show.

Both produce a :class:`Leaderboard`: a markdown table (``str(board)``) and a plot
(``board.plot()``, matplotlib imported only then).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rl_mind._validation import as_int, finite_number

__all__ = [
    "EloTable",
    "Leaderboard",
    "LeaderboardRow",
    "bradley_terry",
    "elo_expected_score",
]

_ELO_PER_NAT = 400.0 / math.log(10.0)


def elo_expected_score(rating_a: float, rating_b: float) -> float:
    """Expected score of A against B (win = 1, draw = 0.5) under the Elo model."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


@dataclasses.dataclass(frozen=True)
class LeaderboardRow:
    """One player: ``rating`` (Elo scale), ``stderr`` (``None`` if unknown), ``games``
    played, ``score`` (mean score over them, draw = 0.5; ``None`` if unknown)."""

    name: str
    rating: float
    stderr: float | None = None
    games: float = 0.0
    score: float | None = None


@dataclasses.dataclass(frozen=True)
class Leaderboard:
    """Players sorted by rating, best first."""

    rows: tuple[LeaderboardRow, ...]
    title: str = "Leaderboard"

    @property
    def ratings(self) -> dict[str, float]:
        return {row.name: row.rating for row in self.rows}

    @property
    def names(self) -> list[str]:
        """Names, best first."""
        return [row.name for row in self.rows]

    def rating(self, name: str) -> float:
        try:
            return self.ratings[name]
        except KeyError:
            raise KeyError(f"Leaderboard: no player {name!r}; players: {self.names}") from None

    def to_markdown(self) -> str:
        lines = [
            f"**{self.title}**",
            "",
            "| rank | player | rating | ± 95% | games | score |",
            "|---:|---|---:|---:|---:|---:|",
        ]
        for rank, row in enumerate(self.rows, 1):
            ci = "" if row.stderr is None else f"{1.96 * row.stderr:.0f}"
            score = "" if row.score is None else f"{row.score:.1%}"
            lines.append(
                f"| {rank} | {row.name} | {row.rating:.0f} | {ci} | {row.games:g} | {score} |"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:
        # IPython's display(board) in a notebook: the table, rendered
        return self.to_markdown()

    def plot(
        self, ax: Any = None, x: Mapping[str, float] | None = None, xlabel: str = "training step"
    ) -> Any:
        """Plot the ratings (matplotlib, imported here) and return the ``Axes``.

        Without ``x``: horizontal bars with 95% error bars. With ``x`` (a value per player,
        e.g. the training step of each snapshot): the players in ``x`` as a line of rating
        against ``x``, the others as labelled horizontal reference lines (the bots).
        The anchor of a Bradley–Terry fit (the player whose rating is fixed: a standard
        error of 0) is labelled ``anchor (0)``: a bar of length 0 would show nothing.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(
                figsize=(7, max(2.5, 0.35 * len(self.rows) + 1)) if x is None else (7, 4)
            )
        if x is None:
            rows = list(reversed(self.rows))
            errors = [0.0 if r.stderr is None else 1.96 * r.stderr for r in rows]
            ax.barh(
                [r.name for r in rows],
                [r.rating for r in rows],
                xerr=errors,
                color="tab:blue",
                alpha=0.8,
            )
            ax.axvline(0.0, color="grey", linewidth=0.8)
            for y, row in enumerate(rows):
                if row.stderr == 0.0:
                    ax.plot([row.rating], [y], marker="D", color="tab:red", clip_on=False)
                    ax.annotate(f"anchor ({row.rating:.0f})", (row.rating, y), xytext=(6, 0),
                                textcoords="offset points", va="center", color="tab:red")  # fmt: skip
            ax.set_xlabel("rating (Elo scale)")
        else:
            on_curve = sorted((row for row in self.rows if row.name in x), key=lambda r: x[r.name])
            xs = [x[r.name] for r in on_curve]
            ys = [r.rating for r in on_curve]
            errors = [0.0 if r.stderr is None else 1.96 * r.stderr for r in on_curve]
            ax.errorbar(xs, ys, yerr=errors, marker="o", label="snapshots")
            for i, row in enumerate(r for r in self.rows if r.name not in x):
                anchor = f" (anchor, {row.rating:.0f})" if row.stderr == 0.0 else ""
                ax.axhline(row.rating, linestyle="--", color=f"C{i + 1}", label=row.name + anchor)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("rating (Elo scale)")
            ax.legend(loc="best", fontsize="small")
        ax.set_title(self.title)
        return ax


class EloTable:
    """Online Elo ratings, updated match after match.

    ``rating += k * (score - expected)`` for both players (zero-sum), except the players in
    ``fixed`` (for instance the ``"random"`` bot), whose rating never moves: they anchor
    the scale.

    Args:
        k: the update step (points per unexpected win).
        initial: the rating of a new player.
        fixed: ratings that never change, e.g. ``{"random": 0.0}``.
    """

    def __init__(
        self, k: float = 16.0, initial: float = 0.0, fixed: Mapping[str, float] | None = None
    ) -> None:
        self.k = finite_number(k, "EloTable: k", minimum=0.0, strictly=True)
        self.initial = finite_number(initial, "EloTable: initial")
        if fixed is not None and not isinstance(fixed, Mapping):
            raise TypeError(
                f"EloTable: fixed must map each fixed player to its rating (e.g. "
                f"{{'random': 0.0}}), got {type(fixed).__name__}"
            )
        self.fixed = {
            name: finite_number(rating, f"EloTable: the fixed rating of {name!r}")
            for name, rating in (fixed or {}).items()
        }
        self.ratings: dict[str, float] = dict(self.fixed)
        self.games: dict[str, float] = dict.fromkeys(self.fixed, 0.0)
        self.points: dict[str, float] = dict.fromkeys(self.fixed, 0.0)

    def add_player(self, name: str, rating: float | None = None) -> None:
        if rating is not None:
            rating = finite_number(rating, f"EloTable.add_player: the rating of {name!r}")
        if name not in self.ratings:
            self.ratings[name] = self.initial if rating is None else rating
            self.games[name] = 0.0
            self.points[name] = 0.0

    def __getitem__(self, name: str) -> float:
        return self.ratings[name]

    def __contains__(self, name: object) -> bool:
        return name in self.ratings

    def expected_score(self, a: str, b: str) -> float:
        return elo_expected_score(self.ratings[a], self.ratings[b])

    def update(self, a: str, b: str, wins: float = 0, draws: float = 0, losses: float = 0) -> None:
        """Record ``wins`` / ``draws`` / ``losses`` of ``a`` against ``b`` (one update for the batch)."""
        if a == b:
            raise ValueError(f"EloTable.update: a player cannot play itself ({a!r})")
        wins, draws, losses = (
            finite_number(count, f"EloTable.update: {name} (a count of matches)", minimum=0.0)
            for name, count in (("wins", wins), ("draws", draws), ("losses", losses))
        )
        n = wins + draws + losses
        if n == 0:
            return
        self.add_player(a)
        self.add_player(b)
        score_a = wins + 0.5 * draws
        delta = self.k * (score_a - n * self.expected_score(a, b))
        if a not in self.fixed:
            self.ratings[a] += delta
        if b not in self.fixed:
            self.ratings[b] -= delta
        self.games[a] += n
        self.games[b] += n
        self.points[a] += score_a
        self.points[b] += n - score_a

    def record(self, a: str, b: str, score_a: float) -> None:
        """One match: ``score_a`` is 1 (a won), 0.5 (draw) or 0 (a lost)."""
        if score_a not in (0, 0.5, 1):
            raise ValueError(f"EloTable.record: score_a must be 1, 0.5 or 0, got {score_a!r}")
        self.update(
            a, b, wins=float(score_a == 1), draws=float(score_a == 0.5), losses=float(score_a == 0)
        )

    def leaderboard(self, title: str = "Elo ratings (online)") -> Leaderboard:
        rows = [
            LeaderboardRow(
                name,
                rating,
                None,
                self.games[name],
                self.points[name] / self.games[name] if self.games[name] else None,
            )
            for name, rating in self.ratings.items()
        ]
        return Leaderboard(tuple(sorted(rows, key=lambda r: -r.rating)), title)


def bradley_terry(
    wins: np.ndarray | Sequence[Sequence[float]],
    draws: np.ndarray | Sequence[Sequence[float]] | None = None,
    names: Sequence[str] | None = None,
    *,
    anchor: str | int = "random",
    anchor_rating: float = 0.0,
    prior_draws: float = 1.0,
    title: str = "Bradley–Terry ratings (round robin)",
) -> Leaderboard:
    """Maximum-likelihood Bradley–Terry ratings (Elo scale) from a results matrix.

    Args:
        wins: ``[P, P]``, ``wins[i, j]`` = matches player ``i`` won against ``j``.
        draws: ``[P, P]`` draws between ``i`` and ``j`` (symmetric; counted once per pair
            entry as given: ``draws[i, j]`` and ``draws[j, i]`` should be equal).
        names: the ``P`` players' names (default ``"0"``, ``"1"``, ...). Also accepts a
            :class:`~rl_mind.selfplay.matches.RoundRobinResults` as ``wins``.
        anchor: the player (name or index) whose rating is fixed at ``anchor_rating``.
        prior_draws: virtual drawn matches added to every pair that played: keeps the
            rating of an unbeaten player finite (0 for the plain maximum likelihood).

    Returns:
        A :class:`Leaderboard` with standard errors from the curvature of the likelihood.
        With a single player there is nothing to fit: it gets ``anchor_rating``, a
        standard error of 0, and no games.

    Counts must be finite and non-negative (a NaN or an infinity is a ``ValueError``
    naming the entry), as must ``prior_draws``.
    """
    if hasattr(wins, "wins") and hasattr(wins, "draws") and hasattr(wins, "names"):
        results: Any = wins
        wins, draws, names = results.wins, results.draws, results.names
    w, d = _checked_counts(wins, draws)
    p = w.shape[0]
    prior_draws = finite_number(prior_draws, "bradley_terry: prior_draws", minimum=0.0)
    anchor_rating = finite_number(anchor_rating, "bradley_terry: anchor_rating")
    names = [str(i) for i in range(p)] if names is None else [str(n) for n in names]
    if len(names) != p:
        raise ValueError(f"bradley_terry: {len(names)} names for {p} players")
    anchor_index = _anchor_index(anchor, names)
    if p == 1:  # (a player alone: nothing to fit, it sits at the anchor)
        return Leaderboard((LeaderboardRow(names[0], anchor_rating, 0.0, 0.0, None),), title)
    # (copies: the caller's matrices stay as they were)
    w, d = w.copy(), d.copy()
    np.fill_diagonal(w, 0.0)
    np.fill_diagonal(d, 0.0)
    games = w + w.T + d  # draws[i, j] counted once for the pair (i, j)
    played = games > 0
    score = w + 0.5 * d + 0.5 * prior_draws * played
    theta, stderr = _fit_ratings(score, games + prior_draws * played, anchor_index)
    real_games = games.sum(axis=1)
    real_score = (w + 0.5 * d).sum(axis=1)
    rows = [
        LeaderboardRow(
            names[i],
            anchor_rating + _ELO_PER_NAT * theta[i],
            _ELO_PER_NAT * stderr[i],
            float(real_games[i]),
            float(real_score[i] / real_games[i]) if real_games[i] else None,
        )
        for i in range(p)
    ]
    return Leaderboard(tuple(sorted(rows, key=lambda r: -r.rating)), title)


def _checked_counts(wins: Any, draws: Any) -> tuple[np.ndarray, np.ndarray]:
    """``wins`` and ``draws`` as float ``[P, P]`` matrices of finite counts >= 0."""
    w = np.asarray(wins, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"bradley_terry: wins must be a square [P, P] matrix, got shape {w.shape}")
    d = np.zeros_like(w) if draws is None else np.asarray(draws, dtype=float)
    if d.shape != w.shape:
        raise ValueError(
            f"bradley_terry: draws must have the shape of wins {w.shape}, got {d.shape}"
        )
    for label, counts in (("wins", w), ("draws", d)):
        bad = ~np.isfinite(counts) | (counts < 0)
        if bad.any():
            i, j = (int(k) for k in np.argwhere(bad)[0])
            raise ValueError(
                f"bradley_terry: {label} must be finite counts >= 0, got {counts[i, j]} at "
                f"{label}[{i}, {j}]"
            )
    return w, d


def _anchor_index(anchor: Any, names: list[str]) -> int:
    """The index of the anchor player, given by name or by index."""
    if isinstance(anchor, str):
        if anchor not in names:
            raise ValueError(
                f"bradley_terry: anchor {anchor!r} is not a player; players: {names}. Pass "
                "anchor=<name or index> of the player whose rating is fixed"
            )
        return names.index(anchor)
    if as_int(anchor) is None:
        raise TypeError(
            f"bradley_terry: anchor must be a player's name or index, got {type(anchor).__name__}"
        )
    if not 0 <= anchor < len(names):  # (-1 would anchor nobody: ratings adrift)
        raise ValueError(
            f"bradley_terry: anchor index {anchor} is not a player; indices 0 to {len(names) - 1}"
        )
    return int(anchor)


def _fit_ratings(
    score: np.ndarray, n: np.ndarray, anchor_index: int
) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on the Bradley–Terry log-likelihood (``score[i, j]``: points of ``i``
    in its ``n[i, j]`` games against ``j``), the anchor fixed at 0: the ratings ``[P]`` in
    nats and their standard errors from the curvature."""
    p = len(score)
    theta = np.zeros(p)
    free = np.array([i != anchor_index for i in range(p)])
    ridge = 1e-6  # keeps the Hessian invertible for players who never played
    for _ in range(100):
        diff = theta[:, None] - theta[None, :]
        prob = 1.0 / (1.0 + np.exp(-diff))
        gradient = (score - n * prob).sum(axis=1) - ridge * theta
        curvature = n * prob * (1.0 - prob)
        hessian = curvature - np.diag(curvature.sum(axis=1) + ridge)
        h = hessian[np.ix_(free, free)]
        step = np.linalg.solve(h, -gradient[free])
        theta[free] += np.clip(step, -5.0, 5.0)
        if np.max(np.abs(step)) < 1e-10:
            break
    covariance = np.linalg.inv(-h)
    stderr = np.zeros(p)
    stderr[free] = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return theta, stderr
