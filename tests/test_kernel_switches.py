"""The lockref, rwsem and fd-lookup switches: each boots, says it is active,
a small workload runs under it, a bad value warns; rwsem_wakeflag=1, alone
and with rwsem_wake_in_lock=1, passes locktorture rwsem_lock.

kernel/patches/README-switches.md documents the parameters and messages.
Time: three short boots of the smp build (a few seconds each under TCG)
and one locktorture run of the torture build (locktorture.toml's duration
plus the boot, about 35 s, twice).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy import qemu
from lockstudy.kernel import locktorture, specs
from lockstudy.kernel.build import BuildMissing, require_build
from lockstudy.kernel.initramfs import busybox_initramfs

pytestmark = [pytest.mark.qemu, pytest.mark.kernel]

CPUS = 4
MEMORY_MIB = 256
BOOT_TIMEOUT_SECONDS = 120
# Exercises every switch: one-byte writes (fd lookup per write, seed 001),
# opens/stats of one file and of new files in one directory (dentry
# lockrefs, seed 004), and fork/exec of busybox (mmap_lock rwsem, seed 003),
# from 4 processes at once.
WORKLOAD = """cd /tmp
for name in lockref rwsem_wakeflag rwsem_wake_in_lock fdlock; do
  echo "LOCKSTUDY-STATUS $name=$(cat /sys/kernel/lockstudy/$name)"
done
for i in 1 2 3 4; do
  ( dd if=/dev/zero of=f$i bs=1 count=2000 2>/dev/null
    for j in $(seq 50); do touch d$i-$j; cat f$i > /dev/null; ls -l f$i > /dev/null; rm d$i-$j; done ) &
done
wait
echo "LOCKSTUDY-SWITCHES workload=ok bytes=$(cat f1 f2 f3 f4 | wc -c)"
poweroff -f
"""
WORKLOAD_DONE = "LOCKSTUDY-SWITCHES workload=ok bytes=8000"

# (kernel arguments, lines the console must contain): the status files of
# /sys/kernel/lockstudy/ (printed by WORKLOAD) and the boot warnings of the
# lockstudy switch facility (kernel/locking/lockstudy.c).
SETTINGS = {
    "on": (
        "lockstudy.lockref=spinlock lockstudy.rwsem_wakeflag=1 lockstudy.rwsem_wake_in_lock=1 lockstudy.fdlock=rwlock",
        ["LOCKSTUDY-STATUS lockref=spinlock", "LOCKSTUDY-STATUS rwsem_wakeflag=1", "LOCKSTUDY-STATUS rwsem_wake_in_lock=1",
         "LOCKSTUDY-STATUS fdlock=rwlock"],
    ),
    "fdlock-spinlock": (
        "lockstudy.lockref=cmpxchg lockstudy.rwsem_wakeflag=0 lockstudy.fdlock=spinlock",
        ["LOCKSTUDY-STATUS lockref=cmpxchg", "LOCKSTUDY-STATUS rwsem_wakeflag=0", "LOCKSTUDY-STATUS rwsem_wake_in_lock=0",
         "LOCKSTUDY-STATUS fdlock=spinlock"],
    ),
    "invalid": (
        "lockstudy.lockref=ticket lockstudy.rwsem_wakeflag=yes lockstudy.rwsem_wake_in_lock=2 lockstudy.fdlock=mutex",
        [
            "lockstudy: invalid value 'ticket' for lockstudy.lockref, using default 'cmpxchg'",
            "LOCKSTUDY-STATUS lockref=cmpxchg (invalid value 'ticket' ignored)",
            "lockstudy: invalid value 'yes' for lockstudy.rwsem_wakeflag (accepted 0..1), using default 0",
            "LOCKSTUDY-STATUS rwsem_wakeflag=0 (invalid value 'yes' ignored)",
            "lockstudy: invalid value '2' for lockstudy.rwsem_wake_in_lock (accepted 0..1), using default 0",
            "LOCKSTUDY-STATUS rwsem_wake_in_lock=0 (invalid value '2' ignored)",
            "lockstudy: invalid value 'mutex' for lockstudy.fdlock, using default 'none'",
            "LOCKSTUDY-STATUS fdlock=none (invalid value 'mutex' ignored)",
        ],
    ),
}


FACILITY_OPTION = "CONFIG_LOCKSTUDY=y"


def bzimage_of(build: str) -> Path:
    """The build's bzImage; the switches exist only with the lockstudy facility."""
    try:
        out = require_build(specs.load_builds()[build])
    except BuildMissing as exc:
        pytest.fail(str(exc))
    if FACILITY_OPTION not in (out / "config").read_text().splitlines():
        # Without the facility the switches are not compiled in: nothing to test.
        pytest.skip(f"the {build} kernel has no {FACILITY_OPTION} (the /sys/kernel/lockstudy switch "
                    f"facility), so it has no lockstudy.* switches: kernel/configs must enable it")
    return out / "bzImage"


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_switch_is_active_and_workload_runs(setting: str, tmp_path: Path) -> None:
    kernel_args, expected = SETTINGS[setting]
    initramfs = busybox_initramfs(WORKLOAD, tmp_path / "workload.cpio.gz")
    result = qemu.boot(qemu.QemuBoot(kernel=bzimage_of("smp"), console_log=tmp_path / "console.log", cpus=CPUS,
                                     memory_mib=MEMORY_MIB, kernel_args=kernel_args, initrd=initramfs,
                                     timeout_seconds=BOOT_TIMEOUT_SECONDS))  # fmt: skip
    assert result.ok, f"{result.describe()}\n{result.console[-3000:]}"
    for line in expected:
        assert line in result.console, f"missing {line!r} in the log"
    assert WORKLOAD_DONE in result.console, result.console[-3000:]


# The waker flag alone (seed 003 as shipped), and with the wakeups inside wait_lock (its precondition).
RWSEM_SETTINGS = {
    "wakeflag": "lockstudy.rwsem_wakeflag=1",
    "wakeflag-wake-in-lock": "lockstudy.rwsem_wakeflag=1 lockstudy.rwsem_wake_in_lock=1",
}


@pytest.mark.parametrize("setting", list(RWSEM_SETTINGS))
def test_rwsem_switches_pass_locktorture(setting: str, tmp_path: Path) -> None:
    settings = locktorture.load_settings()
    run = locktorture.run(bzimage_of("torture"), "rwsem_lock", tmp_path, settings, extra_args=RWSEM_SETTINGS[setting])
    assert "invalid value" not in run.boot.console
    assert run.passed, f"{run.describe()}\n{run.boot.console[-4000:]}"
    assert run.report.torture_seconds is not None and run.report.torture_seconds >= settings.minimum_torture_seconds
