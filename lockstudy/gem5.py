"""Finding and describing the gem5 binary the user supplies.

The project never builds gem5 and contains none of its code: the user
builds gem5 (v24.0 or newer, its default X86 `gem5.opt` target) and names
the binary in the GEM5 environment variable.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

MINIMUM_VERSION = (24, 0)
BUILD_DOCS = "https://www.gem5.org/documentation/general_docs/building"
HOW_TO_GET = (
    f"build gem5 v24.0 or newer from its source (its default X86 gem5.opt target; "
    f"see {BUILD_DOCS}), then export GEM5=/path/to/build/X86/gem5.opt"
)
BUILD_INFO_TIMEOUT_S = 120


class Gem5Unavailable(RuntimeError):
    """No usable gem5: the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Gem5Info:
    path: Path
    version: str
    build_options: dict[str, str]

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", self.version)[:4])

    @property
    def has_x86(self) -> bool:
        return self.build_options.get("USE_X86_ISA") == "True" or self.build_options.get("TARGET_ISA") == "x86"

    @property
    def ruby_protocol(self) -> str:
        return self.build_options.get("PROTOCOL", "")

    def as_provenance(self) -> dict[str, str]:
        return {"path": str(self.path), "version": self.version, "protocol": self.ruby_protocol}


def parse_build_info(text: str) -> tuple[str, dict[str, str]]:
    """Parse the output of `gem5.opt --build-info`."""
    match = re.search(r"^gem5 version (\S+)", text, re.MULTILINE)
    if not match:
        raise ValueError("no 'gem5 version' line in the --build-info output")
    options = dict(re.findall(r"^\s+(\w+) = (.*)$", text, re.MULTILINE))
    return match.group(1), {key: value.strip() for key, value in options.items()}


def find_gem5(environ: dict[str, str] | None = None) -> Gem5Info:
    env = os.environ if environ is None else environ
    value = env.get("GEM5", "")
    if not value:
        raise Gem5Unavailable(f"GEM5 is not set. gem5 is a prerequisite you supply: {HOW_TO_GET}")
    path = Path(value)
    if not path.is_file():
        raise Gem5Unavailable(f"GEM5={value}: no such file. {HOW_TO_GET}")
    if not os.access(path, os.X_OK):
        raise Gem5Unavailable(f"GEM5={value}: not executable (chmod +x it)")
    try:
        result = subprocess.run(
            [str(path), "--build-info"], capture_output=True, text=True, timeout=BUILD_INFO_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise Gem5Unavailable(f"GEM5={value}: `--build-info` did not answer in {BUILD_INFO_TIMEOUT_S} s") from exc
    try:
        version, options = parse_build_info(result.stdout)
    except ValueError as exc:
        raise Gem5Unavailable(f"GEM5={value}: {exc}; is it a gem5 binary?") from exc
    info = Gem5Info(path.resolve(), version, options)
    if info.version_tuple[:2] < MINIMUM_VERSION:
        raise Gem5Unavailable(f"GEM5={value} is gem5 {version}; lockstudy needs v24.0 or newer. {HOW_TO_GET}")
    if not info.has_x86:
        raise Gem5Unavailable(f"GEM5={value} was built without the X86 ISA; build the X86 target. {HOW_TO_GET}")
    return info
