"""The points of a seed's curve: the seed's own, and ours under each condition, normalised.

Each series is divided by its rate at its fewest threads (1 where it was
run), so that a curve measured on an Itanium 2 Altix and one simulated on
our machine compare by shape. Ours are the untraced runs of the seed's
variant in the condition's study (analysis/seed_verdicts/seeds.py Seed.under), each
point the mean over the repeats at that thread count with its interval;
runs of different windows at one thread count are refused, as everywhere.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.seed_curve.rules import CurveRule
from analysis.seed_verdicts.seed_comparison import study_rows
from analysis.seed_verdicts.seeds import published_frame
from analysis.statistics.configurations import rate_of
from analysis.statistics.intervals import mean_interval
from analysis.statistics.pooling import check_poolable, split_traced

COLUMNS = ["series", "condition", "threads", "rate", "n", "ci_low", "ci_high", "relative", "relative_to_threads"]
PUBLISHED = "published"


def published_points(rule: CurveRule) -> pd.DataFrame:
    frame = published_frame(rule.seed, rule.table)
    for key, value in rule.rows.items():
        frame = frame[frame[key] == value]
    return pd.DataFrame({"threads": frame["threads"].astype(int), "rate": frame[rule.column].astype(float), "n": 1})


def measured_points(table: pd.DataFrame, rule: CurveRule, condition: str) -> pd.DataFrame:
    """Our rate against threads for the rule's variant under `condition`: mean, n, interval per thread count."""
    view = rule.seed.under(condition)
    workload = view.workloads[0]
    column, _source = rate_of(workload.name, workload.rate)
    rows = study_rows(table, view)
    if rows.empty or column not in rows:
        return pd.DataFrame(columns=["threads", "rate", "n", "ci_low", "ci_high"])
    rows = split_traced(rows[rows["testcase"] == workload.name], what=f"seed {view.id} curve")[0]
    variant = view.variants[rule.variant]
    specs = rows["run_spec"].fillna("") if "run_spec" in rows else [""] * len(rows)
    stands = [variant.stands_for(str(build), str(boot), str(spec)) for build, boot, spec in zip(rows["kernel_build"], rows["boot_args"].fillna(""), specs)]
    rows = rows[pd.Series(stands, index=rows.index, dtype=bool) & rows[column].notna()]
    out = []
    for threads, group in rows.groupby(rule.threads_column):
        check_poolable(group, what=f"seed {view.id} curve, {condition}, {threads:g} threads")
        interval = mean_interval(group[column].astype(float).tolist(), what=f"seed {view.id} curve at {threads:g} threads")
        out.append({"threads": int(threads), "rate": interval.estimate, "n": len(group), "ci_low": interval.low, "ci_high": interval.high})
    return pd.DataFrame(out, columns=["threads", "rate", "n", "ci_low", "ci_high"])


def _normalised(points: pd.DataFrame, series: str, condition: str) -> pd.DataFrame:
    points = points.sort_values("threads").reset_index(drop=True)
    first = points.iloc[0]
    return points.assign(
        series=series, condition=condition, relative=points["rate"] / float(first["rate"]), relative_to_threads=int(first["threads"])
    )


def curve_frame(table: pd.DataFrame, rule: CurveRule) -> pd.DataFrame:
    """Every series of the curve that has points, in COLUMNS."""
    frames = [_normalised(published_points(rule), rule.label, PUBLISHED)]
    for condition in rule.seed.declared_conditions():
        points = measured_points(table, rule, condition)
        if not points.empty:
            frames.append(_normalised(points, f"ours, {condition} ({rule.seed.under(condition).study})", condition))
    frame = pd.concat(frames, ignore_index=True)
    for column in ("ci_low", "ci_high"):
        if column not in frame:
            frame[column] = math.nan
    return frame[COLUMNS]
