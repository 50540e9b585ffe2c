"""One progress display for a whole study: runs done, running and failed, and the time left.

In a notebook or a terminal it is :func:`rl_mind.notebook.progress_bar`'s bar (a widget in
a notebook), counting runs; when the output goes to a file (a SLURM log, CI) it prints one
plain line each time a run ends. The time left is the study's own rate so far (runs ended
per second, with every worker busy) applied to the runs still to do: it is a guess until
the first runs end, and shown as ``?`` before.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rl_mind.notebook import is_notebook, progress_bar

__all__ = ["StudyProgress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """``75`` -> ``"1 min 15 s"``; ``4000`` -> ``"1 h 06 min"``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class StudyProgress:
    """The display of a study of ``total`` runs, ``done_before`` of them done in an earlier
    session (a resumed study): call :meth:`ended` when a run ends, :meth:`running` with the
    number of runs under way, and :meth:`close` at the end."""

    def __init__(self, total: int, done_before: int, *, enabled: bool = True) -> None:
        self.total, self.done_before = total, done_before
        self.todo = total - done_before
        self.done = self.failed = self.under_way = 0
        self.start = time.perf_counter()
        self.bar: Any = None
        self.lines = enabled and not (is_notebook() or sys.stderr.isatty())
        if enabled and not self.lines and self.todo:
            self.bar = progress_bar(
                self.todo,
                desc=f"study ({done_before} done before)" if done_before else "study",
                bar_format="{desc}: {n}/{total} runs |{bar}| {elapsed}<{remaining}{postfix}",
            )
        if self.lines:
            print(f"study: {self.todo} of {total} runs to do ({done_before} done before)",
                  flush=True)  # fmt: skip

    def time_left(self) -> float | None:
        """Seconds left, at the rate of the runs ended so far (None before the first)."""
        ended = self.done + self.failed
        if not ended:
            return None
        return (time.perf_counter() - self.start) / ended * (self.todo - ended)

    def running(self, count: int) -> None:
        """Say how many runs are under way."""
        if count != self.under_way:
            self.under_way = count
            if self.bar is not None:
                self.bar.update_to(self.done + self.failed, running=count, failed=self.failed)

    def ended(self, name: str, ok: bool, seconds: float | None = None) -> None:
        """Count a run that ended (``ok``: done, else failed)."""
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.under_way = max(0, self.under_way - 1)
        if self.bar is not None:
            self.bar.update_to(self.done + self.failed, running=self.under_way,
                               failed=self.failed)  # fmt: skip
        if self.lines:
            left = self.time_left()
            took = f" in {format_seconds(seconds)}" if seconds is not None else ""
            print(f"study: {self.done_before + self.done}/{self.total} done, "
                  f"{self.under_way} running, {self.failed} failed, "
                  f"{'?' if left is None else format_seconds(left)} left "
                  f"({name} {'done' if ok else 'FAILED'}{took})", flush=True)  # fmt: skip

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
