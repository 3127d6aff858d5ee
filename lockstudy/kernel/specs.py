"""What to build: kernel/builds.toml and kernel/variants.toml."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockstudy.files import typed_field
from lockstudy.paths import ROOT

KERNEL_DIR = ROOT / "kernel"
BUILDS_FILE = KERNEL_DIR / "builds.toml"
VARIANTS_FILE = KERNEL_DIR / "variants.toml"
CONFIGS_DIR = KERNEL_DIR / "configs"
BASE_CONFIG = CONFIGS_DIR / "base.config"
PATCHES_DIR = KERNEL_DIR / "patches"
SERIES_FILE = PATCHES_DIR / "series"


class SpecError(ValueError):
    """A data file of kernel/ is malformed; the message names file and field."""


@dataclass(frozen=True)
class BuildSpec:
    name: str
    description: str
    measurement: bool
    default: bool
    fragments: tuple[str, ...]
    fragments_if_kconfig: tuple[tuple[str, tuple[str, ...]], ...]
    requires_kconfig: tuple[str, ...]
    seed_objects_from: str | None = None
    # patches of kernel/patches/ this build applies after the series, which no other build applies
    extra_patches: tuple[str, ...] = ()

    def fragment_paths(self, defined_symbols: frozenset[str]) -> list[Path]:
        """The config files merged for this build, base first, in order."""
        names = list(self.fragments)
        for symbol, extra in self.fragments_if_kconfig:
            if symbol in defined_symbols:
                names.extend(extra)
        return [BASE_CONFIG, *(CONFIGS_DIR / n for n in names)]

    def missing_symbols(self, defined_symbols: frozenset[str]) -> list[str]:
        return [s for s in self.requires_kconfig if s not in defined_symbols]


@dataclass(frozen=True)
class BuildSettings:
    progress_seconds: float
    reproducible_env: dict[str, str]
    make_target: str
    keep_trees: int


@dataclass(frozen=True)
class SpinlockVariant:
    name: str
    default: bool


def _field(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = None) -> Any:
    if default is None:
        return typed_field(entry, key, kind, where, error=SpecError)
    return typed_field(entry, key, kind, where, default=default, error=SpecError)


def _strings(value: list[Any], where: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise SpecError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def load_settings(path: Path = BUILDS_FILE) -> BuildSettings:
    with open(path, "rb") as handle:
        settings = tomllib.load(handle).get("settings", {})
    where = f"{path}: [settings]"
    env = _field(settings, "reproducible_env", dict, where)
    return BuildSettings(
        progress_seconds=float(_field(settings, "progress_seconds", (int, float), where)),
        reproducible_env={str(k): str(v) for k, v in env.items()},
        make_target=_field(settings, "make_target", str, where),
        keep_trees=_field(settings, "keep_trees", int, where),
    )


def load_builds(path: Path = BUILDS_FILE, configs_dir: Path = CONFIGS_DIR, patches_dir: Path = PATCHES_DIR) -> dict[str, BuildSpec]:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    builds: dict[str, BuildSpec] = {}
    for index, entry in enumerate(data.get("build", [])):
        where = f"{path}: build[{index}]"
        name = _field(entry, "name", str, where)
        if name in builds:
            raise SpecError(f"{where}.name: duplicate build {name!r}")
        conditional = _field(entry, "fragments_if_kconfig", dict, where, {})
        spec = BuildSpec(
            name=name,
            description=_field(entry, "description", str, where),
            measurement=_field(entry, "measurement", bool, where),
            default=_field(entry, "default", bool, where, False),
            fragments=_strings(_field(entry, "fragments", list, where, []), f"{where}.fragments"),
            fragments_if_kconfig=tuple(
                (symbol, _strings(names, f"{where}.fragments_if_kconfig.{symbol}"))
                for symbol, names in conditional.items()
            ),
            requires_kconfig=_strings(_field(entry, "requires_kconfig", list, where, []), f"{where}.requires_kconfig"),
            seed_objects_from=_field(entry, "seed_objects_from", str, where, "") or None,
            extra_patches=_strings(_field(entry, "extra_patches", list, where, []), f"{where}.extra_patches"),
        )
        every = [*spec.fragments, *(n for _, names in spec.fragments_if_kconfig for n in names)]
        for fragment in every:
            if not (configs_dir / fragment).is_file():
                raise SpecError(f"{where} ({name}): fragment {fragment!r} not found in {configs_dir}")
        for patch in spec.extra_patches:
            if not (patches_dir / patch).is_file():
                raise SpecError(f"{where} ({name}): extra patch {patch!r} not found in {patches_dir}")
        if spec.extra_patches and spec.seed_objects_from:
            raise SpecError(f"{where} ({name}): a build with extra_patches has a patched tree of its own: "
                            "no other build's object dir to seed from (leave seed_objects_from out)")  # fmt: skip
        builds[name] = spec
    if not builds:
        raise SpecError(f"{path}: no [[build]] entries")
    for spec in builds.values():
        if spec.seed_objects_from is not None and spec.seed_objects_from not in builds:
            raise SpecError(f"{path}: build {spec.name}: seed_objects_from = {spec.seed_objects_from!r} is not a build")
    defaults = [b.name for b in builds.values() if b.default]
    if len(defaults) != 1:
        raise SpecError(f"{path}: exactly one build must have default = true (found {defaults})")
    return builds


def default_build(builds: dict[str, BuildSpec]) -> BuildSpec:
    return next(b for b in builds.values() if b.default)


def load_spinlock_variants(path: Path = VARIANTS_FILE) -> list[SpinlockVariant]:
    """The spinlock variants; the first one is the boot default."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    entries = data.get("spinlock", [])
    if not entries:
        raise SpecError(f"{path}: no [[spinlock]] entries")
    variants = []
    for index, entry in enumerate(entries):
        name = _field(entry, "name", str, f"{path}: spinlock[{index}]")
        variants.append(SpinlockVariant(name=name, default=index == 0))
    return variants
