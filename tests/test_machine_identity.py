"""A machine is identified by its content: a comment edit keeps its runs current, a value edit makes them stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockstudy.campaign import artifacts, machine_versions
from lockstudy.campaign.loader import load_campaign
from lockstudy.campaign.machines import machine_module
from lockstudy.campaign.staleness import differences, made_with
from lockstudy.paths import ROOT

MACHINES = ROOT / "gem5-configs" / "machines"
PIII = MACHINES / "piii-smp.toml"
VALUE_LINE = 'clock = "700MHz"'


def commented(text: str) -> str:
    """The same machine with a comment added, a value explained and the blank lines changed."""
    assert VALUE_LINE in text
    return "# a source cited at the top\n\n" + text.replace(VALUE_LINE, VALUE_LINE + "   # explained anew", 1) + "\n\n"


def revalued(text: str) -> str:
    return text.replace(VALUE_LINE, 'clock = "800MHz"', 1)


def test_a_comment_edit_keeps_the_content_hash_and_a_value_edit_does_not(tmp_path: Path) -> None:
    machine = machine_module()
    original = machine.load_machine(PIII)
    (tmp_path / "piii-smp.toml").write_text(commented(PIII.read_text()))
    edited = machine.load_machine(tmp_path / "piii-smp.toml")
    assert edited.sha256 != original.sha256
    assert edited.content_sha256 == original.content_sha256 == machine.file_content_sha256(PIII)
    (tmp_path / "piii-smp.toml").write_text(revalued(PIII.read_text()))
    assert machine.load_machine(tmp_path / "piii-smp.toml").content_sha256 != original.content_sha256
    # provenance records both
    summary = original.instance(2).summary()
    assert (summary["sha256"], summary["content_sha256"]) == (original.sha256, original.content_sha256)


def test_the_version_table_is_what_git_holds() -> None:
    try:
        in_history = machine_versions.versions_in_history()
    except machine_versions.HistoryUnavailable as exc:
        pytest.skip(f"no git history of the machine files here: {exc}")
    recorded = machine_versions.recorded_versions()
    for name, versions in recorded.items():
        for file_sha, content in versions.items():
            assert in_history.get(name, {}).get(file_sha) == content, f"{name} {file_sha}: not that version in git"


def test_every_archived_run_s_machine_version_is_known() -> None:
    """The archive's runs from before content hashes recorded their file's sha256: each must map to a content hash."""
    known_contents = {content for versions in machine_versions.recorded_versions().values() for content in versions.values()}
    for index in sorted((ROOT / "results" / "archive").glob("*/index.json")):
        for run_id, entry in json.loads(index.read_text())["runs"].items():
            recorded = entry["made_with"]["machine"]
            assert recorded in known_contents or machine_versions.content_of_version(None, recorded), f"{index}: {run_id}: {recorded}"


@pytest.fixture
def machines_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The machine files in a folder of their own, which the campaign's artifacts read."""
    folder = tmp_path / "machines"
    folder.mkdir()
    for path in MACHINES.glob("*.toml"):
        (folder / path.name).write_text(path.read_text())
    monkeypatch.setattr(artifacts, "MACHINES_DIR", folder)
    return folder


def result_recording(machine: dict[str, str]) -> dict:
    return {"provenance": {"machine": machine}}


def test_a_run_that_recorded_its_file_hash_stays_current_after_a_comment_edit(machines_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = next(run for run in load_campaign(ROOT / "campaigns" / "smoke.toml").runs if run.machine == "piii-smp")
    original = machine_module().load_machine(PIII)
    # today's file as a version the table knows, as every committed version is
    known = {**machine_versions.recorded_versions(), "piii-smp.toml": {original.sha256: original.content_sha256}}
    monkeypatch.setattr(machine_versions, "recorded_versions", lambda: known)
    from_before = result_recording({"sha256": original.sha256})  # a run made before content hashes
    from_now = result_recording({"sha256": original.sha256, "content_sha256": original.content_sha256})
    assert made_with(from_now)["machine"] == original.content_sha256
    assert differences(spec, from_before, {}) == differences(spec, from_now, {}) == ()

    (machines_copy / "piii-smp.toml").write_text(commented(PIII.read_text()))
    assert differences(spec, from_before, {}) == differences(spec, from_now, {}) == ()

    (machines_copy / "piii-smp.toml").write_text(revalued(PIII.read_text()))
    assert differences(spec, from_before, {}) == differences(spec, from_now, {}) == ("machine file piii-smp.toml",)


def test_a_run_of_an_unknown_file_version_is_compared_by_its_bytes(machines_copy: Path) -> None:
    """A file version that no table knows (never committed) is current only while the file's bytes are the same."""
    spec = next(run for run in load_campaign(ROOT / "campaigns" / "smoke.toml").runs if run.machine == "piii-smp")
    (machines_copy / "piii-smp.toml").write_text(commented(PIII.read_text()))
    unknown = artifacts.machine_file_sha256("piii-smp")
    assert machine_versions.content_of_version("piii-smp.toml", unknown) is None
    assert differences(spec, result_recording({"sha256": unknown}), {}) == ()
    (machines_copy / "piii-smp.toml").write_text(commented(commented(PIII.read_text())))
    assert differences(spec, result_recording({"sha256": unknown}), {}) == ("machine file piii-smp.toml",)
