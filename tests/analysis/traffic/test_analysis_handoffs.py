"""Messages per hand-off against the analytical bound (analysis/traffic/handoffs.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.traffic import handoffs

BOUNDS = handoffs.load_bounds()
METRIC = BOUNDS.metric


SPREAD = (0.99, 1.0, 1.01)  # three perturbed repeats of a size, 1 % apart: an interval narrow enough to settle an order


def kbench(variant: str, values: dict[int, float], machine: str = "piii-smp", spread: tuple[float, ...] = SPREAD) -> list[dict]:
    return [
        {"machine": machine, "variant": variant, "cpus": cpus, "nodes": 1, "testcase": "kbench", "handoffs": 100.0, METRIC: value * factor}
        for cpus, value in values.items()
        for factor in spread
    ]


def table(*groups: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for group in groups for row in group])


def verdicts(frame: pd.DataFrame) -> dict[str, str]:
    return dict(zip(handoffs.bound_table(frame)["variant"], handoffs.bound_table(frame)["verdict"]))


def test_flat_queue_lock_and_linear_ticket_lock_agree() -> None:
    frame = table(
        kbench("qspinlock", {2: 6.0, 4: 6.3, 8: 6.1}),
        kbench("ticket", {2: 5.0, 4: 7.0, 8: 11.0}),  # one request per extra waiter
        kbench("tas", {2: 9.0, 4: 15.0, 8: 27.0}),
    )
    assert verdicts(frame) == {"qspinlock": "agrees", "ticket": "agrees", "tas": "agrees"}
    row = handoffs.bound_table(frame).set_index("variant").loc["ticket"]
    assert row["slope_per_waiter"] == pytest.approx(1.0) and row["measured_order"] == "O(N)"


def test_a_growing_queue_lock_and_a_flat_ticket_lock_disagree() -> None:
    frame = table(kbench("cna", {2: 5.0, 4: 9.0, 8: 17.0}), kbench("ticket", {2: 5.0, 4: 5.0, 8: 5.2}))
    assert verdicts(frame) == {"cna": "disagrees", "ticket": "disagrees"}


def test_uncontended_and_single_size_runs_do_not_make_a_verdict() -> None:
    frame = table(kbench("qspinlock", {1: 3.0, 4: 6.0}), kbench("mystery", {2: 1.0, 4: 2.0}))
    frame.loc[frame["cpus"] == 1, "handoffs"] = 0.0  # one CPU: no hand-off at all
    assert verdicts(frame) == {"qspinlock": "one size only: no slope", "mystery": "no bound for this variant"}


def test_reference_lines_start_at_the_smallest_size() -> None:
    frame = table(kbench("ticket", {2: 5.0, 8: 20.0}), kbench("qspinlock", {2: 6.0, 8: 7.0}))
    lines = handoffs.reference_lines(handoffs.contended(frame, BOUNDS), BOUNDS)
    assert lines["ticket"] == [(2.0, 5.0), (8.0, 5.0 + 6 * BOUNDS.variants["ticket"].per_waiter)]
    assert lines["qspinlock"] == [(2.0, 6.0), (8.0, 6.0)]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('order = "N"', 'order = "N^2"', r"variant\[0\]\.order: 'N\^2' is not one of"),
        ("slope_per_waiter = 0.5", 'slope_per_waiter = "half"', r"agreement\.slope_per_waiter: 'half' is not a float"),
        ("per_waiter = 3.0", "per_waiter = -1.0", r"variant\[0\]\.per_waiter: -1\.0 is not a number >= 0"),
    ],
)
def test_a_bad_bounds_file_names_file_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = handoffs.DATA_FILE.read_text()
    assert old in text
    path = tmp_path / "bounds.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(handoffs.BoundsError, match=message) as caught:
        handoffs.load_bounds(path)
    assert str(path) in str(caught.value)


def test_the_slope_is_taken_between_the_largest_sizes() -> None:
    # a queue lock that gains lock-word sharers from 1 to 3 waiters, then stays flat
    frame = table(kbench("qspinlock", {2: 7.0, 4: 16.0, 8: 16.5}))
    row = handoffs.bound_table(frame).iloc[0]
    assert row["slope_sizes"] == "4 8" and row["verdict"] == "agrees"
    assert row["per_handoff"] == "7.0 16.0 16.5"  # every size is shown


def test_another_per_handoff_column_is_judged_when_named() -> None:
    """The bench lock's own line (the per-lock table's column) against the same bounds."""
    line = "home_requests_per_handoff"
    rows = [
        {"machine": "altix-numa", "variant": variant, "cpus": cpus, "nodes": cpus // 2, "testcase": "kbench", "handoffs": 50.0,
         line: value, METRIC: 1000.0 * cpus}  # the whole-ROI column grows: it must not be the one judged
        for variant, values in (("qspinlock", {4: 7.3, 8: 7.0}), ("ticket", {4: 16.3, 8: 36.4}))
        for cpus, value in values.items()
        for _ in SPREAD
    ]  # fmt: skip
    frame = handoffs.bound_table(pd.DataFrame(rows), metric=line).set_index("variant")
    assert frame.loc["qspinlock", "verdict"] == "agrees" and frame.loc["ticket", "verdict"] == "agrees"
    assert frame.loc["ticket", "per_handoff"] == "16.3 36.4" and frame.loc["ticket", "runs"] == "3 3"
    assert handoffs.bound_table(pd.DataFrame(rows)).set_index("variant").loc["qspinlock", "verdict"] == "disagrees"


def test_the_share_of_acquisitions_that_were_hand_offs_is_shown() -> None:
    """A lock the releasing CPU mostly takes again (test-and-set on NUMA) is visible as such."""
    rows = table(kbench("tas", {4: 30.0, 8: 5000.0}, spread=(1.0,)))
    rows["acquisitions"] = [100.0, 40000.0]
    rows["handoffs"] = [99.0, 80.0]
    row = handoffs.bound_table(rows).iloc[0]
    assert row["handoffs_per_acquisition"] == "0.99 0.00"
    assert "handoffs_per_acquisition" not in handoffs.bound_table(table(kbench("tas", {4: 30.0, 8: 50.0}))).columns


def test_a_slope_whose_interval_spans_the_threshold_is_inconclusive() -> None:
    """altix-numa-interleaved HBO, 8 to 16 CPUs, two runs each: 18.4 and 40.6 requests per hand-off on average,
    one run of 16 at 30 and one at 51.2: a slope of 2.8 per waiter whose interval reaches below 0.5."""
    rows = table(kbench("hbo", {8: 18.4, 16: 40.6}, machine="altix-numa-interleaved", spread=(0.98, 1.02)))
    rows.loc[rows["cpus"] == 16, METRIC] = [30.0, 51.2]
    row = handoffs.bound_table(rows).iloc[0]
    assert row["slope_per_waiter"] == pytest.approx((40.6 - 18.4) / 8)
    assert row["slope_ci_low"] < BOUNDS.slope_per_waiter < row["slope_ci_high"]
    assert row["verdict"] == "inconclusive: the slope's interval spans 0.5" and row["measured_order"] == ""


def test_one_run_a_size_makes_no_verdict() -> None:
    row = handoffs.bound_table(table(kbench("ticket", {4: 10.0, 8: 30.0}, spread=(1.0,)))).iloc[0]
    assert row["verdict"] == "inconclusive (n=1)" and row["runs"] == "1 1"
    assert row["slope_per_waiter"] == pytest.approx(5.0)


def test_the_slopes_interval_is_students_t_over_the_sizes_means() -> None:
    """Two sizes of two runs (means 11 and 32, variances 2 and 8): slope (m2 - m1) / dW = 21 / 4, half-width
    t(0.95, 1) sqrt(s1^2/2 + s2^2/2) / dW."""
    measured = handoffs.slope_interval([3.0, 7.0], [[10.0, 12.0], [30.0, 34.0]])
    t_95_1 = 12.706  # Student's t, two-sided 95 %, one degree of freedom
    half = t_95_1 * math.sqrt(2.0 / 2 + 8.0 / 2) / 4.0
    assert measured.value == pytest.approx(5.25) and measured.runs == (2, 2)
    assert (measured.low, measured.high) == (pytest.approx(5.25 - half, rel=1e-3), pytest.approx(5.25 + half, rel=1e-3))
    assert measured.order(0.5) == "" and handoffs.slope_interval([3.0, 7.0], [[10.0, 10.1], [30.0, 30.1]]).order(0.5) == "N"


def test_the_sweep_is_one_rule_for_the_bound_and_the_model_comparison() -> None:
    """A kbench run with a parameter beyond bounds.toml's kbench_parameters (seed 000's placement=,
    seed 003's lock=rwsem) is another experiment: the hand-off bound and the model comparison both
    leave it out, by the one rule (handoffs.sweep_runs); other testcases are never the sweep."""
    from analysis.model_comparison.rules import load_rules
    from analysis.model_comparison.table import sweep_rows

    rules = load_rules()
    machine = rules.machines[0]
    base = {"testcase": "kbench", "machine": machine, "handoffs": 10.0, "roi": 0, "trace": "off"}
    rows = pd.DataFrame([
        dict(base, run_id="sweep", run_spec="kbench:variant=cna,duration_ms=20,repeat=2"),
        dict(base, run_id="placement", run_spec="kbench:variant=cna,duration_ms=20,placement=shared"),
        dict(base, run_id="rwsem", run_spec="kbench:lock=rwsem,writers=4,duration_ms=10"),
        dict(base, run_id="uncontended", handoffs=0.0, run_spec="kbench:variant=cna,duration_ms=20"),
        dict(base, run_id="pft", testcase="pft", run_spec="pft:threads=4"),
        dict(base, run_id="traced", trace="protocol", run_spec="kbench:variant=cna,duration_ms=8"),
    ])  # fmt: skip
    assert list(handoffs.sweep_runs(rows)["run_id"]) == ["sweep", "uncontended", "traced"]
    assert list(handoffs.handoff_runs(rows)["run_id"]) == ["sweep", "traced"]
    # the model comparison also leaves the traced run out: attribution only
    assert list(sweep_rows(rows, rules)["run_id"]) == ["sweep", "uncontended"]
    assert handoffs.sweep_runs(rows.iloc[0:0]).empty
