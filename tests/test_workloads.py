"""The static workloads run natively: every testcase with 1 and 2 copies, self-checks, errors."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lockstudy import workloads
from lockstudy.guest_output import parse_console

# Small windows: each run takes well under a second natively.
SMALL_ARGS: dict[str, list[str]] = {
    "write1b": ["iterations=2000", "warmup=10"],
    "fsmix": ["iterations=200", "warmup=8", "files=8", "size=2048"],
    "pft": ["iterations=2", "warmup=1", "mb=8"],
    "mmapsem": ["iterations=40", "warmup=2", "forkevery=8"],
    "samefile": ["iterations=300", "warmup=10"],
    "cal_latency": ["iterations=4", "warmup=1", "kib=64", "steps=256"],
    "cal_c2c": ["iterations=32", "warmup=2"],
    "cal_rmw": ["iterations=4", "warmup=1", "reps=64"],
    "cal_contend": ["iterations=8", "warmup=1", "reps=16"],
    "cal_stream": ["iterations=2", "warmup=1", "kib=256"],
}
OPS_PER_ITERATION = {"write1b": 1, "mmapsem": 1, "samefile": 4}
COPY_MODES = ["threads=1", "threads=2", "processes=2"]
THREADS_ONLY = {"pft", "cal_contend", "cal_stream"}
# The calibration testcases that measure one copy, or one pair of CPUs.
ONLY_MODES = {"cal_latency": ["threads=1"], "cal_rmw": ["threads=1"], "cal_c2c": ["threads=2"]}


@pytest.fixture(scope="session")
def programs() -> Path:
    return workloads.build(echo=False)


def test_every_testcase_has_small_arguments() -> None:
    assert sorted(SMALL_ARGS) == workloads.native_testcases()
    assert set(workloads.testcases()) <= set(workloads.programs())


def cases() -> list[tuple[str, str]]:
    return [
        (tc, mode)
        for tc in sorted(SMALL_ARGS)
        for mode in ONLY_MODES.get(tc, COPY_MODES)
        if not (tc in THREADS_ONLY and mode.startswith("processes"))
    ]


@pytest.mark.parametrize(("testcase", "mode"), cases())
def test_testcase_runs_and_checks_itself(programs: Path, tmp_path: Path, testcase: str, mode: str) -> None:
    args = [mode, *SMALL_ARGS[testcase]]
    if testcase in ("write1b", "fsmix", "samefile"):
        args.append(f"dir={tmp_path}")
    result = workloads.run_native(testcase, args, cwd=tmp_path).result()
    copies = int(mode.split("=")[1])
    iterations = int(next(a for a in args if a.startswith("iterations=")).split("=")[1])
    assert result["testcase"] == testcase
    assert result["status"] == "ok"
    assert result["copies"] == copies
    assert result["mode"] == mode.split("=")[0]
    assert result["iterations"] == iterations
    assert len(result["copy_ops"]) == copies and sum(result["copy_ops"]) == result["ops"]
    assert result["wall_s"] > 0 and result["ops_per_s"] > 0
    assert result["m5ops"] == "off"
    if testcase in OPS_PER_ITERATION:
        assert result["ops"] == copies * iterations * OPS_PER_ITERATION[testcase]
    # each testcase cleans up after itself
    assert list(tmp_path.iterdir()) == []


def test_pft_reports_the_seed_columns(programs: Path) -> None:
    result = workloads.run_native("pft", ["threads=2", "mb=8", "iterations=2", "warmup=0"]).result()
    columns = result["metrics"]["seed_columns"]
    assert list(columns) == ["Gb", "Rep", "Threads", "User", "System", "Wall", "flt/cpu/s", "fault/wsec"]
    pages = 8 * 1024 * 1024 // result["metrics"]["page_bytes"]
    assert result["ops"] == pages * 2
    assert columns["Rep"] == 2 and columns["Threads"] == 2
    assert result["counters"]["window_minor_faults"] >= result["ops"]


def test_mmapsem_reports_jobs_per_minute(programs: Path) -> None:
    result = workloads.run_native("mmapsem", ["threads=2", "iterations=20", "forkevery=5"]).result()
    assert result["metrics"]["jobs_per_minute"] == pytest.approx(result["ops"] * 60 / result["wall_s"], rel=1e-3)
    assert result["counters"]["forks"] > 0


def test_seconds_window(programs: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    result = workloads.run_native("samefile", ["threads=2", "seconds=0.3", f"dir={tmp_path}"]).result()
    assert result["window"] == "seconds" and result["seconds"] == pytest.approx(0.3)
    assert 0.25 < result["wall_s"] < 2 and time.monotonic() - started < 10
    assert result["ops"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "expected key=value"),
        (["nosuch=1"], "unknown parameter 'nosuch'"),
        (["threads=0"], "out of range"),
        (["threads=2", "processes=2"], "not both"),
        (["iterations=5", "seconds=1"], "not both"),
        (["seconds=abc"], "seconds=abc"),
        (["m5ops=magic"], "unknown form 'magic'"),
    ],
)
def test_bad_arguments_are_named(programs: Path, args: list[str], message: str) -> None:
    run = workloads.run_native("write1b", args)
    assert run.returncode != 0 and run.stdout == ""
    assert message in run.stderr


def test_threads_only_testcase_refuses_processes(programs: Path) -> None:
    run = workloads.run_native("pft", ["processes=2"])
    assert run.returncode != 0 and "threads only" in run.stderr


def test_failing_process_copy_ends_the_run(programs: Path, tmp_path: Path) -> None:
    """A copy process that fails must not leave the others waiting at a barrier."""
    started = time.monotonic()
    run = workloads.run_native("write1b", ["processes=2", f"dir={tmp_path}/missing"], timeout=30)
    assert run.returncode != 0 and "No such file or directory" in run.stderr
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("testcase", sorted(SMALL_ARGS))
def test_help_documents_every_parameter(programs: Path, testcase: str) -> None:
    run = workloads.run_native(testcase, ["--help"])
    assert run.returncode == 0
    assert "seed" in run.stdout and "threads=N" in run.stdout and "iterations=N" in run.stdout
    check = workloads.run_native(testcase, [*SMALL_ARGS[testcase], "--check"])
    assert check.returncode == 0 and check.stdout == ""


def test_runtimed_times_dd_and_checks_the_size(programs: Path, tmp_path: Path) -> None:
    out = tmp_path / "f"
    args = [
        "name=dd1b", "seed=001", f"log={tmp_path}/dd.log", "ops=3000", "ops_unit=write",
        f"expect_size={out}:3000", "--", "busybox", "dd", "if=/dev/zero", f"of={out}", "bs=1", "count=3000",
    ]  # fmt: skip
    result = workloads.run_native("runtimed", args).result()
    assert result["testcase"] == "dd1b" and result["ops"] == 3000 and result["exit_status"] == 0
    bad = workloads.run_native("runtimed", [a.replace(":3000", ":3001") for a in args])
    assert bad.returncode != 0 and "expected 3001" in bad.stderr


def test_runtimed_metric_and_failure(programs: Path, tmp_path: Path) -> None:
    log = f"log={tmp_path}/x.log"
    ok = workloads.run_native("runtimed", ["name=x", log, "metric=tp:Throughput", "--", "sh", "-c", "echo 'Throughput 12.5 MB/sec'"])
    assert ok.result()["metrics"] == {"tp": 12.5}
    missing = workloads.run_native("runtimed", ["name=x", log, "metric=tp:Throughput", "--", "true"])
    assert missing.returncode != 0 and "no number after 'Throughput'" in missing.stderr
    failing = workloads.run_native("runtimed", ["name=x", log, "--", "sh", "-c", "echo boom; exit 3"])
    assert failing.returncode != 0 and "boom" in failing.stderr


def test_a_testcase_asks_for_the_detailed_cpu_before_its_set_up(programs: Path, tmp_path: Path) -> None:
    # /init validates a run spec with --check after a restore, still on the fast-forward CPU: that must
    # issue no m5 op. The run itself issues one (m5 switchcpu) before its set-up, which must run on the
    # detailed CPU. Natively the magic instruction is an invalid opcode: the program dies of SIGILL
    # before write1b's set-up has created its file (at the ROI's work-begin, the file would be there).
    args = [f"dir={tmp_path}", "iterations=10", "m5ops=inst"]
    checked = workloads.run_native("write1b", [*args, "--check"])
    assert checked.returncode == 0, checked.stderr
    ran = workloads.run_native("write1b", args)
    assert ran.returncode == -signal.SIGILL and ran.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_m5_tool_is_a_no_op_when_off(programs: Path) -> None:
    assert workloads.run_native("m5", ["workbegin"]).returncode == 0
    assert workloads.run_native("m5", ["m5ops=off", "exit"]).returncode == 0
    assert workloads.run_native("m5", ["nosuchop"]).returncode == 2
    assert workloads.run_native("m5", ["m5ops=bogus", "exit"]).returncode == 1


def test_programs_are_static(programs: Path) -> None:
    for name in workloads.programs():
        head = (programs / name).read_bytes()[:4096]
        assert head.startswith(b"\x7fELF")
        assert b"ld-linux" not in head, f"{name} asks for a dynamic loader"


def test_sources_compile_without_warnings(tmp_path: Path) -> None:
    result = subprocess.run(
        ["make", "-s", "-C", str(workloads.SOURCE_DIR), f"O={tmp_path}", "CFLAGS=-O2 -Werror", "-j2"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr


def test_json_is_one_line(programs: Path, tmp_path: Path) -> None:
    run = workloads.run_native("fsmix", ["iterations=10", f"dir={tmp_path}"])
    assert run.returncode == 0 and run.stdout.count("\n") == 1
    json.loads(run.stdout)


def test_m5_magic_instructions_are_compiled_in(programs: Path) -> None:
    """0F 04 + 16-bit function code: work begin (0x5a) and end (0x5b) mark the ROI."""
    for name in [*workloads.testcases(), "runtimed"]:
        body = (programs / name).read_bytes()
        assert b"\x0f\x04\x5a\x00" in body and b"\x0f\x04\x5b\x00" in body, name
    assert b"\x0f\x04\x21\x00" in (programs / "m5").read_bytes()  # exit
    assert b"\x0f\x04\x43\x00" in (programs / "m5").read_bytes()  # checkpoint
    assert b"\x0f\x04\x50\x00" in (programs / "m5").read_bytes()  # readfile


def test_m5_readfile_prints_nothing_when_off(programs: Path) -> None:
    """Without gem5 (m5ops off) there is no file to read: no output, exit 0,
    which /init reads as "keep the command line's run spec"."""
    for args in (["readfile"], ["m5ops=off", "readfile"]):
        run = workloads.run_native("m5", args)
        assert (run.returncode, run.stdout, run.stderr) == (0, "", ""), args


def test_under_init_a_testcase_prints_its_own_result_block(programs: Path, tmp_path: Path) -> None:
    """/init names the item (LOCKSTUDY_ITEM): the program wraps its JSON line in the console protocol's
    result block itself (workloads/report.h). No lock registry or lock events here: the host has neither."""
    env = {"PATH": "/usr/bin:/bin", "LOCKSTUDY_ITEM": "fsmix"}
    run = workloads.run_native("fsmix", ["iterations=10", f"dir={tmp_path}"], env=env)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "LOCKSTUDY-RESULT-BEGIN fsmix" and lines[2] == "LOCKSTUDY-RESULT-END" and len(lines) == 3
    assert json.loads(lines[1])["testcase"] == "fsmix"
    parsed = parse_console(run.stdout)
    assert [r.testcase for r in parsed.parsed] == ["fsmix"]


@pytest.mark.parametrize("program", ["write1b", "runtimed"])
def test_the_last_item_under_gem5_ends_the_run_itself(programs: Path, tmp_path: Path, program: str) -> None:
    """LOCKSTUDY_END_RUN (the last item, m5 ops on): after its blocks the program prints the run's
    LOCKSTUDY-DONE line and issues m5 exit itself, so that no fork or exec runs after the last ROI.
    With m5 ops off the exit is a no-op and the program returns."""
    env = {"PATH": "/usr/bin:/bin", "LOCKSTUDY_ITEM": "x", "LOCKSTUDY_END_RUN": "3"}
    args = {"write1b": ["iterations=10", f"dir={tmp_path}"], "runtimed": ["name=x", f"log={tmp_path}/x.log", "--", "true"]}[program]
    run = workloads.run_native(program, args, env=env)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "LOCKSTUDY-RESULT-BEGIN x" and lines[2] == "LOCKSTUDY-RESULT-END" and len(lines) == 4
    assert re.fullmatch(r"LOCKSTUDY-DONE status=ok reason=none results=3 uptime=[0-9.]+", lines[3])
    done = parse_console(run.stdout).done
    assert done is not None and done.fields["results"] == "3"


def test_a_failed_last_item_claims_nothing(programs: Path, tmp_path: Path) -> None:
    """A testcase that fails prints no block and no LOCKSTUDY-DONE: /init reports the failure."""
    env = {"PATH": "/usr/bin:/bin", "LOCKSTUDY_ITEM": "x", "LOCKSTUDY_END_RUN": "1"}
    run = workloads.run_native("runtimed", ["name=x", f"log={tmp_path}/x.log", "--", "false"], env=env)
    assert run.returncode != 0 and run.stdout == ""
