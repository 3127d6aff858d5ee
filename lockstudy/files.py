"""File helpers every stage uses: content hashes, atomic writes, lock probes, memos.

Standard library only: gem5's own Python imports it too (gem5-configs/).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Callable, TypeVar

HASH_BLOCK_BYTES = 1 << 20
T = TypeVar("T")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old file or the whole new one, even after a crash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as sink:
            sink.write(data)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json_atomically(path: Path, data: Any) -> None:
    """Write JSON so that readers see the old file or the whole new one, even after a crash."""
    write_bytes_atomically(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def flock_held(lock_file: Path) -> bool:
    """True while some live process holds an flock on the file (it dies with its holder)."""
    if not lock_file.exists():
        return False
    with open(lock_file, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def memoized(memo_file: Path, key: str, compute: Callable[[], T]) -> T:
    """The value remembered under `key` in a JSON file, computed once."""
    memo: dict[str, Any] = {}
    if memo_file.exists():
        try:
            memo = json.loads(memo_file.read_text())
        except json.JSONDecodeError:
            memo = {}
    if key not in memo:
        memo[key] = compute()
        write_json_atomically(memo_file, memo)
    return memo[key]


class DataFileError(ValueError):
    """A project data file (TOML) with a missing or mistyped field; the message names both."""


_REQUIRED = object()


def read_toml(path: Path, error: type[Exception] = DataFileError) -> dict[str, Any]:
    """A TOML file's tables; `error` names the file when it cannot be read or is not TOML."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


def typed_field(
    table: dict[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    where: str,
    *,
    default: Any = _REQUIRED,
    error: type[Exception] = DataFileError,
) -> Any:
    """table[key] (a dotted key walks nested tables) if it has the type `kind`.

    `where` names the file and table ("path: [settings]"); a missing field
    (without a default) or a value of another type raises `error` with
    "<where>.<key>: <reason>". A bool is not an int here, though Python's
    bool is one: `true` is no count.
    """
    value: Any = table
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            if default is not _REQUIRED:
                return default
            raise error(f"{where}.{key}: missing")
        value = value[part]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise error(f"{where}.{key}: expected {names}, got {value!r}")
    return value
