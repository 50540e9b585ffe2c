"""rl-mind 0.4's calls whose spelling changed: translated to today's, with a
``DeprecationWarning`` that names the new spelling (the migration page lists them all)."""

from __future__ import annotations

import os
import warnings
from typing import Any

__all__ = ["deprecated", "visualize_best_arguments"]


def deprecated(message: str, stacklevel: int = 3) -> None:
    """Warn that a call is rl-mind 0.4's spelling (``message`` names the new one)."""
    warnings.warn(f"{message} (rl-mind 0.4's spelling)", DeprecationWarning, stacklevel=stacklevel)


def _short_repr(value: object) -> str:
    """A 0.4 argument as a warning shows it: a number, a flag or a string as itself."""
    return repr(value) if value is None or isinstance(value, (int, float, str)) else "..."


def visualize_best_arguments(
    directory: Any, legacy: tuple[Any, ...], **keywords: Any
) -> tuple[str | os.PathLike[str] | None, int | None, float | None]:
    """``visualize_best``'s arguments as (directory, seed, fps), 0.4's calls translated
    (its signature was ``visualize_best(video=False, seed=0, trimmer=None, fps=30,
    width="400px")``) with a warning that names the new spelling."""
    old_names = ("video", "seed", "trimmer", "fps", "width")
    positional: tuple[Any, ...] = ()
    if isinstance(directory, bool):  # (0.4's first argument: visualize_best(True))
        positional, directory = (directory, *legacy), None
    elif legacy:
        raise TypeError(f"Evaluator.visualize_best takes one positional argument, the "
                        f"directory, and got {1 + len(legacy)}; seed, max_steps and fps "
                        f"are keyword arguments")  # fmt: skip
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"Evaluator.visualize_best: directory must be a path (str or "
                        f"os.PathLike) or None, not {type(directory).__name__}")  # fmt: skip
    if len(positional) > len(old_names):
        raise TypeError(f"Evaluator.visualize_best: rl-mind 0.4's call took at most "
                        f"{len(old_names)} positional arguments ({', '.join(old_names)}), "
                        f"got {len(positional)}")  # fmt: skip
    for name, value in zip(old_names, positional):
        if keywords[name] is not None:
            raise TypeError(f"Evaluator.visualize_best got two values for {name}: "
                            f"{value!r} (0.4's positional argument) and {name}="
                            f"{keywords[name]!r}")  # fmt: skip
        keywords[name] = value
    if positional or any(keywords[name] is not None for name in ("video", "trimmer", "width")):
        given = {name: keywords[name] for name in old_names if keywords[name] is not None}
        kept = ", ".join(f"{name}={given[name]!r}" for name in ("seed", "fps") if name in given)
        old = ", ".join([*map(_short_repr, positional),
                         *(f"{name}={_short_repr(value)}" for name, value in given.items()
                           if name not in old_names[: len(positional)])])  # fmt: skip
        deprecated(f"visualize_best({old}): call visualize_best({kept}), which always "
                    f"films a video now and shows it inline in a notebook (video is "
                    f"ignored, and trimmer and width, of 0.4's player, are ignored)",
                    stacklevel=4)  # fmt: skip
    return directory, keywords["seed"], keywords["fps"]
