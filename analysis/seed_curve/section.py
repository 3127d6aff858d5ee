"""The report's seed curves: one figure and one table per curve of analysis/data/seed_curves.toml."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.reporting import plots
from analysis.reporting.report_render import Section, Table
from analysis.seed_curve.curve import PUBLISHED, curve_frame
from analysis.seed_curve.rules import CurveRule, load_curves

FIGURES = "figures"


def curve_section(table: pd.DataFrame, out: Path, rules: tuple[CurveRule, ...] | None = None) -> tuple[Section | None, pd.DataFrame]:
    """The section and seed_curves.csv's rows; no section when none of our runs draws a curve."""
    rules = load_curves() if rules is None else rules
    section = Section("The seeds' curves beside ours")
    frames = []
    for rule in rules:
        frame = curve_frame(table, rule)
        if set(frame["condition"]) == {PUBLISHED}:
            continue
        frames.append(frame.assign(seed=rule.seed.id))
        section.paragraphs.append(
            f"Seed {rule.seed.id}: {rule.label} against ours with the seed's `{rule.variant}` variant, as shipped and under "
            "the precondition where it is declared; each series divided by its rate at its fewest threads (the seed "
            "measured another machine: the shape, not the size, is compared). Ours are means over untraced repeats "
            "(n and the 95 % interval in the table and seed_curves.csv); the whiskers are each point's interval "
            "divided by the same rate at fewest threads."
        )
        section.tables.append(Table(f"Seed {rule.seed.id}: rate against threads", frame))
        base = frame["rate"] / frame["relative"]
        drawn = frame.assign(relative_low=frame["ci_low"] / base, relative_high=frame["ci_high"] / base)
        section.figures.append(
            plots.lines_vs_size(
                drawn, y="relative", x="threads", series="series",
                title=f"Seed {rule.seed.id}: rate against threads, each relative to its fewest threads",
                ylabel="rate / rate at fewest threads", xlabel="threads",
                path_stem=out / FIGURES / f"seed-{rule.seed.id}-curve", interval=("relative_low", "relative_high"),
            )  # fmt: skip
        )
    if not frames:
        return None, pd.DataFrame()
    return section, pd.concat(frames, ignore_index=True)
