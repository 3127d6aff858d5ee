"""How lockstudy.qemu turns a boot request into a QEMU command (no boot)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lockstudy import qemu


@pytest.fixture()
def kernel(tmp_path: Path) -> Path:
    path = tmp_path / "bzImage"
    path.write_bytes(b"\0")
    return path


def two_nodes() -> qemu.NumaLayout:
    return qemu.NumaLayout(
        nodes=(qemu.NumaNode(cpus=(0, 1), memory_mib=256), qemu.NumaNode(cpus=(2, 3), memory_mib=256)),
        distances=((10, 20), (20, 10)),
    )


def test_numa_layout_becomes_memdev_nodes_and_distances(kernel: Path, tmp_path: Path) -> None:
    spec = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", cpus=4, memory_mib=512, numa=two_nodes())
    argv = qemu.qemu_command(spec, "tcg", qemu.load_settings())
    joined = " ".join(argv)
    assert "-object memory-backend-ram,id=ram-node0,size=256M" in joined
    assert "-numa node,nodeid=0,cpus=0-1,memdev=ram-node0" in joined
    assert "-numa node,nodeid=1,cpus=2-3,memdev=ram-node1" in joined
    assert "-numa dist,src=0,dst=1,val=20" in joined and "-numa dist,src=1,dst=0,val=20" in joined
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert "-no-reboot" in argv and "-nographic" in argv


def test_cpu_spans() -> None:
    assert qemu.cpu_spans([0, 2, 3, 4, 7]) == ["0", "2-4", "7"]


@pytest.mark.parametrize(
    ("layout", "cpus", "memory", "message"),
    [
        (qemu.NumaLayout((qemu.NumaNode((0, 1), 256), qemu.NumaNode((1, 2), 256))), 3, 512, "each exactly once"),
        (qemu.NumaLayout((qemu.NumaNode((0,), 256), qemu.NumaNode((1,), 128))), 2, 512, "adds up to 384"),
        (qemu.NumaLayout((qemu.NumaNode((0,), 2048), qemu.NumaNode((1,), 2048))), 2, 4096, "PCI hole"),
        (qemu.NumaLayout((qemu.NumaNode((0,), 256), qemu.NumaNode((1,), 256)), ((10, 10), (20, 10))), 2, 512, "more than 10"),
    ],
)
def test_bad_numa_layouts_are_refused(kernel: Path, tmp_path: Path, layout: qemu.NumaLayout, cpus: int, memory: int, message: str) -> None:
    spec = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", cpus=cpus, memory_mib=memory, numa=layout)
    with pytest.raises(qemu.QemuError, match=message):
        qemu.qemu_command(spec, "tcg", qemu.load_settings())


def test_disk_and_initramfs_together_are_refused(kernel: Path, tmp_path: Path) -> None:
    spec = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", disk=kernel, initrd=kernel)
    with pytest.raises(qemu.QemuError, match="either a disk or an initramfs"):
        qemu.qemu_command(spec, "tcg", qemu.load_settings())


def test_disk_is_ide_snapshot(kernel: Path, tmp_path: Path) -> None:
    spec = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", disk=kernel)
    argv = qemu.qemu_command(spec, "tcg", qemu.load_settings())
    assert f"file={kernel},format=raw,if=ide,snapshot=on" in argv


def test_accel_override(kernel: Path) -> None:
    settings = qemu.load_settings()
    assert qemu.choose_accel(kernel, settings, "qemu-system-x86_64", {qemu.ACCEL_ENV: "tcg"}) == "tcg"
    assert qemu.choose_accel(kernel, settings, "qemu-system-x86_64", {qemu.ACCEL_ENV: "kvm"}) == "kvm"
    with pytest.raises(qemu.QemuError, match="expected one of"):
        qemu.choose_accel(kernel, settings, "qemu-system-x86_64", {qemu.ACCEL_ENV: "fast"})


def test_boot_result_is_only_ok_after_a_clean_power_off() -> None:
    clean = qemu.BootResult("...reboot: Power down", 0, False, 1.0, "tcg", powered_off=True)
    assert clean.ok
    assert not qemu.BootResult("", None, True, 9.0, "tcg", powered_off=True).ok
    assert not qemu.BootResult("", 0, False, 1.0, "tcg", powered_off=False).ok
    assert not qemu.BootResult("", 0, False, 1.0, "tcg", powered_off=True, panicked=True).ok


def test_sockets_split_the_cpus_evenly(kernel: Path, tmp_path: Path) -> None:
    spec = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", cpus=4, sockets=2)
    argv = qemu.qemu_command(spec, "tcg", qemu.load_settings())
    assert argv[argv.index("-smp") + 1] == "4,sockets=2,cores=2,threads=1"
    uneven = qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log", cpus=4, sockets=3)
    with pytest.raises(qemu.QemuError, match="4 CPUs in 3 sockets"):
        qemu.qemu_command(uneven, "tcg", qemu.load_settings())


def fake_qemu(bin_dir: Path, crashes: int) -> Path:
    """A qemu-system-x86_64 that dies of SIGSEGV on its first `crashes` runs, then powers the guest off."""
    bin_dir.mkdir()
    runs = bin_dir / "runs"
    script = bin_dir / qemu.QEMU_BINARY
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{runs}" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "{runs}"\n'
        'echo "fake boot $n"\n'
        f'if [ "$n" -le {crashes} ]; then kill -SEGV $$; fi\n'
        f'echo "{qemu.load_settings().power_off_marker}"\n'
    )
    script.chmod(0o755)
    return runs


@pytest.mark.parametrize(("crashes", "ok", "runs", "message"), [
    (1, True, 2, "booted again after 1 QEMU crash(es)"),
    (99, False, 3, "QEMU itself crashed (signal 11) on each of 3 attempt(s)"),
])  # fmt: skip
def test_a_crash_of_qemu_itself_boots_again_and_is_counted(
    kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crashes: int, ok: bool, runs: int, message: str
) -> None:
    assert qemu.load_settings().host_crash_retries == 2
    counter = fake_qemu(tmp_path / "bin", crashes)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    log = tmp_path / "console.log"
    result = qemu.boot(qemu.QemuBoot(kernel=kernel, console_log=log), environ={qemu.ACCEL_ENV: "tcg"})
    assert int(counter.read_text()) == runs
    assert result.ok is ok
    assert result.host_crashes == min(crashes, runs)
    assert message in result.describe()
    assert f"fake boot {runs}" in result.console and "fake boot 1" not in result.console
    kept = log.read_text()
    assert all(f"fake boot {n}" in kept for n in range(1, runs + 1))
    assert kept.count("QEMU itself crashed") == min(crashes, runs - 1)


def test_a_guest_that_fails_is_not_booted_again(kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / qemu.QEMU_BINARY
    script.write_text(f'#!/bin/sh\necho x >> "{bin_dir / "runs"}"\necho "{qemu.load_settings().panic_marker}"\nexit 0\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    result = qemu.boot(qemu.QemuBoot(kernel=kernel, console_log=tmp_path / "c.log"), environ={qemu.ACCEL_ENV: "tcg"})
    assert not result.ok and result.panicked and result.host_crashes == 0
    assert (bin_dir / "runs").read_text() == "x\n"
