"""Done runs made with another machine file, kernel build or disk image than the campaign's current ones.

Also those made on a gem5 without an extra their machine's protocol needs
(lockstudy.gem5.REQUIRED_EXTRAS: CHI runs from before the locked-RMW fix).

A run's id is its spec (spec.py): the machine's name, not its file's
contents. A machine file is compared by its content hash
(gem5-configs/machine.py content_sha256), so an edit of its comments
leaves its runs current; a run that recorded only its file's sha256 is
compared through the content of that file version
(machine_versions.py). A kernel is compared by its build id, and a run whose
build id is not today's is still current when the vmlinux it booted is
today's, byte for byte (a build from a re-packaged but identical source:
the guest ran the same code). A disk image is compared by its content hash,
and a run whose image is not today's is still current when every input of
the image its testcases depend on is today's: the image's build settings,
its Debian packages and every input but the other testcases' own sources
(workloads/tc_<name>.c, which only that testcase's program is built from),
as the image's build-info.json records them; versions of one input that
lockstudy/data/image_inputs.toml declares the same for every run an earlier
one could have made count as one. So when a machine file is recalibrated, or a kernel or the image
rebuilt, the runs already done stay done, and a report would read them
beside runs of the new machine. The launcher keeps them (their hours are
spent, and gem5's result.json records what each ran on) and says so, with
what differs, so that a user reruns them into a new results folder
(--results) or knowingly keeps them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from lockstudy.campaign import artifacts, machine_versions
from lockstudy.campaign.spec import RunSpec
from lockstudy.campaign.store import CampaignStore, State, RunStatus
from lockstudy.files import DataFileError, read_toml, typed_field
from lockstudy.paths import DATA, build_dir
from lockstudy.run_spec import RunSpecError, parse_run_spec

# An image input that only one testcase's program is built from (workloads/Makefile: tc_<name>.c).
TESTCASE_SOURCE = re.compile(r"workloads/tc_([A-Za-z0-9_]+)\.c")
SAME_RUNS_FILE = DATA / "image_inputs.toml"
SHA256 = re.compile(r"[0-9a-f]{64}")
GEM5_BACKEND = "gem5"
RUN_OUTPUTS = "out"
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class StaleRun:
    run_id: str
    differs: tuple[str, ...]  # "machine file altix-numa.toml", "kernel build smp", "disk image"


def missing_extra(spec: RunSpec, result: dict[str, Any]) -> str | None:
    """The extra this run's machine needs that its gem5 lacked (None: nothing missing, or not a Ruby machine)."""
    from lockstudy import gem5
    from lockstudy.campaign.machines import ruby_protocol_of

    try:
        protocol = ruby_protocol_of(spec.machine)
    except ValueError:
        return None  # a machine file gone since: nothing to compare with
    return gem5.missing_extra(protocol, result.get("provenance", {}).get("gem5_extras") or {})


def made_with(result: dict[str, Any]) -> dict[str, str | None]:
    """What a run's result.json says it ran on. The machine is its content hash, or for a run from before
    content hashes the sha256 of its file's bytes (machine_identity() reads both alike)."""
    p = result.get("provenance", {})
    machine = p.get("machine", {})
    return {
        "machine": machine.get("content_sha256") or machine.get("sha256"),
        "kernel": p.get("kernel", {}).get("build_info", {}).get("build_id"),
        "image": p.get("image", {}).get("build_info", {}).get("content_hash"),
    }


def kernel_binary(result: dict[str, Any]) -> str | None:
    """The sha256 of the vmlinux a run booted, as its result.json records it (None: not recorded)."""
    kernel = result.get("provenance", {}).get("kernel", {})
    outputs = kernel.get("build_info", {}).get("outputs", {})
    return kernel.get("sha256") or outputs.get("vmlinux", {}).get("sha256")


def run_testcases(spec: RunSpec) -> frozenset[str] | None:
    """The testcases a run's guest ran (its run spec's items); None when the spec does not parse."""
    try:
        return frozenset(item.testcase for item in parse_run_spec(spec.run))
    except RunSpecError:
        return None


@lru_cache(maxsize=None)
def load_same_runs(path: Path = SAME_RUNS_FILE) -> dict[str, str]:
    """image_inputs.toml: "<input> <sha256>" -> the first version declared the same for that input; read
    once per file (every run a restore or a launch compares asks for it)."""
    entries = typed_field(read_toml(path), "same_runs", list, str(path), default=[])
    same: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: same_runs[{index}]"
        if not isinstance(entry, dict):
            raise DataFileError(f"{where}: expected a table, got {entry!r}")
        unknown = set(entry) - {"input", "sha256", "why"}
        if unknown:
            raise DataFileError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        name = typed_field(entry, "input", str, where)
        versions = typed_field(entry, "sha256", list, where)
        if len(versions) < 2 or not all(isinstance(v, str) and SHA256.fullmatch(v) for v in versions):
            raise DataFileError(f"{where}.sha256: expected two or more sha256 digests (64 lowercase hex), got {versions!r}")
        if not typed_field(entry, "why", str, where).strip():
            raise DataFileError(f"{where}.why: empty: say why the versions run the same")
        for version in versions:
            same[f"{name} {version}"] = versions[0]
    return same


def image_identity_for(info: Mapping[str, Any], testcases: frozenset[str], same: Mapping[str, str] | None = None) -> str | None:
    """The part of a disk image that runs of `testcases` depend on, as one hash: from its build-info
    (recorded in a run's result.json, or today's build/image/build-info.json), its build settings, its
    Debian packages and its inputs but the other testcases' own sources, each version that `same`
    (image_inputs.toml) declares the same as an earlier one counted as that one. None when no inputs are
    recorded."""
    inputs = info.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        return None

    def used(path: str) -> bool:
        own = TESTCASE_SOURCE.fullmatch(path)
        return own is None or own.group(1) in testcases

    same = load_same_runs() if same is None else same
    material = {"config": info.get("config"), "debian_packages": info.get("debian_packages"),
                "inputs": {path: same.get(f"{path} {sha}", sha) for path, sha in inputs.items() if used(path)}}  # fmt: skip
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def todays_image_identity_for(testcases: frozenset[str]) -> str | None:
    return image_identity_for(artifacts.read_build_info(build_dir() / "image", "disk image"), testcases)


def machine_identity(recorded: str | None, file_name: str | None = None) -> str | None:
    """A recorded machine hash as a content hash: itself, or the content of the file version it is the sha256 of."""
    if recorded is None:
        return None
    return machine_versions.content_of_version(file_name, recorded) or recorded


def input_keys(spec: RunSpec) -> dict[str, str]:
    """A run's inputs by their field in current_identities(): the key its identity is cached under (one per file)."""
    return {"machine": f"machine:{spec.machine}", "kernel": f"kernel:{spec.kernel_build}", "image": "image"}


def input_names(spec: RunSpec) -> dict[str, str]:
    """How a message names each input of a run, by its field in current_identities()."""
    return {"machine": f"machine file {spec.machine}.toml", "kernel": f"kernel build {spec.kernel_build}", "image": "disk image"}


def current_identities(spec: RunSpec, cache: dict[str, str | None]) -> dict[str, str | None]:
    keys = input_keys(spec)

    def identity(key: str, make: Any) -> str | None:
        if key not in cache:
            try:
                cache[key] = make()
            except artifacts.MissingArtifact:
                cache[key] = None
        return cache[key]

    return {
        "machine": identity(keys["machine"], lambda: artifacts.machine_file(spec.machine).identity),
        "machine_file_sha256": identity(f"machine-file:{spec.machine}", lambda: artifacts.machine_file_sha256(spec.machine)),
        "kernel": identity(keys["kernel"], lambda: artifacts.kernel(spec.kernel_build, "vmlinux").identity),
        "kernel_binary": identity(f"kernel-binary:{spec.kernel_build}", lambda: artifacts.kernel_binary_sha256(spec.kernel_build)),
        "image": identity(keys["image"], lambda: artifacts.disk_image().identity),
    }


def differences(spec: RunSpec, result: dict[str, Any], cache: dict[str, str | None]) -> tuple[str, ...]:
    """What a run with this gem5 result.json ran on that is not today's (empty: nothing; an unknown identity is not compared)."""
    made, now = made_with(result), current_identities(spec, cache)
    if made["machine"] and made["machine"] == now["machine_file_sha256"]:
        made["machine"] = now["machine"]  # an earlier run's file sha256 of today's very file
    made["machine"] = machine_identity(made["machine"], f"{spec.machine}.toml")
    booted = kernel_binary(result)
    if made["kernel"] != now["kernel"] and booted and booted == now["kernel_binary"]:
        made["kernel"] = now["kernel"]  # another build id, today's very vmlinux
    testcases = run_testcases(spec)
    if made["image"] and now["image"] and made["image"] != now["image"] and testcases is not None:
        recorded = image_identity_for(result.get("provenance", {}).get("image", {}).get("build_info", {}) or {}, testcases)
        key = "image-for:" + ",".join(sorted(testcases))
        if key not in cache:
            try:
                cache[key] = todays_image_identity_for(testcases)
            except artifacts.MissingArtifact:
                cache[key] = None
        if recorded is not None and recorded == cache[key]:
            made["image"] = now["image"]  # another image, the same files for this run's testcases
    names = input_names(spec)
    differs = tuple(names[key] for key in names if made[key] and now[key] and made[key] != now[key])
    missing = missing_extra(spec, result)
    if missing:
        differs += (f"gem5 without the {missing} extra",)
    return differs


def stale_runs(specs: list[RunSpec], statuses: list[RunStatus], store: CampaignStore) -> list[StaleRun]:
    """The done gem5 runs whose machine file, kernel build or image is not today's (an unknown identity is not compared)."""
    cache: dict[str, str | None] = {}
    out = []
    for spec, status in zip(specs, statuses):
        if status.state != State.DONE:
            continue
        path = store.run_dir(spec.run_id).path / RUN_OUTPUTS / RESULT_FILE
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a QEMU run, or no gem5 result: nothing to compare
        differs = differences(spec, result, cache)
        if differs:
            out.append(StaleRun(spec.run_id, differs))
    return out


def stale_lines(stale: list[StaleRun], results: Path) -> list[str]:
    """What the launcher and `campaign status` say about them."""
    if not stale:
        return []
    lines = [
        f"note: {len(stale)} done run(s) ran on another machine file, kernel build, disk image or gem5 extra than today's; they stay done "
        f"(their result.json says what they ran on). To rerun them on today's, launch into a new results folder (--results), "
        f"or move them out of {results}:"
    ]
    lines += [f"  {run.run_id}: {', '.join(run.differs)}" for run in stale]
    return lines
