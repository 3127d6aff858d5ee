"""How lockstudy.qemu turns a boot request into a QEMU command (no boot)."""

from __future__ import annotations

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
