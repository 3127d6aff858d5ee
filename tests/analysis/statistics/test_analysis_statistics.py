"""Intervals, pooling refusals and configurations (analysis/statistics/), on synthetic runs of known truth."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
import pytest

from analysis.statistics.configurations import GUEST_WINDOW, ROI_WINDOW, TRACED_NOTE, configurations_table, rate_of
from analysis.statistics.intervals import FIELLER, NO_INTERVAL, STUDENT_T, mean_interval, ratio_interval, t_quantile
from analysis.statistics.pooling import PoolingError, check_poolable, row_parameters, split_traced, window_of
from analysis.statistics.rules import DATA_FILE, StatisticsError, load_rules
from analysis.traffic.metrics import MetricsError, perturbation_of

RULES = load_rules()
TRIALS = 400  # synthetic experiments per coverage check
REPEATS = 5  # runs per configuration, as the campaign's repeat = 5


def kbench(run_id: str, rate: float, *, duration_ms: int = 20, trace: str = "off", seed: float = 1.0, variant: str = "cna") -> dict:
    """A metrics-table row of one kbench run on the NUMA machine."""
    return {
        "run_id": run_id, "study": "kbench-numa", "machine": "altix-numa", "kind": "ruby-numa", "cpus": 8, "nodes": 4,
        "kernel_build": "smp", "boot_args": "", "variant": variant, "testcase": "kbench", "copies": 8.0, "roi": 0,
        "run_spec": f"kbench:variant={variant},duration_ms={duration_ms}", "roi_cpu": "timing", "trace": trace,
        "perturb_ns": 4.0, "perturb_seed": seed, "metrics.acquisitions_per_sec": rate, "ops_per_sim_s": rate * 0.7,
    }  # fmt: skip


@pytest.mark.parametrize(("df", "published"), [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045)])
def test_t_quantile_matches_the_published_table(df: int, published: float) -> None:
    # two-sided 95 % critical values of Student's t (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2)
    assert t_quantile(0.95, df, RULES.integration_points, RULES.bisection_steps) == pytest.approx(published, abs=1e-3)


def test_a_mean_interval_covers_the_truth_about_95_percent_of_the_time() -> None:
    rng = random.Random(17)
    truth, spread = 100.0, 5.0
    covered = sum(mean_interval([rng.gauss(truth, spread) for _ in range(REPEATS)]).contains(truth) for _ in range(TRIALS))
    assert 0.91 <= covered / TRIALS <= 0.99


def test_a_mean_interval_contains_its_truth_and_excludes_a_far_value() -> None:
    interval = mean_interval([99.0, 101.0, 100.5, 99.5, 100.0])
    assert interval.method == STUDENT_T and interval.contains(100.0)
    assert not interval.contains(103.0)  # 3 away, the sample's sd is 0.79: far outside


def test_one_run_has_no_interval() -> None:
    interval = mean_interval([42.0])
    assert interval.estimate == 42.0 and interval.method == NO_INTERVAL
    assert math.isnan(interval.low) and math.isnan(interval.high)


def test_a_ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time() -> None:
    rng = random.Random(2003)
    covered = 0
    for _ in range(TRIALS):
        a = [rng.gauss(110.0, 4.0) for _ in range(REPEATS)]
        b = [rng.gauss(100.0, 4.0) for _ in range(REPEATS)]
        covered += ratio_interval(a, b).contains(1.1)
    assert 0.91 <= covered / TRIALS <= 1.0  # min(n)-1 degrees of freedom: errs wide, never narrow


def test_a_ratio_interval_excludes_one_when_the_difference_is_real() -> None:
    interval = ratio_interval([130.0, 128.0, 131.0, 129.5, 130.5], [100.0, 101.0, 99.0, 100.5, 99.5])
    assert interval.method == FIELLER and interval.low > 1.2 and interval.contains(1.3)


def test_a_ratio_over_a_noisy_denominator_is_unbounded() -> None:
    interval = ratio_interval([10.0, 11.0, 9.0], [1.0, -1.0, 0.5])
    assert (interval.low, interval.high) == (-math.inf, math.inf)


def test_a_ratio_with_one_run_on_a_side_has_no_interval() -> None:
    interval = ratio_interval([2.0], [1.0, 1.1, 0.9])
    assert interval.estimate == pytest.approx(2.0) and interval.method == NO_INTERVAL


def test_traced_and_untraced_runs_are_refused_naming_both() -> None:
    rows = pd.DataFrame([kbench("untraced1", 1e6), kbench("traced1", 2e6, trace="protocol")])
    with pytest.raises(PoolingError) as caught:
        check_poolable(rows, what="qspinlock at 4 nodes")
    message = str(caught.value)
    assert "\n" not in message and "untraced1" in message and "traced1" in message and "trace" in message


def test_runs_of_different_windows_are_refused_naming_both() -> None:
    rows = pd.DataFrame([kbench("long", 1e6, duration_ms=20), kbench("short", 1.4e6, duration_ms=8)])
    with pytest.raises(PoolingError) as caught:
        check_poolable(rows)
    message = str(caught.value)
    assert "\n" not in message and "long" in message and "short" in message
    assert "duration_ms=20" in message and "duration_ms=8" in message


def test_a_table_without_the_trace_column_is_refused() -> None:
    rows = pd.DataFrame([kbench("a", 1.0)]).drop(columns=["trace"])
    with pytest.raises(StatisticsError, match="no column 'trace'"):
        split_traced(rows)


def test_the_window_comes_from_the_run_spec_item_of_the_roi() -> None:
    row = {"run_spec": "pft:threads=4,mb=4,iterations=1+kbench:variant=cna,duration_ms=8", "roi": 1, "testcase": "kbench"}
    assert window_of(row) == "duration_ms=8,repeat=default"
    assert window_of(dict(row, roi=0, testcase="pft")) == "mb=4,iterations=1"


def test_repeats_form_one_configuration_and_traced_ones_get_no_rate() -> None:
    rows = [kbench(f"r{i}", 1e6 + 1e4 * i, seed=float(i)) for i in range(REPEATS)]
    rows += [kbench("t0", 5e5, duration_ms=8, trace="protocol"), kbench("q0", 9e5, variant="qspinlock")]
    table = configurations_table(pd.DataFrame(rows)).set_index("runs")
    repeats = table.loc[" ".join(f"r{i}" for i in range(REPEATS))]
    assert repeats["n"] == REPEATS and repeats["ci_method"] == STUDENT_T
    assert repeats["mean"] == pytest.approx(1.02e6)
    assert repeats["ci_low"] < repeats["mean"] < repeats["ci_high"]
    assert repeats["rate"] == "metrics.acquisitions_per_sec" and repeats["rate_source"] == GUEST_WINDOW
    assert table.loc["t0", "note"] == TRACED_NOTE and math.isnan(table.loc["t0", "mean"])
    assert table.loc["q0", "n"] == 1 and table.loc["q0", "ci_method"] == NO_INTERVAL


def test_rates_come_from_the_guests_window_and_a_testcase_without_one_is_flagged() -> None:
    assert rate_of("kbench") == ("metrics.acquisitions_per_sec", GUEST_WINDOW)
    assert rate_of("pft") == ("metrics.faults_per_wall_s", GUEST_WINDOW)
    assert rate_of("dd1b") == ("ops_per_sim_s", ROI_WINDOW)


def test_a_bad_rule_is_one_line_naming_file_and_field(tmp_path: Path) -> None:
    text = DATA_FILE.read_text().replace("level = 0.95", "level = 95.0")
    path = tmp_path / "statistics.toml"
    path.write_text(text)
    with pytest.raises(StatisticsError) as caught:
        load_rules(path)
    assert str(caught.value) == f"{path}: interval.level: 95.0 is not a confidence level in (0.5, 1)"
    path.write_text(DATA_FILE.read_text().replace("target_half_width = 0.05", "target_half_width = 5.0"))
    with pytest.raises(StatisticsError, match=r"interval.target_half_width: 5.0 is not a share of the mean in \(0, 1\)"):
        load_rules(path)
    path.write_text(DATA_FILE.read_text().replace("max_runs_for_target = 100", "max_runs_for_target = 1"))
    with pytest.raises(StatisticsError, match=r"interval.max_runs_for_target: 1 is fewer than 2 runs"):
        load_rules(path)


def test_each_configurations_half_width_is_given_and_a_wide_one_is_named() -> None:
    """Issue 17's sizing target: an interval within +-5 % of the mean. Five repeats 1 % apart meet it;
    five scattered by 20 % do not, and both the table and the report's sizing line say so."""
    from analysis.reporting.report import sizing_paragraph

    tight = [kbench(f"t{i}", 1e6 * (1 + 0.01 * i), seed=float(i)) for i in range(REPEATS)]
    loose = [kbench(f"l{i}", 1e6 * (1 + 0.2 * i), seed=float(i), variant="tas") for i in range(REPEATS)]
    table = configurations_table(pd.DataFrame(tight + loose)).set_index("variant")
    assert table.loc["cna", "half_width"] == pytest.approx((table.loc["cna", "ci_high"] - table.loc["cna", "ci_low"]) / 2 / table.loc["cna", "mean"])
    assert table.loc["cna", "half_width"] < RULES.target_half_width and table.loc["cna", "note"] == ""
    assert table.loc["tas", "half_width"] > RULES.target_half_width
    needed = table.loc["tas", "runs_for_target"]
    assert table.loc["tas", "note"] == (f"interval +-{table.loc['tas', 'half_width']:.1%}, wider than the +-5% target; "
                                        f"about {needed:.0f} runs of this spread would reach it")  # fmt: skip
    assert math.isnan(table.loc["cna", "runs_for_target"])
    sizing = sizing_paragraph(table.reset_index())
    assert sizing is not None and sizing.startswith("Sizing: 1 of 2 configurations with two or more runs have an interval within +-5% of their mean; wider: altix-numa kbench at 8 CPUs, tas (+-")
    assert f"n=5; about {needed:.0f} runs would reach it)" in sizing


def test_the_runs_a_target_needs_are_the_fewest_whose_interval_of_this_spread_is_within_it() -> None:
    from analysis.statistics.intervals import runs_for_half_width

    values = [1e6 * (1 + 0.2 * i) for i in range(REPEATS)]
    needed = runs_for_half_width(values, RULES)
    mean, spread = sum(values) / len(values), float(pd.Series(values).std(ddof=1))

    def half_width_share(n: int) -> float:
        return t_quantile(RULES.level, n - 1, RULES.integration_points, RULES.bisection_steps) * spread / math.sqrt(n) / mean

    assert needed is not None and REPEATS < needed <= RULES.max_runs_for_target
    assert half_width_share(needed) <= RULES.target_half_width < half_width_share(needed - 1)
    # s = 0.01 of the mean: t(1) = 12.7 gives +-9.0 % at n = 2, t(2) = 4.30 gives +-2.5 % at n = 3
    assert runs_for_half_width([1.0, 1.01, 0.99], RULES) == 3
    assert runs_for_half_width([1.0, 3.0, 0.2], RULES) is None  # beyond max_runs_for_target: a longer window is the remedy
    assert runs_for_half_width([1.0], RULES) is None


def test_a_start_delay_that_outlasted_the_set_up_is_named() -> None:
    from analysis.traffic.metrics import start_perturbed

    def result(delay_ns: int, asked: int, switched: int) -> dict:
        return {"provenance": {"perturbation": {"start_delay_ns": delay_ns}}, "ticks_per_second": 10**12,
                "switched_to_roi_cpu": {"tick": switched, "asked_tick": asked}}  # fmt: skip

    assert start_perturbed(result(2_000, 1_000, 1_000 + 2_000_000)) == 1.0  # switched 2 us after the ask, as drawn
    assert start_perturbed(result(2_000, 1_000, 1_000 + 90_000)) == 0.0  # the ROI began 0.09 us after the ask
    assert math.isnan(start_perturbed({"provenance": {"perturbation": None}, "switched_to_roi_cpu": {"tick": 5}}))
    rows = [dict(kbench(f"r{i}", 1e6 + 1e4 * i, seed=float(i)), perturb_start_us=4000.0, start_perturbed=float(i != 2)) for i in range(REPEATS)]
    (row,) = configurations_table(pd.DataFrame(rows)).to_dict("records")
    assert row["n"] == REPEATS and "1 run(s) whose start delay outlasted the set-up: their start was not perturbed" in row["note"]


def test_the_perturbation_is_read_from_the_provenance() -> None:
    assert perturbation_of({"perturbation": {"memory_latency_var_ns": 4, "seed": 3}}) == (4.0, 0.0, 3.0)
    both = {"memory_latency_var_ns": 20, "start_delay_max_us": 4000, "start_delay_ns": 1234, "seed": 2}
    assert perturbation_of({"perturbation": both}) == (20.0, 4000.0, 2.0)
    size, start, seed = perturbation_of({"perturbation": None})
    assert start == 0.0
    assert size == 0.0 and math.isnan(seed)
    with pytest.raises(MetricsError, match="perturbation.seed"):
        perturbation_of({"perturbation": {"memory_latency_var_ns": 4, "seed": "x"}})


def test_the_reports_means_refuse_to_average_two_windows() -> None:
    from analysis.reporting.chart_points import mean_by

    rows = pd.DataFrame([kbench("cna-20ms", 1.0e6), kbench("cna-8ms", 1.4e6, duration_ms=8)])
    with pytest.raises(PoolingError, match="cna-20ms.*cna-8ms|cna-8ms.*cna-20ms"):
        mean_by(rows, ["variant", "cpus"], "metrics.acquisitions_per_sec")
    same = pd.DataFrame([kbench("r1", 1.0e6), kbench("r2", 1.2e6, seed=2.0)])
    assert mean_by(same, ["variant", "cpus"], "metrics.acquisitions_per_sec").iloc[0, -1] == pytest.approx(1.1e6)


def test_the_reports_means_refuse_two_configurations_and_the_charts_keep_them_apart() -> None:
    """kbench at one size with the counter on the lock's line and off it (placement=shared|padded), and
    dd1b on the timing and the O3 CPU, were once one chart point each: a mean of two experiments."""
    from analysis.reporting.chart_points import mean_by, throughput_series
    from analysis.traffic import handoffs

    shared = dict(kbench("shared", 0.58e6), run_spec="kbench:variant=cna,duration_ms=20,placement=shared")
    padded = dict(kbench("padded", 0.83e6, seed=2.0), run_spec="kbench:variant=cna,duration_ms=20,placement=padded")
    rows = pd.DataFrame([shared, padded])
    with pytest.raises(PoolingError, match=r"2 configurations \(they differ in run_spec.*placement=padded: padded.*placement=shared: shared"):
        mean_by(rows, ["variant", "cpus"], "metrics.acquisitions_per_sec")
    o3 = pd.DataFrame([kbench("timing", 1.0e6), dict(kbench("o3", 2.0e6, seed=2.0), roi_cpu="o3")])
    with pytest.raises(PoolingError, match="they differ in roi_cpu"):
        mean_by(o3, ["variant", "cpus"], "metrics.acquisitions_per_sec")
    # the throughput chart names each its own line, and the hand-off bound leaves the placement runs out
    assert list(throughput_series(rows, "variant")) == ["cna, placement=shared", "cna, placement=padded"]
    assert list(throughput_series(o3, "variant")) == ["cna, roi_cpu=timing", "cna, roi_cpu=o3"]
    sweep = dict(kbench("sweep", 1.0e6), handoffs=10.0)
    both = pd.DataFrame([dict(shared, handoffs=10.0), dict(padded, handoffs=10.0), sweep])
    assert list(handoffs.handoff_runs(both)["run_id"]) == ["sweep"]
    # a run whose spec does not give the telling parameter is named without it ("cna", not "cna, placement=-")
    assert list(throughput_series(both, "variant")) == ["cna, placement=shared", "cna, placement=padded", "cna"]


def test_the_evidence_table_keeps_traced_runs_and_other_windows_apart() -> None:
    from analysis.seed_verdicts.seed_evidence import configuration_table
    from analysis.seed_verdicts.seeds import load_seeds

    lockref = next(seed for seed in load_seeds() if seed.id == "004")
    base = {"study": "lockref-4nodes", "kernel_build": "smp", "boot_args": "lockstudy.lockref=cmpxchg", "testcase": "samefile",
            "cpus": 8, "nodes": 4, "copies": 8.0, "roi": 0, "roi_cpu": "timing", "ops_per_sim_s": 1.0,
            **{name: 1.0 for name in lockref.evidence}}  # fmt: skip
    rows = pd.DataFrame([
        dict(base, run_id="plain", trace="off", run_spec="samefile:threads=8,iterations=100"),
        dict(base, run_id="traced", trace="protocol", run_spec="samefile:threads=8,iterations=100"),
        dict(base, run_id="longer", trace="off", run_spec="samefile:threads=8,iterations=400"),
    ])  # fmt: skip
    table = configuration_table(rows, lockref)
    assert len(table) == 3 and set(table["runs"]) == {1}


def test_row_parameters_take_each_rows_own_item_and_nothing_without_a_spec() -> None:
    rows = pd.DataFrame([
        {"run_spec": "kbench:lock=rwsem,duration_ms=10", "roi": 0},
        {"run_spec": "dd1b:count=20000+kbench:placement=shared", "roi": 1},
        {"run_spec": float("nan"), "roi": 0},
        {"run_spec": "dd1b:count=5", "roi": float("nan")},
    ])  # fmt: skip
    assert row_parameters(rows) == [{"lock": "rwsem", "duration_ms": "10"}, {"placement": "shared"}, {}, {"count": "5"}]
    assert row_parameters(pd.DataFrame({"cpus": [1, 2]})) == [{}, {}]
