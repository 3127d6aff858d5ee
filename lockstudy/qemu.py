"""Boot a lockstudy kernel under QEMU and capture its serial console.

One call, `boot(QemuBoot(...))`, runs `qemu-system-x86_64 -M pc` with the
kernel (bzImage), either an ext2 disk on the PIIX IDE controller
(-> /dev/sda through ata_piix) or an initramfs, N vCPUs, memory, an
optional NUMA layout (QEMU builds an ACPI SRAT/SLIT from it) and a
timeout. The result says how the boot ended; a boot that ran into the
timeout is reported as timed out, never as a success. A crash of QEMU
itself (a signal nobody sent it; multi-threaded TCG with 32 vCPUs was seen
to die of SIGSEGV during PCI enumeration) boots again from scratch, a
bounded number of times, and the result counts those crashes.

Acceleration: LOCKSTUDY_QEMU_ACCEL=tcg|kvm|auto (default auto). auto uses
KVM only when a quick probe boot under KVM works on this host (the answer
is cached under cache_dir()); otherwise multi-threaded TCG.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from lockstudy.files import memoized, typed_field
from lockstudy.paths import DATA, cache_dir

SETTINGS_FILE = DATA / "qemu.toml"
ACCEL_ENV = "LOCKSTUDY_QEMU_ACCEL"
ACCEL_CHOICES = ("tcg", "kvm", "auto")
QEMU_BINARY = "qemu-system-x86_64"
KVM_DEVICE = Path("/dev/kvm")
KILL_GRACE_SECONDS = 5


class QemuError(RuntimeError):
    """QEMU cannot be run as asked (bad layout, missing binary or files)."""


@dataclass(frozen=True)
class QemuSettings:
    machine: str
    kernel_args: str
    numa_max_memory_mib: int
    power_off_marker: str
    panic_marker: str
    kvm_probe_timeout: float
    kvm_cpu: str
    tcg_accel: str
    host_crash_retries: int


def load_settings(path: Path = SETTINGS_FILE) -> QemuSettings:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)

    def setting(key: str, kind: type) -> Any:
        return typed_field(data, key, kind, str(path), error=QemuError)

    return QemuSettings(
        machine=setting("machine", str),
        kernel_args=setting("kernel_args", str),
        numa_max_memory_mib=setting("numa_max_memory_mib", int),
        power_off_marker=setting("power_off_marker", str),
        panic_marker=setting("panic_marker", str),
        kvm_probe_timeout=float(typed_field(data, "kvm.probe_timeout_seconds", (int, float), str(path), error=QemuError)),
        kvm_cpu=setting("kvm.cpu", str),
        tcg_accel=setting("tcg.accel", str),
        host_crash_retries=setting("host_crash_retries", int),
    )


@dataclass(frozen=True)
class NumaNode:
    cpus: tuple[int, ...]
    memory_mib: int


@dataclass(frozen=True)
class NumaLayout:
    """Nodes (CPU lists and memory sizes) and an optional distance matrix."""

    nodes: tuple[NumaNode, ...]
    distances: tuple[tuple[int, ...], ...] | None = None

    def validate(self, cpus: int, memory_mib: int, max_memory_mib: int) -> None:
        if not self.nodes:
            raise QemuError("NUMA layout: no nodes")
        placed = sorted(c for node in self.nodes for c in node.cpus)
        if placed != list(range(cpus)):
            raise QemuError(f"NUMA layout: the nodes' CPUs {placed} must be 0..{cpus - 1}, each exactly once")
        total = sum(node.memory_mib for node in self.nodes)
        if total != memory_mib:
            raise QemuError(f"NUMA layout: node memory adds up to {total} MiB, the machine has {memory_mib} MiB")
        if any(node.memory_mib <= 0 for node in self.nodes):
            raise QemuError("NUMA layout: every node needs memory")
        if memory_mib > max_memory_mib:
            raise QemuError(
                f"NUMA layout: {memory_mib} MiB is more than {max_memory_mib} MiB; above that QEMU's pc "
                f"machine splits RAM around the PCI hole and nodes stop being contiguous"
            )
        if self.distances is not None:
            n = len(self.nodes)
            if len(self.distances) != n or any(len(row) != n for row in self.distances):
                raise QemuError(f"NUMA layout: distances must be a {n}x{n} matrix")
            for i, row in enumerate(self.distances):
                for j, value in enumerate(row):
                    if i == j and value != 10:
                        raise QemuError(f"NUMA layout: distance[{i}][{i}] must be 10 (local), got {value}")
                    if i != j and value <= 10:
                        raise QemuError(f"NUMA layout: distance[{i}][{j}] must be more than 10, got {value}")

    def qemu_args(self) -> list[str]:
        args: list[str] = []
        for index, node in enumerate(self.nodes):
            memdev = f"ram-node{index}"
            args += ["-object", f"memory-backend-ram,id={memdev},size={node.memory_mib}M"]
            cpus = "".join(f",cpus={span}" for span in cpu_spans(node.cpus))
            args += ["-numa", f"node,nodeid={index}{cpus},memdev={memdev}"]
        if self.distances is not None:
            for i, row in enumerate(self.distances):
                for j, value in enumerate(row):
                    if i != j:
                        args += ["-numa", f"dist,src={i},dst={j},val={value}"]
        return args


def cpu_spans(cpus: Sequence[int]) -> list[str]:
    """[0, 1, 2, 5] -> ["0-2", "5"] (QEMU's cpus= syntax, one span each)."""
    spans: list[str] = []
    ordered = sorted(cpus)
    start = previous = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == previous + 1:
            previous = cpu
            continue
        spans.append(f"{start}-{previous}" if previous != start else f"{start}")
        if cpu is not None:
            start = previous = cpu
    return spans


@dataclass(frozen=True)
class QemuBoot:
    kernel: Path
    console_log: Path
    cpus: int = 1
    memory_mib: int = 512
    kernel_args: str = ""
    disk: Path | None = None
    initrd: Path | None = None
    numa: NumaLayout | None = None
    # CPU packages: the CPUs split evenly into this many sockets. A NUMA
    # layout that splits CPUs sharing a package (one LLC) makes the kernel
    # warn in topology_sane(); give one socket per node.
    sockets: int = 1
    timeout_seconds: float = 60.0
    extra_args: tuple[str, ...] = ()


def killed_by_signal(exit_status: int | None, timed_out: bool) -> bool:
    """QEMU died of a signal that our timeout did not send (subprocess gives -signal as the status)."""
    return not timed_out and exit_status is not None and exit_status < 0


@dataclass
class BootResult:
    console: str
    exit_status: int | None
    timed_out: bool
    wall_seconds: float
    accel: str
    command: list[str] = field(default_factory=list)
    console_log: Path | None = None
    powered_off: bool = False
    panicked: bool = False
    # QEMU crashes (host side) before this attempt, plus this one if it crashed too.
    host_crashes: int = 0

    @property
    def qemu_crashed(self) -> bool:
        """The last attempt ended with QEMU itself killed by a signal (not our timeout's)."""
        return killed_by_signal(self.exit_status, self.timed_out)

    @property
    def ok(self) -> bool:
        """The guest powered off by itself: no timeout, no panic, QEMU exited 0."""
        return not self.timed_out and self.exit_status == 0 and self.powered_off and not self.panicked

    def describe(self) -> str:
        if self.timed_out:
            how = f"TIMED OUT after {self.wall_seconds:.0f} s"
        elif self.panicked:
            how = "kernel PANIC"
        elif self.qemu_crashed:
            how = f"QEMU itself crashed (signal {-self.exit_status}) on each of {self.host_crashes} attempt(s)"
        elif self.exit_status != 0:
            how = f"QEMU exited with {self.exit_status}"
        elif not self.powered_off:
            how = "ended without a clean power-off"
        else:
            how = "powered off cleanly"
        log = f", console: {self.console_log}" if self.console_log else ""
        crashes = f", booted again after {self.host_crashes} QEMU crash(es)" if self.host_crashes and not self.qemu_crashed else ""
        return f"{how} ({self.accel}, {self.wall_seconds:.1f} s{crashes}{log})"


def kvm_usable_on_paper() -> bool:
    return KVM_DEVICE.exists() and os.access(KVM_DEVICE, os.R_OK | os.W_OK)


def qemu_version(binary: str) -> str:
    result = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return result.stdout.splitlines()[0].strip() if result.stdout else "unknown"


def probe_kvm(kernel: Path, settings: QemuSettings, binary: str) -> bool:
    """Does a KVM guest get as far as the kernel's own panic (no root) quickly?"""
    argv = [
        binary, "-M", settings.machine, "-accel", "kvm", "-cpu", settings.kvm_cpu, "-m", "256",
        "-nographic", "-no-reboot", "-kernel", str(kernel), "-append", settings.kernel_args,
    ]  # fmt: skip
    try:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=settings.kvm_probe_timeout)
    except subprocess.TimeoutExpired:
        return False
    return settings.panic_marker in result.stdout


def choose_accel(kernel: Path, settings: QemuSettings, binary: str, environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    wanted = environ.get(ACCEL_ENV, "auto").strip().lower() or "auto"
    if wanted not in ACCEL_CHOICES:
        raise QemuError(f"{ACCEL_ENV}={wanted!r}: expected one of {', '.join(ACCEL_CHOICES)}")
    if wanted != "auto":
        return wanted
    if not kvm_usable_on_paper():
        return "tcg"
    identity = f"{platform.release()}|{qemu_version(binary)}"
    works = memoized(cache_dir() / "qemu-kvm-probe.json", identity, lambda: probe_kvm(kernel, settings, binary))
    return "kvm" if works else "tcg"


def accel_args(accel: str, settings: QemuSettings) -> list[str]:
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", settings.kvm_cpu]
    return ["-accel", settings.tcg_accel]


def smp_topology(cpus: int, sockets: int) -> str:
    if sockets == 1:
        return str(cpus)
    return f"{cpus},sockets={sockets},cores={cpus // sockets},threads=1"


def qemu_command(spec: QemuBoot, accel: str, settings: QemuSettings, binary: str = QEMU_BINARY) -> list[str]:
    if spec.disk is not None and spec.initrd is not None:
        raise QemuError("give either a disk or an initramfs, not both")
    for what, path in (("kernel", spec.kernel), ("disk", spec.disk), ("initramfs", spec.initrd)):
        if path is not None and not Path(path).is_file():
            raise QemuError(f"{what} {path} not found")
    if spec.cpus < 1:
        raise QemuError(f"cpus must be at least 1, got {spec.cpus}")
    if spec.sockets < 1 or spec.cpus % spec.sockets:
        raise QemuError(f"sockets must divide cpus evenly, got {spec.cpus} CPUs in {spec.sockets} sockets")
    if spec.numa is not None:
        spec.numa.validate(spec.cpus, spec.memory_mib, settings.numa_max_memory_mib)
    argv = [
        binary, "-M", settings.machine, *accel_args(accel, settings),
        "-smp", smp_topology(spec.cpus, spec.sockets), "-m", f"{spec.memory_mib}M",
        "-nographic", "-no-reboot",
        "-kernel", str(spec.kernel),
        "-append", " ".join(a for a in (settings.kernel_args, spec.kernel_args) if a),
    ]  # fmt: skip
    if spec.disk is not None:
        argv += ["-drive", f"file={spec.disk},format=raw,if=ide,snapshot=on"]
    if spec.initrd is not None:
        argv += ["-initrd", str(spec.initrd)]
    if spec.numa is not None:
        argv += spec.numa.qemu_args()
    return [*argv, *spec.extra_args]


@dataclass(frozen=True)
class _Attempt:
    console: str
    exit_status: int | None
    timed_out: bool
    wall_seconds: float

    @property
    def host_crashed(self) -> bool:
        """QEMU itself died of a signal nobody sent it: the emulator crashed, not the guest."""
        return killed_by_signal(self.exit_status, self.timed_out)


def _boot_once(spec: QemuBoot, argv: list[str], append: bool) -> _Attempt:
    """One QEMU process; its console goes to the log (after earlier attempts when append)."""
    started = time.monotonic()
    timed_out = False
    with open(spec.console_log, "ab" if append else "wb") as console:
        attempt_start = console.tell()
        console.write(f"# {shlex.join(argv)}\n".encode())
        console.flush()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT)
        try:
            exit_status: int | None = process.wait(timeout=spec.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            process.terminate()
            try:
                process.wait(timeout=KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            exit_status = None
    wall = time.monotonic() - started
    with open(spec.console_log, "rb") as console_read:
        console_read.seek(attempt_start)
        text = console_read.read().decode(errors="replace")
    if timed_out:
        with open(spec.console_log, "a") as console_append:
            console_append.write(f"\n# lockstudy: QEMU killed after the {spec.timeout_seconds:.0f} s timeout\n")
    return _Attempt(console=text, exit_status=exit_status, timed_out=timed_out, wall_seconds=wall)


def boot(spec: QemuBoot, environ: Mapping[str, str] | None = None) -> BootResult:
    """Boot, wait for QEMU to exit or the timeout, and say how it ended.

    When QEMU itself crashes (killed by a signal such as SIGSEGV that nobody
    sent it), the guest's run says nothing, so the whole boot is started
    again, up to the settings' host_crash_retries times, each attempt with
    the full timeout. The console log keeps every attempt; the result is the
    last attempt's and counts the crashes before it.
    """
    binary = shutil.which(QEMU_BINARY)
    if binary is None:
        raise QemuError(f"{QEMU_BINARY} not found: run ./run.sh setup (Debian package qemu-system-x86)")
    settings = load_settings()
    accel = choose_accel(spec.kernel, settings, binary, environ)
    argv = qemu_command(spec, accel, settings, binary)
    spec.console_log.parent.mkdir(parents=True, exist_ok=True)
    attempts = 1 + settings.host_crash_retries
    host_crashes = 0
    wall = 0.0
    for attempt in range(1, attempts + 1):
        outcome = _boot_once(spec, argv, append=attempt > 1)
        wall += outcome.wall_seconds
        if not outcome.host_crashed or attempt == attempts:
            break
        host_crashes += 1
        with open(spec.console_log, "a") as console_append:
            console_append.write(
                f"\n# lockstudy: QEMU itself crashed (signal {-outcome.exit_status}, exit {outcome.exit_status}) "
                f"after {outcome.wall_seconds:.1f} s: a host-side emulator crash, not the guest's; "
                f"booting again from scratch (attempt {attempt + 1} of {attempts})\n"
            )
    if outcome.host_crashed:
        host_crashes += 1
    return BootResult(
        console=outcome.console,
        exit_status=outcome.exit_status,
        timed_out=outcome.timed_out,
        wall_seconds=wall,
        accel=accel,
        command=argv,
        console_log=spec.console_log,
        powered_off=settings.power_off_marker in outcome.console,
        panicked=settings.panic_marker in outcome.console,
        host_crashes=host_crashes,
    )
