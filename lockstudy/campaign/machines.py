"""Machine files, read by gem5-configs/machine.py (standard library only, shared with gem5)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from lockstudy.paths import ROOT

MACHINE_MODULE = ROOT / "gem5-configs" / "machine.py"


def machine_module() -> ModuleType:
    name = "lockstudy_gem5_machine"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, MACHINE_MODULE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def ruby_protocol_of(machine_name: str) -> str | None:
    """The Ruby protocol a machine needs its gem5 built with (None: any build)."""
    return machine_module().find_machine(machine_name).ruby_protocol


def gem5_for_machine(machine_name: str):
    """The gem5 binary to run this machine on (lockstudy.gem5.find_gem5 by its protocol)."""
    from lockstudy import gem5

    return gem5.find_gem5(protocol=ruby_protocol_of(machine_name))
