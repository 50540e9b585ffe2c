"""Pong Duel as gymnasium environments: the learner is player 0 (left, blue), the opponent a policy.

Two views of the same game core (:mod:`rl_mind.envs.pong_game`):

- :class:`PongDuelEnv`, one match (``gymnasium.Env``, ``gymnasium.make("rl_mind/PongDuel-v0")``).
  It does **not** reset itself when the match ends, so the last frame of a video shows the
  final score.
- :class:`PongDuelVectorEnv`, ``num_envs`` matches stepped with numpy array ops
  (``gymnasium.vector.VectorEnv``, the registered ``vector_entry_point``, which is what
  ``rl_mind.VecEnv("rl_mind/PongDuel-v0", B)`` uses). Both auto-reset modes
  (``autoreset_mode=AutoresetMode.NEXT_STEP`` or ``SAME_STEP``) are native.

Opponents: a name (``"random"``, ``"scripted"``, ``"predictive"``), an
:class:`~rl_mind.core.Actor` (played with ``actor(obs).value`` under ``torch.no_grad()``: its
sampling behaviour), or a batched callable ``obs [K, 10] -> actions [K]``. In the vector env
every copy has its own opponent; an opponent changes only when its copy's match ends
(:meth:`PongDuelVectorEnv.set_opponents` schedules a change, an ``opponent_sampler`` picks
the opponent of every new match), and each distinct opponent plays all its copies in one
batched call. :meth:`PongDuelVectorEnv.pop_results` lists the matches that ended, with
their opponent: what a self-play loop needs to update win rates and ratings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rl_mind._batched import rows_by_owner
from rl_mind.envs.pong_game import PongDuelGame
from rl_mind.envs.pong_opponents import NumpyPolicy, as_numpy_policy
from rl_mind.envs.pong_render import TRAIL_LENGTH, render_match
from rl_mind.envs.pong_rules import PongDuelRules, rules_with

__all__ = [
    "MatchResult",
    "PongDuelEnv",
    "PongDuelVectorEnv",
    "pong_duel_observation_space",
]


def pong_duel_observation_space() -> spaces.Box:
    """The ``Box`` of one player's 10-float observation (bounds hold at every step)."""
    low = np.array([-1, -1, -1.5, -1, -1, -1, -2, 0, 0, 0], dtype=np.float32)
    high = np.array([1, 1, 1.5, 1, 1, 1, 2, 1, 1, 1], dtype=np.float32)
    return spaces.Box(low=low, high=high, dtype=np.float32)


class MatchResult(NamedTuple):
    """A finished match of the vector env, seen from the learner (player 0).

    ``outcome``: +1 the learner won, -1 it lost, 0 a draw (time limit). ``opponent`` is the
    opponent as it was given (name, actor, callable).
    """

    env_index: int
    opponent: Any
    outcome: int
    score: tuple[int, int]
    length: int


class PongDuelEnv(gymnasium.Env[np.ndarray, np.int64]):
    """One Pong Duel match against an opponent; the learner is player 0 (left, blue).

    Observation ``[10]`` float32 (mirrored point of view, see :mod:`rl_mind.envs.pong_game`),
    action ``Discrete(3)`` (0 stay, 1 up, 2 down). Reward: ``±point_reward`` per point
    scored / conceded, ``±1`` when the match is won / lost. ``terminated`` at 3 points,
    ``truncated`` at the time limit (a draw). Stepping a finished match is an error: call
    ``reset()``.

    Args:
        opponent: ``"random"``, ``"scripted"``, ``"predictive"``, an ``Actor`` or a batched
            callable ``obs [K, 10] -> actions [K]``.
        render_mode: ``None`` or ``"rgb_array"`` (``[400, 480, 3]`` uint8 frames).
        point_reward: the shaping reward per point (0.2; 0 for the pure win/loss reward).
        max_steps: the time limit (1,500 steps).
        rules: all the numbers of the game (:class:`PongDuelRules`).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        opponent: Any = "scripted",
        render_mode: str | None = None,
        point_reward: float | None = None,
        max_steps: int | None = None,
        rules: PongDuelRules | None = None,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"PongDuelEnv: render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        self.rules = rules_with(rules, point_reward, max_steps)
        self.render_mode = render_mode
        self.observation_space = pong_duel_observation_space()
        self.action_space = spaces.Discrete(3)
        self.opponent = opponent
        self._opponent = as_numpy_policy(opponent, self.rules)
        self.game = PongDuelGame(1, self.rules)
        self._trail: deque[tuple[float, float]] = deque(maxlen=TRAIL_LENGTH)
        self._needs_reset = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.game.seed(seed)
            if hasattr(self._opponent, "rng"):
                self._opponent.rng = np.random.default_rng(seed)
        self.game.reset_matches(np.zeros(1, dtype=np.int64))  # continues the match stream
        self._trail.clear()
        self._needs_reset = False
        return self.game.observe(0)[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            raise RuntimeError(
                "PongDuelEnv.step: the match is over (or was never started); call reset()"
            )
        a = np.asarray(action)
        if (
            a.shape not in ((), (1,))
            or a.dtype.kind not in "iu"
            or not 0 <= int(a.reshape(-1)[0]) <= 2
        ):
            raise ValueError(
                f"PongDuelEnv.step: expected one action 0 (stay), 1 (up) or 2 (down), got {action!r}"
            )
        opponent_action = self._opponent.act_numpy(self.game.observe(1))
        ball_before = (float(self.game.ball_x[0]), float(self.game.ball_y[0]))
        score_before = int(self.game.score.sum())
        result = self.game.step(np.array([[int(a.reshape(-1)[0])], [int(opponent_action[0])]]))
        if int(self.game.score.sum()) != score_before and not result.terminated[0]:
            self._trail.clear()  # a new serve: no trail across the court
        else:
            self._trail.append(ball_before)
        terminated, truncated = bool(result.terminated[0]), bool(result.truncated[0])
        self._needs_reset = terminated or truncated
        info: dict[str, Any] = {"score": (int(self.game.score[0, 0]), int(self.game.score[1, 0]))}
        if self._needs_reset:
            info["outcome"] = int(result.outcome[0])
        return self.game.observe(0)[0], float(result.reward[0]), terminated, truncated, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        if self.render_mode is None:
            gymnasium.logger.warn("PongDuelEnv.render: no render_mode; use render_mode='rgb_array'")
            return None
        return render_match(self.game, 0, trail=list(self._trail))


class _OpponentRegistry:
    """The distinct opponents in use, each with its numpy policy, looked up by identity."""

    def __init__(self, rules: PongDuelRules) -> None:
        self.rules = rules
        self.specs: list[Any] = []
        self.policies: list[NumpyPolicy] = []
        self._index: dict[Any, int] = {}

    def index_of(self, spec: Any) -> int:
        key = spec if isinstance(spec, str) else id(spec)
        found = self._index.get(key)
        if found is not None and (isinstance(spec, str) or self.specs[found] is spec):
            return found
        policy = as_numpy_policy(spec, self.rules)  # raises on an unknown name
        self.specs.append(spec)
        self.policies.append(policy)
        self._index[key] = len(self.specs) - 1
        return len(self.specs) - 1

    def compact(self, in_use: np.ndarray) -> np.ndarray:
        """Drop entries not in ``in_use`` (indices); returns the old → new index map."""
        keep = np.unique(in_use)
        remap = np.full(len(self.specs), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        self.specs = [self.specs[i] for i in keep]
        self.policies = [self.policies[i] for i in keep]
        self._index = {(s if isinstance(s, str) else id(s)): i for i, s in enumerate(self.specs)}
        return remap


class PongDuelVectorEnv(VectorEnv):
    """``num_envs`` (``B``) Pong Duel matches, learner = player 0 in each, stepped natively.

    Observations ``[B, 10]`` float32, actions ``[B]`` in {0, 1, 2}, rewards ``[B]`` float32
    (player 0's), ``terminated`` / ``truncated`` ``[B]`` bool. Every returned array is fresh
    (callers may keep references).

    Auto-reset (``autoreset_mode``, also in ``metadata["autoreset_mode"]``):
    ``NEXT_STEP`` (gymnasium's default): the step after a match ended ignores that copy's
    action and returns the first observation of a new match (reward 0). ``SAME_STEP``: the
    step that ends a match already returns the new match's first observation, the final
    observation is in ``infos["final_obs"]`` (``[B, 10]``, valid where
    ``infos["_final_obs"]``).

    Args:
        num_envs: ``B``.
        opponent: the opponent of every copy at the start (see the module docstring).
        opponent_sampler: optional ``fn(env_index) -> opponent``, called whenever a copy
            starts a new match (at ``reset`` too), unless ``set_opponents`` scheduled one.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or their
            string values).
        point_reward: the shaping reward per point (see :class:`PongDuelEnv`).
        max_steps: the time limit (see :class:`PongDuelEnv`).
        rules: all the numbers of the game (see :class:`PongDuelEnv`).
        render_mode: ``"rgb_array"``: ``render()`` returns one frame per copy.
        max_episode_steps: accepted for ``gymnasium.make_vec``; same as ``max_steps``.
    """

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": 50,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        opponent: Any = "scripted",
        *,
        opponent_sampler: Callable[[int], Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        point_reward: float | None = None,
        max_steps: int | None = None,
        rules: PongDuelRules | None = None,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
    ) -> None:
        if not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(
                f"PongDuelVectorEnv: num_envs must be a positive int, got {num_envs!r}"
            )
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError as error:
            raise ValueError(
                f"PongDuelVectorEnv: autoreset_mode must be AutoresetMode.NEXT_STEP or "
                f"SAME_STEP, got {autoreset_mode!r}"
            ) from error
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(
                f"PongDuelVectorEnv: autoreset_mode {mode} is not supported; use NEXT_STEP or SAME_STEP"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"PongDuelVectorEnv: render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        if opponent_sampler is not None and (
            isinstance(opponent_sampler, str) or not callable(opponent_sampler)
        ):
            raise TypeError(
                f"PongDuelVectorEnv: opponent_sampler must be a function env_index -> "
                f"opponent, got {type(opponent_sampler).__name__}; to play one opponent, pass "
                f"it as opponent=..."
            )
        self.num_envs = int(num_envs)
        self.rules = rules_with(
            rules, point_reward, max_steps if max_steps is not None else max_episode_steps
        )
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.render_mode = render_mode
        self.single_observation_space = pong_duel_observation_space()
        self.single_action_space = spaces.Discrete(3)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.game = PongDuelGame(self.num_envs, self.rules)
        self._registry = _OpponentRegistry(self.rules)
        self._opponent_index = np.full(
            self.num_envs, self._registry.index_of(opponent), dtype=np.int64
        )
        self._groups: list[tuple[NumpyPolicy, np.ndarray | None]] = []
        self._pending: dict[int, Any] = {}
        self.opponent_sampler = opponent_sampler
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._opponent_obs: np.ndarray | None = None
        self._results: deque[MatchResult] = deque(maxlen=100_000)
        self._regroup()

    # ------------------------------------------------------------------ opponents
    @property
    def opponents(self) -> list[Any]:
        """The opponent of each copy's current match (as given: name, actor, callable)."""
        specs = self._registry.specs
        return [specs[i] for i in self._opponent_index]

    def set_opponents(
        self, opponent: Any, indices: Sequence[int] | np.ndarray | None = None
    ) -> None:
        """Schedule ``opponent`` for the *next* match of the copies ``indices`` (all if ``None``).

        The change happens when each copy's current match ends (or at ``reset``), never in
        the middle of a match. Checked now: an unknown name is a ``ValueError``.
        """
        self._registry.index_of(opponent)  # validate early
        where = "PongDuelVectorEnv.set_opponents"
        if indices is None:
            idx = np.arange(self.num_envs)
        else:
            given = np.asarray(indices)  # (a CPU tensor too)
            if given.dtype == np.bool_:  # a mask of the copies
                if given.shape != (self.num_envs,):
                    raise ValueError(
                        f"{where}: a mask of copies must have shape [{self.num_envs}], got "
                        f"{list(given.shape)}"
                    )
                given = np.flatnonzero(given)
            elif given.size and given.dtype.kind not in "iu":
                raise TypeError(
                    f"{where}: indices must be copy indices (ints) or a bool mask, got dtype "
                    f"{given.dtype}"
                )
            idx = given.reshape(-1).astype(np.int64)
            outside = idx[(idx < 0) | (idx >= self.num_envs)]
            if outside.size:  # (checked before any is scheduled)
                raise ValueError(
                    f"{where}: index {int(outside[0])} out of range [0, {self.num_envs})"
                )
        for i in idx.tolist():
            self._pending[i] = opponent

    def pop_results(self) -> list[MatchResult]:
        """The matches that ended since the last call (oldest first), then forgets them."""
        results = list(self._results)
        self._results.clear()
        return results

    def _start_matches(self, idx: np.ndarray) -> None:
        """New matches in copies ``idx``: pick their opponents, then reset the game there."""
        if self._pending or self.opponent_sampler is not None:
            changed = False
            for i in idx.tolist():
                spec = self._pending.pop(i, None)
                if spec is None and self.opponent_sampler is not None:
                    spec = self.opponent_sampler(i)
                if spec is not None:
                    new = self._registry.index_of(spec)
                    changed |= new != self._opponent_index[i]
                    self._opponent_index[i] = new
            if changed:
                if len(self._registry.specs) > 2 * self.num_envs + 16:
                    self._opponent_index = self._registry.compact(self._opponent_index)[
                        self._opponent_index
                    ]
                self._regroup()
        self.game.reset_matches(idx)

    def _regroup(self) -> None:
        """Precompute, per distinct opponent, the copies it plays (one batched call each)."""
        groups = rows_by_owner(self._opponent_index)
        policies = self._registry.policies
        if len(groups) == 1:
            self._groups = [(policies[groups[0][0]], None)]
        else:
            self._groups = [(policies[k], rows) for k, rows in groups]

    def _opponent_actions(self) -> np.ndarray:
        obs = self._opponent_obs if self._opponent_obs is not None else self.game.observe(1)
        if len(self._groups) == 1 and self._groups[0][1] is None:
            return self._groups[0][0].act_numpy(obs)
        actions = np.empty(self.num_envs, dtype=np.int64)
        for policy, idx in self._groups:
            actions[idx] = policy.act_numpy(obs[idx])
        return actions

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new match in every copy; ``seed`` seeds copy ``i`` with ``seed + i``."""
        if isinstance(seed, list | tuple):
            if len(seed) != self.num_envs or any(s != seed[0] + i for i, s in enumerate(seed)):
                raise ValueError(
                    "PongDuelVectorEnv.reset: a list of seeds must be [s, s+1, ..., s+B-1]; "
                    "pass one int instead"
                )
            seed = seed[0]
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seed)
            self.game.seed(seed)
            for policy in self._registry.policies:
                if hasattr(policy, "rng"):
                    policy.rng = np.random.default_rng(seed)
        self._start_matches(np.arange(self.num_envs))
        self._autoreset[:] = False
        self._opponent_obs = self.game.observe(1)
        return self.game.observe(0), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(
                f"PongDuelVectorEnv.step: expected actions of shape ({self.num_envs},), got shape {a.shape}"
            )
        if a.dtype.kind not in "iu":
            raise ValueError(
                f"PongDuelVectorEnv.step: actions must be integers 0 (stay), 1 (up), 2 (down), got dtype {a.dtype}"
            )
        if a.min() < 0 or a.max() > 2:
            raise ValueError(
                f"PongDuelVectorEnv.step: actions must be 0, 1 or 2, got values in [{a.min()}, {a.max()}]"
            )
        if self._opponent_obs is None:
            raise RuntimeError("PongDuelVectorEnv.step: call reset() first")
        game = self.game
        both = np.stack([a, self._opponent_actions()])
        result = game.step(both, check=False)
        reward = result.reward.astype(np.float32)
        terminated, truncated = result.terminated, result.truncated
        ended = terminated | truncated
        infos: dict[str, Any] = {}
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            restart = self._autoreset
            if restart.any():
                # Copies whose match ended last step: this step starts a new match instead.
                idx = np.flatnonzero(restart)
                reward[idx] = 0.0
                terminated[idx] = False
                truncated[idx] = False
                ended[idx] = False
                self._start_matches(idx)
            if ended.any():
                self._record(np.flatnonzero(ended), result.outcome)
            self._autoreset = ended
            obs = game.observe(0)
        else:
            obs = game.observe(0)
            if ended.any():
                idx = np.flatnonzero(ended)
                self._record(idx, result.outcome)
                final_obs = np.zeros_like(obs)
                final_obs[idx] = obs[idx]
                infos["final_obs"] = final_obs
                infos["_final_obs"] = ended.copy()
                self._start_matches(idx)
                obs[idx] = game.observe(0, idx)
        self._opponent_obs = game.observe(1)
        return obs, reward, terminated, truncated, infos

    def _record(self, idx: np.ndarray, outcome: np.ndarray) -> None:
        specs = self._registry.specs
        for i in idx.tolist():
            self._results.append(
                MatchResult(
                    i,
                    specs[self._opponent_index[i]],
                    int(outcome[i]),
                    (int(self.game.score[0, i]), int(self.game.score[1, i])),
                    int(self.game.time[i]),
                )
            )

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One ``[400, 480, 3]`` frame per copy (``render_mode="rgb_array"``), without trails."""
        if self.render_mode is None:
            gymnasium.logger.warn(
                "PongDuelVectorEnv.render: no render_mode; use render_mode='rgb_array'"
            )
            return None
        return tuple(render_match(self.game, i) for i in range(self.num_envs))
