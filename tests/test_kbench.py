"""kbench, natively and fast: its spec validation (host and guest), and its
parsing and self-checks against a fake bench directory.

The real bench is in the kernel (tests/test_kbench_qemu.py boots it). Here
LOCKSTUDY_KBENCH_DIR points kbench at a directory of plain files laid out
like /sys/kernel/lockstudy/bench: the settings it writes land in them, and
`result` holds a run as the kernel prints it (kernel/patches/README.md,
"Lock bench"). Time: well under a second per test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from lockstudy import kbench, workloads
from lockstudy.image import OVERLAY_DIR
from lockstudy.kernel import specs
from lockstudy.run_spec import Item, RunSpecError, parse_run_spec, run_spec

SPEC_SH = OVERLAY_DIR / "opt/lockstudy/lib/spec.sh"
BUSYBOX = Path("/bin/busybox")
BENCH_DIR_ENV = "LOCKSTUDY_KBENCH_DIR"

# One CPU, so the fake run fits any machine (CPU 0 is always online).
FAKE_ARGS = ["variant=hbo", "cpus=0", "duration_ms=300", "hold_loops=100", "think_loops=100", "placement=shared"]
FAKE_RESULT = """variant hbo
placement shared
cpus 0
hold_loops 100
think_loops 100
lock_address 0xffffffff81cfd0c0
lock_size 4
elapsed_ns 300000000
acquisitions 3000
acquisitions_per_sec 10000
handoffs_local 0
handoffs_remote 0
handoffs 0
guarded_count 3000
exclusion ok
thread cpu 0 node 0 acquisitions 3000 handoffs_local 0 handoffs_remote 0
"""
SETTINGS = ("variant", "cpus", "duration_ms", "hold_loops", "think_loops", "placement", "run")


@pytest.fixture(scope="module")
def programs() -> Path:
    return workloads.build(echo=False)


def fake_bench(root: Path, result: str = FAKE_RESULT, boot_variant: str = "tas") -> Path:
    bench = root / "bench"
    bench.mkdir()
    for name in SETTINGS:
        (bench / name).write_text("")
    (bench / "result").write_text(result)
    (root / "spinlock").write_text(f"{boot_variant}\n")
    return bench


def run_fake(bench: Path, args: list[str]) -> workloads.NativeRun:
    return workloads.run_native("kbench", args, env={**os.environ, BENCH_DIR_ENV: str(bench)})


# ---- spec validation -----------------------------------------------------------


def test_host_accepts_good_kbench_specs() -> None:
    variants = [v.name for v in specs.load_spinlock_variants()]
    items = [Item("kbench", {"variant": name, "duration_ms": 300, "hold_loops": 100, "think_loops": 100}) for name in variants]
    items.append(Item("kbench", {"variant": "boot", "cpus": "0-1.3", "placement": "shared", "repeat": 3, "m5ops": "inst"}))
    items.append(Item("kbench"))
    spec = run_spec(items)
    assert run_spec(parse_run_spec(spec)) == spec


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"variant": "nosuch"}, "variant=nosuch: not a lock variant of variants.toml"),
        ({"duration_ms": 0}, "duration_ms=0: expected a whole number in [1, 10000]"),
        ({"hold_loops": 1000001}, "hold_loops=1000001"),
        ({"repeat": "x"}, "repeat=x"),
        ({"placement": "mixed"}, "placement=mixed: expected one of padded, shared"),
        ({"cpus": "3-1"}, "cpus=3-1"),
        ({"cpus": "0,1"}, "expected [A-Za-z0-9_./-]+"),  # ',' separates pairs: a list uses '.'
        ({"threads": 2}, "unknown parameter 'threads'"),
        ({"m5ops": "kvm"}, "m5ops=kvm"),
    ],
)
def test_host_names_bad_kbench_params(params: dict[str, str | int], message: str) -> None:
    with pytest.raises(RunSpecError) as caught:
        run_spec([Item("kbench", params)])
    assert message in str(caught.value)


def test_host_variants_come_from_variants_toml(tmp_path: Path) -> None:
    variants = tmp_path / "variants.toml"
    variants.write_text('[[spinlock]]\nname = "qspinlock"\n[[spinlock]]\nname = "newlock"\n')
    kbench.check_params({"variant": "newlock"}, variants_file=variants)
    with pytest.raises(kbench.KbenchParamError, match="qspinlock, newlock"):
        kbench.check_params({"variant": "hbo"}, variants_file=variants)


def test_host_ranges_agree_with_kbench_help(programs: Path) -> None:
    """lockstudy/data/kbench.toml and tc_kbench.c describe the same parameters."""
    help_text = workloads.run_native("kbench", ["--help"]).stdout
    in_help = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(r"^  (\w+)=N \[(\d+)\.\.(\d+)\]$", help_text, re.M)}
    known = kbench.load_params()
    assert in_help == known.uint_ranges
    assert set(re.findall(r"^  (\w+)=", help_text, re.M)) == set(known.keys)
    for word in (*known.placements, known.variant_boot, known.cpus_all):
        assert word in help_text


def test_guest_validation_of_kbench_specs(programs: Path) -> None:
    """/init's check (spec.sh runs `kbench ARGS --check`) agrees with the host on the syntax."""
    if not BUSYBOX.is_file():
        pytest.fail(f"{BUSYBOX} missing: run ./run.sh setup (Debian package busybox-static)")
    script = f'. {SPEC_SH}\nls_validate_run "$1"; echo "rc=$? $LS_ERROR"'
    env = dict(os.environ, LS_BIN=str(workloads.bin_dir()))

    def validate(spec: str) -> str:
        return subprocess.run([str(BUSYBOX), "sh", "-c", script, "sh", spec], capture_output=True, text=True, env=env, timeout=30).stdout.strip()

    assert validate("kbench:variant=hbo,duration_ms=300,hold_loops=100,think_loops=100+kbench:variant=ticket") == "rc=0"
    assert "rc=1" in validate("kbench:placement=mixed") and "expected padded or shared" in validate("kbench:placement=mixed")
    assert "unknown parameter 'speed'" in validate("kbench:speed=2")


# ---- the program against a fake bench -------------------------------------------


def test_kbench_writes_the_settings_and_reports_every_key(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path)
    result = run_fake(bench, [*FAKE_ARGS, "repeat=2"]).result()
    for name, value in zip(SETTINGS, ["hbo", "0", "300", "100", "100", "shared", "1"]):
        assert (bench / name).read_text() == value, name
    assert result["testcase"] == "kbench" and result["status"] == "ok" and result["m5ops"] == "off"
    assert result["copies"] == 1 and result["copy_cpu"] == [0] and result["repeat"] == 2
    assert result["ops"] == 6000 and result["copy_ops"] == [6000]
    assert result["ops_per_s"] == pytest.approx(10000)
    assert result["params"] == {"variant": "hbo", "cpus": "0", "duration_ms": 300, "hold_loops": 100,
                                "think_loops": 100, "placement": "shared", "repeat": 2, "warmup_ms": 1}  # fmt: skip
    assert result["counters"] == {"handoffs_local": 0, "handoffs_remote": 0, "handoffs": 0}
    runs = result["metrics"]["runs"]
    assert len(runs) == 2
    kernel_keys = [line.split()[0] for line in FAKE_RESULT.splitlines() if not line.startswith("thread")]
    assert list(runs[0]) == [*kernel_keys, "threads"]
    assert runs[0]["lock_address"] == "0xffffffff81cfd0c0" and runs[0]["cpus"] == "0" and runs[0]["lock_size"] == 4
    assert runs[0]["threads"] == [{"cpu": 0, "node": 0, "acquisitions": 3000, "handoffs_local": 0, "handoffs_remote": 0}]


def test_kbench_warms_up_once_with_the_runs_settings_before_them(programs: Path, tmp_path: Path) -> None:
    # `run` and `result` as FIFOs: kbench waits for its result after each run, so the settings
    # read then are the ones that run had
    bench = fake_bench(tmp_path)
    for name in ("run", "result"):
        (bench / name).unlink()
        os.mkfifo(bench / name)
    seen: list[tuple[str, str, str]] = []

    def take_runs(count: int) -> None:
        for _ in range(count):
            with open(bench / "run") as run:
                asked = run.read()
            seen.append((asked, (bench / "duration_ms").read_text(), (bench / "hold_loops").read_text()))
            with open(bench / "result", "w") as result:
                result.write(FAKE_RESULT)

    for args, runs in (([*FAKE_ARGS, "repeat=2"], 3), ([*FAKE_ARGS, "repeat=2", "warmup_ms=0"], 2)):
        seen.clear()
        reader = threading.Thread(target=take_runs, args=(runs,), daemon=True)
        reader.start()
        result = run_fake(bench, args)
        reader.join(timeout=30)
        assert result.returncode == 0, result.stderr
        warm = [("1", "1", "100")] if runs == 3 else []
        assert seen == [*warm, ("1", "300", "100"), ("1", "300", "100")]


def test_kbench_default_variant_is_the_boot_one(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path, FAKE_RESULT.replace("variant hbo", "variant tas"), boot_variant="tas")
    result = run_fake(bench, [a for a in FAKE_ARGS if not a.startswith("variant=")]).result()
    assert (bench / "variant").read_text() == "tas" and result["params"]["variant"] == "tas"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("exclusion ok", "exclusion BROKEN"), "mutual exclusion BROKEN"),
        (("guarded_count 3000", "guarded_count 2999"), "mutual exclusion BROKEN"),
        (("acquisitions 3000 handoffs_local", "acquisitions 2999 handoffs_local"), "the thread lines add up to acquisitions 2999"),
        (("handoffs 0", "handoffs 1"), "handoffs_local 0 + handoffs_remote 0 != handoffs 1"),
        (("acquisitions_per_sec 10000", "acquisitions_per_sec 9"), "acquisitions_per_sec 9"),
        (("variant hbo", "variant ticket"), "the result says variant ticket"),
        (("thread cpu 0", "thread cpu 1"), "thread line 0 is on CPU 1"),
        (("lock_size 4\n", ""), "no 'lock_size' line"),
    ],
)
def test_kbench_checks_the_kernel_numbers(programs: Path, tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    bench = fake_bench(tmp_path, FAKE_RESULT.replace(*edit))
    run = run_fake(bench, FAKE_ARGS)
    assert run.returncode != 0 and run.stdout == ""
    assert message in run.stderr


def test_kbench_without_the_kernel_bench_says_so(programs: Path, tmp_path: Path) -> None:
    run = run_fake(tmp_path / "absent", FAKE_ARGS)
    assert run.returncode != 0 and run.stdout == ""
    assert "is absent" in run.stderr and "CONFIG_LOCKSTUDY_BENCH" in run.stderr


def test_kbench_refuses_offline_cpus(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path)
    run = run_fake(bench, ["variant=hbo", "cpus=4095"])
    assert run.returncode != 0 and "CPU 4095 is not online" in run.stderr


def test_kbench_json_is_one_line(programs: Path, tmp_path: Path) -> None:
    run = run_fake(fake_bench(tmp_path), FAKE_ARGS)
    assert run.returncode == 0 and run.stdout.count("\n") == 1
    json.loads(run.stdout)
