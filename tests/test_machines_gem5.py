"""The gem5 side of the machines: these need a gem5 binary (GEM5).

Without GEM5 they skip with the reason (the `gem5` fixture). The boots take
tens of host minutes, more than the suite's budget, so they also need
LOCKSTUDY_SLOW_GEM5=1; the --help check runs whenever gem5 is there.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lockstudy.paths import ROOT, build_dir

pytestmark = pytest.mark.gem5

RUN_PY = ROOT / "gem5-configs" / "run.py"
HELP_TIMEOUT_S = 120
BOOT_TIMEOUT_S = 4 * 3600
# 10 ms of simulated bench: seconds of guest work are hours on the detailed CPU.
SMOKE_RUN_SPEC = "kbench:duration_ms=10"
# A traced ROI: every Ruby message of 1 ms is a lot of lines.
TRACED_RUN_SPEC = "kbench:duration_ms=1"


def gem5_command(gem5, outdir: Path, *args: str) -> list[str]:
    return [str(gem5.path), "-d", str(outdir), str(RUN_PY), *args, "--outdir", str(outdir)]


def test_run_py_help_under_gem5(gem5, tmp_path) -> None:
    result = subprocess.run(
        [str(gem5.path), "-d", str(tmp_path), str(RUN_PY), "--help"],
        capture_output=True, text=True, timeout=HELP_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    assert "--machine" in result.stdout and "--checkpoint-in" in result.stdout


def test_run_py_rejects_a_bad_machine_under_gem5(gem5, tmp_path) -> None:
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(b"x")
    result = subprocess.run(
        gem5_command(gem5, tmp_path, "--machine", "no-such", "--cpus", "1", "--kernel", str(kernel), "--image", str(kernel)),
        capture_output=True, text=True, timeout=HELP_TIMEOUT_S,
    )
    assert result.returncode != 0 and "no such machine 'no-such'" in result.stderr


@pytest.fixture(scope="module")
def built() -> tuple[Path, Path]:
    if os.environ.get("LOCKSTUDY_SLOW_GEM5") != "1":
        pytest.skip("slow: a gem5 boot takes tens of host minutes; set LOCKSTUDY_SLOW_GEM5=1")
    kernel = build_dir() / "kernel" / "smp" / "vmlinux"
    image = build_dir() / "image" / "rootfs.ext2"
    for path in (kernel, image):
        assert path.is_file(), f"{path} is missing: run ./run.sh setup"
    return kernel, image


def run_gem5(gem5, outdir: Path, *args: str) -> dict:
    subprocess.run(gem5_command(gem5, outdir, *args), timeout=BOOT_TIMEOUT_S, check=False)
    return json.loads((outdir / "result.json").read_text())


def stats_blocks(outdir: Path) -> int:
    text = (outdir / "stats.txt").read_text() if (outdir / "stats.txt").exists() else ""
    return text.count("---------- Begin Simulation Statistics ----------")


@pytest.mark.kernel
def test_piii_two_cpus_boot_and_roi(gem5, built, tmp_path) -> None:
    kernel, image = built
    result = run_gem5(
        gem5, tmp_path, "--machine", "piii-smp", "--cpus", "2", "--kernel", str(kernel), "--image", str(image),
        "--run", SMOKE_RUN_SPEC,
    )
    assert result["status"] == "ok", result["reason"]
    assert result["guest"]["results"], "no testcase result on the console"
    assert stats_blocks(tmp_path) == len(result["roi_ticks"]) >= 1
    assert (tmp_path / "config.json").is_file() and (tmp_path / "console.log").is_file()
    assert result["provenance"]["machine"]["sha256"]
    assert result["topology"]["problems"] == [] and result["topology"]["boot"]["cpus"] == "2"
    assert result["switched_to_roi_cpu"]["by"] == "the guest asked"  # the testcase's m5 switchcpu, before its ROI
    # the host time is split at the switch: restore and fast-forward before it, the detailed CPUs after
    assert 0 < result["switched_to_roi_cpu"]["host_seconds"] <= result["roi_host_seconds"][0][0]


@pytest.mark.kernel
@pytest.mark.parametrize("model", ["altix-numa", "altix-numa-interleaved"])
def test_altix_two_nodes_guest_sees_the_numa_layout(model, request, built, tmp_path) -> None:
    gem5 = request.getfixturevalue("gem5_chi" if model == "altix-numa" else "gem5_mesi")
    kernel, image = built
    result = run_gem5(
        gem5, tmp_path, "--machine", model, "--nodes", "2", "--kernel", str(kernel), "--image", str(image),
        "--run", SMOKE_RUN_SPEC,
    )
    assert result["status"] == "ok", result["reason"]
    assert "lockstudy.numa=2:*2:tree10,2" in result["kernel_command_line"]
    # what getcpu() and /sys/devices/system/node said in the guest
    assert result["topology"]["problems"] == []
    assert result["topology"]["numa"]["cpu_node"] == [0, 0, 1, 1]
    assert result["topology"]["numa"]["distance"] == [[10, 20], [20, 10]]
    assert all(entry["memory"] == [] for entry in result["guest"]["results"])  # untraced: no memory map asked for


@pytest.mark.kernel
def test_checkpoint_out_then_in(gem5_chi, built, tmp_path) -> None:
    """Ruby (CHI): boot to a checkpoint, restore on timing CPUs, trace the ROI."""
    gem5 = gem5_chi
    kernel, image = built
    checkpoint = tmp_path / "checkpoint"
    machine = ("--machine", "altix-numa", "--nodes", "2", "--kernel", str(kernel), "--image", str(image))
    boot = run_gem5(gem5, tmp_path / "boot", *machine, "--checkpoint-out", str(checkpoint))
    assert boot["status"] == "ok", boot["reason"]
    assert (checkpoint / "m5.cpt").is_file()
    restored = run_gem5(gem5, tmp_path / "roi", *machine, "--checkpoint-in", str(checkpoint), "--run", TRACED_RUN_SPEC, "--trace", "protocol")
    assert restored["status"] == "ok", restored["reason"]
    assert restored["guest"]["spec"] == TRACED_RUN_SPEC  # from m5 readfile, not the checkpoint's command line
    # fast-forward from the checkpoint until the testcase started and asked for the timing CPU
    switched = restored["switched_to_roi_cpu"]
    assert switched["by"] == "the guest asked" and boot["simulated_seconds"] * boot["ticks_per_second"] < switched["tick"] < restored["roi_ticks"][0][0]
    assert restored["provenance"]["fast_forward"] == "atomic"
    # traced: readfile's second line asked for the memory map, which names the trace's heap lines
    kinds = {entry[0] for entry in restored["guest"]["results"][0]["memory"]}
    assert {"slab", "percpu", "stack", "table"} <= kinds, kinds
    assert stats_blocks(tmp_path / "roi") == 1
    assert (tmp_path / "roi" / "roi.trace.gz").stat().st_size > 0


@pytest.mark.kernel
def test_a_guest_that_does_not_exit_after_its_roi_is_stopped_as_stuck(gem5, built, tmp_path) -> None:
    """run.toml's after-ROI limit, made tiny: the guest cannot print its results in 1 µs, so the run is failed as stuck."""
    kernel, image = built
    result = run_gem5(
        gem5, tmp_path, "--machine", "piii-smp", "--cpus", "1", "--kernel", str(kernel), "--image", str(image),
        "--run", SMOKE_RUN_SPEC, "--after-roi-limit-ms", "0.001",
    )
    assert result["status"] == "failed"
    assert "stuck after the ROI" in result["reason"]
    assert result["after_roi_limit_ms"] == 0.001  # the launcher retries it only when its study allows more
    assert stats_blocks(tmp_path) == len(result["roi_ticks"]) == 1  # the ROI itself was measured


# cal_contend: every thread adds 1 to one shared counter with lock xadd;
# the testcase fails when the counter ends short of threads x iterations.
CONTENDED_RMW_SPEC = "cal_contend:threads=4"
STOCK_CHI_VARIABLE = "LOCKSTUDY_GEM5_CHI_STOCK"


@pytest.fixture(scope="module")
def altix_two_node_checkpoint(gem5_chi, built, tmp_path_factory) -> tuple[tuple[str, ...], Path]:
    kernel, image = built
    machine = ("--machine", "altix-numa", "--nodes", "2", "--kernel", str(kernel), "--image", str(image))
    outdir = tmp_path_factory.mktemp("altix-boot")
    boot = run_gem5(gem5_chi, outdir, *machine, "--checkpoint-out", str(outdir / "checkpoint"))
    assert boot["status"] == "ok", boot["reason"]
    return machine, outdir / "checkpoint"


@pytest.mark.kernel
def test_contended_locked_rmw_keeps_every_update_on_chi(gem5_chi, altix_two_node_checkpoint, tmp_path) -> None:
    """With gem5-extras/chi-x86-locked-rmw, 4 CPUs on 2 nodes contending one line lose no lock xadd."""
    machine, checkpoint = altix_two_node_checkpoint
    result = run_gem5(
        gem5_chi, tmp_path, *machine, "--checkpoint-in", str(checkpoint), "--run", CONTENDED_RMW_SPEC,
        "--perturb-start-us", "4000", "--perturb-seed", "1",
    )
    assert result["status"] == "ok", result["reason"]
    assert result["provenance"]["gem5_extras"] == {"chi-x86-locked-rmw": 1}
    (bench,) = result["guest"]["results"]
    assert bench["result"]["ops"] == sum(bench["result"]["copy_ops"]) == 4 * 2048
    # a perturbed start: the switch came the drawn delay after the testcase asked, and before its ROI
    delay_ns = result["provenance"]["perturbation"]["start_delay_ns"]
    switched = result["switched_to_roi_cpu"]
    assert 0 < delay_ns <= 4_000_000 and switched["by"].startswith("the guest asked, ")
    delay_ticks = delay_ns * result["ticks_per_second"] // 10**9
    assert delay_ticks <= switched["tick"] - switched["asked_tick"] < delay_ticks + result["ticks_per_second"] // 10**5  # + draining, < 10 us
    assert switched["tick"] < result["roi_ticks"][0][0]


@pytest.mark.kernel
def test_stock_chi_loses_contended_locked_rmw_updates(altix_two_node_checkpoint, tmp_path) -> None:
    """The fault the extra mends, shown on a stock CHI build named by LOCKSTUDY_GEM5_CHI_STOCK."""
    if not os.environ.get(STOCK_CHI_VARIABLE):
        pytest.skip(f"needs a CHI gem5 built without the extra: set {STOCK_CHI_VARIABLE}")
    from lockstudy import gem5 as gem5_finder

    stock = gem5_finder.find_gem5({"GEM5_CHI": os.environ[STOCK_CHI_VARIABLE]}, protocol="CHI", require_extras=False)
    assert stock.missing_extra() == "chi-x86-locked-rmw"
    machine, checkpoint = altix_two_node_checkpoint
    refused = subprocess.run(
        gem5_command(stock, tmp_path / "refused", *machine, "--checkpoint-in", str(checkpoint), "--run", CONTENDED_RMW_SPEC),
        capture_output=True, text=True, timeout=HELP_TIMEOUT_S,
    )
    assert refused.returncode != 0 and "chi-x86-locked-rmw extra" in refused.stdout + refused.stderr
    result = run_gem5(stock, tmp_path / "stock", *machine, "--checkpoint-in", str(checkpoint), "--run", CONTENDED_RMW_SPEC, "--stock-chi")
    assert result["status"] == "failed" and "the counter is" in result["reason"], result["reason"]
    assert result["provenance"]["stock_chi"] is True
