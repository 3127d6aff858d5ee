"""Fuzzing campaign files: every file loads into runs a launch accepts, or ends in its problem lines.

A campaign that loads is what `--dry-run` lists, so each of its runs must
be one run.py accepts (gem5-configs/run_plan.py, the launch's own checks)
and whose run spec the host registry accepts; a campaign that does not
load ends in a CampaignError of one `file:field: value: ...` line per
problem. Anything else (another exception, a hang) fails the test.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import budget, run_specs, toml_text, toml_values
from lockstudy import run_spec
from lockstudy.campaign.loader import CampaignError, load_campaign
from lockstudy.paths import ROOT

sys.path.insert(0, str(ROOT / "gem5-configs"))
import run_plan  # noqa: E402

pytestmark = pytest.mark.fuzz

VALID: dict[str, Any] = {
    "campaign": {"name": "fuzz", "max_attempts": 2},
    "defaults": {"resources": {"time_minutes": 10, "memory_gb": 1, "host_cpus": 1}},
    "study": [
        {"name": "bus", "machine": "piii-smp", "cpus": [1, 2], "run": "write1b:threads=1,iterations=10",
         "boot": ["", "lockstudy.spinlock=ticket"], "trace": "classic"},
        {"name": "numa", "machine": "altix-numa", "nodes": 2, "run": ["pft:threads=2,mb=8", "kbench:variant=hbo"], "cpu_model": "o3"},
    ],
}
STUDY_FIELDS = ["name", "machine", "cpus", "nodes", "run", "boot", "trace", "cpu_model", "kernel_build", "repeat", "resources", "colour"]
DOMAIN_VALUES = st.one_of(
    st.sampled_from(["piii-smp", "altix-numa", "pentium9", "smp", "up", "timing", "o3", "off", "protocol", "classic",
                     "lockstudy.spinlock=tas", "nosmp", "lockstudy.run=pft", ""]),
    st.integers(-2, 70),
    st.lists(st.integers(-1, 70), max_size=4),
    run_specs,
    st.lists(run_specs, max_size=3),
)


@st.composite
def campaigns(draw: st.DrawFn) -> dict[str, Any]:
    """The valid campaign with a few fields replaced, removed or added."""
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(0, 4))):
        value = draw(st.one_of(DOMAIN_VALUES, toml_values))
        where = draw(st.sampled_from(["study0", "study1", "campaign", "defaults"]))
        if where.startswith("study"):
            table, key = data["study"][int(where[-1])], draw(st.sampled_from(STUDY_FIELDS))
        elif where == "campaign":
            table, key = data["campaign"], draw(st.sampled_from(["name", "max_attempts", "description", "colour"]))
        else:
            table, key = data["defaults"]["resources"], draw(st.sampled_from(["time_minutes", "memory_gb", "host_cpus", "gpus"]))
        if draw(st.booleans()) and key in table:
            del table[key]
        else:
            table[key] = value
    if draw(st.integers(0, 9)) == 0:  # now and then, a whole table replaced or gone
        key = draw(st.sampled_from(["campaign", "defaults", "study", "extra"]))
        if draw(st.booleans()):
            data.pop(key, None)
        else:
            data[key] = draw(toml_values)
    return data


def launch_accepts(run: Any, tmp_path: Path) -> None:
    """run.py's own checks of the run (the kernel and image stand in as small files)."""
    kernel, image = tmp_path / "vmlinux", tmp_path / "rootfs.ext2"
    kernel.write_bytes(b"\x7fELF")
    image.write_bytes(b"\0")
    argv = ["--machine", run.machine, f"--{run.size_unit}", str(run.size), "--kernel", str(kernel), "--image", str(image),
            "--boot", " ".join(run.boot), "--run", run.run, "--cpu", run.cpu_model, "--trace", run.trace, "--outdir", str(tmp_path)]
    run_plan.make_plan(run_plan.build_parser().parse_args(argv))
    assert run_spec.reasons(run.run) == []


def check_outcome(path: Path, tmp_path: Path) -> None:
    try:
        campaign = load_campaign(path)
    except CampaignError as exc:
        lines = str(exc).splitlines()
        assert lines and all(line.startswith(f"{path}:") for line in lines), lines
        return
    for run in campaign.runs:
        launch_accepts(run, tmp_path)


@budget()
@given(campaigns())
def test_a_campaign_loads_into_runs_a_launch_accepts_or_names_its_problems(tmp_path: Path, data: dict[str, Any]) -> None:
    path = tmp_path / "fuzz.toml"
    path.write_text(toml_text(data))
    check_outcome(path, tmp_path)


@budget()
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)), st.integers(0, 2000))
def test_any_bytes_in_a_campaign_file_end_in_its_problem_lines(tmp_path: Path, junk: bytes, at: int) -> None:
    text = toml_text(VALID).encode()
    path = tmp_path / "fuzz.toml"
    path.write_bytes(text[:at] + junk + text[at:])
    check_outcome(path, tmp_path)
