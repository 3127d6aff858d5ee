"""Every seed claim as one statistical judgement, and the claims.csv the report writes.

For each claim of analysis/data/seeds.toml and each workload of its seed,
our runs of a and of b are found as analysis/seed_verdicts/seed_comparison.py finds them
(the seed's study and match keys, its compare_on sizes, one judgement per
ROI CPU model and per copy count). Then, unlike that first comparison:

- traced runs are left out (attribution only; the row says how many);
- runs are judged once per timed window, never averaged across windows;
- each side must be one configuration, its runs the repeats of it;
- the rate is the testcase's own timed one where the guest reports it
  (analysis/data/statistics.toml), else the seed's `rate`, and the row
  says which (`rate_source`);
- the ratio a / b of the two means has a Fieller interval, and the verdict
  is agrees / disagrees only when that interval decides (verdicts.py);
- a claim counts once: rows resting on the same runs of a and of b (seed
  004's user ranges share four run pairs) are one judgement, the first
  claim's row, naming the others in `merged_claims`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.seed_verdicts import seed_comparison
from analysis.seed_verdicts.seeds import Claim, Seed, SeedFile, Workload
from analysis.statistics.configurations import configuration_spread, rate_of, run_ids
from analysis.statistics.intervals import ratio_interval
from analysis.statistics.planned_runs import case_rows, outlook
from analysis.statistics.pooling import RUN_ID, check_poolable, split_traced, window_of
from analysis.statistics.rules import StatisticsError, StatisticsRules, load_rules
from analysis.statistics.verdicts import verdict

CLAIMS_FILE = "claims.csv"
# claims.csv's columns, in order (analysis/README.md describes each).
COLUMNS = (
    "seed", "claim", "condition", "workload", seed_comparison.CPU_MODEL, seed_comparison.COPIES, "window",
    "rate", "rate_source", "n_a", "n_b", "mean_a", "mean_b", "ratio", "ci_low", "ci_high", "ci_method",
    "published", "published_ratio", "ours", "verdict", "merged_claims", "traced_left_out", "runs_a", "runs_b",
    "traced_a", "traced_b", "top_line_a", "top_line_b",
)  # fmt: skip
ROI = "roi"


def traced_rois(rows: pd.DataFrame) -> str:
    """The traced ROIs of `rows` as `run:roi`, sorted, space-separated: where a side's top line is read."""
    if RUN_ID not in rows or rows.empty:
        return ""
    rois = rows[ROI].astype(int).astype(str) if ROI in rows else pd.Series("0", index=rows.index)
    return " ".join(sorted(rows[RUN_ID].astype(str) + ":" + rois))
HEADLINE = " (headline)"


def _base(seed: Seed, claim: Claim, workload: Workload, cpu_model: str, copies: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    row.update(
        seed=seed.id, claim=claim.id + (HEADLINE if claim.headline else ""), condition=claim.condition,
        workload=workload.name, **{seed_comparison.CPU_MODEL: cpu_model, seed_comparison.COPIES: copies},
        published=claim.direction, published_ratio=claim.ratio, traced_left_out=0,
    )  # fmt: skip
    for column in ("n_a", "n_b"):
        row[column] = 0
    for column in ("mean_a", "mean_b", "ratio", "ci_low", "ci_high"):
        row[column] = math.nan
    return row


def _one_configuration(rows: pd.DataFrame, side: str, rules: StatisticsRules) -> str:
    """"" when `rows` are repeats of one configuration; else why not, naming the runs of each."""
    spread = configuration_spread(rows, rules)
    return f"refused: {side} {spread}" if spread else ""


def judge_pair(row: dict[str, Any], claim: Claim, a_rows: pd.DataFrame, b_rows: pd.DataFrame, column: str,
               band: float, rules: StatisticsRules) -> dict[str, Any]:  # fmt: skip
    """`row` with the means, ratio, interval and verdict of one pair of configurations."""
    row = dict(row, runs_a=run_ids(a_rows), runs_b=run_ids(b_rows), n_a=len(a_rows), n_b=len(b_rows))
    for side, rows in (("a", a_rows), ("b", b_rows)):
        refused = _one_configuration(rows, side, rules)
        if refused:
            return dict(row, verdict=refused)
        check_poolable(rows, rules, f"claim {claim.id}, {side}")
    if column not in a_rows or column not in b_rows:
        return dict(row, verdict=f"runs without a rate (no column {column!r} in the metrics table)")
    a, b = a_rows[column].astype(float), b_rows[column].astype(float)
    if a.isna().any() or b.isna().any() or b.mean() == 0:
        return dict(row, verdict=f"runs without a rate ({column} of a: {a.tolist()}, of b: {b.tolist()})")
    interval = ratio_interval(a.tolist(), b.tolist(), rules, what=f"claim {claim.id}")
    identical = any(len(side) >= 2 and side.nunique() == 1 for side in (a, b))
    ours, said = verdict(interval, claim.direction, band, len(a), len(b), identical)
    return dict(
        row, mean_a=float(a.mean()), mean_b=float(b.mean()), ratio=interval.estimate, ci_low=interval.low,
        ci_high=interval.high, ci_method=interval.method, ours=ours, verdict=said,
    )  # fmt: skip


def _windows(rows: pd.DataFrame, rules: StatisticsRules) -> pd.Series:
    return pd.Series([window_of(row, rules) for _, row in rows.iterrows()], index=rows.index, dtype=object)


def judge_claim(rows: pd.DataFrame, seed: Seed, claim: Claim, workload: Workload, band: float,
                rules: StatisticsRules, cpu_model: str = "", planned: pd.DataFrame | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The judgements of one claim on one workload's runs (of one CPU model): one per copy count
    (as seed_comparison.py splits them) and per timed window. A judgement without runs says so;
    given the campaign's runs not yet made (`planned`, planned_runs.case_rows), it also says
    which of them are to come for it, or that the campaign has none."""

    def not_run(why: str, missing: tuple[str, ...], copies: float = math.nan, window: str = "") -> str:
        said = "not run: " + why
        if planned is None:
            return said
        return said + "; " + outlook(planned, rows, seed, claim, workload, rules, missing, copies, window, cpu_model)

    ours = rows[rows["testcase"] == workload.name] if "testcase" in rows else rows.iloc[0:0]
    a_all, a_missing = seed_comparison.matching(ours, seed, claim.a)
    b_all, b_missing = seed_comparison.matching(ours, seed, claim.b)
    base = _base(seed, claim, workload, cpu_model, math.nan)
    column, source = rate_of(workload.name, workload.rate, rules)
    base.update(rate=column, rate_source=source)
    if a_all.empty or b_all.empty:
        sides = (("a", a_missing), ("b", b_missing))
        why = "; ".join(f"{side}: {reason}" for side, reason in sides if reason)
        return [dict(base, verdict=not_run(why, tuple(side for side, reason in sides if reason)))]
    a_rows, a_traced = split_traced(a_all, rules, f"claim {claim.id}, a")
    b_rows, b_traced = split_traced(b_all, rules, f"claim {claim.id}, b")
    base.update(traced_left_out=len(a_traced) + len(b_traced), traced_a=traced_rois(a_traced), traced_b=traced_rois(b_traced))
    if a_rows.empty or b_rows.empty:
        side = "a" if a_rows.empty else "b"
        return [dict(base, verdict=not_run(f"{side}: only traced runs (attribution only, no rate)", (side,)))]
    counts = seed_comparison.copy_counts(a_rows, b_rows, seed)
    if not counts:
        pairs = [(seed_comparison.one_count(a_rows, b_rows), a_rows, b_rows)]
    else:
        copies = seed_comparison.COPIES
        pairs = [(count, a_rows[a_rows[copies] == count], b_rows[b_rows[copies] == count]) for count in counts]
    out = []
    for count, a_of, b_of in pairs:
        of_count = dict(base, **{seed_comparison.COPIES: count})
        if a_of.empty or b_of.empty:
            side = "a" if a_of.empty else "b"
            out.append(dict(of_count, verdict=not_run(f"{side}: no run with {seed_comparison.COPIES}={count:g}", (side,), count)))
            continue
        a_windows, b_windows = _windows(a_of, rules), _windows(b_of, rules)
        for window in sorted(set(a_windows) | set(b_windows)):
            in_window = dict(of_count, window=window)
            a_w, b_w = a_of[a_windows == window], b_of[b_windows == window]
            if a_w.empty or b_w.empty:
                side = "a" if a_w.empty else "b"
                out.append(dict(in_window, verdict=not_run(f"{side}: no untraced run with window {window}", (side,), count, window)))
            else:
                out.append(judge_pair(in_window, claim, a_w, b_w, column, band, rules))
    return out


def merge_shared_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per judgement: rows of one seed with the same runs of a and of b, the same rate and
    the same published direction are one; the first claim's row stays, naming the others (and
    their published ratios) in `merged_claims`."""
    if frame.empty:
        return frame
    judged = frame["runs_a"].astype(str).ne("") & frame["runs_b"].astype(str).ne("")
    keep: list[int] = []
    first_of: dict[tuple[str, ...], int] = {}
    merged: dict[int, list[str]] = {}
    for index, row in frame.iterrows():
        if not judged[index]:
            keep.append(index)
            continue
        key = (str(row["seed"]), str(row["runs_a"]), str(row["runs_b"]), str(row["rate"]), str(row["published"]))
        if key in first_of:
            merged[first_of[key]].append(f"{row['claim']} (published {row['published_ratio']:g})")
            continue
        first_of[key] = index
        merged[index] = []
        keep.append(index)
    out = frame.loc[keep].copy()
    out["merged_claims"] = [", ".join(merged.get(index, [])) for index in keep]
    return out.reset_index(drop=True)


def claims_table(table: pd.DataFrame, seed: Seed, band: float, rules: StatisticsRules | None = None,
                 planned: pd.DataFrame | None = None) -> pd.DataFrame:  # fmt: skip
    """Every judgement of one seed's claims on our runs (COLUMNS), shared run pairs merged; with the
    campaign's runs not yet made (`planned`, planned_runs.planned_rows), a claim not run says what it
    waits for."""
    rules = rules or load_rules()
    found = [
        judgement
        for case in seed_comparison.claim_cases(table, seed)
        for judgement in judge_claim(
            case.rows, case.seed, case.claim, case.workload, band, rules, case.cpu_model,
            None if planned is None else case_rows(planned, case.seed, case.cpu_model),
        )  # fmt: skip
    ]
    return merge_shared_pairs(pd.DataFrame(found, columns=list(COLUMNS)))


def all_claims(table: pd.DataFrame, seed_file: SeedFile, rules: StatisticsRules | None = None) -> pd.DataFrame:
    """claims_table for every seed of the file, one frame."""
    band = seed_file.agreement.relative_tolerance
    frames = [claims_table(table, seed, band, rules) for seed in seed_file.seeds]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))


def write_claims(claims: pd.DataFrame, out: Path) -> Path:
    """claims.csv in `out` (next to metrics.csv), the columns in COLUMNS' order."""
    missing = [column for column in COLUMNS if column not in claims.columns]
    if missing:
        raise StatisticsError(f"claims table: missing column(s) {missing}")
    path = Path(out) / CLAIMS_FILE
    claims.loc[:, list(COLUMNS)].to_csv(path, index=False)
    return path
