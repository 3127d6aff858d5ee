"""analysis/calibration: published figures, measurements from calibration ROIs, the tables and the report section.

The unit tests feed small synthetic metrics tables (the shape
analysis/traffic/metrics.py gives); the end-to-end test rewrites the real gem5
fixtures' guest results into calibration results (one ROI each, as a
calibration run has) and runs `run.sh report campaigns/calibration.toml`.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.calibration.measured import CalibrationError, RunFacts, convert, in_units, measured_rows
from analysis.calibration.published import PublishedError, load_published, parse
from analysis.calibration.table import machine_table
from analysis_checks import FIXTURES
from lockstudy.paths import ROOT

GHZ = 1e9
PIII_HZ = 700e6
PIII = RunFacts(PIII_HZ, l1d_bytes=16 * 1024, largest_cache_bytes=1024 * 1024)
ALTIX = RunFacts(GHZ, l1d_bytes=16 * 1024, largest_cache_bytes=2 * 1024 * 1024)


def roi(run_id: str, testcase: str, machine: str = "altix-numa", copies: int = 1, roi_cpu: str = "timing", **metrics: float) -> dict[str, Any]:
    numa = machine == "altix-numa"
    return {
        "run_id": run_id, "roi": 0, "machine": machine, "kind": "ruby-numa" if numa else "classic-smp",
        "cpus": 8 if numa else 4, "nodes": 4 if numa else 1, "testcase": testcase, "copies": copies, "roi_cpu": roi_cpu,
        **{f"metrics.{name}": value for name, value in metrics.items()},
    }  # fmt: skip


def local(**metrics: float) -> dict[str, float]:
    return {"cpu_node": 0, "mem_node": 0, "distance": 10, **metrics}


def test_the_data_file_loads_and_every_figure_has_a_source() -> None:
    published = load_published()
    assert published.tolerance == pytest.approx(0.30)
    for row in published.rows:
        assert row.note.strip()
        if not math.isnan(row.value):
            assert row.source in published.sources
    # the first matching row wins, and patterns see the CPU model suffix
    assert published.lookup("piii-smp", "rmw_extra_lock_xadd (o3)").value == 57  # type: ignore[union-attr]
    assert published.lookup("piii-smp", "rmw_lock_xadd").value == 58  # type: ignore[union-attr]
    assert published.lookup("piii-smp", "c2c_clean_local").source == ""  # type: ignore[union-attr]
    assert published.lookup("altix-numa", "memory_remote_d60").value == 381  # type: ignore[union-attr]
    assert published.lookup("altix-numa", "no_such_thing") is None
    # Both Altix models imitate the same hardware; only what their caches stand for differs.
    assert published.lookup("altix-numa-interleaved", "memory_remote_d60").value == 381  # type: ignore[union-attr]
    node_local, interleaved = published.lookup("altix-numa", "l2_hit"), published.lookup("altix-numa-interleaved", "l2_hit")
    assert node_local is not None and interleaved is not None and node_local.value == interleaved.value == 14
    assert "private L2" in node_local.note and "line-interleaved" in interleaved.note


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"value": 3, "source": ""}, "a value needs the source it comes from"),
        ({"unit": "furlongs"}, "'furlongs' is not one of"),
        ({"note": " "}, "every row says what its figure is"),
        ({"source": "nowhere", "value": 1}, "'nowhere' is not a [source.<key>]"),
        ({"colour": "red"}, "published[0].colour: unknown field"),
        ({"value": -1, "source": "s"}, "is not a positive cost"),
    ],
)
def test_a_malformed_row_is_named(edit: dict[str, Any], message: str) -> None:
    row = {"machine": "m", "measurement": "l1_hit", "unit": "cycles", "source": "", "note": "n", **edit}
    data = {"tolerance": {"relative": 0.3}, "units": {"l1_hit": "cycles"}, "source": {"s": {"cite": "c"}}, "published": [row]}
    with pytest.raises(PublishedError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse(data, "p.toml")


def test_latency_rois_are_named_by_working_set_and_node() -> None:
    table = pd.DataFrame([
        roi("a", "cal_latency", **local(working_set_bytes=8 * 1024, cycles_per_load=3.0)),
        roi("a", "cal_latency", **local(working_set_bytes=16 * 1024, cycles_per_load=3.5)),  # exactly the L1D: still a hit
        roi("b", "cal_latency", **local(working_set_bytes=256 * 1024, cycles_per_load=20.0)),
        roi("c", "cal_latency", **local(working_set_bytes=8 << 20, cycles_per_load=131.0)),
        roi("d", "cal_latency", cpu_node=0, mem_node=2, distance=40, working_set_bytes=8 << 20, cycles_per_load=281.0),
    ])  # fmt: skip
    rows = measured_rows(table, {key: ALTIX for key in "abcd"})
    assert list(rows["measurement"]) == ["l1_hit", "l1_hit", "l2_hit", "memory_local", "memory_remote_d40"]
    assert list(rows["family"]) == ["l1_hit", "l1_hit", "l2_hit", "memory", "memory"]
    assert set(rows["size"]) == {"4 nodes"}


def test_every_testcase_gives_its_measurements() -> None:
    table = pd.DataFrame([
        roi("a", "cal_c2c", copies=2, dirty=1, reader_node=1, owner_node=0, distance=20, cycles=400.0),
        roi("a", "cal_c2c", copies=2, dirty=0, reader_node=0, owner_node=0, distance=10, cycles=150.0),
        roi("b", "cal_rmw", roi_cpu="o3", cycles_lock_xadd=9.0, extra_cycles_lock_xadd=4.0, cycles_lock_cmpxchg=10.0, extra_cycles_lock_cmpxchg=5.0),
        roi("c", "cal_contend", copies=8, cycles_per_rmw=600.0),
        roi("d", "cal_stream", copies=1, cpu_node=0, mem_node=1, distance=20, bytes_per_cycle=0.5),
        roi("d", "cal_stream", copies=8, bytes_per_cycle=2.0),
        roi("e", "kbench", copies=8),  # not a calibration ROI: left out
    ])  # fmt: skip
    rows = measured_rows(table, {key: ALTIX for key in "abcde"})
    assert list(rows["measurement"]) == [
        "c2c_dirty_remote_d20", "c2c_clean_local",
        "rmw_lock_xadd (o3)", "rmw_extra_lock_xadd (o3)", "rmw_lock_cmpxchg (o3)", "rmw_extra_lock_cmpxchg (o3)",
        "contended_rmw_8cpus", "stream_remote_d20", "stream_8copies",
    ]  # fmt: skip
    assert list(rows["value"]) == [400.0, 150.0, 9.0, 4.0, 10.0, 5.0, 600.0, 0.5, 2.0]


def test_a_roi_without_its_measure_is_an_error_naming_the_run() -> None:
    table = pd.DataFrame([roi("r1", "cal_latency", **local(working_set_bytes=4096))])
    with pytest.raises(CalibrationError, match=r"run r1 ROI 0 \(cal_latency\): no metrics.cycles_per_load"):
        measured_rows(table, {"r1": ALTIX})
    with pytest.raises(CalibrationError, match="'cal_new' is not a calibration measurement"):
        measured_rows(pd.DataFrame([roi("r2", "cal_new")]), {"r2": ALTIX})


def test_units_come_from_the_runs_clock() -> None:
    assert convert(70.0, "cycles", "ns", PIII_HZ) == pytest.approx(100.0)
    assert convert(131.0, "cycles", "ns", GHZ) == pytest.approx(131.0)
    assert convert(1.0, "bytes_per_cycle", "MB/s", PIII_HZ) == pytest.approx(700.0)
    assert convert(3.0, "cycles", "cycles", PIII_HZ) == 3.0
    with pytest.raises(CalibrationError, match="cannot express cycles in MB/s"):
        convert(1.0, "cycles", "MB/s", GHZ)


def test_the_table_averages_repeats_and_flags_what_is_outside_the_band() -> None:
    published = load_published()
    table = pd.DataFrame([
        roi("a", "cal_latency", **local(working_set_bytes=8 << 20, cycles_per_load=120.0)),
        roi("b", "cal_latency", **local(working_set_bytes=8 << 20, cycles_per_load=140.0)),  # a repeat: mean 130 ns
        roi("c", "cal_latency", cpu_node=0, mem_node=1, distance=20, working_set_bytes=8 << 20, cycles_per_load=362.0),
        roi("d", "cal_latency", **local(working_set_bytes=4096, cycles_per_load=4.0)),
    ])  # fmt: skip
    facts = {key: ALTIX for key in "abcd"}
    frame = machine_table(in_units(measured_rows(table, facts), facts, published), "altix-numa", published)
    assert list(frame.columns) == ["measurement", "size", "measured", "published", "unit", "ratio", "source", "note", "n", "ci_low", "ci_high"]
    rows = frame.set_index("measurement")
    # the two runs' mean with its Student-t interval: 130 +- t(0.975, 1) * 14.14 / sqrt(2) = 130 +- 127.06
    assert rows.loc["memory_local", "n"] == 2
    assert (rows.loc["memory_local", "ci_low"], rows.loc["memory_local", "ci_high"]) == (pytest.approx(2.94, abs=0.05), pytest.approx(257.06, abs=0.05))
    assert rows.loc["l1_hit", "n"] == 1 and math.isnan(rows.loc["l1_hit", "ci_low"]) and math.isnan(rows.loc["l1_hit", "ci_high"])
    assert list(frame["measurement"]) == ["l1_hit", "memory_local", "memory_remote_d20"]  # the data file's family order
    assert rows.loc["memory_local", "measured"] == pytest.approx(130.0) and rows.loc["memory_local", "unit"] == "ns"
    assert rows.loc["memory_local", "ratio"] == pytest.approx(130 / 131, abs=1e-3)
    assert not rows.loc["memory_local", "note"].startswith("outside")
    assert rows.loc["memory_remote_d20", "ratio"] == pytest.approx(2.0, abs=1e-3)
    assert rows.loc["memory_remote_d20", "note"].startswith("outside ±30% of published. Derived")
    assert rows.loc["l1_hit", "unit"] == "cycles" and rows.loc["l1_hit", "ratio"] == pytest.approx(4.0)


def test_piii_nanoseconds_use_its_700_mhz_clock() -> None:
    published = load_published()
    table = pd.DataFrame([
        roi("a", "cal_c2c", machine="piii-smp", copies=2, dirty=1, reader_node=0, owner_node=0, distance=10, cycles=70.0),
        roi("b", "cal_rmw", machine="piii-smp", cycles_lock_xadd=40.6, extra_cycles_lock_xadd=0.0, cycles_lock_cmpxchg=42.0, extra_cycles_lock_cmpxchg=1.4),
    ])  # fmt: skip
    facts = {"a": PIII, "b": PIII}
    frame = machine_table(in_units(measured_rows(table, facts), facts, published), "piii-smp", published).set_index("measurement")
    dirty = frame.loc["c2c_dirty_local"]
    assert (dirty["size"], dirty["unit"], dirty["published"]) == ("4 CPUs", "ns", 265)
    assert dirty["measured"] == pytest.approx(100.0) and dirty["ratio"] == pytest.approx(100 / 265, abs=1e-3)
    assert dirty["note"].startswith("outside ±30% of published. The middle of the guide's 170-360 ns")
    # the P6's locked increment (58 ns) is 40.6 cycles at 700 MHz: within the band
    assert frame.loc["rmw_lock_xadd", "measured"] == pytest.approx(58.0) and frame.loc["rmw_lock_xadd", "ratio"] == pytest.approx(1.0)
    assert not frame.loc["rmw_lock_xadd", "note"].startswith("outside")
    # what gem5 leaves out of the lock prefix: the extra is 0 where the P6 paid 57 ns
    extra = frame.loc["rmw_extra_lock_xadd"]
    assert extra["measured"] == 0 and extra["ratio"] == 0 and "gem5 cannot model this cost" in extra["note"]
    assert "seed 001" in extra["note"] and "seed 004" in extra["note"]


# ---- end to end: the report over fixture runs turned into calibration runs ----

CAL_RESULTS = {
    "piii-smp-2-kbench": [
        ("l1", {"testcase": "cal_latency", "copies": 1, "metrics": local(working_set_bytes=8192, cycles_per_load=4.0)}),
        ("mem", {"testcase": "cal_latency", "copies": 1, "metrics": local(working_set_bytes=4 << 20, cycles_per_load=140.0)}),
        ("stream", {"testcase": "cal_stream", "copies": 2, "metrics": {"bytes_per_cycle": 1.0}}),
    ],
    "altix-numa-2-kbench": [
        ("remote", {"testcase": "cal_latency", "copies": 1, "metrics": {"cpu_node": 0, "mem_node": 1, "distance": 20, "working_set_bytes": 8 << 20, "cycles_per_load": 190.0}}),
    ],
}


def calibration_results(tmp: Path) -> Path:
    """Copies of the real fixtures whose one ROI is a calibration testcase's."""
    results = tmp / "results"
    for fixture, runs in CAL_RESULTS.items():
        for name, guest in runs:
            run = results / f"{fixture}-{name}"
            shutil.copytree(FIXTURES / fixture, run, ignore=shutil.ignore_patterns("roi.trace.gz"))
            result = json.loads((run / "result.json").read_text())
            full = {"status": "ok", "seed": "cal", "ops": 1000, "ops_unit": "one op", "ops_per_s": 1.0, **guest}
            result["guest"]["results"] = [{"testcase": guest["testcase"], "result": full, "locks": []}]
            result["provenance"]["run_spec"] = guest["testcase"]
            (run / "result.json").write_text(json.dumps(result))
    return results


def test_the_report_shows_the_calibration_tables(tmp_path: Path) -> None:
    if not any(FIXTURES.glob("*/stats.txt")):
        pytest.skip("no real gem5 fixtures")
    out = tmp_path / "out"
    run = subprocess.run(
        [str(ROOT / "run.sh"), "report", str(ROOT / "campaigns" / "calibration.toml"), "--results", str(calibration_results(tmp_path)), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    markdown = (out / "report.md").read_text()
    assert "## Calibration: the machines against the hardware" in markdown
    assert "piii-smp: calibration" in markdown and "Sources of the published figures" in markdown
    piii = pd.read_csv(out / "piii-smp.csv").set_index("measurement")
    assert "| tamu-cosmos |" in markdown  # named in a note (memory_remote_d20's), so listed among the sources
    assert piii.loc["l1_hit", "measured"] == 4.0 and piii.loc["l1_hit", "size"] == "2 CPUs"
    assert piii.loc["memory_local", "measured"] == pytest.approx(140 / 0.6997900629811057, rel=1e-3)  # ns at the run's clock
    assert piii.loc["stream_2copies", "measured"] == pytest.approx(699.79, rel=1e-3)
    assert piii.loc["stream_2copies", "ratio"] == pytest.approx(699.79 / 800, rel=1e-3) and piii.loc["stream_2copies", "source"] == "p6-fsb"
    altix = pd.read_csv(out / "altix-numa.csv").set_index("measurement")
    assert altix.loc["memory_remote_d20", "measured"] == pytest.approx(190.0) and altix.loc["memory_remote_d20", "published"] == 181
    assert altix.loc["memory_remote_d20", "size"] == "2 nodes"
