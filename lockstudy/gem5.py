"""Finding and describing the gem5 binaries the user supplies.

The project never builds gem5 and contains none of its code: the user
builds gem5 (v24.0 or newer, X86 `gem5.opt`) and names the binary in the
GEM5 environment variable. gem5 v24 builds one Ruby protocol into a
binary, and our NUMA machines need different ones (altix-numa: CHI;
altix-numa-interleaved: MESI_Two_Level, gem5's default X86 build); the
classic-cache piii-smp runs on either. A machine that needs protocol P
uses GEM5_<P> (GEM5_CHI, GEM5_MESI_TWO_LEVEL) when it is set, else GEM5,
and a binary of another protocol is refused with how to build the right one.
A machine without a Ruby protocol (piii-smp) runs on GEM5, or, when only
GEM5_<P> variables are set, on the first of them (any X86 build has the
classic caches).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lockstudy import paths

MINIMUM_VERSION = (24, 0)
BUILD_DOCS = "https://www.gem5.org/documentation/general_docs/building"
# The build a user without gem5 is told to make first: it runs the
# machines of this protocol and those without one (machines/*.toml name
# each machine's protocol; doctor lists which binary runs which machine).
FIRST_BUILD_PROTOCOL = "CHI"
PROBE_TIMEOUT_S = 120
GEM5_VARIABLE = "GEM5"
EXTRAS_DIR = paths.ROOT / "gem5-extras"


@dataclass(frozen=True)
class Extra:
    """One of our extras (gem5-extras/<name>/), built into the user's gem5 through gem5's EXTRAS."""

    name: str  # also its folder under gem5-extras/
    marker_module: str  # the module it embeds in the binary (gem5-extras/<name>/<marker_module>.py)
    why: str


# A protocol that gem5 ships but that cannot run our machines faithfully
# without one of our extras: protocol -> the extra.
REQUIRED_EXTRAS: dict[str, Extra] = {
    "CHI": Extra(
        "chi-x86-locked-rmw",
        "lockstudy_chi_x86_locked_rmw",
        "gem5 v24's CHI does not hold snoops between the two halves of an x86 locked "
        "read-modify-write, so contended lock xadd/cmpxchg lose updates",
    ),
}


def missing_extra(protocol: str | None, built_in: Mapping[str, int]) -> str | None:
    """The extra `protocol` needs that `built_in` (extra name -> version) lacks (None: nothing missing)."""
    needed = REQUIRED_EXTRAS.get(protocol or "")
    return None if needed is None or needed.name in built_in else needed.name


def extras_label(extras: Mapping[str, int]) -> str:
    """Extras as provenance writes them: "name@version", comma-separated, by name ('' for none)."""
    return ",".join(f"{name}@{version}" for name, version in sorted(extras.items()))


def built_in_extras() -> dict[str, int]:
    """Our extras built into the running gem5 (name -> version), from their marker modules: for run.py, inside gem5."""
    import importlib

    found = {}
    for extra in REQUIRED_EXTRAS.values():
        try:
            module = importlib.import_module(extra.marker_module)
        except ImportError:
            continue
        found[module.NAME] = module.VERSION
    return found
# The Ruby protocols a gem5 v24 build can have (src/mem/ruby/protocol/Kconfig:
# the PROTOCOL defaults, plus CHI from src/mem/ruby/protocol/chi/Kconfig):
# the GEM5_<P> variables a machine without a protocol may fall back on.
RUBY_PROTOCOLS = (
    "CHI", "MESI_Two_Level", "MESI_Three_Level", "MESI_Three_Level_HTM", "MI_example",
    "MOESI_CMP_directory", "MOESI_CMP_token", "MOESI_hammer", "GPU_VIPER", "MOESI_AMD_Base",
)  # fmt: skip


def variable_for(protocol: str | None) -> str:
    """The environment variable naming a gem5 built with `protocol` (None: any build)."""
    return f"{GEM5_VARIABLE}_{protocol.upper()}" if protocol else GEM5_VARIABLE


def extras_argument(protocol: str) -> str:
    """The scons EXTRAS=... argument our extras need for `protocol` ('' if none)."""
    if protocol not in REQUIRED_EXTRAS:
        return ""
    return f" EXTRAS={EXTRAS_DIR / REQUIRED_EXTRAS[protocol].name}"


def how_to_build(protocol: str, variable: str | None = None) -> str:
    """The user's steps for a gem5 with this Ruby protocol (gem5 v24's Kconfig build), ending in the
    export of `variable` (default: the protocol's own, GEM5_<P>)."""
    build_dir = "build/X86" if protocol == "MESI_Two_Level" else f"build/X86_{protocol.upper()}"
    if protocol == "MESI_Two_Level":
        steps = f"scons {build_dir}/gem5.opt (the default X86 build)"
    else:
        steps = (
            f"scons defconfig {build_dir} build_opts/X86 && "
            f"scons setconfig {build_dir} RUBY_PROTOCOL_{protocol.upper()}=y && "
            f"scons {build_dir}/gem5.opt{extras_argument(protocol)}"
        )
    return f"in gem5's source tree: {steps}; then export {variable or variable_for(protocol)}=/path/to/{build_dir}/gem5.opt"


HOW_TO_GET = (
    f"build gem5 v24.0 or newer from its source (see {BUILD_DOCS}) with the Ruby protocol "
    f"{FIRST_BUILD_PROTOCOL}, which runs the {FIRST_BUILD_PROTOCOL} machines and those without a protocol "
    f"(a second build for any other protocol: doctor lists each machine's); "
    f"{how_to_build(FIRST_BUILD_PROTOCOL, GEM5_VARIABLE)}"
)


class Gem5Unavailable(RuntimeError):
    """No usable gem5: `cause` says what is wrong, `fix` how to mend it.

    The message is the two together; doctor shows them in their own columns.
    """

    def __init__(self, cause: str, fix: str = "", joiner: str = ". ") -> None:
        super().__init__(cause + (joiner + fix if fix else ""))
        self.cause = cause
        self.fix = fix


@dataclass(frozen=True)
class Gem5Info:
    path: Path
    version: str
    build_options: dict[str, str]
    extras: dict[str, int] = field(default_factory=dict)

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
        return {"path": str(self.path), "version": self.version, "protocol": self.ruby_protocol, "extras": extras_label(self.extras)}

    def missing_extra(self) -> str | None:
        """The extra this binary's protocol needs and lacks (None: nothing missing)."""
        return missing_extra(self.ruby_protocol, self.extras)


# What the binary reports about itself. `gem5.opt --build-info` fails in
# v24.0.0.1 (AttributeError: m5.defines has no gem5Version), so we ask its
# Python directly: the version from _m5.core, the build options, and the
# marker module each of our extras embeds (gem5-extras/*/lockstudy_*.py).
PROBE_MARK = "LOCKSTUDY-GEM5 "
EXTRA_MODULES = tuple(extra.marker_module for extra in REQUIRED_EXTRAS.values())
PROBE = (
    "import importlib, json, _m5.core, m5.defines\n"
    "extras = {}\n"
    f"for name in {EXTRA_MODULES!r}:\n"
    "    try:\n"
    "        module = importlib.import_module(name)\n"
    "    except ImportError:\n"
    "        continue\n"
    "    extras[module.NAME] = module.VERSION\n"
    f"print({PROBE_MARK!r} + json.dumps({{'version': _m5.core.gem5Version, "
    "'build': {k: str(v) for k, v in m5.defines.buildEnv.items()}, 'extras': extras}))"
)

Probe = tuple[str, dict[str, str], dict[str, int]]


def parse_probe(text: str) -> Probe:
    """The version, build options and extras from the probe's output line."""
    for line in text.splitlines():
        if line.startswith(PROBE_MARK):
            try:
                report = json.loads(line[len(PROBE_MARK) :])
                return (
                    str(report["version"]),
                    {str(k): str(v) for k, v in report["build"].items()},
                    {str(k): int(v) for k, v in report.get("extras", {}).items()},
                )
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"unreadable self-description {line!r}") from exc
    raise ValueError("it did not describe itself (no version and build options)")


_probed: dict[tuple[str, int, int], Probe] = {}


def _probe(path: Path, value: str) -> Probe:
    """The binary's version and build options (asked once per file version)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key in _probed:
        return _probed[key]
    try:
        with tempfile.TemporaryDirectory(prefix="lockstudy-gem5-probe-") as outdir:
            result = subprocess.run(
                [str(path), "-q", "-d", outdir, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
            )
    except subprocess.TimeoutExpired as exc:
        raise Gem5Unavailable(f"{value}: it did not describe itself in {PROBE_TIMEOUT_S} s", HOW_TO_GET) from exc
    try:
        _probed[key] = parse_probe(result.stdout)
    except ValueError as exc:
        raise Gem5Unavailable(f"{value}: {exc}", "is it a gem5 binary? " + HOW_TO_GET, "; ") from exc
    return _probed[key]


def variable_used(env: Mapping[str, str], protocol: str | None) -> str:
    """The variable that names the gem5 for `protocol`: GEM5_<P> if set, else GEM5 (or, with no protocol and no GEM5, the first GEM5_<P> set)."""
    if protocol:
        return variable_for(protocol) if env.get(variable_for(protocol)) else GEM5_VARIABLE
    if env.get(GEM5_VARIABLE):
        return GEM5_VARIABLE
    return next((variable_for(p) for p in RUBY_PROTOCOLS if env.get(variable_for(p))), GEM5_VARIABLE)


def find_gem5(
    environ: dict[str, str] | None = None, protocol: str | None = None, require_extras: bool = True
) -> Gem5Info:
    """The gem5 to use for a machine whose Ruby protocol is `protocol` (None: any).

    A protocol listed in REQUIRED_EXTRAS also needs its extra built in,
    unless `require_extras` is False (only to show what the stock build does).
    """
    env = os.environ if environ is None else environ
    variable = variable_used(env, protocol)
    value = env.get(variable, "")
    if not value:
        if protocol:
            raise Gem5Unavailable(
                f"neither {variable_for(protocol)} nor {GEM5_VARIABLE} is set",
                f"gem5 is a prerequisite you supply, built with the Ruby protocol {protocol}: {how_to_build(protocol)}",
            )
        raise Gem5Unavailable(f"{GEM5_VARIABLE} is not set", f"gem5 is a prerequisite you supply: {HOW_TO_GET}")
    named = f"{variable}={value}"
    path = Path(value)
    if not path.is_file():
        raise Gem5Unavailable(f"{named}: no such file", HOW_TO_GET)
    if not os.access(path, os.X_OK):
        raise Gem5Unavailable(f"{named}: not executable", "chmod +x it", "; ")
    version, options, extras = _probe(path, named)
    info = Gem5Info(path.resolve(), version, options, extras)
    if info.version_tuple[:2] < MINIMUM_VERSION:
        raise Gem5Unavailable(f"{named} is gem5 {version}; lockstudy needs v24.0 or newer", HOW_TO_GET)
    if not info.has_x86:
        raise Gem5Unavailable(f"{named} was built without the X86 ISA", f"build the X86 target. {HOW_TO_GET}", "; ")
    if protocol and info.ruby_protocol != protocol:
        raise Gem5Unavailable(
            f"{named} is built with the Ruby protocol {info.ruby_protocol or 'none'}, and this machine needs {protocol}",
            how_to_build(protocol),
            ": ",
        )
    missing = info.missing_extra() if protocol and require_extras else None
    if missing:
        raise Gem5Unavailable(
            f"{named} is a {protocol} build without lockstudy's {missing} extra "
            f"({REQUIRED_EXTRAS[protocol].why}; gem5-extras/README.md)",
            f"Rebuild it with the extra: {how_to_build(protocol)}",
        )
    return info
