"""`run.sh campaign archive FILE`: pack every done gem5 run not yet in the run archive.

One run becomes one xz'd tar (lockstudy/archive/__init__.py has the
layout), made the same way every time: members sorted, no times, no
owners. Every absolute path of this machine becomes a placeholder
(lockstudy/publish.py), so the archive can be committed.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analysis.handoff_chart import chart_cache
from analysis.hotlines.traces import CACHE_FOLDER as HOTLINES_FOLDER
from analysis.traffic import trace_cache
from analysis.traffic.trace_attribution import CACHE_FOLDER as ATTRIBUTION_FOLDER
from lockstudy import publish
from lockstudy.archive.settings import INDEX, ArchiveError, ArchiveSettings, campaign_folder, run_tar
from lockstudy.campaign.loader import Campaign
from lockstudy.campaign.staleness import made_with
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.files import write_bytes_atomically, write_json_atomically
from lockstudy.validation.runs import TRACE_OFF

OUT = "out"
OUT_FILES = publish.RUN_FILES  # stats.txt, config.json, console.log, result.json
RUN_FILES = ("spec.json", "result.json", "attempts.json")
HOST = "<host>"  # the worker's host name, in result.json and attempts.json
DROPPED = ("pid",)  # a process id on the machine that ran it means nothing elsewhere
CAMPAIGN = "<campaign>"  # the campaign's results folder on the machine that ran it
FILE_MODE = 0o644
PACKED_LINE = "  packed "  # archive_campaign's line for each run it packs
NOTE_LINE = "note: "  # and for what a reader of the archive must do next


@dataclass(frozen=True)
class PackedRun:
    data: bytes  # the xz'd tar
    entry: dict[str, Any]  # its line of index.json


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_index(folder: Path) -> dict[str, dict[str, Any]]:
    """run id -> its entry; empty when the campaign has no archive yet."""
    path = folder / INDEX
    if not path.is_file():
        return {}
    try:
        runs = json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"{path}: not an archive index ({exc})") from None
    if not isinstance(runs, dict):
        raise ArchiveError(f"{path}: `runs` must map run ids to entries")
    return runs


def scrub_worker_record(value: Any) -> Any:
    """The worker's result.json or attempts.json without its host name and pid."""
    if isinstance(value, list):
        return [scrub_worker_record(item) for item in value]
    if isinstance(value, dict):
        return {key: HOST if key == "host" else scrub_worker_record(item) for key, item in value.items() if key not in DROPPED}
    return value


@lru_cache(maxsize=None)
def trace_readers() -> tuple[str, ...]:
    """What the report makes from a trace (analysis/traffic/trace_cache.py): the lock attribution, the hot-line
    profile, and the teaching page's chart (the median hand-off of its lock, analysis/handoff_chart/chart_cache.py)."""
    from analysis.handoff_chart.teaching import load_teaching  # pandas: .venv only, and run.sh loads this module before .venv exists

    teaching_chart = chart_cache.folder(load_teaching().lock, index=None, tick=None)
    return (HOTLINES_FOLDER, ATTRIBUTION_FOLDER, teaching_chart)


def derived_record(trace: Path, redigested: dict[str, str]) -> dict[str, Any]:
    """What the trace readers kept from this trace (analysis/traffic/trace_cache.py), less the trace's identity on this machine.

    `redigested` maps the sha256 of each file the archive rewrites to the
    sha256 of its rewritten text: a reader that recorded a file's digest
    (the hot-line profile records config.json's) finds the archived file's."""
    identity = trace_cache.trace_identity(trace)
    readers: dict[str, Any] = {}
    for folder in trace_readers():
        try:
            data = json.loads(trace_cache.cache_file(folder, trace).read_text())
        except (OSError, ValueError):
            continue
        made = data.get("made_from") if isinstance(data, dict) else None
        if not isinstance(made, dict) or any(made.get(key) != identity[key] for key in trace_cache.IDENTITY_KEYS):
            continue  # kept from an earlier trace of this path
        kept = {key: redigested.get(value, value) if isinstance(value, str) else value for key, value in trace_cache.without_identity(made).items()}
        readers[folder] = {**data, "made_from": kept}
    return {"format": trace_cache.DERIVED_FORMAT, "trace": {"name": trace.name, "bytes": identity["trace_bytes"]}, "readers": readers}


def readers_code(record: dict[str, Any]) -> dict[str, str]:
    """Each reader's code digest in a derived record (its made_from `code_sha256`, or the chart's `code`):
    what says that a reader's kept result is another code's."""
    code: dict[str, str] = {}
    for folder, data in record["readers"].items():
        made = data.get("made_from") or {}
        digest = made.get("code_sha256", made.get("code"))
        if isinstance(digest, str):
            code[folder] = digest
    return code


def tar_members(members: dict[str, bytes], preset: int) -> bytes:
    """An xz'd tar of `members` (name -> bytes), the same bytes for the same members."""
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w:xz", preset=preset, format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]  # preset: 0..9, settings.py
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(members[name]), FILE_MODE, 0
            tar.addfile(info, io.BytesIO(members[name]))
    return sink.getvalue()


def pack_run(run_path: Path, campaign_path: Path, study: str, preset: int) -> PackedRun:
    """One done run's tar and index entry; ArchiveError naming the file when it cannot be packed."""
    out = run_path / OUT
    missing = [str(path) for path in (*(run_path / name for name in RUN_FILES), *(out / name for name in OUT_FILES)) if not path.is_file()]
    if missing:
        raise ArchiveError(f"{run_path}: a done run without {', '.join(missing)}: not a gem5 run of the campaign's worker")
    result = json.loads((out / "result.json").read_text())
    pairs = sorted([*publish.placeholders(out, result), (str(campaign_path.resolve()), CAMPAIGN)], key=lambda pair: -len(pair[0]))
    members: dict[str, bytes] = {}
    redigested: dict[str, str] = {}
    try:
        for name in OUT_FILES:
            original = (out / name).read_bytes()
            text = publish.portable(original.decode(), pairs, str(out / name)).encode()
            members[f"{OUT}/{name}"] = text
            redigested[sha256(original)] = sha256(text)
        members["spec.json"] = publish.portable((run_path / "spec.json").read_text(), pairs, str(run_path / "spec.json")).encode()
        for name in ("result.json", "attempts.json"):
            record = scrub_worker_record(json.loads((run_path / name).read_text()))
            members[name] = publish.portable(json.dumps(record, indent=2, sort_keys=True) + "\n", pairs, str(run_path / name)).encode()
    except publish.PublishError as exc:
        raise ArchiveError(str(exc)) from None
    trace = out / publish.TRACE
    traced = result.get("provenance", {}).get("trace") not in (None, TRACE_OFF)
    derived: list[str] = []
    derived_code: dict[str, str] = {}
    if trace.is_file():
        record = derived_record(trace, redigested)
        derived = sorted(record["readers"])
        derived_code = readers_code(record)
        members[f"{OUT}/{trace_cache.derived_file(trace).name}"] = (json.dumps(record, sort_keys=True) + "\n").encode()
    data = tar_members(members, preset)
    entry = {"study": study, "bytes": len(data), "sha256": sha256(data), "traced": traced, "derived": derived,
             "derived_code": derived_code, "made_with": made_with(result)}  # fmt: skip
    return PackedRun(data, entry)


def needs_packing(entry: dict[str, Any] | None, tar: Path, run_path: Path) -> bool:
    """Not packed yet, its tar gone, packed from a run of the same id made with another machine file, kernel
    build or image (staleness.made_with; this one replaces it), packed before one of its trace's readers had
    kept anything and it has since (a run packed with its lock attribution only gains its hot-line profile), or
    packed with a reader's result that the reader's code has since made again, here from the trace (a teaching
    chart redrawn by today's chart code: the archive kept the old one, which a machine without the trace could
    then not use)."""
    if entry is None or not tar.is_file():
        return True
    if entry.get("made_with") != made_with(json.loads((run_path / OUT / "result.json").read_text())):
        return True
    trace = run_path / OUT / publish.TRACE
    if not entry.get("traced") or not trace.is_file():
        return False
    # derived_record's own test of what was kept from this trace: a cache file left by an earlier trace of the
    # same path is not a new result, and would otherwise repack the run at every archive.
    today = derived_record(trace, {})
    if not set(today["readers"]) <= set(entry.get("derived") or ()):
        return True
    packed = entry.get("derived_code") or {}
    return any(packed.get(folder) != code for folder, code in readers_code(today).items())


def archive_campaign(campaign: Campaign, store: CampaignStore, settings: ArchiveSettings) -> Iterator[str]:
    """Pack the campaign's done runs not yet packed; yields one line per run packed, then a summary."""
    folder = campaign_folder(settings.folder, campaign.name)
    index = read_index(folder)
    statuses = store.statuses(campaign.runs, campaign.max_attempts)
    done = [spec for spec, status in zip(campaign.runs, statuses) if status.state == State.DONE]
    packed, without_profile, added_bytes = 0, [], 0
    for spec in done:
        run_path, tar = store.run_dir(spec.run_id).path, run_tar(settings.folder, campaign.name, spec.run_id)
        if not needs_packing(index.get(spec.run_id), tar, run_path):
            continue
        run = pack_run(run_path, store.path, spec.study, settings.xz_preset)
        write_bytes_atomically(tar, run.data)
        index[spec.run_id] = run.entry
        write_json_atomically(folder / INDEX, {"campaign": campaign.name, "runs": dict(sorted(index.items()))})
        packed += 1
        added_bytes += len(run.data)
        if run.entry["traced"] and not run.entry["derived"]:
            without_profile.append(spec.run_id)
        yield f"{PACKED_LINE}{spec.run_id} ({spec.study}, {len(run.data) // 1024} KiB)"
    yield (f"{campaign.name}: {packed} run(s) packed ({added_bytes / 2**20:.1f} MiB), {len(index)} in the archive "
           f"({sum(int(e.get('bytes', 0)) for e in index.values()) / 2**20:.1f} MiB), {len(done)} done here: {folder}")  # fmt: skip
    if without_profile:
        yield (f"{NOTE_LINE}{len(without_profile)} traced run(s) packed without what the report reads from their traces "
               f"(its hot-line profile and lock attribution are not in this machine's cache yet): run ./run.sh report on "
               f"this campaign, then archive again, before their traces are gone: {', '.join(without_profile)}")  # fmt: skip
