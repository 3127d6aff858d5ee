"""`run.sh campaign restore FILE`, and the launcher's restore: the archived runs a results folder lacks.

A run is restored when the results folder does not have it done or
running, and it was made with today's machine file, kernel build, disk
image and gem5 extras (lockstudy/campaign/staleness.py): a stale run's
hours count for a machine that no longer exists, so it is left in the
archive and named. Each tar is checked against its sha256 in index.json
and its members against the archive's layout before anything is
written; a run is unpacked into a scratch folder and renamed into place,
so a restore that dies leaves each run whole or absent.

The placeholders of the repository and the cache in out/result.json are
turned back into this machine's paths: the report finds the run's kernel
build (its System.map) through them. What a trace reader made from the
run names the files it read by their sha256 (the teaching page's chart
names result.json's); pack.py rewrote those to the archived files'
digests, and a restore rewrites them again to the digests of the files
as it writes them, so that a report here finds the kept chart its own.

A traced run restored here before its machine had profiled it has a
derived file without that profile; when the archive packs the run again
with it (`campaign archive` after a report there), a later restore takes
the archive's derived file into the restored run (`refreshed`). A run
that has its own trace here is left alone: its readers read the trace.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.traffic.trace_cache import DERIVED_SUFFIX, derived_file
from lockstudy.archive.pack import OUT, OUT_FILES, RUN_FILES, read_index, readers_code, sha256
from lockstudy.archive.settings import ArchiveError, ArchiveSettings, campaign_folder, run_tar
from lockstudy.campaign.loader import Campaign
from lockstudy.campaign.spec import RunSpec
from lockstudy.campaign.staleness import differences
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.files import file_sha256, write_bytes_atomically
from lockstudy.paths import ROOT, build_dir, cache_dir
from lockstudy.publish import BUILD, TRACE, replace_paths

KEPT_STATES = (State.DONE, State.RUNNING)  # a results folder's own run wins over the archive's
REQUIRED_MEMBERS = frozenset({*RUN_FILES, *(f"{OUT}/{name}" for name in OUT_FILES)})
DERIVED_MEMBER = f"{OUT}/{TRACE}{DERIVED_SUFFIX}"
RESULT_MEMBER = f"{OUT}/result.json"  # the member a restore rewrites (localised)
RESULT_DIGEST = "result_sha256"  # a reader's made_from key holding result.json's digest (the teaching chart's)
STATS = "stats.txt"  # one of OUT_FILES: the simulation's own numbers
ALLOWED_MEMBERS = REQUIRED_MEMBERS | {DERIVED_MEMBER}


@dataclass
class Restored:
    restored: list[str] = field(default_factory=list)
    stale: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (run id, what differs)
    refreshed: list[str] = field(default_factory=list)  # restored runs given the profiles packed since


def read_members(tar_path: Path, entry: dict[str, Any]) -> dict[str, bytes]:
    """The tar's members, after checking its digest and that it holds only the archive's files."""
    data = tar_path.read_bytes()
    if sha256(data) != entry.get("sha256"):
        raise ArchiveError(f"{tar_path}: its sha256 is not the one index.json records: the archive is damaged; restore it from git")
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
            for member in tar.getmembers():
                if not member.isfile() or member.name not in ALLOWED_MEMBERS:
                    raise ArchiveError(f"{tar_path}: holds {member.name!r}, which is not one of a run's archived files")
                extracted = tar.extractfile(member)
                members[member.name] = extracted.read() if extracted else b""
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveError(f"{tar_path}: cannot be read ({exc})") from None
    absent = sorted(REQUIRED_MEMBERS - set(members))
    if absent:
        raise ArchiveError(f"{tar_path}: lacks {', '.join(absent)}")
    return members


def local_paths(run_out: Path) -> list[tuple[str, str]]:
    """Placeholders that name something on this machine too, longest first."""
    return [("<run>", str(run_out)), ("<repo>", str(ROOT)), ("<cache>", str(cache_dir())), (BUILD, str(build_dir())), ("~", str(Path.home()))]


def localised(text: str, run_out: Path) -> str:
    """`text` with each placeholder that names something here (a whole path's first part) turned into its path."""
    return replace_paths(text, local_paths(run_out))


def redigested_record(data: bytes, redigested: dict[str, str]) -> bytes:
    """A derived file whose readers' `made_from` digests of rewritten files are those files' digests as written
    here (`redigested`: archived digest -> written digest; pack.py's derived_record the other way)."""
    try:
        record = json.loads(data)
        readers = record["readers"]
    except (ValueError, KeyError, TypeError):
        return data  # not a derived record: kept as archived, and its readers find nothing in it
    for reader in readers.values() if isinstance(readers, dict) else ():
        made = reader.get("made_from") if isinstance(reader, dict) else None
        if isinstance(made, dict):
            reader["made_from"] = {key: redigested.get(value, value) if isinstance(value, str) else value for key, value in made.items()}
    return (json.dumps(record, sort_keys=True) + "\n").encode()


def written_members(members: dict[str, bytes], run_out: Path) -> dict[str, bytes]:
    """The run's members as a restore writes them into a run whose out/ is `run_out`: result.json localised,
    and the derived file's digest of result.json following it."""
    archived = members[RESULT_MEMBER]
    local = localised(archived.decode(), run_out).encode()
    written = dict(members, **{RESULT_MEMBER: local})
    if DERIVED_MEMBER in members:
        written[DERIVED_MEMBER] = redigested_record(members[DERIVED_MEMBER], {sha256(archived): sha256(local)})
    return written


def unpack(members: dict[str, bytes], store: CampaignStore, spec: RunSpec) -> None:
    """Write the run's folder from its members: whole, or not at all."""
    run_path = store.run_dir(spec.run_id).path
    run_path.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{spec.run_id}.", dir=run_path.parent))
    try:
        for name, data in written_members(members, run_path / OUT).items():
            target = scratch / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if run_path.exists():
            shutil.rmtree(run_path)  # pending, failed, dead or stopped: the archive holds it done
        scratch.replace(run_path)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def derived_differs(run_out: Path, entry: dict[str, Any]) -> bool:
    """A run restored here (no trace of its own) whose derived file lacks a reader, or a reader's code, that the
    archive's entry has: the run was packed again since, with what a report there made from its trace."""
    if (run_out / TRACE).is_file() or not entry.get("derived"):
        return False
    try:
        record = json.loads(derived_file(run_out / TRACE).read_text())
        kept = readers_code(record)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True  # absent or unreadable: the archive's is the run's
    if sorted(record["readers"]) != sorted(entry["derived"]):
        return True
    if "derived_code" in entry and kept != entry["derived_code"]:  # an entry packed before codes were recorded names readers only
        return True
    return not digests_followed(record, run_out)


def digests_followed(record: dict[str, Any], run_out: Path) -> bool:
    """Whether every reader that kept result.json's digest kept the digest of the result.json here (a run
    restored before the restore rewrote them has the archived file's)."""
    kept = {reader.get("made_from", {}).get(RESULT_DIGEST) for reader in record["readers"].values()} - {None}
    if not kept:
        return True
    try:
        return kept == {file_sha256(run_out / "result.json")}
    except OSError:
        return False


def same_run(members: dict[str, bytes], run_path: Path) -> bool:
    """The run here is the archive's simulation (its stats.txt, byte for byte), not one redone since."""
    try:
        return (run_path / OUT / STATS).read_bytes() == members[f"{OUT}/{STATS}"]
    except (OSError, KeyError):
        return False


def refresh_derived(members: dict[str, bytes], run_out: Path) -> None:
    """Replace the restored run's derived file by the archive's (its digests those of the files here), atomically."""
    write_bytes_atomically(derived_file(run_out / TRACE), written_members(members, run_out)[DERIVED_MEMBER])


def restore_campaign(campaign: Campaign, store: CampaignStore, settings: ArchiveSettings, *, include_stale: bool = False) -> Restored:
    """Unpack the archived runs this results folder lacks (none: the campaign has no archive)."""
    index = read_index(campaign_folder(settings.folder, campaign.name))
    out = Restored()
    if not index:
        return out
    identities: dict[str, str | None] = {}
    for spec, status in zip(campaign.runs, store.statuses(campaign.runs, campaign.max_attempts)):
        entry = index.get(spec.run_id)
        if entry is None:
            continue
        run = store.run_dir(spec.run_id)
        if status.state == State.DONE and derived_differs(run.out, entry):
            members = read_members(run_tar(settings.folder, campaign.name, spec.run_id), entry)
            if DERIVED_MEMBER in members and same_run(members, run.path):
                refresh_derived(members, run.out)
                out.refreshed.append(spec.run_id)
            continue
        if status.state in KEPT_STATES:
            continue
        members = read_members(run_tar(settings.folder, campaign.name, spec.run_id), entry)
        try:
            result = json.loads(members[f"{OUT}/result.json"])
        except ValueError as exc:
            raise ArchiveError(f"{run_tar(settings.folder, campaign.name, spec.run_id)}: out/result.json is not JSON ({exc})") from None
        differs = differences(spec, result, identities)
        if differs and not include_stale:
            out.stale.append((spec.run_id, differs))
            continue
        unpack(members, store, spec)
        out.restored.append(spec.run_id)
    return out


def restore_lines(restored: Restored, campaign: Campaign, settings: ArchiveSettings) -> Iterator[str]:
    folder = campaign_folder(settings.folder, campaign.name)
    if restored.restored:
        yield f"restored {len(restored.restored)} done run(s) from the run archive ({folder}): not simulated again"
    if restored.refreshed:
        yield (f"{len(restored.refreshed)} restored run(s) took their traces' derived file from the archive again (profiles "
               f"it gained since they were restored, or digests of the files as restored here): {' '.join(restored.refreshed)}")  # fmt: skip
    if restored.stale:
        yield (f"note: {len(restored.stale)} archived run(s) ran on another machine file, kernel build, disk image or gem5 "
               f"extra than today's: left in the archive (`campaign restore --include-stale` takes them anyway):")  # fmt: skip
        yield from (f"  {run_id}: {', '.join(differs)}" for run_id, differs in restored.stale)
