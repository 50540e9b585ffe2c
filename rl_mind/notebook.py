"""Notebook helpers: where outputs go, TensorBoard, videos, progress bars, the compute profile.

The same practical runs in three places: a student's notebook (Jupyter, VS Code, Colab),
a script, and CI. This module hides the differences:

- :func:`is_notebook` tells a notebook kernel from a script or IPython's terminal;
- :func:`outputs_directory` and :func:`run_directory` give every run its own fresh folder
  (TensorBoard logs, checkpoints, videos), never reused, even when two runs start in the
  same second;
- :func:`setup_tensorboard` says (or embeds) how to open the dashboard on that folder;
- :func:`video_display` embeds an ``.mp4`` in the notebook itself (base64), so that the
  video is still there when the saved notebook is opened elsewhere; a script prints the path;
- :func:`progress_bar` is a tqdm bar with the latest evaluation in its postfix: a widget in
  a notebook that has ``ipywidgets`` (replaced, when it closes, by a static picture of its
  final state that a saved notebook keeps), a text bar in one that has not (no warning
  either way), a text bar in a terminal;
- :class:`Profile` sizes budgets: ``Profile.pick(full, fast_test=...)`` returns the tiny
  fast-test value when the environment variable ``RL_MIND_FAST_TEST=1`` is set (CI sets
  it), so that every practical runs in seconds there. rl-mind 0.4's switch,
  ``NOTEBOOK_PROFILE=fast-test``, still works (with a ``DeprecationWarning``): a course's CI
  that sets it keeps running the tiny budgets.

What the reader must not get wrong: nothing here imports tensorboard, tqdm or IPython at
import time; each is imported inside the function that needs it.
"""

from __future__ import annotations

import datetime
import numbers
import os
import re
import shutil
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = [
    "FAST_TEST_ENV_VAR",
    "LEGACY_PROFILE_ENV_VAR",
    "OUTPUTS_ENV_VAR",
    "ProgressBar",
    "Profile",
    "is_notebook",
    "outputs_directory",
    "progress_bar",
    "run_directory",
    "setup_tensorboard",
    "video_display",
]

FAST_TEST_ENV_VAR = "RL_MIND_FAST_TEST"
"""Set to ``1`` to switch every :meth:`Profile.pick` to its fast-test value."""

LEGACY_PROFILE_ENV_VAR = "NOTEBOOK_PROFILE"
"""rl-mind 0.4's switch: ``NOTEBOOK_PROFILE=fast-test`` works as ``RL_MIND_FAST_TEST=1``."""

OUTPUTS_ENV_VAR = "RL_MIND_OUTPUTS"
"""Overrides the folder returned by :func:`outputs_directory`."""

T = TypeVar("T")


# ---------------------------------------------------------------------- where are we?
def is_notebook() -> bool:
    """True in a notebook kernel (Jupyter, VS Code, Colab); False in a script or IPython's
    terminal."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    if shell is None:
        return False
    kind = type(shell)
    name = kind.__name__
    module = kind.__module__ or ""
    if name == "ZMQInteractiveShell" or module.startswith("google.colab"):
        return True
    # Other front-ends derive from the ZMQ shell (e.g. some VS Code / Colab versions).
    return any(base.__name__ == "ZMQInteractiveShell" for base in kind.__mro__)


# ---------------------------------------------------------------------- folders
def outputs_directory() -> Path:
    """The absolute folder where runs, videos and logs are written (created if needed).

    ``$RL_MIND_OUTPUTS`` if set, else ``outputs/`` in the current working directory.
    """
    configured = os.environ.get(OUTPUTS_ENV_VAR)
    path = Path(configured).expanduser() if configured else Path.cwd() / "outputs"
    path = path.resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"the outputs directory {path} exists and is a file; remove it or set "
            f"${OUTPUTS_ENV_VAR} to a folder"
        )
    path.mkdir(parents=True, exist_ok=True)
    return path


_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A file-name-safe version of ``name`` (``rl_mind/PongDuel-v0`` -> ``rl_mind_PongDuel-v0``)."""
    cleaned = _NAME_RE.sub("_", name).strip("._")
    return cleaned or "run"


def run_directory(name: str = "run", root: str | os.PathLike[str] | None = None) -> Path:
    """A fresh, timestamped folder ``<root>/<name>-YYYYmmdd-HHMMSS[-k]``, created and never
    reused.

    ``root`` defaults to :func:`outputs_directory`. Two runs started in the same second
    (threads or processes) get distinct folders: the folder is claimed with an atomic
    ``mkdir``, and a counter ``-2``, ``-3``, ... is appended when the name is taken.
    Returns the absolute path.
    """
    if not isinstance(name, str):
        raise TypeError(f"run_directory(name): expected a str, got {type(name).__name__}")
    base = Path(root).expanduser().resolve() if root is not None else outputs_directory()
    if base.exists() and not base.is_dir():
        raise ValueError(f"run_directory: the root {base} is a file, expected a folder")
    base.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    stem = f"{safe_name(name)}-{stamp}"
    for k in range(1, 100_000):
        candidate = base / (stem if k == 1 else f"{stem}-{k}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RuntimeError(f"run_directory: could not find a free name for {stem} in {base}")


# ---------------------------------------------------------------------- TensorBoard
def setup_tensorboard(
    log_dir: str | os.PathLike[str] | None = None, *, embed: bool = False
) -> Path:
    """Show how to open TensorBoard on ``log_dir`` (default :func:`outputs_directory`).

    In a notebook it displays the two magics to run (``%load_ext tensorboard`` and
    ``%tensorboard --logdir ...``), or, with ``embed=True``, runs them to embed the
    dashboard in the notebook; ``%tensorboard`` then starts the ``tensorboard`` beside the
    kernel's interpreter (``sys.executable``'s folder), also when Jupyter was started from a
    virtual environment without activating it (it sets ``$TENSORBOARD_BINARY``, unless set
    already). In a script it prints the shell command. Either way it
    returns the absolute log directory (created if needed); point ``SummaryWriter`` or
    :func:`run_directory` at it (runs in sub-folders appear as separate curves).
    """
    path = Path(log_dir).expanduser().resolve() if log_dir is not None else outputs_directory()
    if path.exists() and not path.is_dir():
        raise ValueError(f"setup_tensorboard: {path} is a file, expected a folder")
    path.mkdir(parents=True, exist_ok=True)
    program = _tensorboard_program()
    shown = f'"{program}"' if " " in program else program  # (a folder with a space)
    command = f'{shown} --logdir "{path}"'
    if is_notebook():
        from IPython import get_ipython
        from IPython.display import Markdown, display

        # ``%tensorboard`` starts the program named by $TENSORBOARD_BINARY, else the first
        # `tensorboard` on PATH: the kernel's own, also when Jupyter was started from a
        # virtual environment without activating it
        if program != "tensorboard":
            os.environ.setdefault("TENSORBOARD_BINARY", program)
        shell = get_ipython()
        if embed and shell is not None:
            shell.run_line_magic("load_ext", "tensorboard")
            shell.run_line_magic("tensorboard", f'--logdir "{path}"')
        else:
            display(
                Markdown(
                    f"TensorBoard logs: `{path}`\n\n"
                    f"Open the dashboard in a cell with `%load_ext tensorboard` then "
                    f'`%tensorboard --logdir "{path}"`, or in a terminal with `{command}`.'
                )
            )
    else:
        print(f"TensorBoard logs: {path}\nOpen the dashboard with: {command}")
    return path


def _tensorboard_program() -> str:
    """How to start the ``tensorboard`` of the running interpreter: ``"tensorboard"`` when
    that is the one on PATH, else the path of the one beside ``sys.executable`` (a virtual
    environment's ``bin/``, not on PATH when it was not activated)."""
    name = "tensorboard.exe" if os.name == "nt" else "tensorboard"
    beside = Path(sys.executable).parent / name
    if not beside.is_file():
        return "tensorboard"
    on_path = shutil.which("tensorboard")
    if on_path is not None and Path(on_path).resolve() == beside.resolve():
        return "tensorboard"
    return str(beside)


# ---------------------------------------------------------------------- videos
def headless_sdl() -> None:
    """Tell SDL (pygame, used by gymnasium's classic-control renderers) not to look for a
    display when there is none, which silences "XDG_RUNTIME_DIR is invalid" errors. Only
    set when unset and no display exists, so that ``render_mode="human"`` still works."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def video_display(path: str | os.PathLike[str], *, width: int | None = None) -> None:
    """Show an ``.mp4`` inline in a notebook, or print its path from a script.

    In a notebook the video is embedded as base64 data in the cell output, so it stays in
    the saved notebook (and plays on GitHub-like viewers that allow HTML video).
    """
    video = Path(path).expanduser().resolve()
    if not video.is_file():
        raise FileNotFoundError(f"video_display: no video file at {video}")
    if is_notebook():
        from IPython.display import Video, display

        display(
            Video(
                str(video),
                embed=True,
                mimetype="video/mp4",
                width=width,
                html_attributes="controls loop autoplay muted",
            )
        )
    else:
        print(f"video: {video}")


# ---------------------------------------------------------------------- progress
class _HasHistory(Protocol):
    """Anything with a ``history`` list of results that have a ``mean`` (an Evaluator)."""

    @property
    def history(self) -> Sequence[Any]: ...


def _has_widgets() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _tqdm(*, disable: bool | None, **kwargs: Any) -> Any:
    """A tqdm bar for where we are. In a notebook: tqdm's widget when ``ipywidgets`` is
    installed, else a text bar on the cell's output (tqdm's own fallback warns and then
    hides the bar, since a notebook's output is not a terminal). Elsewhere a text bar:
    ``disable=None`` shows it in a terminal and hides it when the output goes to a file."""
    if is_notebook() and _has_widgets():
        from tqdm.notebook import tqdm as notebook_tqdm

        # shown by ProgressBar, through a display handle it updates when the bar closes
        return notebook_tqdm(disable=bool(disable), display=False, **kwargs)
    from tqdm.std import tqdm

    if is_notebook():
        kwargs = {"file": sys.stdout, "ncols": 100, "mininterval": 0.5, **kwargs}
        disable = bool(disable)
    return tqdm(disable=disable, **kwargs)


class ProgressBar:
    """A tqdm bar (a widget in a notebook with ``ipywidgets``, else text) that tracks a
    training-step counter and shows the latest evaluation in its postfix.

    Build it with :func:`progress_bar`, as a context manager around the training loop; in
    the loop call :meth:`update_to` with the total number of training steps so far.

    It always ends with a count and a percentage: a loop that passes ``total`` (collectors
    count steps in chunks) ends at 100% of the steps it took, not at tqdm's ``n/?``. With a
    ``target`` return, a bar closed early because the evaluator's best return reached it
    ends full (green in a notebook) and says "target reached at step N". A bar left by an
    exception or an interrupt (``KeyboardInterrupt``) inside its ``with`` block ends red,
    and so does a bar closed before its end otherwise (a ``break``), as tqdm ends it.

    In a notebook, closing the widget replaces it by a static picture of its final state
    (HTML, with its text): a widget's state is not saved with the notebook, so a saved and
    reopened notebook would otherwise show "Error displaying widget" where the bar was.
    """

    def __init__(
        self,
        total: int,
        evaluator: _HasHistory | None = None,
        *,
        desc: str = "training",
        unit: str = "step",
        target: float | None = None,
        disable: bool | None = None,
        **tqdm_kwargs: Any,
    ) -> None:
        # (a swap, progress_bar(evaluator, total), would fail only inside the training loop)
        if isinstance(total, bool) or not isinstance(total, int | numbers.Integral) or total < 0:
            raise TypeError(
                f"progress_bar: total must be the number of training steps (an int >= 0), "
                f"got {total!r}; call progress_bar(total_steps, evaluator)"
            )
        if evaluator is not None and not hasattr(evaluator, "history"):
            raise TypeError(
                f"progress_bar: evaluator must be an Evaluator (or None), got "
                f"{type(evaluator).__name__}"
            )
        if target is not None and (
            isinstance(target, bool) or not isinstance(target, numbers.Real)
        ):
            raise TypeError(
                f"progress_bar: target must be a return (a number) or None, got {target!r}"
            )
        if target is not None and evaluator is None:
            raise ValueError(
                "progress_bar: a target needs the evaluator whose best return it is compared "
                "with; call progress_bar(total_steps, evaluator, target=...)"
            )
        self.evaluator = evaluator
        self.target = None if target is None else float(target)
        self.desc = desc
        self._shown_results = 0
        self._steps = 0
        self._closed = False
        self.bar = _tqdm(total=total, desc=desc, unit=unit, disable=disable, **tqdm_kwargs)
        self._display = None  # the notebook widget's display handle
        container = getattr(self.bar, "container", None)
        if container is not None:
            from IPython.display import display

            self._display = display(container, display_id=True)

    @property
    def n(self) -> int:
        """The position of the bar (training steps), also tracked when the bar is hidden."""
        return self._steps

    def _widget(self) -> Any:
        """The notebook widget's progress bar (None for a text bar)."""
        container = getattr(self.bar, "container", None)
        return None if container is None else container.children[1]

    def _set_total(self, total: int) -> None:
        self.bar.total = total
        widget = self._widget()
        if widget is not None:
            widget.max = total  # the widget's own total

    def update_to(self, steps: int, **postfix: Any) -> None:
        """Move the bar to ``steps`` and refresh the postfix: the latest evaluation mean
        (when the evaluator has a new result) and any extra ``name=value`` pairs."""
        if steps > self._steps:
            if steps > (getattr(self.bar, "total", None) or 0):
                self._set_total(int(steps))  # past the budget: tqdm would show "n/?"
            self.bar.update(steps - self._steps)
            self._steps = int(steps)
        values: dict[str, Any] = {}
        history = self.evaluator.history if self.evaluator is not None else ()
        if history:
            last = history[-1]
            values["eval"] = f"{float(last.mean):.1f}"
            best = getattr(self.evaluator, "best_reward", None)
            if best is not None:
                values["best"] = f"{float(best):.1f}"
        values.update(postfix)
        if values and (postfix or len(history) != self._shown_results):
            self._shown_results = len(history)
            self.bar.set_postfix(values, refresh=False)

    @property
    def target_step(self) -> int | None:
        """The step of the first evaluation whose mean reached ``target`` (None before, or
        without a target)."""
        if self.target is None or self.evaluator is None:
            return None
        for result in self.evaluator.history:
            if float(result.mean) >= self.target:
                return int(getattr(result, "step", self._steps))
        return None

    def close(self) -> None:
        """Close the bar; when ``target`` was reached, it ends full with "target reached at
        step N" (the rest of the budget was not needed). Closing twice does nothing."""
        self._close(error=False)

    def _close(self, *, error: bool) -> None:
        if self._closed:
            return
        self._closed = True
        reached = None if error else self.target_step
        widget = self._widget()
        if reached is not None:
            self._set_total(self._steps)
            self.bar.set_description(
                f"{self.desc}: target reached at step {reached}", refresh=False
            )
        elif error and widget is not None:
            widget.bar_style = "danger"  # (tqdm ends a full bar green, error or not)
        self.bar.close()
        if self._display is not None:
            self._display.update(_snapshot(self.bar, widget.bar_style), raw=True)
            self.bar.container.close()  # the widget is no longer shown anywhere

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._close(error=exc_type is not None)


# ipywidgets' own colours of a progress bar's styles (its default is the blue)
_BAR_COLOURS = {"success": "#5cb85c", "danger": "#d9534f", "warning": "#f0ad4e"}


def _snapshot(bar: Any, style: str) -> dict[str, str]:
    """A closed notebook bar as a static output: HTML that looks like the widget in its
    final state (without the time remaining), and the same line as text."""
    import html

    line = "{l_bar}<bar/>| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"
    final = {**bar.format_dict, "ascii": False}
    text = bar.format_meter(**{**final, "bar_format": line.replace("<bar/>", "{bar:20}")})
    left, right = bar.format_meter(**{**final, "bar_format": line}).split("<bar/>")
    total = bar.total or 0
    filled = 100.0 if not total else min(100.0, 100.0 * bar.n / total)
    colour = _BAR_COLOURS.get(style, "#2196f3")
    state = style or "unfinished"
    page = (
        f'<div class="rl-mind-progress" data-state="{state}" style="display: flex; '
        f'align-items: center; font-family: monospace; white-space: pre">'
        f"<span>{html.escape(left.rstrip('|'))}</span>"
        f'<span style="display: inline-block; width: 20em; height: 1em; margin: 0 0.4em; '
        f'background-color: #e0e0e0">'
        f'<span style="display: block; width: {filled:.1f}%; height: 100%; '
        f'background-color: {colour}"></span></span>'
        f"<span>{html.escape(right.lstrip('|'))}</span></div>"
    )
    return {"text/html": page, "text/plain": text}


def progress_bar(
    total: int, evaluator: _HasHistory | None = None, *, target: float | None = None, **kwargs: Any
) -> ProgressBar:
    """A progress bar over ``total`` training steps, showing ``evaluator``'s latest mean.

    The idiom, a ``with`` block around the loop (an exception or an interrupt inside it
    ends the bar red; without ``with``, call ``progress.close()`` after the loop)::

        with progress_bar(total_steps, evaluator, target=475) as progress:
            while collector.steps < total_steps:
                ...
                progress.update_to(collector.steps)  # after the evaluator

    With ``target``, a loop that stops early because the evaluator reached it ends with a
    full bar that says "target reached at step N" (not the red of an interrupted bar).
    ``kwargs`` go to :class:`ProgressBar` (``desc``, ``unit``, ``disable``, or any tqdm
    option).
    """
    return ProgressBar(total, evaluator, target=target, **kwargs)


# ---------------------------------------------------------------------- compute profile
class Profile:
    """The compute profile: full budgets for students, tiny ones for CI.

    ``Profile.pick(full, fast_test=...)`` returns ``fast_test`` when the environment
    variable ``RL_MIND_FAST_TEST`` is ``1`` (or ``true``/``yes``), else ``full``::

        total_steps = Profile.pick(100_000, fast_test=2_000)
    """

    @staticmethod
    def is_fast_test() -> bool:
        """True when ``$RL_MIND_FAST_TEST`` is set to ``1``, ``true``, ``yes`` or ``on``, or
        when rl-mind 0.4's ``$NOTEBOOK_PROFILE`` is ``fast-test`` (which warns)."""
        value = os.environ.get(FAST_TEST_ENV_VAR, "").strip().lower()
        if value in {"1", "true", "yes", "on"}:
            return True
        legacy = os.environ.get(LEGACY_PROFILE_ENV_VAR, "").strip().upper()
        if legacy.replace("-", "_").replace(" ", "_") == "FAST_TEST":
            warnings.warn(
                f"{LEGACY_PROFILE_ENV_VAR}=fast-test is rl-mind 0.4's switch; set "
                f"{FAST_TEST_ENV_VAR}=1 instead",
                DeprecationWarning,
                stacklevel=3,
            )
            return True
        return False

    @staticmethod
    def name() -> str:
        """``"fast_test"`` or ``"full"``."""
        return "fast_test" if Profile.is_fast_test() else "full"

    @staticmethod
    def pick(full: T, *, fast_test: T) -> T:
        """``fast_test`` under the fast-test profile, else ``full``."""
        return fast_test if Profile.is_fast_test() else full


# ---------------------------------------------------------------------- rl-mind 0.4
def silence_known_warnings() -> None:
    """Deprecated (rl-mind 0.4): hid the ``pkg_resources`` warning that pygame and
    tensorboard printed. Still does; nothing in rl-mind needs it any more, so remove the
    call."""
    warnings.warn(
        "silence_known_warnings() is not needed any more: remove the call (or write "
        "warnings.filterwarnings('ignore', message='pkg_resources is deprecated'))",
        DeprecationWarning,
        stacklevel=2,
    )
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
