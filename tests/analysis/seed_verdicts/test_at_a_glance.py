"""The seeds at a glance: two rows per seed, mechanism and as shipped (analysis/seed_verdicts/at_a_glance.py)."""

from __future__ import annotations

import math

import pandas as pd

from analysis.seed_verdicts.at_a_glance import COLUMNS, ROW_NAMES, glance_table
from analysis.seed_verdicts.seeds import AS_SHIPPED, PRECONDITION, load_seed_file
from analysis.seed_verdicts.upstream_moves import load_moves
from analysis.statistics.claims import COLUMNS as CLAIM_COLUMNS
from analysis.statistics.planned_runs import NOT_PLANNED

SEED_FILE = load_seed_file()
MOVES = load_moves()
SEED = "002"
TOP = "slab:mm_struct +64 [page_table_lock] (13.3% of 115,300 requests)"


def claim(name: str, condition: str, ratio: float = math.nan, verdict: str = "agrees", copies: float = 32.0, **extra: object) -> dict:
    row: dict[str, object] = dict.fromkeys(CLAIM_COLUMNS, "")
    row.update(
        seed=SEED, claim=name, condition=condition, workload="pft", roi_cpu="timing", copies=copies, n_a=5, n_b=5,
        ratio=ratio, ci_low=ratio - 0.02, ci_high=ratio + 0.02, published="a_better", published_ratio=1.4461,
        verdict=verdict,
    )  # fmt: skip
    row.update(extra)
    return row


def table(rows: list[dict]) -> pd.DataFrame:
    return glance_table(pd.DataFrame(rows, columns=list(CLAIM_COLUMNS)), SEED_FILE, MOVES)


def test_each_condition_gets_its_headline_with_interval_n_and_the_top_line_it_borrows_and_says_from_where() -> None:
    rows = [
        claim("002-hbo-32threads-1gb (headline)", PRECONDITION, 1.907),
        claim("002-hbo-16threads-1gb", PRECONDITION, 1.373, copies=16.0, top_line_a=TOP),
        claim("002-hbo-32threads-1gb (headline)", AS_SHIPPED, verdict="not run: a: no run with threads=32; to come: 5 run(s) of a"),
        claim("002-hbo-16threads-1gb", AS_SHIPPED, 1.004, verdict="disagrees", copies=16.0),
    ]
    glance = table(rows)
    assert list(glance.columns) == list(COLUMNS) and list(glance["row"]) == [ROW_NAMES[PRECONDITION], ROW_NAMES[AS_SHIPPED]]
    mechanism, shipped = glance.iloc[0], glance.iloc[1]
    assert mechanism["ours (95% interval)"] == "1.907 (1.887 to 1.927)" and mechanism["n"] == "5 + 5"
    assert mechanism["published"] == "a better, 1.4461" and mechanism["judged on"] == "pft, 32 copies, timing CPU"
    assert mechanism["top line"] == f"{TOP} (traced for 002-hbo-16threads-1gb, pft, 16 copies, timing CPU)"
    assert mechanism["what it stands on"] == "study ptlock-spinlock, the bottleneck restored"
    # as shipped: the headline not run yet says what is to come, and the row names what moved the bottleneck
    assert shipped["ours (95% interval)"] == "—" and "to come" in shipped["verdict"]
    assert shipped["top line"].startswith("— (no traced run")
    assert shipped["what it stands on"] == f"{MOVES[SEED].change} ({MOVES[SEED].release.split(' (')[0]})"


def test_judgements_the_campaign_never_runs_stay_in_the_seeds_own_table_unless_nothing_else_is_left() -> None:
    never = f"not run: a: no run with kernel=up; {NOT_PLANNED} (a: no run with kernel=up)"
    rows = [
        claim("002-hbo-32threads-1gb (headline)", PRECONDITION, 1.907),
        claim("002-hbo-32threads-1gb (headline)", PRECONDITION, roi_cpu="o3", verdict=never),
        claim("002-hbo-16threads-1gb", AS_SHIPPED, verdict=never, copies=16.0),
    ]
    glance = table(rows)
    assert list(glance["verdict"]) == ["agrees", never]  # the o3 line left out; as shipped has nothing else
    # without a headline under a condition, the condition's first claim carries it
    assert glance.iloc[1]["claim"] == "002-hbo-16threads-1gb"


def test_a_judgement_traced_on_both_sides_shows_each_sides_top_line_by_its_variant() -> None:
    """Seed 000's precondition: packed, both locks' line tops the profile; padded, each lock's own line."""
    packed_top, padded_top = "bench_area | bench:lock | bench:pair_packed_lock (71.9%)", "bench_area | bench:pair_padded_lock (37.1%)"
    rows = [claim("000-peak-8cpus (headline)", PRECONDITION, 1.537, seed="000", workload="kbench", copies=8.0,
                  top_line_a=padded_top, top_line_b=packed_top)]  # fmt: skip
    glance = table(rows)
    assert glance.iloc[0]["top line"] == f"a (padded): {padded_top}; b (packed): {packed_top}"
    same = [claim("000-peak-8cpus (headline)", PRECONDITION, 1.537, seed="000", workload="kbench", copies=8.0,
                  top_line_a=padded_top, top_line_b=padded_top)]  # fmt: skip
    assert table(same).iloc[0]["top line"] == padded_top


def test_a_ratio_with_one_run_on_a_side_says_it_has_no_interval_instead_of_printing_nan() -> None:
    """Seed 000's dbench headline after the packed build's first run: 5 + 1, no interval yet."""
    rows = [claim("002-hbo-32threads-1gb (headline)", AS_SHIPPED, 0.999, verdict="inconclusive (n=1)", n_b=1,
                  ci_low=math.nan, ci_high=math.nan)]  # fmt: skip
    shown = table(rows).iloc[0]
    assert shown["ours (95% interval)"] == "0.999 (no interval: one run on a side)" and shown["n"] == "5 + 1"
    assert "nan" not in shown["ours (95% interval)"]
