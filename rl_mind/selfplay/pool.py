"""The opponent pool of self-play: frozen snapshots of the learner, and how to pick one.

Why a pool: a learner trained only against its latest self chases its own tail (it forgets
how to beat older strategies, which can come back: rock-paper-scissors cycles). Playing
against a pool of past snapshots keeps the old strategies beaten. *Prioritized fictitious
self-play* (PFSP) picks more often the snapshots that still beat the learner.

What the reader must not get wrong:

- ``add`` stores a **deep copy** of the policy (in eval mode, gradients off): later updates
  of the learner do not change the snapshot.
- Results are recorded from the **learner's** point of view (``+1`` the learner won,
  ``-1`` it lost, ``0`` a draw), the convention of ``PongDuelVectorEnv.pop_results``.
- ``"latest"`` is the most recent *snapshot* in the pool, not the live learner: a trainer
  that wants the live learner as an opponent uses the learner itself.
- Validate everything first, then mutate: a call that raises leaves the pool as it was.
  :meth:`OpponentPool.load_state_dict` checks every entry of the state and builds every
  snapshot before it replaces anything, so an incomplete or invalid state changes nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from torch import nn

from rl_mind._validation import as_int, checked_count, checked_seed, finite_number

__all__ = ["SAMPLING_STRATEGIES", "OpponentPool", "Snapshot"]

SAMPLING_STRATEGIES = ("latest", "uniform", "pfsp")


@dataclasses.dataclass
class Snapshot:
    """A frozen policy of the pool, with its results against the learner.

    ``wins`` / ``draws`` / ``losses`` count the learner's results against this snapshot
    (possibly decayed, see :class:`OpponentPool`); ``step`` is the training step at which
    it was taken.
    """

    id: int
    step: int
    policy: Any
    wins: float = 0.0
    draws: float = 0.0
    losses: float = 0.0

    @property
    def name(self) -> str:
        """A label for tables and plots: ``"snapshot 3 (step 40960)"``."""
        return f"snapshot {self.id} (step {self.step})"

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    def win_probability(self, prior_games: float = 1.0) -> float:
        """Estimated probability that this snapshot beats the learner (a draw counts half).

        ``prior_games`` virtual drawn games pull a snapshot with few results towards 0.5.
        """
        return (self.losses + 0.5 * self.draws + 0.5 * prior_games) / (self.games + prior_games)


class OpponentPool:
    """A bounded pool of frozen snapshots of the learner, with opponent sampling.

    Sampling strategies (``sample(strategy)``):

    - ``"latest"``: the most recent snapshot.
    - ``"uniform"``: every snapshot equally likely.
    - ``"pfsp"`` (prioritized fictitious self-play): snapshot ``i`` with probability
      proportional to ``p_i ** pfsp_exponent``, ``p_i`` its estimated probability of beating
      the learner (:meth:`Snapshot.win_probability`): the opponents that still win are
      played more, the ones the learner always beats are (almost) left out.
    - a mixture, as a mapping ``{"latest": 0.5, "pfsp": 0.5}``: first a strategy is drawn
      with these weights, then a snapshot with that strategy.

    Eviction rule (when ``add`` finds the pool full): ``eviction="oldest"`` removes the
    oldest snapshot (first in, first out); ``"weakest"`` removes the snapshot the learner
    beats most surely (lowest ``win_probability``; the oldest among ties). With
    ``keep_first=True`` the first snapshot ever added (often the random initial policy) is
    never evicted, a fixed reference point. The snapshot being added is never evicted.

    Args:
        capacity: the most snapshots kept (>= 1, >= 2 with ``keep_first``).
        sampling: the default strategy of :meth:`sample` (a name or a mixture).
        pfsp_exponent: the ``p ** exponent`` weighting of PFSP, a finite number >= 0
            (larger: more focus on the hardest opponents; 0: uniform).
        eviction: ``"oldest"`` or ``"weakest"``.
        keep_first: never evict the first snapshot.
        decay: each recorded result first multiplies that snapshot's counts by ``decay``
            (1.0: plain counts; < 1 forgets old results, as the learner keeps changing).
        seed: seeds the sampling generator.
    """

    def __init__(
        self,
        capacity: int = 20,
        sampling: str | Mapping[str, float] = "uniform",
        *,
        pfsp_exponent: float = 2.0,
        eviction: str = "oldest",
        keep_first: bool = False,
        decay: float = 1.0,
        seed: int | None = None,
    ) -> None:
        count = as_int(capacity)
        if count is None or count < (2 if keep_first else 1):
            raise ValueError(
                f"OpponentPool: capacity must be an int >= {2 if keep_first else 1}, got {capacity!r}"
            )
        capacity = count
        if eviction not in ("oldest", "weakest"):
            raise ValueError(
                f"OpponentPool: eviction must be 'oldest' or 'weakest', got {eviction!r}"
            )
        if not 0.0 < decay <= 1.0:  # (NaN too)
            raise ValueError(f"OpponentPool: decay must be in (0, 1], got {decay}")
        self._check_strategy(sampling)
        self.capacity = capacity
        self.sampling = sampling
        self.pfsp_exponent = finite_number(
            pfsp_exponent, "OpponentPool: pfsp_exponent", minimum=0.0
        )
        self.eviction = eviction
        self.keep_first = keep_first
        self.decay = float(decay)
        self.rng = np.random.default_rng(checked_seed(seed, "OpponentPool: seed"))
        self.snapshots: list[Snapshot] = []
        self._next_id = 0
        self._first_id: int | None = None

    # ------------------------------------------------------------------ contents
    def __len__(self) -> int:
        return len(self.snapshots)

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self.snapshots)

    def __getitem__(self, snapshot_id: int) -> Snapshot:
        """The snapshot with this id (``KeyError`` if it was evicted or never existed)."""
        for snapshot in self.snapshots:
            if snapshot.id == snapshot_id:
                return snapshot
        raise KeyError(
            f"OpponentPool: no snapshot with id {snapshot_id} (ids in the pool: "
            f"{[s.id for s in self.snapshots]})"
        )

    @property
    def latest(self) -> Snapshot:
        self._check_not_empty("latest")
        return self.snapshots[-1]

    def add(self, policy: Any, step: int) -> Snapshot:
        """Store a frozen deep copy of ``policy`` taken at training step ``step``; evict if full."""
        step = checked_count(step, "OpponentPool.add: step (the training step)")
        frozen = copy.deepcopy(policy)
        if isinstance(frozen, nn.Module):
            frozen.eval()
            frozen.requires_grad_(False)
        snapshot = Snapshot(id=self._next_id, step=step, policy=frozen)
        self._next_id += 1
        if self._first_id is None:
            self._first_id = snapshot.id
        if len(self.snapshots) >= self.capacity:
            self.snapshots.remove(self._eviction_candidate())
        self.snapshots.append(snapshot)
        return snapshot

    def _eviction_candidate(self) -> Snapshot:
        candidates = [s for s in self.snapshots if not (self.keep_first and s.id == self._first_id)]
        if self.eviction == "oldest":
            return candidates[0]
        probabilities = [s.win_probability() for s in candidates]
        return candidates[int(np.argmin(probabilities))]  # argmin: the oldest among ties

    # ------------------------------------------------------------------ results
    def record(self, snapshot_id: int, outcome: float) -> None:
        """Record one match against snapshot ``snapshot_id``: ``outcome`` is the learner's
        (+1 won, 0 draw, -1 lost). Results for an evicted snapshot are ignored."""
        if outcome not in (-1, 0, 1):
            raise ValueError(f"OpponentPool.record: outcome must be +1, 0 or -1, got {outcome!r}")
        # (a wrong id would otherwise be taken for an evicted one, and the result lost)
        if isinstance(snapshot_id, Snapshot):
            raise TypeError(
                f"OpponentPool.record: expected a snapshot id (an int), got the Snapshot "
                f"itself; pass snapshot.id ({snapshot_id.id})"
            )
        if as_int(snapshot_id) is None:
            raise TypeError(
                f"OpponentPool.record: expected a snapshot id (an int, Snapshot.id), got "
                f"{type(snapshot_id).__name__}"
            )
        if not 0 <= snapshot_id < self._next_id:
            issued = f"0 to {self._next_id - 1}" if self._next_id else "none, the pool is empty"
            raise ValueError(
                f"OpponentPool.record: no snapshot {snapshot_id} was ever added (ids so far: "
                f"{issued})"
            )
        for snapshot in self.snapshots:
            if snapshot.id == snapshot_id:
                if self.decay < 1.0:
                    snapshot.wins *= self.decay
                    snapshot.draws *= self.decay
                    snapshot.losses *= self.decay
                if outcome > 0:
                    snapshot.wins += 1
                elif outcome < 0:
                    snapshot.losses += 1
                else:
                    snapshot.draws += 1
                return

    # ------------------------------------------------------------------ sampling
    def probabilities(self, strategy: str | None = None) -> np.ndarray:
        """The probability of each snapshot (in pool order) under a single strategy or a mixture."""
        strategy_or_mix = self.sampling if strategy is None else strategy
        self._check_strategy(strategy_or_mix)
        self._check_not_empty("probabilities")
        if isinstance(strategy_or_mix, Mapping):
            total = sum(strategy_or_mix.values())
            return sum(  # type: ignore[return-value]
                (w / total) * self.probabilities(name) for name, w in strategy_or_mix.items()
            )
        n = len(self.snapshots)
        if strategy_or_mix == "latest":
            p = np.zeros(n)
            p[-1] = 1.0
            return p
        if strategy_or_mix == "uniform":
            return np.full(n, 1.0 / n)
        weights = np.array([s.win_probability() for s in self.snapshots]) ** self.pfsp_exponent
        return weights / weights.sum()

    def sample(self, strategy: str | Mapping[str, float] | None = None) -> Snapshot:
        """Draw one snapshot (``strategy`` defaults to the pool's ``sampling``)."""
        strategy_or_mix = self.sampling if strategy is None else strategy
        self._check_strategy(strategy_or_mix)
        self._check_not_empty("sample")
        if isinstance(strategy_or_mix, Mapping):
            names = list(strategy_or_mix)
            weights = np.array([strategy_or_mix[k] for k in names], dtype=float)
            strategy_or_mix = names[int(self.rng.choice(len(names), p=weights / weights.sum()))]
        p = self.probabilities(strategy_or_mix)
        return self.snapshots[int(self.rng.choice(len(p), p=p))]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild the pool, loadable with ``torch.load(weights_only=True)``
        (snapshots must be ``nn.Module``s: their ``state_dict`` is stored)."""
        snapshots = []
        for s in self.snapshots:
            if not isinstance(s.policy, nn.Module):
                raise TypeError(
                    f"OpponentPool.state_dict: snapshot {s.id} is a {type(s.policy).__name__}, "
                    "not an nn.Module; only module snapshots can be saved"
                )
            snapshots.append(
                {
                    "id": s.id,
                    "step": s.step,
                    "policy": s.policy.state_dict(),
                    "wins": s.wins,
                    "draws": s.draws,
                    "losses": s.losses,
                }
            )
        return {
            "snapshots": snapshots,
            "next_id": self._next_id,
            "first_id": self._first_id,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(
        self, state: Mapping[str, Any], make_policy: Callable[[], nn.Module]
    ) -> None:
        """Restore a pool saved by :meth:`state_dict`; ``make_policy()`` builds an empty module.

        Validate everything first, then mutate: every entry is checked and every snapshot's
        policy built before the pool changes, so an incomplete or invalid ``state`` raises a
        ``ValueError`` or ``TypeError`` naming the entry (``state['snapshots'][2]['wins']``)
        and leaves the pool as it was.
        """
        where = "OpponentPool.load_state_dict"
        if not isinstance(state, Mapping):
            raise TypeError(
                f"{where}: expected the dict of OpponentPool.state_dict(), got "
                f"{type(state).__name__}"
            )
        missing = [key for key in ("snapshots", "next_id", "first_id", "rng") if key not in state]
        if missing:
            raise ValueError(
                f"{where}: the state lacks {missing}; OpponentPool.state_dict() has "
                f"'snapshots', 'next_id', 'first_id' and 'rng'"
            )
        next_id = checked_count(state["next_id"], f"{where}: state['next_id']")
        first_id = state["first_id"]
        if first_id is not None:
            first_id = checked_count(first_id, f"{where}: state['first_id']")
        if (first_id is None) != (next_id == 0) or (first_id is not None and first_id >= next_id):
            raise ValueError(
                f"{where}: state['first_id'] {first_id!r} does not fit state['next_id'] "
                f"{next_id} (the first id is None before any add, and below next_id after)"
            )
        items = state["snapshots"]
        if not isinstance(items, list | tuple):
            raise TypeError(
                f"{where}: state['snapshots'] must be a list of snapshots, got "
                f"{type(items).__name__}"
            )
        if len(items) > self.capacity:
            raise ValueError(
                f"{where}: the state holds {len(items)} snapshots, more than this pool's "
                f"capacity {self.capacity}"
            )
        snapshots = [
            _snapshot_from_state(item, f"{where}: state['snapshots'][{i}]", next_id, make_policy)
            for i, item in enumerate(items)
        ]
        ids = [s.id for s in snapshots]
        if any(a >= b for a, b in zip(ids, ids[1:])):
            raise ValueError(
                f"{where}: the snapshot ids {ids} do not increase (the pool keeps its "
                f"snapshots in the order they were added)"
            )
        # (tried on a copy: a state the generator refuses changes nothing)
        rng_state = state["rng"]
        trial = copy.deepcopy(self.rng.bit_generator)
        try:
            trial.state = dict(rng_state)
        except (TypeError, ValueError, KeyError, OverflowError) as error:
            raise ValueError(
                f"{where}: state['rng'] is not a state of this pool's "
                f"{type(trial).__name__} generator ({error})"
            ) from None
        # Every check passed: replace the pool's state.
        self.snapshots = snapshots
        self._next_id = next_id
        self._first_id = first_id
        self.rng.bit_generator.state = trial.state

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _check_strategy(strategy: str | Mapping[str, float]) -> None:
        names = list(strategy) if isinstance(strategy, Mapping) else [strategy]
        for name in names:
            if name not in SAMPLING_STRATEGIES:
                raise ValueError(
                    f"OpponentPool: unknown sampling strategy {name!r}; expected one of "
                    f"{SAMPLING_STRATEGIES} or a mapping of them to weights"
                )
        if isinstance(strategy, Mapping):
            for name, weight in strategy.items():
                finite_number(weight, f"OpponentPool: the mixture weight of {name!r}", minimum=0.0)
            if sum(strategy.values()) <= 0:
                raise ValueError(
                    f"OpponentPool: a sampling mixture needs non-negative weights with a "
                    f"positive sum, got {dict(strategy)}"
                )

    def _check_not_empty(self, what: str) -> None:
        if not self.snapshots:
            raise ValueError(f"OpponentPool.{what}: the pool is empty; add a snapshot first")


_SNAPSHOT_KEYS = ("id", "step", "policy", "wins", "draws", "losses")


def _snapshot_from_state(
    item: Any, where: str, next_id: int, make_policy: Callable[[], nn.Module]
) -> Snapshot:
    """One snapshot of :meth:`OpponentPool.state_dict`, checked, its policy built."""
    if not isinstance(item, Mapping):
        raise TypeError(f"{where} must be a dict, got {type(item).__name__}")
    missing = [key for key in _SNAPSHOT_KEYS if key not in item]
    if missing:
        raise ValueError(f"{where} lacks {missing}; a saved snapshot has {list(_SNAPSHOT_KEYS)}")
    snapshot_id = checked_count(item["id"], f"{where}['id']")
    if snapshot_id >= next_id:
        raise ValueError(
            f"{where}['id'] is {snapshot_id}, but state['next_id'] is {next_id}: every id "
            f"given so far is below next_id"
        )
    step = checked_count(item["step"], f"{where}['step']")
    wins, draws, losses = (
        finite_number(item[key], f"{where}[{key!r}]", minimum=0.0)
        for key in ("wins", "draws", "losses")
    )
    policy = make_policy()
    try:
        policy.load_state_dict(item["policy"])
    except (RuntimeError, TypeError, ValueError, KeyError, AttributeError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(
            f"{where}['policy'] does not fit the module make_policy() builds: {first_line}"
        ) from None
    policy.eval()
    policy.requires_grad_(False)
    return Snapshot(snapshot_id, step, policy, wins, draws, losses)
