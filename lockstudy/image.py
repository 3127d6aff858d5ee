"""The disk image, built without root from Debian packages.

`./run.sh build image` (and the image step of `./run.sh setup`) writes
build/image/:
- rootfs.ext2      the root file system for gem5's IDE disk and QEMU (root=/dev/sda)
- rootfs.cpio.gz   the same tree as an initramfs
- build-info.json  content hash, inputs with their hashes, Debian package versions

What goes in: busybox-static with its applet links, the static workloads
(`make install` of workloads/), Debian's dbench with its shared libraries
and the loader, a trimmed dbench loadfile, and disk-image/overlay/ (/init
and its spec parser). The same overlay and the same `make install` serve
the buildroot recipe in disk-image/buildroot/.

Reproducible: the tree is a sorted manifest; the ext2 image is made by
mke2fs (fixed UUID, hash seed, our mke2fs.conf) and filled by one debugfs
script in manifest order, with E2FSPROGS_FAKE_TIME pinning every
timestamp; the cpio is written here (sorted, root-owned, fixed mtime) and
gzip'd with mtime 0. Same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
import tomllib
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from lockstudy import cpio, dbench_loadfile, workloads
from lockstudy.files import file_sha256
from lockstudy.console import error, info, step
from lockstudy.paths import ROOT, build_dir

IMAGE_DIR = ROOT / "disk-image"
CONFIG_FILE = IMAGE_DIR / "image.toml"
MKE2FS_CONF = IMAGE_DIR / "mke2fs.conf"
OVERLAY_DIR = IMAGE_DIR / "overlay"
LOADFILE_IN_IMAGE = "opt/lockstudy/share/dbench-client.txt"
DBENCH_IN_IMAGE = "usr/bin/dbench"
BUSYBOX_IN_IMAGE = "bin/busybox"
# Applets we do not link: /init is ours, so init and linuxrc point at it.
INIT_LINKS = ("sbin/init", "linuxrc")
# Directories every boot needs, whether or not a file lands in them.
BASE_DIRS = ("dev", "proc", "sys", "tmp", "scratch", "root", "etc", "mnt")
DEVICE_NODES = (("dev/console", 0o600, 5, 1), ("dev/null", 0o666, 1, 3))
GZIP_LEVEL = 6  # zlib's default: level 9 takes twice as long for 2% less


class ImageError(RuntimeError):
    """The image cannot be built as configured."""


@dataclass(frozen=True)
class ImageConfig:
    uuid: str
    hash_seed: str
    epoch: int
    label: str
    size_mib: int
    inodes: int
    block_bytes: int
    loadfile_lines: int
    packages: tuple[str, ...]
    busybox: Path
    dbench: Path
    dbench_loadfile: Path


def load_config(path: Path = CONFIG_FILE) -> ImageConfig:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)

    def value(section: str, key: str) -> object:
        try:
            return data[section][key]
        except KeyError:
            raise ImageError(f"{path}: missing [{section}] {key}") from None

    def text(section: str, key: str) -> str:
        found = value(section, key)
        if not isinstance(found, str) or not found:
            raise ImageError(f"{path}: [{section}] {key} = {found!r}: expected a non-empty string")
        return found

    def count(section: str, key: str) -> int:
        found = value(section, key)
        if not isinstance(found, int) or isinstance(found, bool) or found <= 0:
            raise ImageError(f"{path}: [{section}] {key} = {found!r}: expected a positive integer")
        return found

    packages = value("debian", "packages")
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise ImageError(f"{path}: [debian] packages = {packages!r}: expected a list of package names")
    return ImageConfig(
        uuid=text("identity", "uuid"),
        hash_seed=text("identity", "hash_seed"),
        epoch=count("identity", "epoch"),
        label=text("identity", "label"),
        size_mib=count("ext2", "size_mib"),
        inodes=count("ext2", "inodes"),
        block_bytes=count("ext2", "block_bytes"),
        loadfile_lines=count("dbench", "loadfile_lines"),
        packages=tuple(packages),
        busybox=Path(text("debian", "busybox")),
        dbench=Path(text("debian", "dbench")),
        dbench_loadfile=Path(text("debian", "dbench_loadfile")),
    )


# ---- the tree -------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """One entry of the image, path relative to its root."""

    path: str
    kind: str  # "dir", "file", "symlink", "char"
    mode: int  # permission bits
    source: Path | None = None  # file content
    target: str = ""  # symlink target
    rdev: tuple[int, int] = (0, 0)  # char device (major, minor)

    @property
    def st_mode(self) -> int:
        kinds = {"dir": stat.S_IFDIR, "file": stat.S_IFREG, "symlink": stat.S_IFLNK, "char": stat.S_IFCHR}
        return kinds[self.kind] | self.mode


def shared_libraries(program: Path) -> list[tuple[str, Path]]:
    """(path in the image, host file) for each library and the loader `ldd` names."""
    result = subprocess.run(["ldd", str(program)], capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"ldd {program} failed: {result.stderr.strip()}")
    found: list[tuple[str, Path]] = []
    for line in result.stdout.splitlines():
        words = line.split()
        if "=>" in words:
            at = words.index("=>")
            if at + 1 < len(words) and words[at + 1].startswith("/"):
                host = Path(words[at + 1])
                found.append((f"lib/x86_64-linux-gnu/{host.name}", host))
        elif words and words[0].startswith("/"):  # the loader, by the absolute path programs name
            found.append((words[0].lstrip("/"), Path(words[0])))
    if not found:
        raise ImageError(f"ldd {program}: no libraries found (is it a dynamic program?)")
    return found


def busybox_applets(busybox: Path) -> list[str]:
    result = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"{busybox} --list-full failed: is busybox-static installed? run ./run.sh setup")
    return sorted(line.strip() for line in result.stdout.splitlines() if line.strip())


def add_parents(nodes: dict[str, Node], path: str) -> None:
    parent = os.path.dirname(path)
    while parent and parent not in nodes:
        nodes[parent] = Node(parent, "dir", 0o755)
        parent = os.path.dirname(parent)


def add(nodes: dict[str, Node], node: Node) -> None:
    if node.path in nodes and nodes[node.path] != node:
        raise ImageError(f"two sources for /{node.path}: {nodes[node.path]} and {node}")
    add_parents(nodes, node.path)
    nodes[node.path] = node


def overlay_nodes(overlay: Path) -> list[Node]:
    nodes = []
    for path in sorted(overlay.rglob("*")):
        rel = path.relative_to(overlay).as_posix()
        if path.is_symlink():
            nodes.append(Node(rel, "symlink", 0o777, target=os.readlink(path)))
        elif path.is_dir():
            nodes.append(Node(rel, "dir", 0o755))
        else:
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            nodes.append(Node(rel, "file", mode, source=path))
    return nodes


def manifest(config: ImageConfig, workloads_root: Path, loadfile: Path) -> list[Node]:
    """Every entry of the image, sorted by path (parents first)."""
    for what, path in (("busybox", config.busybox), ("dbench", config.dbench), ("dbench loadfile", config.dbench_loadfile)):
        if not path.is_file():
            raise ImageError(f"{path} ({what}) not found: run ./run.sh setup (Debian packages {', '.join(config.packages)})")
    nodes: dict[str, Node] = {}
    for directory in BASE_DIRS:
        add(nodes, Node(directory, "dir", 0o1777 if directory == "tmp" else 0o755))
    for path, mode, major, minor in DEVICE_NODES:
        add(nodes, Node(path, "char", mode, rdev=(major, minor)))
    add(nodes, Node(BUSYBOX_IN_IMAGE, "file", 0o755, source=config.busybox))
    for applet in busybox_applets(config.busybox):
        if applet in INIT_LINKS or applet == BUSYBOX_IN_IMAGE:
            continue
        add(nodes, Node(applet, "symlink", 0o777, target="/" + BUSYBOX_IN_IMAGE))
    for link in INIT_LINKS:
        add(nodes, Node(link, "symlink", 0o777, target="/init"))
    add(nodes, Node(DBENCH_IN_IMAGE, "file", 0o755, source=config.dbench))
    for path, host in shared_libraries(config.dbench):
        add(nodes, Node(path, "file", 0o755, source=host.resolve()))
    add(nodes, Node(LOADFILE_IN_IMAGE, "file", 0o644, source=loadfile))
    for path in sorted(workloads_root.rglob("*")):
        rel = path.relative_to(workloads_root).as_posix()
        if path.is_dir():
            add(nodes, Node(rel, "dir", 0o755))
        else:
            add(nodes, Node(rel, "file", 0o755, source=path))
    for node in overlay_nodes(OVERLAY_DIR):
        add(nodes, node)
    return [nodes[path] for path in sorted(nodes)]


def manifest_hash(nodes: Iterable[Node]) -> str:
    """The image's content hash: paths, types, modes, targets and file contents."""
    digest = hashlib.sha256()
    for node in nodes:
        content = file_sha256(node.source) if node.source else ""
        digest.update(f"{node.path}\0{node.st_mode:o}\0{node.target}\0{node.rdev}\0{content}\n".encode())
    return digest.hexdigest()


# ---- the two image formats --------------------------------------------------


def newc_cpio(nodes: list[Node], mtime: int) -> bytes:
    """The nodes as a newc archive: root-owned, one fixed mtime, inodes numbered in order."""
    entries = [
        cpio.Entry(
            node.path,
            node.st_mode,
            node.source.read_bytes() if node.source else node.target.encode(),
            mtime,
            node.rdev,
        )
        for node in nodes
    ]
    return cpio.newc_archive(entries)


def debugfs_script(nodes: list[Node]) -> str:
    """debugfs commands that create the nodes in order, all owned by root."""
    lines: list[str] = []
    for node in nodes:
        quoted = f'"/{node.path}"'
        if node.kind == "dir":
            lines.append(f"mkdir {quoted}")
        elif node.kind == "file":
            assert node.source is not None
            lines.append(f'write "{node.source}" {quoted}')
        elif node.kind == "symlink":
            lines.append(f'symlink {quoted} "{node.target}"')
        elif node.kind == "char":  # debugfs's mknod takes a name in the current directory only
            parent, name = os.path.split(node.path)
            lines += [f'cd "/{parent}"', f'mknod "{name}" c {node.rdev[0]} {node.rdev[1]}', 'cd "/"']
        if node.kind != "symlink":
            lines.append(f"sif {quoted} mode 0{node.st_mode:o}")
        lines.append(f"sif {quoted} uid 0")
        lines.append(f"sif {quoted} gid 0")
    return "\n".join(lines) + "\n"


def e2fs_environment(config: ImageConfig) -> dict[str, str]:
    return dict(os.environ, E2FSPROGS_FAKE_TIME=str(config.epoch), MKE2FS_CONFIG=str(MKE2FS_CONF), LC_ALL="C")


def write_ext2(nodes: list[Node], config: ImageConfig, output: Path, scratch: Path) -> None:
    env = e2fs_environment(config)
    output.unlink(missing_ok=True)
    mke2fs = [
        "mke2fs", "-q", "-F", "-t", "ext2", "-b", str(config.block_bytes), "-N", str(config.inodes),
        "-m", "0", "-L", config.label, "-U", config.uuid,
        "-E", f"hash_seed={config.hash_seed},root_owner=0:0,nodiscard",
        str(output), f"{config.size_mib}M",
    ]  # fmt: skip
    result = subprocess.run(mke2fs, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"`{shlex.join(mke2fs)}` failed: {result.stderr.strip()}")
    script = scratch / "debugfs.cmds"
    script.write_text(debugfs_script(nodes))
    result = subprocess.run(["debugfs", "-w", "-f", str(script), str(output)], env=env, capture_output=True, text=True)
    # debugfs reports a failed command on stderr but still exits 0
    problems = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("debugfs ")]
    if result.returncode != 0 or problems:
        raise ImageError(f"debugfs on {output} failed: {'; '.join(problems[:5]) or result.returncode}")
    result = subprocess.run(["e2fsck", "-fn", str(output)], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageError(f"e2fsck -fn {output} finds problems:\n{result.stdout[-2000:]}")


def write_cpio_gz(nodes: list[Node], config: ImageConfig, output: Path) -> None:
    output.write_bytes(gzip.compress(newc_cpio(nodes, config.epoch), compresslevel=GZIP_LEVEL, mtime=0))


# ---- inputs, provenance, the build ----------------------------------------------


def output_dir() -> Path:
    return build_dir() / "image"


def ext2_path() -> Path:
    return output_dir() / "rootfs.ext2"


def cpio_path() -> Path:
    return output_dir() / "rootfs.cpio.gz"


def info_path() -> Path:
    return output_dir() / "build-info.json"


def debian_versions(packages: Iterable[str]) -> dict[str, str]:
    versions = {}
    for package in packages:
        result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
        versions[package] = result.stdout.strip() if result.returncode == 0 else "not installed"
    return versions


def tool_versions() -> dict[str, str]:
    def first_line(argv: list[str]) -> str:
        result = subprocess.run(argv, capture_output=True, text=True)
        text = (result.stdout or result.stderr).strip()
        return text.splitlines()[0] if text else "unknown"

    return {
        "mke2fs": first_line(["mke2fs", "-V"]),
        "gcc": first_line(["gcc", "--version"]),
        "libc6-dev": debian_versions(["libc6-dev"])["libc6-dev"],
        "zlib": zlib.ZLIB_VERSION,
    }


def input_files(config: ImageConfig) -> dict[str, Path]:
    """Every file whose content decides the image (label -> path)."""
    files = {
        "disk-image/image.toml": CONFIG_FILE,
        "disk-image/mke2fs.conf": MKE2FS_CONF,
        "lockstudy/image.py": Path(__file__),
        "lockstudy/dbench_loadfile.py": Path(dbench_loadfile.__file__),
        "busybox": config.busybox,
        "dbench": config.dbench,
        "dbench loadfile": config.dbench_loadfile,
    }
    for path in sorted(OVERLAY_DIR.rglob("*")):
        if path.is_file():
            files[f"disk-image/overlay/{path.relative_to(OVERLAY_DIR).as_posix()}"] = path
    for path in workloads.source_files():
        files[f"workloads/{path.name}"] = path
    for image_path, host in shared_libraries(config.dbench):
        files[image_path] = host.resolve()
    return files


def inputs_digest(config: ImageConfig) -> tuple[str, dict[str, str]]:
    hashes = {label: file_sha256(path) for label, path in input_files(config).items()}
    versions = {**debian_versions(config.packages), **tool_versions()}
    blob = json.dumps({"files": hashes, "versions": versions, "config": asdict(config)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest(), hashes


def up_to_date(digest: str) -> bool:
    if not (ext2_path().is_file() and cpio_path().is_file() and info_path().is_file()):
        return False
    try:
        recorded = json.loads(info_path().read_text())
    except json.JSONDecodeError:
        return False
    return recorded.get("inputs_hash") == digest


def trimmed_loadfile(source: Path, lines: int, output: Path) -> Path:
    """dbench's loadfile cut at its first balanced line at or after `lines` (see dbench_loadfile)."""
    try:
        dbench_loadfile.write_trimmed(source, lines, output)
    except dbench_loadfile.LoadfileError as error:
        raise ImageError(f"[dbench] loadfile_lines = {lines}: {error}") from None
    return output


def build_image(*, force: bool = False, jobs: int | None = None) -> Path:
    """Build rootfs.ext2, rootfs.cpio.gz and build-info.json; skip when up to date."""
    started = time.monotonic()
    config = load_config()
    for tool in ("mke2fs", "debugfs", "e2fsck", "ldd", "make", "dpkg-query"):
        if shutil.which(tool) is None:
            raise ImageError(f"{tool} not found: run ./run.sh setup")
    workloads.build(jobs, echo=False)
    digest, hashes = inputs_digest(config)
    if not force and up_to_date(digest):
        info(f"{output_dir()} up to date")
        return output_dir()
    output_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="image-", dir=output_dir()) as scratch_name:
        scratch = Path(scratch_name)
        staged = scratch / "workloads"
        workloads.install(staged)
        loadfile = trimmed_loadfile(config.dbench_loadfile, config.loadfile_lines, scratch / "dbench-client.txt")
        with open(loadfile, "rb") as kept:
            loadfile_lines = sum(1 for _ in kept)
        nodes = manifest(config, staged, loadfile)
        content = manifest_hash(nodes)
        ext2_tmp, cpio_tmp = scratch / "rootfs.ext2", scratch / "rootfs.cpio.gz"
        write_ext2(nodes, config, ext2_tmp, scratch)
        write_cpio_gz(nodes, config, cpio_tmp)
        ext2_tmp.replace(ext2_path())
        cpio_tmp.replace(cpio_path())
        files = sum(1 for n in nodes if n.kind == "file")
    seconds = time.monotonic() - started
    provenance = {
        "artifact": "lockstudy disk image",
        "content_hash": content,
        "inputs_hash": digest,
        "outputs": {
            path.name: {"sha256": file_sha256(path), "bytes": path.stat().st_size} for path in (ext2_path(), cpio_path())
        },
        "entries": len(nodes),
        "files": files,
        "inputs": hashes,
        "debian_packages": debian_versions(config.packages),
        "tools": tool_versions(),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "programs": workloads.programs(),
        "dbench_loadfile_lines": loadfile_lines,
        "command": "./run.sh build image",
        "build_seconds": round(seconds, 2),
    }
    info_path().write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n")
    info(f"{ext2_path()} and {cpio_path().name}: {len(nodes)} entries, content {content[:16]}, {seconds:.1f} s")
    return output_dir()


def run_build_image(args: argparse.Namespace) -> int:
    try:
        step("disk image")
        build_image(force=args.force, jobs=args.jobs)
    except (ImageError, workloads.WorkloadError) as exc:
        error(str(exc))
        return 1
    return 0


def setup_step(args: argparse.Namespace) -> None:
    try:
        build_image(jobs=getattr(args, "jobs", None))
    except (ImageError, workloads.WorkloadError) as exc:
        raise RuntimeError(str(exc)) from exc


def register(targets: argparse._SubParsersAction) -> None:
    parser = targets.add_parser(
        "image",
        help="rootfs.ext2 + rootfs.cpio.gz from Debian packages (no root needed)",
        description=(
            "Build the disk image from Debian packages without root: busybox-static, the static "
            "workloads, Debian's dbench with its libraries, disk-image/overlay (/init). Outputs "
            "build/image/rootfs.ext2, rootfs.cpio.gz and build-info.json; skipped when up to date. "
            "Same inputs give identical bytes."
        ),
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel make jobs for the workloads")
    parser.set_defaults(func=run_build_image)


