"""Tiny throwaway initramfs images: busybox-static plus an /init script.

Used by the kernel's own tests (boot probes, locktorture), which must not
depend on the full disk image. Written in the kernel's "newc" cpio format
directly, so it needs neither root nor the cpio tool; the kernel's built-in
default initramfs already supplies /dev/console.
"""

from __future__ import annotations

import gzip
import stat
from pathlib import Path

from lockstudy.cpio import Entry, newc_archive

BUSYBOX = Path("/bin/busybox")
DIRECTORIES = ("bin", "dev", "proc", "sys", "tmp")

# Mounts the pseudo file systems and installs the busybox applets, so the
# caller's script can use plain command names.
INIT_PROLOGUE = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
"""


def busybox_initramfs(init_script: str, output: Path, busybox: Path = BUSYBOX) -> Path:
    """Write a gzip'd initramfs whose /init is the prologue plus init_script."""
    if not busybox.is_file():
        raise FileNotFoundError(f"{busybox} not found: run ./run.sh setup (Debian package busybox-static)")
    entries = [Entry(d, stat.S_IFDIR | 0o755) for d in DIRECTORIES]
    entries.append(Entry("bin/busybox", stat.S_IFREG | 0o755, busybox.read_bytes()))
    entries.append(Entry("init", stat.S_IFREG | 0o755, (INIT_PROLOGUE + init_script).encode()))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(gzip.compress(newc_archive(entries), mtime=0))
    return output
