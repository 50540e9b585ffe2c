"""The teacher's grading rubric: points for beating the anchors, and for the rank.

A rubric is a small TOML (Python 3.11+) or JSON file::

    # points for beating an anchor: scoring at least `threshold` against it
    # (wins + draws / 2, over the arena's matches against it)
    [beat]
    threshold = 0.5
    random = 2
    scripted = 4
    predictive = 4

    # points for the rank among the submitted agents: the best gets `first`, the last
    # `last`, and the others in between, linearly
    [rank]
    first = 10
    last = 0

Both sections are optional. An agent's grade is the sum of its points. The anchors that
``[beat]`` may name are the bots and, when the arena plays one, ``reference``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_RUBRIC", "Rubric"]


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"rubric: {where} must be a finite number, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Rubric:
    """Points for beating each anchor (``beat``, name → points), what beating means
    (``threshold``: the lowest score against it that counts), and the points of the best and
    the last rank among the submissions (``rank_first``, ``rank_last``)."""

    beat: Mapping[str, float] = dataclasses.field(default_factory=dict)
    threshold: float = 0.5
    rank_first: float = 0.0
    rank_last: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"rubric: beat.threshold must be in [0, 1], got {self.threshold}")

    @property
    def maximum(self) -> float:
        """The most points an agent can get."""
        return sum(self.beat.values()) + max(self.rank_first, self.rank_last, 0.0)

    @classmethod
    def from_dict(cls, data: Any) -> Rubric:
        """A rubric from its parsed TOML / JSON (see the module docstring)."""
        if not isinstance(data, dict):
            raise ValueError(f"rubric: expected a table of sections, got {type(data).__name__}")
        unknown = sorted(set(data) - {"beat", "rank"})
        if unknown:
            raise ValueError(f"rubric: unknown sections {unknown}; expected [beat] and [rank]")
        beat = data.get("beat", {})
        rank = data.get("rank", {})
        for section, table in (("beat", beat), ("rank", rank)):
            if not isinstance(table, dict):
                raise ValueError(f"rubric: [{section}] must be a table, got {table!r}")
        unknown = sorted(set(rank) - {"first", "last"})
        if unknown:
            raise ValueError(f"rubric: unknown keys {unknown} in [rank]; expected first, last")
        points = {
            str(name): _number(value, f"beat.{name}")
            for name, value in beat.items()
            if name != "threshold"
        }
        return cls(
            beat=points,
            threshold=_number(beat.get("threshold", 0.5), "beat.threshold"),
            rank_first=_number(rank.get("first", 0.0), "rank.first"),
            rank_last=_number(rank.get("last", 0.0), "rank.last"),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Rubric:
        """Read a ``.toml`` or ``.json`` rubric file."""
        source = Path(path).expanduser()
        if source.suffix not in (".toml", ".json"):
            raise ValueError(f"rubric: expected a .toml or .json file, got {source.name!r}")
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".json":
            try:
                return cls.from_dict(json.loads(text))
            except json.JSONDecodeError as error:
                raise ValueError(f"rubric {source}: not valid JSON ({error})") from None
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise ValueError(
                f"rubric {source}: reading TOML needs Python 3.11 or later; write the rubric "
                f"as JSON instead"
            ) from None
        try:
            return cls.from_dict(tomllib.loads(text))
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"rubric {source}: not valid TOML ({error})") from None

    def check_anchors(self, anchors: set[str]) -> None:
        """Every anchor the rubric gives points for must play in the arena."""
        missing = sorted(set(self.beat) - anchors)
        if missing:
            raise ValueError(
                f"rubric: [beat] gives points for {missing}, which do not play in this arena "
                f"(anchors: {sorted(anchors)}; 'reference' plays with --reference RUN_DIR)"
            )

    def rank_points(self, rank: int, count: int) -> float:
        """The points of rank ``rank`` (1 = best) among ``count`` submissions."""
        if count <= 1:
            return self.rank_first
        return self.rank_first + (self.rank_last - self.rank_first) * (rank - 1) / (count - 1)

    def beats(self, score: float) -> bool:
        return score >= self.threshold


#: The rubric the arena grades with when the teacher gives none.
DEFAULT_RUBRIC = Rubric(
    beat={"random": 2.0, "scripted": 4.0, "predictive": 4.0},
    threshold=0.5,
    rank_first=10.0,
    rank_last=0.0,
)
