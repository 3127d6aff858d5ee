"""The run archive: done runs packed without this machine's paths, restored whole, never simulated twice."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from analysis.traffic import trace_cache
from lockstudy.archive import command as archive_command
from lockstudy.archive import restore as restore_module
from lockstudy.archive.pack import archive_campaign, pack_run, read_index
from lockstudy.archive.restore import restore_campaign
from lockstudy.archive.settings import ArchiveError, ArchiveSettings, load_settings, run_tar
from lockstudy.campaign.loader import Campaign, load_campaign
from lockstudy.campaign.staleness import current_identities
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.paths import ROOT

sys.path.insert(0, str(Path(__file__).parent))
from fake_gem5 import install_fake_gem5  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "gem5" / "altix-numa-2-kbench"
HOST = "a-host-of-the-machine-that-ran-it"
PRESET = 1  # quick for tests; the data file's preset packs the same members


@pytest.fixture
def campaign() -> Campaign:
    return load_campaign(ROOT / "campaigns" / "smoke.toml")


def make_done_run(store: CampaignStore, spec, traced: bool = False) -> Path:  # type: ignore[no-untyped-def]
    """A done run as the worker leaves it: the fixture's gem5 outputs, with this machine's paths in them."""
    run = store.run_dir(spec.run_id)
    out = run.out
    out.mkdir(parents=True)
    for name in ("stats.txt", "config.json", "console.log"):
        shutil.copyfile(FIXTURE / name, out / name)
    result = json.loads((FIXTURE / "result.json").read_text())
    result["gem5_outdir"] = str(out / "m5out")
    result["provenance"]["kernel"]["path"] = str(ROOT / "build" / "kernel" / "smp" / "vmlinux")
    result["provenance"]["trace"] = "protocol" if traced else "off"  # as run.py writes it
    today = current_identities(spec, {})  # made with today's machine file, kernel build and image
    result["provenance"]["machine"]["sha256"] = today["machine"]
    result["provenance"]["kernel"]["build_info"] = {"build_id": today["kernel"]}
    result["provenance"]["image"] = {"build_info": {"content_hash": today["image"]}}
    result["provenance"]["gem5_binary"] = str(store.path.parent.parent / "gem5-build" / "gem5.opt")
    result["provenance"]["checkpoint_in"] = str(store.path / "checkpoints" / "a-boot")
    (out / "result.json").write_text(json.dumps(result, indent=1))
    config = json.loads((out / "config.json").read_text())
    config["board"]["workload"]["object_file"] = str(ROOT / "build" / "kernel" / "smp" / "vmlinux")
    (out / "config.json").write_text(json.dumps(config, indent=1))
    (run.path / "spec.json").write_text(json.dumps(spec.to_json()))
    record = {"attempt": 1, "status": "ok", "reason": "", "host": HOST, "pid": 4242, "run_id": spec.run_id}
    run.attempts_file.write_text(json.dumps([record]))
    run.result_file.write_text(json.dumps({**record, "outdir": str(out)}))
    if traced:
        with gzip.open(out / "roi.trace.gz", "wt") as trace:
            trace.write("a trace line\n")
    return out


def settings(tmp_path: Path) -> ArchiveSettings:
    return ArchiveSettings(tmp_path / "archive", PRESET)


def archived_on_a_lost_machine(tmp_path: Path, campaign: Campaign, specs: list) -> tuple[CampaignStore, CampaignStore]:  # type: ignore[type-arg]
    """(the lost machine's results, an empty results folder here): `specs` done there and archived."""
    there = CampaignStore(campaign.name, tmp_path / "lost-machine")
    for spec in specs:
        make_done_run(there, spec)
    list(archive_campaign(campaign, there, settings(tmp_path)))
    return there, CampaignStore(campaign.name, tmp_path / "new-machine")


def members_of(tar: Path) -> dict[str, bytes]:
    with tarfile.open(tar, "r:xz") as packed:
        return {m.name: packed.extractfile(m).read() for m in packed.getmembers()}  # type: ignore[union-attr]


def test_the_data_file_names_a_folder_in_the_repository_and_a_preset() -> None:
    loaded = load_settings()
    assert loaded.folder.is_relative_to(ROOT) and 0 <= loaded.xz_preset <= 9


def test_a_bad_archive_setting_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "campaign.toml"
    bad.write_text('[archive]\nfolder = "/abs"\nxz_preset = 9\n')
    with pytest.raises(ArchiveError, match=r"\[archive\] folder: must be a folder relative to the repository, got '/abs'"):
        load_settings(bad)
    bad.write_text('[archive]\nfolder = "results/archive"\nxz_preset = 12\n')
    with pytest.raises(ArchiveError, match="xz_preset: must be an integer 0..9, got 12"):
        load_settings(bad)
    bad.write_text("[archive\n")
    with pytest.raises(ArchiveError, match=f"{bad}: not valid TOML"):
        load_settings(bad)


def test_a_done_run_is_packed_without_this_machines_paths_host_or_pid(tmp_path: Path, campaign: Campaign) -> None:
    store = CampaignStore(campaign.name, tmp_path / "results")
    spec = campaign.runs[0]
    make_done_run(store, spec)
    lines = list(archive_campaign(campaign, store, settings(tmp_path)))
    assert lines[0].startswith(f"  packed {spec.run_id}") and "1 run(s) packed" in lines[-2 if len(lines) > 2 else -1]
    tar = run_tar(tmp_path / "archive", campaign.name, spec.run_id)
    members = members_of(tar)
    assert set(members) == {"spec.json", "result.json", "attempts.json", "out/result.json", "out/stats.txt", "out/config.json", "out/console.log"}
    for name, data in members.items():
        text = data.decode()
        assert str(tmp_path) not in text and str(ROOT) not in text and HOST not in text, name
    assert "<repo>/build/kernel/smp/vmlinux" in members["out/result.json"].decode()
    assert "4242" not in members["attempts.json"].decode() and "<host>" in members["attempts.json"].decode()
    assert members["out/stats.txt"] == (FIXTURE / "stats.txt").read_bytes()
    entry = read_index(tmp_path / "archive" / campaign.name)[spec.run_id]
    assert entry["study"] == spec.study and entry["bytes"] == tar.stat().st_size and entry["traced"] is False


def test_packing_is_the_same_bytes_every_time_and_a_packed_run_is_not_packed_again(tmp_path: Path, campaign: Campaign) -> None:
    store = CampaignStore(campaign.name, tmp_path / "results")
    spec = campaign.runs[0]
    make_done_run(store, spec)
    first = pack_run(store.run_dir(spec.run_id).path, store.path, spec.study, PRESET)
    second = pack_run(store.run_dir(spec.run_id).path, store.path, spec.study, PRESET)
    assert first.data == second.data and first.entry == second.entry
    list(archive_campaign(campaign, store, settings(tmp_path)))
    again = list(archive_campaign(campaign, store, settings(tmp_path)))
    assert len(again) == 1 and again[0].startswith("smoke: 0 run(s) packed") and "1 in the archive" in again[0]


def test_runs_not_done_are_not_packed(tmp_path: Path, campaign: Campaign) -> None:
    store = CampaignStore(campaign.name, tmp_path / "results")
    spec = campaign.runs[0]
    make_done_run(store, spec)
    failed = store.run_dir(spec.run_id)
    failed.result_file.write_text(json.dumps({"attempt": 1, "status": "failed", "reason": "gem5 exited 1"}))
    lines = list(archive_campaign(campaign, store, settings(tmp_path)))
    assert lines == [f"smoke: 0 run(s) packed (0.0 MiB), 0 in the archive (0.0 MiB), 0 done here: {tmp_path / 'archive' / 'smoke'}"]


def test_a_restored_run_is_done_whole_and_points_at_this_checkout(tmp_path: Path, campaign: Campaign) -> None:
    spec = campaign.runs[1]
    _there, here = archived_on_a_lost_machine(tmp_path, campaign, [spec])
    restored = restore_campaign(campaign, here, settings(tmp_path))
    assert restored.restored == [spec.run_id] and restored.stale == []
    statuses = {s.run_id: s.state for s in here.statuses(campaign.runs, campaign.max_attempts)}
    assert statuses[spec.run_id] == State.DONE
    assert [state for run_id, state in statuses.items() if run_id != spec.run_id] == [State.PENDING] * (len(campaign.runs) - 1)
    out = here.run_dir(spec.run_id).out
    assert (out / "stats.txt").read_bytes() == (FIXTURE / "stats.txt").read_bytes()
    result = json.loads((out / "result.json").read_text())
    assert result["provenance"]["kernel"]["path"] == str(ROOT / "build" / "kernel" / "smp" / "vmlinux")
    assert result["gem5_outdir"] == str(out / "m5out")
    assert not list(here.path.glob("runs/.*")), "no scratch folder is left behind"


def test_a_run_built_outside_the_checkout_is_packed_as_build_and_restored_to_this_build_folder(
        tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A run made with LOCKSTUDY_BUILD elsewhere names that folder as <build> in the archive, and comes
    back pointing at this machine's build folder."""
    there = CampaignStore(campaign.name, tmp_path / "lost-machine")
    spec = campaign.runs[0]
    out = make_done_run(there, spec)
    elsewhere = tmp_path / "their-scratch" / "build"
    result = json.loads((out / "result.json").read_text())
    result["provenance"]["kernel"]["path"] = str(elsewhere / "kernel" / "smp" / "vmlinux")
    result["provenance"]["image"]["path"] = str(elsewhere / "image" / "rootfs.ext2")
    (out / "result.json").write_text(json.dumps(result, indent=1))
    list(archive_campaign(campaign, there, settings(tmp_path)))
    packed = members_of(run_tar(tmp_path / "archive", campaign.name, spec.run_id))["out/result.json"].decode()
    assert str(elsewhere) not in packed and "<build>/kernel/smp/vmlinux" in packed
    mine = tmp_path / "my-build"
    monkeypatch.setenv("LOCKSTUDY_BUILD", str(mine))
    here = CampaignStore(campaign.name, tmp_path / "new-machine")
    restore_campaign(campaign, here, settings(tmp_path))
    restored = json.loads((here.run_dir(spec.run_id).out / "result.json").read_text())
    assert restored["provenance"]["kernel"]["path"] == str(mine / "kernel" / "smp" / "vmlinux")
    assert restored["provenance"]["image"]["path"] == str(mine / "image" / "rootfs.ext2")


def test_a_run_done_or_running_here_is_not_replaced_and_a_failed_one_is(tmp_path: Path, campaign: Campaign) -> None:
    _there, here = archived_on_a_lost_machine(tmp_path, campaign, campaign.runs[:2])
    own = make_done_run(here, campaign.runs[0])
    (own / "stats.txt").write_text("this machine's own run\n")
    failed = here.run_dir(campaign.runs[1].run_id)
    failed.path.mkdir(parents=True)
    failed.result_file.write_text(json.dumps({"attempt": 1, "status": "failed", "reason": "gem5 exited 1"}))
    restored = restore_campaign(campaign, here, settings(tmp_path))
    assert restored.restored == [campaign.runs[1].run_id]
    assert (own / "stats.txt").read_text() == "this machine's own run\n"
    assert here.run_dir(campaign.runs[1].run_id).status(campaign.max_attempts).state == State.DONE


def test_a_run_redone_on_another_image_replaces_the_archived_one(tmp_path: Path, campaign: Campaign) -> None:
    """The run id names what ran, not the image: a rerun on a new image under the same id is packed again."""
    store = CampaignStore(campaign.name, tmp_path / "results")
    spec = campaign.runs[0]
    out = make_done_run(store, spec)
    list(archive_campaign(campaign, store, settings(tmp_path)))
    result = json.loads((out / "result.json").read_text())
    result["provenance"]["image"] = {"build_info": {"content_hash": "a-newer-image"}}
    (out / "result.json").write_text(json.dumps(result, indent=1))
    again = list(archive_campaign(campaign, store, settings(tmp_path)))
    assert again[0].startswith(f"  packed {spec.run_id}") and "1 in the archive" in again[-1]
    index = json.loads((settings(tmp_path).folder / campaign.name / "index.json").read_text())
    assert index["runs"][spec.run_id]["made_with"]["image"] == "a-newer-image"


def test_a_stale_archived_run_stays_in_the_archive_unless_asked(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = campaign.runs[0]
    _there, here = archived_on_a_lost_machine(tmp_path, campaign, [spec])
    monkeypatch.setattr(restore_module, "differences", lambda _spec, _result, _cache: ("kernel build smp",))
    restored = restore_campaign(campaign, here, settings(tmp_path))
    assert restored.restored == [] and restored.stale == [(spec.run_id, ("kernel build smp",))]
    lines = list(restore_module.restore_lines(restored, campaign, settings(tmp_path)))
    assert lines[0].startswith("note: 1 archived run(s) ran on another") and lines[1] == f"  {spec.run_id}: kernel build smp"
    assert restore_campaign(campaign, here, settings(tmp_path), include_stale=True).restored == [spec.run_id]


def test_a_damaged_or_foreign_tar_is_refused_before_anything_is_written(tmp_path: Path, campaign: Campaign) -> None:
    spec = campaign.runs[0]
    _there, here = archived_on_a_lost_machine(tmp_path, campaign, [spec])
    tar = run_tar(tmp_path / "archive", campaign.name, spec.run_id)
    data = bytearray(tar.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tar.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=f"{spec.run_id}.tar.xz: its sha256 is not the one index.json records"):
        restore_campaign(campaign, here, settings(tmp_path))
    assert not here.run_dir(spec.run_id).path.exists()
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w:xz") as foreign:
        info = tarfile.TarInfo("../escape")
        foreign.addfile(info, io.BytesIO(b""))
    tar.write_bytes(sink.getvalue())
    index_file = tmp_path / "archive" / campaign.name / "index.json"
    index = json.loads(index_file.read_text())
    index["runs"][spec.run_id]["sha256"] = __import__("hashlib").sha256(sink.getvalue()).hexdigest()
    index_file.write_text(json.dumps(index))
    with pytest.raises(ArchiveError, match=r"holds '../escape', which is not one of a run's archived files"):
        restore_campaign(campaign, here, settings(tmp_path))
    assert not (tmp_path / "new-machine" / campaign.name / "escape").exists()


def test_a_traced_run_keeps_what_was_read_from_its_trace_and_a_report_takes_it(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    there = CampaignStore(campaign.name, tmp_path / "lost-machine")
    spec = campaign.runs[0]
    out = make_done_run(there, spec, traced=True)
    trace = out / "roi.trace.gz"
    config_digest = __import__("hashlib").sha256((out / "config.json").read_bytes()).hexdigest()
    made_from = {"format": 1, "code_sha256": "code-of-today", **trace_cache.trace_identity(trace), "config_sha256": config_digest}
    trace_cache.store(trace_cache.cache_file("hotlines", trace), {"made_from": made_from, "rois": [{"lines": [[64, 9, 3, 12, 2]]}]})
    entry = list(archive_campaign(campaign, there, settings(tmp_path)))
    assert read_index(tmp_path / "archive" / campaign.name)[spec.run_id]["derived"] == ["hotlines"], entry
    here = CampaignStore(campaign.name, tmp_path / "new-machine")
    restore_campaign(campaign, here, settings(tmp_path))
    restored_out = here.run_dir(spec.run_id).out
    restored_trace = restored_out / "roi.trace.gz"
    assert not restored_trace.exists() and trace_cache.available(restored_trace)
    # The restored config.json is the archived (portable) text: the profile recorded that file's digest.
    restored_config = __import__("hashlib").sha256((restored_out / "config.json").read_bytes()).hexdigest()
    asked = {"format": 1, "code_sha256": "code-of-today", **trace_cache.trace_identity(restored_trace), "config_sha256": restored_config}
    kept = trace_cache.load_kept("hotlines", restored_trace, asked)
    assert kept is not None and kept["rois"] == [{"lines": [[64, 9, 3, 12, 2]]}]
    assert trace_cache.load_kept("hotlines", restored_trace, {**asked, "code_sha256": "code-of-tomorrow"}) is None
    assert trace_cache.load_kept("trace-attribution", restored_trace, asked) is None


def test_a_restored_runs_teaching_chart_is_the_one_a_report_here_asks_for(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart names result.json by its digest; a restore rewrites result.json (this machine's paths), so it
    rewrites the digest the chart kept too, and a run restored before it did takes the derived file again."""
    from analysis.handoff_chart import chart_cache
    from analysis.handoff_chart.teaching import load_teaching

    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    lock = load_teaching().lock
    where = chart_cache.folder(lock, None, None)
    there = CampaignStore(campaign.name, tmp_path / "lost-machine")
    spec = campaign.runs[0]
    out = make_done_run(there, spec, traced=True)
    made = chart_cache.made_from(out / "roi.trace.gz", out / "result.json", lock, None, None)
    trace_cache.store(trace_cache.cache_file(where, out / "roi.trace.gz"), {"made_from": made, "text": "the chart"})
    list(archive_campaign(campaign, there, settings(tmp_path)))
    here = CampaignStore(campaign.name, tmp_path / "new-machine")
    assert restore_campaign(campaign, here, settings(tmp_path)).restored == [spec.run_id]
    restored = here.run_dir(spec.run_id).out
    assert (restored / "result.json").read_bytes() != (out / "result.json").read_bytes()  # another folder's paths
    asked = chart_cache.made_from(restored / "roi.trace.gz", restored / "result.json", lock, None, None)
    kept = trace_cache.load_kept(where, restored / "roi.trace.gz", asked)
    assert kept is not None and kept["text"] == "the chart"
    # As a restore before this one left it: the archived result.json's digest, which no file here has.
    derived = trace_cache.derived_file(restored / "roi.trace.gz")
    record = json.loads(derived.read_text())
    archived = members_of(run_tar(tmp_path / "archive", campaign.name, spec.run_id))["out/result.json"]
    record["readers"][where]["made_from"]["result_sha256"] = __import__("hashlib").sha256(archived).hexdigest()
    derived.write_text(json.dumps(record))
    assert trace_cache.load_kept(where, restored / "roi.trace.gz", asked) is None
    assert restore_campaign(campaign, here, settings(tmp_path)).refreshed == [spec.run_id]
    assert trace_cache.load_kept(where, restored / "roi.trace.gz", asked) is not None
    assert restore_campaign(campaign, here, settings(tmp_path)).refreshed == []  # once


def test_a_traced_run_packed_with_one_readers_result_is_packed_again_when_the_other_has_read_it(
    tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    there = CampaignStore(campaign.name, tmp_path / "machine")
    spec = campaign.runs[0]
    trace = make_done_run(there, spec, traced=True) / "roi.trace.gz"
    made_from = {"format": 1, "code_sha256": "code-of-today", **trace_cache.trace_identity(trace)}
    trace_cache.store(trace_cache.cache_file("trace-attribution", trace), {"made_from": made_from, "locks": {}})
    list(archive_campaign(campaign, there, settings(tmp_path)))
    assert read_index(tmp_path / "archive" / campaign.name)[spec.run_id]["derived"] == ["trace-attribution"]
    trace_cache.store(trace_cache.cache_file("hotlines", trace), {"made_from": made_from, "rois": [{"lines": [[64, 9, 3, 12, 2]]}]})
    lines = list(archive_campaign(campaign, there, settings(tmp_path)))
    assert read_index(tmp_path / "archive" / campaign.name)[spec.run_id]["derived"] == ["hotlines", "trace-attribution"], lines
    assert list(archive_campaign(campaign, there, settings(tmp_path)))[0].startswith(f"{campaign.name}: 0 run(s) packed")


def test_a_run_restored_before_its_profile_was_packed_takes_the_profile_at_the_next_restore(
    tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two results folders on one machine: a traced run done in one is archived, restored into the other, and
    only then profiled by a report in the first and archived again. The next restore gives the second folder's
    copy the profile; a copy simulated again since (other stats) keeps its own derived file."""
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    there = CampaignStore(campaign.name, tmp_path / "machine")
    spec = campaign.runs[0]
    trace = make_done_run(there, spec, traced=True) / "roi.trace.gz"
    list(archive_campaign(campaign, there, settings(tmp_path)))
    here = CampaignStore(campaign.name, tmp_path / "other-folder")
    assert restore_campaign(campaign, here, settings(tmp_path)).restored == [spec.run_id]
    derived = trace_cache.derived_file(here.run_dir(spec.run_id).out / "roi.trace.gz")
    assert json.loads(derived.read_text())["readers"] == {}
    made_from = {"format": 1, "code_sha256": "code-of-today", **trace_cache.trace_identity(trace)}
    trace_cache.store(trace_cache.cache_file("hotlines", trace), {"made_from": made_from, "rois": [{"lines": [[64, 9, 3, 12, 2]]}]})
    list(archive_campaign(campaign, there, settings(tmp_path)))
    again = restore_campaign(campaign, here, settings(tmp_path))
    assert again.restored == [] and again.refreshed == [spec.run_id]
    assert sorted(json.loads(derived.read_text())["readers"]) == ["hotlines"]
    lines = list(restore_module.restore_lines(again, campaign, settings(tmp_path)))
    assert lines == [f"1 restored run(s) took their traces' derived file from the archive again (profiles it gained since they "
                     f"were restored, or digests of the files as restored here): {spec.run_id}"]
    assert restore_campaign(campaign, here, settings(tmp_path)).refreshed == []  # once
    # An entry packed before the archive recorded the readers' code digests names its readers only: the same
    # readers are the same derived file, not one to take again at every restore.
    index_file = tmp_path / "archive" / campaign.name / "index.json"
    index = json.loads(index_file.read_text())
    del index["runs"][spec.run_id]["derived_code"]
    index_file.write_text(json.dumps(index))
    assert restore_campaign(campaign, here, settings(tmp_path)).refreshed == []
    # A copy that is another simulation of the run is not given this one's profile.
    stats = here.run_dir(spec.run_id).out / "stats.txt"
    stats.write_text(stats.read_text() + "# simulated again\n")
    derived.write_text(json.dumps({"format": 1, "trace": {"name": "roi.trace.gz", "bytes": 1}, "readers": {}}))
    assert restore_campaign(campaign, here, settings(tmp_path)).refreshed == []
    assert json.loads(derived.read_text())["readers"] == {}


def test_a_traced_run_is_packed_again_when_a_reader_made_its_result_again_with_other_code(
    tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report that redraws a teaching chart with today's chart code replaces the cache's record; the archive
    kept yesterday's, which a machine without the trace cannot use. It is packed again, once."""
    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path / "cache"))
    there = CampaignStore(campaign.name, tmp_path / "machine")
    spec = campaign.runs[0]
    trace = make_done_run(there, spec, traced=True) / "roi.trace.gz"
    made_from = {"format": 1, "code_sha256": "code-of-yesterday", **trace_cache.trace_identity(trace)}
    trace_cache.store(trace_cache.cache_file("hotlines", trace), {"made_from": made_from, "rois": []})
    list(archive_campaign(campaign, there, settings(tmp_path)))
    assert read_index(tmp_path / "archive" / campaign.name)[spec.run_id]["derived_code"] == {"hotlines": "code-of-yesterday"}
    trace_cache.store(trace_cache.cache_file("hotlines", trace), {"made_from": {**made_from, "code_sha256": "code-of-today"}, "rois": []})
    lines = list(archive_campaign(campaign, there, settings(tmp_path)))
    assert read_index(tmp_path / "archive" / campaign.name)[spec.run_id]["derived_code"] == {"hotlines": "code-of-today"}, lines
    assert list(archive_campaign(campaign, there, settings(tmp_path)))[0].startswith(f"{campaign.name}: 0 run(s) packed")


def test_a_trace_neither_here_nor_kept_is_left_out_with_a_warning_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "roi.trace.gz"
    read: list[Path] = []
    out = trace_cache.cached_or_read([gone], str, lambda _job: None, lambda job: read.append(job), lambda job: job, "profiled", 1)
    assert out == {} and read == []
    assert "its trace is not on this machine" in capsys.readouterr().err


# A gem5 that must never run: a launch whose runs are all in the archive simulates nothing.
REFUSING_GEM5 = "import sys\nsys.exit('gem5 was started, but every run was in the archive')\n"


def test_a_launch_restores_the_archived_runs_and_simulates_none_of_them(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:
    from lockstudy.commands.campaign import select_studies

    smoke_only = select_studies(campaign, ["smoke"], [])
    install_fake_gem5(tmp_path, monkeypatch, REFUSING_GEM5)  # and stand-ins for today's kernel and image
    there = CampaignStore(campaign.name, tmp_path / "lost-machine")
    for spec in smoke_only.runs:
        make_done_run(there, spec)
    assert archive_command.archive(smoke_only, there, tmp_path / "archive") == 0
    from lockstudy.cli import main

    status = main(["campaign", str(ROOT / "campaigns" / "smoke.toml"), "--only-study", "smoke", "--results", str(tmp_path / "new-machine"),
                   "--archive", str(tmp_path / "archive"), "-j", "1"])  # fmt: skip
    assert status == 0
    here = CampaignStore(campaign.name, tmp_path / "new-machine")
    assert {s.state for s in here.statuses(smoke_only.runs, campaign.max_attempts)} == {State.DONE}
    for spec in smoke_only.runs:
        attempts = json.loads(here.run_dir(spec.run_id).attempts_file.read_text())
        assert [a["host"] for a in attempts] == ["<host>"], "the attempt is the archived one, not a new simulation"


class FinishingExecutor:
    """A local pool of one, in this process: each run ends done, as the worker leaves it (make_done_run), and
    notes first which runs the archive already held when it started."""

    name, wait = "local", True

    def __init__(self, archive: Path) -> None:
        self.index = archive / "smoke" / "index.json"
        self.seen: dict[str, list[str]] = {}

    def queued(self, store: CampaignStore) -> frozenset[str]:
        return frozenset()

    def execute(self, store: CampaignStore, specs: list, backend: str, report) -> None:  # type: ignore[no-untyped-def,type-arg]
        for spec in specs:
            self.seen[spec.run_id] = sorted(json.loads(self.index.read_text())["runs"]) if self.index.is_file() else []
            make_done_run(store, spec)
            report()


def test_a_launch_packs_each_run_into_the_archive_as_it_finishes(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine lost in the middle of a launch loses none of the runs it finished: each is in the archive
    (in the checkout, which outlives the machine) before the next starts, with no `campaign archive`."""
    from lockstudy.campaign.launcher import run_campaign
    from lockstudy.commands.campaign import select_studies

    smoke_only = select_studies(campaign, ["smoke"], [])
    install_fake_gem5(tmp_path, monkeypatch, REFUSING_GEM5)  # the backend's preflight only: the executor runs nothing
    store, executor = CampaignStore(campaign.name, tmp_path / "here"), FinishingExecutor(tmp_path / "archive")
    packing = archive_command.archive_as_runs_finish(campaign, store, tmp_path / "archive")
    assert run_campaign(smoke_only, store, executor, "gem5", 1, after_each=packing) == 0
    _folder, index = archive_command.archived(smoke_only, tmp_path / "archive")
    assert set(index) == {spec.run_id for spec in smoke_only.runs}
    order = [spec.run_id for spec in smoke_only.runs]
    assert [executor.seen[run_id] for run_id in order] == [sorted(order[:rank]) for rank in range(len(order))]


def test_a_run_the_archive_cannot_pack_is_said_and_the_launch_goes_on(tmp_path: Path, campaign: Campaign, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from lockstudy.campaign.launcher import run_campaign
    from lockstudy.commands.campaign import select_studies

    smoke_only = select_studies(campaign, ["smoke"], [])
    install_fake_gem5(tmp_path, monkeypatch, REFUSING_GEM5)
    (tmp_path / "archive").write_text("a file where the archive's folder should be")
    store = CampaignStore(campaign.name, tmp_path / "here")
    packing = archive_command.archive_as_runs_finish(campaign, store, tmp_path / "archive")
    assert run_campaign(smoke_only, store, FinishingExecutor(tmp_path / "archive"), "gem5", 1, after_each=packing) == 0
    out = capsys.readouterr().out
    assert "warning: the run archive:" in out and "./run.sh campaign archive" in out
    assert {s.state for s in store.statuses(smoke_only.runs, campaign.max_attempts)} == {State.DONE}


@pytest.mark.parametrize("flags, packs", [([], True), (["--no-archive"], False), (["--executor", "qemu"], False)])
def test_a_gem5_launch_packs_as_runs_finish_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], packs: bool) -> None:
    from lockstudy.cli import main
    from lockstudy.commands import campaign as campaign_command

    handed: list[object] = []
    monkeypatch.setattr(campaign_command, "run_campaign", lambda *args: handed.append(args[-1]) or 0)
    install_fake_gem5(tmp_path, monkeypatch, REFUSING_GEM5)
    status = main(["campaign", str(ROOT / "campaigns" / "smoke.toml"), "--results", str(tmp_path / "here"), "--no-restore", *flags])
    assert status == 0 and len(handed) == 1
    assert callable(handed[0]) if packs else handed[0] is None


def test_the_analysis_finds_a_restored_run_as_the_run_it_was(tmp_path: Path, campaign: Campaign) -> None:
    from analysis.gem5_output.runs import discover_runs

    spec = campaign.runs[0]
    there, here = archived_on_a_lost_machine(tmp_path, campaign, [spec])
    restore_campaign(campaign, here, settings(tmp_path))
    before, after = discover_runs(there.path), discover_runs(here.path)
    assert [(r.run_id, r.status) for r in after] == [(r.run_id, r.status) for r in before] == [(spec.run_id, "ok")]
    assert after[0].result["roi_ticks"] == before[0].result["roi_ticks"]
    assert after[0].gem5_dir == here.run_dir(spec.run_id).out


def test_status_says_how_many_runs_are_packed(tmp_path: Path, campaign: Campaign, capsys: pytest.CaptureFixture[str]) -> None:
    from lockstudy.commands.campaign import print_status

    there, _here = archived_on_a_lost_machine(tmp_path, campaign, campaign.runs[:2])
    capsys.readouterr()
    assert print_status(campaign, there, tmp_path / "archive") == 0
    assert "run archive: 2 of the campaign's runs packed (2 done here;" in capsys.readouterr().out
