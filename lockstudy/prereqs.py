"""What the project needs on the machine, read from its data files."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lockstudy.paths import DATA, ROOT

COMMANDS = ("setup", "test", "run", "campaign")


@dataclass(frozen=True)
class DebianPackage:
    name: str
    why: str
    needed_by: frozenset[str]


def debian_packages(path: Path = DATA / "debian-packages.toml") -> list[DebianPackage]:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    packages = []
    for index, entry in enumerate(data.get("package", [])):
        unknown = set(entry.get("needed_by", [])) - set(COMMANDS)
        if unknown:
            raise ValueError(f"{path}: package[{index}].needed_by: unknown command(s) {sorted(unknown)}")
        packages.append(DebianPackage(entry["name"], entry["why"], frozenset(entry.get("needed_by", []))))
    return packages


def installed_debian_packages(names: list[str]) -> set[str]:
    """The subset of `names` that dpkg reports as installed."""
    if not shutil.which("dpkg-query"):
        return set()
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *names],
        capture_output=True,
        text=True,
    )
    installed = set()
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "installed":
            installed.add(parts[0])
    return installed


def python_requirements() -> list[str]:
    """The pinned requirements of pyproject.toml, test extras included."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return requirements


def pinned(requirement: str) -> tuple[str, str]:
    """Split 'name==version' (the only form pyproject.toml uses)."""
    name, sep, version = requirement.partition("==")
    if not sep:
        raise ValueError(f"pyproject.toml: requirement {requirement!r} is not pinned with ==")
    return name.strip(), version.strip()
