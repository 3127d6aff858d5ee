"""A launch runs on the inputs it started with: a run whose kernel, image or machine file changed under it is not run."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from lockstudy.campaign import artifacts, frozen_inputs, worker
from lockstudy.campaign.backends import BACKENDS, Outcome
from lockstudy.campaign.loader import load_campaign
from lockstudy.campaign.spec import RunSpec
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.paths import ROOT

SMOKE = ROOT / "campaigns" / "smoke.toml"


class RecordingBackend:
    """Runs nothing; leaves a mark where the run would have run."""

    name = "recording"

    def preflight(self, specs: list[RunSpec]) -> None:
        pass

    def run(self, spec: RunSpec, outdir: Path, campaign_dir: Path) -> Outcome:
        (outdir / "ran").write_text(spec.run_id)
        return Outcome("ok")


def use_image(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, identity: str) -> None:
    """Stand-ins for the built inputs: a kernel, and an image of this identity."""
    monkeypatch.setattr(artifacts, "kernel", lambda build, kind: artifacts.Artifact(tmp_path / "vmlinux", "kernel-1"))
    monkeypatch.setattr(artifacts, "disk_image", lambda: artifacts.Artifact(tmp_path / "rootfs.ext2", identity))


def run_one_apart(store: CampaignStore, spec: RunSpec) -> None:
    """worker.run_one in a forked child: it takes signals and the process group, which pytest must keep."""
    child = multiprocessing.get_context("fork").Process(target=worker.run_one, args=(store.path, spec.run_id, "recording"))
    child.start()
    child.join(60)
    assert child.exitcode is not None, "the worker did not end"


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[CampaignStore, list[RunSpec]]:
    monkeypatch.setitem(BACKENDS, "recording", RecordingBackend)
    specs = load_campaign(SMOKE).runs[:2]
    store = CampaignStore("smoke", tmp_path / "results")
    store.prepare(SMOKE, specs)
    return store, specs


def test_a_run_whose_image_changed_since_the_launch_is_stopped_unrun(runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, (first, second) = runs
    use_image(monkeypatch, tmp_path, "a277954a" + "0" * 56)
    frozen_inputs.record_launch(store.path, [first, second])
    recorded = json.loads((store.path / frozen_inputs.LAUNCH_FILE).read_text())["inputs"]
    assert recorded["image"].startswith("a277954a") and recorded[f"kernel:{first.kernel_build}"] == "kernel-1"
    assert recorded[f"machine:{first.machine}"] == artifacts.machine_file(first.machine).identity

    run_one_apart(store, first)  # nothing changed: it runs
    assert (store.run_dir(first.run_id).out / "ran").is_file()

    use_image(monkeypatch, tmp_path, "0e25de60" + "0" * 56)  # something rebuilt the image under the launch
    run_one_apart(store, second)
    assert not (store.run_dir(second.run_id).out / "ran").exists(), "the run must not run on another image"
    result = json.loads(store.run_dir(second.run_id).result_file.read_text())
    assert result["status"] == "stopped"
    assert "disk image (a277954a0000… at the launch, 0e25de600000… now)" in result["reason"]
    states = {s.run_id: s.state for s in store.statuses([first, second], 2)}
    assert states == {first.run_id: State.DONE, second.run_id: State.STOPPED}  # the next launch redoes it


def test_without_a_launch_record_a_run_is_not_checked(runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started by an older launcher (no launch.json) runs as before."""
    store, (first, _) = runs
    use_image(monkeypatch, tmp_path, "1" * 64)
    assert frozen_inputs.changed_inputs(store.path, first) == []
    run_one_apart(store, first)
    assert (store.run_dir(first.run_id).out / "ran").is_file()


def test_a_machine_file_or_kernel_that_changed_is_named(runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, (first, _) = runs
    use_image(monkeypatch, tmp_path, "2" * 64)
    frozen_inputs.record_launch(store.path, [first])
    launch = json.loads((store.path / frozen_inputs.LAUNCH_FILE).read_text())
    launch["inputs"][f"machine:{first.machine}"] = "3" * 64
    launch["inputs"][f"kernel:{first.kernel_build}"] = "kernel-0"
    (store.path / frozen_inputs.LAUNCH_FILE).write_text(json.dumps(launch))
    changed = frozen_inputs.changed_inputs(store.path, first)
    assert changed[0].startswith(f"machine file {first.machine}.toml (333333333333… at the launch, ")
    assert changed[1] == f"kernel build {first.kernel_build} (kernel-0… at the launch, kernel-1… now)"
