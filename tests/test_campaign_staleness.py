"""Done runs made on another machine file than today's are named, not silently mixed with new ones."""

from __future__ import annotations

import json
from pathlib import Path

from lockstudy.campaign import artifacts
from lockstudy.campaign.loader import load_campaign
from lockstudy.campaign.staleness import stale_lines, stale_runs
from lockstudy.campaign.store import CampaignStore, RunStatus, State
from lockstudy.paths import ROOT


def done_with_machine_sha(store: CampaignStore, run_id: str, sha: str) -> None:
    run = store.run_dir(run_id)
    (run.path / "out").mkdir(parents=True)
    (run.path / "out" / "result.json").write_text(json.dumps({"provenance": {"machine": {"sha256": sha}}}))


def test_a_done_run_of_another_machine_file_is_named_with_what_differs(tmp_path: Path) -> None:
    campaign = load_campaign(ROOT / "campaigns" / "smoke.toml")
    store = CampaignStore("smoke", tmp_path)
    first, second = campaign.runs[0], campaign.runs[1]
    today = artifacts.machine_file(first.machine).identity
    done_with_machine_sha(store, first.run_id, "0" * 64)  # recalibrated since
    done_with_machine_sha(store, second.run_id, today)
    statuses = [RunStatus(first.run_id, State.DONE, 1), RunStatus(second.run_id, State.DONE, 1)]
    stale = stale_runs([first, second], statuses, store)
    assert [(run.run_id, run.differs) for run in stale] == [(first.run_id, (f"machine file {first.machine}.toml",))]
    lines = stale_lines(stale, store.path)
    assert lines[0].startswith("note: 1 done run(s) ran on another machine file") and "--results" in lines[0]
    # A run that is not done is not compared; nor is a run without a gem5 result (QEMU).
    assert stale_runs([first], [RunStatus(first.run_id, State.FAILED, 1)], store) == []
    assert stale_runs([campaign.runs[2]], [RunStatus(campaign.runs[2].run_id, State.DONE, 1)], store) == []


def done_with_extras(store: CampaignStore, run_id: str, extras: dict[str, int] | None) -> None:
    run = store.run_dir(run_id)
    (run.path / "out").mkdir(parents=True)
    provenance = {} if extras is None else {"gem5_extras": extras}
    (run.path / "out" / "result.json").write_text(json.dumps({"provenance": provenance}))


def test_a_chi_run_made_without_the_locked_rmw_extra_is_named(tmp_path: Path) -> None:
    """CHI runs from before gem5-extras/chi-x86-locked-rmw lost locked-RMW updates: they are not mixed with new ones."""
    campaign = load_campaign(ROOT / "campaigns" / "handoffs.toml")
    store = CampaignStore("handoffs", tmp_path)
    chi = [run for run in campaign.runs if run.machine == "altix-numa"]
    bus = next(run for run in campaign.runs if run.machine == "piii-smp")
    done_with_extras(store, chi[0].run_id, None)  # result.json from before run.py recorded extras
    done_with_extras(store, chi[1].run_id, {"chi-x86-locked-rmw": 1})
    done_with_extras(store, bus.run_id, None)  # classic caches: no extra needed
    runs = [chi[0], chi[1], bus]
    stale = stale_runs(runs, [RunStatus(run.run_id, State.DONE, 1) for run in runs], store)
    assert [(run.run_id, run.differs) for run in stale] == [(chi[0].run_id, ("gem5 without the chi-x86-locked-rmw extra",))]


def done_with_kernel(store: CampaignStore, run_id: str, build_id: str, vmlinux_sha256: str) -> None:
    run = store.run_dir(run_id)
    (run.path / "out").mkdir(parents=True)
    kernel = {"sha256": vmlinux_sha256, "build_info": {"build_id": build_id}}
    (run.path / "out" / "result.json").write_text(json.dumps({"provenance": {"kernel": kernel}}))


def test_a_kernel_of_another_build_id_is_current_when_it_booted_todays_vmlinux(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Debian re-packaged linux-source-6.1 (6.1.192-2 to -3): a new build id, the same vmlinux byte for byte."""
    campaign = load_campaign(ROOT / "campaigns" / "smoke.toml")
    store = CampaignStore("smoke", tmp_path)
    same_binary, other_binary = campaign.runs[0], campaign.runs[1]
    build = same_binary.kernel_build
    assert other_binary.kernel_build == build
    monkeypatch.setattr(artifacts, "kernel", lambda name, kind: artifacts.Artifact(tmp_path / kind, "today-build-id"))
    monkeypatch.setattr(artifacts, "kernel_binary_sha256", lambda name: "a" * 64)
    done_with_kernel(store, same_binary.run_id, "yesterday-build-id", "a" * 64)
    done_with_kernel(store, other_binary.run_id, "yesterday-build-id", "b" * 64)
    runs = [same_binary, other_binary]
    stale = stale_runs(runs, [RunStatus(run.run_id, State.DONE, 1) for run in runs], store)
    assert [(run.run_id, run.differs) for run in stale] == [(other_binary.run_id, (f"kernel build {build}",))]
