"""The vectorized environment: ``B`` copies of a gymnasium environment that speak torch.

:class:`VecEnv` wraps ``gymnasium.make_vec`` (a natively vectorized environment steps its
copies with array operations). Two auto-reset modes (gymnasium's ``AutoresetMode``), because
learners need different data (docs/guide/vecenv.md shows both step by step):

- **Next-step** (default): the step that ends an episode returns its final observation; the
  *next* step ignores that copy's action and returns a new episode's first observation
  (reward 0, not done). That row, flagged in ``EnvStep.autoreset``, is not a transition.
- **Same-step** (``same_step_reset=True``): the ending step already returns the new
  episode's first observation in ``obs`` and the final one in ``next_obs``: every step is a
  transition, as fixed-length ``[T, B]`` rollouts need.

What not to get wrong: ``terminated`` is a terminal state (its value is 0: do not bootstrap);
``truncated`` is an episode cut short, e.g. by a time limit (bootstrap from ``next_obs``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array
from torch import Tensor

from rl_mind._validation import as_int, checked_device
from rl_mind.core import Action, Observation, TensorStruct

__all__ = ["EnvStep", "VecEnv"]
_Wrapper = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]
_FLOAT32, _BOOL, _INT64 = np.dtype(np.float32), np.dtype(np.bool_), np.dtype(np.int64)


@dataclasses.dataclass(frozen=True)
class EnvStep(TensorStruct):
    """What ``VecEnv.step`` returns, one row per copy."""

    obs: Observation  # [B, ...] what to act on next (after an auto-reset: a new episode's first)
    next_obs: Observation  # [B, ...] the true successor of the observation acted on
    reward: Tensor  # [B] float32
    terminated: Tensor  # [B] bool: a terminal state was reached (no bootstrap)
    truncated: Tensor  # [B] bool: the episode was cut short (bootstrap from next_obs)
    autoreset: Tensor  # [B] bool, next-step mode: the row only reset its copy (no transition)

    @property
    def done(self) -> Tensor:
        """``[B]`` bool: the episode ended at this step (terminated or truncated)."""
        return self.terminated | self.truncated


@functools.cache
def dict_struct_class(keys: tuple[str, ...]) -> type[TensorStruct]:
    """A ``TensorStruct`` subclass with one field per key of a ``Dict`` space."""
    if bad := [key for key in keys if not key.isidentifier()]:
        raise ValueError(
            f"Dict observation keys {bad} are not valid Python identifiers, so they cannot "
            f"become fields; rename them with a gymnasium observation wrapper"
        )
    fields = [(key, Any) for key in keys]
    cls = dataclasses.make_dataclass("DictObservation", fields, bases=(TensorStruct,), frozen=True)
    cls.__module__ = __name__
    return cls


class ObsConverter:
    """numpy (gymnasium) observations -> torch, for one observation space."""

    def __init__(self, space: spaces.Space[Any], device: torch.device) -> None:
        self.device, self.on_cpu = device, device.type == "cpu"
        self.dtype: torch.dtype | None = None  # (None: keep the array's dtype)
        self.children: dict[str, ObsConverter] | None = None  # (Dict spaces: one per key)
        if isinstance(space, spaces.Dict):
            self.children = {key: ObsConverter(sub, device) for key, sub in space.spaces.items()}
            self.struct = dict_struct_class(tuple(space.spaces))
        elif isinstance(space, spaces.Box):
            self.dtype = torch.float32 if np.issubdtype(space.dtype, np.floating) else None
        elif isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
            self.dtype = torch.long
        else:
            kinds = "Box, Discrete, MultiDiscrete, MultiBinary and Dict"
            raise TypeError(f"VecEnv supports {kinds} observation spaces, got {space}")

    def __call__(self, batch: Any) -> Observation:
        """``batch`` as a tensor (or a struct of them, for a ``Dict`` space)."""
        if self.children is not None:
            return self.struct(**{key: f(batch[key]) for key, f in self.children.items()})
        if type(batch) is not np.ndarray or not batch.flags.writeable:
            batch = np.array(batch)  # a copy we own (gymnasium may reuse its buffers)
        tensor = torch.from_numpy(batch)
        if self.dtype is not None and tensor.dtype is not self.dtype:  # (dtypes are singletons)
            tensor = tensor.to(self.dtype)
        return tensor if self.on_cpu else tensor.to(self.device)


def _tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``fn`` leaf by leaf over numpy observations (arrays, or dicts of them; ``rest`` alike)."""
    if isinstance(tree, Mapping):
        return {key: _tree_map(fn, tree[key], *(r[key] for r in rest)) for key in tree}
    return fn(tree, *rest)


def _tensor(array: Any, dtype: np.dtype[Any], device: torch.device | None) -> Tensor:
    """A [B] numpy array as a tensor of ``dtype`` on ``device`` (None: CPU), copied if need be."""
    tensor = torch.from_numpy(np.asarray(array, dtype))
    return tensor if device is None else tensor.to(device)


def _bad_values(array: np.ndarray, bad: np.ndarray) -> str:
    """The actions ``array`` for an error message: all when few, else the wrong rows ``bad``."""
    if array.size <= 16:
        return str(array.tolist())
    shown = ", ".join(f"{array[row]} (row {row})" for row in bad[:5].tolist())
    more = f" and {bad.size - 5} more" if bad.size > 5 else ""
    return f"{shown}{more}, among {array.size} actions"


def env_spec(env_name: Any, owner: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_name`` (an id), else an error naming ``owner``."""
    if not isinstance(env_name, str):  # (an environment object, say: name its id)
        made_from = getattr(getattr(env_name, "spec", None), "id", None)
        hint = f" (pass its id, {made_from!r}, instead)" if isinstance(made_from, str) else ""
        raise TypeError(
            f"{owner}: env_name must be a gymnasium id (str), such as 'CartPole-v1', got "
            f"{type(env_name).__name__}{hint}"
        )
    try:
        return gym.spec(env_name)
    except gym.error.Error as error:  # (gymnasium's message names the close matches)
        hint = ""  # importing rl_mind alone registers none of the package's own ids
        own = ("rl_mind/", "CartPoleContinuous", "MazeMDP")
        if env_name.startswith(own) and "rl_mind.envs" not in sys.modules:
            ids = ["CartPoleContinuous-v1", "MazeMDP-v0", "rl_mind/PongDuel-v0"]
            hint = f"; the package's own environments {ids} are registered by `import rl_mind.envs`"
        raise ValueError(f"unknown environment id {env_name!r}: {error}{hint}") from None


def _checked_seed(seed: Any, owner: str) -> int | None:
    """``seed`` as None or an int >= 0 (of any size, numpy integers too), else an error."""
    value = None if seed is None else as_int(seed)
    if seed is not None and (value is None or value < 0):
        kind = TypeError if value is None else ValueError
        raise kind(f"{owner}: seed must be None or an int >= 0, got {seed!r}")
    return value


def _checked_wrappers(wrappers: Any) -> list[_Wrapper]:
    """``wrappers`` as a list of callables, each checked to return an environment when applied."""
    if callable(wrappers) or not isinstance(wrappers, Sequence) or isinstance(wrappers, str):
        name = getattr(wrappers, "__name__", type(wrappers).__name__)
        got = f"{name} alone; wrap it in a list: wrappers=[{name}]"  # (a wrapper alone)
        if not callable(wrappers):
            got = f"{type(wrappers).__name__}; use () for none"
        raise TypeError(
            f"VecEnv: wrappers must be a list or tuple of wrapper constructors (env -> env), "
            f"got {got}"
        )
    for i, wrapper in enumerate(wrappers):
        if not callable(wrapper):
            raise TypeError(
                f"VecEnv: wrappers[{i}] is {wrapper!r} ({type(wrapper).__name__}), expected "
                f"a wrapper constructor (a callable env -> env, e.g. gymnasium.wrappers.TimeLimit)"
            )
    # (partials of a module-level function, not closures: the async copies must pickle them)
    return [functools.partial(_apply_wrapper, wrapper, i) for i, wrapper in enumerate(wrappers)]


def _apply_wrapper(wrapper: _Wrapper, i: int, env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    if not isinstance(wrapped := wrapper(env), gym.Env):
        raise TypeError(
            f"VecEnv: wrappers[{i}] returned a {type(wrapped).__name__}, expected the wrapped "
            f"gymnasium environment (a wrapper function must return the environment it wraps)"
        )
    return wrapped


def _size(space: Any, kind: type[Any], name: str, hint: str = "") -> int:
    if not isinstance(space, kind):
        of = "observation" if name in ("observation_dim", "n_states") else "action"
        raise TypeError(f"{name} is defined for {kind.__name__} {of} spaces, got {space}{hint}")
    return int(space.n) if kind is spaces.Discrete else int(np.prod(space.shape))


class _UnwrappedCopies(tuple[Any, ...]):
    """The copies' unwrapped environments; an attribute is copy 0's (as in rl-mind 0.4)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self[0], name)


def _read_only(attribute: str) -> Any:  # a property; the class annotation gives its type
    return property(lambda self: getattr(self, attribute))


class VecEnv(contextlib.AbstractContextManager["VecEnv"]):
    """``num_envs`` copies of the gymnasium environment ``env_name`` (a registered id), in torch
    tensors on ``device`` (actions may come from any device). ``seed`` seeds the first ``reset``
    and the action space; ``same_step_reset`` picks the auto-reset mode; ``wrappers`` (``env ->
    env`` constructors) wrap each copy in order; ``asynchronous`` runs each copy in a subprocess;
    ``env_kwargs`` go to the environment's constructor. Bad arguments or actions are refused
    before anything is built or stepped."""

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        seed: int | None = None,
        same_step_reset: bool = False,
        wrappers: Sequence[_Wrapper] = (),
        *,
        asynchronous: bool = False,
        device: torch.device | str | None = None,
        **env_kwargs: Any,
    ) -> None:
        if (count := as_int(num_envs)) is None or count <= 0:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self._seed = _checked_seed(seed, "VecEnv")
        self._device = checked_device(device, "VecEnv")
        checked_wrappers = _checked_wrappers(wrappers)
        self._env_name, self._num_envs, self._wrappers = env_name, count, tuple(wrappers)
        self._same_step_reset, self._env_kwargs = bool(same_step_reset), dict(env_kwargs)
        spec = env_spec(env_name, "VecEnv")
        try:
            self._gym_env = self._make(spec, checked_wrappers, asynchronous)
        except gym.error.DependencyNotInstalled as error:  # Box2D, MuJoCo: the package's extras
            extra = next((x for x in ("box2d", "mujoco") if x in str(spec.entry_point)), "envs")
            raise gym.error.DependencyNotInstalled(
                f'{spec.id} needs gymnasium\'s {extra} environments: pip install "rl-mind[{extra}]" '
                f"(then restart the kernel). gymnasium said: {error}"
            ) from error
        self._copy_obs = self._vectorization_mode != "vector_entry_point"  # (see _make)
        self._observation_space = self._gym_env.single_observation_space
        self._action_space = space = self._gym_env.single_action_space
        self._convert = ObsConverter(self._observation_space, self._device)
        self._continuous = isinstance(space, spaces.Box)
        if isinstance(space, spaces.Discrete):
            self._action_low, self._action_high = int(space.start), int(space.start + space.n)
        elif not isinstance(space, spaces.Box):
            raise TypeError(f"VecEnv supports Discrete and Box action spaces, got {space}")
        self._action_dtype = dtype = np.dtype(space.dtype)  # type: ignore[arg-type]
        # (a numpy scalar of the space's dtype: a narrower action is compared in that dtype)
        self._action_limit = np.finfo(dtype).max if dtype.kind == "f" else None
        self._no_reset = torch.zeros(count, dtype=torch.bool, device=self._device)  # (shared)
        self._last_flags: tuple[np.ndarray, np.ndarray] | None = None
        self._needs_reset, self._closed = True, False
        if self._seed is not None:
            space.seed(self._seed)

    def _make(self, spec: Any, wrappers: list[Any], asynchronous: bool) -> VectorEnv[Any, Any, Any]:
        """gymnasium's vector environment: native if the id has one for our auto-reset mode."""
        mode = AutoresetMode.SAME_STEP if self._same_step_reset else AutoresetMode.NEXT_STEP
        kwargs = dict(self._env_kwargs)
        if spec.vector_entry_point is not None and not wrappers and not asynchronous:
            creator = spec.vector_entry_point
            if isinstance(creator, str):
                creator = gym.envs.registration.load_env_creator(creator)
            with contextlib.suppress(TypeError, ValueError):  # (a creator that takes the mode)
                inspect.signature(creator).bind_partial(autoreset_mode=mode)
                kwargs["autoreset_mode"] = mode
            env = gym.make_vec(spec.id, self._num_envs, "vector_entry_point", **kwargs)
            if env.metadata.get("autoreset_mode") == mode:
                self._vectorization_mode = "vector_entry_point"
                return env
            env.close()  # it does another auto-reset mode: fall back to sync
        self._vectorization_mode = name = "async" if asynchronous else "sync"
        vector_kwargs = {"autoreset_mode": mode, "copy": False}  # (we copy its one buffer)
        return gym.make_vec(spec.id, self._num_envs, name, vector_kwargs, wrappers, **kwargs)

    num_envs: int = _read_only("_num_envs")
    env_name: str = _read_only("_env_name")
    same_step_reset: bool = _read_only("_same_step_reset")
    device: torch.device = _read_only("_device")
    wrappers: tuple[_Wrapper, ...] = _read_only("_wrappers")
    vectorization_mode: str = _read_only("_vectorization_mode")  # native, "sync" or "async"
    observation_space: spaces.Space[Any] = _read_only("_observation_space")  # (one copy's)
    action_space: spaces.Space[Any] = _read_only("_action_space")  # (one copy's)
    is_continuous: bool = _read_only("_continuous")  # (a Box action space, not a Discrete one)
    gym_env: VectorEnv[Any, Any, Any] = _read_only("_gym_env")

    @property
    def env_kwargs(self) -> dict[str, Any]:
        return dict(self._env_kwargs)  # (a copy: changing it changes nothing here)

    @property
    def observation_dim(self) -> int:
        """The size of a flat ``Box`` observation."""
        hint = " (use n_states)" if isinstance(self._observation_space, spaces.Discrete) else ""
        return _size(self._observation_space, spaces.Box, "observation_dim", hint)

    @property
    def n_states(self) -> int:
        """The number of states of a tabular (``Discrete``) observation space."""
        return _size(self._observation_space, spaces.Discrete, "n_states")

    @property
    def n_actions(self) -> int:
        """The number of discrete actions."""
        return _size(self._action_space, spaces.Discrete, "n_actions", " (use action_dim)")

    @property
    def action_dim(self) -> int:
        """The size of a continuous (``Box``) action."""
        return _size(self._action_space, spaces.Box, "action_dim", " (use n_actions)")

    @property
    def gym_unwrapped(self) -> Any:
        """The copies' unwrapped environments: ``gym_unwrapped[i]`` is copy ``i``'s, and an
        attribute is copy 0's (``env.gym_unwrapped.some_attr``). A natively vectorized or
        asynchronous environment has no copies here: its own unwrapped vector environment."""
        copies = getattr(self._gym_env, "envs", None)
        unwrapped = None if copies is None else _UnwrappedCopies(c.unwrapped for c in copies)
        return self._gym_env.unwrapped if unwrapped is None else unwrapped

    def reset(self, seed: int | None = None) -> Observation:
        """The first observations ``[B, ...]``; copy ``i`` is seeded with ``seed + i`` (a
        natively vectorized environment seeds its own generator with ``seed``)."""
        self._check_open()
        seed = _checked_seed(seed, "VecEnv.reset")
        if seed is None and self._needs_reset:
            seed = self._seed
        obs, _info = self._gym_env.reset(seed=seed)
        self._last_flags, self._needs_reset = None, False
        return self._convert(_tree_map(np.copy, obs) if self._copy_obs else obs)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"VecEnv({self._env_name!r}) is closed")

    def step(self, actions: Tensor | Action) -> EnvStep:
        """Step every copy with ``actions`` (``[B]`` long or ``[B, action_dim]`` float); bad
        actions raise a ``ValueError`` (``TypeError``: not a tensor) before any copy steps."""
        if self._closed or self._needs_reset:
            self._check_open()
            raise RuntimeError("call reset() before step()")
        array = self._to_numpy_actions(actions)
        flags, device = self._last_flags, None if self._convert.on_cpu else self._device
        autoreset = self._no_reset  # (next-step mode: the copies that ended at the last step)
        if flags is not None and not self._same_step_reset:
            autoreset = _tensor(flags[0] | flags[1], _BOOL, device)
        obs_np, reward, terminated, truncated, info = self._gym_env.step(array)
        if self._copy_obs:  # (gymnasium's buffer: the caller keeps what this returns)
            obs_np = obs_np.copy() if type(obs_np) is np.ndarray else _tree_map(np.copy, obs_np)
        self._last_flags = terminated, truncated
        obs = next_obs = self._convert(obs_np)
        if self._same_step_reset and "final_obs" in info:  # the ended copies' true successors
            mask = np.asarray(info.get("_final_obs", terminated | truncated), dtype=bool)
            if mask.any():
                final, space = info["final_obs"], self._observation_space
                if isinstance(final, np.ndarray) and final.dtype == object:  # sync, async: per copy
                    out = create_empty_array(space, mask.sum())
                    final = concatenate(space, final[mask], out)  # type: ignore[arg-type]
                else:  # natively vectorized: one batch
                    final = _tree_map(lambda array: np.asarray(array)[mask], final)
                next_np = _tree_map(np.copy, obs_np)  # (obs keeps the new episodes' first)
                _tree_map(lambda out, rows: operator.setitem(out, mask, rows), next_np, final)
                next_obs = self._convert(next_np)
        return EnvStep._trusted(  # (the rows of one step: their sizes agree)
            obs,
            next_obs,
            _tensor(reward, _FLOAT32, device),
            _tensor(terminated, _BOOL, device),
            _tensor(truncated, _BOOL, device),
            autoreset,
        )

    def _to_numpy_actions(self, actions: Tensor | Action) -> np.ndarray:
        """``actions`` checked and converted for gymnasium."""
        value = actions.value if isinstance(actions, Action) else actions
        if not isinstance(value, Tensor):
            raise TypeError(
                f"step expects a tensor of actions or an Action, got {type(value).__name__}"
            )
        if value.is_meta:
            raise ValueError(
                "step: the actions are on the meta device, which holds no values; compute them "
                "on a real device (e.g. 'cpu')"
            )
        try:  # (detached; copied only from another device)
            array = value.numpy(force=True)
        except TypeError:  # a dtype numpy lacks: a floating-point one is judged as float32
            if not value.is_floating_point():
                raise TypeError(
                    f"expected integer or floating-point actions, got dtype {value.dtype}, which "
                    f"numpy cannot hold"
                ) from None
            array = value.float().numpy(force=True)
        B, dtype = self._num_envs, value.dtype
        if self._continuous:
            shape = (B, *self._action_space.shape)  # type: ignore[misc]
            if array.shape != shape:
                hint = " (use actions.unsqueeze(-1))" if array.shape == (B,) else ""
                raise ValueError(
                    f"expected continuous actions of shape {list(shape)} ([num_envs, action_dim]), "
                    f"got {list(array.shape)}{hint}"
                )
            if array.dtype.kind != "f":
                raise ValueError(f"expected floating-point continuous actions, got dtype {dtype}")
            # finite and in the range of the space's dtype (a float64 beyond it would become inf)
            limit, space_dtype = self._action_limit, self._action_dtype
            fits = np.isfinite(array) if limit is None else np.abs(array) <= limit  # (NaN: False)
            if not fits.all():
                wrong = np.flatnonzero(~fits.reshape(B, -1).all(1))
                fit = f" and must fit the action space's dtype {space_dtype}"
                fit = "" if limit is None else f"{fit} (|a| <= {limit:.4g})"
                raise ValueError(
                    f"continuous actions must be finite{fit}, got {_bad_values(array, wrong)} "
                    f"in rows {wrong.tolist()}"
                )
            return array.astype(space_dtype, copy=False)
        if array.shape != (B,):
            hint = " (squeeze the last dimension)" if array.shape == (B, 1) else ""
            raise ValueError(
                f"expected discrete actions of shape [{B}] ([num_envs]), got {list(array.shape)}{hint}"
            )
        if array.dtype.kind not in "iu":
            raise ValueError(
                f"expected integer discrete actions (torch.long), got dtype {dtype}; "
                f"use actions.long() if the values are whole numbers"
            )
        low, high = self._action_low, self._action_high
        if (outside := (array < low) | (array >= high)).any():
            bad = _bad_values(array, np.flatnonzero(outside))
            raise ValueError(f"discrete actions must lie in [{low}, {high - 1}], got {bad}")
        return array if array.dtype is _INT64 else array.astype(np.int64)

    def close(self) -> None:
        """Close every copy (and subprocesses in asynchronous mode). Idempotent."""
        if not self._closed:
            self._gym_env.close()
            self._closed = True

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "same-step" if self._same_step_reset else "next-step"
        kind = self._vectorization_mode
        return f"VecEnv({self._env_name!r}, num_envs={self._num_envs}, {mode} reset, {kind})"
