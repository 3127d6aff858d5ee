"""Synthetic rows of results/costs/runs.csv, from known power laws (for the cost model's tests)."""

from __future__ import annotations

from lockstudy.costmodel.table import FAST_FORWARD_TO_TESTCASE, CostRow

SIZES = (1, 2, 4, 8)
# Known laws, value = a * cpus^b.
RATE = (0.30, 0.80)  # host s per simulated ms of ROI
OUTSIDE = (20.0, 0.50)  # host s of a restored run outside its ROI
BOOT = (100.0, 0.60)  # host s of a boot
MEMORY = (500.0, 0.40)  # peak MiB
ROI_MS = 10.0


def law(pair: tuple[float, float], cpus: float) -> float:
    return pair[0] * cpus ** pair[1]


def row(phase: str, cpus: int, host_seconds: float | None, *, machine: str = "piii-smp", cpu_model: str = "timing",
        trace: str = "off", run_spec: str = "", roi_host_seconds: float | None = None, roi_simulated_ms: float | None = None,
        peak_rss_mib: float | None = None, source: str = "measured", run_id: str = "",
        cpu_seconds: float | None = None, restore: str | None = None) -> CostRow:  # fmt: skip
    """A row; a restored run fast-forwarded to its testcase unless `restore` says otherwise."""
    if restore is None:
        restore = FAST_FORWARD_TO_TESTCASE if phase == "restore" else ""
    return CostRow(
        source=source, source_ref=f"synthetic/{phase}/{cpus}/{run_id}", run_id=run_id or f"{phase}{cpus}", phase=phase,
        machine=machine, cpus=cpus, nodes=1, guest_memory_mib=512.0, cpu_model=cpu_model, trace=trace, run_spec=run_spec,
        host_seconds=host_seconds, cpu_seconds=cpu_seconds, roi_host_seconds=roi_host_seconds, roi_simulated_ms=roi_simulated_ms, simulated_seconds=None,
        peak_rss_mib=peak_rss_mib, host_cpu_model="", host_cpu_count=None, host_load_1min=None, gem5_version="24.0.0.1",
        machine_sha256="", kernel_build_id="", command="", restore=restore,
    )  # fmt: skip


def power_law_rows(run_spec: str, machine: str = "piii-smp", sizes: tuple[int, ...] = SIZES) -> list[CostRow]:
    """A boot and a restored run of `run_spec` at each size, every figure exactly on its law."""
    rows = []
    for cpus in sizes:
        roi_host = law(RATE, cpus) * ROI_MS
        rows.append(row("restore", cpus, law(OUTSIDE, cpus) + roi_host, machine=machine, run_spec=run_spec,
                        roi_host_seconds=roi_host, roi_simulated_ms=ROI_MS, peak_rss_mib=law(MEMORY, cpus)))  # fmt: skip
        rows.append(row("boot", cpus, law(BOOT, cpus), machine=machine, cpu_model="atomic", peak_rss_mib=law(MEMORY, cpus)))
    return rows


def predicted_run_seconds(cpus: int) -> float:
    return law(OUTSIDE, cpus) + law(RATE, cpus) * ROI_MS
