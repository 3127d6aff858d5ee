"""The kernel builds: present, with provenance, configured as designed.

The build tests need `./run.sh setup` to have built the kernels: a missing
or stale build FAILS (saying "run ./run.sh setup"), it is never skipped.
The config-verifier and source tests need no build.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lockstudy.kernel import kconfig, source, specs
from lockstudy.kernel.build import BUILD_INFO, OUTPUT_FILES, BuildMissing, require_build
from lockstudy.kernel.target import availability

BUILDS = specs.load_builds()
SERIES = source.read_series()
AVAILABLE = [name for name, reason in availability(BUILDS, SERIES.defined_kconfig_symbols()).items() if reason is None]
MEASUREMENT = [name for name in AVAILABLE if BUILDS[name].measurement]
SMP_BUILDS = [name for name in AVAILABLE if name != "up"]

# Options whose absence breaks booting in QEMU/gem5 or the study itself.
REQUIRED_ON = ("SMP", "NUMA", "X86_64_ACPI_NUMA", "X86_MPPARSE", "ACPI", "PCI", "ATA_PIIX", "BLK_DEV_SD", "EXT2_FS",
               "JUMP_LABEL", "DEVMEM", "SERIAL_8250_CONSOLE", "DEVTMPFS", "BLK_DEV_INITRD", "QUEUED_SPINLOCKS")  # fmt: skip
# Options that change lock layout or lock code: never in a measurement build.
LOCK_DEBUG = ("LOCKDEP", "PROVE_LOCKING", "DEBUG_SPINLOCK", "LOCK_STAT", "DEBUG_LOCK_ALLOC", "LOCK_TORTURE_TEST")


def built(name: str) -> Path:
    try:
        return require_build(BUILDS[name])
    except BuildMissing as exc:
        pytest.fail(str(exc))


def resolved_config(name: str) -> dict[str, str]:
    path = built(name) / "config"
    return kconfig.resolved_values(path.read_text(), path)


def is_on(config: dict[str, str], option: str) -> bool:
    return config.get(f"CONFIG_{option}", kconfig.NOT_SET) == "y"


@pytest.mark.kernel
@pytest.mark.parametrize("name", AVAILABLE)
def test_build_outputs_and_info(name: str) -> None:
    out = built(name)
    for output in OUTPUT_FILES:
        assert (out / output).stat().st_size > 0, f"{out / output} is empty"
    assert (out / "vmlinux").read_bytes()[:4] == b"\x7fELF", "vmlinux must be the ELF image gem5 loads"
    info = json.loads((out / BUILD_INFO).read_text())
    for key in ("build_id", "source", "patches", "config", "compiler", "make_command", "outputs"):
        assert key in info, f"{BUILD_INFO} lacks {key}"
    assert len(info["source"]["tarball_sha256"]) == 64
    if info["source"]["origin"] == "debian":
        installed = subprocess.run(["dpkg-query", "-W", "-f=${Version}", source.DEBIAN_PACKAGE], capture_output=True, text=True).stdout
        assert info["source"]["debian_version"] == installed
    assert info["source"]["kernel_version"].startswith("6.1.")
    # the series, and after it the build's own patches (builds.toml extra_patches)
    extra = tuple(specs.PATCHES_DIR / patch for patch in BUILDS[name].extra_patches)
    assert info["patches"]["series_sha256"] == SERIES.extended(extra).digest
    assert info["config"]["config_sha256"] == source.file_sha256(out / "config")
    assert info["outputs"]["vmlinux"]["sha256"] == source.file_sha256(out / "vmlinux")
    assert "ccache gcc" in info["make_command"]


@pytest.mark.kernel
@pytest.mark.parametrize("name", SMP_BUILDS)
def test_smp_config(name: str) -> None:
    config = resolved_config(name)
    missing = [o for o in REQUIRED_ON if not is_on(config, o)]
    assert not missing, f"{name}: must be on: {missing}"
    assert not is_on(config, "PARAVIRT"), "PARAVIRT turns qspinlock into a test-and-set loop under QEMU"
    assert not is_on(config, "HYPERVISOR_GUEST")
    assert not is_on(config, "STRICT_DEVMEM"), "m5 ops map their page through /dev/mem"
    assert not is_on(config, "MODULES")
    # 32 Altix-like nodes of 2 CPUs, and gem5's I/O APIC id after the last CPU (base.config)
    assert config.get("CONFIG_NR_CPUS") == "64"


@pytest.mark.kernel
@pytest.mark.parametrize("name", [n for n in ("smp", "torture") if n in AVAILABLE])
def test_the_series_options_are_on(name: str) -> None:
    """allnoconfig turns prompted options off: the series' own must be asked for."""
    config = resolved_config(name)
    off = [s for s in SERIES.prompted_bool_symbols() if not is_on(config, s)]
    assert not off, f"{name}: options of kernel/patches/series left off: {off}"


@pytest.mark.kernel
@pytest.mark.parametrize("name", MEASUREMENT)
def test_measurement_builds_have_no_lock_debugging(name: str) -> None:
    config = resolved_config(name)
    present = [o for o in LOCK_DEBUG if is_on(config, o)]
    assert not present, f"measurement build {name} has {present}"


@pytest.mark.kernel
def test_torture_build_is_smp_plus_locktorture() -> None:
    torture, smp = resolved_config("torture"), resolved_config("smp")
    assert is_on(torture, "LOCK_TORTURE_TEST")
    assert not BUILDS["torture"].measurement
    assert not any(is_on(torture, o) for o in ("LOCKDEP", "DEBUG_SPINLOCK", "LOCK_STAT", "PARAVIRT"))
    differing = {o for o in set(smp) | set(torture) if smp.get(o) != torture.get(o)}
    # locktorture selects the generic torture framework; nothing else may differ.
    assert differing <= {"CONFIG_LOCK_TORTURE_TEST", "CONFIG_TORTURE_TEST"}, sorted(differing)


@pytest.mark.kernel
def test_mm_ptlock_build_is_smp_with_one_page_table_lock() -> None:
    """Seed 002's precondition: split page table locks off, nothing else changed."""
    mm_ptlock, smp = resolved_config("smp-mm-ptlock"), resolved_config("smp")
    assert BUILDS["smp-mm-ptlock"].measurement
    assert smp.get("CONFIG_SPLIT_PTLOCK_CPUS") == "4" and is_on(smp, "LOCKSTUDY_SPLIT_PTLOCKS")
    # USE_SPLIT_PTE_PTLOCKS is NR_CPUS >= SPLIT_PTLOCK_CPUS (include/linux/mm_types_task.h)
    assert int(mm_ptlock["CONFIG_SPLIT_PTLOCK_CPUS"]) > int(mm_ptlock["CONFIG_NR_CPUS"])
    differing = {o for o in set(smp) | set(mm_ptlock) if smp.get(o) != mm_ptlock.get(o)}
    assert differing == {"CONFIG_LOCKSTUDY_SPLIT_PTLOCKS", "CONFIG_SPLIT_PTLOCK_CPUS"}, sorted(differing)


@pytest.mark.kernel
def test_lockevents_build_is_smp_with_the_lock_event_counters() -> None:
    """Seed 003's precondition build: the counters, and nothing else changed."""
    lockevents, smp = resolved_config("smp-lockevents"), resolved_config("smp")
    assert BUILDS["smp-lockevents"].measurement
    assert is_on(lockevents, "LOCK_EVENT_COUNTS") and not is_on(smp, "LOCK_EVENT_COUNTS")
    differing = {o for o in set(smp) | set(lockevents) if smp.get(o) != lockevents.get(o)}
    assert differing == {"CONFIG_LOCK_EVENT_COUNTS"}, sorted(differing)


@pytest.mark.kernel
def test_rwsem_bench_build_is_lockevents_with_the_bench_patch_alone() -> None:
    """Seed 003's bench build: smp-lockevents' config, with lockstudy-bench-rwsem.patch applied after the
    series; no other build applies it, so their kernels stay the ones the study's runs booted."""
    bench, lockevents = resolved_config("smp-rwsem-bench"), resolved_config("smp-lockevents")
    assert BUILDS["smp-rwsem-bench"].measurement
    assert bench == lockevents
    infos = {name: json.loads((built(name) / BUILD_INFO).read_text()) for name in ("smp-rwsem-bench", "smp-lockevents")}
    assert infos["smp-lockevents"]["patches"]["series_sha256"] == SERIES.digest
    assert infos["smp-rwsem-bench"]["patches"]["series_sha256"] == SERIES.extended((specs.PATCHES_DIR / "lockstudy-bench-rwsem.patch",)).digest
    assert "lockstudy-bench-rwsem.patch" not in [path.name for path in SERIES.patches]


@pytest.mark.kernel
def test_bench_pair_build_is_smp_with_the_pair_patch_alone() -> None:
    """Seed 000's precondition build: smp's config, with lockstudy-bench-lock-pair.patch applied after
    the series; no other build applies it."""
    assert BUILDS["smp-bench-pair"].measurement
    assert resolved_config("smp-bench-pair") == resolved_config("smp")
    infos = {name: json.loads((built(name) / BUILD_INFO).read_text()) for name in ("smp-bench-pair", "smp")}
    assert infos["smp"]["patches"]["series_sha256"] == SERIES.digest
    assert infos["smp-bench-pair"]["patches"]["series_sha256"] == SERIES.extended((specs.PATCHES_DIR / "lockstudy-bench-lock-pair.patch",)).digest
    assert "lockstudy-bench-lock-pair.patch" not in [path.name for path in SERIES.patches]
    assert [name for name, spec in BUILDS.items() if "lockstudy-bench-lock-pair.patch" in spec.extra_patches] == ["smp-bench-pair"]


def test_extra_patches_follow_the_series_in_a_tree_of_their_own(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("0001-a.patch\n")
    for name in ("0001-a.patch", "0002-extra.patch"):
        (tmp_path / name).write_text(f"+{name}\n")
    series = source.read_series(tmp_path / "series")
    extended = series.extended((tmp_path / "0002-extra.patch",))
    assert [p.name for p in extended.patches] == ["0001-a.patch", "0002-extra.patch"]
    assert extended.digest != series.digest and series.extended(()) is series


@pytest.mark.parametrize(("entry", "message"), [
    ('extra_patches = ["absent.patch"]', r"extra patch 'absent.patch' not found in"),
    ('extra_patches = ["lockstudy-bench-rwsem.patch"]\nseed_objects_from = "smp"', r"a patched tree of its own: no other build's object dir"),
])  # fmt: skip
def test_a_bad_extra_patch_is_named(tmp_path: Path, entry: str, message: str) -> None:
    builds = tmp_path / "builds.toml"
    builds.write_text('[[build]]\nname = "smp"\ndescription = "d"\nmeasurement = true\ndefault = true\n'
                      f'[[build]]\nname = "x"\ndescription = "d"\nmeasurement = true\n{entry}\n')  # fmt: skip
    with pytest.raises(specs.SpecError, match=message):
        specs.load_builds(builds)


@pytest.mark.kernel
def test_up_build_has_no_smp() -> None:
    config = resolved_config("up")
    assert not is_on(config, "SMP")
    assert not is_on(config, "NUMA")
    assert not is_on(config, "PARAVIRT")
    for option in ("ATA_PIIX", "EXT2_FS", "SERIAL_8250_CONSOLE", "DEVMEM"):
        assert is_on(config, option), option


def test_every_build_is_known_to_setup() -> None:
    reasons = availability(BUILDS, SERIES.defined_kconfig_symbols())
    assert {"smp", "smp-packed", "smp-mm-ptlock", "smp-lockevents", "up", "torture"} <= set(reasons)
    assert reasons["smp"] is None and reasons["up"] is None and reasons["torture"] is None
    for name, reason in reasons.items():
        if reason:
            assert "CONFIG_" in reason, f"{name}: the reason must name the missing symbol"


# --- the config verifier (no build needed) ---------------------------------


def test_verifier_rejects_an_option_that_did_not_stick(tmp_path: Path) -> None:
    fragment = tmp_path / "wish.config"
    fragment.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=16\nCONFIG_ATA_PIIX=y\n# CONFIG_PARAVIRT is not set\n")
    resolved = tmp_path / ".config"
    # ATA_PIIX was dropped (say, PCI off) and NR_CPUS clamped: both must be named.
    resolved.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=8\n# CONFIG_ATA_PIIX is not set\n")
    with pytest.raises(kconfig.ConfigError) as failure:
        kconfig.check("demo", kconfig.requested_options([fragment]), resolved)
    message = str(failure.value)
    assert "CONFIG_ATA_PIIX: asked y (wish.config), got not set" in message
    assert "CONFIG_NR_CPUS: asked 16 (wish.config), got 8" in message
    assert "PARAVIRT" not in message, "an absent option honours 'is not set'"


def test_verifier_lets_a_later_fragment_override(tmp_path: Path) -> None:
    base, up = tmp_path / "base.config", tmp_path / "up.config"
    base.write_text("CONFIG_SMP=y\nCONFIG_NUMA=y\n")
    up.write_text("# CONFIG_SMP is not set\n# CONFIG_NUMA is not set\n")
    resolved = tmp_path / ".config"
    resolved.write_text("# CONFIG_SMP is not set\n")
    kconfig.check("up", kconfig.requested_options([base, up]), resolved)


def test_fragment_syntax_errors_name_the_line(tmp_path: Path) -> None:
    fragment = tmp_path / "bad.config"
    fragment.write_text("CONFIG_SMP=y\nSMP=y\n")
    with pytest.raises(kconfig.ConfigError, match=r"bad.config:2"):
        kconfig.requested_options([fragment])


def test_every_config_fragment_parses() -> None:
    for fragment in sorted(specs.CONFIGS_DIR.glob("*.config")):
        assert kconfig.requested_options([fragment]), f"{fragment} asks for nothing"


# --- source and series (no build needed) -----------------------------------


def test_series_names_a_missing_patch(tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.write_text("# comment\n0001-real.patch\n0002-missing.patch\n")
    (tmp_path / "0001-real.patch").write_text("")
    with pytest.raises(source.SourceError, match=r"series:3: patch '0002-missing.patch' not found"):
        source.read_series(series)


def test_series_hash_follows_patch_content(tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.write_text("0001-a.patch  # the first\n")
    patch = tmp_path / "0001-a.patch"
    patch.write_text("+config LOCKSTUDY_DEMO\n")
    first = source.read_series(series)
    assert first.defined_kconfig_symbols() == {"LOCKSTUDY_DEMO"}
    series.write_text("0001-a.patch  # comments do not count\n")
    assert source.read_series(series).digest == first.digest
    patch.write_text("+config LOCKSTUDY_OTHER\n")
    assert source.read_series(series).digest != first.digest


def test_prompted_bool_symbols_of_the_series(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("0001-a.patch\n")
    (tmp_path / "0001-a.patch").write_text(
        "+config LOCKSTUDY_ON\n+\tbool \"A switch\"\n+config LOCKSTUDY_STEPS\n+\tint \"Steps\"\n"
        "+config LOCKSTUDY_HIDDEN\n+\tdef_bool y\n"
    )
    assert source.read_series(tmp_path / "series").prompted_bool_symbols() == ["LOCKSTUDY_ON"]


def test_a_patch_that_does_not_apply_is_named(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "file.c").write_text("int a;\nint b;\n")
    patch = tmp_path / "0001-change-c.patch"
    patch.write_text("--- a/file.c\n+++ b/file.c\n@@ -1,2 +1,2 @@\n int a;\n-int c;\n+int d;\n")
    with pytest.raises(source.SourceError, match=r"patch 1/1 .*0001-change-c.patch does not apply to Linux 6.1.0"):
        source.apply_patch(tree, patch, 1, 1, "6.1.0")


def test_old_patched_trees_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("LOCKSTUDY_CACHE", str(tmp_path))
    trees = []
    for age, name in enumerate(["newest", "newer", "older", "oldest"]):
        tree = tmp_path / "kernel" / "tree" / name
        (tree / "obj").mkdir(parents=True)
        (tree / source.TREE_STAMP).write_text("{}")
        os.utime(tree / source.TREE_STAMP, (1000 - age, 1000 - age))
        trees.append(tree)
    removed = source.prune_trees(keep=2, current=trees[0])
    assert sorted(p.name for p in removed) == ["newer", "older", "oldest"][1:]
    assert trees[0].exists() and trees[1].exists()
