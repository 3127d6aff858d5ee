"""The examples of the issue that asked for one validation path: each fails on the code before it.

A dry-run refuses what a launch refuses (machine sizes, testcase
parameters, unknown testcases), a file's mistakes come all at once, and
`analyze` on a stats.txt that lacks a core stat says so in one line.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from analysis import synthetic
from lockstudy.paths import ROOT

RUN_SH = str(ROOT / "run.sh")
HEADER = """\
[campaign]
name = "examples"

[defaults.resources]
time_minutes = 10
memory_gb = 1
host_cpus = 1
"""


def campaign(tmp_path: Path, studies: str) -> Path:
    path = tmp_path / "examples.toml"
    path.write_text(HEADER + textwrap.dedent(studies))
    return path


def dry_run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RUN_SH, "campaign", str(path), "--dry-run"], capture_output=True, text=True, timeout=120)


def refused(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The problem lines of a refused command, checked to be only that: no traceback, no runs listed."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    assert "run(s)" not in result.stdout
    return [line.removeprefix("error: ") for line in result.stderr.splitlines()]


@pytest.mark.parametrize(
    ("study", "expected"),
    [
        pytest.param(
            'machine = "piii-smp"\ncpus = [2, 3, 64]\nrun = "write1b:threads=1,iterations=100"',
            ["study[0].cpus: 3: piii-smp has no size of 3 cpus (cpus: 1, 2, 4, 8)",
             "study[0].cpus: 64: piii-smp has no size of 64 cpus (cpus: 1, 2, 4, 8)"],
            id="a size the machine file does not have",
        ),
        pytest.param(
            'machine = "piii-smp"\ncpus = 2\nrun = "write1b:threads=1,iterations=-5"',
            ["study[0].run: write1b:threads=1,iterations=-5: write1b: iterations=-5 is not a whole number "
             "(a whole number in [1, 18446744073709551615])"],
            id="a negative iteration count",
        ),
        pytest.param(
            'machine = "piii-smp"\ncpus = 2\nrun = "nosuchtest:x=1"',
            ["study[0].run: nosuchtest:x=1: unknown testcase 'nosuchtest' "
             "(testcases: cal_c2c, cal_contend, cal_latency, cal_rmw, cal_stream, dbench, dd1b, fsmix, kbench, mmapsem, "
             "pft, samefile, write1b)"],
            id="an unknown testcase",
        ),
    ],
)
def test_dry_run_refuses_what_a_launch_refuses(tmp_path: Path, study: str, expected: list[str]) -> None:
    path = campaign(tmp_path, f'[[study]]\nname = "example"\n{study}\n')
    assert refused(dry_run(path)) == [f"{path}:{line}" for line in expected]


def test_a_campaign_with_several_mistakes_reports_them_all_in_one_run(tmp_path: Path) -> None:
    path = campaign(tmp_path, """
        [[study]]
        name = "first"
        machine = "piii-smp"
        cpus = [3, 4]
        run = ["write1b:threads=1,iterations=-5", "nosuchtest:x=1"]
        cpu_model = "pentium"

        [[study]]
        name = "second"
        machine = "altix-numa"
        nodes = 2
        trace = "classic"
        run = "pft:threads=2,mb=0"
        colour = "red"
    """)
    lines = refused(dry_run(path))
    assert len(lines) == 7, lines
    for field in ("study[0].cpus: 3", "study[0].run: write1b", "study[0].run: nosuchtest", "study[0].cpu_model: pentium",
                  "study[1].trace: classic", "study[1].run: pft:threads=2,mb=0", "study[1].colour: red"):
        assert sum(line.startswith(f"{path}:{field}") for line in lines) == 1, (field, lines)


def test_a_launch_refuses_what_the_dry_run_refuses_with_the_same_lines(tmp_path: Path) -> None:
    path = campaign(tmp_path, """
        [[study]]
        name = "sizes"
        machine = "piii-smp"
        cpus = 64
        run = "nosuchtest:x=1"
    """)
    expected = refused(dry_run(path))
    for executor in ("local", "slurm", "qemu"):
        launch = subprocess.run([RUN_SH, "campaign", str(path), "--executor", executor, "--results", str(tmp_path / "r")],
                                capture_output=True, text=True, timeout=120)
        assert refused(launch) == expected
    report = subprocess.run([RUN_SH, "report", str(path), "--results", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert refused(report) == expected
    assert not (tmp_path / "r").exists()


def test_analyze_on_a_stats_file_lacking_a_core_stat_says_so_in_one_line(tmp_path: Path) -> None:
    run = tmp_path / "smp-a"
    synthetic.write_run(run, "piii-smp", 2, rois=1, seed=1)
    stats = run / "stats.txt"
    stats.write_text("".join(line for line in stats.read_text().splitlines(keepends=True) if not line.startswith("simSeconds ")))
    result = subprocess.run([RUN_SH, "analyze", str(tmp_path), "--jobs", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        f"analyze: {stats}: dump 0 (lines 2-{len(stats.read_text().splitlines())}): simSeconds is absent, and gem5 prints it "
        "even when zero (it is not an omitted-when-zero family of analysis/data/gem5_stats.toml); nothing written"
    ]
    assert not (tmp_path / "analysis").exists()
