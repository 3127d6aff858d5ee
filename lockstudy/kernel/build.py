"""Build one kernel build into build/kernel/<name>/, with provenance.

Outputs: vmlinux (the ELF gem5 loads), bzImage (QEMU), System.map, config,
build-info.json. The build id hashes every input (tarball, patch series,
config fragments, compiler, make command, environment); when the outputs
already carry the same build id the build is skipped without running make.
Beside them, struct-layouts.json (lockstudy/kernel/layout/) names the
fields of slab objects for the hot-line profile; it is made after the
build, or later from the build's object tree, and is not in the build id.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lockstudy.console import info, step
from lockstudy.kernel import kconfig
from lockstudy.kernel.layout.make import is_current, make_layouts
from lockstudy.kernel.layout.requests import LayoutError
from lockstudy.kernel.source import (
    DEBIAN_PACKAGE,
    KernelSource,
    PatchSeries,
    exclusive,
    file_sha256,
    kernel_cache,
    kernel_version,
    locate_source,
    TREE_STAMP,
    patched_tree,
    prune_trees,
    read_series,
    tree_dir,
)
from lockstudy.kernel.specs import PATCHES_DIR, BuildSettings, BuildSpec, load_settings
from lockstudy.paths import ROOT, build_dir, cache_dir

# Bump when the way outputs are produced changes, so old outputs are rebuilt.
RECIPE_VERSION = 2
COMPILER = "gcc"
COMPILER_LAUNCHER = "ccache"
OUTPUT_FILES = {  # output name -> path in the object dir
    "vmlinux": "vmlinux",
    "bzImage": "arch/x86/boot/bzImage",
    "System.map": "System.map",
    "config": ".config",
}
BUILD_INFO = "build-info.json"
SERIES_FRAGMENT = "lockstudy-series.config"
LOG_TAIL_LINES = 40
COMPILE_UNIT_TAGS = ("CC", "AS")


class BuildFailed(RuntimeError):
    """make failed; the message names the log."""


def kernel_output_dir(name: str) -> Path:
    return build_dir() / "kernel" / name


def build_log(name: str) -> Path:
    return build_dir() / "kernel" / "logs" / f"{name}.log"


def ccache_dir() -> Path:
    return cache_dir() / "ccache"


def first_line_of(argv: list[str], missing_hint: str) -> str:
    if not shutil.which(argv[0]):
        raise BuildFailed(f"{argv[0]} not found: {missing_hint}")
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return result.stdout.splitlines()[0].strip()


def display_path(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass
class BuildPlan:
    """Everything that determines a build's outputs, known before building."""

    spec: BuildSpec
    source: KernelSource
    series: PatchSeries
    fragments: list[Path]
    settings: BuildSettings
    compiler_version: str
    make_variables: list[str] = field(default_factory=lambda: [f"CC={COMPILER_LAUNCHER} {COMPILER}"])

    def identity(self) -> dict[str, object]:
        return {
            "recipe_version": RECIPE_VERSION,
            "build": self.spec.name,
            "tarball_sha256": self.source.sha256,
            "series_sha256": self.series.digest,
            "series_options": self.series_options(),
            "fragments": [[display_path(f), file_sha256(f)] for f in self.fragments],
            "compiler": self.compiler_version,
            "make": ["make", *self.make_variables, self.settings.make_target],
            "environment": self.settings.reproducible_env,
        }

    def series_options(self) -> list[str]:
        """The series' own bool options: on in every build unless a fragment says otherwise."""
        return [f"CONFIG_{symbol}=y" for symbol in self.series.prompted_bool_symbols()]

    def config_inputs(self, object_dir: Path) -> list[Path]:
        """base.config, the generated series fragment, then the build's fragments."""
        generated = object_dir / SERIES_FRAGMENT
        object_dir.mkdir(parents=True, exist_ok=True)
        header = "# Generated: the bool options kernel/patches/series adds (allnoconfig would turn them off).\n"
        generated.write_text(header + "".join(line + "\n" for line in self.series_options()))
        return [self.fragments[0], generated, *self.fragments[1:]]

    def build_id(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()


def plan_build(spec: BuildSpec, source: KernelSource | None = None, series: PatchSeries | None = None) -> BuildPlan:
    source = source or locate_source()
    series = (series or read_series()).extended(tuple(PATCHES_DIR / name for name in spec.extra_patches))
    compiler = first_line_of([COMPILER, "--version"], "run ./run.sh setup (build-essential)")
    return BuildPlan(
        spec=spec,
        source=source,
        series=series,
        fragments=spec.fragment_paths(series.defined_kconfig_symbols()),
        settings=load_settings(),
        compiler_version=compiler,
    )


def up_to_date(plan: BuildPlan) -> bool:
    out = kernel_output_dir(plan.spec.name)
    info_file = out / BUILD_INFO
    if not info_file.is_file() or not all((out / name).is_file() for name in OUTPUT_FILES):
        return False
    try:
        recorded = json.loads(info_file.read_text())
    except json.JSONDecodeError:
        return False
    return recorded.get("build_id") == plan.build_id()


class Progress:
    """Counts compile units in make's output and reports every few seconds."""

    def __init__(self, name: str, interval: float) -> None:
        self.name = name
        self.interval = interval
        self.units = 0
        self.started = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._report, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def see(self, line: str) -> None:
        words = line.split(maxsplit=1)
        if words and words[0] in COMPILE_UNIT_TAGS:
            self.units += 1

    def elapsed(self) -> str:
        minutes, seconds = divmod(int(time.monotonic() - self.started), 60)
        return f"{minutes}m{seconds:02d}s"

    def _report(self) -> None:
        while not self._done.wait(self.interval):
            info(f"[{self.name}] {self.units} units compiled, {self.elapsed()}")


def run_make(plan: BuildPlan, argv: list[str], env: dict[str, str], log: Path, pass_fds: tuple[int, ...] = ()) -> tuple[int, int]:
    """Run make with output to the log and a progress line every few seconds.

    Returns make's exit status and the number of compile units it ran.
    """
    with open(log, "a") as sink, Progress(plan.spec.name, plan.settings.progress_seconds) as progress:
        sink.write(f"$ {shlex.join(argv)}\n")
        sink.flush()
        process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", pass_fds=pass_fds
        )
        assert process.stdout is not None
        for line in process.stdout:
            sink.write(line)
            progress.see(line)
        returncode = process.wait()
        if returncode == 0:
            info(f"[{plan.spec.name}] {progress.units} units compiled, {progress.elapsed()}: done")
    return returncode, progress.units


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(text[-lines:])


def build_environment(plan: BuildPlan) -> dict[str, str]:
    env = dict(os.environ)
    env.update(plan.settings.reproducible_env)
    env["CCACHE_DIR"] = str(ccache_dir())
    # Absolute paths under the trees become relative, so compiles of files a
    # new patch series did not change hit the cache from another tree.
    env["CCACHE_BASEDIR"] = str(kernel_cache() / "tree")
    env["LC_ALL"] = "C"
    return env


def ccache_version() -> str | None:
    if not shutil.which(COMPILER_LAUNCHER):
        return None
    return first_line_of([COMPILER_LAUNCHER, "--version"], "")


def build_kernel(plan: BuildPlan, jobs: int, *, force: bool = False, clean: bool = False) -> Path:
    """Build (or skip when up to date) and return the output directory."""
    name = plan.spec.name
    out = kernel_output_dir(name)
    if not force and not clean and up_to_date(plan):
        info(f"[{name}] up to date: {display_path(out)} (build id {plan.build_id()[:12]})")
        refresh_layouts(plan)
        return out
    if not shutil.which(COMPILER_LAUNCHER):
        raise BuildFailed(f"{COMPILER_LAUNCHER} not found: run ./run.sh setup")
    step(f"kernel {name}: {plan.spec.description}")
    source_tree = patched_tree(plan.source, plan.series)
    object_dir = tree_dir(plan.source, plan.series) / "obj" / name
    log = build_log(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    info(f"[{name}] source {plan.source.describe()}, {len(plan.series.patches)} patch(es) (series {plan.series.key})")
    info(f"[{name}] make log: {log}")
    env = build_environment(plan)
    started = time.monotonic()
    with exclusive(object_dir.with_name(name + ".lock")) as lock_fd:
        if clean:
            shutil.rmtree(object_dir, ignore_errors=True)
        seed_object_dir(plan, object_dir)
        make_prefix = ["make", "-C", str(source_tree), f"O={object_dir}", *plan.make_variables]
        kconfig.configure(name, source_tree, object_dir, plan.config_inputs(object_dir), make_prefix, env, log, (lock_fd,))
        argv = [*make_prefix, f"-j{jobs}", plan.settings.make_target]
        returncode, units = run_make(plan, argv, env, log, (lock_fd,))
        if returncode != 0:
            raise BuildFailed(f"kernel build {name}: make exited with {returncode}; last lines of the log:\n{log_tail(log)}\n(full log: {log})")
        publish(plan, object_dir, argv, env, time.monotonic() - started, units)
        write_layouts_of(plan, source_tree, object_dir, env)
    info(f"[{name}] outputs in {display_path(out)}")
    tree = tree_dir(plan.source, plan.series)
    os.utime(tree / TREE_STAMP)
    for old in prune_trees(plan.settings.keep_trees, tree):
        info(f"removed the old patched tree {old}")
    return out


def write_layouts_of(plan: BuildPlan, source_tree: Path, object_dir: Path, env: dict[str, str]) -> None:
    """struct-layouts.json from the build's object tree (hold its lock); BuildFailed if the probe fails."""
    try:
        make_layouts(plan.spec.name, plan.build_id(), kernel_output_dir(plan.spec.name), source_tree, object_dir, plan.make_variables, env)
    except LayoutError as exc:
        raise BuildFailed(f"kernel build {plan.spec.name}: struct layouts: {exc}") from None


def refresh_layouts(plan: BuildPlan) -> None:
    """Make an up-to-date build's struct-layouts.json when it is missing or stale and the object tree is still there."""
    name = plan.spec.name
    if is_current(kernel_output_dir(name), plan.build_id()):
        return
    tree = tree_dir(plan.source, plan.series)
    object_dir = tree / "obj" / name
    if not (tree / TREE_STAMP).is_file() or not (object_dir / OUTPUT_FILES["vmlinux"]).is_file():
        info(f"[{name}] no struct layouts: its object tree is gone (pruned); `./run.sh build kernel --build {name} --force` makes both")
        return
    with exclusive(object_dir.with_name(name + ".lock")):
        write_layouts_of(plan, tree / "src", object_dir, build_environment(plan))


def seed_object_dir(plan: BuildPlan, object_dir: Path) -> None:
    """Start a new object dir as a copy of a sibling build's (builds.toml: seed_objects_from).

    Both use the same source tree, so kbuild's per-option dependencies make
    the copy rebuild exactly what the config difference touches.
    """
    seed = plan.spec.seed_objects_from
    if seed is None or object_dir.exists():
        return
    sibling = object_dir.with_name(seed)
    if not (sibling / OUTPUT_FILES["vmlinux"]).is_file():
        return
    info(f"[{plan.spec.name}] seeding the object dir from {seed}'s")
    with exclusive(object_dir.with_name(seed + ".lock")):
        subprocess.run(["cp", "-a", "--reflink=auto", str(sibling), str(object_dir)], check=True)
    retarget_tool_records(object_dir, sibling)


def retarget_tool_records(object_dir: Path, sibling: Path) -> None:
    """Point the copied host tools' build records at the new object dir.

    tools/ (objtool) records its commands with absolute output paths; left
    pointing at the sibling, objtool is rebuilt, and every object that
    objtool processed would be rebuilt after it.
    """
    old, new = str(sibling), str(object_dir)
    for record in (object_dir / "tools").rglob(".*"):
        if not record.is_file() or not record.name.endswith((".cmd", ".d")):
            continue
        text = record.read_text(errors="surrogateescape")
        if old in text:
            times = record.stat()
            record.write_text(text.replace(old, new), errors="surrogateescape")
            os.utime(record, ns=(times.st_atime_ns, times.st_mtime_ns))


def publish(plan: BuildPlan, object_dir: Path, argv: list[str], env: dict[str, str], seconds: float, units: int) -> None:
    """Copy the outputs and write build-info.json, replacing the old outputs at once."""
    out = kernel_output_dir(plan.spec.name)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    outputs = {}
    for output, relative in OUTPUT_FILES.items():
        shutil.copy2(object_dir / relative, staging / output)
        outputs[output] = {"sha256": file_sha256(staging / output), "bytes": (staging / output).stat().st_size}
    config_hash = file_sha256(staging / "config")
    info_record = {
        "build": plan.spec.name,
        "build_id": plan.build_id(),
        "description": plan.spec.description,
        "measurement": plan.spec.measurement,
        "source": {
            "origin": plan.source.origin,
            "tarball": str(plan.source.tarball),
            "tarball_sha256": plan.source.sha256,
            "debian_package": DEBIAN_PACKAGE if plan.source.origin == "debian" else None,
            "debian_version": plan.source.debian_version,
            "kernel_version": kernel_version(patched_tree(plan.source, plan.series)),
        },
        "patches": {
            "series_sha256": plan.series.digest,
            "patches": [{"name": p.name, "sha256": file_sha256(p)} for p in plan.series.patches],
        },
        "config": {
            "series_options": plan.series_options(),
            "fragments": [{"file": display_path(f), "sha256": file_sha256(f)} for f in plan.fragments],
            "config_sha256": config_hash,
        },
        "compiler": plan.compiler_version,
        "ccache": ccache_version(),
        "make_command": shlex.join(argv),
        "environment": plan.settings.reproducible_env,
        "outputs": outputs,
        "build_seconds": round(seconds, 1),
        "compile_units": units,
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    (staging / BUILD_INFO).write_text(json.dumps(info_record, indent=2) + "\n")
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)


class BuildMissing(RuntimeError):
    """A build's outputs are absent or older than its inputs."""


def require_build(spec: BuildSpec) -> Path:
    """The output dir of an up-to-date build, or BuildMissing saying what to run."""
    out = kernel_output_dir(spec.name)
    if not (out / BUILD_INFO).is_file():
        raise BuildMissing(f"kernel build {spec.name!r} not found in {display_path(out)}: run ./run.sh setup")
    if not up_to_date(plan_build(spec)):
        raise BuildMissing(
            f"kernel build {spec.name!r} in {display_path(out)} is out of date (patches, configs or compiler "
            f"changed since it was built): run ./run.sh setup"
        )
    return out
