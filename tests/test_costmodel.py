"""The cost model: fits, fallbacks, leave-one-out, the table's checks, Slurm resources."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from costmodel_rows import BOOT, MEMORY, OUTSIDE, RATE, ROI_MS, law, power_law_rows, row
from lockstudy.campaign.spec import Resources
from lockstudy.costmodel.check import leave_one_out, median_abs_percent_error
from lockstudy.costmodel.model import ANY_TESTCASE, CostModel, Estimate, NoPrediction
from lockstudy.costmodel.plan import slurm_request
from lockstudy.costmodel.powerlaw import fit_power_law
from lockstudy.costmodel.settings import MeasuredTable, SlurmMargin, load_settings
from lockstudy.costmodel.simulated import SimulatedTime
from lockstudy.costmodel.table import COLUMNS, FAST_FORWARD_TO_TESTCASE, RESTORED_DETAILED, CostRow, CostTableError, read_cost_table, write_cost_table
from lockstudy.validation.problems import InputError

SPEC = "kbench:variant=tas,duration_ms=20"


@pytest.fixture()
def settings():  # type: ignore[no-untyped-def]
    return load_settings()


def test_a_synthetic_table_reproduces_its_power_laws(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC))
    model = CostModel.fit(read_cost_table(table), settings)  # through the CSV, as the commands read it
    for laws, group, (coefficient, exponent) in (
        (model.roi_rate, ("piii-smp", "timing", "untraced", ANY_TESTCASE), RATE),
        (model.roi_rate, ("piii-smp", "timing", "untraced", "kbench"), RATE),
        (model.outside_roi, ("piii-smp", ANY_TESTCASE, FAST_FORWARD_TO_TESTCASE), OUTSIDE),
        (model.boot, ("piii-smp",), BOOT),
        (model.memory, ("piii-smp", "restore"), MEMORY),
    ):
        fitted = laws.laws[group]
        assert fitted.coefficient == pytest.approx(coefficient, rel=1e-4), laws.label
        assert fitted.exponent == pytest.approx(exponent, rel=1e-4), laws.label
    predicted = model.restored_run_seconds("piii-smp", 16, "timing", False, ROI_MS)
    assert isinstance(predicted, Estimate) and predicted.extrapolated and not predicted.fallback
    assert predicted.value == pytest.approx(law(OUTSIDE, 16) + law(RATE, 16) * ROI_MS, rel=1e-4)


def test_a_run_that_shared_its_core_counts_the_time_it_would_take_on_its_own(settings) -> None:  # type: ignore[no-untyped-def]
    # Every run on its laws, then half of them slowed 1.5x in wall time by a third process on the
    # host (their CPU time stays what the laws say): the fit still finds the laws.
    rows = []
    for index, good in enumerate(power_law_rows(SPEC)):
        alone = good.host_seconds
        if index % 2 and alone is not None:
            good = dataclasses.replace(
                good, host_seconds=alone * 1.5, cpu_seconds=alone,
                roi_host_seconds=None if good.roi_host_seconds is None else good.roi_host_seconds * 1.5,
            )  # fmt: skip
        rows.append(good)
    slowed = rows[1]
    assert slowed.core_share == pytest.approx(1 / 1.5) and slowed.own_core_seconds == pytest.approx(slowed.cpu_seconds)
    model = CostModel.fit(rows, settings)
    assert model.boot.laws[("piii-smp",)].coefficient == pytest.approx(BOOT[0], rel=1e-4)
    assert model.roi_rate.laws[("piii-smp", "timing", "untraced", ANY_TESTCASE)].exponent == pytest.approx(RATE[1], rel=1e-4)
    assert model.outside_roi.laws[("piii-smp", ANY_TESTCASE, FAST_FORWARD_TO_TESTCASE)].coefficient == pytest.approx(OUTSIDE[0], rel=1e-4)
    assert median_abs_percent_error(leave_one_out(rows, settings)) == pytest.approx(0.0, abs=1e-6)
    # A row without CPU time counts its wall time whole, as before it was recorded.
    unrecorded = dataclasses.replace(slowed, cpu_seconds=None)
    assert unrecorded.core_share == 1.0 and unrecorded.own_core_seconds == unrecorded.host_seconds


def test_the_fit_is_least_squares_in_log_log() -> None:
    xs, ys = [1.0, 2.0, 4.0, 8.0, 16.0], [3.0, 5.5, 12.0, 20.0, 47.0]
    slope, intercept = np.polyfit(np.log(xs), np.log(ys), 1)
    fitted = fit_power_law(xs, ys)
    assert fitted.exponent == pytest.approx(slope) and fitted.coefficient == pytest.approx(math.exp(intercept))


def test_leave_one_out_on_a_known_example(settings) -> None:  # type: ignore[no-untyped-def]
    boots = [(1, 100.0), (2, 200.0), (4, 400.0), (8, 1000.0)]
    rows = [row("boot", cpus, seconds, cpu_model="atomic") for cpus, seconds in boots]
    checked = leave_one_out(rows, settings)
    expected_errors = []
    for left_out, (cpus, seconds) in enumerate(boots):
        others = [pair for index, pair in enumerate(boots) if index != left_out]
        slope, intercept = np.polyfit(np.log([c for c, _ in others]), np.log([s for _, s in others]), 1)
        expected_errors.append(abs(math.exp(intercept) * cpus**slope - seconds) / seconds * 100)
    assert [c.error_percent for c in checked] == pytest.approx(expected_errors)
    # Left out, the 8-cpu boot is predicted by the exact line 100 x cpus: 800 for 1000, 20 % off.
    assert checked[3].error_percent == pytest.approx(20.0)
    assert median_abs_percent_error(checked) == pytest.approx(float(np.median(expected_errors)))


def test_a_group_with_too_few_points_borrows_its_neighbours_slope_and_says_so(settings) -> None:  # type: ignore[no-untyped-def]
    rows = power_law_rows(SPEC)
    # Two traced runs, each 5x the untraced rate: too few for a fit of their own.
    for cpus in (2, 4):
        roi_host = 5 * law(RATE, cpus) * ROI_MS
        rows.append(row("restore", cpus, law(OUTSIDE, cpus) + roi_host, trace="protocol", run_spec=SPEC,
                        roi_host_seconds=roi_host, roi_simulated_ms=ROI_MS, run_id=f"traced{cpus}"))  # fmt: skip
    model = CostModel.fit(rows, settings)
    traced = model.roi_rate.estimate(("piii-smp", "timing", "traced", "kbench"), 8)
    assert isinstance(traced, Estimate) and traced.fallback
    assert traced.value == pytest.approx(5 * law(RATE, 8), rel=1e-6)
    assert "2 point(s) (a fit needs 3 at two or more sizes)" in traced.rule
    # Its neighbours: every testcase's traced group (no fit either), then kbench's untraced one.
    assert "piii-smp/timing/untraced/kbench's slope scaled" in traced.rule
    # No point and no neighbour with a fit: no prediction, and the reason names the group.
    missing = model.boot_seconds("altix-numa", 4)
    assert isinstance(missing, NoPrediction)
    assert missing.reason == "boot host s altix-numa: 0 point(s) (a fit needs 3 at two or more sizes), and no neighbour group with a fit: no prediction"


def test_issue_report_rows_stand_in_only_until_measured_rows_exist(settings) -> None:  # type: ignore[no-untyped-def]
    note_rows = [row("boot", cpus, 10 * law(BOOT, cpus), cpu_model="atomic", source="issue-report") for cpus in (1, 2, 4)]
    alone = CostModel.fit(note_rows, settings).boot_seconds("piii-smp", 2)
    assert isinstance(alone, Estimate) and alone.value == pytest.approx(10 * law(BOOT, 2))
    both = CostModel.fit(note_rows + power_law_rows(SPEC), settings).boot_seconds("piii-smp", 2)
    assert isinstance(both, Estimate) and both.value == pytest.approx(law(BOOT, 2))


def test_slurm_resources_are_the_prediction_with_the_margin() -> None:
    margin = SlurmMargin(time_factor=1.5, time_add_minutes=10, memory_factor=1.25, min_memory_gb=1)
    limits = Resources(time_minutes=240, memory_gb=6, host_cpus=1)
    request = slurm_request(Estimate(3000.0, "run"), Estimate(600.0, "boot"), Estimate(2000.0, "run"), Estimate(1500.0, "boot"), limits, margin)
    # (3000 + 600) s = 60 min; x 1.5 + 10 = 100 min. max(2000, 1500) MiB x 1.25 = 2.44 GiB -> 3.
    assert (request.time_minutes, request.memory_gb, request.host_cpus) == (100, 3, 1)
    assert request.time_from_model and request.memory_from_model
    unknown = slurm_request(NoPrediction("no rows"), Estimate(600.0, "boot"), Estimate(2000.0, "run"), NoPrediction("no rows"), limits, margin)
    assert (unknown.time_minutes, unknown.memory_gb) == (240, 6)
    assert unknown.sources() == "time: campaign time_minutes, memory: campaign memory_gb"


def test_a_malformed_table_is_refused_with_file_line_and_field(tmp_path: Path) -> None:
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC, sizes=(1, 2)))
    lines = table.read_text().splitlines()
    cells = lines[2].split(",")
    cells[COLUMNS.index("cpus")] = "x"
    cells[COLUMNS.index("phase")] = "reboot"
    lines[2] = ",".join(cells)
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(CostTableError) as refused:
        read_cost_table(table)
    assert str(refused.value).splitlines() == [
        f"{table}:3:phase: reboot: is not a choice (one of boot, restore)",
        f"{table}:3:cpus: x: is not a positive integer",
    ]


def test_a_table_without_a_column_is_refused_in_one_line(tmp_path: Path) -> None:
    table = tmp_path / "runs.csv"
    table.write_text("source,phase\nmeasured,boot\n")
    with pytest.raises(CostTableError) as refused:
        read_cost_table(table)
    assert len(str(refused.value).splitlines()) == 1
    assert str(refused.value).startswith(f"{table}:1:header: source,phase: lacks column(s) source_ref, run_id")


def test_a_runs_roi_time_is_measured_or_its_window_times_the_measured_overhead(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    metrics = tmp_path / "metrics.csv"
    metrics.write_text(
        "run_id,machine,cpus,run_spec,roi_cpu,sim_seconds\n"
        "r1,piii-smp,4,\"kbench:variant=tas,duration_ms=20\",timing,0.022\n"
        "r2,altix-numa,4,\"kbench:variant=tas,duration_ms=20\",timing,0.030\n"
        "r3,piii-smp,2,\"pft:threads=2,mb=4\",timing,0.011\n"
    )
    provenance = tmp_path / "provenance.json"
    provenance.write_text(json.dumps({"runs": {"r2": {"machine": "altix-numa.toml sha256 0ld"}}}))
    table = MeasuredTable(metrics, provenance, {"0ld": "altix-numa-interleaved"})
    known = SimulatedTime.gather([], dataclasses.replace(settings, measured_tables=[table]))
    measured = known.roi_ms("piii-smp", 2, "pft:threads=2,mb=4", "timing")
    assert isinstance(measured, Estimate) and measured.value == pytest.approx(11.0)
    # kbench at 8 cpus: 40 ms x the ROI/window measured at the nearest size (22 / 20 at 4 cpus).
    window = known.roi_ms("piii-smp", 8, "kbench:variant=ticket,duration_ms=40", "timing")
    assert isinstance(window, Estimate) and window.value == pytest.approx(44.0)
    assert "kbench window 40 ms x 1.100 (ROI/window measured at 4 cpus)" in window.rule
    # The run on the renamed model does not count for today's altix-numa: the bare window.
    bare = known.roi_ms("altix-numa", 4, "kbench:variant=tas,duration_ms=20", "timing")
    assert isinstance(bare, Estimate) and bare.value == pytest.approx(20.0) and "the bare window" in bare.rule
    unknown = known.roi_ms("piii-smp", 4, "pft:threads=4,mb=4", "timing")
    assert isinstance(unknown, NoPrediction) and "pft:threads=4,mb=4" in unknown.reason


def test_a_roi_and_a_windows_overhead_come_from_the_campaigns_kernel_build_where_measured(settings) -> None:  # type: ignore[no-untyped-def]
    """A kernel change can move a ROI: the bench's threads, once made inside it, took 2.55x its window at 16 cpus."""
    def kbench(cpus: int, ms: float, build: str, window_ms: int = 8) -> CostRow:
        measured = row("restore", cpus, 100.0, machine="altix-numa", run_spec=f"kbench:variant=tas,duration_ms={window_ms}",
                       roi_simulated_ms=ms, run_id=f"{build}-{cpus}-{ms}")  # fmt: skip
        return dataclasses.replace(measured, kernel_build_id=build)

    known = SimulatedTime.gather([kbench(16, 20.4, "old"), kbench(2, 8.24, "new")], settings)
    spec = "kbench:variant=cna,duration_ms=10"
    new = known.roi_ms("altix-numa", 16, spec, "timing", "new")
    assert isinstance(new, Estimate) and new.value == pytest.approx(10.3)
    assert "ROI/window measured at 2 cpus with this kernel build" in new.rule
    # a build with no run of its own, or none named: every build's runs, the nearest size first
    for build in ("unbuilt", ""):
        any_build = known.roi_ms("altix-numa", 16, spec, "timing", build)
        assert isinstance(any_build, Estimate) and any_build.value == pytest.approx(25.5)
    # the very spec measured, with another build only: those runs
    same = known.roi_ms("altix-numa", 16, "kbench:variant=tas,duration_ms=8", "timing", "new")
    assert isinstance(same, Estimate) and same.value == pytest.approx(20.4)
    known = SimulatedTime.gather([kbench(16, 20.4, "old"), kbench(16, 8.3, "new")], settings)
    own = known.roi_ms("altix-numa", 16, "kbench:variant=tas,duration_ms=8", "timing", "new")
    assert isinstance(own, Estimate) and own.value == pytest.approx(8.3) and "of this kernel build" in own.rule


def known_from_table(tmp_path: Path, settings, runs: list[str], **changes) -> SimulatedTime:  # type: ignore[no-untyped-def]
    """The simulated times of a measured-ROI table holding `runs` (its CSV rows), under `settings` with `changes`."""
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("run_id,machine,cpus,run_spec,roi_cpu,sim_seconds\n" + "".join(line + "\n" for line in runs))
    return SimulatedTime.gather([], dataclasses.replace(settings, measured_tables=[MeasuredTable(metrics, None, {})], **changes))


def test_a_counted_window_is_scaled_from_the_nearest_measured_run_by_its_work(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    known = known_from_table(tmp_path, settings, [
        "p2,altix-numa-interleaved,2,\"pft:threads=2,mb=4,iterations=1\",timing,0.011",
        "p8,altix-numa-interleaved,8,\"pft:threads=8,mb=4,iterations=1\",timing,0.012",
        "s4,altix-numa,4,\"samefile:threads=4,iterations=100,warmup=10\",timing,0.03",
    ])
    # pft's faults are its area x iterations: 16 MiB twice is 8x the 4 MiB once measured at the nearest size
    pft = known.roi_ms("altix-numa-interleaved", 8, "pft:threads=8,mb=16,iterations=2", "timing")
    assert isinstance(pft, Estimate) and pft.value == pytest.approx(96.0) and pft.fallback
    assert "pft ROI measured at 8 cpus, scaled by its work (mb x iterations)" in pft.rule
    # altix-numa has no pft of its own: its stand-in's, said so
    borrowed = known.roi_ms("altix-numa", 2, "pft:threads=2,mb=16,iterations=2", "timing")
    assert isinstance(borrowed, Estimate) and borrowed.value == pytest.approx(88.0)
    assert "on altix-numa-interleaved (stand-in: none measured on altix-numa)" in borrowed.rule
    samefile = known.roi_ms("altix-numa", 4, "samefile:threads=4,iterations=50,warmup=10", "timing")
    assert isinstance(samefile, Estimate) and samefile.value == pytest.approx(15.0)
    # a testcase with no work rule, and a measured run without the work's keys: unknown, and why
    unknown = known.roi_ms("altix-numa", 4, "cal_rmw", "timing")
    assert isinstance(unknown, NoPrediction) and "neither a time window nor a measured run to scale" in unknown.reason


def test_a_work_rule_scales_only_runs_that_do_the_same_kind_of_work(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    """samefile's stat() loop took a tenth of its mix's ROI per iteration: the mix is never predicted from it."""
    runs = ["st,altix-numa,8,\"samefile:threads=8,iterations=20,warmup=2,ops=stat\",timing,0.003",
            "mx,altix-numa-interleaved,8,\"samefile:threads=8,iterations=100,warmup=10\",timing,0.117"]
    known = known_from_table(tmp_path, settings, runs)
    stat = known.roi_ms("altix-numa", 16, "samefile:threads=16,iterations=100,warmup=10,ops=stat", "timing")
    assert isinstance(stat, Estimate) and stat.value == pytest.approx(15.0)
    assert "samefile ROI measured at 8 cpus, ops=stat, scaled by its work (iterations)" in stat.rule
    # the mix (ops left out: its default, and said so) has no run of its own on altix-numa: its stand-in's
    mix = known.roi_ms("altix-numa", 16, "samefile:threads=16,iterations=100,warmup=10", "timing")
    assert isinstance(mix, Estimate) and mix.value == pytest.approx(117.0)
    assert "on altix-numa-interleaved (stand-in: none measured on altix-numa), ops=mix" in mix.rule
    spelled = known.roi_ms("altix-numa", 16, "samefile:threads=16,iterations=50,warmup=10,ops=mix", "timing")
    assert isinstance(spelled, Estimate) and spelled.value == pytest.approx(58.5)
    # without the kinds table both specs borrow the nearest run, whatever it does
    blind = known_from_table(tmp_path, settings, runs, kinds={})
    mixed = blind.roi_ms("altix-numa", 16, "samefile:threads=16,iterations=100,warmup=10", "timing")
    assert isinstance(mixed, Estimate) and mixed.value == pytest.approx(15.0)


def test_a_spec_of_fixed_work_takes_its_roi_from_the_nearest_size_measured(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    """A calibration chase's work is its spec's: measured at 2 and 8 CPUs, at 16 it takes the 8-CPU ROI;
    the interleaved model, with none of its own, borrows altix-numa's and says so."""
    runs = ["c2,altix-numa,2,\"cal_latency:kib=8\",timing,0.004", "c8,altix-numa,8,\"cal_latency:kib=8\",timing,0.005"]
    known = known_from_table(tmp_path, settings, runs)
    far = known.roi_ms("altix-numa", 16, "cal_latency:kib=8", "timing")
    assert isinstance(far, Estimate) and far.value == pytest.approx(5.0) and far.fallback
    assert "the same spec's ROI measured at 8 cpus" in far.rule
    stands = known_from_table(tmp_path, settings, runs, stand_ins={**settings.stand_ins, "altix-numa-interleaved": "altix-numa"})
    borrowed = stands.roi_ms("altix-numa-interleaved", 2, "cal_latency:kib=8", "timing")
    assert isinstance(borrowed, Estimate) and borrowed.value == pytest.approx(4.0)
    assert "on altix-numa (stand-in: none measured on altix-numa-interleaved)" in borrowed.rule
    # another spec: its own work, not this one's; its siblings' longest ROI at the nearest size, with the margin
    sibling = known.roi_ms("altix-numa", 16, "cal_latency:kib=256", "timing")
    assert isinstance(sibling, Estimate) and sibling.fallback
    assert sibling.value == pytest.approx(5.0 * settings.sibling_margin)
    assert f"cal_latency's longest ROI with other arguments at 8 cpus, x {settings.sibling_margin:g}" in sibling.rule
    without = known_from_table(tmp_path, settings, runs, sibling_margin=None)
    assert isinstance(without.roi_ms("altix-numa", 16, "cal_latency:kib=256", "timing"), NoPrediction)
    assert isinstance(known.roi_ms("altix-numa", 16, "cal_stream:kib=256", "timing"), NoPrediction)  # no sibling measured


def test_a_sibling_margin_below_one_is_refused(tmp_path: Path) -> None:
    from lockstudy.costmodel.settings import SETTINGS_FILE

    broken = tmp_path / "costmodel.toml"
    broken.write_text(SETTINGS_FILE.read_text().replace("margin = 2.0", "margin = 0.5"))
    with pytest.raises(InputError, match=r"simulated_time.siblings.margin: 0.5: is not a number of at least 1"):
        load_settings(broken)


@pytest.mark.parametrize("line, broken_line, message", [
    ('pft = ["mb", "iterations"]', 'pft = "mb"', r"simulated_time.work.pft: 'mb': is not a list of run-spec keys"),
    ('samefile = { ops = "mix" }', 'samefile = ["ops"]',
     r"simulated_time.kinds.samefile: \['ops'\]: is not a table of run-spec keys and their default words"),
    ('samefile = { ops = "mix" }', 'samefile = { ops = 1 }',
     r"simulated_time.kinds.samefile: \{'ops': 1\}: is not a table of run-spec keys and their default words"),
])
def test_a_work_or_kind_rule_of_the_wrong_shape_is_refused(tmp_path: Path, line: str, broken_line: str, message: str) -> None:
    from lockstudy.costmodel.settings import SETTINGS_FILE

    broken = tmp_path / "costmodel.toml"
    assert line in SETTINGS_FILE.read_text()
    broken.write_text(SETTINGS_FILE.read_text().replace(line, broken_line))
    with pytest.raises(InputError, match=message):
        load_settings(broken)


def test_a_group_measured_at_one_size_predicts_that_size_only(settings) -> None:  # type: ignore[no-untyped-def]
    rows = [row("boot", 4, seconds, cpu_model="atomic", run_id=f"b{seconds}") for seconds in (300.0, 320.0, 400.0)]
    model = CostModel.fit(rows, settings)
    same = model.boot_seconds("piii-smp", 4)
    assert isinstance(same, Estimate) and same.value == pytest.approx(320.0) and same.fallback
    assert "the median of its 3 point(s) at 4 cpus" in same.rule
    assert isinstance(model.boot_seconds("piii-smp", 8), NoPrediction)  # no slope to carry it to another size


def test_a_boot_is_predicted_from_its_own_kernel_builds_boots(settings) -> None:  # type: ignore[no-untyped-def]
    """A new 6.1 build booted piii-smp in 305 s where the builds before it took 90: one boot of the
    new build scales the machine's slope to it; a build never booted gets the machine's law."""
    def boot(cpus: int, seconds: float, kernel: str):  # type: ignore[no-untyped-def]
        return dataclasses.replace(row("boot", cpus, seconds, cpu_model="atomic", run_id=f"{kernel}-{cpus}"), kernel_build_id=kernel)

    rows = [boot(cpus, 90.0 * cpus**0.25, "old") for cpus in (1, 2, 4, 8)] + [boot(1, 300.0, "new")]
    model = CostModel.fit(rows, settings)
    new = model.boot_seconds("piii-smp", 4, "new")
    old = model.boot_seconds("piii-smp", 4, "old")
    unbuilt = model.boot_seconds("piii-smp", 4, "")
    # the machine's slope is taken within each build: the new build's level does not bend it
    assert isinstance(new, Estimate) and new.value == pytest.approx(300.0 * 4**0.25, rel=1e-6) and new.fallback
    assert "piii-smp/new" in new.rule and "piii-smp's slope scaled to its point(s)" in new.rule
    assert isinstance(old, Estimate) and old.value == pytest.approx(90.0 * 4**0.25, rel=0.001) and not old.fallback
    assert isinstance(unbuilt, Estimate) and old.value < unbuilt.value < new.value  # the machine's law, every build's boots
    assert model.boot_seconds("piii-smp", 4, "never booted").value == pytest.approx(unbuilt.value)  # type: ignore[union-attr]


def test_a_runs_host_time_per_simulated_ms_is_its_testcases_where_measured(settings) -> None:  # type: ignore[no-untyped-def]
    """A memory stream makes far more coherence events per simulated ms than a spinning lock bench:
    each testcase's own rate where measured, every testcase's on the machine otherwise."""
    def restored(cpus: int, per_ms: float, spec: str):  # type: ignore[no-untyped-def]
        return row("restore", cpus, 20.0 + per_ms * ROI_MS, run_id=f"{spec}-{cpus}", run_spec=spec,
                   roi_host_seconds=per_ms * ROI_MS, roi_simulated_ms=ROI_MS)  # fmt: skip

    rows = [restored(cpus, rate * cpus, spec) for spec, rate in (("kbench:duration_ms=1", 0.5), ("cal_stream:kib=8192", 4.0)) for cpus in (2, 4, 8)]
    model = CostModel.fit(rows, settings)
    kbench = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "kbench:variant=tas,duration_ms=1")
    stream = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "cal_stream:kib=8192")
    other = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "pft:threads=4")
    assert isinstance(kbench, Estimate) and kbench.value == pytest.approx(20.0 + 0.5 * 4 * ROI_MS, rel=1e-3)
    assert isinstance(stream, Estimate) and stream.value == pytest.approx(20.0 + 4.0 * 4 * ROI_MS, rel=1e-3)
    assert isinstance(other, Estimate) and kbench.value < other.value < stream.value
    assert f"host s per simulated ms piii-smp/timing/untraced/{ANY_TESTCASE}" in other.rule


def test_a_runs_peak_memory_is_its_workloads_where_measured(settings) -> None:  # type: ignore[no-untyped-def]
    """gem5 keeps the guest memory a run touches resident: a thread per CPU each touching 8 MiB peaks
    far above a one-thread run on the same machine. The Slurm request covers the measured peak only
    when the prediction is the workload's own (the machine's law asked 4 GiB of a 32-CPU run that
    peaked at 3.9)."""
    def restored(cpus: int, peak: float, spec: str):  # type: ignore[no-untyped-def]
        return row("restore", cpus, 100.0, run_id=f"{spec}-{cpus}", run_spec=spec, peak_rss_mib=peak)

    threaded = [restored(cpus, 300.0 + 160.0 * cpus, f"cal_stream:threads={cpus},kib=8192") for cpus in (2, 4, 8, 16)]
    one_thread = [restored(cpus, 300.0 + 40.0 * cpus, "cal_stream:kib=8192") for cpus in (2, 4, 8, 16)]
    others = [restored(cpus, 300.0 + 20.0 * cpus, spec) for cpus in (2, 4, 8, 16) for spec in ("kbench:duration_ms=1", "dd1b:count=100")]
    model = CostModel.fit(threaded + one_thread + others, settings)
    measured = {row.cpus: row.peak_rss_mib for row in threaded}
    for cpus in (4, 16):
        own = model.peak_memory_mib("piii-smp", cpus, "restore", f"cal_stream:threads={cpus},kib=8192")
        machine = model.peak_memory_mib("piii-smp", cpus, "restore")
        assert isinstance(own, Estimate) and isinstance(machine, Estimate)
        assert own.value == pytest.approx(measured[cpus], rel=0.1) and machine.value < 0.8 * measured[cpus]
        assert "piii-smp/restore/spec/cal_stream:threads=N,kib=8192" in own.rule
    single = model.peak_memory_mib("piii-smp", 8, "restore", "cal_stream:kib=8192")
    assert isinstance(single, Estimate) and single.value == pytest.approx(300.0 + 40.0 * 8, rel=0.1)
    # A spec never measured takes its testcase's law; a testcase never measured, its machine's.
    unseen = model.peak_memory_mib("piii-smp", 8, "restore", "cal_stream:kib=64")
    assert isinstance(unseen, Estimate) and "piii-smp/restore/cal_stream:" in unseen.rule
    new_testcase = model.peak_memory_mib("piii-smp", 8, "restore", "pft:threads=8")
    assert isinstance(new_testcase, Estimate) and new_testcase.rule.startswith("peak MiB piii-smp/restore:")
    margin = SlurmMargin(time_factor=1.5, time_add_minutes=10, memory_factor=1.25, min_memory_gb=1)
    request = slurm_request(Estimate(60.0, ""), Estimate(0.0, ""), model.peak_memory_mib("piii-smp", 16, "restore", "cal_stream:threads=16,kib=8192"),
                            Estimate(0.0, ""), Resources(time_minutes=240, memory_gb=6, host_cpus=1), margin)  # fmt: skip
    assert request.memory_gb * 1024 > measured[16]


def test_a_lock_variant_chosen_at_boot_has_its_own_host_rate(settings) -> None:  # type: ignore[no-untyped-def]
    """HBO's 32-CPU pft cost the host 18 s per simulated ms, test-and-set's 3.8: each boot's own rate
    where measured, the testcase's where a boot was not."""
    def restored(cpus: int, per_ms: float, boot: str):  # type: ignore[no-untyped-def]
        return dataclasses.replace(
            row("restore", cpus, 20.0 + per_ms * ROI_MS, run_id=f"{boot}-{cpus}", run_spec="pft:threads=2",
                roi_host_seconds=per_ms * ROI_MS, roi_simulated_ms=ROI_MS),
            command=f"gem5.opt run.py --machine piii-smp --boot {boot} --cpu timing --run pft:threads=2",
        )  # fmt: skip

    rows = [restored(cpus, rate * cpus, boot) for boot, rate in (("lockstudy.spinlock=tas", 1.0), ("lockstudy.spinlock=hbo", 5.0)) for cpus in (2, 4, 8)]
    assert rows[0].boot_args == "lockstudy.spinlock=tas"
    model = CostModel.fit(rows, settings)
    tas = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "pft:threads=4", "lockstudy.spinlock=tas")
    hbo = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "pft:threads=4", "lockstudy.spinlock=hbo")
    cna = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, "pft:threads=4", "lockstudy.spinlock=cna")
    assert isinstance(tas, Estimate) and tas.value == pytest.approx(20.0 + 1.0 * 4 * ROI_MS, rel=1e-3)
    assert isinstance(hbo, Estimate) and hbo.value == pytest.approx(20.0 + 5.0 * 4 * ROI_MS, rel=1e-3)
    assert isinstance(cna, Estimate) and tas.value < cna.value < hbo.value and "piii-smp/timing/untraced/pft:" in cna.rule


def test_a_runs_time_outside_its_roi_is_its_testcases_where_measured(settings) -> None:  # type: ignore[no-untyped-def]
    """A calibration chase warms 8 MiB before its ROI, kbench a few microseconds: each testcase's own
    set-up and warm-up where measured, every testcase's on the machine otherwise."""
    def restored(cpus: int, outside: float, spec: str, index: int):  # type: ignore[no-untyped-def]
        return row("restore", cpus, outside + 10.0, run_id=f"{spec}-{cpus}-{index}", run_spec=spec, roi_host_seconds=10.0, roi_simulated_ms=1.0)

    rows = [restored(cpus, seconds * cpus, spec, i) for i, (spec, seconds) in enumerate((("kbench:duration_ms=1", 50.0), ("cal_latency:kib=8192", 200.0)))
            for cpus in (2, 4, 8)]  # fmt: skip
    model = CostModel.fit(rows, settings)
    kbench = model.restored_run_seconds("piii-smp", 4, "timing", False, 1.0, "kbench:variant=tas,duration_ms=1")
    chase = model.restored_run_seconds("piii-smp", 4, "timing", False, 1.0, "cal_latency:kib=8192")
    other = model.restored_run_seconds("piii-smp", 4, "timing", False, 1.0, "pft:threads=4")
    assert isinstance(kbench, Estimate) and kbench.value == pytest.approx(200.0 + 10.0, rel=1e-3)
    assert isinstance(chase, Estimate) and chase.value == pytest.approx(800.0 + 10.0, rel=1e-3)
    assert isinstance(other, Estimate) and kbench.value < other.value < chase.value and ANY_TESTCASE in other.rule


def test_a_traced_runs_trace_is_predicted_from_the_mib_per_simulated_ms_of_traced_rows(settings) -> None:  # type: ignore[no-untyped-def]
    """A traced ROI's trace grows with its simulated ms and its CPUs: the rows' MiB per simulated ms,
    its testcase's where measured, every testcase's on the machine and trace kind otherwise."""
    def traced(cpus: int, mib_per_ms: float, spec: str):  # type: ignore[no-untyped-def]
        return dataclasses.replace(
            row("restore", cpus, 100.0, run_id=f"{spec}-{cpus}", run_spec=spec, trace="protocol", machine="altix-numa",
                roi_host_seconds=50.0, roi_simulated_ms=ROI_MS),
            trace_mib=mib_per_ms * ROI_MS,
        )  # fmt: skip

    rows = [traced(cpus, rate * cpus**2, spec) for spec, rate in (("kbench:duration_ms=1", 1.0), ("samefile:threads=8", 2.0)) for cpus in (2, 4, 8)]
    assert rows[0].trace_mib_per_simulated_ms == pytest.approx(4.0)
    model = CostModel.fit(rows, settings)
    kbench = model.trace_mib("altix-numa", 16, "protocol", 3.0, "kbench:variant=tas,duration_ms=1")
    other = model.trace_mib("altix-numa", 4, "protocol", 3.0, "pft:threads=4")
    assert isinstance(kbench, Estimate) and kbench.value == pytest.approx(1.0 * 16**2 * 3.0, rel=1e-3) and kbench.extrapolated
    assert isinstance(other, Estimate) and f"altix-numa/protocol/{ANY_TESTCASE}" in other.rule
    assert isinstance(model.trace_mib("altix-numa", 4, "classic", 3.0, "kbench:duration_ms=1"), NoPrediction)
    untraced = dataclasses.replace(rows[0], trace="off")
    assert untraced.trace_mib_per_simulated_ms is None


def test_a_table_written_before_the_trace_and_restore_columns_still_reads(tmp_path: Path) -> None:
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC))
    lines = table.read_text().splitlines()
    assert lines[0].endswith(",trace_mib,restore")
    table.write_text("\n".join(line.rsplit(",", 2)[0] for line in lines) + "\n")
    rows = read_cost_table(table)
    assert rows and all(row.trace_mib is None and row.restore == "" for row in rows)
    # a restored run from before the column restored onto the detailed CPU
    assert {row.pre_roi for row in rows if row.phase == "restore"} == {RESTORED_DETAILED}


def test_a_bad_restore_value_is_refused_naming_it(tmp_path: Path) -> None:
    table = tmp_path / "runs.csv"
    write_cost_table(table, power_law_rows(SPEC))
    text = table.read_text().replace(f",{FAST_FORWARD_TO_TESTCASE}\n", ",fastforward\n", 1)
    table.write_text(text)
    with pytest.raises(CostTableError, match=r"restore.*fastforward.*is not a choice"):
        read_cost_table(table)


def test_fast_forward_restores_are_fitted_apart_and_the_detailed_ones_are_only_an_upper_bound(settings) -> None:  # type: ignore[no-untyped-def]
    # The same runs restored detailed spend 5x the host time outside the ROI (the init script and exec
    # on the detailed CPU): a prediction for the campaigns' fast-forward restores must not mix them in.
    fast = power_law_rows(SPEC)
    detailed = [
        dataclasses.replace(r, run_id=r.run_id + "d", restore=RESTORED_DETAILED, host_seconds=r.host_seconds + 4 * law(OUTSIDE, r.cpus))
        for r in fast
        if r.phase == "restore"
    ]  # fmt: skip
    model = CostModel.fit(fast + detailed, settings)
    predicted = model.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, SPEC)
    assert isinstance(predicted, Estimate) and not predicted.fallback
    assert predicted.value == pytest.approx(law(OUTSIDE, 4) + law(RATE, 4) * ROI_MS, rel=1e-4)
    # With only detailed restores measured, their time is the prediction, marked as a fallback.
    only_detailed = CostModel.fit([r for r in fast if r.phase == "boot"] + detailed, settings)
    bound = only_detailed.restored_run_seconds("piii-smp", 4, "timing", False, ROI_MS, SPEC)
    assert isinstance(bound, Estimate) and bound.fallback and "upper bound" in bound.rule
    assert bound.value == pytest.approx(5 * law(OUTSIDE, 4) + law(RATE, 4) * ROI_MS, rel=1e-4)
