"""locktorture under QEMU: boot the `torture` build, read its verdict.

locktorture (CONFIG_LOCK_TORTURE_TEST=y, built in) starts at boot with its
parameters from the command line, prints statistics lines

    Writes:  Total: N  Max/Min: a/b [???]  Fail: F [!!!]

and, when `shutdown_secs` expires, a last statistics block, a line
`<type>-torture:--- End of test: SUCCESS|FAILURE|LOCK_HOTPLUG ...` and powers
the machine off. `???` only flags unfairness (expected for test-and-set
locks); `!!!` flags a failure, as does any nonzero Fail count.

A run passes only when the boot ended by itself (no timeout), the end line
says SUCCESS, every Fail count is 0, no `!!!` and no kernel BUG/WARNING.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockstudy import qemu
from lockstudy.kernel.initramfs import busybox_initramfs
from lockstudy.files import typed_field
from lockstudy.kernel.specs import SpinlockVariant
from lockstudy.paths import DATA

SETTINGS_FILE = DATA / "locktorture.toml"
SPINLOCK_PARAMETER = "lockstudy.spinlock"

# An init that reports the kernel's lockstudy switches (one file per switch
# in /sys/kernel/lockstudy/) and never exits: locktorture powers the
# machine off itself.
SWITCH_MARKER = "LOCKSTUDY-SWITCH"
IDLE_INIT = f"""for f in /sys/kernel/lockstudy/*; do
  [ -f "$f" ] && echo "{SWITCH_MARKER} ${{f##*/}}=$(cat "$f")"
done
echo lockstudy: locktorture running
while :; do sleep 3600; done
"""

_END = re.compile(r"-torture:--- End of test: ([A-Z_]+)")
_START = re.compile(r"-torture:--- Start of test")
_FAIL = re.compile(r"(Writes|Reads)\s*:\s+Total: (\d+).*?Fail: (\d+)")
_TIME = re.compile(r"^\[\s*(\d+\.\d+)\]")
KERNEL_TROUBLE = ("BUG:", "WARNING:", "Oops", "Kernel panic")


@dataclass(frozen=True)
class TortureSettings:
    torture_types: tuple[str, ...]
    cpus: int
    memory_mib: int
    duration_seconds: int
    minimum_torture_seconds: int
    stat_interval_seconds: int
    writers_per_cpu: int
    timeout_margin_seconds: int
    negative_type: str
    negative_duration_seconds: int


def load_settings(path: Path = SETTINGS_FILE) -> TortureSettings:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)

    def setting(key: str, kind: type) -> Any:
        return typed_field(data, key, kind, str(path))

    return TortureSettings(
        torture_types=tuple(setting("torture_types", list)),
        cpus=setting("cpus", int),
        memory_mib=setting("memory_mib", int),
        duration_seconds=setting("duration_seconds", int),
        minimum_torture_seconds=setting("minimum_torture_seconds", int),
        stat_interval_seconds=setting("stat_interval_seconds", int),
        writers_per_cpu=setting("writers_per_cpu", int),
        timeout_margin_seconds=setting("timeout_margin_seconds", int),
        negative_type=setting("negative_control.torture_type", str),
        negative_duration_seconds=setting("negative_control.duration_seconds", int),
    )


@dataclass
class TortureReport:
    """What the console says about one locktorture run."""

    end_status: str | None  # SUCCESS, FAILURE, LOCK_HOTPLUG; None: no end line
    fail_counts: list[int] = field(default_factory=list)
    total_acquisitions: int = 0
    alarm_lines: list[str] = field(default_factory=list)  # lines with "!!!"
    trouble_lines: list[str] = field(default_factory=list)  # BUG/WARNING/Oops/panic
    torture_seconds: float | None = None  # from the printk times of start and end
    switches: dict[str, str] = field(default_factory=dict)  # /sys/kernel/lockstudy/<name> -> first word

    @property
    def passed(self) -> bool:
        return (
            self.end_status == "SUCCESS"
            and not any(self.fail_counts)
            and not self.alarm_lines
            and not self.trouble_lines
        )

    def describe(self) -> str:
        return (
            f"end={self.end_status or 'missing'} fails={sum(self.fail_counts)} "
            f"'!!!' lines={len(self.alarm_lines)} kernel trouble={len(self.trouble_lines)} "
            f"acquisitions={self.total_acquisitions} torture={self.torture_seconds or 0:.1f}s"
        )


def parse_console(text: str) -> TortureReport:
    report = TortureReport(end_status=None)
    start_time: float | None = None
    last_stats_total: dict[str, int] = {}
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        stamp = _TIME.match(line)
        if _START.search(line) and stamp:
            start_time = float(stamp.group(1))
        end = _END.search(line)
        if end:
            report.end_status = end.group(1)
            if stamp and start_time is not None:
                report.torture_seconds = float(stamp.group(1)) - start_time
        stats = _FAIL.search(line)
        if stats:
            report.fail_counts.append(int(stats.group(3)))
            last_stats_total[stats.group(1)] = int(stats.group(2))
        if "!!!" in line:
            report.alarm_lines.append(line)
        if any(marker in line for marker in KERNEL_TROUBLE):
            report.trouble_lines.append(line)
        if line.startswith(SWITCH_MARKER + " "):
            name, _, value = line[len(SWITCH_MARKER) + 1 :].partition("=")
            report.switches[name] = value.split()[0] if value.split() else ""
    report.total_acquisitions = sum(last_stats_total.values())
    return report


def kernel_args(torture_type: str, duration: int, settings: TortureSettings, variant: SpinlockVariant | None, extra: str = "") -> str:
    """The command line of one run; a non-default spinlock variant is named."""
    args = [
        f"locktorture.torture_type={torture_type}",
        f"locktorture.nwriters_stress={settings.writers_per_cpu * settings.cpus}",
        f"locktorture.stat_interval={settings.stat_interval_seconds}",
        f"locktorture.shutdown_secs={duration}",
        "locktorture.verbose=1",
    ]
    if variant is not None and not variant.default:
        args.append(f"{SPINLOCK_PARAMETER}={variant.name}")
    if extra:
        args.append(extra)
    return " ".join(args)


@dataclass
class TortureRun:
    boot: qemu.BootResult
    report: TortureReport

    @property
    def passed(self) -> bool:
        return self.boot.powered_off and not self.boot.timed_out and self.report.passed

    def active_spinlock(self) -> str | None:
        """The variant the kernel says it runs (None: kernel without the switch)."""
        return self.report.switches.get(SPINLOCK_PARAMETER.removeprefix("lockstudy."))

    def describe(self) -> str:
        return f"boot: {self.boot.describe()}; locktorture: {self.report.describe()}"


def run(
    bzimage: Path,
    torture_type: str,
    work_dir: Path,
    settings: TortureSettings | None = None,
    variant: SpinlockVariant | None = None,
    duration: int | None = None,
    extra_args: str = "",
) -> TortureRun:
    """Boot the torture kernel once for one torture type and parse the console."""
    settings = settings or load_settings()
    duration = settings.duration_seconds if duration is None else duration
    initramfs = busybox_initramfs(IDLE_INIT, work_dir / "torture-initramfs.cpio.gz")
    label = f"{variant.name if variant else 'default'}-{torture_type}"
    result = qemu.boot(
        qemu.QemuBoot(
            kernel=bzimage,
            console_log=work_dir / f"console-{label}.log",
            cpus=settings.cpus,
            memory_mib=settings.memory_mib,
            kernel_args=kernel_args(torture_type, duration, settings, variant, extra_args),
            initrd=initramfs,
            timeout_seconds=duration + settings.timeout_margin_seconds,
        )
    )
    return TortureRun(result, parse_console(result.console))
