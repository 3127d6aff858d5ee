"""The calibration suite in the project kernel under QEMU TCG: each cal_* testcase once, on the 2-node layout.

A functional check, not a measurement: TCG has no caches of its own and its
TSC is the host's, so only what must hold on any machine is checked: every
testcase ends ok with sane numbers, memory bound to node 1 is on node 1 at
distance 20 from CPU 0, the two CPUs of the transfer sit on the nodes the
layout gives them, and a chase within an L1 is cheaper than one through
16 MiB. One boot of a few seconds.

Needs the smp kernel (fails when it is missing or stale: run ./run.sh setup)
and builds the image if it is out of date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy import image, qemu
from lockstudy.guest_output import parse_console
from two_nodes import CPU_NODE, CPUS, MEMORY_MIB, NUMA_ARG, SOCKETS

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

BOOT_TIMEOUT_S = 120
ROOT_ARGS = "root=/dev/sda"
REMOTE_NODE = 1
REMOTE_DISTANCE = 20  # NUMA_VALUE's distance row
OTHER_NODE_CPU = 2  # on node 1 (CPU_NODE)
SPEC = "+".join(
    [
        "cal_latency:kib=8,iterations=4",
        f"cal_latency:kib=16384,node={REMOTE_NODE},iterations=2,warmup=1,steps=4096",
        f"cal_c2c:threads=2,owner=0,reader={OTHER_NODE_CPU},state=dirty,iterations=16",
        "cal_c2c:threads=2,owner=0,reader=1,state=clean,evict_kib=1024,iterations=16",
        "cal_rmw:iterations=4",
        f"cal_contend:threads={CPUS},iterations=4",
        f"cal_stream:kib=4096,node={REMOTE_NODE},iterations=2",
    ]
)


@pytest.fixture(scope="module")
def rootfs() -> Path:
    image.build_image()
    return image.ext2_path()


def test_every_calibration_testcase_runs_in_the_guest(smp_bzimage: Path, rootfs: Path, tmp_path: Path) -> None:
    booted = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=tmp_path / "calibration.log", cpus=CPUS, sockets=SOCKETS,
                                     memory_mib=MEMORY_MIB, kernel_args=f"{ROOT_ARGS} {NUMA_ARG} lockstudy.run={SPEC}",
                                     disk=rootfs, timeout_seconds=BOOT_TIMEOUT_S))  # fmt: skip
    assert booted.ok, f"{booted.describe()}; console tail:\n{booted.console[-3000:]}"
    results = [r.data for r in parse_console(booted.console).results()]
    assert [r["testcase"] for r in results] == [item.split(":")[0] for item in SPEC.split("+")]
    assert all(r["status"] == "ok" and r["metrics"]["tsc_mhz"] > 0 for r in results)
    l1, remote, dirty, clean, rmw, contend, stream = (r["metrics"] for r in results)

    assert 0 < l1["cycles_per_load"] < remote["cycles_per_load"]
    assert (remote["cpu_node"], remote["mem_node"], remote["distance"]) == (0, REMOTE_NODE, REMOTE_DISTANCE)
    assert (l1["mem_node"], l1["distance"]) == (0, 10)

    assert (dirty["owner_node"], dirty["reader_node"], dirty["distance"]) == (CPU_NODE[0], CPU_NODE[OTHER_NODE_CPU], REMOTE_DISTANCE)
    assert (clean["reader_node"], clean["distance"]) == (CPU_NODE[1], 10)
    assert dirty["samples"] == clean["samples"] == 16 and dirty["cycles_mean"] >= 0  # TCG: the timer overhead subtracted can exceed one load

    assert all(rmw[f"cycles_{kind}"] > 0 for kind in ("add", "xadd", "lock_xadd", "cmpxchg", "lock_cmpxchg"))
    assert contend["cpu_node"] == [CPU_NODE[cpu] for cpu in range(CPUS)] and contend["cycles_per_rmw"] > 0
    assert stream["mem_node"] == REMOTE_NODE and stream["bytes_per_cycle"] > 0 and stream["mb_per_s"] > 0
