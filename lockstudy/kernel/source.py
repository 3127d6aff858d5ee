"""The kernel source: a 6.1 tarball, unpacked once, and our patched tree.

Layout under cache_dir()/kernel/ (outside the clone, shared by checkouts):

    source/<tarball-key>/<top>/              the pristine unpacked tarball
    tree/<tarball-key>-<series-key>/src/     hard-linked copy, series applied
    tree/<tarball-key>-<series-key>/obj/<build>/   out-of-tree object dirs

A tree is keyed by the tarball's sha256 and the patch series' content hash,
so a changed patch gives a fresh tree. `patch` replaces the files it edits
(it writes a new file and renames it), so the hard links to the pristine
source are never written through. Object dirs live at the same depth under
every tree, which lets ccache (with CCACHE_BASEDIR) reuse compiles of files
a new series did not change.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from lockstudy.files import file_sha256, flock_held, memoized
from lockstudy.kernel.specs import SERIES_FILE
from lockstudy.paths import ROOT, cache_dir

TARBALL_ENV = "LOCKSTUDY_KERNEL_TARBALL"
DEBIAN_PACKAGE = "linux-source-6.1"
DEBIAN_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
KEY_LENGTH = 16
TREE_STAMP = "lockstudy-tree.json"


class SourceError(RuntimeError):
    """The kernel source cannot be found, unpacked or patched."""


@dataclass(frozen=True)
class KernelSource:
    tarball: Path
    sha256: str
    origin: str  # "debian" or "tarball"
    debian_version: str | None

    @property
    def key(self) -> str:
        return self.sha256[:KEY_LENGTH]

    def describe(self) -> str:
        if self.debian_version:
            return f"Debian {DEBIAN_PACKAGE} {self.debian_version}"
        return f"tarball {self.tarball}"


@dataclass(frozen=True)
class PatchSeries:
    series_file: Path
    patches: tuple[Path, ...]
    digest: str

    @property
    def key(self) -> str:
        return self.digest[:KEY_LENGTH]

    def extended(self, extra: tuple[Path, ...]) -> PatchSeries:
        """The series with `extra` applied after it (one build's own patches, builds.toml extra_patches):
        another digest, so a patched tree of its own."""
        if not extra:
            return self
        digest = hashlib.sha256(self.digest.encode())
        for patch in extra:
            digest.update(f"{patch.name}\0{file_sha256(patch)}\n".encode())
        return PatchSeries(self.series_file, (*self.patches, *extra), digest.hexdigest())

    def defined_kconfig_symbols(self) -> frozenset[str]:
        """Kconfig symbols that some patch of the series adds."""
        pattern = re.compile(r"^\+\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$", re.MULTILINE)
        symbols: set[str] = set()
        for patch in self.patches:
            symbols.update(pattern.findall(patch.read_text(errors="replace")))
        return frozenset(symbols)


    def prompted_bool_symbols(self) -> list[str]:
        """Bool symbols with a prompt that the series adds, in series order.

        allnoconfig turns every prompted option off, so these are the
        options our kernel would silently lose without asking for them.
        """
        definition = re.compile(r"^\+\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*\n\+\s*bool\s+\"", re.MULTILINE)
        symbols: list[str] = []
        for patch in self.patches:
            for symbol in definition.findall(patch.read_text(errors="replace")):
                if symbol not in symbols:
                    symbols.append(symbol)
        return symbols



def kernel_cache() -> Path:
    return cache_dir() / "kernel"


@contextmanager
def exclusive(lock_file: Path) -> Iterator[int]:
    """Hold an exclusive lock, so that concurrent builds do not collide.

    Yields the lock's file descriptor: pass it to child processes
    (`pass_fds`) and the lock stays held until the last of them exits, even
    if this process is killed first.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield handle.fileno()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_tarball_sha256(tarball: Path) -> str:
    """sha256 of the tarball, remembered by path, size and mtime."""
    stat = tarball.stat()
    identity = f"{tarball.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return memoized(kernel_cache() / "tarball-sha256.json", identity, lambda: file_sha256(tarball))


def debian_package_version(package: str) -> str | None:
    if not shutil.which("dpkg-query"):
        return None
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return result.stdout.strip() or None if result.returncode == 0 else None


def locate_source(environ: Mapping[str, str] | None = None) -> KernelSource:
    """The tarball named by LOCKSTUDY_KERNEL_TARBALL, else Debian's linux-source-6.1."""
    environ = os.environ if environ is None else environ
    given = environ.get(TARBALL_ENV)
    if given:
        tarball = Path(given)
        if not tarball.is_file():
            raise SourceError(f"{TARBALL_ENV}={given}: no such file (give a kernel.org linux-6.1.y tarball)")
        return KernelSource(tarball, cached_tarball_sha256(tarball), "tarball", None)
    if not DEBIAN_TARBALL.is_file():
        raise SourceError(
            f"{DEBIAN_TARBALL} not found: run ./run.sh setup (it installs {DEBIAN_PACKAGE}), "
            f"or set {TARBALL_ENV} to a kernel.org 6.1.y tarball"
        )
    return KernelSource(DEBIAN_TARBALL, cached_tarball_sha256(DEBIAN_TARBALL), "debian", debian_package_version(DEBIAN_PACKAGE))


def read_series(series_file: Path = SERIES_FILE) -> PatchSeries:
    """The patches named by a quilt-style series file, checked to exist."""
    if not series_file.is_file():
        raise SourceError(f"{series_file}: not found (an empty series needs the file, with comments only)")
    patches: list[Path] = []
    digest = hashlib.sha256()
    for number, raw in enumerate(series_file.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise SourceError(f"{series_file}:{number}: expected one patch file name, got {raw!r} (patch options are not supported; all patches apply with -p1)")
        patch = series_file.parent / line
        if not patch.is_file():
            raise SourceError(f"{series_file}:{number}: patch {line!r} not found in {series_file.parent}")
        patches.append(patch)
        digest.update(f"{line}\0{file_sha256(patch)}\n".encode())
    return PatchSeries(series_file, tuple(patches), digest.hexdigest())


def kernel_version(source_tree: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL from the tree's top Makefile."""
    fields: dict[str, str] = {}
    for line in (source_tree / "Makefile").read_text().splitlines()[:10]:
        name, sep, value = line.partition("=")
        if sep:
            fields[name.strip()] = value.strip()
    try:
        return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}{fields.get('EXTRAVERSION', '')}"
    except KeyError as exc:
        raise SourceError(f"{source_tree}/Makefile: no {exc.args[0]} line: not a kernel source tree") from exc


def unpacked_source(source: KernelSource) -> Path:
    """The pristine source tree, unpacked from the tarball the first time."""
    base = kernel_cache() / "source" / source.key
    with exclusive(kernel_cache() / "source" / f"{source.key}.lock"):
        tops = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
        if len(tops) == 1 and (tops[0] / "Makefile").is_file():
            return tops[0]
        partial = base.with_name(f"{source.key}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        partial.mkdir(parents=True)
        subprocess.run(["tar", "-xf", str(source.tarball), "-C", str(partial)], check=True)
        tops = [p for p in partial.iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "Makefile").is_file():
            raise SourceError(f"{source.tarball}: expected one top-level kernel source directory, found {[p.name for p in tops]}")
        partial.rename(base)
        return base / tops[0].name


def tree_dir(source: KernelSource, series: PatchSeries) -> Path:
    return kernel_cache() / "tree" / f"{source.key}-{series.key}"


def apply_patch(tree: Path, patch: Path, position: int, total: int, version: str) -> None:
    result = subprocess.run(
        ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-i", str(patch)],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        tail = "\n    ".join(output[-15:])
        raise SourceError(
            f"patch {position}/{total} {patch.relative_to(ROOT) if patch.is_relative_to(ROOT) else patch} "
            f"does not apply to Linux {version} (after the {position - 1} before it in the series):\n    {tail}"
        )


def patched_tree(source: KernelSource, series: PatchSeries) -> Path:
    """The source tree with the series applied; made once per (tarball, series)."""
    top = tree_dir(source, series)
    stamp = top / TREE_STAMP
    if stamp.is_file():
        return top / "src"
    pristine = unpacked_source(source)
    version = kernel_version(pristine)
    with exclusive(top.with_name(top.name + ".lock")):
        if stamp.is_file():
            return top / "src"
        shutil.rmtree(top / "src", ignore_errors=True)
        top.mkdir(parents=True, exist_ok=True)
        partial = top / "src.partial"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["cp", "-al", str(pristine), str(partial)], check=True)
        try:
            for position, patch in enumerate(series.patches, start=1):
                apply_patch(partial, patch, position, len(series.patches), version)
        except SourceError:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        partial.rename(top / "src")
        stamp.write_text(
            json.dumps(
                {
                    "tarball_sha256": source.sha256,
                    "series_sha256": series.digest,
                    "patches": [p.name for p in series.patches],
                    "kernel_version": version,
                },
                indent=1,
            )
            + "\n"
        )
    return top / "src"



def prune_trees(keep: int, current: Path) -> list[Path]:
    """Delete all but the `keep` most recently used patched trees.

    A tree is used when a build runs in it (its stamp is touched then).
    Trees with a build in progress (a held object-dir lock) are left alone.
    """
    trees_root = kernel_cache() / "tree"
    if not trees_root.is_dir():
        return []
    trees = [t for t in trees_root.iterdir() if (t / TREE_STAMP).is_file() and t != current]
    trees.sort(key=lambda t: (t / TREE_STAMP).stat().st_mtime, reverse=True)
    removed = []
    for tree in trees[max(keep - 1, 0):]:
        if any(flock_held(lock) for lock in (tree / "obj").glob("*.lock")):
            continue
        (tree / TREE_STAMP).unlink()
        shutil.rmtree(tree, ignore_errors=True)
        tree.with_name(tree.name + ".lock").unlink(missing_ok=True)
        removed.append(tree)
    return removed


