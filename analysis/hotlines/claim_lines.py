"""A seed claim's measured top lines: the hottest line of each traced ROI that stands for a side.

claims.csv's `traced_a` and `traced_b` list the traced ROIs (`run:roi`)
whose configuration matches the claim's a or b: the runs that the
judgement leaves out of the rate (attribution only). Each ROI's top line
by coherence requests, named as in hotlines.csv (a slab line's fields in
brackets), with its share of the
ROI's requests, becomes `top_line_a` / `top_line_b`: what a reading of the
claim may name as the bottleneck. ROIs of different runs are not summed:
their run-time memory is laid out differently, so one address is not one
object across runs.
"""

from __future__ import annotations

import pandas as pd

from analysis.hotlines.table import HotlineTables

NOT_PROFILED = "not profiled"  # a traced ROI without a profile: hotlines' notes say why
ROI_SEPARATOR = "; "


def top_line(tables: HotlineTables, rois: str) -> str:
    """`name +offset (share of N requests)` of each ROI's top line, in the order `rois` lists them."""
    parts = []
    for token in rois.split():
        run_id, _, roi_text = token.rpartition(":")
        key = (run_id, int(roi_text))
        profile = tables.profiles.get(key)
        if profile is None or not profile.lines:
            parts.append(f"{run_id}: {NOT_PROFILED}")
            continue
        top = profile.ranked()[0]
        name, offset = tables.namers[run_id].name(top.line, key[1])
        at = "" if offset is None else f" +{offset}"
        fields = tables.namers[run_id].fields(top.line, key[1])
        held = f" [{fields}]" if fields else ""
        parts.append(f"{name}{at}{held} ({profile.share(top):.1%} of {profile.total_requests:,} requests)")
    return ROI_SEPARATOR.join(parts)


def with_top_lines(claims: pd.DataFrame, tables: HotlineTables) -> pd.DataFrame:
    """`claims` with top_line_a and top_line_b filled from its traced_a and traced_b."""
    if claims.empty:
        return claims.assign(top_line_a=pd.Series(dtype=str), top_line_b=pd.Series(dtype=str))
    return claims.assign(
        top_line_a=[top_line(tables, str(rois)) for rois in claims["traced_a"].fillna("")],
        top_line_b=[top_line(tables, str(rois)) for rois in claims["traced_b"].fillna("")],
    )
