"""Seed claims judged on intervals (analysis/statistics/claims.py, verdicts.py), on synthetic repeats."""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from analysis.seed_verdicts.seeds import AS_SHIPPED, load_seed_file
from analysis.statistics.claims import CLAIMS_FILE, COLUMNS, claims_table, write_claims
from analysis.statistics.intervals import Interval
from analysis.statistics.verdicts import AGREES, DISAGREES, IDENTICAL_REPEATS, INCONCLUSIVE, SINGLE_RUN, our_direction, verdict

def shipped_only_004() -> str:
    """The seed file with seed 004 as these tests were written for: no [seed.precondition] of its own and every
    claim judged as shipped only (the tests below add a precondition where they need one)."""
    from analysis.seed_verdicts.seeds import DEFAULT

    text = DEFAULT.read_text()
    start = text.index("# The seed's profile blames dget_parent()")
    end = text.index("\n", text.index('study = "stat-lockref"', start))
    end = text.index("\n", text.index("variants = ", end)) + 1
    text = text[:start] + text[end:]
    return re.sub(r'(id = "004-[^"]+"\n(?:headline = true\n)?)condition = \["as-shipped", "precondition"\]\n', r"\1", text)


_SHIPPED_ONLY = tempfile.TemporaryDirectory(prefix="lockstudy-seeds-")
SHIPPED_ONLY_FILE = Path(_SHIPPED_ONLY.name) / "seeds.toml"
SHIPPED_ONLY_FILE.write_text(shipped_only_004())
SEED_FILE = load_seed_file(SHIPPED_ONLY_FILE)
SEEDS = {seed.id: seed for seed in SEED_FILE.seeds}
LOCKREF = SEEDS["004"]
BAND = 0.02
HEADLINE = "004-cmpxchg-8nodes-10-100 (headline)"
# Seed 004's 8-node claims of its three user ranges: one pair of our configurations.
SAME_PAIR = ("004-cmpxchg-8nodes-200-1000", "004-cmpxchg-8nodes-1100-2000")


def samefile(run_id: str, lockref: str, nodes: int, rate: float, *, trace: str = "off", iterations: int = 100,
             roi_rate: float | None = None) -> dict:  # fmt: skip
    """A metrics-table row of one samefile run of the lockref study."""
    return {
        "run_id": run_id, "study": f"lockref-{nodes}nodes", "machine": "altix-numa", "kind": "ruby-numa",
        "cpus": 2 * nodes, "nodes": nodes, "kernel_build": "smp", "boot_args": f"lockstudy.lockref={lockref}",
        "variant": "qspinlock", "testcase": "samefile", "copies": float(2 * nodes), "roi": 0, "roi_cpu": "timing",
        "run_spec": f"samefile:threads={2 * nodes},iterations={iterations},warmup=10", "trace": trace,
        "perturb_ns": 4.0, "ops_per_s": rate, "ops_per_sim_s": rate if roi_rate is None else roi_rate,
    }  # fmt: skip


def repeats(lockref: str, nodes: int, rates: list[float], **extra: object) -> list[dict]:
    return [samefile(f"{lockref}-{nodes}-{i}", lockref, nodes, rate, **extra) for i, rate in enumerate(rates)]  # type: ignore[arg-type]


def judged(rows: list[dict]) -> pd.DataFrame:
    return claims_table(pd.DataFrame(rows), LOCKREF, BAND).set_index("claim")


def test_a_clear_difference_over_repeats_agrees_with_its_interval() -> None:
    frame = judged(repeats("cmpxchg", 8, [300, 305, 298, 302, 301]) + repeats("spinlock", 8, [100, 102, 99, 101, 100]))
    row = frame.loc[HEADLINE]
    assert (row["n_a"], row["n_b"], row["verdict"], row["ours"]) == (5, 5, AGREES, "a_better")
    assert row["ci_low"] < row["ratio"] < row["ci_high"] and row["ci_low"] > 1 + BAND
    assert row["ci_method"] == "Fieller" and row["condition"] == AS_SHIPPED


def test_a_ratio_whose_interval_straddles_the_band_is_inconclusive() -> None:
    # means 103 against 100: a point ratio of 1.03 would have "agreed" with a 2 % band, but the interval reaches below it
    frame = judged(repeats("cmpxchg", 8, [98, 108, 101, 106, 102]) + repeats("spinlock", 8, [97, 103, 100, 101, 99]))
    row = frame.loc[HEADLINE]
    assert row["ratio"] == pytest.approx(1.03)
    assert row["ci_low"] < 1 + BAND < row["ci_high"]
    assert row["verdict"] == INCONCLUSIVE and row["ours"] == ""


def test_one_run_on_a_side_is_inconclusive_whatever_its_ratio() -> None:
    frame = judged(repeats("cmpxchg", 8, [300]) + repeats("spinlock", 8, [100, 102, 99]))
    row = frame.loc[HEADLINE]
    assert row["ratio"] == pytest.approx(300 / (301 / 3)) and row["verdict"] == SINGLE_RUN
    assert math.isnan(row["ci_low"]) and (row["n_a"], row["n_b"]) == (1, 3)


def test_a_same_claim_agrees_only_when_the_interval_lies_inside_the_band() -> None:
    inside = judged(repeats("cmpxchg", 1, [100.0, 100.2, 99.9, 100.1]) + repeats("spinlock", 1, [100.1, 99.9, 100.0, 100.2]))
    assert inside.loc["004-cmpxchg-1node-10-100", "verdict"] == AGREES
    outside = judged(repeats("cmpxchg", 1, [150, 151, 149, 150]) + repeats("spinlock", 1, [100, 101, 99, 100]))
    assert outside.loc["004-cmpxchg-1node-10-100", "verdict"] == DISAGREES


def test_the_verdict_is_decided_by_the_whole_interval() -> None:
    def around(low: float, high: float) -> Interval:
        return Interval((low + high) / 2, low, high, 0.95, "Fieller")

    assert our_direction(around(1.03, 1.2), BAND) == "a_better"
    assert our_direction(around(0.8, 0.97), BAND) == "b_better"
    assert our_direction(around(0.99, 1.01), BAND) == "same"
    assert our_direction(around(1.01, 1.05), BAND) == ""  # straddles the band's upper edge
    assert our_direction(around(-math.inf, math.inf), BAND) == ""
    assert verdict(around(1.5, 1.6), "a_better", BAND, 1, 5) == ("", SINGLE_RUN)


def test_a_run_pair_shared_by_several_claims_counts_once() -> None:
    frame = judged(repeats("cmpxchg", 8, [300, 305, 298]) + repeats("spinlock", 8, [100, 102, 99]))
    eight_nodes = [claim for claim in frame.index if "8nodes" in claim]
    assert eight_nodes == [HEADLINE]
    merged = frame.loc[HEADLINE, "merged_claims"]
    assert all(claim in merged for claim in SAME_PAIR)


def test_traced_runs_are_left_out_of_the_rate() -> None:
    rows = repeats("cmpxchg", 8, [300, 305, 298]) + repeats("spinlock", 8, [100, 102, 99])
    rows += [samefile("traced-spinlock", "spinlock", 8, 900.0, trace="protocol", iterations=20)]
    row = judged(rows).loc[HEADLINE]
    assert row["traced_left_out"] == 1 and "traced-spinlock" not in row["runs_b"]
    assert (row["n_b"], row["verdict"]) == (3, AGREES)
    # the traced run is where b's top line is read; a has none
    assert (row["traced_a"], row["traced_b"]) == ("", "traced-spinlock:0")


def test_only_traced_runs_give_no_rate() -> None:
    rows = repeats("cmpxchg", 8, [300, 305], trace="protocol") + repeats("spinlock", 8, [100, 102])
    assert judged(rows).loc[HEADLINE, "verdict"] == "not run: a: only traced runs (attribution only, no rate)"


def test_runs_of_different_windows_are_judged_apart_never_averaged() -> None:
    rows = repeats("cmpxchg", 8, [300, 305, 298]) + repeats("spinlock", 8, [100, 102, 99])
    rows += [samefile(f"long-{i}", "cmpxchg", 8, 1000.0 + i, iterations=400) for i in range(3)]
    frame = claims_table(pd.DataFrame(rows), LOCKREF, BAND)
    headline = frame[frame["claim"] == HEADLINE].set_index("window")
    assert headline.loc["iterations=100,seconds=default", "n_a"] == 3
    assert headline.loc["iterations=100,seconds=default", "verdict"] == AGREES
    assert headline.loc["iterations=400,seconds=default", "verdict"].startswith("not run: b: no untraced run with window")


def test_the_rate_is_the_guests_own_window_not_the_roi() -> None:
    # the ROI's rate says spinlock is better; the guest's own window says cmpxchg is: the guest's is judged
    rows = repeats("cmpxchg", 8, [300, 305, 298], roi_rate=50.0) + repeats("spinlock", 8, [100, 102, 99], roi_rate=100.0)
    row = judged(rows).loc[HEADLINE]
    assert (row["rate"], row["rate_source"], row["verdict"]) == ("ops_per_s", "guest window", AGREES)


def test_claims_csv_has_the_columns_in_order(tmp_path: Path) -> None:
    frame = claims_table(pd.DataFrame(repeats("cmpxchg", 8, [3, 3.1]) + repeats("spinlock", 8, [1, 1.1])), LOCKREF, BAND)
    path = write_claims(frame, tmp_path)
    written = pd.read_csv(path)
    assert path.name == CLAIMS_FILE and tuple(written.columns) == COLUMNS
    for column in ("seed", "claim", "condition", "n_a", "n_b", "ratio", "ci_low", "ci_high", "published_ratio", "verdict"):
        assert column in written.columns
    assert set(written["condition"]) == {AS_SHIPPED}


# Seed 004 (the file's last seed) with a precondition: its runs in their own study, on another build.
PRECONDITION = """
[seed.precondition]
study = "limit-lockref"
restores = "the final dentry's lockref on top of the profile"
variants = { cmpxchg = { kernel_build = "smp-limit", boot = "lockstudy.lockref=cmpxchg" }, spinlock = { kernel_build = "smp-limit", boot = "lockstudy.lockref=spinlock" } }
"""


def with_precondition(condition: str) -> str:
    """The seed file with seed 004's headline judged under `condition` (TOML text), and its precondition."""
    text = shipped_only_004().replace('id = "004-cmpxchg-8nodes-10-100"\n', f'id = "004-cmpxchg-8nodes-10-100"\ncondition = {condition}\n')
    return text + PRECONDITION


def test_a_claim_under_both_conditions_is_judged_on_each_studys_runs(tmp_path: Path) -> None:
    path = tmp_path / "seeds.toml"
    path.write_text(with_precondition('["as-shipped", "precondition"]'))
    seed = next(s for s in load_seed_file(path).seeds if s.id == "004")
    assert [c.condition for c in seed.claims if c.id == "004-cmpxchg-8nodes-10-100"] == [AS_SHIPPED, "precondition"]
    limited = [dict(row, study="limit-lockref-8nodes", kernel_build="smp-limit", run_id="limit-" + row["run_id"])
               for row in repeats("cmpxchg", 8, [300.0, 310.0, 305.0]) + repeats("spinlock", 8, [100.0, 101.0, 99.0])]  # fmt: skip
    shipped = repeats("cmpxchg", 8, [100.0, 101.0, 100.5]) + repeats("spinlock", 8, [100.2, 100.0, 100.4])
    # a run of the precondition's study on the as-shipped build stands for no variant there
    stray = [dict(samefile("stray", "cmpxchg", 8, 1.0), study="limit-lockref-8nodes")]
    claims = claims_table(pd.DataFrame(limited + shipped + stray), seed, BAND)
    headline = claims[claims["claim"] == HEADLINE].set_index("condition")
    assert headline.loc["precondition", "verdict"] == AGREES and headline.loc["precondition", "ratio"] == pytest.approx(3.05, rel=0.01)
    assert headline.loc["precondition", "runs_a"].split() == sorted(f"limit-cmpxchg-8-{i}" for i in range(3))
    assert headline.loc[AS_SHIPPED, "runs_a"].split() == sorted(f"cmpxchg-8-{i}" for i in range(3))
    assert headline.loc[AS_SHIPPED, "verdict"] != AGREES


def test_a_precondition_claim_needs_a_declared_precondition(tmp_path: Path) -> None:
    from analysis.seed_verdicts.seeds import SeedsError

    path = tmp_path / "seeds.toml"
    path.write_text(with_precondition('"precondition"').replace(PRECONDITION, ""))
    with pytest.raises(SeedsError, match=r"judged under the precondition, and the seed declares no \[seed.precondition\]"):
        load_seed_file(path)
    for shared in ("lockref-limit", "lockref-8nodes"):
        path.write_text(with_precondition('"precondition"').replace('study = "limit-lockref"', f'study = "{shared}"'))
        with pytest.raises(SeedsError, match="would read each other's runs"):
            load_seed_file(path)
    # the seed's own study: a switch restores the precondition, and the stand-ins tell the runs apart
    path.write_text(with_precondition('"precondition"').replace('study = "limit-lockref"', 'study = "lockref"'))
    assert next(s for s in load_seed_file(path).seeds if s.id == "004").precondition.study == "lockref"
    path.write_text(with_precondition('"precondition"').replace("{ cmpxchg = {", "{ nosuch = {"))
    with pytest.raises(SeedsError, match="'nosuch' is not in"):
        load_seed_file(path)
    path.write_text(with_precondition('["precondition", "precondition"]'))
    with pytest.raises(SeedsError, match="conditions repeat"):
        load_seed_file(path)


def test_a_claim_may_be_marked_as_judged_on_its_precondition(tmp_path: Path) -> None:
    from analysis.seed_verdicts.seeds import SeedsError

    text = shipped_only_004().replace('id = "004-cmpxchg-4nodes-10-100"\n', 'id = "004-cmpxchg-4nodes-10-100"\ncondition = "precondition"\n') + PRECONDITION
    path = tmp_path / "seeds.toml"
    path.write_text(text)
    claims = {claim.id: claim for claim in next(s for s in load_seed_file(path).seeds if s.id == "004").claims}
    assert claims["004-cmpxchg-4nodes-10-100"].condition == "precondition"
    assert claims["004-cmpxchg-8nodes-10-100"].condition == AS_SHIPPED
    path.write_text(text.replace('condition = "precondition"', 'condition = "patched"'))
    with pytest.raises(SeedsError, match="condition"):
        load_seed_file(path)


def test_repeats_that_came_out_identical_give_no_verdict() -> None:
    """Five perturbed repeats of the same number (seen: kbench on the bus machine, where the perturbed memory is
    never on the lock's path) are one run's worth of information, whatever the ratio."""
    frame = judged(repeats("cmpxchg", 8, [300.0] * 5) + repeats("spinlock", 8, [100, 102, 99, 101, 100]))
    assert frame.loc[HEADLINE, "verdict"] == IDENTICAL_REPEATS
    assert frame.loc[HEADLINE, "ratio"] == pytest.approx(300 / 100.4)

