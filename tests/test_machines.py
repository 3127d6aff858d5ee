"""Machine files and the run script's plan, checked without gem5."""

from __future__ import annotations

import re
import json
import sys
from pathlib import Path

import pytest

GEM5_CONFIGS = Path(__file__).resolve().parent.parent / "gem5-configs"
sys.path.insert(0, str(GEM5_CONFIGS))

import machine  # noqa: E402
import run_plan  # noqa: E402

from lockstudy import guest_output  # noqa: E402

PIII = GEM5_CONFIGS / "machines" / "piii-smp.toml"
ALTIX = GEM5_CONFIGS / "machines" / "altix-numa.toml"
INTERLEAVED = GEM5_CONFIGS / "machines" / "altix-numa-interleaved.toml"


@pytest.mark.parametrize("path", machine.machine_files(), ids=lambda p: p.stem)
def test_every_machine_file_loads_at_every_size(path: Path) -> None:
    loaded = machine.load_machine(path)
    for count in loaded.counts:
        for line in loaded.data["cache_line"]["allowed"]:
            instance = loaded.instance(count, line)
            ranges = instance.node_memory_ranges()
            assert ranges[0][0] == 0 and ranges[-1][1] == instance.memory_bytes
            assert len(instance.cpu_to_node()) == instance.num_cpus
            assert instance.numa_boot_parameter().startswith(f"lockstudy.numa={instance.num_nodes}:")


def test_the_issue_machines_exist() -> None:
    names = {path.stem for path in machine.machine_files()}
    assert {"piii-smp", "altix-numa"} <= names


def test_piii_smp_parameters() -> None:
    piii = machine.load_machine(PIII)
    assert piii.counts == [1, 2, 4, 8]
    eight = piii.instance(8)
    assert eight.clock_hz == 700_000_000
    assert eight.line_bytes == 32 and piii.instance(8, 64).line_bytes == 64
    assert eight.data["fsb"]["snoop_filter"] is False
    assert eight.data["fsb"]["width_bytes"] * eight.data["fsb"]["clock"] == 800_000_000
    assert eight.cpu_to_node() == [0] * 8


def test_altix_node_ranges_are_equal_and_contiguous() -> None:
    altix = machine.load_machine(ALTIX)
    four = altix.instance(4)
    quarter = (2 << 30) // 4
    assert four.node_memory_ranges() == [(i * quarter, (i + 1) * quarter) for i in range(4)]


def test_altix_cpu_to_node_map() -> None:
    altix = machine.load_machine(ALTIX)
    assert altix.instance(1).cpu_to_node() == [0, 0]
    assert altix.instance(4).cpu_to_node() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert altix.instance(8).node_cpus(5) == [10, 11]


def test_numa_string_contract() -> None:
    """The compact form of the kernel's lockstudy.numa= (kernel/patches/numa-cmdline-*.patch)."""
    altix = machine.load_machine(ALTIX)
    assert altix.instance(1).numa_boot_parameter() == "lockstudy.numa=1:*2:tree10"
    assert altix.instance(2).numa_boot_parameter() == "lockstudy.numa=2:*2:tree10,2"
    assert altix.instance(4).numa_boot_parameter() == "lockstudy.numa=4:*2:tree10,2,4"
    assert altix.instance(16).numa_boot_parameter() == "lockstudy.numa=16:*2:tree10,2,4,2"
    assert altix.instance(2).explicit_numa_value() == "2:0-1/2-3:10,20,20,10"
    four = altix.instance(4).explicit_numa_value()
    assert four == "4:0-1/2-3/4-5/6-7:" + ",".join(
        map(str, [10, 20, 40, 40, 20, 10, 40, 40, 40, 40, 10, 20, 40, 40, 20, 10])
    )
    # The explicit form at 16 nodes is what gem5's 511-byte command line could not hold.
    assert len(altix.instance(16).explicit_numa_value()) > 800


def test_distances_follow_router_hops_and_are_symmetric() -> None:
    sixteen = machine.load_machine(ALTIX).instance(16)
    assert sixteen.router_hops(0, 0) == 0
    assert sixteen.router_hops(0, 1) == 1  # same pair router
    assert sixteen.router_hops(0, 2) == 3  # same second-level router
    assert sixteen.router_hops(0, 15) == 5  # across the top (anchors: at most 5 hops)
    distances = sixteen.distances()
    assert all(distances[a][b] == distances[b][a] for a in range(16) for b in range(16))
    assert all(distances[a][a] == 10 for a in range(16))


def test_router_latency_in_ruby_cycles() -> None:
    # The node-local model takes half of NUMAlink's 50 ns round trip per
    # router each way; the first model charged 50 ns each way.
    four = machine.load_machine(ALTIX).instance(4)
    assert four.cycles(four.data["network"]["router_latency"]) == 25  # 1 GHz
    old = machine.load_machine(INTERLEAVED).instance(4)
    assert old.cycles(old.data["network"]["router_latency"]) == 50


def test_each_numa_model_names_the_protocol_its_gem5_needs() -> None:
    assert machine.load_machine(ALTIX).ruby_protocol == "CHI"
    assert machine.load_machine(INTERLEAVED).ruby_protocol == "MESI_Two_Level"
    assert machine.load_machine(PIII).ruby_protocol is None
    assert machine.load_machine(ALTIX).is_numa and machine.load_machine(INTERLEAVED).is_numa
    # Same node layout, so the kernel sees the same NUMA machine on both.
    for nodes in (1, 2, 4, 8, 16):
        new, old = machine.load_machine(ALTIX).instance(nodes), machine.load_machine(INTERLEAVED).instance(nodes)
        assert new.numa_boot_parameter() == old.numa_boot_parameter()
        assert new.node_memory_ranges() == old.node_memory_ranges()


def test_cpu_list_format() -> None:
    assert machine.format_cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert machine.format_cpu_list([3]) == "3"


def test_units() -> None:
    assert machine.parse_size("16KiB") == 16384
    assert machine.parse_frequency("1.5GHz") == 1_500_000_000
    assert machine.parse_time_ps("50ns") == 50_000
    assert machine.cycles_at(50_000, 700_000_000) == 35
    with pytest.raises(ValueError):
        machine.parse_size("16KB")


# --- rejection messages: file, field, reason ---------------------------------


def write_variant(tmp_path: Path, source: Path, old: str, new: str, name: str | None = None) -> Path:
    text = source.read_text()
    assert old in text, old
    text = text.replace(old, new, 1)
    stem = name or source.stem
    if name:
        text = text.replace(f'name = "{source.stem}"', f'name = "{name}"', 1)
    path = tmp_path / f"{stem}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("source", "old", "new", "field", "reason"),
    [
        (PIII, 'clock = "700MHz"', 'clock = "700 furlongs"', "machine.clock", "not a frequency"),
        (PIII, "assoc = 4 ", "assoc = 0 ", "l1i.assoc", "positive integer"),
        (PIII, "bytes = 32", "bytes = 48", "cache_line.bytes", "power of two"),
        (PIII, "bytes = 32", "bytes = 128", "cache_line.bytes", "not in cache_line.allowed"),
        (PIII, "snoop_filter = false", "snoop_filter = 0", "fsb.snoop_filter", "true or false"),
        (PIII, "snoop_filter = false", "snoop_filter = false\ncolour = 1", "fsb.colour", "unknown field"),
        (PIII, 'size = "1GiB"', 'size = "4GiB"', "memory.size", "3 GiB"),
        (PIII, 'bandwidth = "800MB/s"', 'bandwidth = "fast"', "memory.bandwidth", "bandwidth"),
        (PIII, "counts = [1, 2, 4, 8]", "counts = [8, 4]", "cpus.counts", "increasing order"),
        (ALTIX, "counts = [1, 2, 4, 8, 16]", "counts = [1, 2, 3]", "nodes.counts", "power of two"),
        (ALTIX, "counts = [1, 2, 4, 8, 16]", "counts = [1, 32]", "network.tree_fanout", "at most 16 nodes"),
        (INTERLEAVED, 'interleave = "line"', 'interleave = "node"', "l2_bank.interleave", "must be one of"),
        (ALTIX, "local_distance = 10", "local_distance = 12", "numa.local_distance", "must be 10"),
        (INTERLEAVED, 'router_latency = "50ns"', "", "network.router_latency", "missing field"),
        (INTERLEAVED, 'size = "2MiB"', 'size = "3MiB"', "l2_bank.size", "power-of-two number of sets"),
        (ALTIX, 'cpu_port_latency = "1ns"', "", "network.cpu_port_latency", "missing field"),
        (ALTIX, 'size = "2MiB"', 'size = "3MiB"', "l2.size", "power-of-two number of sets"),
        (ALTIX, "home_tag_latency = 10", "home_tag_latency = 0", "protocol.home_tag_latency", "positive integer"),
        (ALTIX, 'kind = "chi-numa"', 'kind = "chi"', "machine.kind", "must be one of"),
        (PIII, 'kernel_args = ["tsc=reliable"]', 'kernel_args = ["tsc=reliable lockstudy.run=x"]', "board.kernel_args", "is not one kernel argument"),
        (PIII, 'kernel_args = ["tsc=reliable"]', 'kernel_args = ["lockstudy.spinlock=tas"]', "board.kernel_args", "come from run.py and the campaign"),
    ],
)
def test_bad_files_are_rejected_with_file_field_and_reason(tmp_path, source, old, new, field, reason) -> None:
    path = write_variant(tmp_path, source, old, new)
    with pytest.raises(machine.MachineError) as caught:
        machine.load_machine(path)
    message = str(caught.value)
    assert str(path) in message and f": {field}: " in message and reason in message, message


def test_missing_table_and_bad_kind(tmp_path: Path) -> None:
    text = PIII.read_text()
    start = text.index("[fsb]")
    end = text.index("[memory]")
    missing = tmp_path / "piii-smp.toml"
    missing.write_text(text[:start] + text[end:])
    with pytest.raises(machine.MachineError, match=r"fsb: missing table"):
        machine.load_machine(missing)
    bad_kind = write_variant(tmp_path, PIII, 'kind = "classic-smp"', 'kind = "cray"')
    with pytest.raises(machine.MachineError, match=r"machine.kind: must be one of"):
        machine.load_machine(bad_kind)


def test_name_must_match_file(tmp_path: Path) -> None:
    path = tmp_path / "other.toml"
    path.write_text(PIII.read_text())
    with pytest.raises(machine.MachineError, match=r"machine.name: 'piii-smp' must match the file name 'other'"):
        machine.load_machine(path)


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[machine\n")
    with pytest.raises(machine.MachineError, match=r"broken.toml: not valid TOML"):
        machine.load_machine(path)


def test_sizes_outside_the_family_are_rejected() -> None:
    with pytest.raises(machine.MachineError, match=r"--cpus 1, 2, 4, 8, not 3"):
        machine.load_machine(PIII).instance(3)
    with pytest.raises(machine.MachineError, match=r"allows line sizes \[64, 128\], not 32"):
        machine.load_machine(ALTIX).instance(2, 32)


def test_a_new_machine_needs_no_code(tmp_path: Path) -> None:
    path = write_variant(tmp_path, ALTIX, "cpus_per_node = 2", "cpus_per_node = 4", name="altix-quad")
    quad = machine.load_machine(path).instance(2)
    assert quad.numa_boot_parameter() == "lockstudy.numa=2:*4:tree10,2"
    assert quad.explicit_numa_value() == "2:0-3/4-7:10,20,20,10"


# --- the run plan -----------------------------------------------------------


@pytest.fixture()
def artifacts(tmp_path: Path) -> tuple[Path, Path]:
    kernel = tmp_path / "vmlinux"
    image = tmp_path / "rootfs.ext2"
    kernel.write_bytes(b"\x7fELF")
    image.write_bytes(b"\0" * 1024)
    return kernel, image


def plan_for(artifacts, *extra: str, outdir: Path | None = None) -> run_plan.RunPlan:
    kernel, image = artifacts
    argv = ["--kernel", str(kernel), "--image", str(image), "--outdir", str(outdir or kernel.parent / "out"), *extra]
    return run_plan.make_plan(run_plan.build_parser().parse_args(argv))


# gem5 v24's X86Board default kernel arguments (src/python/gem5/components/
# boards/x86_board.py get_default_kernel_args, with {root_value} filled and
# disk_device= dropped by our board), as gem5 printed them in a run's line.
X86_BOARD_DEFAULT_ARGS = ["earlyprintk=ttyS0", "console=ttyS0", "lpj=7999923", "root=/dev/sda"]
# The longest run and boot arguments of the study (a pft run with every switch).
LONG_RUN = "pft:threads=32,mb=1024,iterations=10"
LONG_BOOT = "lockstudy.spinlock=hbo lockstudy.lockref=spinlock lockstudy.rwsem_wakeflag=off lockstudy.fdlock=spinlock"
# "Well under" gem5's 511 bytes: room left for a user's own boot arguments.
WELL_UNDER_BYTES = 400


@pytest.mark.parametrize("model", ["altix-numa", "altix-numa-interleaved"])
def test_every_numa_size_fits_gem5s_command_line_only_in_the_compact_form(artifacts, model: str) -> None:
    """issue 19: the explicit lockstudy.numa= form did not fit at 16 nodes; the compact one fits every size."""
    for nodes in machine.load_machine(GEM5_CONFIGS / "machines" / f"{model}.toml").counts:
        plan = plan_for(artifacts, "--machine", model, "--nodes", str(nodes), "--boot", LONG_BOOT, "--run", LONG_RUN)
        line = " ".join(plan.kernel_args(X86_BOARD_DEFAULT_ARGS))
        assert len(line) <= WELL_UNDER_BYTES, f"{model} at {nodes} nodes: {len(line)} bytes"
        plan.check_command_line(line)
        explicit = line.replace(plan.instance.numa_boot_parameter(), "lockstudy.numa=" + plan.instance.explicit_numa_value())
        if nodes >= 16:  # what the compact form is for; fewer nodes fit explicitly, or nearly
            assert len(explicit) > run_plan.X86_LINUX_COMMAND_LINE_MAX, f"{model} at {nodes} nodes"


def test_a_command_line_gem5_cannot_hold_is_refused_with_its_size(artifacts) -> None:
    """The explicit 16x16 distance matrix passes gem5 v24's 511-byte x86 command line: refused, named."""
    sixteen = plan_for(artifacts, "--machine", "altix-numa", "--nodes", "16", "--boot", "lockstudy.spinlock=hbo")
    compact = sixteen.instance.numa_boot_parameter()
    line = " ".join(sixteen.kernel_args(X86_BOARD_DEFAULT_ARGS)).replace(compact, "lockstudy.numa=" + sixteen.instance.explicit_numa_value())
    assert len(line) > run_plan.X86_LINUX_COMMAND_LINE_MAX == 511
    with pytest.raises(run_plan.PlanError, match=rf"altix-numa at 16 nodes: the kernel command line is {len(line)} bytes; .* holds 511 .*lockstudy\.numa=16"):
        sixteen.check_command_line(line)


def test_a_restored_run_may_have_a_spec_longer_than_a_boot_could_pass(artifacts, tmp_path) -> None:
    """gem5 writes the command line in the loader's initState(), which a restore skips: the guest reads
    the spec by `m5 readfile`. A spec of many items is refused for a boot and taken for a restore."""
    many = "+".join([LONG_RUN] * 16)
    booting = plan_for(artifacts, "--machine", "altix-numa", "--nodes", "4", "--run", many)
    line = " ".join(booting.kernel_args(X86_BOARD_DEFAULT_ARGS))
    assert len(line) > run_plan.X86_LINUX_COMMAND_LINE_MAX
    with pytest.raises(run_plan.PlanError, match=r"altix-numa at 4 nodes: the kernel command line is \d+ bytes"):
        booting.check_command_line(line)
    run_plan.write_json_atomically(tmp_path / run_plan.CHECKPOINT_META, booting.checkpoint_meta("k" * 64, "i" * 64))
    restoring = plan_for(artifacts, "--machine", "altix-numa", "--nodes", "4", "--run", many, "--checkpoint-in", str(tmp_path))
    restoring.check_command_line(" ".join(restoring.kernel_args(X86_BOARD_DEFAULT_ARGS)))
    assert restoring.readfile().startswith(many + "\n")


def test_kernel_command_line_for_numa(artifacts) -> None:
    plan = plan_for(artifacts, "--machine", "altix-numa", "--nodes", "2", "--boot", "lockstudy.spinlock=hbo", "--run", "kbench:duration_ms=10")
    line = plan.kernel_args(["console=ttyS0", "root={root_value}"])
    assert line[:2] == ["console=ttyS0", "root={root_value}"]
    assert "lockstudy.numa=2:*2:tree10,2" in line
    assert "lockstudy.spinlock=hbo" in line and "lockstudy.run=kbench:duration_ms=10" in line
    assert "lockstudy.m5ops=inst" in line and "init=/init" in line
    assert "lockstudy.checkpoint=1" not in line
    # the machine file's own arguments (its [board] kernel_args), before run.py's switches
    assert line.index("tsc=reliable") < line.index("lockstudy.spinlock=hbo")


def test_kernel_command_line_for_smp_checkpoint_and_kvm(artifacts, tmp_path) -> None:
    plan = plan_for(
        artifacts, "--machine", "piii-smp", "--cpus", "2", "--fast-forward", "kvm", "--checkpoint-out", str(tmp_path / "ck")
    )
    line = plan.kernel_args([])
    assert not any(arg.startswith("lockstudy.numa=") for arg in line)
    assert "lockstudy.m5ops=addr" in line and "lockstudy.checkpoint=1" in line


def test_only_a_traced_run_asks_the_guest_for_its_memory_map(artifacts, tmp_path) -> None:
    untraced = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--run", "kbench:duration_ms=10")
    assert untraced.readfile() == "kbench:duration_ms=10\n"
    assert "lockstudy.memory_map=1" not in untraced.kernel_args([])
    traced = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--run", "kbench:duration_ms=10", "--trace", "classic")
    assert traced.readfile() == "kbench:duration_ms=10\nmemory_map=1\n"  # a restored guest reads its options there
    assert "lockstudy.memory_map=1" in traced.kernel_args([])  # a guest booted for this run reads them here
    # a boot checkpoint is shared by untraced runs: never on its command line
    boot = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--trace", "classic", "--checkpoint-out", str(tmp_path / "ck"))
    assert "lockstudy.memory_map=1" not in boot.kernel_args([]) and boot.readfile() is None


@pytest.mark.parametrize(("model", "size", "apic_hz", "lpj"), [("piii-smp", "--cpus", 43_750_000, 2_800_000), ("altix-numa", "--nodes", 62_500_000, 4_000_000)])
def test_the_guest_is_told_its_apic_timer_and_delay_loop(artifacts, model: str, size: str, apic_hz: int, lpj: int) -> None:
    """700 MHz and 1 GHz over gem5's local APIC divider of 16: what the kernel measures in 216 ms without
    it (174957 per 4 ms jiffy on piii-smp, against 175000 here); and the clock over the kernel's HZ (its
    config beside it) in place of gem5's lpj=7999923, a 2 GHz loop."""
    kernel, _ = artifacts
    (kernel.parent / "config").write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    line = plan_for(artifacts, "--machine", model, size, "1").kernel_args(X86_BOARD_DEFAULT_ARGS)
    assert f"lapic_timer_hz={apic_hz}" in line
    assert line[:4] == ["earlyprintk=ttyS0", "console=ttyS0", f"lpj={lpj}", "root=/dev/sda"]


def test_a_kernel_without_its_config_keeps_gem5s_delay_loop_and_a_config_without_hz_is_refused(artifacts) -> None:
    kernel, _ = artifacts
    assert "lpj=7999923" in plan_for(artifacts, "--machine", "piii-smp", "--cpus", "1").kernel_args(X86_BOARD_DEFAULT_ARGS)
    (kernel.parent / "config").write_text("CONFIG_HZ_PERIODIC=y\n")
    with pytest.raises(run_plan.PlanError, match=r"config: no CONFIG_HZ line"):
        plan_for(artifacts, "--machine", "piii-smp", "--cpus", "1").kernel_args(X86_BOARD_DEFAULT_ARGS)


def test_a_traced_run_may_go_without_the_memory_map(artifacts) -> None:
    """The guest's walk of every page frame after each testcase (about 100 simulated ms on altix-numa at 4 nodes)
    is for naming heap lines; a trace read by address only can do without it."""
    plan = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--run", "kbench:duration_ms=10", "--trace", "classic", "--no-memory-map")
    assert not plan.memory_map
    assert plan.readfile() == "kbench:duration_ms=10\n" and "lockstudy.memory_map=1" not in plan.kernel_args([])


def test_braces_are_escaped_for_the_stdlib_format(artifacts) -> None:
    plan = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "1", "--run", "x:{a}")
    assert "lockstudy.run=x:{{a}}" in plan.kernel_args([])
    assert " ".join(plan.kernel_args(["root={root_value}"])).format(root_value="/dev/sda").endswith("lockstudy.run=x:{a}")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--machine", "piii-smp", "--nodes", "2"], "--nodes: piii-smp is sized with --cpus"),
        (["--machine", "altix-numa", "--cpus", "4"], "--cpus: altix-numa is sized with --nodes"),
        (["--machine", "piii-smp", "--cpus", "6"], "--cpus: 6: piii-smp has no size of 6 cpus (cpus: 1, 2, 4, 8)"),
        (["--machine", "piii-smp", "--cpus", "2", "--boot", "spinlock=ticket"], "--boot: spinlock=ticket: 'spinlock=ticket' is not a kernel switch of the study (lockstudy.<switch>=<value>, or one of noreplace-smp)"),
        (["--machine", "piii-smp", "--cpus", "2", "--boot", "lockstudy.numa=1:0:10"], "--boot: lockstudy.numa=1:0:10: lockstudy.numa= is written by the launch itself"),
        (["--machine", "piii-smp", "--cpus", "2", "--trace", "protocol"], "--trace: protocol: piii-smp uses the classic memory system, which writes no protocol trace (off or classic)"),
        (["--machine", "altix-numa", "--nodes", "2", "--trace", "classic"], "--trace: classic: altix-numa uses Ruby, which writes no classic trace (off or protocol)"),
        (["--machine", "piii-smp", "--cpus", "2", "--run", "a b"], "must not contain spaces"),
        (["--machine", "no-such", "--cpus", "2"], "no such machine 'no-such'"),
        (["--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "400"], "--perturb-ns: 400: not in [0, 100] ns"),
        (["--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "20", "--perturb-seed", "-1"], "--perturb-seed: -1: not a whole number >= 0"),
        (["--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "20", "--checkpoint-out", "ck"], "--perturb-ns: a boot to a checkpoint runs on the fast-forward CPU"),
        (["--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "4"], "--perturb-ns: 4: piii-smp retimes a memory response to its next 10 ns clock edge"),
        (["--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "10"], "every repeat would be the same run (perturb_ns of more than 10 (e.g. 20"),
        (["--machine", "altix-numa", "--nodes", "2", "--perturb-ns", "1"], "--perturb-ns: 1: altix-numa retimes a memory response to its next 1 ns clock edge"),
    ],
)
def test_bad_commands_are_rejected_before_gem5_runs(artifacts, extra, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        plan_for(artifacts, *extra)


def test_a_perturbed_run_records_its_perturbation(artifacts) -> None:
    assert plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2").perturbation is None
    plan = plan_for(artifacts, "--machine", "altix-numa", "--nodes", "2", "--perturb-ns", "4", "--perturb-seed", "3")
    assert plan.perturbation == {"memory_latency_var_ns": 4, "seed": 3}
    plan = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--perturb-ns", "11")
    assert plan.perturbation == {"memory_latency_var_ns": 11, "seed": 0}


def test_a_perturbed_start_delays_the_switch_by_a_seeded_draw(artifacts, tmp_path) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    writer = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-out", str(checkpoint))
    run_plan.write_json_atomically(checkpoint / run_plan.CHECKPOINT_META, writer.checkpoint_meta("k" * 64, "i" * 64))

    def restored(*extra: str) -> run_plan.RunPlan:
        return plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-in", str(checkpoint), *extra)

    assert restored("--perturb-ns", "20").start_delay_ns == 0
    delays = [restored("--perturb-start-us", "4000", "--perturb-seed", str(seed)).start_delay_ns for seed in range(8)]
    assert all(0 <= delay <= 4_000_000 for delay in delays)
    assert len(set(delays)) == len(delays)  # each repeat starts at another phase
    assert delays == [restored("--perturb-start-us", "4000", "--perturb-seed", str(seed)).start_delay_ns for seed in range(8)]
    plan = restored("--perturb-start-us", "4000", "--perturb-seed", "3")
    assert plan.perturbation == {"memory_latency_var_ns": 0, "seed": 3, "start_delay_max_us": 4000, "start_delay_ns": delays[3]}
    assert plan.start_delay_ticks(10**12) == delays[3] * 1000  # gem5's 1 ps tick
    both = restored("--perturb-ns", "20", "--perturb-start-us", "4000", "--perturb-seed", "3")
    assert both.perturbation == {**plan.perturbation, "memory_latency_var_ns": 20}
    with pytest.raises(run_plan.PlanError, match=re.escape("--perturb-start-us: 30000: not in [0, 20000] us")):
        restored("--perturb-start-us", "30000")
    with pytest.raises(run_plan.PlanError, match="only with --checkpoint-in and without --restore-detailed"):
        restored("--perturb-start-us", "4000", "--restore-detailed")
    with pytest.raises(run_plan.PlanError, match="only with --checkpoint-in"):
        plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--perturb-start-us", "4000")


def test_a_memory_response_is_retimed_by_the_bus_or_the_board_clock() -> None:
    assert machine.load_machine(PIII).memory_response_clock_hz == 100_000_000
    assert machine.load_machine(ALTIX).memory_response_clock_hz == 1_000_000_000
    assert machine.load_machine(INTERLEAVED).memory_response_clock_hz == 1_000_000_000


def test_outdir_defaults_to_gem5s(artifacts, tmp_path) -> None:
    kernel, image = artifacts
    args = run_plan.build_parser().parse_args(["--machine", "piii-smp", "--cpus", "1", "--kernel", str(kernel), "--image", str(image)])
    assert run_plan.make_plan(args, default_outdir=tmp_path / "m5out").outdir == tmp_path / "m5out"
    with pytest.raises(run_plan.PlanError, match="--outdir: required"):
        run_plan.make_plan(args)


def test_checkpoint_metadata_must_match(artifacts, tmp_path) -> None:
    checkpoint = tmp_path / "ck"
    writer = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-out", str(checkpoint), "--boot", "lockstudy.spinlock=ticket")
    run_plan.write_json_atomically(checkpoint / run_plan.CHECKPOINT_META, writer.checkpoint_meta("k" * 64, "i" * 64))
    same = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-in", str(checkpoint))
    assert run_plan.check_checkpoint(same, "k" * 64, "i" * 64)["count"] == 2
    other = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "4", "--checkpoint-in", str(checkpoint))
    with pytest.raises(run_plan.PlanError, match="count=2"):
        run_plan.check_checkpoint(other, "k" * 64, "i" * 64)
    with pytest.raises(run_plan.PlanError, match="kernel_sha256"):
        run_plan.check_checkpoint(same, "x" * 64, "i" * 64)
    # the same path holding another image is another image
    with pytest.raises(run_plan.PlanError, match="image_sha256"):
        run_plan.check_checkpoint(same, "k" * 64, "x" * 64)


def test_a_checkpoint_outlives_a_comment_edit_of_its_machine_file_but_not_a_value_edit(artifacts, tmp_path) -> None:
    checkpoint, copy = tmp_path / "ck", tmp_path / "machines" / "piii-smp.toml"
    copy.parent.mkdir()
    copy.write_text(PIII.read_text())
    writer = plan_for(artifacts, "--machine", str(copy), "--cpus", "2", "--checkpoint-out", str(checkpoint))
    run_plan.write_json_atomically(checkpoint / run_plan.CHECKPOINT_META, writer.checkpoint_meta("k" * 64, "i" * 64))
    restore = ("--machine", str(copy), "--cpus", "2", "--checkpoint-in", str(checkpoint))
    copy.write_text("# a source cited\n" + PIII.read_text())
    assert run_plan.check_checkpoint(plan_for(artifacts, *restore), "k" * 64, "i" * 64)["machine_sha256"] != machine.load_machine(copy).sha256
    copy.write_text(PIII.read_text().replace('clock = "700MHz"', 'clock = "800MHz"', 1))
    with pytest.raises(run_plan.PlanError, match="machine_content_sha256"):
        run_plan.check_checkpoint(plan_for(artifacts, *restore), "k" * 64, "i" * 64)


def test_a_restore_fast_forwards_on_its_checkpoints_cpu_or_restores_detailed(artifacts, tmp_path) -> None:
    checkpoint = tmp_path / "ck"
    writer = plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-out", str(checkpoint))
    run_plan.write_json_atomically(checkpoint / run_plan.CHECKPOINT_META, writer.checkpoint_meta("k" * 64, "i" * 64))
    restore = ("--machine", "piii-smp", "--cpus", "2", "--checkpoint-in", str(checkpoint), "--run", "kbench:duration_ms=10")
    fast = plan_for(artifacts, *restore)
    assert fast.fast_forwards and not fast.boots and fast.fast_forward == "atomic"
    run_plan.check_checkpoint(fast, "k" * 64, "i" * 64)
    # the atomic boot's guest issues m5 ops in the "inst" form, an invalid opcode on KVM
    on_kvm = plan_for(artifacts, *restore, "--fast-forward", "kvm")
    with pytest.raises(run_plan.PlanError, match="booted on the 'atomic' fast-forward CPU, this run fast-forwards on 'kvm'"):
        run_plan.check_checkpoint(on_kvm, "k" * 64, "i" * 64)
    detailed = plan_for(artifacts, *restore, "--restore-detailed")
    assert not detailed.fast_forwards
    run_plan.check_checkpoint(detailed, "k" * 64, "i" * 64)
    assert writer.fast_forwards  # a boot always starts on the fast-forward CPU
    with pytest.raises(run_plan.PlanError, match="--restore-detailed: only with --checkpoint-in"):
        plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--restore-detailed")


def numa_report(console: str) -> dict:
    report = guest_output.parse_console(console).numa
    assert report is not None
    return report.as_dict()


# What workloads/numa_probe.c prints on a guest of altix-numa with 2 nodes (format from its source).
ALTIX_TWO_NODES_PROBE = """\
LOCKSTUDY-NUMA cpu 0 node 0
LOCKSTUDY-NUMA cpu 1 node 0
LOCKSTUDY-NUMA cpu 2 node 1
LOCKSTUDY-NUMA cpu 3 node 1
LOCKSTUDY-NUMA node 0 cpulist 0-1
LOCKSTUDY-NUMA node 0 memtotal_kb 980000
LOCKSTUDY-NUMA node 0 distance 10 20
LOCKSTUDY-NUMA node 1 cpulist 2-3
LOCKSTUDY-NUMA node 1 memtotal_kb 1030000
LOCKSTUDY-NUMA node 1 distance 20 10
LOCKSTUDY-NUMA done
"""


def test_guest_topology_is_checked_against_the_machine() -> None:
    two = machine.find_machine("altix-numa").instance(2)
    boot = {"cpus": "4"}
    assert run_plan.topology_problems(two, boot, numa_report(ALTIX_TWO_NODES_PROBE)) == []
    swapped = ALTIX_TWO_NODES_PROBE.replace("cpu 3 node 1", "cpu 3 node 0")
    assert "getcpu() nodes per CPU are [0, 0, 1, 0]" in run_plan.topology_problems(two, boot, numa_report(swapped))[0]
    flat = ALTIX_TWO_NODES_PROBE.replace("distance 10 20", "distance 10 10")
    assert "node distances" in run_plan.topology_problems(two, boot, numa_report(flat))[0]
    too_big = ALTIX_TWO_NODES_PROBE.replace("memtotal_kb 980000", "memtotal_kb 2000000")
    assert "node 0 has MemTotal 2000000 kB" in run_plan.topology_problems(two, boot, numa_report(too_big))[0]
    assert "runs 2 CPUs" in run_plan.topology_problems(two, {"cpus": "2"}, numa_report(ALTIX_TWO_NODES_PROBE))[0]
    unfinished = ALTIX_TWO_NODES_PROBE.replace("LOCKSTUDY-NUMA done\n", "")
    assert "no complete NUMA report" in run_plan.topology_problems(two, boot, numa_report(unfinished))[0]
    assert "no complete NUMA report" in run_plan.topology_problems(two, boot, None)[0]


def test_smp_guest_needs_its_cpus_and_at_most_one_node() -> None:
    four = machine.find_machine("piii-smp").instance(4)
    assert run_plan.topology_problems(four, {"cpus": "4"}, None) == []  # a kernel without NUMA
    one_node = "".join(f"LOCKSTUDY-NUMA cpu {c} node 0\n" for c in range(4)) + (
        "LOCKSTUDY-NUMA node 0 cpulist 0-3\nLOCKSTUDY-NUMA node 0 memtotal_kb 1000000\n"
        "LOCKSTUDY-NUMA node 0 distance 10\nLOCKSTUDY-NUMA done\n"
    )
    assert run_plan.topology_problems(four, {"cpus": "4"}, numa_report(one_node)) == []
    assert run_plan.topology_problems(four, {"cpus": "3"}, numa_report(one_node))


def test_a_malformed_numa_line_is_a_protocol_problem() -> None:
    run = guest_output.parse_console("LOCKSTUDY-NUMA cpu zero node 0\n")
    assert any("not one of numa_probe's facts" in problem for problem in run.problems)


def test_checkpoint_in_needs_our_metadata(artifacts, tmp_path) -> None:
    with pytest.raises(run_plan.PlanError, match="not a checkpoint made by run.py"):
        plan_for(artifacts, "--machine", "piii-smp", "--cpus", "2", "--checkpoint-in", str(tmp_path))


def test_build_info_provenance(tmp_path) -> None:
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(b"x")
    assert "warning" in run_plan.build_info_next_to(kernel)
    (tmp_path / "build-info.json").write_text(json.dumps({"build": "smp"}))
    record = run_plan.build_info_next_to(kernel)
    assert record["build_info"] == {"build": "smp"} and len(record["build_info_sha256"]) == 64


def test_result_json_is_written_atomically(tmp_path) -> None:
    target = tmp_path / "result.json"
    run_plan.write_json_atomically(target, {"status": "ok"})
    assert json.loads(target.read_text()) == {"status": "ok"}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


# --- the guest's console, as result.json records it -------------------------

CONSOLE = """\
[    0.000000] Linux version 6.1
LOCKSTUDY-BOOT kernel=6.1.0 cpus=2 m5ops=inst checkpoint=0
LOCKSTUDY-SPEC kbench
LOCKSTUDY-RUN kbench index=0 uptime=1.5
LOCKSTUDY-RESULT-BEGIN kbench
[   12.000000] random: crng init done
{"testcase": "kbench", "ops": 1000}
LOCKSTUDY-RESULT-END
LOCKSTUDY-LOCKS-BEGIN kbench
0xffffffff81d07100 0x0000000001d07100 4 bench:lock
LOCKSTUDY-LOCKS-END
LOCKSTUDY-MEMORY-BEGIN kbench
slab 0x0000000002048000 16384 16384 960 mm_struct
LOCKSTUDY-MEMORY-END
LOCKSTUDY-DONE status=ok reason=none results=1 uptime=2.0
"""


def test_guest_summary_of_a_complete_run() -> None:
    summary, incomplete = run_plan.guest_summary(CONSOLE)
    assert incomplete == []
    lock = {"address": "0xffffffff81d07100", "physical": "0x1d07100", "size": 4, "name": "bench:lock"}
    memory = [["slab", "0x2048000", 16384, 16384, 960, "mm_struct", 0]]
    # lock_event_counts: None, the kernel has no lock event counters (only the smp-lockevents build has)
    assert summary["results"] == [
        {"testcase": "kbench", "result": {"testcase": "kbench", "ops": 1000}, "locks": [lock], "memory": memory, "lock_event_counts": None}
    ]
    assert summary["done"]["status"] == "ok" and summary["boot"]["cpus"] == "2"
    json.dumps(summary)  # result.json must be able to hold it


def test_guest_summary_carries_the_lock_event_counts() -> None:
    counts = "LOCKSTUDY-LOCKEVENTS kbench rwsem_wake_skipped=3 lock_pending=12\n"
    summary, incomplete = run_plan.guest_summary(CONSOLE.replace("LOCKSTUDY-DONE", counts + "LOCKSTUDY-DONE"))
    assert incomplete == []
    assert summary["results"][0]["lock_event_counts"] == {"rwsem_wake_skipped": 3, "lock_pending": 12}


def test_guest_summary_of_a_crashed_run() -> None:
    summary, incomplete = run_plan.guest_summary(CONSOLE.split("LOCKSTUDY-DONE")[0])
    assert summary["done"] is None and any("no LOCKSTUDY-DONE" in reason for reason in incomplete)


# --- board and Ruby agree on the line size ----------------------------------


def _keyword_sources(path: Path, call_name: str) -> dict[str, str]:
    """Keyword arguments (as source text) of every call to `call_name` in a file."""
    import ast

    tree = ast.parse(path.read_text())
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == call_name:
            found.update({kw.arg: ast.unparse(kw.value) for kw in node.keywords if kw.arg})
    return found


def test_board_and_ruby_take_the_line_size_from_the_same_instance() -> None:
    board = _keyword_sources(GEM5_CONFIGS / "run.py", "LockstudyX86Board")
    # Both Ruby hierarchies (MESI_Two_Level and CHI) build their RubySystem in numa_hierarchy.py.
    ruby = _keyword_sources(GEM5_CONFIGS / "components" / "numa_hierarchy.py", "RubySystem")
    assert board["cache_line_size"] == "instance.line_bytes"
    assert ruby["block_size_bytes"] == "instance.line_bytes"
    # ... and the hierarchy refuses a board whose line differs from the machine's.
    assert "board line" in (GEM5_CONFIGS / "components" / "numa_hierarchy.py").read_text()


@pytest.mark.parametrize("path", machine.machine_files(), ids=lambda p: p.stem)
def test_every_allowed_line_size_gives_consistent_caches(path: Path) -> None:
    loaded = machine.load_machine(path)
    for line in loaded.data["cache_line"]["allowed"]:
        instance = loaded.instance(loaded.counts[-1], line)
        assert instance.line_bytes == line
        assert all(start % line == 0 for start, _ in instance.node_memory_ranges())


def test_a_scalar_where_a_table_belongs(tmp_path: Path) -> None:
    text = PIII.read_text()
    text = "memory = 3\n" + text[: text.index("[memory]")]
    path = tmp_path / "piii-smp.toml"
    path.write_text(text)
    with pytest.raises(machine.MachineError) as caught:
        machine.load_machine(path)
    assert f"{path}: memory: must be a table, got 3" in str(caught.value)


def test_the_after_roi_limit_is_read_from_run_toml_and_checked(tmp_path: Path) -> None:
    from lockstudy.validation import run_limits

    assert run_limits.after_roi_limit_ms() > 0
    bad = tmp_path / "run.toml"
    bad.write_text("[after_roi]\nlimit_ms = -1\n")
    with pytest.raises(run_limits.RunLimitsError, match=r"run\.toml: after_roi\.limit_ms: expected a positive number of milliseconds, found -1"):
        run_limits.after_roi_limit_ms(bad)


def test_the_console_drain_is_read_from_run_toml_and_checked(tmp_path: Path) -> None:
    import run_plan

    from lockstudy.validation.run_limits import RunLimitsError

    check, limit = run_plan.console_drain_ticks(10**12)  # gem5's 1 ps tick
    assert 0 < check < limit
    bad = tmp_path / "run.toml"
    bad.write_text("[console_drain]\ncheck_us = 100\nlimit_ms = 0\n")
    with pytest.raises(RunLimitsError, match=r"run\.toml: console_drain\.limit_ms: expected a positive number of milliseconds, found 0"):
        run_plan.console_drain_ticks(10**12, bad)
    good = tmp_path / "good.toml"
    good.write_text("[console_drain]\ncheck_us = 100\nlimit_ms = 20\n")
    assert run_plan.console_drain_ticks(10**12, good) == (100_000_000, 20_000_000_000)


def test_a_console_is_complete_only_with_its_whole_done_line() -> None:
    import run_plan

    done = "LOCKSTUDY-DONE status=ok reason=- results=1 uptime=0.58\n"
    assert run_plan.console_has_done_line("LOCKSTUDY-RESULT-END\n" + done)
    assert not run_plan.console_has_done_line("LOCKSTUDY-LOCKS-BEGIN cal_rmw\n0xffff88800238")  # cut inside the registry
    assert not run_plan.console_has_done_line("LOCKSTUDY-RESULT-END\n" + done[:-1])  # its last byte still in the UART
    assert not run_plan.console_has_done_line("echo LOCKSTUDY-DONE status=ok\n")
