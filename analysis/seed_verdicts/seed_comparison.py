"""Each seed's published claims against our gem5 runs of its study.

For every claim of analysis/data/seeds.toml (configuration a against b,
the published direction and ratio) and every workload of its seed that
our study ran, find our runs of a and of b, and compare. Our measure is
the workload's operations per simulated second of the ROI (higher is
better), whatever the seed measured (throughput, time, jobs per minute):
a claim is a statement about which configuration is better, and that is
what is compared. The verdict is plain: agrees, disagrees, or says which
runs are missing. The report judges claims with analysis/statistics/
(repeats, intervals, guest-timed rates, traced runs left out); this
module's matching of runs to a claim's configurations is what it uses.

Configurations map onto our runs by the seed's match keys:
  variant -> the kernel build and/or boot switch the seed's [seed.variants] names
  kernel  -> "up" is our up build, "smp" any SMP build
  cpus, nodes -> the machine's size; threads -> the testcase's copies
A study `<seed study>-<anything>` belongs to the seed's study (campaigns
split a study per size when its thread count follows the size).

Runs are never averaged across what a claim does not name: a claim is
judged once per ROI CPU model (the main one first) and, unless threads
is one of its match keys, once per number of copies its runs of a and b
ran (dbench with 4 and with 8 clients: two judgements, not one mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pandas as pd

from analysis.seed_verdicts.seeds import OPS_RATE, Claim, Seed, Workload, belongs_to_study, claim_direction

OUR_METRIC = OPS_RATE
OUR_BETTER = "higher"
UP_KERNEL = "up"
SIZE_KEYS = {"cpus": "cpus", "nodes": "nodes", "threads": "copies"}
CPU_MODEL = "roi_cpu"  # the metrics table's column: the CPU model of the ROI
COPIES = SIZE_KEYS["threads"]  # the metrics table's column: copies of the testcase that ran
# The CPU model of every study (campaigns' default); claims are judged
# separately for each model a seed's runs used, this one first.
MAIN_CPU_MODEL = "timing"


def study_rows(table: pd.DataFrame, seed: Seed) -> pd.DataFrame:
    if table.empty or "study" not in table:
        return table.iloc[0:0]
    belongs = [belongs_to_study(str(study), seed.study) for study in table["study"].fillna("")]
    return table[pd.Series(belongs, index=table.index, dtype=bool)]


def seed_run_ids(table: pd.DataFrame, seed: Seed) -> set[str]:
    """The runs of the seed's studies under every condition it declares: as shipped and its precondition."""
    return {str(run) for condition in seed.declared_conditions() for run in study_rows(table, seed.under(condition)).get("run_id", [])}


def matching(rows: pd.DataFrame, seed: Seed, config: dict[str, Any]) -> tuple[pd.DataFrame, str]:
    """Our rows of one published configuration, and why none match when empty."""
    for key in seed.match_keys:
        value = config.get(key)
        if key == "variant":
            variant = seed.variants.get(str(value))
            if variant is None:
                return rows.iloc[0:0], f"variant {value!r} has no counterpart in seeds.toml"
            specs = rows["run_spec"].fillna("") if "run_spec" in rows else [""] * len(rows)
            stands = [variant.stands_for(str(k), str(b), str(r)) for k, b, r in zip(rows["kernel_build"], rows["boot_args"].fillna(""), specs)]
            rows = rows[np.array(stands, dtype=bool)]
        elif key == "kernel":
            rows = rows[(rows["kernel_build"] == UP_KERNEL) == (value == UP_KERNEL)]
        elif key in SIZE_KEYS:
            rows = rows[rows[SIZE_KEYS[key]] == value]
        else:
            return rows.iloc[0:0], f"no column of ours for the seed's key {key!r}"
        if rows.empty:
            return rows, f"no run with {key}={value}"
    return rows, ""


def compare_claim(
    rows: pd.DataFrame, seed: Seed, claim: Claim, workload: Workload, tolerance: float, cpu_model: str = ""
) -> list[dict[str, Any]]:
    """One judgement of a claim on one workload's runs: one per copy count of its runs of a and b
    unless the claim names its threads (they are then one of its match keys)."""
    ours = rows[rows["testcase"] == workload.name]
    a_rows, a_missing = matching(ours, seed, claim.a)
    b_rows, b_missing = matching(ours, seed, claim.b)
    row: dict[str, Any] = {
        "seed": seed.id,
        "claim": claim.id + (" (headline)" if claim.headline else ""),
        "condition": claim.condition,
        "workload": workload.name,
        CPU_MODEL: cpu_model,
        COPIES: math.nan,
        "rate": workload.rate,
        "published": claim.direction,
        "published_ratio": claim.ratio,
        "ours_a": math.nan,
        "ours_b": math.nan,
        "ours_ratio": math.nan,
        "ours": "",
        "verdict": "",
    }
    if a_rows.empty or b_rows.empty:
        row["verdict"] = "not run: " + "; ".join(f"{side}: {why}" for side, why in (("a", a_missing), ("b", b_missing)) if why)
        return [row]
    if workload.rate not in ours:
        row["verdict"] = f"runs without a rate (no column {workload.rate!r} in the metrics table)"
        return [row]
    counts = copy_counts(a_rows, b_rows, seed)
    if not counts:
        return [judged(dict(row, **{COPIES: one_count(a_rows, b_rows)}), claim, workload, a_rows, b_rows, tolerance)]
    out = []
    for copies in counts:
        a_of, b_of = a_rows[a_rows[COPIES] == copies], b_rows[b_rows[COPIES] == copies]
        of_count = dict(row, **{COPIES: copies})
        if a_of.empty or b_of.empty:
            side = "a" if a_of.empty else "b"
            of_count["verdict"] = f"not run: {side}: no run with {COPIES}={copies:g}"
            out.append(of_count)
        else:
            out.append(judged(of_count, claim, workload, a_of, b_of, tolerance))
    return out


def _counts(rows: pd.DataFrame) -> set[float]:
    return {float(c) for c in rows[COPIES].dropna()} if COPIES in rows else set()


def copy_counts(a_rows: pd.DataFrame, b_rows: pd.DataFrame, seed: Seed) -> list[float]:
    """The copy counts a claim is judged at, one judgement each: every count of a and of b when
    one side ran more than one (its runs would otherwise be averaged across them); [] when each
    side ran one count (equal, or differing as the claim's sizes differ: a scaling claim), when
    the claim names its threads itself (a match key) or when the runs do not say."""
    a_counts, b_counts = _counts(a_rows), _counts(b_rows)
    if "threads" in seed.match_keys or (len(a_counts) <= 1 and len(b_counts) <= 1):
        return []
    return sorted(a_counts | b_counts)


def one_count(a_rows: pd.DataFrame, b_rows: pd.DataFrame) -> float:
    """The copy count both sides ran, or NaN when they differ or do not say."""
    counts = _counts(a_rows) | _counts(b_rows)
    return counts.pop() if len(counts) == 1 else math.nan


def judged(row: dict[str, Any], claim: Claim, workload: Workload, a_rows: pd.DataFrame, b_rows: pd.DataFrame, tolerance: float) -> dict[str, Any]:
    """`row` with our mean rate of a and of b, our direction and the verdict."""
    row = dict(row)
    a, b = float(a_rows[workload.rate].mean()), float(b_rows[workload.rate].mean())
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        row["verdict"] = f"runs without a rate ({workload.rate} of a: {a}, of b: {b})"
        return row
    direction = claim_direction(a, b, OUR_BETTER, tolerance)
    row.update(ours_a=a, ours_b=b, ours_ratio=a / b, ours=direction)
    row["verdict"] = "agrees" if direction == claim.direction else "disagrees"
    return row


@dataclass(frozen=True)
class ClaimCase:
    """One claim to judge on one workload's runs of one CPU model, with the seed as its condition sees it."""

    seed: Seed  # Seed.under(the claim's condition): its study and variant stand-ins
    claim: Claim
    workload: Workload
    cpu_model: str
    rows: pd.DataFrame


def compared_rows(table: pd.DataFrame, view: Seed) -> pd.DataFrame:
    """The rows of one condition's view of a seed its claims are judged on: its study's, at its compare_on sizes."""
    rows = study_rows(table, view)
    for key, value in view.compare_on.items():  # the seed's own setting (its one busy CPU)
        rows = rows[rows[SIZE_KEYS[key]] == value]
    return rows


def claim_cases(table: pd.DataFrame, seed: Seed) -> Iterator[ClaimCase]:
    """Every claim of `seed` on our runs: each condition's claims on its own study's runs, at the
    seed's compare_on sizes, per workload and CPU model."""
    for condition in seed.conditions():
        view = seed.under(condition)
        rows = compared_rows(table, view)
        models = cpu_models(rows)
        for claim in (c for c in view.claims if c.condition == condition):
            for workload in view.workloads:
                for model in models:
                    yield ClaimCase(view, claim, workload, model, rows if not model else rows[rows[CPU_MODEL] == model])


def comparison_table(table: pd.DataFrame, seed: Seed, tolerance: float) -> pd.DataFrame:
    out = [
        judgement
        for case in claim_cases(table, seed)
        for judgement in compare_claim(case.rows, case.seed, case.claim, case.workload, tolerance, case.cpu_model)
    ]
    return pd.DataFrame(out)


def cpu_models(rows: pd.DataFrame) -> list[str]:
    """The ROI CPU models among `rows`, the main one first; [""] when the table does not say."""
    if CPU_MODEL not in rows:
        return [""]
    found = sorted({str(m) for m in rows[CPU_MODEL].dropna()}, key=lambda m: (m != MAIN_CPU_MODEL, m))
    return found or [""]
