"""The calibration table per machine: our measurement next to the hardware's.

Columns (results/calibration/<machine>.csv): measurement, size, measured,
published, unit, ratio (measured / published), source (a key of
published.toml's [source]; its citation is in the report), note (the
data file's, led by "outside +-N %" when the ratio is outside the
tolerance), then n (the runs behind the row) and ci_low, ci_high: the
mean's 95 % Student-t interval (analysis/statistics), empty for one run.
Repeats of a measurement are averaged.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.calibration.measured import calibration_run_ids, facts_of, in_units, measured_rows
from analysis.calibration.published import PublishedFile, load_published
from analysis.gem5_output.runs import Results
from analysis.statistics.intervals import NO_INTERVAL, Interval, mean_interval

COLUMNS = ["measurement", "size", "measured", "published", "unit", "ratio", "source", "note", "n", "ci_low", "ci_high"]
NO_ROW_NOTE = "published.toml has no row for this measurement: no published figure was looked for."
DECIMALS = 3
# A row whose runs gave no finite figure (none is expected: measured_rows keeps what a testcase measured).
NOT_MEASURED = Interval(math.nan, math.nan, math.nan, math.nan, NO_INTERVAL)


def outside_note(ratio: float, published: PublishedFile) -> str:
    if math.isnan(ratio) or published.within(ratio):
        return ""
    return f"outside ±{published.tolerance:.0%} of published. "


def machine_table(rows: pd.DataFrame, machine: str, published: PublishedFile) -> pd.DataFrame:
    """One machine's rows (already in table units), averaged over repeats with their interval, joined with the data file."""
    mine = rows[rows["machine"] == machine]
    runs = mine.groupby(["measurement", "family", "size", "size_count", "unit"], as_index=False)["measured"].agg(list)
    order = {family: index for index, family in enumerate(published.units)}
    runs = runs.assign(family_order=runs["family"].map(order)).sort_values(["family_order", "measurement", "size_count"])
    out = []
    for _, row in runs.iterrows():
        values = [value for value in row["measured"] if math.isfinite(value)]
        interval = mean_interval(values, what=f"{machine} {row['measurement']} at {row['size']}") if values else NOT_MEASURED
        match = published.lookup(machine, row["measurement"])
        value = match.value if match is not None else math.nan
        ratio = interval.estimate / value if not math.isnan(value) else math.nan
        note = match.note if match is not None else NO_ROW_NOTE
        out.append([row["measurement"], row["size"], round(interval.estimate, DECIMALS), value, row["unit"],
                    round(ratio, DECIMALS) if not math.isnan(ratio) else math.nan,
                    match.source if match is not None else "", outside_note(ratio, published) + note,
                    len(values), round(interval.low, DECIMALS), round(interval.high, DECIMALS)])  # fmt: skip
    return pd.DataFrame(out, columns=COLUMNS)


def calibration_tables(results: Results, table: pd.DataFrame, published: PublishedFile | None = None) -> dict[str, pd.DataFrame]:
    """machine -> its calibration table; empty when the results hold no calibration ROI."""
    published = published or load_published()
    run_ids = calibration_run_ids(table)
    if not run_ids:
        return {}
    facts = facts_of(results, run_ids)
    rows = in_units(measured_rows(table, facts), facts, published)
    return {machine: machine_table(rows, machine, published) for machine in sorted(rows["machine"].unique())}
