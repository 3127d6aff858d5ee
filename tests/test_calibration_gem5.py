"""The calibration suite on gem5: one boot of piii-smp with 2 CPUs running a few calibration ROIs,
then the calibration table built from that run.

Needs a gem5 binary (GEM5; skipped with the reason otherwise) and, as the
other boots, LOCKSTUDY_SLOW_GEM5=1 (tens of host minutes).

What it checks is what the suite rests on: gem5's TSC ticks once per CPU
cycle (the guest's TSC rate is the machine's clock), an L1 hit is cheaper
than an L2 hit and both than memory, a dirty transfer costs more than an
L1 hit, and the analysis names every ROI's measurement.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.calibration.table import calibration_tables
from analysis.gem5_output.runs import load_results
from analysis.traffic.metrics import metrics_table
from lockstudy.campaign.machines import machine_module
from test_machines_gem5 import built, run_gem5, stats_blocks  # noqa: F401 (built is a fixture)

pytestmark = [pytest.mark.gem5, pytest.mark.kernel]

MACHINE = "piii-smp"
CPUS = 2
HZ_PER_MHZ = 1e6
TSC_TOLERANCE = 0.01
SPEC = "+".join(
    [
        "cal_latency:kib=8,line=32,iterations=4,steps=256",
        "cal_latency:kib=256,line=32,iterations=4,steps=256",
        "cal_latency:kib=4096,line=32,iterations=2,warmup=0,steps=1024",
        "cal_c2c:threads=2,owner=0,reader=1,state=dirty,line=32,iterations=16",
        "cal_rmw:iterations=2",
    ]
)
MEASUREMENTS = {"l1_hit", "l2_hit", "memory_local", "c2c_dirty_local", "rmw_lock_xadd", "rmw_extra_lock_xadd", "rmw_lock_cmpxchg", "rmw_extra_lock_cmpxchg"}


def test_calibration_rois_on_the_bus_machine(gem5, built, tmp_path: Path) -> None:  # noqa: F811
    kernel, image = built
    machine_mhz = machine_module().find_machine(MACHINE).instance(CPUS).clock_hz / HZ_PER_MHZ
    result = run_gem5(gem5, tmp_path, "--machine", MACHINE, "--cpus", str(CPUS), "--kernel", str(kernel), "--image", str(image), "--run", SPEC)
    assert result["status"] == "ok", result["reason"]
    assert stats_blocks(tmp_path) == len(result["roi_ticks"]) == len(SPEC.split("+"))
    guests = [entry["result"] for entry in result["guest"]["results"]]
    l1, l2, memory, c2c, rmw = (g["metrics"] for g in guests)
    for metrics in (l1, l2, memory, c2c, rmw):
        assert metrics["tsc_mhz"] == pytest.approx(machine_mhz, rel=TSC_TOLERANCE)
    assert 0 < l1["cycles_per_load"] < l2["cycles_per_load"] < memory["cycles_per_load"]
    assert c2c["cycles"] > l1["cycles_per_load"]

    results, unreadable = load_results(tmp_path, None)
    assert not unreadable
    tables = calibration_tables(results, metrics_table(results))
    table = tables[MACHINE]
    assert set(table["measurement"]) == MEASUREMENTS and set(table["size"]) == {f"{CPUS} CPUs"}
    assert (table["measured"].notna()).all()
