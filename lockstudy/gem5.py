"""Finding and describing the gem5 binary the user supplies.

The project never builds gem5 and contains none of its code: the user
builds gem5 (v24.0 or newer, its default X86 `gem5.opt` target) and names
the binary in the GEM5 environment variable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

MINIMUM_VERSION = (24, 0)
BUILD_DOCS = "https://www.gem5.org/documentation/general_docs/building"
HOW_TO_GET = (
    f"build gem5 v24.0 or newer from its source (its default X86 gem5.opt target; "
    f"see {BUILD_DOCS}), then export GEM5=/path/to/build/X86/gem5.opt"
)
PROBE_TIMEOUT_S = 120


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


# What the binary reports about itself. `gem5.opt --build-info` fails in
# v24.0.0.1 (AttributeError: m5.defines has no gem5Version), so we ask its
# Python directly: the version from _m5.core and the build options.
PROBE_MARK = "LOCKSTUDY-GEM5 "
PROBE = (
    "import json, _m5.core, m5.defines; "
    f"print({PROBE_MARK!r} + json.dumps({{'version': _m5.core.gem5Version, "
    "'build': {k: str(v) for k, v in m5.defines.buildEnv.items()}}))"
)


def parse_probe(text: str) -> tuple[str, dict[str, str]]:
    """The version and build options from the probe's output line."""
    for line in text.splitlines():
        if line.startswith(PROBE_MARK):
            try:
                report = json.loads(line[len(PROBE_MARK) :])
                return str(report["version"]), {str(k): str(v) for k, v in report["build"].items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"unreadable self-description {line!r}") from exc
    raise ValueError("it did not describe itself (no version and build options)")


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
        with tempfile.TemporaryDirectory(prefix="lockstudy-gem5-probe-") as outdir:
            result = subprocess.run(
                [str(path), "-q", "-d", outdir, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
            )
    except subprocess.TimeoutExpired as exc:
        raise Gem5Unavailable(f"GEM5={value}: it did not describe itself in {PROBE_TIMEOUT_S} s") from exc
    try:
        version, options = parse_probe(result.stdout)
    except ValueError as exc:
        raise Gem5Unavailable(f"GEM5={value}: {exc}; is it a gem5 binary?") from exc
    info = Gem5Info(path.resolve(), version, options)
    if info.version_tuple[:2] < MINIMUM_VERSION:
        raise Gem5Unavailable(f"GEM5={value} is gem5 {version}; lockstudy needs v24.0 or newer. {HOW_TO_GET}")
    if not info.has_x86:
        raise Gem5Unavailable(f"GEM5={value} was built without the X86 ISA; build the X86 target. {HOW_TO_GET}")
    return info
