"""What a run records for the cost model: a gem5 process's host seconds, CPU seconds and peak resident memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lockstudy.campaign.measured import run_measured
from lockstudy.paths import ROOT

sys.path.insert(0, str(Path(__file__).parent))
from fake_gem5 import install_fake_gem5  # noqa: E402

ALLOCATED_MIB = 120


def measured_from_a_small_launcher(tmp_path: Path, *programs: str, prelude: str = "") -> list[dict[str, object]]:
    """run_measured() called from a fresh interpreter, as a campaign worker calls it: the floor is that
    small process's own high-water mark, not this test process's (hundreds of MiB in a full suite).
    `prelude` is code that launcher runs first."""
    launcher = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lockstudy.campaign.measured import run_measured\n"
        f"{prelude}"
        "out = []\n"
        "for i, program in enumerate(sys.argv[2:]):\n"
        "    m = run_measured([sys.executable, '-c', program], Path(sys.argv[1]) / f'child{i}.log')\n"
        "    out.append({'returncode': m.returncode, 'host_seconds': m.host_seconds, 'cpu_seconds': m.cpu_seconds, 'peak': m.peak_rss_mib, 'floor': m.rss_floor_mib})\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", launcher, str(tmp_path), *programs], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def test_peak_memory_is_the_childs_high_water_mark_and_its_status_is_kept(tmp_path: Path) -> None:
    # The child touches ALLOCATED_MIB, frees it and exits non-zero: the peak
    # is still seen (the kernel keeps it), and the status is the child's.
    program = f"x = bytearray({ALLOCATED_MIB} * 1024 * 1024); del x; print('done'); raise SystemExit(3)"
    (measured,) = measured_from_a_small_launcher(tmp_path, program)
    assert measured["returncode"] == 3
    assert measured["floor"] < ALLOCATED_MIB, "the launcher itself must be small for this test to mean anything"
    assert ALLOCATED_MIB <= measured["peak"] < ALLOCATED_MIB * 3
    assert measured["host_seconds"] > 0
    assert (tmp_path / "child0.log").read_text().strip() == "done"


def test_cpu_time_is_the_childs_own_and_apart_from_its_wall_time(tmp_path: Path) -> None:
    """A child that sleeps has wall time and no CPU time; one that computes has the CPU time it used,
    however many other processes share the host's cores (then its wall time is longer)."""
    sleeper, spinner = measured_from_a_small_launcher(
        tmp_path,
        "import time; time.sleep(0.5)",
        "import time\nwhile time.process_time() < 0.3: pass",
    )
    assert sleeper["host_seconds"] >= 0.5 and sleeper["cpu_seconds"] < 0.25
    assert spinner["cpu_seconds"] >= 0.3
    assert spinner["cpu_seconds"] <= spinner["host_seconds"] * 1.05


def test_each_child_is_measured_on_its_own(tmp_path: Path) -> None:
    """A large child measured first does not make a small one look large (RUSAGE_CHILDREN would)."""
    big, small = measured_from_a_small_launcher(tmp_path, f"x = bytearray({ALLOCATED_MIB} * 1024 * 1024)", "pass")
    assert big["peak"] is not None and big["peak"] >= ALLOCATED_MIB
    assert small["returncode"] == 0
    assert small["peak"] is None or small["peak"] < ALLOCATED_MIB


def test_a_peak_under_the_launchers_own_is_recorded_as_unknown(tmp_path: Path) -> None:
    """This test process is the launcher here; a child smaller than it cannot be told from the floor."""
    ballast = b"\x01" * (2 * ALLOCATED_MIB * 1024 * 1024)  # written, so resident: make sure this launcher's own high-water mark is above the child's
    measured = run_measured([sys.executable, "-c", "pass"], tmp_path / "small.log")
    assert len(ballast) and measured.peak_rss_mib is None
    assert measured.rss_floor_mib >= 2 * ALLOCATED_MIB
    assert measured.as_record()["peak_rss_mib"] is None
    assert "at most" in measured.describe_peak()


def test_what_starting_the_child_costs_the_launcher_is_under_the_floor(tmp_path: Path) -> None:
    """Starting a child grows the launcher's own high-water mark (here by ALLOCATED_MIB, in a real
    launcher by a few pages) before the child execs and inherits it: the floor is read after that."""
    growing_popen = (
        "import subprocess\n"
        "real_popen = subprocess.Popen\n"
        "kept = []\n"
        "def growing_popen(*args, **kwargs):\n"
        f"    kept.append(b'\\x01' * ({ALLOCATED_MIB} * 1024 * 1024))\n"
        "    return real_popen(*args, **kwargs)\n"
        "subprocess.Popen = growing_popen\n"
    )
    (measured,) = measured_from_a_small_launcher(tmp_path, "pass", prelude=growing_popen)
    assert measured["floor"] >= ALLOCATED_MIB, "the growth before the child's exec is the launcher's, so under the floor"
    assert measured["peak"] is None, f"a child smaller than its launcher was recorded as {measured['peak']} MiB"


FAKE_GEM5 = f"""\
import json, sys
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--outdir") + 1])
out.mkdir(parents=True, exist_ok=True)
held = bytearray({ALLOCATED_MIB} * 1024 * 1024)
if "--checkpoint-out" in args:
    Path(args[args.index("--checkpoint-out") + 1]).mkdir(parents=True)
(out / "result.json").write_text(json.dumps({{"status": "ok", "reason": ""}}))
"""


def test_the_gem5_backend_records_each_processes_costs(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A boot's costs go into its checkpoint's record and the run's result; a run on that checkpoint has only its own."""
    from lockstudy.campaign import gem5_backend
    from lockstudy.campaign.loader import load_campaign
    from lockstudy.paths import ROOT

    install_fake_gem5(tmp_path, monkeypatch, FAKE_GEM5)
    first, second = load_campaign(ROOT / "campaigns" / "smoke.toml").runs[:2]  # same size: one checkpoint
    campaign_dir = tmp_path / "campaign"
    outcomes = []
    for spec in (first, second):
        out = campaign_dir / "runs" / spec.run_id / "out"
        out.mkdir(parents=True)
        outcomes.append(gem5_backend.Gem5Backend().run(spec, out, campaign_dir))
    built, reused = (outcome.details["costs"] for outcome in outcomes)
    assert [outcome.status for outcome in outcomes] == ["ok", "ok"]
    assert built["run"]["host_seconds"] > 0
    for record in (built["run"], built["checkpoint_built"]):
        # This test process launches the fake gem5: below its own high-water mark a peak is unknown
        # (measured.py); the measurement itself is tested from a small launcher above.
        if record["rss_floor_mib"] < ALLOCATED_MIB:
            assert record["peak_rss_mib"] >= ALLOCATED_MIB
        else:
            assert record["peak_rss_mib"] is None or record["peak_rss_mib"] >= ALLOCATED_MIB
    assert reused["checkpoint_built"] is None
    assert set(built["run"]) == {"host_seconds", "cpu_seconds", "peak_rss_mib", "rss_floor_mib", "host_cpu_model", "host_cpu_count", "host_load_1min"}
    (record,) = (campaign_dir / "checkpoints").glob("*.json")
    assert json.loads(record.read_text())["costs"] == built["checkpoint_built"]
