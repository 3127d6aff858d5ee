"""The newc cpio format, written reproducibly: root-owned, inodes numbered in order.

The kernel unpacks it as an initramfs; the disk image and the tests' throwaway
initramfs images both use this one writer.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass

NEWC_MAGIC = "070701"
TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    name: str  # path inside the archive, without a leading /
    mode: int  # st_mode: type and permissions
    data: bytes = b""  # file contents, or a symlink's target
    mtime: int = 0
    rdev: tuple[int, int] = (0, 0)  # major, minor of a device node


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _record(inode: int, entry: Entry, nlink: int) -> bytes:
    name = entry.name.encode() + b"\0"
    fields = [inode, entry.mode, 0, 0, nlink, entry.mtime, len(entry.data), 0, 0, *entry.rdev, len(name), 0]
    header = (NEWC_MAGIC + "".join(f"{value:08X}" for value in fields)).encode()
    return header + name + _pad(len(header) + len(name)) + entry.data + _pad(len(entry.data))


def newc_archive(entries: list[Entry]) -> bytes:
    """The entries in order, then the trailer record (inode 0, as GNU cpio writes it)."""
    out = bytearray()
    for inode, entry in enumerate(entries, start=1):
        out += _record(inode, entry, 2 if stat.S_ISDIR(entry.mode) else 1)
    out += _record(0, Entry(TRAILER, 0), 1)
    return bytes(out)
