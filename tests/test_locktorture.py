"""locktorture on the `torture` build under QEMU TCG: every spinlock variant.

Issue 3: for each spinlock variant (kernel/variants.toml) and each torture
type (lockstudy/data/locktorture.toml), at least 20 s of torture with -smp 4
and 0 failures; and the negative control `lock_busted` MUST come out as a
failure, which proves the harness can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockstudy.kernel import locktorture, specs
from lockstudy.kernel.build import BuildMissing, require_build

SETTINGS = locktorture.load_settings()
VARIANTS = specs.load_spinlock_variants()


@pytest.fixture(scope="module")
def torture_bzimage() -> Path:
    try:
        return require_build(specs.load_builds()["torture"]) / "bzImage"
    except BuildMissing as exc:
        pytest.fail(str(exc))


@pytest.mark.qemu
@pytest.mark.kernel
@pytest.mark.parametrize("torture_type", SETTINGS.torture_types)
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_locktorture_passes(torture_bzimage: Path, tmp_path: Path, variant: specs.SpinlockVariant, torture_type: str) -> None:
    run = locktorture.run(torture_bzimage, torture_type, tmp_path, SETTINGS, variant)
    assert run.passed, f"{variant.name}/{torture_type}: {run.describe()}\n{run.boot.console[-4000:]}"
    assert run.report.torture_seconds is not None and run.report.torture_seconds >= SETTINGS.minimum_torture_seconds, run.describe()
    assert run.report.total_acquisitions > 0, run.describe()
    # The kernel must really run the variant asked for (its status file says so).
    active = run.active_spinlock()
    if active is not None or not variant.default:
        assert active == variant.name, f"asked for {variant.name}, /sys/kernel/lockstudy/spinlock says {active}"


@pytest.mark.qemu
@pytest.mark.kernel
def test_lock_busted_is_reported_as_failure(torture_bzimage: Path, tmp_path: Path) -> None:
    run = locktorture.run(torture_bzimage, SETTINGS.negative_type, tmp_path, SETTINGS,
                          duration=SETTINGS.negative_duration_seconds)  # fmt: skip
    assert not run.boot.timed_out, run.describe()
    assert run.report.end_status == "FAILURE", f"{run.describe()}\n{run.boot.console[-4000:]}"
    assert any(run.report.fail_counts) and run.report.alarm_lines
    assert not run.passed, "the harness must report lock_busted as failed"


SAMPLE_SUCCESS = """\
[    1.000000] spin_lock-torture:--- Start of test: nwriters_stress=8 nreaders_stress=0 stat_interval=5
[   11.000000] Writes:  Total: 123456  Max/Min: 20000/10000 ???  Fail: 0
[   21.500000] Writes:  Total: 234567  Max/Min: 40000/20000   Fail: 0
[   21.600000] spin_lock-torture:--- End of test: SUCCESS: nwriters_stress=8 nreaders_stress=0
"""


def test_parser_reads_success_and_duration() -> None:
    report = locktorture.parse_console(SAMPLE_SUCCESS)
    assert report.passed and report.end_status == "SUCCESS"
    assert report.fail_counts == [0, 0] and report.total_acquisitions == 234567
    assert report.torture_seconds == pytest.approx(20.6)


def test_parser_fails_on_fail_count_alarm_or_warning() -> None:
    failing = SAMPLE_SUCCESS.replace("Fail: 0\n[   21.6", "Fail: 3 !!!\n[   21.6")
    assert not locktorture.parse_console(failing).passed
    warned = SAMPLE_SUCCESS + "[   22.0] WARNING: CPU: 1 PID: 50 at kernel/locking/locktorture.c:200\n"
    assert not locktorture.parse_console(warned).passed
    assert not locktorture.parse_console(SAMPLE_SUCCESS.replace("SUCCESS", "FAILURE")).passed
    assert not locktorture.parse_console("no locktorture output at all").passed


def test_parser_reads_the_switch_status() -> None:
    report = locktorture.parse_console("LOCKSTUDY-SWITCH spinlock=tas\r\nLOCKSTUDY-SWITCH lockref=cmpxchg (invalid value 'x' ignored)\n")
    assert report.switches == {"spinlock": "tas", "lockref": "cmpxchg"}


def test_only_non_default_variants_are_named_on_the_command_line() -> None:
    default = specs.SpinlockVariant("qspinlock", default=True)
    other = specs.SpinlockVariant("ticket", default=False)
    assert "lockstudy.spinlock" not in locktorture.kernel_args("spin_lock", 20, SETTINGS, default)
    args = locktorture.kernel_args("rw_lock", 20, SETTINGS, other)
    assert "lockstudy.spinlock=ticket" in args and "locktorture.torture_type=rw_lock" in args
    assert "locktorture.shutdown_secs=20" in args
