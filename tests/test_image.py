"""The disk image: /init's spec parsing (run natively under busybox sh), the
build, its reproducibility, and the two recipes shipping the same things."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from lockstudy import dbench_loadfile, image, workloads

SPEC_SH = image.OVERLAY_DIR / "opt/lockstudy/lib/spec.sh"
INIT = image.OVERLAY_DIR / "init"
BUSYBOX = Path("/bin/busybox")
BUILDROOT = image.IMAGE_DIR / "buildroot"


def busybox_sh(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    if not BUSYBOX.is_file():
        pytest.fail(f"{BUSYBOX} missing: run ./run.sh setup (Debian package busybox-static)")
    env = dict(os.environ, LS_BIN=str(workloads.bin_dir()))
    return subprocess.run([str(BUSYBOX), "sh", "-c", f". {SPEC_SH}\n{script}", "sh", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture(scope="module")
def programs() -> Path:
    return workloads.build(echo=False)


def test_init_and_spec_parse_as_busybox_sh() -> None:
    for script in (INIT, SPEC_SH):
        result = subprocess.run([str(BUSYBOX), "sh", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script}: {result.stderr}"


def test_cmdline_parsing() -> None:
    script = 'ls_parse_cmdline "$1"; echo "rc=$? run=$LS_RUN ckpt=$LS_CHECKPOINT m5=$LS_M5OPS err=$LS_ERROR"'
    out = busybox_sh(script, "console=ttyS0 lockstudy.run=pft:threads=4,mb=64+samefile lockstudy.spinlock=ticket lockstudy.checkpoint=1 lockstudy.m5ops=inst").stdout
    assert out.strip() == "rc=0 run=pft:threads=4,mb=64+samefile ckpt=1 m5=inst err="
    assert "rc=0 run= ckpt=0 m5=off" in busybox_sh(script, "console=ttyS0 quiet").stdout
    assert "lockstudy.m5ops=kvm: expected off, inst or addr" in busybox_sh(script, "lockstudy.m5ops=kvm").stdout
    assert "lockstudy.checkpoint=yes" in busybox_sh(script, "lockstudy.checkpoint=yes").stdout


def test_the_memory_map_is_asked_for_on_the_command_line_or_from_readfile() -> None:
    script = 'ls_parse_cmdline "$1" && ls_parse_readfile_options "$2"; echo "rc=$? map=$LS_MEMORY_MAP err=$LS_ERROR"'
    assert busybox_sh(script, "console=ttyS0 lockstudy.run=dd1b", "").stdout.strip() == "rc=0 map=0 err="
    assert busybox_sh(script, "lockstudy.memory_map=1", "").stdout.strip() == "rc=0 map=1 err="
    # a restored guest's readfile: the options after the run spec's line
    assert busybox_sh(script, "lockstudy.run=dd1b", "memory_map=1").stdout.strip() == "rc=0 map=1 err="
    assert "lockstudy.memory_map=yes: expected 0 or 1" in busybox_sh(script, "lockstudy.memory_map=yes", "").stdout
    assert "readfile option 'trace=1': expected memory_map=0|1" in busybox_sh(script, "", "trace=1").stdout
    assert "readfile memory_map=2: expected 0 or 1" in busybox_sh(script, "", "memory_map=2").stdout
    # the whole readfile text as /init gets it: the run spec's line, then the options
    whole = 'LS_MEMORY_MAP=0; ls_parse_readfile "$1"; echo "rc=$? run=$LS_RUN map=$LS_MEMORY_MAP"'
    assert busybox_sh(whole, "kbench:duration_ms=10\nmemory_map=1").stdout.strip() == "rc=0 run=kbench:duration_ms=10 map=1"
    assert busybox_sh(whole, "kbench:duration_ms=10").stdout.strip() == "rc=0 run=kbench:duration_ms=10 map=0"


def test_items_and_arguments() -> None:
    script = 'ls_split_run "$1"; for i in $LS_ITEMS; do ls_split_item "$i"; echo "$LS_ITEM_NAME|$LS_ITEM_ARGS|$(ls_arg "$LS_ITEM_ARGS" dir .)"; done'
    out = busybox_sh(script, "pft:threads=4,mb=64+samefile:threads=2,seconds=2,dir=/tmp+dd1b").stdout.splitlines()
    assert out == ["pft|threads=4 mb=64|.", "samefile|threads=2 seconds=2 dir=/tmp|/tmp", "dd1b||."]
    # the splitting leaves the shell's IFS and globbing as they were
    after = busybox_sh('ls_split_run "a+b"; ls_split_item "c:x=1,y=2"; echo "$(echo /bin/busyb?x)|$IFS|"').stdout
    assert after == f"{BUSYBOX}| \t\n|\n"


def test_a_repeated_item_is_checked_once(tmp_path: Path) -> None:
    """/init checks the spec on the simulated CPU, where each `--check` fork
    costs simulated milliseconds: a spec that repeats an item (a ROI taken
    twice) checks it once."""
    log = tmp_path / "checks.log"
    program = tmp_path / "probe"
    program.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    program.chmod(0o755)
    env = dict(os.environ, LS_BIN=str(tmp_path))
    script = 'ls_validate_run "$1"; echo "rc=$? err=$LS_ERROR"'
    spec = "probe:n=1+probe:n=2+probe:n=1+probe:n=2+probe:n=1"
    result = subprocess.run([str(BUSYBOX), "sh", "-c", f". {SPEC_SH}\n{script}", "sh", spec], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "rc=0 err="
    assert log.read_text().splitlines() == ["n=1 --check", "n=2 --check"]


GOOD_SPECS = [
    "",
    "pft:threads=4,mb=64+samefile:threads=2,seconds=2",
    "write1b:processes=2,iterations=100,dir=/tmp",
    "fsmix:files=4,size=100+mmapsem:forkevery=0",
    "dd1b:count=1000+dbench:clients=2,seconds=3,dir=/tmp",
    "dd1b",
    "kbench",
    "kbench:variant=hbo,cpus=0-1.3,duration_ms=300,hold_loops=100,think_loops=100,placement=shared,repeat=2",
    # which variants exist is the kernel's to say (the host checks kernel/variants.toml)
    "kbench:variant=nosuch",
]
BAD_SPECS = [
    ("nosuch:threads=1", "unknown testcase 'nosuch'"),
    ("pft:threads=x", "threads=x: not a decimal number"),
    ("pft:bogus=1", "unknown parameter 'bogus'"),
    ("pft:processes=2", "threads only"),
    ("pft+", "empty item"),
    ("+pft", "empty item"),
    ("pft++samefile", "empty item"),
    ("pft:", "no KEY=VALUE"),
    ("pft:threads", "'threads' is not KEY=VALUE"),
    ("pft:threads=2,", "empty KEY=VALUE"),
    ("pft:Threads=2", "bad key 'Threads'"),
    ("pft:threads=2,threads=3", "key 'threads' given twice"),
    ("dbench:clients=-1,clients=1", "key 'clients' given twice"),
    ("samefile:dir=a*b", "characters outside"),
    ("dd1b:count=0", "count=0 is out of range"),
    ("dd1b:size=4", "unknown key 'size' for dd1b"),
    ("dbench:clients=-1", "clients=-1 is not a whole number"),
    ("dbench:seconds=1", "seconds=1 is out of range [2, 86400]"),
    ("dbench:clients=2;reboot", "characters outside"),
    (":threads=1", "no testcase name"),
    ("kbench:variant=Hbo", "expected a variant name"),
    ("kbench:placement=mixed", "expected padded, shared, pair-padded or pair-packed"),
    ("kbench:placement=pair-packed,cpus=2", "a lock pair needs two bench threads or more; cpus=2 gives 1"),
    ("kbench:duration_ms=20000", "out of range [1, 10000]"),
    ("kbench:cpus=3-1", "bad range 3-1"),
    ("kbench:threads=2", "unknown parameter 'threads'"),
]


@pytest.mark.parametrize("spec", GOOD_SPECS)
def test_good_specs_validate(programs: Path, spec: str) -> None:
    result = busybox_sh('ls_validate_run "$1"; echo "rc=$? $LS_ERROR"', spec)
    assert result.stdout.strip() == "rc=0", result.stdout + result.stderr


@pytest.mark.parametrize(("spec", "message"), BAD_SPECS)
def test_bad_specs_name_the_spec_and_the_problem(programs: Path, spec: str, message: str) -> None:
    result = busybox_sh('ls_validate_run "$1"; echo "rc=$? $LS_ERROR"', spec)
    assert result.stdout.startswith("rc=1 "), result.stdout + result.stderr
    assert message in result.stdout
    assert spec.split("+")[0] in result.stdout or "run spec" in result.stdout


# ---- the build --------------------------------------------------------------


@pytest.fixture(scope="module")
def built() -> Path:
    """The image from ./run.sh setup, brought up to date (seconds when it is)."""
    return image.build_image()


def read_newc(data: bytes) -> dict[str, tuple[int, bytes, tuple[int, int]]]:
    """name -> (mode, data, rdev) of a newc archive."""
    entries: dict[str, tuple[int, bytes, tuple[int, int]]] = {}
    offset = 0
    while True:
        header = data[offset : offset + 110]
        assert header[:6] == b"070701"
        fields = [int(header[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
        mode, size, rdev, namesize = fields[1], fields[6], (fields[9], fields[10]), fields[11]
        name = data[offset + 110 : offset + 110 + namesize - 1].decode()
        offset += 110 + namesize
        offset += -offset % 4
        body = data[offset : offset + size]
        offset += size + (-size % 4)
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, body, rdev)


def test_image_holds_the_programs_and_init(built: Path) -> None:
    info = json.loads(image.info_path().read_text())
    assert info["content_hash"] and info["debian_packages"]["busybox-static"] != "not installed"
    assert set(info["outputs"]) == {"rootfs.ext2", "rootfs.cpio.gz"}
    entries = read_newc(gzip.decompress(image.cpio_path().read_bytes()))
    bindir = workloads.install_dir().lstrip("/")
    for program in workloads.programs():
        mode, body, _ = entries[f"{bindir}/{program}"]
        assert mode & 0o111 and body.startswith(b"\x7fELF")
    assert entries["init"][1] == INIT.read_bytes()
    assert entries["sbin/init"][1] == b"/init"  # a symlink to our /init, not busybox init
    assert entries["bin/sh"][1] == b"/bin/busybox"
    assert entries["dev/console"][2] == (5, 1)
    assert entries["usr/bin/dbench"][1][:4] == b"\x7fELF"
    assert "lib64/ld-linux-x86-64.so.2" in entries and "lib/x86_64-linux-gnu/libpopt.so.0" in entries
    loadfile = entries[image.LOADFILE_IN_IMAGE][1]
    assert loadfile.count(b"\n") >= image.load_config().loadfile_lines
    assert not dbench_loadfile.open_handles(loadfile.splitlines()), "the image's dbench loadfile leaks file handles"
    listing = subprocess.run(["debugfs", "-R", f"ls /{bindir}", str(image.ext2_path())], capture_output=True, text=True).stdout
    for program in workloads.programs():
        assert re.search(rf"\b{program}\b", listing)


def test_build_is_reproducible(built: Path, tmp_path: Path) -> None:
    """Same inputs -> identical bytes, whenever and wherever the image is made."""
    config = image.load_config()
    staged = tmp_path / "staged"
    workloads.install(staged)
    loadfile = image.trimmed_loadfile(config.dbench_loadfile, config.loadfile_lines, tmp_path / "client.txt")
    nodes = image.manifest(config, staged, loadfile)
    archives = []
    for attempt in ("a", "b"):
        where = tmp_path / attempt
        where.mkdir()
        image.write_ext2(nodes, config, where / "rootfs.ext2", where)
        archives.append(image.newc_cpio(nodes, config.epoch))
        time.sleep(1.1)  # a clock tick must not show in the bytes
    # cmp: fast on the sparse 512 MiB images
    for other in (tmp_path / "b" / "rootfs.ext2", image.ext2_path()):
        result = subprocess.run(["cmp", str(tmp_path / "a" / "rootfs.ext2"), str(other)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    assert archives[0] == archives[1]
    image.write_cpio_gz(nodes, config, tmp_path / "rootfs.cpio.gz")
    assert (tmp_path / "rootfs.cpio.gz").read_bytes() == image.cpio_path().read_bytes()


def test_second_build_is_skipped(built: Path) -> None:
    started = time.monotonic()
    before = image.ext2_path().stat().st_mtime_ns
    image.build_image()
    assert image.ext2_path().stat().st_mtime_ns == before
    assert time.monotonic() - started < 10


# ---- the buildroot recipe ships the same things ----------------------------


def defconfig() -> dict[str, str]:
    values = {}
    for line in (BUILDROOT / "configs/lockstudy_x86_64_defconfig").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value.strip('"')
    return values


def test_buildroot_tree_has_the_conventional_layout() -> None:
    assert "name: LOCKSTUDY" in (BUILDROOT / "external.desc").read_text()
    for package in ("lockstudy-workloads", "lockstudy-dbench"):
        assert f"package/{package}/Config.in" in (BUILDROOT / "Config.in").read_text()
        assert (BUILDROOT / f"package/{package}/{package}.mk").is_file()
    assert "package/*/*.mk" in (BUILDROOT / "external.mk").read_text()
    assert "internet" in (image.IMAGE_DIR / "README.md").read_text()


def test_both_recipes_ship_the_same_programs_and_init() -> None:
    config = defconfig()
    external = "$(BR2_EXTERNAL_LOCKSTUDY_PATH)"
    # the same overlay: the same /init and spec parser
    assert config["BR2_ROOTFS_OVERLAY"] == f"{external}/../overlay"
    assert (BUILDROOT / "../overlay").resolve() == image.OVERLAY_DIR.resolve()
    # the same workload sources, installed by the same `make install`
    mk = (BUILDROOT / "package/lockstudy-workloads/lockstudy-workloads.mk").read_text()
    site = re.search(r"^LOCKSTUDY_WORKLOADS_SITE = (.+)$", mk, re.M)
    assert site and site.group(1) == f"{external}/../../workloads"
    assert (BUILDROOT / "../../workloads").resolve() == workloads.SOURCE_DIR.resolve()
    assert "LOCKSTUDY_WORKLOADS_SITE_METHOD = local" in mk
    assert re.search(r"\$\(MAKE\).*-C \$\(@D\).*\n.*DESTDIR=\$\(TARGET_DIR\) install", mk)
    # the same other programs: busybox, dbench, the workloads package
    for symbol in ("BR2_PACKAGE_BUSYBOX", "BR2_PACKAGE_LOCKSTUDY_DBENCH", "BR2_PACKAGE_LOCKSTUDY_WORKLOADS", "BR2_TARGET_ROOTFS_EXT2", "BR2_TARGET_ROOTFS_CPIO"):
        assert config.get(symbol) == "y", symbol
    # the same dbench release as Debian's package, its loadfile where post-build trims it
    dbench_mk = (BUILDROOT / "package/lockstudy-dbench/lockstudy-dbench.mk").read_text()
    debian_dbench = image.debian_versions(["dbench"])["dbench"]
    assert re.search(r"^LOCKSTUDY_DBENCH_VERSION = (.+)$", dbench_mk, re.M).group(1) == debian_dbench.split("-")[0]  # type: ignore[union-attr]
    assert "$(TARGET_DIR)/usr/share/dbench/client.txt" in dbench_mk
    # the same trimmed loadfile, init links and scratch directory
    post = (BUILDROOT / "board/lockstudy/post-build.sh").read_text()
    assert config["BR2_ROOTFS_POST_BUILD_SCRIPT"] == f"{external}/board/lockstudy/post-build.sh"
    assert image.LOADFILE_IN_IMAGE in post and "loadfile_lines" in post
    for link in image.INIT_LINKS:
        assert f'ln -sf /init "$target/{link}"' in post
    assert "scratch" in post and "scratch" in image.BASE_DIRS
    result = subprocess.run([str(BUSYBOX), "sh", "-n", str(BUILDROOT / "board/lockstudy/post-build.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def unpacked_image_root(where: Path) -> Path:
    """The initramfs unpacked into `where`/root, for running its programs with chroot."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root (the image itself is built without root)")
    root = where / "root"
    root.mkdir()
    archive = gzip.decompress(image.cpio_path().read_bytes())
    unpack = subprocess.run(["cpio", "-idm", "--quiet", "--no-absolute-filenames"], input=archive, cwd=root, capture_output=True)
    assert unpack.returncode == 0, unpack.stderr
    return root


def test_dbench_runs_from_the_image_tree(built: Path, tmp_path: Path) -> None:
    """dbench, its libraries, the loader and the trimmed loadfile are complete:
    run it from the unpacked initramfs with chroot, as /init would."""
    root = unpacked_image_root(tmp_path)
    bindir = workloads.install_dir()
    argv = [
        "/usr/sbin/chroot", str(root), f"{bindir}/runtimed", "name=dbench", "seed=000", "log=/tmp/dbench.log",
        "metric=throughput_mb_s:Throughput", "--",
        "/usr/bin/dbench", "-c", "/" + image.LOADFILE_IN_IMAGE, "-t", "2", "-D", "/scratch", "1",
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/bin:/usr/bin"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["throughput_mb_s"] > 0


DBENCH_PASSES = 50  # enough passes to fill dbench's file table many times over if a pass leaked a handle
DBENCH_MAX_SECONDS = 240  # all attempts together; a host slower than this fails the test rather than pass it unproven
DBENCH_TIME_MARGIN = 1.5  # a run asks for this much more time than its rate estimate needs (the host's load varies)


def dbench_passes(root: Path, seconds: int) -> tuple[int, str]:
    """Run dbench (1 client) over the image's loadfile in the image's tree for
    `seconds`; return the passes it began (its Mkdir count: line 2 of every pass) and its output."""
    argv = ["/usr/sbin/chroot", str(root), "/usr/bin/dbench", "-c", "/" + image.LOADFILE_IN_IMAGE, "-t", str(seconds), "-D", "/scratch", "1"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, env={"PATH": "/bin:/usr/bin"})
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"dbench died within its {seconds} s limit:\n{output[-2000:]}"
    began = re.search(r"^\s*Mkdir\s+(\d+)\s", output, re.MULTILINE)
    assert began, f"no Mkdir count in dbench's output:\n{output[-2000:]}"
    return int(began.group(1)), output


def test_dbench_survives_many_passes_of_the_trimmed_loadfile(built: Path, tmp_path: Path) -> None:
    """dbench replays its loadfile in a loop; a trimmed copy that leaves file
    handles open kills the client ("file table full") after a number of passes
    that depends on the host's speed. Run it until one run has made at least
    DBENCH_PASSES whole passes (each run sized from the last one's rate), on a
    tmpfs where one exists so that passes are quick."""
    shm = Path("/dev/shm")
    spent, seconds, whole = 0, 2, 0
    with tempfile.TemporaryDirectory(prefix="lockstudy-dbench-", dir=shm if os.access(shm, os.W_OK) else tmp_path) as where:
        root = unpacked_image_root(Path(where))
        while True:
            began, output = dbench_passes(root, seconds)
            spent += seconds
            whole = began - 1
            if whole >= DBENCH_PASSES:
                return
            per_second = max(whole, 1) / seconds
            seconds = math.ceil(DBENCH_TIME_MARGIN * (DBENCH_PASSES + 1) / per_second) + 1
            if spent + seconds > DBENCH_MAX_SECONDS:
                pytest.fail(
                    f"{whole} whole passes in the last run; this host makes {per_second:.2f} dbench passes/s, "
                    f"too slow for {DBENCH_PASSES} passes within {DBENCH_MAX_SECONDS} s:\n{output[-2000:]}"
                )


def test_python_run_spec_is_what_init_accepts(programs: Path) -> None:
    from lockstudy.run_spec import Item, RunSpecError, kernel_args, run_spec

    items = [Item("pft", {"threads": 4, "mb": 64}), Item("samefile", {"threads": 2, "seconds": 0.5, "dir": "/tmp"}), Item("dd1b")]
    spec = run_spec(items)
    assert spec == "pft:threads=4,mb=64+samefile:threads=2,seconds=0.5,dir=/tmp+dd1b"
    assert busybox_sh('ls_validate_run "$1"; echo "rc=$? $LS_ERROR"', spec).stdout.strip() == "rc=0"
    args = kernel_args(items, m5ops="inst", checkpoint=True)
    parsed = busybox_sh('ls_parse_cmdline "$1"; echo "$LS_RUN|$LS_M5OPS|$LS_CHECKPOINT"', f"console=ttyS0 {args}").stdout.strip()
    assert parsed == f"{spec}|inst|1"
    for bad in (Item("pft", {"dir": "a b"}), Item("Pft"), Item("pft", {"Threads": 1})):
        with pytest.raises(RunSpecError):
            run_spec([bad])
    with pytest.raises(RunSpecError):
        kernel_args(items, m5ops="kvm")


def test_bad_image_config_is_named(tmp_path: Path) -> None:
    text = image.CONFIG_FILE.read_text()
    broken = tmp_path / "image.toml"
    broken.write_text(text.replace("size_mib = ", "size_mib = -"))
    with pytest.raises(image.ImageError, match=r"\[ext2\] size_mib = -\d+: expected a positive integer"):
        image.load_config(broken)
    broken.write_text(text.replace("loadfile_lines", "lines"))
    with pytest.raises(image.ImageError, match=r"missing \[dbench\] loadfile_lines"):
        image.load_config(broken)
