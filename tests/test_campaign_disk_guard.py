"""The disk guard: a run is stopped, not left to fill the disk, and the launch that stopped it does not redo it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from lockstudy.campaign import disk_guard
from lockstudy.campaign.disk_guard import DiskFloor, DiskGuard, DiskSettingsError, load_floor
from lockstudy.campaign.launcher import runs_to_do
from lockstudy.campaign.measured import run_measured
from lockstudy.campaign.progress import study_lines
from lockstudy.campaign.store import RunDir, RunStatus, State
from lockstudy.paths import ROOT

sys.path.insert(0, str(Path(__file__).parent))
from fake_gem5 import PROGRAM_START, install_fake_gem5  # noqa: E402

SETTINGS = ROOT / "lockstudy" / "data" / "campaign.toml"
QUICK_POLL_S = 0.1


def test_the_floor_comes_from_the_data_file_unless_the_environment_sets_it() -> None:
    from_file = load_floor(SETTINGS, environ={})
    assert from_file.min_free_gib > 0 and from_file.poll_seconds > 0
    assert "min_free_gib" in from_file.source
    from_env = load_floor(SETTINGS, environ={disk_guard.FLOOR_ENV: "50"})
    assert from_env.min_free_gib == 50 and from_env.source == f"${disk_guard.FLOOR_ENV}"


@pytest.mark.parametrize("text", ["lots", "0", "-3", "nan", "inf"])
def test_a_bad_floor_in_the_environment_is_refused_by_name(text: str) -> None:
    with pytest.raises(DiskSettingsError, match=disk_guard.FLOOR_ENV):
        load_floor(SETTINGS, environ={disk_guard.FLOOR_ENV: text})


def test_a_settings_file_without_its_disk_table_or_with_a_bad_value_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "campaign.toml"
    bare.write_text("[qemu]\nmax_memory_mib = 2048\n")
    with pytest.raises(DiskSettingsError, match=r"no \[disk\] table"):
        load_floor(bare, environ={})
    bare.write_text("[disk]\nmin_free_gib = \"five\"\npoll_seconds = 10\n")
    with pytest.raises(DiskSettingsError, match="min_free_gib: must be a number above 0, got 'five'"):
        load_floor(bare, environ={})


def test_the_guard_says_why_only_below_the_floor(tmp_path: Path) -> None:
    (tmp_path / "roi.trace.gz").write_bytes(b"\0" * 4096)
    floor = DiskFloor(5.0, QUICK_POLL_S, "test floor")
    assert DiskGuard(tmp_path, floor, free=lambda _path: 5.0).shortfall() is None
    reason = DiskGuard(tmp_path, floor, free=lambda _path: 1.25).shortfall()
    assert reason is not None and reason.startswith(disk_guard.STOPPED_FOR_DISK)
    assert "1.2 GiB free" in reason and "floor of 5 GiB (test floor)" in reason and str(tmp_path) in reason


def test_a_child_is_stopped_when_the_condition_gives_a_reason(tmp_path: Path) -> None:
    asked: list[float] = []

    def stop_on_second_look() -> str | None:
        asked.append(time.monotonic())
        return "no room" if len(asked) >= 2 else None

    started = time.monotonic()
    measured = run_measured([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "child.log",
                            stop_on_second_look, QUICK_POLL_S)  # fmt: skip
    assert measured.stopped == "no room"
    assert measured.returncode != 0
    assert time.monotonic() - started < 20, "the child must be stopped, not waited for"
    assert len(asked) == 2


def test_a_child_that_ends_by_itself_is_not_stopped(tmp_path: Path) -> None:
    measured = run_measured([sys.executable, "-c", "pass"], tmp_path / "child.log", lambda: None, QUICK_POLL_S)
    assert measured.returncode == 0 and measured.stopped == ""


# A gem5 that writes its ROI trace until it is stopped (or gives up after a minute).
TRACE_WRITING_GEM5 = PROGRAM_START + """\
with open(out / "roi.trace.gz", "wb") as trace:
    for _ in range(600):
        trace.write(b"\\0" * 65536)
        trace.flush()
        time.sleep(0.1)
(out / "result.json").write_text(json.dumps({"status": "ok", "reason": ""}))
"""


def fake_gem5_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, free_gib) -> tuple[object, Path]:  # type: ignore[no-untyped-def]
    from lockstudy.campaign import gem5_backend

    install_fake_gem5(tmp_path, monkeypatch, TRACE_WRITING_GEM5)
    monkeypatch.setattr(disk_guard, "load_floor", lambda: DiskFloor(5.0, QUICK_POLL_S, "test floor"))
    monkeypatch.setattr(disk_guard, "free_gib", free_gib)
    return gem5_backend.Gem5Backend(), tmp_path / "campaign"


def smoke_spec():  # type: ignore[no-untyped-def]
    from lockstudy.campaign.loader import load_campaign

    return load_campaign(ROOT / "campaigns" / "smoke.toml").runs[0]


def test_a_run_whose_trace_fills_the_disk_is_stopped_and_its_trace_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def free_until_the_trace_grows(outputs: Path) -> float:
        trace = outputs / "roi.trace.gz"
        return 1.0 if trace.is_file() and trace.stat().st_size > 4 * 65536 else 100.0

    backend, campaign_dir = fake_gem5_backend(tmp_path, monkeypatch, free_until_the_trace_grows)
    spec = smoke_spec()
    out = campaign_dir / "runs" / spec.run_id / "out"
    out.mkdir(parents=True)
    started = time.monotonic()
    outcome = backend.run(spec, out, campaign_dir)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 30
    assert outcome.status == "stopped"
    assert outcome.reason.startswith(disk_guard.STOPPED_FOR_DISK) and "partial roi.trace.gz was deleted" in outcome.reason
    assert not (out / "roi.trace.gz").exists()
    assert outcome.details["costs"]["run"]["host_seconds"] > 0


def test_a_run_is_not_started_on_a_disk_already_below_the_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, campaign_dir = fake_gem5_backend(tmp_path, monkeypatch, lambda _outputs: 0.5)
    spec = smoke_spec()
    out = campaign_dir / "runs" / spec.run_id / "out"
    out.mkdir(parents=True)
    outcome = backend.run(spec, out, campaign_dir)  # type: ignore[attr-defined]
    assert outcome.status == "stopped" and "0.5 GiB free" in outcome.reason
    assert not (campaign_dir / "checkpoints").exists(), "nothing may start: not even the boot checkpoint"


def test_a_stopped_run_is_redone_by_the_next_launch_but_not_by_the_one_that_stopped_it(tmp_path: Path) -> None:
    run = RunDir(tmp_path, "stopped-run")
    run.path.mkdir(parents=True)
    reason = f"{disk_guard.STOPPED_FOR_DISK}: 1.0 GiB free"
    run.attempts_file.write_text(json.dumps([{"attempt": 1, "status": "stopped", "reason": reason}]))
    run.result_file.write_text(json.dumps({"attempt": 1, "status": "stopped", "reason": reason}))
    status = run.status(max_attempts=2)
    assert status.state == State.STOPPED and status.reason == reason
    spec = smoke_spec()
    pending = RunStatus("other", State.PENDING, 0)
    assert runs_to_do([spec, spec], [status, pending], round_number=0) == [spec, spec]
    assert runs_to_do([spec, spec], [status, pending], round_number=1) == [spec]
    assert study_lines(["s", "s"], [status, pending]) == ["  s: 0/2 done, 1 pending, 1 stopped"]


def test_the_traced_runs_disk_needs_are_set_against_the_free_space(tmp_path: Path) -> None:
    floor = DiskFloor(5.0, QUICK_POLL_S, "test floor")
    assert disk_guard.trace_room_lines(0, 0.0, 2, tmp_path, floor, free=lambda _p: 100.0) == []
    fits = disk_guard.trace_room_lines(4, 2 * 8.3 * 1024, 2, tmp_path / "not-yet", floor, free=lambda _p: 45.0)
    assert len(fits) == 1
    assert "the largest 2 predicted traces take 16.6 GiB at once" in fits[0] and f"under {tmp_path}," in fits[0]
    assert "40.0 above the floor of 5 GiB (test floor)" in fits[0]
    crowded = disk_guard.trace_room_lines(2, 2 * 25.0 * 1024, 2, tmp_path, floor, free=lambda _p: 45.0)
    assert len(crowded) == 2 and crowded[1].startswith("warning: they may not fit") and "-j 1" in crowded[1]


def test_a_bad_floor_is_refused_before_any_run_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lockstudy.campaign import gem5_backend

    install_fake_gem5(tmp_path, monkeypatch, TRACE_WRITING_GEM5)
    monkeypatch.setenv(disk_guard.FLOOR_ENV, "lots")
    with pytest.raises(RuntimeError, match=r"the disk guard's floor: \$LOCKSTUDY_MIN_FREE_GIB='lots'"):
        gem5_backend.Gem5Backend().preflight([smoke_spec()])
