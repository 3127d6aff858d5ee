"""The seeds at a glance: each seed's mechanism under its precondition and as shipped in 6.1.

Issue 18 asks the report for two rows per seed, "mechanism (precondition)"
and "as shipped in 6.1", each with the published effect beside ours, the
verdict with its interval, and its measured top hot line. The claims table
(analysis/statistics/claims.py) holds every judgement; this module picks,
for each seed and condition, the claim that carries it (the headline where
the headline is judged under that condition, else the condition's first
claim) and shows that claim's judgements: one per workload, CPU model and
copy count it was judged on, so a row can be more than one line. Lines the
campaign never runs (`not in the campaign`) are left to the seed's own
table unless nothing else is left. A judgement without a traced run of its
own borrows the top line of the nearest claim of the same seed and
condition that has one, and says which.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.seed_verdicts.seeds import AS_SHIPPED, PRECONDITION, Seed, SeedFile
from analysis.seed_verdicts.upstream_moves import Move
from analysis.statistics.claims import HEADLINE
from analysis.statistics.planned_runs import NOT_PLANNED

ROW_NAMES = {PRECONDITION: "mechanism (precondition)", AS_SHIPPED: "as shipped in 6.1"}
COLUMNS = ("seed", "row", "claim", "judged on", "published", "ours (95% interval)", "n", "verdict", "top line", "what it stands on")
NONE = "—"
NO_INTERVAL = "no interval: one run on a side"


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _carrier(rows: pd.DataFrame) -> str:
    """The claim (as the claims table names it) that carries one seed's condition."""
    headline = rows[rows["claim"].str.endswith(HEADLINE)]
    return str((headline if not headline.empty else rows)["claim"].iloc[0])


def _judged_on(row: pd.Series) -> str:
    parts = [str(row["workload"])]
    copies = _number(row.get("copies"))
    if not math.isnan(copies):
        parts.append(f"{copies:g} copies")
    model = str(row.get("roi_cpu") or "")
    if model and model != "nan":
        parts.append(f"{model} CPU")
    return ", ".join(parts)


def _ours(row: pd.Series) -> str:
    ratio, low, high = (_number(row.get(key)) for key in ("ratio", "ci_low", "ci_high"))
    if math.isnan(ratio):
        return NONE
    if math.isnan(low) or math.isnan(high):  # a side of one run: its spread, and so an interval, is unknown
        return f"{ratio:.3f} ({NO_INTERVAL})"
    return f"{ratio:.3f} ({low:.3f} to {high:.3f})"


def _published(row: pd.Series) -> str:
    ratio = _number(row.get("published_ratio"))
    direction = str(row.get("published") or "").replace("_", " ")
    return f"{direction}, {ratio:g}" if not math.isnan(ratio) else direction


def _side_label(seed: Seed, claim: str, side: str) -> str:
    """"a (padded)": the side and, where the seed's claim names one, its variant."""
    found = next((c for c in seed.claims if c.id == claim.removesuffix(HEADLINE)), None)
    variant = (found.a if side == "a" else found.b).get("variant") if found is not None else None
    return f"{side} ({variant})" if variant is not None else side


def _top_line(row: pd.Series, seed: Seed) -> str:
    """The measured top line of each traced side, each named ("a (padded): ...; b (packed): ...") when both
    were traced and differ, else the one there is; "" when neither side was traced."""
    lines = {side: str(row[f"top_line_{side}"]) for side in ("a", "b")
             if isinstance(row.get(f"top_line_{side}"), str) and row[f"top_line_{side}"]}  # fmt: skip
    if len(lines) == 2 and lines["a"] != lines["b"]:
        return "; ".join(f"{_side_label(seed, str(row['claim']), side)}: {line}" for side, line in lines.items())
    return next(iter(lines.values()), "")


def _borrowed_top_line(row: pd.Series, same: pd.DataFrame, seed: Seed) -> str:
    """The judgement's own top lines, else the first of its seed and condition's, named."""
    own = _top_line(row, seed)
    if own:
        return own
    for _, other in same.iterrows():
        line = _top_line(other, seed)
        if line:
            return f"{line} (traced for {other['claim'].removesuffix(HEADLINE)}, {_judged_on(other)})"
    return f"{NONE} (no traced run of this seed under this condition)"


def _stands_on(seed: Seed, condition: str, moves: dict[str, Move]) -> str:
    """Under the precondition, the study that restores the seed's bottleneck (the seed's section says how); as
    shipped, the upstream change that moved it and its first release (its "What moved it in 6.1" says more)."""
    if condition == PRECONDITION and seed.precondition is not None:
        return f"study {seed.precondition.study}, the bottleneck restored"
    move = moves.get(seed.id)
    if move is None:
        return f"study {seed.study}"
    return f"{move.change} ({move.release.split(' (')[0]})"


def glance_table(claims: pd.DataFrame, seed_file: SeedFile, moves: dict[str, Move]) -> pd.DataFrame:
    """One block of rows per seed and condition (precondition first): the carrying claim's judgements
    (COLUMNS). `claims` is the report's claims table, top lines filled (hotlines/claim_lines.py)."""
    out: list[dict[str, Any]] = []
    for seed in seed_file.seeds:
        for condition in (PRECONDITION, AS_SHIPPED):
            same = claims[(claims["seed"].astype(str) == seed.id) & (claims["condition"] == condition)]
            if same.empty:
                continue
            carrier = same[same["claim"] == _carrier(same)]
            shown = carrier[~carrier["verdict"].astype(str).str.contains(NOT_PLANNED, regex=False)]
            for _, row in (shown if not shown.empty else carrier).iterrows():
                out.append({
                    "seed": seed.id, "row": ROW_NAMES[condition], "claim": row["claim"], "judged on": _judged_on(row),
                    "published": _published(row), "ours (95% interval)": _ours(row),
                    "n": f"{int(row['n_a'])} + {int(row['n_b'])}", "verdict": row["verdict"],
                    "top line": _borrowed_top_line(row, same, seed),
                    "what it stands on": _stands_on(seed, condition, moves),
                })  # fmt: skip
    return pd.DataFrame(out, columns=list(COLUMNS))


def caption() -> str:
    return (
        "The seeds at a glance: each seed's mechanism under its precondition and as shipped in 6.1, by the claim that "
        "carries it (the headline where it is judged under that condition), published beside ours; every claim is in "
        "its seed's table below"
    )
