"""``rl-mind compare RUN_DIR...``: plot runs, or a study's, with interval estimates.

Each argument is a study directory, a run folder holding an ``evaluations.csv``, or a
folder of such run folders. A study's runs are grouped by their variant; runs made without
the study runner (no variant) are grouped by the argument that named them: ``rl-mind compare
runs/ddpg runs/td3`` compares two variants whose runs (seeds) are the folders inside each.

Writes into ``--out`` (default ``comparison``): ``learning_curves.png``,
``final_performance.png``, ``improvement.png`` (variants of at least 2 runs), and
``critic_bias.png`` when the runs logged the critic's bias; prints the final performance of
each variant with its confidence interval.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rl_mind.study.intervals import AGGREGATES

__all__ = ["compare_table", "main"]


def compare_table(paths: Sequence[str | Path]) -> Any:
    """One table of the runs under ``paths``: a study's variants, or, for runs without a
    variant, a ``variant`` column naming the argument that holds them."""
    import pandas as pd

    from rl_mind.study.plots import variant_columns
    from rl_mind.study.table import load_table

    tables, variants = [], []
    for argument in paths:
        path = Path(argument).expanduser()
        table = load_table(path)
        if table.empty:
            raise ValueError(f"no finished run under {argument} (a study's runs that failed or "
                             f"are still running are left out)")  # fmt: skip
        columns = variant_columns(table)
        if not columns:
            table.insert(0, "variant", path.stem if path.is_file() else path.name)
            columns = ["variant"]
        if len(paths) > 1:  # (two studies may both hold a run called seed-0)
            table["run"] = f"{path.name}/" + table["run"].astype(str)
        variants += [column for column in columns if column not in variants]
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    table.attrs["variants"] = variants
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``rl-mind compare RUN_DIR... [--out DIR] [--metric COLUMN] [--aggregate iqm|mean|median]
    [--by COLUMN...] [--seed N]``: write the plots, print the final table; 0 on success, 2
    on bad input (said on stderr)."""
    parser = argparse.ArgumentParser(prog="rl-mind compare", description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="studies or run folders")
    parser.add_argument("--out", default="comparison", help="folder for the PNG files")
    parser.add_argument("--metric", default="return", help="the column to compare (return)")
    parser.add_argument("--aggregate", default="iqm", choices=sorted(AGGREGATES))
    parser.add_argument("--by", nargs="+", default=None, help="the variant's columns")
    parser.add_argument("--seed", type=int, default=0, help="seeds the bootstrap")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # (files only: no window, also without a display)
    import matplotlib.pyplot as plt
    import pandas as pd

    from rl_mind.study.plots import (
        final_performance,
        plot_final_performance,
        plot_improvement,
        plot_learning_curves,
    )

    try:
        table = compare_table(args.runs)
        options = {"by": args.by, "seed": args.seed}
        final = final_performance(table, args.metric, args.aggregate, **options)
        out = Path(args.out).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "learning_curves.png", out / "final_performance.png"]
        plot_learning_curves(table, args.metric, args.aggregate, path=written[0], **options)
        plot_final_performance(table, args.metric, args.aggregate, path=written[1], **options)
        bias = table.get("critic_bias")
        if bias is not None and bias.notna().any() and args.metric != "critic_bias":
            written.append(out / "critic_bias.png")
            plot_learning_curves(table, "critic_bias", args.aggregate, path=written[-1], **options)
        if (final["runs"] >= 2).sum() >= 2:
            written.append(out / "improvement.png")
            plot_improvement(table, args.metric, path=written[-1], **options)
    except (ValueError, OSError) as error:
        print(f"rl-mind compare: {error}", file=sys.stderr)
        return 2
    finally:
        plt.close("all")
    shown = final.drop(columns="scores").rename(columns={"point": args.aggregate})
    print(f"final {args.metric} ({args.aggregate} across runs, 95% bootstrap CI):")
    with pd.option_context("display.width", 120, "display.max_colwidth", 60):
        print(shown.to_string(float_format=lambda value: f"{value:.2f}"))
    for path in written:
        print(f"wrote {path}")
    return 0
