"""The built inputs of a run (kernel, image, machine file) and their identities."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lockstudy.files import file_sha256
from lockstudy.paths import ROOT, build_dir

MACHINES_DIR = ROOT / "gem5-configs" / "machines"


class MissingArtifact(RuntimeError):
    pass


@dataclass(frozen=True)
class Artifact:
    path: Path
    identity: str  # build id or content hash, from the artifact's build-info.json


def read_build_info(directory: Path, what: str) -> dict[str, object]:
    info = directory / "build-info.json"
    if not info.is_file():
        raise MissingArtifact(f"{what}: {info} is missing; run ./run.sh setup")
    return json.loads(info.read_text())


def kernel(build: str, image_kind: str) -> Artifact:
    """`image_kind` is "vmlinux" (gem5) or "bzImage" (QEMU)."""
    directory = build_dir() / "kernel" / build
    info = read_build_info(directory, f"kernel build {build}")
    path = directory / image_kind
    if not path.is_file():
        raise MissingArtifact(f"kernel build {build}: {path} is missing; run ./run.sh build kernel --build {build}")
    return Artifact(path, str(info["build_id"]))


def kernel_binary_sha256(build: str) -> str:
    """The sha256 of the vmlinux a kernel build made (its build-info.json `outputs`): what gem5 boots.

    Two builds of one recipe from a re-packaged source (Debian's 6.1.192-2 and
    -3 of linux-source-6.1) have two build ids and can make the same vmlinux."""
    directory = build_dir() / "kernel" / build
    info = read_build_info(directory, f"kernel build {build}")
    outputs = info.get("outputs")
    vmlinux = outputs.get("vmlinux") if isinstance(outputs, dict) else None
    sha = vmlinux.get("sha256") if isinstance(vmlinux, dict) else None
    if not isinstance(sha, str):
        raise MissingArtifact(f"kernel build {build}: {directory / 'build-info.json'} records no outputs.vmlinux.sha256; run ./run.sh build kernel --build {build}")
    return sha


def disk_image() -> Artifact:
    directory = build_dir() / "image"
    info = read_build_info(directory, "disk image")
    path = directory / "rootfs.ext2"
    if not path.is_file():
        raise MissingArtifact(f"disk image: {path} is missing; run ./run.sh build image")
    return Artifact(path, str(info["content_hash"]))


def machine_path(name: str) -> Path:
    """gem5-configs/machines/NAME.toml (MissingArtifact: no such file)."""
    path = MACHINES_DIR / f"{name}.toml"
    if not path.is_file():
        raise MissingArtifact(f"machine {name}: {path} does not exist")
    return path


def machine_file(name: str) -> Artifact:
    """A machine file, identified by its content (gem5-configs/machine.py content_sha256), not its bytes."""
    from lockstudy.campaign.machines import machine_module

    path = machine_path(name)
    try:
        return Artifact(path, machine_module().file_content_sha256(path))
    except ValueError as exc:  # MachineError
        raise MissingArtifact(str(exc)) from None


def machine_file_sha256(name: str) -> str:
    """The sha256 of a machine file's bytes, which runs made before content hashes recorded instead."""
    return file_sha256(machine_path(name))
