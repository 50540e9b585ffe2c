"""The arena's round robin: every pair of players, all their matches stepped at once.

:func:`~rl_mind.selfplay.round_robin` plays one pair after the other, each pair's matches
in one batch: fine for ten players, too slow for a class (a hundred agents make 5,000
pairs). Here the matches of *all* pairs share one natively vectorized
:class:`~rl_mind.envs.PongDuelGame`, and at every step each player acts once, on the
observations of every match it plays in, on either side. The result is the same
:class:`~rl_mind.selfplay.RoundRobinResults`, for :func:`~rl_mind.selfplay.bradley_terry`.

What the reader must not get wrong:

- Each pair plays ``n_matches`` matches, half with each player on the left: a first-player
  advantage cancels out.
- The same players, ``n_matches`` and ``seed`` give the same results bit for bit, whatever
  ``jobs`` is: match ``g`` of the schedule is seeded with ``seed + g``, the schedule is cut
  into the same equal chunks (of at most :data:`CHUNK_MATCHES`) for any ``jobs``, and each
  chunk is played the same way in any process (torch on one thread, so that a matrix
  product sums in one order).
- Players are deterministic agents (an ``act_numpy`` method) or the game's bot names; the
  ``"random"`` bot draws from a generator seeded by its chunk.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from rl_mind.selfplay.matches import RoundRobinResults, entrants, play_seated

__all__ = ["CHUNK_MATCHES", "play_round_robin", "schedule"]

#: The most matches stepped together in one game (a process's unit of work). Larger chunks
#: give each agent more rows for each forward pass, and fewer passes.
CHUNK_MATCHES = 32768
_COMPACT_BELOW = 0.8  # drop the finished matches from the game once a fifth of them ended


def schedule(n_players: int, n_matches: int) -> tuple[np.ndarray, np.ndarray]:
    """The matches of a round robin: ``(left, right)`` player indices ``[G]``.

    Pairs ``(i, j)``, ``i < j``, in order; each pair's first ``n_matches / 2`` matches put
    ``i`` on the left, the next ones ``j``.
    """
    first, second = np.triu_indices(n_players, k=1)  # the pairs [Q]
    half = n_matches // 2
    left = np.repeat(np.stack([first, second], axis=1), half, axis=1)  # [Q, n_matches]
    right = np.repeat(np.stack([second, first], axis=1), half, axis=1)
    return left.reshape(-1), right.reshape(-1)


def play_chunk(
    players: dict[int, Any], left: np.ndarray, right: np.ndarray, seed: int
) -> np.ndarray:
    """Play the matches ``left[k]`` against ``right[k]`` together; outcomes ``[M]`` int8 from
    the left player's side (+1 won, -1 lost, 0 draw). Match ``k`` is seeded with ``seed + k``.

    ``players`` maps the indices in ``left`` / ``right`` to policies (bot names, or objects
    with ``act_numpy(obs [K, 10]) -> actions [K]``). The matches are played by
    :func:`~rl_mind.selfplay.matches.play_seated`, the ended ones leaving the game once a
    fifth of them ended.
    """
    from rl_mind.envs.pong_game import PongDuelGame

    game = PongDuelGame(len(left), seed=seed)
    obs = game.reset()
    acts = {
        index: (game.builtin_policy(policy) if isinstance(policy, str) else policy).act_numpy
        for index, policy in players.items()
    }
    outcome = play_seated(game, acts, left, right, obs, max_steps=game.rules.max_steps + 1,
                          compact_below=_COMPACT_BELOW, caller="play_chunk")  # fmt: skip
    return outcome.astype(np.int8)


def _play_chunk_one_thread(
    players: dict[int, Any], left: np.ndarray, right: np.ndarray, seed: int
) -> np.ndarray:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            return play_chunk(players, left, right, seed)
    finally:
        torch.set_num_threads(threads)


def play_round_robin(
    players: Sequence[tuple[str, Any]],
    n_matches: int,
    *,
    seed: int = 0,
    jobs: int = 1,
    on_matches_done: Callable[[int], None] | None = None,
) -> RoundRobinResults:
    """Every pair of ``players`` plays ``n_matches`` (even) matches, all pairs at once.

    Args:
        players: ``(name, policy)`` pairs (or name → policy, or bot names, as
            :func:`~rl_mind.selfplay.round_robin` takes them): a bot name, or an object with
            ``act_numpy`` (an :class:`~rl_mind.arena.ArenaAgent`).
        n_matches: matches per pair, an even number (half on each side).
        seed: match ``g`` of the schedule is seeded with ``seed + g``.
        jobs: processes playing chunks of the schedule side by side (the results do not
            depend on it).
        on_matches_done: called with the number of matches each finished chunk played
            (a progress bar's ``update``).

    Returns:
        :class:`~rl_mind.selfplay.RoundRobinResults` (``wins[i, j]``, symmetric ``draws``).
    """
    if not isinstance(n_matches, int) or n_matches < 2 or n_matches % 2:
        raise ValueError(
            f"play_round_robin: n_matches must be an even int >= 2 (half of a pair's matches "
            f"on each side), got {n_matches!r}"
        )
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"play_round_robin: jobs must be a positive int, got {jobs!r}")
    players = entrants(players, "play_round_robin")
    names = tuple(name for name, _ in players)
    p = len(players)
    wins = np.zeros((p, p))
    draws = np.zeros((p, p))
    if p < 2:
        return RoundRobinResults(names, wins, draws)
    left, right = schedule(p, n_matches)
    # chunks of equal size, at most CHUNK_MATCHES: the same cut whatever `jobs` is
    count = -(-len(left) // CHUNK_MATCHES)
    chunks = [(c * len(left) // count, (c + 1) * len(left) // count) for c in range(count)]

    def task(chunk: tuple[int, int]) -> tuple[dict[int, Any], np.ndarray, np.ndarray, int]:
        start, end = chunk
        in_chunk = np.union1d(left[start:end], right[start:end])
        return (
            {int(i): players[i][1] for i in in_chunk},
            left[start:end],
            right[start:end],
            seed + start,
        )

    def record(chunk: tuple[int, int], outcome: np.ndarray) -> None:
        chunk_left, chunk_right = left[chunk[0] : chunk[1]], right[chunk[0] : chunk[1]]
        np.add.at(wins, (chunk_left[outcome > 0], chunk_right[outcome > 0]), 1)
        np.add.at(wins, (chunk_right[outcome < 0], chunk_left[outcome < 0]), 1)
        np.add.at(draws, (chunk_left[outcome == 0], chunk_right[outcome == 0]), 1)
        np.add.at(draws, (chunk_right[outcome == 0], chunk_left[outcome == 0]), 1)
        if on_matches_done is not None:
            on_matches_done(len(outcome))

    workers = min(jobs, len(chunks))
    if workers == 1:
        for chunk in chunks:
            record(chunk, _play_chunk_one_thread(*task(chunk)))
    else:
        # (spawn: a forked child would inherit torch's thread pool mid-use)
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = {pool.submit(_play_chunk_one_thread, *task(c)): c for c in chunks}
            for future in concurrent.futures.as_completed(futures):
                record(futures[future], future.result())
    return RoundRobinResults(names, wins, draws)
