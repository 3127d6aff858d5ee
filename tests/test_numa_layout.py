"""The command-line NUMA layout (`lockstudy.numa=`) against QEMU's own SRAT.

The same 2-node machine is booted twice under QEMU TCG with 4 vCPUs:

- once with no firmware NUMA tables and `lockstudy.numa=2:0-1/2-3:10,20,20,10`
  (what gem5 will use, as its x86 board has no SRAT),
- once with QEMU's `-numa` options, which give the kernel an ACPI SRAT and
  SLIT, and no parameter.

In each guest workloads/numa_probe.c (the image's probe) reports what getcpu() says on every
CPU, each node's cpulist, MemTotal and distance row. The two reports must
agree: same CPU -> node map, same cpulists, same distances, and node
memory within MEMTOTAL_TOLERANCE_KB (see there). A third boot gives a bad
value and must print the documented warning and fall back to one node.

The 16-node Altix-like machine (32 vCPUs) is booted the same two ways,
with the compact form gem5 gets (`lockstudy.numa=16:*2:tree10,2,4,2`, CPU
lists and distances derived in the kernel) against QEMU's SRAT and SLIT
built from the machine file's own distance matrix: the kernel's derivation
must give exactly the machine file's layout.

Time: three boots of a few seconds each under TCG (25 s in all, measured),
and two 32-vCPU boots.
The initramfs is made here: busybox-static, /init, the probe.
"""

from __future__ import annotations

import gzip
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lockstudy import guest_output, qemu
from lockstudy.kernel.initramfs import BUSYBOX, DIRECTORIES, INIT_PROLOGUE, Entry, newc_archive
from lockstudy.paths import ROOT

sys.path.insert(0, str(ROOT / "gem5-configs"))
import machine  # noqa: E402

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

PROBE_SOURCE = ROOT / "workloads" / "numa_probe.c"

# The machine: 4 vCPUs, 2 nodes of 2 CPUs, 512 MiB split evenly.
CPUS = 4
MEMORY_MIB = 512
CPU_LISTS = ((0, 1), (2, 3))
DISTANCES = ((10, 20), (20, 10))
NODES = len(CPU_LISTS)
NUMA_VALUE = "2:0-1/2-3:10,20,20,10"
# APIC id 1 in both nodes: must be rejected with this reason.
BAD_NUMA_VALUE = "2:0-1/1-3"
BAD_NUMA_WARNING = f'lockstudy.numa: invalid value "{BAD_NUMA_VALUE}": APIC id 1 is in two nodes'

# Node MemTotal is the memory the page allocator manages on that node: the
# node's RAM minus what was reserved before (kernel image and initramfs,
# memmap, node data, firmware areas). Both boots put the node boundary at
# 256 MiB (the parameter's equal-RAM boundary, 255.8 MiB here because of
# the sub-1 MiB holes, is rounded to a 4 MiB MAX_ORDER block; QEMU's SRAT
# says 256 MiB), and measured they agree to the kB (246292 and 257556 kB).
# Reservations may still move between boots (allocation order, ACPI table
# copies kept with an SRAT), so allow 1% of a node.
MEMTOTAL_TOLERANCE_KB = MEMORY_MIB * 1024 // NODES // 100

BOOT_TIMEOUT_SECONDS = 120
PROBE_INIT = "/numa_probe\npoweroff -f\n"


def parse_probe(console: str) -> guest_output.NumaReport:
    report = guest_output.parse_console(console).numa
    assert report is not None, "no LOCKSTUDY-NUMA line on the console"
    return report


@pytest.fixture(scope="module")
def initramfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """busybox + /init + the probe, compiled here with gcc -static."""
    if not BUSYBOX.is_file():
        pytest.fail(f"{BUSYBOX} not found: run ./run.sh setup (Debian package busybox-static)")
    work = tmp_path_factory.mktemp("numa-probe")
    probe = work / "numa_probe"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-static", "-o", str(probe), str(PROBE_SOURCE)], check=True)
    entries = [Entry(d, stat.S_IFDIR | 0o755) for d in DIRECTORIES]
    entries += [
        Entry("bin/busybox", stat.S_IFREG | 0o755, BUSYBOX.read_bytes()),
        Entry("numa_probe", stat.S_IFREG | 0o755, probe.read_bytes()),
        Entry("init", stat.S_IFREG | 0o755, (INIT_PROLOGUE + PROBE_INIT).encode()),
    ]
    image = work / "initramfs.cpio.gz"
    image.write_bytes(gzip.compress(newc_archive(entries), mtime=0))
    return image


def boot(smp_bzimage: Path, initramfs: Path, log: Path, kernel_args: str = "", numa: qemu.NumaLayout | None = None) -> str:
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=log, cpus=CPUS, memory_mib=MEMORY_MIB,
                                     kernel_args=kernel_args, initrd=initramfs, numa=numa,
                                     timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}\n{result.console[-3000:]}"
    return result.console


def qemu_srat_layout() -> qemu.NumaLayout:
    node_mib = MEMORY_MIB // NODES
    return qemu.NumaLayout(nodes=tuple(qemu.NumaNode(cpus, node_mib) for cpus in CPU_LISTS), distances=DISTANCES)


def test_command_line_layout_matches_qemu_srat(smp_bzimage: Path, initramfs: Path, tmp_path: Path) -> None:
    from_parameter = boot(smp_bzimage, initramfs, tmp_path / "parameter.log", f"lockstudy.numa={NUMA_VALUE}")
    from_srat = boot(smp_bzimage, initramfs, tmp_path / "srat.log", numa=qemu_srat_layout())

    active = re.search(r"lockstudy\.numa: active (\S+)", from_parameter)
    assert active, "no 'lockstudy.numa: active' line in the kernel log"
    assert active.group(1) == NUMA_VALUE
    assert "lockstudy.numa:" not in from_srat

    ours, qemus = parse_probe(from_parameter), parse_probe(from_srat)
    assert ours.done and qemus.done, "numa_probe did not finish"
    expected_node = {cpu: node for node, cpus in enumerate(CPU_LISTS) for cpu in cpus}
    assert ours.cpu_node == qemus.cpu_node == expected_node
    expected_cpulist = {node: f"{cpus[0]}-{cpus[-1]}" for node, cpus in enumerate(CPU_LISTS)}
    assert ours.cpulist == qemus.cpulist == expected_cpulist
    assert ours.distance == qemus.distance == dict(enumerate(DISTANCES))
    assert ours.memtotal_kb.keys() == qemus.memtotal_kb.keys() == set(range(NODES))
    for node in range(NODES):
        difference = abs(ours.memtotal_kb[node] - qemus.memtotal_kb[node])
        assert difference <= MEMTOTAL_TOLERANCE_KB, (
            f"node {node}: MemTotal {ours.memtotal_kb[node]} kB with lockstudy.numa, "
            f"{qemus.memtotal_kb[node]} kB with QEMU's SRAT"
        )


def test_bad_value_warns_and_falls_back(smp_bzimage: Path, initramfs: Path, tmp_path: Path) -> None:
    console = boot(smp_bzimage, initramfs, tmp_path / "bad.log", f"lockstudy.numa={BAD_NUMA_VALUE}")
    assert BAD_NUMA_WARNING in console
    report = parse_probe(console)
    assert report.done
    assert set(report.cpu_node.values()) == {0}
    assert list(report.cpulist) == [0]


# The largest Altix-like machine: the one whose explicit lockstudy.numa= value
# did not fit gem5's 511-byte x86 command line.
ALTIX_FILE = ROOT / "gem5-configs" / "machines" / "altix-numa.toml"
ALTIX_NODES = 16
# A 32-vCPU TCG guest on a 2-core host brings its CPUs up one by one.
BIG_BOOT_TIMEOUT_SECONDS = 600


def boot_altix(instance: machine.MachineInstance, initramfs: Path, smp_bzimage: Path, log: Path,
               kernel_args: str = "", numa: qemu.NumaLayout | None = None) -> guest_output.NumaReport:
    memory_mib = instance.memory_bytes >> 20
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=log, cpus=instance.num_cpus, memory_mib=memory_mib,
                                     kernel_args=kernel_args, initrd=initramfs, numa=numa,
                                     timeout_seconds=BIG_BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}\n{result.console[-3000:]}"
    report = parse_probe(result.console)
    assert report.done, "numa_probe did not finish"
    return report


def test_compact_form_gives_the_machine_files_layout_at_16_nodes(smp_bzimage: Path, initramfs: Path, tmp_path: Path) -> None:
    """The compact lockstudy.numa= form against QEMU's SRAT/SLIT, both from the machine file."""
    instance = machine.load_machine(ALTIX_FILE).instance(ALTIX_NODES)
    parameter = instance.numa_boot_parameter()
    assert parameter == "lockstudy.numa=16:*2:tree10,2,4,2"
    node_mib = (instance.memory_bytes >> 20) // instance.num_nodes
    srat = qemu.NumaLayout(
        nodes=tuple(qemu.NumaNode(tuple(instance.node_cpus(node)), node_mib) for node in range(instance.num_nodes)),
        distances=tuple(tuple(row) for row in instance.distances()),
    )
    ours = boot_altix(instance, initramfs, smp_bzimage, tmp_path / "parameter.log", parameter)
    qemus = boot_altix(instance, initramfs, smp_bzimage, tmp_path / "srat.log", numa=srat)

    active = re.search(r"lockstudy\.numa: active (\S+)", (tmp_path / "parameter.log").read_text(errors="replace"))
    assert active, "no 'lockstudy.numa: active' line in the kernel log"
    lists = "/".join(f"{2 * node}-{2 * node + 1}" for node in range(ALTIX_NODES))
    assert active.group(1) == f"16:{lists}:tree10,2,4,2"

    expected_node = dict(enumerate(instance.cpu_to_node()))
    assert ours.cpu_node == qemus.cpu_node == expected_node
    assert ours.cpulist == qemus.cpulist
    assert ours.distance == qemus.distance == {node: tuple(row) for node, row in enumerate(instance.distances())}
    assert ours.memtotal_kb.keys() == qemus.memtotal_kb.keys() == set(range(ALTIX_NODES))
    tolerance_kb = node_mib * 1024 // 100
    for node in range(ALTIX_NODES):
        difference = abs(ours.memtotal_kb[node] - qemus.memtotal_kb[node])
        assert difference <= tolerance_kb, (
            f"node {node}: MemTotal {ours.memtotal_kb[node]} kB with lockstudy.numa, "
            f"{qemus.memtotal_kb[node]} kB with QEMU's SRAT"
        )
