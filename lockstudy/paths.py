"""Where the project keeps its sources, build outputs and caches."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
DATA = Path(__file__).resolve().parent / "data"


def build_dir() -> Path:
    """Build outputs of this checkout (kernels, images, workloads)."""
    return Path(os.environ.get("LOCKSTUDY_BUILD", ROOT / "build"))


CACHE_VARIABLE = "LOCKSTUDY_CACHE"


def cache_dir() -> Path:
    """Caches shared by every checkout on this machine (ccache, sources, trace attributions).

    Kept outside the clone so that a fresh clone (as CI makes) rebuilds
    the kernel from a warm compiler cache.
    """
    if CACHE_VARIABLE in os.environ:
        return Path(os.environ[CACHE_VARIABLE])
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "lockstudy"


def venv_python() -> Path:
    return VENV / "bin" / "python"
