"""Evaluation: how well an actor does, a learning curve, the best actor.

:class:`Evaluator` plays one deterministic episode (``actor.act``) in each copy of its own
:class:`~rl_mind.env.VecEnv` every ``every`` training steps, logs the returns to
TensorBoard and keeps a deep copy of the best actor (saved into ``run_dir``, filmed with
:func:`~rl_mind.videos.record_video`). Each evaluation is an :class:`EvalResult`.

What the reader must not get wrong:

- Every evaluation replays the **same episode seeds** (copy ``i`` is reset with
  ``seed + i``), so two evaluations compare actors, not the luck of the starting states.
- Only the **first episode** of each copy counts: copies that finish early keep stepping,
  their rewards masked, until all have finished or ``max_steps`` cuts the others short.
- The actor runs in ``eval()`` mode under ``torch.no_grad()``; its modes are restored after.
- ``best_actor.pt`` (and the ``evaluations.csv`` row) is written before an evaluation is
  recorded: one whose files fail is not.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, overload

import numpy as np
import torch
from torch import Tensor, nn

from rl_mind._compat_04 import deprecated, visualize_best_arguments
from rl_mind._validation import as_int
from rl_mind.bias import Critic, CriticBias

# (the checkpoint and video functions were defined here once: they stay importable from here)
from rl_mind.checkpoints import CheckpointError, load_checkpoint, save_checkpoint  # noqa: F401
from rl_mind.core import ActionT, Actor
from rl_mind.env import VecEnv
from rl_mind.notebook import outputs_directory, video_display
from rl_mind.records import EVALUATIONS_FILE, EvalResult, append_evaluation
from rl_mind.videos import (  # noqa: F401  (actor_policy, write_video: importable from here)
    Wrapper,
    actor_device,
    actor_policy,
    check_action_shape,
    evaluation_mode,
    record_video,
    write_video,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from torch.utils.tensorboard import SummaryWriter

__all__ = ["Evaluator"]  # (EvalResult, defined in rl_mind.records, stays importable from here)


def _check_steps_and_actor(steps: Any, actor: Any, method: str) -> None:
    """``Evaluator.run``'s arguments: a training step count (an int >= 0) and an actor."""
    call = f"Evaluator.{method}"
    if isinstance(steps, nn.Module) and not isinstance(actor, nn.Module):
        raise TypeError(f"{call}(steps, actor): the arguments are swapped (got the actor "
                        f"first); call evaluator.{method}(steps, actor)")  # fmt: skip
    count = as_int(steps)
    if count is None or count < 0:
        raise ValueError(f"{call}: steps (the training steps so far) must be an int >= 0, "
                         f"got {steps!r}")  # fmt: skip
    if not callable(actor):
        raise TypeError(f"{call}: expected an Actor to evaluate, got {type(actor).__name__}")


BEST_ACTOR_FILE = "best_actor.pt"


def _save_best_actor(best: nn.Module, result: EvalResult, path: Path) -> None:
    state = {name: tensor.detach().cpu() for name, tensor in best.state_dict().items()}
    checkpoint = {"state_dict": state, "step": result.step, "mean_return": result.mean,
                  "rewards": result.rewards.clone()}  # fmt: skip
    try:
        save_checkpoint(checkpoint, path)
    except OSError as error:
        raise OSError(f"Evaluator.run: could not save the best actor to {path} ({error}); the "
                      f"evaluation at step {result.step} was not recorded (history, best_reward, "
                      f"best_step and {BEST_ACTOR_FILE} are as they were) and is still due: the "
                      f"next run_if_needed evaluates again") from error  # fmt: skip


class Evaluator(Generic[ActionT]):
    """Evaluates an actor every ``every`` training steps, logs it, and keeps the best one.

    Args:
        env: the evaluation environment, its own (not the training one): a gymnasium id,
            from which a ``VecEnv`` of ``num_episodes`` copies is built, or a ``VecEnv`` in
            next-step reset mode (same-step reset is refused: evaluation plays whole
            episodes and never needs it).
        every: evaluate once ``every`` more training steps have passed (:meth:`run_if_needed`).
        run_dir: a folder (created if needed) for the best actor's checkpoint
            ``best_actor.pt`` and :meth:`visualize_best`'s videos; with ``logs=True``, also
            for the logs.
        writer: a ``torch.utils.tensorboard.SummaryWriter`` that gets the scalars
            ``eval/mean_return``, ``eval/std_return``, ``eval/min_return``,
            ``eval/max_return``, ``eval/mean_length`` and the ``extras`` (against the step).
        logs: write the logs into ``run_dir`` (required then): TensorBoard event files
            (unless ``writer`` is given) and ``evaluations.csv``, a row per evaluation
            (``step, mean_return, std_return, min_return, max_return, mean_length``, then the
            ``extras`` by name). Off by default, as in rl-mind 0.4: no log files without a
            writer.
        num_episodes: the number of copies ``B`` (one episode each) when ``env`` is an id.
        seed: copy ``i`` is reset with ``seed + i`` at every evaluation. ``None``: as
            rl-mind 0.4, reset without a seed (a ``VecEnv`` its own seed at its first reset,
            then its generators go on), so each evaluation starts from other states.
        max_steps: cap on the steps of one evaluation; unfinished episodes are cut there.
        wrappers: for ``VecEnv`` (and :meth:`visualize_best`'s video) when ``env`` is an id.
        critic: measure the critic's bias at each evaluation, ``extras["critic_bias"]``
            (:mod:`rl_mind.bias`): ``critic(obs, action) -> Q [N]``.
        gamma: the discount the critic was trained with (required with ``critic``).
        **env_kwargs: passed on as ``wrappers`` are.
    """

    def __init__(
        self,
        env: VecEnv | str,
        every: int,
        run_dir: str | os.PathLike[str] | None = None,
        writer: SummaryWriter | None = None,
        *,
        num_episodes: int = 8,
        seed: int | None = 0,
        max_steps: int = 10_000,
        wrappers: Sequence[Wrapper] = (),
        logs: bool = False,
        critic: Critic | None = None,
        gamma: float | None = None,
        **env_kwargs: Any,
    ) -> None:
        self.critic_bias = CriticBias.from_arguments(critic, gamma)
        if logs not in (True, False) or (logs and run_dir is None):
            raise ValueError(f"Evaluator: logs must be True (with a run_dir to write the logs "
                             f"into) or False, got logs={logs!r}, run_dir={run_dir!r}")  # fmt: skip
        every_count, steps_cap = as_int(every), as_int(max_steps)
        seed_value = None if seed is None else as_int(seed)
        if every_count is None or every_count <= 0:
            raise ValueError(f"Evaluator: every must be a positive number of steps, got {every!r}")
        if steps_cap is None or steps_cap <= 0:
            raise ValueError(f"Evaluator: max_steps must be a positive int, got {max_steps!r}")
        if seed is not None and (seed_value is None or seed_value < 0):  # (not at a reset)
            raise ValueError(f"Evaluator: seed must be an int >= 0 (copy i is reset with seed + i "
                             f"at every evaluation) or None (0.4's unseeded resets), got "
                             f"{seed!r}")  # fmt: skip
        if writer is not None and not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(f"Evaluator: writer must be a torch.utils.tensorboard.SummaryWriter, "
                            f"got {type(writer).__name__} (for a log folder, pass "
                            f"run_dir)")  # fmt: skip
        self.run_dir = Path(run_dir).expanduser().resolve() if run_dir is not None else None
        if self.run_dir is not None and self.run_dir.exists() and not self.run_dir.is_dir():
            raise ValueError(f"Evaluator: run_dir {self.run_dir} is a file; expected a folder "
                             f"(e.g. rl_mind.run_directory('my_run'))")  # fmt: skip
        self.every, self.max_steps, self.seed = every_count, steps_cap, seed_value
        self._owns_env = isinstance(env, str)
        if isinstance(env, str):
            env = VecEnv(env, num_episodes, seed=seed_value, wrappers=wrappers, **env_kwargs)
        elif not isinstance(env, VecEnv):
            raise TypeError(f"Evaluator: env must be a gymnasium id or a VecEnv, got "
                            f"{type(env).__name__}")  # fmt: skip
        elif env.same_step_reset:
            raise ValueError("Evaluator: the evaluation VecEnv uses same-step reset; evaluation "
                             "plays whole episodes, one per copy, so build it with "
                             "same_step_reset=False (or pass the environment id and let the "
                             "Evaluator build its own)")  # fmt: skip
        elif wrappers or env_kwargs:
            raise ValueError("Evaluator: wrappers and environment kwargs are only used when env "
                             "is an id; the given VecEnv is already built")  # fmt: skip
        self.env: VecEnv = env
        if self.run_dir is not None:  # (only now: a refused environment leaves no folder)
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
            except BaseException:
                if self._owns_env:
                    self.env.close()
                raise
        self.logs = logs
        self.history: list[EvalResult] = []
        self.best_reward: float = -math.inf  # (as in rl-mind 0.4: formats before any evaluation)
        self.best_actor: Actor[ActionT] | None = None
        self.best_step: int | None = None
        self._writer = writer
        self._owns_writer = False
        self._last_step = 0

    @property
    def writer(self) -> SummaryWriter | None:
        """The writer given, else (``logs=True``) one made in ``run_dir`` at the first
        evaluation, else None."""
        if self._writer is None and self.logs and self.run_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.run_dir))
            self._owns_writer = True
        return self._writer

    @writer.setter
    def writer(self, writer: SummaryWriter | None) -> None:  # (0.4's writer was an attribute)
        if writer is not None and not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(
                f"Evaluator.writer must be a SummaryWriter, got {type(writer).__name__}"
            )
        if self._owns_writer and self._writer is not None and writer is not self._writer:
            self._writer.close()
        self._writer, self._owns_writer = writer, False

    @property
    def best_checkpoint_path(self) -> Path | None:
        """``run_dir / "best_actor.pt"`` (None without a ``run_dir``)."""
        return self.run_dir / BEST_ACTOR_FILE if self.run_dir is not None else None

    def run_if_needed(self, steps: int, actor: Actor[ActionT]) -> EvalResult | None:
        """Evaluate ``actor`` if ``every`` training steps have passed since the last time.

        ``steps``: the training steps so far. As in rl-mind 0.4, the first evaluation runs once
        ``steps >= every``, the next once ``steps`` is ``every`` past the last one's. Returns
        the :class:`EvalResult` when it ran, else ``None``."""
        _check_steps_and_actor(steps, actor, "run_if_needed")
        if steps - self._last_step < self.every:
            return None
        return self.run(steps, actor)

    @overload
    def run(self, steps: int, actor: Actor[ActionT]) -> EvalResult: ...
    @overload
    def run(self, steps: Actor[ActionT]) -> Tensor: ...  # (rl-mind 0.4's call, deprecated)

    def run(self, steps: Any, actor: Any = None) -> EvalResult | Tensor:
        """Evaluate ``actor`` now: one deterministic episode per copy, logged at ``steps``.

        A best actor's ``best_actor.pt`` is saved before anything is recorded: if that fails
        (a full disk), nothing changes and the evaluation is still due. The TensorBoard
        scalars are written last. rl-mind 0.4's ``run(actor)`` still works (with a
        ``DeprecationWarning``): it returns the returns ``[B]`` and records nothing."""
        if actor is None and isinstance(steps, Actor):
            deprecated("Evaluator.run(actor): call evaluator.run(steps, actor), which also "
                        "records the evaluation; its EvalResult's .rewards are what run(actor) "
                        "returned")  # fmt: skip
            return self._play(steps)[0]
        _check_steps_and_actor(steps, actor, "run")
        rewards, lengths, extras = self._play(actor)
        mean = float(rewards.mean())
        is_best = mean > self.best_reward
        result = EvalResult(int(steps), rewards, is_best, lengths, extras)
        writer = self.writer  # (made at the first run: a folder it cannot write fails here)
        best = None
        if is_best:
            best = copy.deepcopy(actor)
            for parameter in best.parameters():
                parameter.grad = None
            if self.run_dir is not None:
                _save_best_actor(best, result, self.run_dir / BEST_ACTOR_FILE)
        if self.logs and self.run_dir is not None:
            append_evaluation(result, self.run_dir / EVALUATIONS_FILE)
        # (the files are written: only now is the evaluation recorded)
        self.history.append(result)
        self._last_step = int(steps)
        if best is not None:
            self.best_reward, self.best_step, self.best_actor = mean, int(steps), best
        if writer is not None:
            self._log(writer, result)
        return result

    def _play(self, actor: Actor[ActionT]) -> tuple[Tensor, Tensor, dict[str, float]]:
        """Returns and lengths ``[B]`` (CPU) of the first episode of each copy, and the
        extras (the critic's bias)."""
        env, device, B = self.env, actor_device(actor), self.env.num_envs
        returns = torch.zeros(B, dtype=torch.float32, device=env.device)
        lengths = torch.zeros(B, dtype=torch.long, device=env.device)
        finished = torch.zeros(B, dtype=torch.bool, device=env.device)
        recording = self.critic_bias.recording(B) if self.critic_bias is not None else None
        with evaluation_mode(actor):
            obs = env.reset(seed=self.seed)
            for _ in range(self.max_steps):
                actions = check_action_shape(actor.act(obs.to(device)), env.action_space, B)
                step = env.step(actions)
                if recording is not None:
                    recording.add(obs, actions, step)
                # Copies whose first episode is over keep stepping, their rewards masked.
                running = ~finished
                returns += step.reward * running
                lengths += running.long()
                finished |= step.done
                if bool(finished.all()):
                    break
                obs = step.obs
            extras = {} if recording is None else {"critic_bias": recording.bias(actor, device)}
        return returns.cpu(), lengths.cpu(), extras

    @staticmethod
    def _log(writer: SummaryWriter, result: EvalResult) -> None:
        for name, value in {**result.statistics(), **result.extras}.items():
            writer.add_scalar(f"eval/{name}", value, global_step=result.step)
        if callable(getattr(writer, "flush", None)):  # (0.4 needed add_scalar only)
            writer.flush()

    def plot(self, ax: Axes | None = None, path: str | os.PathLike[str] | None = None) -> Axes:
        """The learning curve: mean evaluation return ± std against training steps, the
        best evaluation marked. Draws on ``ax`` (a new figure if None), saves a PNG to
        ``path`` if given, and returns the axes."""
        if not self.history:
            raise ValueError("Evaluator.plot: no evaluation has run yet (call run_if_needed)")
        import matplotlib.pyplot as plt

        if ax is None:
            _figure, ax = plt.subplots(figsize=(6, 3.5))
        steps = np.array([result.step for result in self.history])
        means, stds = np.array([(result.mean, result.std) for result in self.history]).T
        ax.plot(steps, means, marker="o", markersize=3, label="mean return")
        ax.fill_between(steps, means - stds, means + stds, alpha=0.25, label="± std")
        if self.best_step is not None:
            best = f"best ({self.best_reward:.1f})"
            ax.plot([self.best_step], [self.best_reward], marker="*", markersize=14,
                    linestyle="none", color="tab:red", label=best)  # fmt: skip
        ax.set_xlabel("training steps")
        ax.set_ylabel("evaluation return")
        ax.set_title(f"{self.env.env_name}: {self.env.num_envs} evaluation episodes")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        if path is not None:
            figure: Any = ax.figure
            figure.savefig(Path(path).expanduser(), dpi=100, bbox_inches="tight")
        return ax

    def visualize_best(
        self,
        directory: str | os.PathLike[str] | None = None,
        *legacy: Any,
        seed: int | None = None,
        max_steps: int = 1000,
        fps: float | None = None,
        video: bool | None = None,
        trimmer: Any = None,
        width: Any = None,
    ) -> Path:
        """Film one episode of the best actor (:func:`record_video`) and show it: inline in a
        notebook, the file path printed from a script. The video goes to ``directory``
        (default: ``run_dir``, else ``outputs_directory()/videos``); returns its path.

        rl-mind 0.4's calls work, with a ``DeprecationWarning`` that names the new spelling:
        its positional arguments ``visualize_best(video, seed, trimmer, fps, width)``
        (``visualize_best(True, 3)``), and the keywords ``video``, ``trimmer`` and ``width``
        (ignored: a video is always filmed, and 0.4's player is gone)."""
        directory, seed, fps = visualize_best_arguments(
            directory, legacy, seed=seed, fps=fps, video=video, trimmer=trimmer, width=width
        )
        if self.best_actor is None:
            raise RuntimeError("Evaluator.visualize_best: no evaluation has run yet, so there is "
                               "no best actor; call run_if_needed(steps, actor) first")  # fmt: skip
        if directory is None:
            directory = self.run_dir if self.run_dir is not None else outputs_directory() / "videos"
        kwargs = self.env.env_kwargs  # (the environment as the evaluation's, filmed)
        kwargs.pop("render_mode", None)
        path = record_video(self.best_actor, self.env.env_name, directory,
                            seed=(self.seed or 0) if seed is None else seed, max_steps=max_steps,
                            fps=fps, wrappers=self.env.wrappers,
                            name=f"best-{self.env.env_name}", **kwargs)  # fmt: skip
        video_display(path)
        return path

    def close(self) -> None:
        """Close the environment and the writer if the evaluator made them. Idempotent."""
        if self._owns_env:
            self.env.close()
        if self._owns_writer and self._writer is not None:
            self._writer.close()
            self._writer = None
            self._owns_writer = False

    def __enter__(self) -> Evaluator[ActionT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        best = f"{self.best_reward:.2f}" if self.best_step is not None else "none"
        counts = f"episodes={self.env.num_envs}, evaluations={len(self.history)}, best={best}"
        return f"Evaluator({self.env.env_name!r}, every={self.every}, {counts})"
