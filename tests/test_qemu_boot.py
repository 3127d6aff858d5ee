"""The smp kernel boots under QEMU TCG, and a failed boot is reported as one.

Each test boots once (a few seconds under TCG) with a throwaway initramfs
or ext2 disk made here from busybox-static.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lockstudy import qemu
from lockstudy.kernel.initramfs import INIT_PROLOGUE, busybox_initramfs

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

CPUS = 4
MEMORY_MIB = 256
# Generous for a loaded 2-core host: the boots below take 3-10 s under TCG.
BOOT_TIMEOUT_SECONDS = 120
# Long enough for QEMU to start, far shorter than the hanging guest.
HANG_TIMEOUT_SECONDS = 5
PROBE_INIT = """echo "LOCKSTUDY-PROBE online=$(cat /sys/devices/system/cpu/online) nproc=$(nproc)"
poweroff -f
"""


def probe_line(console: str) -> str:
    found = re.search(r"LOCKSTUDY-PROBE (online=\S+ nproc=\d+)", console)
    return found.group(1) if found else ""


def test_smp_kernel_boots_with_every_cpu_online(smp_bzimage: Path, tmp_path: Path) -> None:
    initramfs = busybox_initramfs(PROBE_INIT, tmp_path / "probe.cpio.gz")
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=tmp_path / "console.log", cpus=CPUS,
                                     memory_mib=MEMORY_MIB, initrd=initramfs, timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}; console: {tmp_path / 'console.log'}\n{result.console[-3000:]}"
    assert probe_line(result.console) == f"online=0-{CPUS - 1} nproc={CPUS}", result.console[-3000:]
    assert result.accel in ("tcg", "kvm")


def test_ext2_disk_is_the_root_on_sda(smp_bzimage: Path, tmp_path: Path) -> None:
    """The gem5-like path: an ext2 image on PIIX IDE, found by ata_piix as /dev/sda."""
    mke2fs = shutil.which("mke2fs") or "/sbin/mke2fs"
    root = tmp_path / "root"
    for directory in ("bin", "dev", "proc", "sys", "tmp"):
        (root / directory).mkdir(parents=True)
    shutil.copy2("/bin/busybox", root / "bin" / "busybox")
    init = root / "init"
    init.write_text(INIT_PROLOGUE + 'echo "LOCKSTUDY-PROBE root=$(grep " / " /proc/mounts | cut -d" " -f1,3)"\npoweroff -f\n')
    init.chmod(0o755)
    disk = tmp_path / "root.ext2"
    subprocess.run([mke2fs, "-q", "-F", "-t", "ext2", "-d", str(root), "-E", "root_owner=0:0", str(disk), "16M"], check=True)
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=tmp_path / "console.log", cpus=2, memory_mib=MEMORY_MIB,
                                     disk=disk, kernel_args="root=/dev/sda rw init=/init", timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}\n{result.console[-3000:]}"
    assert "LOCKSTUDY-PROBE root=/dev/root ext2" in result.console or "LOCKSTUDY-PROBE root=/dev/sda ext2" in result.console, result.console[-2000:]


def test_a_kernel_without_init_is_a_failed_boot(smp_bzimage: Path, tmp_path: Path) -> None:
    # No disk, no initramfs: the kernel cannot mount a root and panics.
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=tmp_path / "console.log", cpus=1,
                                     memory_mib=MEMORY_MIB, timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert not result.timed_out, result.describe()
    assert result.panicked and not result.powered_off
    assert not result.ok, "a panicked boot must not count as a success"
    assert "PANIC" in result.describe()


def test_a_timeout_is_a_failed_boot(smp_bzimage: Path, tmp_path: Path) -> None:
    initramfs = busybox_initramfs("sleep 3600\n", tmp_path / "hang.cpio.gz")
    result = qemu.boot(qemu.QemuBoot(kernel=smp_bzimage, console_log=tmp_path / "console.log", cpus=1,
                                     memory_mib=MEMORY_MIB, initrd=initramfs, timeout_seconds=HANG_TIMEOUT_SECONDS))  # fmt: skip
    assert result.timed_out and result.exit_status is None
    assert not result.ok
    assert "TIMED OUT" in result.describe()
    assert "timeout" in (tmp_path / "console.log").read_text()
