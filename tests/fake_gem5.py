"""A stand-in gem5 for the gem5 backend's tests: a Python program in its place, and stand-ins for the built artifacts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# How a stand-in gem5 program starts: `args`, its --outdir as `out`, and a boot (--checkpoint-out)
# that makes its checkpoint folder and ends; what follows is the restored run's.
PROGRAM_START = """\
import json, sys, time
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--outdir") + 1])
out.mkdir(parents=True, exist_ok=True)
if "--checkpoint-out" in args:
    Path(args[args.index("--checkpoint-out") + 1]).mkdir(parents=True)
    raise SystemExit(0)
"""


def install_fake_gem5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str) -> Path:
    """Make the gem5 backend run `program` (Python) as gem5, with stand-in kernel and image; its path."""
    from lockstudy.campaign import artifacts, gem5_backend
    from lockstudy.gem5 import Gem5Info

    fake = tmp_path / "gem5"
    fake.write_text(f"#!{sys.executable}\n" + program)
    fake.chmod(0o755)
    monkeypatch.setattr(gem5_backend, "gem5_for_machine", lambda machine: Gem5Info(fake, "24.0.0.1", {}))
    stand_in = artifacts.Artifact(tmp_path / "artifact", "id")
    monkeypatch.setattr(artifacts, "kernel", lambda build, kind: stand_in)
    monkeypatch.setattr(artifacts, "disk_image", lambda: stand_in)
    return fake
