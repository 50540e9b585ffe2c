"""What the arena writes: three CSV files and one self-contained HTML page.

The page needs no network to be viewed: its styles are inline, its plots are PNG images
and its video an MP4 inside the file (``data:`` addresses), it has no script, and its
content security policy forbids fetching anything. Every name on it comes from a student:
each is escaped, never pasted in as markup.

What the reader must not get wrong: the CSV files are written from the results alone
(fixed formats, no time stamps), so that the same inputs and seed give byte-identical
files; the page and the video are not part of that promise.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rl_mind.arena.results import ArenaResult, Standing
from rl_mind.core import Action, Actor

__all__ = ["VIDEO_MAX_STEPS", "write_outputs"]

VIDEO_MAX_STEPS = 1500  # one whole match at most (30 s at 50 frames a second)


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def _csv_bytes(fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> bytes:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue().encode("utf-8")


def leaderboard_rows(result: ArenaResult) -> tuple[list[str], list[dict[str, Any]]]:
    """The fields and rows of ``leaderboard.csv``: every player, best first."""
    fields = ["rank", "name", "author", "kind", "file", "rating", "rating_low", "rating_high"]
    fields += ["matches", "wins", "draws", "losses", "score"]
    fields += [f"win_rate_vs_{anchor}" for anchor in result.anchors]
    rows = []
    for s in result.standings:
        row: dict[str, Any] = {
            "rank": s.rank,
            "name": s.player.name,
            "author": s.player.author,
            "kind": s.player.kind,
            "file": s.player.file,
            "rating": f"{s.rating:.1f}",
            "rating_low": f"{s.low:.1f}",
            "rating_high": f"{s.high:.1f}",
            "matches": s.record.matches,
            "wins": s.record.wins,
            "draws": s.record.draws,
            "losses": s.record.losses,
            "score": f"{s.record.score:.4f}",
        }
        for anchor in result.anchors:
            stats = s.against.get(anchor)
            row[f"win_rate_vs_{anchor}"] = "" if stats is None else f"{stats.win_rate:.4f}"
        rows.append(row)
    return fields, rows


def gradebook_rows(result: ArenaResult) -> tuple[list[str], list[dict[str, Any]]]:
    """The fields and rows of ``gradebook.csv``: one row per author, sorted by author: rank
    among the submissions, rating and interval, scores against the anchors, points, grade."""
    fields = ["author", "name", "file", "rank", "rating", "rating_low", "rating_high"]
    fields += [f"score_vs_{anchor}" for anchor in result.anchors]
    fields += [f"points_{anchor}" for anchor in result.rubric.beat]
    fields += ["points_rank", "grade"]
    ranked, rubric = result.submissions, result.rubric
    rows = []
    for position, standing in enumerate(ranked, 1):
        row: dict[str, Any] = {
            "author": standing.player.author,
            "name": standing.player.name,
            "file": standing.player.file,
            "rank": position,
            "rating": f"{standing.rating:.1f}",
            "rating_low": f"{standing.low:.1f}",
            "rating_high": f"{standing.high:.1f}",
        }
        total = 0.0
        for anchor in result.anchors:
            row[f"score_vs_{anchor}"] = f"{standing.against[anchor].score:.4f}"
        for anchor, points in rubric.beat.items():
            earned = points if rubric.beats(standing.against[anchor].score) else 0.0
            row[f"points_{anchor}"] = f"{earned:g}"
            total += earned
        rank_points = rubric.rank_points(position, len(ranked))
        row["points_rank"] = f"{rank_points:.2f}"
        row["grade"] = f"{total + rank_points:.2f}"
        rows.append(row)
    return fields, sorted(rows, key=lambda r: (r["author"].casefold(), r["author"]))


# ---------------------------------------------------------------------- figures
def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _rating_plot(result: ArenaResult) -> str:
    from matplotlib.figure import Figure  # (no pyplot: no global state, any backend)

    figure = Figure(figsize=(8, max(2.5, 0.3 * len(result.board.rows) + 1)), layout="tight")
    result.board.plot(ax=figure.subplots())
    return _png(figure)


def _heatmap(result: ArenaResult) -> str:
    """The cross-play matrix: the score of each row player against each column player."""
    from matplotlib.figure import Figure

    order = [result.results.names.index(name) for name in result.board.names]
    wins = result.results.wins[np.ix_(order, order)]
    draws = result.results.draws[np.ix_(order, order)]
    games = wins + wins.T + draws
    with np.errstate(invalid="ignore"):
        score = np.where(games > 0, (wins + 0.5 * draws) / np.maximum(games, 1), np.nan)
    count = len(order)
    size = min(4 + 0.28 * count, 30)
    figure = Figure(figsize=(size + 1.5, size), layout="tight")
    ax = figure.subplots()
    image = ax.imshow(score, cmap="RdBu", vmin=0.0, vmax=1.0)
    # names when they fit, ranks otherwise
    labels = result.board.names if count <= 40 else [str(r) for r in range(1, count + 1)]
    ticks = range(count) if count <= 40 else range(0, count, max(1, count // 20))
    ax.set_xticks(list(ticks), [labels[t] for t in ticks], rotation=90, fontsize=8)
    ax.set_yticks(list(ticks), [labels[t] for t in ticks], fontsize=8)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    ax.set_title("score of the row player against the column player")
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="score (win = 1, draw = ½)")
    return _png(figure)


class _PlayerActor(Actor[Action]):
    """Any arena player (a bot name, an agent) as the ``Actor`` that ``record_video`` films."""

    def __init__(self, policy: Any) -> None:
        from rl_mind.envs.pong_opponents import as_numpy_policy

        super().__init__()
        self.policy = as_numpy_policy(policy)

    def forward(self, obs: Any) -> Action:
        return Action(torch.from_numpy(self.policy.act_numpy(obs.numpy())))


def _record_final(result: ArenaResult, out: Path) -> Path | None:
    """A video of one match between the two best players (the best on the left, blue)."""
    import rl_mind.envs  # noqa: F401  (registers the game)
    from rl_mind.videos import record_video

    standings = result.standings
    if len(standings) < 2:
        return None
    first, second = standings[0].player, standings[1].player
    video = record_video(
        _PlayerActor(first.policy),
        "rl_mind/PongDuel-v0",
        out,
        seed=result.seed,
        max_steps=VIDEO_MAX_STEPS,
        name="final",
        opponent=second.policy,
    )
    target = out / "final.mp4"
    os.replace(video, target)
    return target


# ---------------------------------------------------------------------- the page
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #1d2230; }
h1 { margin-bottom: 0.2em; }
.meta { color: #5a6275; margin-top: 0; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { padding: 0.3em 0.7em; border-bottom: 1px solid #d8dce6; text-align: right; }
th { background: #eef0f5; }
td.name, td.author, th.name, th.author { text-align: left; }
tr.bot td, tr.reference td { color: #5a6275; font-style: italic; }
img, video { max-width: 100%; border: 1px solid #d8dce6; }
"""

# No script, no fetch: images and media only from data: addresses inside the page.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; media-src data:"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def _row_html(s: Standing, anchors: Sequence[str]) -> str:
    e = html.escape
    cells = [
        f"<td>{s.rank}</td>",
        f'<td class="name">{e(s.player.name)}</td>',
        f'<td class="author">{e(s.player.author)}</td>',
        f"<td>{s.rating:.0f}</td>",
        f"<td>[{s.low:.0f}, {s.high:.0f}]</td>",
    ]
    for anchor in anchors:
        stats = s.against.get(anchor)
        cells.append("<td></td>" if stats is None else f"<td>{_percent(stats.win_rate)}</td>")
    cells.append(f"<td>{s.record.matches}</td>")
    return f'<tr class="{s.player.kind}">{"".join(cells)}</tr>'


def page(result: ArenaResult, video: Path | None) -> str:
    """The whole ``leaderboard.html``."""
    e = html.escape
    anchors = result.anchors
    standings = result.standings
    submissions = len(result.submissions)
    head = "".join(
        [
            "<th>rank</th>",
            '<th class="name">agent</th>',
            '<th class="author">author</th>',
            "<th>rating</th>",
            "<th>95% interval</th>",
            *(f"<th>wins vs {e(a)}</th>" for a in anchors),
            "<th>matches</th>",
        ]
    )
    rows = "\n".join(_row_html(s, anchors) for s in standings)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        "<title>Pong Duel arena</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Pong Duel arena</h1>",
        f'<p class="meta">{submissions} agents and {len(anchors)} anchors '
        f"({e(', '.join(anchors))}); {result.n_matches} matches a pair, half on each side; "
        f"seed {result.seed}. Ratings on the Elo scale (400 points: 10 to 1 odds), "
        f"Bradley–Terry fit with random at 0.</p>",
        '<h2>Leaderboard</h2><table id="leaderboard">',
        f"<thead><tr>{head}</tr></thead><tbody>",
        rows,
        "</tbody></table>",
        "<h2>Ratings</h2>",
        f'<img id="rating-plot" alt="ratings with 95% intervals" '
        f'src="data:image/png;base64,{_rating_plot(result)}">',
        "<h2>Cross-play</h2>",
        f'<img id="cross-play" alt="cross-play matrix" src="data:image/png;base64,{_heatmap(result)}">',
    ]
    if video is not None and len(standings) >= 2:
        data = base64.b64encode(video.read_bytes()).decode("ascii")
        parts += [
            f"<h2>The final: {e(standings[0].player.name)} (blue) against "
            f"{e(standings[1].player.name)} (orange)</h2>",
            f'<video id="final" controls muted loop src="data:video/mp4;base64,{data}"></video>',
        ]
    if result.rejected:
        parts += ["<h2>Not rated</h2>", '<table id="rejected"><thead><tr>']
        parts += ['<th class="name">file</th><th class="name">reason</th></tr></thead><tbody>']
        parts += [
            f'<tr><td class="name">{e(r.file)}</td><td class="name">{e(r.reason)}</td></tr>'
            for r in result.rejected
        ]
        parts += ["</tbody></table>"]
    parts += ["</body></html>", ""]
    return "\n".join(parts)


def write_outputs(
    result: ArenaResult, out: str | os.PathLike[str], *, video: bool = True
) -> dict[str, Path]:
    """Write the arena's files into ``out`` (created if needed); returns them by label."""
    folder = Path(out).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"arena: --out {folder} is a file, expected a folder")
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "leaderboard": folder / "leaderboard.csv",
        "gradebook": folder / "gradebook.csv",
        "rejected": folder / "rejected.csv",
    }
    _write_atomically(paths["leaderboard"], _csv_bytes(*leaderboard_rows(result)))
    _write_atomically(paths["gradebook"], _csv_bytes(*gradebook_rows(result)))
    rejected = [{"file": r.file, "reason": r.reason} for r in result.rejected]
    _write_atomically(paths["rejected"], _csv_bytes(["file", "reason"], rejected))
    final = _record_final(result, folder) if video else None
    if final is not None:
        paths["video"] = final
    paths["page"] = folder / "leaderboard.html"
    _write_atomically(paths["page"], page(result, final).encode("utf-8"))
    return paths
