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
lock spinlock
writers 1
cpus 0
hold_loops 100
think_loops 100
lock_address 0xffffffff81cfd0c0
lock_size 4
elapsed_ns 300000000
acquisitions 3000
acquisitions_per_sec 10000
write_acquisitions 3000
reader_overlaps 0
handoffs_local 0
handoffs_remote 0
handoffs 0
guarded_count 3000
exclusion ok
thread cpu 0 node 0 acquisitions 3000 handoffs_local 0 handoffs_remote 0
"""
SETTINGS = ("variant", "cpus", "duration_ms", "hold_loops", "think_loops", "placement", "lock", "writers", "run")


@pytest.fixture(scope="module")
def programs() -> Path:
    return workloads.build(echo=False)


def fake_bench(root: Path, result: str = FAKE_RESULT, boot_variant: str = "tas", settings: tuple[str, ...] = SETTINGS) -> Path:
    bench = root / "bench"
    bench.mkdir()
    for name in settings:
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
    items.append(Item("kbench", {"lock": "rwsem", "writers": 2, "cpus": "0-3", "variant": "boot"}))
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
        ({"lock": "mutex"}, "lock=mutex: expected one of spinlock, rwsem"),
        ({"writers": 2}, "writers=2: only lock=rwsem has readers and writers"),
        ({"lock": "rwsem", "variant": "tas"}, "variant=tas: lock=rwsem runs the boot variant"),
        ({"lock": "rwsem", "placement": "padded"}, "placement=padded: lock=rwsem has its cache line to itself"),
        ({"lock": "rwsem", "cpus": "0-1", "writers": 3}, "writers=3: more writers than the 2 CPUs of cpus=0-1"),
        ({"placement": "pair-packed", "cpus": "3"}, "placement=pair-packed: a lock pair needs two bench threads or more"),
        ({"lock": "rwsem", "placement": "pair-padded"}, "placement=pair-padded: lock=rwsem has its cache line to itself"),
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
    for word in (*known.placements, *known.locks, known.variant_boot, known.cpus_all):
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
    assert "rc=1" in validate("kbench:placement=mixed") and "expected padded, shared, pair-padded or pair-packed" in validate("kbench:placement=mixed")
    assert validate("kbench:variant=tas,placement=pair-packed,cpus=0-1") == "rc=0"
    assert "unknown parameter 'speed'" in validate("kbench:speed=2")


# ---- the program against a fake bench -------------------------------------------


def test_kbench_writes_the_settings_and_reports_every_key(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path)
    result = run_fake(bench, [*FAKE_ARGS, "repeat=2"]).result()
    for name, value in zip(SETTINGS, ["hbo", "0", "300", "100", "100", "shared", "spinlock", "", "1"]):
        assert (bench / name).read_text() == value, name
    assert result["testcase"] == "kbench" and result["status"] == "ok" and result["m5ops"] == "off"
    assert result["copies"] == 1 and result["copy_cpu"] == [0] and result["repeat"] == 2
    assert result["ops"] == 6000 and result["copy_ops"] == [6000]
    assert result["warmup_ops"] == 3000  # the warm-up's result is the fake's too
    assert result["ops_per_s"] == pytest.approx(10000)
    assert result["params"] == {"variant": "hbo", "cpus": "0", "duration_ms": 300, "hold_loops": 100,
                                "think_loops": 100, "placement": "shared", "lock": "spinlock", "repeat": 2, "warmup_ms": 1}  # fmt: skip
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
        assert result.result()["warmup_ops"] == (3000 if warm else 0)


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
        (("lock spinlock", "lock rwsem"), "the result says lock rwsem, spinlock was written"),
        (("writers 1", "writers 0"), "the result says writers 0, not the 1 asked"),
        (("write_acquisitions 3000", "write_acquisitions 2999"), "mutual exclusion BROKEN"),
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


# lock=rwsem on CPU 0, its one thread the writer
RWSEM_ARGS = ["lock=rwsem", "cpus=0", "writers=1", "duration_ms=300", "hold_loops=10"]
# the spinlock run's result as a 1-thread rwsem run would print it: the boot variant, the rwsem's address and size
RWSEM_RESULT = (FAKE_RESULT.replace("variant hbo", "variant tas").replace("placement shared", "placement padded")
                .replace("lock spinlock", "lock rwsem").replace("hold_loops 100", "hold_loops 10").replace("think_loops 100", "think_loops 0")
                .replace("lock_address 0xffffffff81cfd0c0", "lock_address 0xffffffff81cfd140").replace("lock_size 4\n", "lock_size 40\n"))  # fmt: skip


def test_kbench_drives_the_rwsem_with_its_writers(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path, RWSEM_RESULT, boot_variant="tas")
    result = run_fake(bench, RWSEM_ARGS).result()
    assert (bench / "lock").read_text() == "rwsem" and (bench / "writers").read_text() == "1"
    assert (bench / "variant").read_text() == "tas"  # the boot variant: the rwsem's wait_lock
    assert result["params"]["lock"] == "rwsem" and result["params"]["writers"] == 1 and result["seed"] == "003"
    assert "rwsem" in result["ops_unit"]
    (run,) = result["metrics"]["runs"]
    assert run["lock"] == "rwsem" and run["write_acquisitions"] == 3000 and run["reader_overlaps"] == 0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("reader_overlaps 0", "reader_overlaps 2"), "mutual exclusion BROKEN with lock rwsem"),
        (("guarded_count 3000", "guarded_count 2990"), "guarded_count 2990, write_acquisitions 3000"),
        (("writers 1", "writers 0"), "the result says writers 0, not the 1 asked"),
        (("write_acquisitions 3000", "write_acquisitions 3001"), "write_acquisitions 3001 of 3000 acquisitions"),
    ],
)
def test_kbench_checks_the_rwsem_numbers(programs: Path, tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    edited = RWSEM_RESULT.replace(*edit)
    if edit[0].startswith("write_acquisitions"):
        edited = edited.replace("guarded_count 3000", "guarded_count 3001")  # so that only the total is wrong
    run = run_fake(fake_bench(tmp_path, edited, boot_variant="tas"), RWSEM_ARGS)
    assert run.returncode != 0 and run.stdout == ""
    assert message in run.stderr


def test_kbench_counts_the_writers_from_the_first_thread_lines(programs: Path, tmp_path: Path) -> None:
    """With writers=1 of 2 threads, write_acquisitions must be the first CPU's acquisitions."""
    two = RWSEM_RESULT.replace("cpus 0\n", "cpus 0-1\n").replace("acquisitions 3000\nacquisitions_per_sec 10000", "acquisitions 5000\nacquisitions_per_sec 16666")
    two += "thread cpu 1 node 0 acquisitions 2000 handoffs_local 0 handoffs_remote 0\n"
    bench = fake_bench(tmp_path, two, boot_variant="tas")
    args = [a.replace("cpus=0", "cpus=0-1") for a in RWSEM_ARGS]
    swapped = two.replace("write_acquisitions 3000", "write_acquisitions 2000").replace("guarded_count 3000", "guarded_count 2000")
    (bench / "result").write_text(swapped)
    run = run_fake(bench, args)
    if "is not online" in run.stderr:
        pytest.skip("this host has one CPU online: kbench checks cpus= against /sys/devices/system/cpu/online")
    assert run.returncode != 0 and "the first 1 thread lines (the writers) add up to 3000 acquisitions; write_acquisitions says 2000" in run.stderr
    (bench / "result").write_text(two)
    assert run_fake(bench, args).result()["metrics"]["runs"][0]["write_acquisitions"] == 3000


# A kernel without lockstudy-bench-rwsem.patch (every build but smp-rwsem-bench): no lock= or writers=
# files, the result as before it.
WITHOUT_RWSEM = tuple(name for name in SETTINGS if name not in ("lock", "writers"))
OLD_RESULT = "".join(line + "\n" for line in FAKE_RESULT.splitlines()
                     if line.split()[0] not in ("lock", "writers", "write_acquisitions", "reader_overlaps"))  # fmt: skip


def test_kbench_drives_a_bench_without_the_rwsem_as_before(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path, OLD_RESULT, settings=WITHOUT_RWSEM)
    result = run_fake(bench, FAKE_ARGS).result()
    assert not (bench / "lock").exists() and not (bench / "writers").exists()
    (run,) = result["metrics"]["runs"]
    assert "lock" not in run and run["guarded_count"] == run["acquisitions"] == 3000
    (tmp_path / "broken").mkdir()
    broken = fake_bench(tmp_path / "broken", OLD_RESULT.replace("guarded_count 3000", "guarded_count 2999"), settings=WITHOUT_RWSEM)
    assert "mutual exclusion BROKEN" in run_fake(broken, FAKE_ARGS).stderr


def test_kbench_says_when_the_kernel_has_no_rwsem_bench(programs: Path, tmp_path: Path) -> None:
    bench = fake_bench(tmp_path, OLD_RESULT, settings=WITHOUT_RWSEM)
    run = run_fake(bench, RWSEM_ARGS)
    assert run.returncode != 0 and run.stdout == ""
    assert "lock=rwsem: this kernel's bench has no rwsem" in run.stderr and "smp-rwsem-bench" in run.stderr


# ---- the lock pair (lockstudy-bench-lock-pair.patch, the smp-bench-pair build alone) ----------

# Two threads, one on each lock: CPUs 0 and 1 must be online here (the host's CPU list is the guest's).
PAIR_ARGS = ["variant=tas", "cpus=0-1", "duration_ms=300", "hold_loops=10", "think_loops=100", "placement=pair-packed"]
PAIR_RESULT = """variant tas
placement pair-packed
cpus 0-1
hold_loops 10
think_loops 100
lock_address 0xffffffff81cfd0c0
lock_size 4
elapsed_ns 300000000
acquisitions 5000
acquisitions_per_sec 16666
handoffs_local 0
handoffs_remote 0
handoffs 0
guarded_count 5000
exclusion ok
pair_lock_address 0xffffffff81cfd0c8
thread cpu 0 node 0 acquisitions 2600 handoffs_local 0 handoffs_remote 0
thread cpu 1 node 0 acquisitions 2400 handoffs_local 0 handoffs_remote 0
"""


def _two_cpus_online() -> None:
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    if online == "0":
        pytest.skip(f"this host has one CPU online ({online}): a lock pair needs CPUs 0 and 1")


def test_kbench_drives_a_lock_pair_and_reports_its_second_lock(programs: Path, tmp_path: Path) -> None:
    _two_cpus_online()
    bench = fake_bench(tmp_path, PAIR_RESULT, settings=WITHOUT_RWSEM)
    result = run_fake(bench, PAIR_ARGS).result()
    assert (bench / "placement").read_text() == "pair-packed"
    (run,) = result["metrics"]["runs"]
    assert run["placement"] == "pair-packed" and run["pair_lock_address"] == "0xffffffff81cfd0c8"
    assert run["guarded_count"] == run["acquisitions"] == 5000 and [t["acquisitions"] for t in run["threads"]] == [2600, 2400]


def test_kbench_refuses_a_pair_result_without_its_second_lock(programs: Path, tmp_path: Path) -> None:
    """A kernel that took the placement but printed no second lock is not the pair bench: no result."""
    _two_cpus_online()
    bench = fake_bench(tmp_path, PAIR_RESULT.replace("pair_lock_address 0xffffffff81cfd0c8\n", ""), settings=WITHOUT_RWSEM)
    run = run_fake(bench, PAIR_ARGS)
    assert run.returncode != 0 and run.stdout == "" and "pair_lock_address" in run.stderr


def test_kbench_refuses_a_pair_on_one_cpu(programs: Path, tmp_path: Path) -> None:
    run = run_fake(fake_bench(tmp_path, settings=WITHOUT_RWSEM), ["variant=tas", "cpus=0", "placement=pair-padded"])
    assert run.returncode != 0 and "a lock pair needs two bench threads or more; cpus=0 gives 1" in run.stderr
