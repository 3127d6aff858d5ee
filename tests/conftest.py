"""Shared test fixtures.

Conventions:
- A test that needs gem5 takes the `gem5` fixture: without a usable GEM5 it
  is skipped with the reason printed, never passed. A test of a machine
  whose Ruby protocol matters takes `gem5_chi` (altix-numa) or
  `gem5_mesi` (altix-numa-interleaved): GEM5_<PROTOCOL> or GEM5 built
  with that protocol, else skipped with the reason and the build steps.
- A test that needs a stage built by `./run.sh setup` (a kernel, the image)
  fails with a message saying so: set-up is part of what CI proves.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lockstudy import gem5 as gem5_finder
from lockstudy.kernel import specs
from lockstudy.kernel.build import BuildMissing, require_build
from lockstudy.paths import ROOT


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def gem5() -> gem5_finder.Gem5Info:
    try:
        return gem5_finder.find_gem5(dict(os.environ))
    except gem5_finder.Gem5Unavailable as exc:
        pytest.skip(f"needs gem5: {exc}")


def _gem5_with(protocol: str) -> gem5_finder.Gem5Info:
    try:
        return gem5_finder.find_gem5(dict(os.environ), protocol=protocol)
    except gem5_finder.Gem5Unavailable as exc:
        pytest.skip(f"needs gem5 with {protocol}: {exc}")


@pytest.fixture(scope="session")
def gem5_chi() -> gem5_finder.Gem5Info:
    return _gem5_with("CHI")


@pytest.fixture(scope="session")
def gem5_mesi() -> gem5_finder.Gem5Info:
    return _gem5_with("MESI_Two_Level")


@pytest.fixture(scope="session")
def smp_bzimage() -> Path:
    """The smp kernel's bzImage; fails (set-up is part of what CI proves) when it is missing or stale."""
    try:
        return require_build(specs.load_builds()["smp"]) / "bzImage"
    except BuildMissing as exc:
        pytest.fail(str(exc))
