"""Done runs made on another machine file than today's are named, not silently mixed with new ones."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

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


def done_with_image(store: CampaignStore, run_id: str, content_hash: str, inputs: dict[str, str]) -> None:
    run = store.run_dir(run_id)
    (run.path / "out").mkdir(parents=True)
    image = {"build_info": {"content_hash": content_hash, "config": {"size_mib": 512}, "debian_packages": {"dbench": "4.0-2.1"},
                            "inputs": inputs}}  # fmt: skip
    (run.path / "out" / "result.json").write_text(json.dumps({"provenance": {"image": image}}))


def test_an_image_of_other_bytes_is_current_for_a_run_whose_testcases_it_did_not_change(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """kbench's source changed (lock=rwsem): the image is another, but a pft run ran the same programs,
    /init and packages; a kbench run, or one of an image whose shared sources changed, did not."""
    from lockstudy.campaign import spec as campaign_spec

    campaign = load_campaign(ROOT / "campaigns" / "smoke.toml")
    store = CampaignStore("smoke", tmp_path)
    base = campaign.runs[0]
    pft, kbench, shared = (dataclasses.replace(base, run=run, repeat=index)
                           for index, run in enumerate(["pft:threads=2", "kbench:duration_ms=10", "pft:threads=4"]))  # fmt: skip
    today = {"workloads/tc_pft.c": "p1", "workloads/tc_kbench.c": "k2", "workloads/json.c": "j1", "disk-image/overlay/init": "i1"}
    (tmp_path / "image").mkdir()
    (tmp_path / "image" / "build-info.json").write_text(json.dumps(
        {"content_hash": "today", "config": {"size_mib": 512}, "debian_packages": {"dbench": "4.0-2.1"}, "inputs": today}))
    monkeypatch.setattr(artifacts, "disk_image", lambda: artifacts.Artifact(tmp_path / "image" / "rootfs.ext2", "today"))
    monkeypatch.setattr("lockstudy.campaign.staleness.build_dir", lambda: tmp_path)
    yesterday = dict(today, **{"workloads/tc_kbench.c": "k1"})
    done_with_image(store, pft.run_id, "yesterday", yesterday)
    done_with_image(store, kbench.run_id, "yesterday", yesterday)
    done_with_image(store, shared.run_id, "older", dict(yesterday, **{"workloads/json.c": "j0"}))
    runs = [pft, kbench, shared]
    assert all(isinstance(run, campaign_spec.RunSpec) for run in runs)
    stale = stale_runs(runs, [RunStatus(run.run_id, State.DONE, 1) for run in runs], store)
    assert [(run.run_id, run.differs) for run in stale] == [(kbench.run_id, ("disk image",)), (shared.run_id, ("disk image",))]


def test_versions_of_an_input_declared_the_same_count_as_one(tmp_path: Path) -> None:
    """image_inputs.toml: kbench's source before and after lock=rwsem drives a spinlock run the same way;
    a version it does not list is another image for kbench's runs."""
    from lockstudy.campaign.staleness import image_identity_for, load_same_runs

    old, new, other = "a" * 64, "b" * 64, "c" * 64
    declared = tmp_path / "image_inputs.toml"
    declared.write_text(f'[[same_runs]]\ninput = "workloads/tc_kbench.c"\nsha256 = ["{old}", "{new}"]\nwhy = "the same syscalls"\n')
    same = load_same_runs(declared)
    kbench = frozenset({"kbench"})

    def identity(sha: str) -> str | None:
        return image_identity_for({"config": {}, "inputs": {"workloads/tc_kbench.c": sha, "workloads/json.c": "j"}}, kbench, same)

    assert identity(old) == identity(new) != identity(other)
    assert load_same_runs()  # the committed file loads


@pytest.mark.parametrize(("text", "message"), [
    ('[[same_runs]]\ninput = "x"\nsha256 = ["' + "a" * 64 + '"]\nwhy = "w"\n', r"same_runs\[0\].sha256: expected two or more sha256"),
    ('[[same_runs]]\ninput = "x"\nsha256 = ["' + "a" * 64 + '", "B"]\nwhy = "w"\n', r"same_runs\[0\].sha256: expected two or more"),
    ('[[same_runs]]\ninput = "x"\nsha256 = ["' + "a" * 64 + '", "' + "b" * 64 + '"]\nwhy = " "\n', r"same_runs\[0\].why: empty"),
    ('[[same_runs]]\ninput = "x"\nsha = []\n', r"same_runs\[0\]: unknown field\(s\) sha"),
    ("same_runs = 3\n", r"same_runs: expected list"),
])  # fmt: skip
def test_a_bad_image_inputs_file_names_the_field(tmp_path: Path, text: str, message: str) -> None:
    from lockstudy.campaign.staleness import load_same_runs
    from lockstudy.files import DataFileError

    path = tmp_path / "image_inputs.toml"
    path.write_text(text)
    with pytest.raises(DataFileError, match=message):
        load_same_runs(path)
