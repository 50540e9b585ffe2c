"""The vectorized environment: ``B`` copies of a gymnasium environment that speak torch.

:class:`VecEnv` wraps gymnasium's own vector API (``gymnasium.make_vec``), so a natively
vectorized environment (one registered with a ``vector_entry_point``) steps all its copies
with array operations, and every other environment runs its copies in one process
(``sync``) or in subprocesses (``asynchronous=True``).

Why two auto-reset modes (gymnasium's ``AutoresetMode``):

- **Next-step** (default, ``same_step_reset=False``): the step that ends an episode returns
  that episode's final observation; the *next* ``step`` ignores its action for that copy
  and returns the first observation of a new episode (reward 0, not done). Such a row is
  flagged in ``EnvStep.autoreset`` and is not a transition: collectors drop it.
- **Same-step** (``same_step_reset=True``): the ending step already returns the new
  episode's first observation in ``obs`` and the final observation in ``next_obs``. Every
  step is a valid transition, which is what fixed-length ``[T, B]`` rollouts need.

What the reader must not get wrong: ``terminated`` means the episode reached a terminal
state (its value is 0: do not bootstrap); ``truncated`` means it was cut short, e.g. by a
time limit (bootstrap from ``next_obs``, the true last observation). ``obs`` is what to act
on next; ``next_obs`` is always the true successor of the observation that was acted on.

Validate first, then act: a bad argument (a seed, a wrapper, the actions of a ``step``) is a
``ValueError`` or ``TypeError`` raised before any copy is built or stepped, so a rejected call
leaves the environment as it was.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from torch import Tensor

from rl_mind.core import Action, Observation, TensorStruct, _as_int, _checked_device

__all__ = ["EnvStep", "VecEnv"]


@dataclasses.dataclass(frozen=True)
class EnvStep(TensorStruct):
    """What ``VecEnv.step`` returns, one row per copy.

    - ``obs``: ``[B, ...]`` the observation to act on next (after an auto-reset: the first
      observation of the new episode).
    - ``next_obs``: ``[B, ...]`` the true successor of the observation that was acted on
      (at the end of an episode: its final observation).
    - ``reward``: ``[B]`` float32.
    - ``terminated``: ``[B]`` bool, a terminal state was reached (no bootstrap).
    - ``truncated``: ``[B]`` bool, the episode was cut short (bootstrap from ``next_obs``).
    - ``autoreset``: ``[B]`` bool, next-step mode only: this row ignored its action and
      reset the copy, so it is not a transition (always false in same-step mode).
    """

    obs: Observation
    next_obs: Observation
    reward: Tensor
    terminated: Tensor
    truncated: Tensor
    autoreset: Tensor

    @property
    def done(self) -> Tensor:
        """``[B]`` bool: the episode ended at this step (terminated or truncated)."""
        return self.terminated | self.truncated


_STRUCT_CLASSES: dict[tuple[str, ...], type[TensorStruct]] = {}


def _dict_struct_class(keys: tuple[str, ...]) -> type[TensorStruct]:
    """A ``TensorStruct`` subclass with one field per key of a ``Dict`` space (cached)."""
    cls = _STRUCT_CLASSES.get(keys)
    if cls is None:
        for key in keys:
            if not key.isidentifier():
                raise ValueError(
                    f"Dict observation key {key!r} is not a valid Python identifier, so it "
                    f"cannot become a field; rename it with a gymnasium observation wrapper"
                )
        cls = dataclasses.make_dataclass(
            "DictObservation",
            [(key, Any) for key in keys],
            bases=(TensorStruct,),
            frozen=True,
        )
        cls.__module__ = __name__
        _STRUCT_CLASSES[keys] = cls
    return cls


class _Converter:
    """numpy (gymnasium) observations -> torch, for one observation space."""

    def __init__(self, space: spaces.Space[Any], device: torch.device) -> None:
        self.device = device
        self.on_cpu = device.type == "cpu"
        self.dtype: torch.dtype | None = None
        self.children: dict[str, _Converter] | None = None  # (Dict spaces: one per key)
        if isinstance(space, spaces.Dict):
            self.children = {key: _Converter(sub, device) for key, sub in space.spaces.items()}
            self.struct = _dict_struct_class(tuple(space.spaces))
        elif isinstance(space, spaces.Box):
            self.dtype = torch.float32 if np.issubdtype(space.dtype, np.floating) else None
        elif isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
            self.dtype = torch.long
        else:
            raise TypeError(
                f"VecEnv supports Box, Discrete, MultiDiscrete, MultiBinary and Dict "
                f"observation spaces, got {space}"
            )

    def __call__(self, batch: Any, rows: np.ndarray | None = None) -> Observation:
        """``batch`` as a tensor (or struct), or only its ``rows`` (a 1-d int array)."""
        if self.children is not None:
            values = {key: convert(batch[key], rows) for key, convert in self.children.items()}
            return self.struct(**values)
        if rows is not None:
            batch = _take_rows_np(np.asarray(batch), rows)  # (a copy)
        elif type(batch) is not np.ndarray or not batch.flags.writeable:
            batch = np.array(batch)  # a copy we own (gymnasium may reuse its buffers)
        tensor = torch.from_numpy(batch)
        if self.dtype is not None and tensor.dtype is not self.dtype:  # (dtypes are singletons)
            tensor = tensor.to(self.dtype)
        return tensor if self.on_cpu else tensor.to(self.device)


def _take_rows_np(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The ``rows`` (a 1-d int array) of ``array``: ``array[rows]``, a copy.

    On a column-major array (as CartPole's vector environment returns its observations),
    the rows are taken through the transpose, so the array is not first copied whole."""
    if array.ndim > 1 and array.flags.f_contiguous:
        return array.T.take(rows, -1).T
    return array.take(rows, 0)


def _tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``fn`` applied leaf by leaf to numpy observations (arrays, or dicts of them for
    ``Dict`` spaces; ``rest`` have the same structure)."""
    if isinstance(tree, Mapping):
        return {key: _tree_map(fn, tree[key], *(r[key] for r in rest)) for key in tree}
    return fn(tree, *rest)


def _stack_rows(items: Sequence[Any]) -> Any:
    """Numpy observations of one shape (arrays, or dicts of them) stacked along a new
    leading dimension: single-copy ones (gymnasium's ``final_obs`` entries) into a batch,
    or a collector's recorded ``[B]`` steps into ``[T, B]``."""
    first = items[0]
    if isinstance(first, Mapping):
        return {key: _stack_rows([item[key] for item in items]) for key in first}
    return np.array(items)  # (np.stack is slower)


def _final_rows(
    info: dict[str, Any], terminated: np.ndarray, truncated: np.ndarray
) -> tuple[np.ndarray, Any] | None:
    """Same-step mode: ``(mask, rows)``, the final observations of the copies that just
    ended (``rows`` in copy order, numpy), or None when no copy ended."""
    mask = info.get("_final_obs")
    if mask is None:
        mask = terminated | truncated
    elif type(mask) is not np.ndarray or mask.dtype != np.bool_:
        mask = np.asarray(mask, dtype=bool)
    if not np.count_nonzero(mask):
        return None
    final = info["final_obs"]
    if isinstance(final, Mapping):  # Dict space, natively vectorized
        return mask, _tree_map(lambda array: np.asarray(array)[mask], final)
    if isinstance(final, np.ndarray) and final.dtype != object:  # natively vectorized
        return mask, final[mask]
    # sync/async: one entry per copy (tolist of an object array: the entries themselves)
    return mask, _stack_rows(final[mask].tolist())


def _with_final_rows(obs: Any, final: tuple[np.ndarray, Any]) -> Any:
    """A copy of the numpy observations ``obs`` whose rows ``final[0]`` (a mask) are replaced
    by the final observations ``final[1]`` (same-step mode: the true successors)."""
    mask, rows = final

    def put(array: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.array(array)
        out[mask] = values
        return out

    return _tree_map(put, obs, rows)


_FLOAT32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)


def _tensor(array: Any, dtype: np.dtype[Any], device: torch.device | None) -> Tensor:
    """A [B] numpy array as a tensor of ``dtype`` (zero-copy when it already is one);
    ``device`` None means the CPU."""
    # (`is`: numpy's own dtypes are singletons; a dtype that is only equal takes the copy)
    if type(array) is not np.ndarray or array.dtype is not dtype:
        array = np.asarray(array).astype(dtype)
    tensor = torch.from_numpy(array)
    return tensor if device is None else tensor.to(device)


_INT64 = np.dtype(np.int64)


def _actions_to_numpy(value: Tensor) -> np.ndarray:
    """Actions that do not convert as they are (on a GPU, with gradients, or of a dtype
    numpy lacks, as bfloat16) as a numpy array; floating point ones numpy lacks become
    float32, which the action checks then judge."""
    if value.is_meta:
        raise ValueError(
            "step: the actions are on the meta device, which holds no values; compute them "
            "on a real device (e.g. 'cpu')"
        )
    value = value.detach().cpu()
    try:
        return value.numpy()
    except TypeError:
        if value.is_floating_point():
            return value.float().numpy()
        raise TypeError(
            f"expected integer or floating-point actions, got dtype {value.dtype}, which "
            f"numpy cannot hold"
        ) from None


def _bad_values(array: np.ndarray, bad: np.ndarray) -> str:
    """The actions ``array`` (whose rows ``bad`` are wrong) for an error message: all of them
    when few, else the first wrong ones with their rows."""
    if array.size <= 16:
        return str(array.tolist())
    shown = ", ".join(f"{array[row]} (row {row})" for row in bad[:5].tolist())
    more = f" and {bad.size - 5} more" if bad.size > 5 else ""
    return f"{shown}{more}, among {array.size} actions"


def _rows_name(rows: np.ndarray | None) -> str:
    """What the rows of actions stand for, in error messages."""
    if rows is None:
        return "num_envs"
    return (
        "one per row of the observation given to the actor: in next-step mode, collect(1) "
        "leaves out the copies that only reset at this step"
    )


# the ids that `import rl_mind.envs` registers (importing rl_mind alone registers none)
_OWN_ENV_IDS = ("CartPoleContinuous-v1", "rl_mind/PongDuel-v0")


def _env_spec(env_name: Any, owner: str) -> gym.envs.registration.EnvSpec:
    """gymnasium's spec of the id ``env_name``, with a ``TypeError`` for what is not an id
    (as an environment object) and a ``ValueError`` for an unknown id (with gymnasium's
    close matches, and a hint for the package's own ids before ``import rl_mind.envs``)."""
    if not isinstance(env_name, str):
        made_from = getattr(getattr(env_name, "spec", None), "id", None)
        hint = f" (pass its id, {made_from!r}, instead)" if isinstance(made_from, str) else ""
        raise TypeError(
            f"{owner}: env_name must be a gymnasium id (str), such as 'CartPole-v1', got "
            f"{type(env_name).__name__}{hint}"
        )
    try:
        return gym.spec(env_name)
    except gym.error.Error as error:
        hint = ""
        if env_name.startswith(("rl_mind/", "CartPoleContinuous")) and (
            "rl_mind.envs" not in sys.modules
        ):
            hint = f"; the package's own environments {list(_OWN_ENV_IDS)} are registered by "
            hint += "`import rl_mind.envs`"
        raise ValueError(f"unknown environment id {env_name!r}: {error}{hint}") from None


def _checked_seed(seed: Any, owner: str) -> int | None:
    """``seed`` as an int >= 0 (a numpy integer too), or None; else a ``TypeError`` (not an
    int) or a ``ValueError`` (negative) naming ``seed``. (gymnasium takes any int >= 0,
    however large; it refuses the rest only at the first reset, with its own error.)"""
    if seed is None:
        return None
    value = _as_int(seed)
    if value is None or value < 0:
        kind = TypeError if value is None else ValueError
        raise kind(f"{owner}: seed must be None or an int >= 0, got {seed!r}")
    return value


def _checked_wrappers(wrappers: Any) -> tuple[Callable[..., Any], ...]:
    """``wrappers`` as a tuple of callables, each checked to return an environment when it
    is applied (a ``TypeError`` that says what to pass otherwise)."""
    if callable(wrappers):  # a wrapper class or function alone
        name = getattr(wrappers, "__name__", type(wrappers).__name__)
        raise TypeError(
            f"VecEnv: wrappers must be a list of wrapper constructors, got {name} alone; "
            f"wrap it in a list: wrappers=[{name}]"
        )
    if not isinstance(wrappers, Sequence) or isinstance(wrappers, str):
        raise TypeError(
            f"VecEnv: wrappers must be a list or tuple of wrapper constructors (env -> env), "
            f"got {type(wrappers).__name__}; use () for none"
        )
    for i, wrapper in enumerate(wrappers):
        if not callable(wrapper):
            raise TypeError(
                f"VecEnv: wrappers[{i}] is {wrapper!r} ({type(wrapper).__name__}), expected "
                f"a wrapper constructor (a callable env -> env, e.g. gymnasium.wrappers.TimeLimit)"
            )
    return tuple(_returns_an_env(wrapper, i) for i, wrapper in enumerate(wrappers))


def _returns_an_env(wrapper: Callable[..., Any], i: int) -> Callable[..., Any]:
    """``wrapper``, checked to return a gymnasium environment when it is applied."""

    def apply(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
        wrapped = wrapper(env)
        if not isinstance(wrapped, gym.Env):
            raise TypeError(
                f"VecEnv: wrappers[{i}] returned a {type(wrapped).__name__}, expected the "
                f"wrapped gymnasium environment (a wrapper function must return the "
                f"environment it wraps)"
            )
        return wrapped

    return apply


def _accepts_kwarg(creator: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(creator).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


class VecEnv:
    """``num_envs`` copies of a gymnasium environment, stepped together, in torch tensors.

    Args:
        env_name: a registered gymnasium id (``"CartPole-v1"``, ``"rl_mind/PongDuel-v0"``).
        num_envs: the number of copies ``B``.
        seed: an int >= 0 (of any size, numpy integers too) or None: seeds the copies at
            the first ``reset`` (and the action space), so that runs are reproducible: sync
            and async copies ``i`` get ``seed + i``; a natively vectorized environment seeds
            its own generator from ``seed`` (so the same seed may start differently in the
            two modes).
        same_step_reset: the auto-reset mode (see the module docstring). Required by
            :class:`~rl_mind.collectors.RolloutCollector`.
        wrappers: a list of gymnasium wrapper constructors (callables ``env -> env``, such
            as ``gymnasium.wrappers.TimeLimit`` or a lambda), applied to each copy in order
            (this disables native vectorization).
        asynchronous: run each copy in its own subprocess (for slow environments).
        device: where the returned tensors live (actions may come from any device).
        **env_kwargs: passed to the environment's constructor (e.g. ``render_mode``).

    ``reset()`` returns observations ``[B, obs_dim]`` (float32 for ``Box``; ``[B]`` long
    state indices for ``Discrete``; a ``TensorStruct`` with one field per key for ``Dict``),
    ``step(actions)`` an :class:`EnvStep`.
    """

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        seed: int | None = None,
        same_step_reset: bool = False,
        wrappers: Sequence[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]] = (),
        *,
        asynchronous: bool = False,
        device: torch.device | str | None = None,
        **env_kwargs: Any,
    ) -> None:
        count = _as_int(num_envs)
        if count is None or count <= 0:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        num_envs = count
        self._env_name = env_name
        self._num_envs = num_envs
        self._seed = _checked_seed(seed, "VecEnv")
        self._same_step_reset = bool(same_step_reset)
        self._device = _checked_device(device, "VecEnv")
        checked_wrappers = _checked_wrappers(wrappers)
        self._wrappers = tuple(wrappers)
        self._env_kwargs = dict(env_kwargs)
        mode = AutoresetMode.SAME_STEP if same_step_reset else AutoresetMode.NEXT_STEP
        self._autoreset_mode = mode

        spec = _env_spec(env_name, "VecEnv")

        self._gym_env = self._make(spec, mode, list(checked_wrappers), asynchronous, env_kwargs)
        # sync and async environments rewrite one observation buffer (copy=False, see
        # _make): _step_arrays and _reset_arrays copy it
        self._copy_obs = self._vectorization_mode != "vector_entry_point"
        self._observation_space = self._gym_env.single_observation_space
        self._action_space = self._gym_env.single_action_space
        self._convert = _Converter(self._observation_space, self._device)
        self._continuous = isinstance(self._action_space, spaces.Box)
        self._action_dtype = np.dtype(self._action_space.dtype)  # type: ignore[arg-type]
        # the largest continuous action the space's dtype holds (see _checked_actions)
        self._action_limit = (
            float(np.finfo(self._action_dtype).max) if self._action_dtype.kind == "f" else None
        )
        self._action_values: frozenset[int] | None = None  # (discrete: see below)
        if isinstance(self._action_space, spaces.Discrete):
            self._action_low = int(self._action_space.start)
            self._action_high = int(self._action_space.start + self._action_space.n)
            # the valid actions, for the range check of _to_numpy_actions (None: too many
            # of them, or of copies: a hash lookup per action is then no longer the cheapest
            # check)
            span = self._action_high - self._action_low
            self._action_values = (
                frozenset(range(self._action_low, self._action_high))
                if span <= 4096 and num_envs <= 1024
                else None
            )
        elif not isinstance(self._action_space, spaces.Box):
            raise TypeError(
                f"VecEnv supports Discrete and Box action spaces, got {self._action_space}"
            )
        self._no_reset = torch.zeros(num_envs, dtype=torch.bool, device=self._device)
        # next-step mode: the actions given to the copies that reset (which ignore them)
        # when the actor only acted for the others (see _step_arrays): one valid action
        # per copy (the lowest, or 0 clipped)
        space = self._action_space
        if isinstance(space, spaces.Box):
            one = np.clip(np.zeros(space.shape), space.low, space.high).astype(space.dtype)
        else:
            one = np.asarray(self._action_low, np.int64)
        self._filler = np.repeat(one[None], num_envs, axis=0)
        # (terminated, truncated) of the last step, None after a reset: in next-step mode,
        # the copies that ended there are auto-reset by the next step
        self._last_flags: tuple[np.ndarray, np.ndarray] | None = None
        self._needs_reset = True
        self._closed = False
        if self._seed is not None:
            self._action_space.seed(self._seed)

    def _make(
        self,
        spec: gym.envs.registration.EnvSpec,
        mode: AutoresetMode,
        wrappers: list[Any],
        asynchronous: bool,
        env_kwargs: dict[str, Any],
    ) -> VectorEnv[Any, Any, Any]:
        if spec.vector_entry_point is not None and not wrappers and not asynchronous:
            entry_point = spec.vector_entry_point
            creator: Any = (
                gym.envs.registration.load_env_creator(entry_point)
                if isinstance(entry_point, str)
                else entry_point
            )
            kwargs = dict(env_kwargs)
            if _accepts_kwarg(creator, "autoreset_mode"):
                kwargs["autoreset_mode"] = mode
            env = gym.make_vec(spec.id, self._num_envs, "vector_entry_point", **kwargs)
            if env.metadata.get("autoreset_mode") == mode:
                self._vectorization_mode = "vector_entry_point"
                return env
            env.close()  # its auto-reset mode is not the one asked for: fall back to sync
        vectorization_mode = "async" if asynchronous else "sync"
        self._vectorization_mode = vectorization_mode
        # copy=False: gymnasium then returns its own observation buffer, rewritten at every
        # step, which _step_arrays copies plainly (copy=True would deep-copy it)
        return gym.make_vec(
            spec.id,
            self._num_envs,
            vectorization_mode,
            vector_kwargs={"autoreset_mode": mode, "copy": False},
            wrappers=wrappers,
            **env_kwargs,
        )

    # ------------------------------------------------------------------ properties
    @property
    def num_envs(self) -> int:
        """The number of copies ``B``."""
        return self._num_envs

    @property
    def env_name(self) -> str:
        return self._env_name

    @property
    def same_step_reset(self) -> bool:
        """True in same-step auto-reset mode, False in next-step mode."""
        return self._same_step_reset

    @property
    def device(self) -> torch.device:
        """The device of the returned tensors."""
        return self._device

    @property
    def wrappers(self) -> tuple[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]], ...]:
        """The wrapper constructors applied to each copy."""
        return self._wrappers

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """The keyword arguments given to the environment's constructor (a copy)."""
        return dict(self._env_kwargs)

    @property
    def vectorization_mode(self) -> str:
        """``"vector_entry_point"`` (natively vectorized), ``"sync"`` or ``"async"``."""
        return self._vectorization_mode

    @property
    def observation_space(self) -> spaces.Space[Any]:
        """The observation space of one copy."""
        return self._observation_space

    @property
    def action_space(self) -> spaces.Space[Any]:
        """The action space of one copy."""
        return self._action_space

    @property
    def observation_dim(self) -> int:
        """The size of a flat ``Box`` observation."""
        space = self._observation_space
        if not isinstance(space, spaces.Box):
            raise TypeError(
                f"observation_dim is defined for Box observation spaces, this environment has "
                f"{space}" + (" (use n_states)" if isinstance(space, spaces.Discrete) else "")
            )
        return int(np.prod(space.shape))

    @property
    def n_states(self) -> int:
        """The number of states of a tabular (``Discrete``) observation space."""
        space = self._observation_space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"n_states is defined for Discrete observation spaces, got {space}")
        return int(space.n)

    @property
    def is_continuous(self) -> bool:
        """True for a ``Box`` action space, False for ``Discrete``."""
        return isinstance(self._action_space, spaces.Box)

    @property
    def n_actions(self) -> int:
        """The number of discrete actions."""
        if not isinstance(self._action_space, spaces.Discrete):
            raise TypeError(
                f"n_actions is defined for Discrete action spaces, got {self._action_space} "
                f"(use action_dim)"
            )
        return int(self._action_space.n)

    @property
    def action_dim(self) -> int:
        """The size of a continuous (``Box``) action."""
        if not isinstance(self._action_space, spaces.Box):
            raise TypeError(
                f"action_dim is defined for Box action spaces, got {self._action_space} "
                f"(use n_actions)"
            )
        return int(np.prod(self._action_space.shape))

    @property
    def gym_env(self) -> VectorEnv[Any, Any, Any]:
        """The underlying gymnasium ``VectorEnv``. In sync and async mode it is built with
        ``copy=False``: its own ``step`` and ``reset`` return the same observation arrays,
        rewritten at every call (the ``VecEnv`` copies them)."""
        return self._gym_env

    @property
    def gym_unwrapped(self) -> Any:
        """The unwrapped environment: the first copy, or the native vector environment."""
        env = self._gym_env
        if hasattr(env, "envs"):
            return env.envs[0].unwrapped
        return env.unwrapped

    # ------------------------------------------------------------------ stepping
    def reset(self, seed: int | None = None) -> Observation:
        """Reset every copy; returns the first observations ``[B, ...]``.

        ``seed`` (or, at the first reset, the constructor's seed) seeds copy ``i`` with
        ``seed + i`` (a natively vectorized environment: its own generator from ``seed``).
        """
        return self._convert(self._reset_arrays(seed))

    def _reset_arrays(self, seed: int | None = None) -> Any:
        """``reset`` in gymnasium's numpy arrays (what the collectors record)."""
        self._check_open()
        seed = _checked_seed(seed, "VecEnv.reset")
        if seed is None and self._needs_reset:
            seed = self._seed
        obs, _info = self._gym_env.reset(seed=seed)
        if self._copy_obs:
            obs = _tree_map(np.copy, obs)
        self._last_flags = None
        self._needs_reset = False
        return obs

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"VecEnv({self._env_name!r}) is closed")

    def _to_numpy_actions(
        self, actions: Tensor | Action, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """Check ``actions`` and convert them for gymnasium.

        ``rows`` (next-step mode: the copies that do not reset at this step): ``actions``
        has one row per copy of ``rows``, and the other copies, which ignore their action,
        get a valid one."""
        value = actions.value if isinstance(actions, Action) else actions
        if not isinstance(value, Tensor):
            raise TypeError(
                f"step expects a tensor of actions or an Action, got {type(value).__name__}"
            )
        try:  # the common case, a CPU tensor without gradients, converts without copies
            array = value.numpy()
        except (RuntimeError, TypeError):
            array = _actions_to_numpy(value)
        B = self._num_envs if rows is None else len(rows)
        valid = self._action_values
        # the usual discrete actions pass with a hash lookup each; anything else (or
        # anything wrong) goes through the full checks
        if not (
            array.dtype is _INT64
            and valid is not None
            and array.shape == (B,)
            and valid.issuperset(array.tolist())
        ):
            array = self._checked_actions(array, B, rows, value.dtype)
        if rows is None:
            return array
        full = self._filler.copy()  # (the copies that reset ignore their action)
        full[rows] = array
        return full

    def _checked_actions(
        self, array: np.ndarray, B: int, rows: np.ndarray | None, dtype: torch.dtype
    ) -> np.ndarray:
        """Check ``B`` actions (numpy, from a tensor of ``dtype``) for the action space, with
        a ``ValueError`` that says what is wrong; returns them as gymnasium wants them."""
        if self._continuous:
            shape = (B, *self._action_space.shape)  # type: ignore[misc]
            if array.shape != shape:
                hint = " (use actions.unsqueeze(-1))" if array.shape == (B,) == shape[:1] else ""
                raise ValueError(
                    f"expected continuous actions of shape {list(shape)} "
                    f"([{_rows_name(rows)}, action_dim]), got {list(array.shape)}{hint}"
                )
            if array.dtype.kind != "f":
                raise ValueError(f"expected floating-point continuous actions, got dtype {dtype}")
            # actions wider than the space's dtype (float64 for float32) must also fit in it:
            # beyond its range, the cast would turn them into inf (one check does both)
            wider = array.dtype.itemsize > self._action_dtype.itemsize
            limit = self._action_limit if wider else None
            if not (np.isfinite(array).all() if limit is None else (np.abs(array) <= limit).all()):
                finite = np.isfinite(array).reshape(B, -1).all(1)
                if not finite.all():
                    raise ValueError(
                        f"continuous actions must be finite, got NaN or inf in rows "
                        f"{np.flatnonzero(~finite).tolist()}"
                    )
                outside = np.flatnonzero(np.abs(array).reshape(B, -1).max(1) > limit)
                raise ValueError(
                    f"continuous actions must fit the action space's dtype {self._action_dtype} "
                    f"(|a| <= {limit:.4g}), got {_bad_values(array, outside)}"
                )
            return array.astype(self._action_dtype, copy=False)
        if array.shape != (B,):
            hint = " (squeeze the last dimension)" if array.shape == (B, 1) else ""
            raise ValueError(
                f"expected discrete actions of shape [{B}] ([{_rows_name(rows)}]), "
                f"got {list(array.shape)}{hint}"
            )
        if array.dtype.kind not in "iu":
            raise ValueError(
                f"expected integer discrete actions (torch.long), got dtype {dtype}; "
                f"use actions.long() if the values are whole numbers"
            )
        low, high = self._action_low, self._action_high
        wrong = (array < low) | (array >= high)
        if wrong.any():
            bad = _bad_values(array, np.flatnonzero(wrong))
            raise ValueError(f"discrete actions must lie in [{low}, {high - 1}], got {bad}")
        return array if array.dtype is _INT64 else array.astype(np.int64)

    def step(self, actions: Tensor | Action) -> EnvStep:
        """Step every copy with ``actions`` (``[B]`` long or ``[B, action_dim]`` float).

        Validate everything first, then step: bad actions (wrong shape or dtype, a discrete
        action out of range, a continuous one not finite or beyond the space's dtype,
        actions on the meta device) raise a ``ValueError`` (``TypeError`` for what is not a
        tensor) before any copy steps, and leave the environment as it was.
        """
        pending = self._reset_pending()
        obs_np, reward_np, terminated_np, truncated_np, final = self._step_arrays(actions)
        obs = self._convert(obs_np)
        device = None if self._convert.on_cpu else self._device
        next_obs = obs
        if final is not None:  # same-step mode: the true successors of the ended copies
            next_obs = self._convert(_with_final_rows(obs_np, final))
        autoreset = self._no_reset if pending is None else _tensor(pending, _BOOL, device)
        return EnvStep._trusted(
            obs,
            next_obs,
            _tensor(reward_np, _FLOAT32, device),
            _tensor(terminated_np, _BOOL, device),
            _tensor(truncated_np, _BOOL, device),
            autoreset,
        )

    def _reset_pending(self) -> np.ndarray | None:
        """Next-step mode: ``[B]`` bool, the copies whose next step is an auto-reset (they
        ended at the last step); None in same-step mode and after a reset."""
        if self._same_step_reset or self._last_flags is None:
            return None
        return self._last_flags[0] | self._last_flags[1]

    def _step_arrays(
        self, actions: Tensor | Action, rows: np.ndarray | None = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, Any] | None]:
        """``step`` in gymnasium's numpy arrays (what the collectors record, converting
        once per ``collect``): ``(obs, reward, terminated, truncated, final)``, where
        ``final`` is None or, in same-step mode, ``(mask, rows)``: the final observations
        of the copies that just ended.

        ``rows`` (next-step mode, all the copies but those that reset at this step): the
        actions are those of these copies only; the resetting copies ignore theirs."""
        if self._closed or self._needs_reset:
            self._check_open()
            raise RuntimeError("call reset() before step()")
        array = self._to_numpy_actions(actions, rows)
        obs, reward, terminated, truncated, info = self._gym_env.step(array)
        if self._copy_obs:  # (gymnasium's buffer: the callers keep what this returns)
            obs = obs.copy() if type(obs) is np.ndarray else _tree_map(np.copy, obs)
        self._last_flags = terminated, truncated
        final = None
        if self._same_step_reset and ("_final_obs" in info or "final_obs" in info):
            final = _final_rows(info, terminated, truncated)
        return obs, reward, terminated, truncated, final

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close every copy (and subprocesses in asynchronous mode). Idempotent."""
        if not self._closed:
            self._gym_env.close()
            self._closed = True

    def __enter__(self) -> VecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "same-step" if self._same_step_reset else "next-step"
        return (
            f"VecEnv({self._env_name!r}, num_envs={self._num_envs}, {mode} reset, "
            f"{self._vectorization_mode})"
        )
