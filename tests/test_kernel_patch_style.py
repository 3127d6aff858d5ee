"""Every patch of the series passes the kernel's own checkpatch.pl: no errors, and only the warnings
kernel/patches/README.md lists as expected (each for the patches it names)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lockstudy.kernel.source import SourceError, locate_source, read_series, unpacked_source
from lockstudy.kernel.specs import load_builds

pytestmark = [pytest.mark.kernel]

# (warning text, the patches README.md expects it in)
EXPECTED_WARNINGS = (
    ("added, moved or deleted file(s), does MAINTAINERS need updating?", None),  # any patch that adds a file
    ("potentially exposes the kernel memory layout",
     {"spinlock-0005-lock-bench.patch", "lockstudy-core-0002-lock-registry.patch", "lockstudy-bench-rwsem.patch",
      "lockstudy-bench-lock-pair.patch"}),
    ("Unknown commit id", {"mm-single-page-table-lock.patch", "rwsem-wakeflag.patch"}),
)
MESSAGE = re.compile(r"^(ERROR|WARNING|CHECK): (.*)$", re.MULTILINE)


@pytest.fixture(scope="module")
def checkpatch() -> Path:
    if shutil.which("perl") is None:
        pytest.fail("perl not found: run ./run.sh setup")
    try:
        script = unpacked_source(locate_source()) / "scripts" / "checkpatch.pl"
    except SourceError as exc:
        pytest.fail(f"{exc}: run ./run.sh setup")
    if not script.is_file():
        pytest.fail(f"{script}: not in the kernel source")
    return script


def expected(patch: str, message: str) -> bool:
    return any(text in message and (where is None or patch in where) for text, where in EXPECTED_WARNINGS)


# the series, and the patches a build applies after it (builds.toml extra_patches)
PATCHES = [path.name for path in read_series().patches] + sorted({name for spec in load_builds().values() for name in spec.extra_patches})


@pytest.mark.parametrize("patch", PATCHES)
def test_the_patch_is_checkpatch_clean(checkpatch: Path, patch: str, tmp_path: Path) -> None:
    path = read_series().series_file.parent / patch
    # Outside any git checkout: in one, checkpatch asks git about the patch's commits and lines, and misreads it.
    report = subprocess.run(["perl", str(checkpatch), "--no-tree", str(path)], capture_output=True, text=True, check=False, cwd=tmp_path).stdout
    messages = MESSAGE.findall(report)
    assert re.search(r"^total: \d+ errors", report, re.MULTILINE), report[-2000:]
    unexpected = [f"{level}: {text}" for level, text in messages if level != "WARNING" or not expected(patch, text)]
    assert not unexpected, f"{patch}:\n" + report[-4000:]
