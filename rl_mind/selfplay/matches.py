"""Head-to-head evaluation: play matches between two policies, and round robins.

Game-agnostic: a game is any batched two-player zero-sum game following the small
:class:`TwoPlayerGame` protocol (``M`` matches at once, both players' observations,
per-match outcomes); :class:`~rl_mind.envs.PongDuelGame` is one, and the default.

A policy is one of: a name the game knows (``game.builtin_policy(name)``, e.g. Pong Duel's
``"random"``, ``"scripted"``, ``"predictive"``), an :class:`~rl_mind.core.Actor` (played
with ``actor(obs).value`` under ``torch.no_grad()``: its sampling behaviour; pass
``actor.act`` to play it deterministically), or a batched callable
``obs [K, ...] tensor -> actions [K]``.

What the reader must not get wrong: :func:`play_matches` plays both sides equally (half of
the matches with A as player 0, half as player 1), so a first-player advantage cancels
out; and the confidence intervals assume independent matches.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from rl_mind._batched import act_on_numpy, rows_by_owner
from rl_mind._validation import as_int, checked_seed

__all__ = [
    "GameFactory",
    "MatchStats",
    "RoundRobinResults",
    "TwoPlayerGame",
    "TwoPlayerStep",
    "entrants",
    "play_matches",
    "play_seated",
    "round_robin",
]


class TwoPlayerStep(Protocol):
    """What a :class:`TwoPlayerGame` step returns: ``[M]`` arrays."""

    @property
    def terminated(self) -> np.ndarray: ...  # [M] bool
    @property
    def truncated(self) -> np.ndarray: ...  # [M] bool (a draw)
    @property
    def outcome(self) -> np.ndarray: ...  # [M] +1 player 0 won, -1 player 1 won, 0 draw


@runtime_checkable
class TwoPlayerGame(Protocol):
    """``M`` matches of a two-player zero-sum game, stepped together.

    ``reset`` starts every match and returns both players' observations ``[2, M, ...]``
    (each from its own point of view); ``step(actions [2, M])`` plays one move of both
    players everywhere and returns a :class:`TwoPlayerStep`; ``observe()`` gives the current
    observations ``[2, M, ...]``. A match that ended may keep being stepped: its later
    results are ignored. Optionally ``builtin_policy(name)`` resolves policy names, and
    ``n_actions`` (an int) says that the actions are ``0`` to ``n_actions - 1``, so that
    :func:`play_matches` can name the policy that plays another one.
    """

    num_matches: int

    def reset(self, seed: int | None = None) -> np.ndarray: ...
    def step(self, actions: np.ndarray) -> TwoPlayerStep: ...
    def observe(self) -> np.ndarray: ...


#: Builds a game of ``num_matches`` matches: ``factory(num_matches, seed)``.
GameFactory = Callable[[int, "int | None"], TwoPlayerGame]


def _pong_duel(num_matches: int, seed: int | None) -> TwoPlayerGame:
    from rl_mind.envs.pong_game import PongDuelGame  # lazily: envs are an opt-in import

    return PongDuelGame(num_matches, seed=seed)


def _numpy_policy(spec: Any, game: TwoPlayerGame) -> Callable[[np.ndarray], np.ndarray]:
    """Any policy spec as ``obs [K, ...] numpy -> actions [K] numpy``."""
    if isinstance(spec, str):
        builtin = getattr(game, "builtin_policy", None)
        if builtin is None:
            raise ValueError(
                f"policy {spec!r}: this game ({type(game).__name__}) has no built-in policies; "
                "pass an Actor or a batched callable obs -> actions"
            )
        spec = builtin(spec)  # raises ValueError on an unknown name
    act_numpy = getattr(spec, "act_numpy", None)
    if act_numpy is not None:
        return act_numpy  # type: ignore[no-any-return]
    if not callable(spec):
        raise TypeError(
            f"a policy must be a name, an Actor or a batched callable obs -> actions, got "
            f"{type(spec).__name__}"
        )
    return functools.partial(act_on_numpy, spec)


@dataclasses.dataclass(frozen=True)
class MatchStats:
    """Results of A against B: ``wins`` / ``draws`` / ``losses`` are A's.

    ``score`` = (wins + draws / 2) / matches; intervals at ``confidence`` (95%):
    ``win_rate_interval`` (Wilson score interval of the win rate) and ``score_interval``
    (normal approximation of the mean score).
    """

    wins: int
    draws: int
    losses: int
    confidence: float = 0.95

    @property
    def matches(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def win_rate(self) -> float:
        return self.wins / self.matches if self.matches else float("nan")

    @property
    def draw_rate(self) -> float:
        return self.draws / self.matches if self.matches else float("nan")

    @property
    def loss_rate(self) -> float:
        return self.losses / self.matches if self.matches else float("nan")

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.matches if self.matches else float("nan")

    @property
    def _z(self) -> float:
        return NormalDist().inv_cdf(0.5 + self.confidence / 2)

    @property
    def win_rate_interval(self) -> tuple[float, float]:
        n, z = self.matches, self._z
        if n == 0:
            return (0.0, 1.0)
        p = self.wins / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return (max(0.0, centre - half), min(1.0, centre + half))

    @property
    def score_interval(self) -> tuple[float, float]:
        n = self.matches
        if n == 0:
            return (0.0, 1.0)
        mean = self.score
        second = (self.wins + 0.25 * self.draws) / n
        std = math.sqrt(max(second - mean * mean, 0.0) / n)
        return (max(0.0, mean - self._z * std), min(1.0, mean + self._z * std))

    def __str__(self) -> str:
        low, high = self.win_rate_interval
        return (
            f"{self.wins} wins / {self.draws} draws / {self.losses} losses over {self.matches} "
            f"matches: win rate {self.win_rate:.1%} ({self.confidence:.0%} CI {low:.1%}–{high:.1%}), "
            f"score {self.score:.1%}"
        )


def play_matches(
    policy_a: Any,
    policy_b: Any,
    n_matches: int,
    *,
    game: GameFactory | None = None,
    seed: int | None = None,
    batch_size: int = 1024,
    max_steps: int = 100_000,
) -> MatchStats:
    """Play ``n_matches`` matches of A against B, A on each side half of the time.

    Args:
        policy_a: player A's policy (see the module docstring).
        policy_b: player B's policy.
        n_matches: the number of matches (the first ``ceil(n/2)`` with A as player 0).
        game: ``factory(num_matches, seed) -> TwoPlayerGame``; default Pong Duel.
        seed: seeds the games and torch's random generators for the duration of the call
            (so that sampling policies draw the same actions: the same seed gives the same
            results), then restores those generators: a training run that evaluates from
            time to time draws the same random numbers as one that does not. None or an
            int from 0 to ``2**64 - 1`` (what ``torch.manual_seed`` takes).
        batch_size: the most matches played at once.
        max_steps: a safety limit on the steps of one batch (a game must end its matches).

    Returns:
        :class:`MatchStats` from A's point of view.
    """
    for name, value in (
        ("n_matches", n_matches),
        ("batch_size", batch_size),
        ("max_steps", max_steps),
    ):
        count = as_int(value)
        if count is None or count < 1:
            raise ValueError(f"play_matches: {name} must be a positive int, got {value!r}")
    n_matches, batch_size, max_steps = int(n_matches), int(batch_size), int(max_steps)
    seed = checked_seed(seed, "play_matches: seed", bits=64)  # (what torch.manual_seed takes)
    factory = game if game is not None else _pong_duel
    if seed is None:
        return _play_all(policy_a, policy_b, n_matches, factory, None, batch_size, max_steps)
    # (CUDA's generators only when CUDA is in use: forking them would start it)
    cuda = torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with torch.random.fork_rng(devices=devices):
        torch.default_generator.manual_seed(seed)
        if cuda:
            torch.cuda.manual_seed_all(seed)
        return _play_all(policy_a, policy_b, n_matches, factory, seed, batch_size, max_steps)


def _play_all(
    policy_a: Any,
    policy_b: Any,
    n_matches: int,
    factory: GameFactory,
    seed: int | None,
    batch_size: int,
    max_steps: int,
) -> MatchStats:
    a_first = np.zeros(n_matches, dtype=bool)
    a_first[: (n_matches + 1) // 2] = True
    wins = draws = losses = 0
    for batch, start in enumerate(range(0, n_matches, batch_size)):
        sides = a_first[start : start + batch_size]
        batch_seed = None if seed is None else seed + 1_000_003 * batch
        outcome = _play_batch(policy_a, policy_b, sides, factory, batch_seed, max_steps)
        wins += int((outcome > 0).sum())
        draws += int((outcome == 0).sum())
        losses += int((outcome < 0).sum())
    return MatchStats(wins, draws, losses)


def _policy_actions(
    act: Callable[[np.ndarray], np.ndarray], obs: np.ndarray, name: str, n_actions: int | None
) -> np.ndarray:
    """``act(obs)``, checked: one integer action per observation (writing them into the
    ``[2, M]`` actions would truncate floats and broadcast a single action to every match
    without a word), in ``[0, n_actions)`` when the game says ``n_actions`` (the game's
    own check could not say which policy played it)."""
    actions = np.asarray(act(obs))
    if actions.shape != (len(obs),):
        raise ValueError(
            f"play_matches: {name} returned actions of shape {list(actions.shape)} for "
            f"{len(obs)} observations; expected [{len(obs)}], one action per observation"
        )
    if actions.dtype.kind not in "iu":
        raise ValueError(
            f"play_matches: {name} returned actions of dtype {actions.dtype}; expected "
            f"integer actions (torch.long)"
        )
    if n_actions is not None:
        outside = (actions < 0) | (actions >= n_actions)
        if outside.any():
            raise ValueError(
                f"play_matches: {name} returned the action {int(actions[outside][0])}; this "
                f"game's actions are 0 to {n_actions - 1}"
            )
    return actions


def _play_batch(
    policy_a: Any,
    policy_b: Any,
    a_first: np.ndarray,
    factory: GameFactory,
    seed: int | None,
    max_steps: int,
) -> np.ndarray:
    """Outcomes ``[M]`` from A's point of view; A is player 0 where ``a_first``."""
    g = factory(len(a_first), seed)
    act_a, act_b = _numpy_policy(policy_a, g), _numpy_policy(policy_b, g)
    n_actions = getattr(g, "n_actions", None)
    players = {
        0: lambda obs: _policy_actions(act_a, obs, "policy_a", n_actions),
        1: lambda obs: _policy_actions(act_b, obs, "policy_b", n_actions),
    }
    left = np.where(a_first, 0, 1)
    outcome = play_seated(g, players, left, 1 - left, g.reset(seed), max_steps=max_steps,
                          by_match=True, caller="play_matches")  # fmt: skip
    return np.where(a_first, outcome, -outcome)


def _seats(
    left: np.ndarray, right: np.ndarray, by_match: bool
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(player, sides, matches)``: the seats of each player, by match or side by side."""
    m = len(left)
    if by_match:  # seat 2k: match k's left, 2k + 1 its right
        owners = np.stack([left, right], axis=1).reshape(-1)
        sides, matches = np.tile(np.array([0, 1]), m), np.repeat(np.arange(m), 2)
    else:  # the left seats, then the right seats
        owners = np.concatenate([left, right])
        sides = np.repeat(np.array([0, 1]), m)
        matches = np.concatenate([np.arange(m), np.arange(m)])
    return [(player, sides[rows], matches[rows]) for player, rows in rows_by_owner(owners)]


def play_seated(
    game: TwoPlayerGame,
    players: Mapping[int, Callable[[np.ndarray], np.ndarray]],
    left: np.ndarray,
    right: np.ndarray,
    obs: np.ndarray,
    *,
    max_steps: int,
    by_match: bool = False,
    compact_below: float | None = None,
    caller: str = "play_seated",
) -> np.ndarray:
    """The match engine: play every match of ``game`` to its end; outcomes ``[M]`` (int64)
    from player 0's side (+1 won, -1 lost, 0 draw).

    Match ``k`` is ``players[left[k]]`` (player 0) against ``players[right[k]]`` (player 1);
    ``obs`` ``[2, M, ...]`` are the observations that ``game.reset`` returned. At each step
    every player acts once, in the order of its index, on all its seats: in match order
    (``by_match``), else its left seats then its right seats (the order in which a seeded
    random player draws its moves: the same order, the same results). With
    ``compact_below``, the ended matches leave the game (``game.subset``) once fewer than
    that fraction of its matches still run. A ``RuntimeError`` naming ``caller`` if some
    matches have not ended after ``max_steps`` steps.
    """
    outcome = np.zeros(len(left), dtype=np.int64)
    finished = np.zeros(len(left), dtype=bool)
    where = np.arange(len(left))  # the match in each of the game's slots
    seats = _seats(left, right, by_match)
    for _ in range(max_steps):
        actions = np.zeros((2, len(where)), dtype=np.int64)
        for player, sides, matches in seats:
            actions[sides, matches] = players[player](obs[sides, matches])
        result = game.step(actions)
        ended = (np.asarray(result.terminated) | np.asarray(result.truncated)) & ~finished[where]
        outcome[where[ended]] = np.asarray(result.outcome)[ended]
        finished[where[ended]] = True
        running = ~finished[where]
        if not running.any():
            return outcome
        if compact_below is not None and running.sum() < compact_below * len(where):
            keep = np.flatnonzero(running)  # (their random streams go with them)
            game, where = game.subset(keep), where[keep]  # type: ignore[attr-defined]
            seats = _seats(left[where], right[where], by_match)
        obs = game.observe()
    raise RuntimeError(
        f"{caller}: {int((~finished).sum())} matches did not end in {max_steps} steps"
    )


@dataclasses.dataclass(frozen=True)
class RoundRobinResults:
    """``wins[i, j]``: matches ``names[i]`` won against ``names[j]``; ``draws`` symmetric."""

    names: tuple[str, ...]
    wins: np.ndarray
    draws: np.ndarray

    def stats(self, a: str, b: str) -> MatchStats:
        for name in (a, b):
            if name not in self.names:
                raise ValueError(
                    f"RoundRobinResults.stats: no player {name!r}; players: {self.names}"
                )
        i, j = self.names.index(a), self.names.index(b)
        return MatchStats(int(self.wins[i, j]), int(self.draws[i, j]), int(self.wins[j, i]))


def entrants(
    players: Mapping[str, Any] | Sequence[tuple[str, Any] | str], caller: str
) -> list[tuple[str, Any]]:
    """The ``(name, policy)`` pairs of a round robin's ``players`` (name → policy, pairs, or
    bot names playing under their own name), names unique; else an error naming ``caller``."""
    if isinstance(players, Mapping):
        items = list(players.items())
    else:  # (a bare name is a bot playing under its own name)
        items = [(p, p) if isinstance(p, str) else p for p in players]
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError(
                    f"{caller}: players must be a dict name -> policy, or (name, policy) "
                    f"pairs or bot names, got {item!r}"
                )
    names = tuple(name for name, _ in items)
    if len(set(names)) != len(names):
        raise ValueError(f"{caller}: player names must be unique, got {names}")
    return items


def round_robin(
    players: Mapping[str, Any] | Sequence[tuple[str, Any]],
    n_matches: int,
    *,
    game: GameFactory | None = None,
    seed: int | None = None,
    batch_size: int = 1024,
) -> RoundRobinResults:
    """Every pair of ``players`` (name → policy) plays ``n_matches`` matches (:func:`play_matches`).

    Feed the result to :func:`~rl_mind.selfplay.ratings.bradley_terry`.
    """
    items = entrants(players, "round_robin")
    seed = checked_seed(seed, "round_robin: seed", bits=64)
    names = tuple(name for name, _ in items)
    p = len(items)
    wins = np.zeros((p, p))
    draws = np.zeros((p, p))
    for i in range(p):
        for j in range(i + 1, p):
            # (wrapped: the seed of every pair stays one that play_matches takes)
            pair_seed = None if seed is None else (seed + 7919 * (i * p + j)) % 2**64
            s = play_matches(
                items[i][1],
                items[j][1],
                n_matches,
                game=game,
                seed=pair_seed,
                batch_size=batch_size,
            )
            wins[i, j], wins[j, i] = s.wins, s.losses
            draws[i, j] = draws[j, i] = s.draws
    return RoundRobinResults(names, wins, draws)
