"""Kernel configuration: merge fragments, resolve, and verify what stuck.

A build's config is base.config plus its fragments, merged by the kernel's
own scripts/kconfig/merge_config.sh (later fragments override earlier
ones), expanded with `make allnoconfig` (so everything not asked for is
off) and settled with `make olddefconfig`. Kconfig silently drops a request
whose dependencies are not met, so every requested value is then checked
against the final .config.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

NOT_SET = "is not set"

_SET_LINE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET_LINE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


class ConfigError(RuntimeError):
    """A fragment is malformed or the resolved config differs from what was asked."""


@dataclass(frozen=True)
class Request:
    option: str
    value: str  # "y", "16", '"text"', or NOT_SET
    source: Path


@dataclass(frozen=True)
class Mismatch:
    option: str
    asked: str
    got: str
    source: Path

    def describe(self) -> str:
        return f"{self.option}: asked {self.asked} ({self.source.name}), got {self.got}"


def parse_config(text: str, source: Path) -> dict[str, Request]:
    """Options a config file or fragment sets, in the .config syntax."""
    requests: dict[str, Request] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        unset = _UNSET_LINE.match(line)
        if unset:
            requests[unset.group(1)] = Request(unset.group(1), NOT_SET, source)
            continue
        if line.startswith("#"):
            continue
        assignment = _SET_LINE.match(line)
        if not assignment:
            raise ConfigError(f"{source}:{number}: not a config line: {raw!r}")
        option, value = assignment.groups()
        if value == "n":
            value = NOT_SET
        requests[option] = Request(option, value, source)
    return requests


def requested_options(fragments: Sequence[Path]) -> dict[str, Request]:
    """What the fragments ask for, the later fragment winning."""
    merged: dict[str, Request] = {}
    for fragment in fragments:
        if not fragment.is_file():
            raise ConfigError(f"config fragment {fragment} not found")
        merged.update(parse_config(fragment.read_text(), fragment))
    return merged


def resolved_values(config_text: str, source: Path) -> dict[str, str]:
    return {option: request.value for option, request in parse_config(config_text, source).items()}


def verify(requests: Mapping[str, Request], resolved: Mapping[str, str]) -> list[Mismatch]:
    """Requests the resolved config does not honour.

    An option asked to be off is honoured when it is off or absent (a
    promptless symbol whose dependencies fail does not appear at all).
    """
    mismatches = []
    for option, request in sorted(requests.items()):
        got = resolved.get(option, NOT_SET)
        if got != request.value:
            asked = "not set" if request.value == NOT_SET else request.value
            shown = "not set" if got == NOT_SET else got
            mismatches.append(Mismatch(option, asked, shown, request.source))
    return mismatches


def check(build: str, requests: Mapping[str, Request], config_file: Path) -> None:
    mismatches = verify(requests, resolved_values(config_file.read_text(), config_file))
    if mismatches:
        lines = "\n    ".join(m.describe() for m in mismatches)
        raise ConfigError(
            f"build {build}: {len(mismatches)} config option(s) did not end up as asked "
            f"(unmet dependencies or a misspelled symbol):\n    {lines}\n  resolved config: {config_file}"
        )


def configure(
    build: str,
    source_tree: Path,
    object_dir: Path,
    fragments: Sequence[Path],
    make_prefix: Sequence[str],
    env: Mapping[str, str],
    log: Path,
    pass_fds: tuple[int, ...] = (),
) -> dict[str, Request]:
    """Write object_dir/.config for the fragments and verify it; return the requests."""
    requests = requested_options(fragments)
    object_dir.mkdir(parents=True, exist_ok=True)
    merged = object_dir / "lockstudy-merged.config"

    def step(argv: list[str]) -> None:
        with open(log, "a") as sink:
            sink.write(f"$ {' '.join(argv)}\n")
            sink.flush()
            result = subprocess.run(argv, cwd=source_tree, env=dict(env), stdout=sink, stderr=subprocess.STDOUT, pass_fds=pass_fds)
        if result.returncode != 0:
            raise ConfigError(f"build {build}: `{' '.join(argv)}` failed (exit {result.returncode}); log: {log}")

    step(["bash", "scripts/kconfig/merge_config.sh", "-m", "-O", str(object_dir), *map(str, fragments)])
    (object_dir / ".config").replace(merged)
    step([*make_prefix, f"KCONFIG_ALLCONFIG={merged}", "allnoconfig"])
    step([*make_prefix, "olddefconfig"])
    check(build, requests, object_dir / ".config")
    return requests
