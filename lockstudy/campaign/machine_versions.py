"""Earlier versions of the machine files, for runs that recorded only their file's sha256.

A machine's identity is its content hash (gem5-configs/machine.py
content_sha256): an edit of a machine file's comments keeps the runs made
on it current, an edit of a value makes them stale. Runs made before that
recorded the sha256 of their machine file's bytes (result.json
provenance.machine.sha256; the run archive's made_with.machine).
lockstudy/data/machine_file_versions.json gives the content hash of every
version of every machine file in the repository's history, so that those
runs are judged by content too. It is made from git:

    .venv/bin/python -m lockstudy.campaign.machine_versions --write

and a test checks it against git. Runs made since record their content
hash, so the table need not grow when a machine file changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

from lockstudy.paths import ROOT

VERSIONS_FILE = ROOT / "lockstudy" / "data" / "machine_file_versions.json"
MACHINES_IN_REPOSITORY = "gem5-configs/machines"


class HistoryUnavailable(RuntimeError):
    """No git, or a checkout without the history of the machine files."""


@lru_cache(maxsize=1)
def recorded_versions() -> dict[str, dict[str, str]]:
    """{machine file name: {file sha256: content sha256}} from VERSIONS_FILE ({} when it is absent)."""
    if not VERSIONS_FILE.is_file():
        return {}
    return json.loads(VERSIONS_FILE.read_text())["versions"]


def content_of_version(file_name: str | None, file_sha256: str) -> str | None:
    """The content hash of the machine file version whose bytes hash to `file_sha256` (None: not a known version)."""
    versions = recorded_versions()
    names = [file_name] if file_name else sorted(versions)
    for name in names:
        content = versions.get(name, {}).get(file_sha256)
        if content:
            return content
    return None


def content_sha256_of_text(text: str) -> str:
    """gem5-configs/machine.py content_sha256 of a machine file's text."""
    from lockstudy.campaign.machines import machine_module

    return machine_module().content_sha256(tomllib.loads(text))


def _git(repo: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise HistoryUnavailable(f"git {' '.join(args)}: {exc}") from None
    return done.stdout


def versions_in_history(repo: Path = ROOT) -> dict[str, dict[str, str]]:
    """Every version of every machine file that a commit of `repo` holds, as recorded_versions() lays it out."""
    if _git(repo, "rev-parse", "--is-shallow-repository").strip() == b"true":
        raise HistoryUnavailable(f"{repo} is a shallow clone: its machine files' history is cut")
    names = sorted(path.name for path in (repo / MACHINES_IN_REPOSITORY).glob("*.toml"))
    versions: dict[str, dict[str, str]] = {}
    for name in names:
        path = f"{MACHINES_IN_REPOSITORY}/{name}"
        found: dict[str, str] = {}
        for commit in _git(repo, "log", "--format=%H", "--", path).decode().split():
            try:
                data = _git(repo, "show", f"{commit}:{path}")
            except HistoryUnavailable:
                continue  # the commit that deleted it
            file_sha = hashlib.sha256(data).hexdigest()
            if file_sha not in found:
                try:
                    found[file_sha] = content_sha256_of_text(data.decode("utf-8"))
                except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                    continue  # a version that never loaded; no run was made on it
        versions[name] = dict(sorted(found.items()))
    return versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lockstudy.campaign.machine_versions",
        description=f"List every version of the machine files in git's history with its content hash; "
        f"--write puts them in {VERSIONS_FILE.relative_to(ROOT)}.",
    )
    parser.add_argument("--write", action="store_true", help=f"write {VERSIONS_FILE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    try:
        versions = versions_in_history()
    except HistoryUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps({"about": "machine file sha256 -> content sha256 (lockstudy/campaign/machine_versions.py)",
                       "versions": versions}, indent=1, sort_keys=True) + "\n"  # fmt: skip
    if args.write:
        VERSIONS_FILE.write_text(text)
        print(f"wrote {VERSIONS_FILE.relative_to(ROOT)}: {sum(map(len, versions.values()))} version(s) of {len(versions)} file(s)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
