"""Where a trimmed dbench loadfile may end: no file handle left open, in both image recipes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lockstudy import dbench_loadfile, image

POST_BUILD = image.IMAGE_DIR / "buildroot/board/lockstudy/post-build.sh"

# Handle 7 opens on line 2 and closes on line 5; a failed open (line 3) takes no
# slot; handle 9 opens on line 6 and closes on line 8.
SMALL = b"""Mkdir "\\clients" NT_STATUS_OK
NTCreateX "\\clients\\a" 0x1 0x2 7 NT_STATUS_OK
NTCreateX "\\clients\\gone" 0x40 0x1 8 NT_STATUS_OBJECT_NAME_NOT_FOUND
WriteX 7 0 10 10 NT_STATUS_OK
Close 7 NT_STATUS_OK
NTCreateX "\\clients\\b" 0x1 0x2 9 NT_STATUS_OK
ReadX 9 0 10 10 NT_STATUS_OK
Close 9 NT_STATUS_OK
Unlink "\\clients\\b" NT_STATUS_OK
"""


def write(tmp_path: Path, body: bytes) -> Path:
    path = tmp_path / "client.txt"
    path.write_bytes(body)
    return path


def test_cut_goes_on_to_the_first_balanced_line(tmp_path: Path) -> None:
    source = write(tmp_path, SMALL)
    assert dbench_loadfile.balanced_cut(source, 1) == dbench_loadfile.Cut(lines=1, open_at_requested=0)
    assert dbench_loadfile.balanced_cut(source, 2) == dbench_loadfile.Cut(lines=5, open_at_requested=1)
    assert dbench_loadfile.balanced_cut(source, 5).lines == 5
    assert dbench_loadfile.balanced_cut(source, 6).lines == 8
    output = tmp_path / "trimmed.txt"
    dbench_loadfile.write_trimmed(source, 3, output)
    assert output.read_bytes() == b"".join(SMALL.splitlines(keepends=True)[:5])


def test_a_loadfile_that_never_balances_is_refused_in_one_line(tmp_path: Path) -> None:
    source = write(tmp_path, SMALL.replace(b"Close 9 NT_STATUS_OK\n", b""))
    with pytest.raises(dbench_loadfile.LoadfileError, match=r"no line at or after line 6 closes every file handle \(1 still open"):
        dbench_loadfile.balanced_cut(source, 6)
    with pytest.raises(image.ImageError) as raised:
        image.trimmed_loadfile(source, 6, tmp_path / "out.txt")
    assert str(raised.value).startswith("[dbench] loadfile_lines = 6: ") and "\n" not in str(raised.value)
    with pytest.raises(dbench_loadfile.LoadfileError, match=r"1 file handle\(s\) left open at its end \(fnum 9\)"):
        dbench_loadfile.check_balanced(source)


def debian_loadfile() -> Path:
    path = image.load_config().dbench_loadfile
    if not path.is_file():
        pytest.fail(f"{path} missing: run ./run.sh setup (Debian package dbench)")
    return path


def test_debian_loadfile_cut_at_the_configured_count_would_leak() -> None:
    """The plain cut at loadfile_lines leaves handles open: the reason for the rule."""
    config = image.load_config()
    with open(debian_loadfile(), "rb") as lines:
        head = [line for _, line in zip(range(config.loadfile_lines), lines)]
    assert len(dbench_loadfile.open_handles(head)) > 0
    cut = dbench_loadfile.balanced_cut(debian_loadfile(), config.loadfile_lines)
    assert cut.lines > config.loadfile_lines and cut.open_at_requested == len(dbench_loadfile.open_handles(head))


@pytest.mark.parametrize("awk", ["awk", "busybox"])
def test_buildroot_post_build_cuts_where_the_python_recipe_does(tmp_path: Path, awk: str) -> None:
    """post-build.sh (buildroot) and image.py (Debian packages) ship the same loadfile bytes."""
    if shutil.which(awk) is None:
        pytest.fail(f"{awk} not found: run ./run.sh setup")
    target = tmp_path / "target"
    (target / "usr/share/dbench").mkdir(parents=True)
    (target / "sbin").mkdir()
    shutil.copy(debian_loadfile(), target / "usr/share/dbench/client.txt")
    shim = tmp_path / "bin"
    shim.mkdir()
    if awk == "busybox":  # the awk a minimal build host may have
        (shim / "awk").symlink_to(shutil.which("busybox"))
    env = dict(os.environ, BR2_EXTERNAL_LOCKSTUDY_PATH=str(image.IMAGE_DIR / "buildroot"), PATH=f"{shim}:{os.environ['PATH']}")
    result = subprocess.run(["sh", str(POST_BUILD), str(target)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    expected = image.trimmed_loadfile(debian_loadfile(), image.load_config().loadfile_lines, tmp_path / "python.txt")
    assert (target / "opt/lockstudy/share/dbench-client.txt").read_bytes() == expected.read_bytes()


def test_buildroot_post_build_refuses_a_leaking_loadfile(tmp_path: Path) -> None:
    target = tmp_path / "target"
    (target / "usr/share/dbench").mkdir(parents=True)
    (target / "sbin").mkdir()
    leaking = SMALL.replace(b"Close 9 NT_STATUS_OK\n", b"")
    (target / "usr/share/dbench/client.txt").write_bytes(leaking * 5000)  # past image.toml's line count, never balanced
    env = dict(os.environ, BR2_EXTERNAL_LOCKSTUDY_PATH=str(image.IMAGE_DIR / "buildroot"))
    result = subprocess.run(["sh", str(POST_BUILD), str(target)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert "no line at or after line" in result.stderr and "closes every file handle" in result.stderr
