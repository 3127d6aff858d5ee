"""Fuzzing run specs: the host's check never crashes, and agrees with the guest's own code.

A spec the host accepts is one /init (spec.sh and each program's --check,
under busybox sh as in the guest) accepts, and the other way round: the
dry-run refuses exactly what the guest would refuse. kbench's lock variants
are the one exception, by design: the host knows kernel/variants.toml,
the guest's check does not (it learns only when the bench runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from fuzzing import budget, run_specs
from lockstudy import run_spec, workloads

pytestmark = pytest.mark.fuzz


@pytest.fixture(scope="module")
def programs() -> Path:
    return workloads.build(echo=False)


@budget()
@given(run_specs)
def test_the_host_check_ends_in_reasons_or_acceptance(spec: str) -> None:
    reasons = run_spec.reasons(spec)
    assert all(reason.wrong and "\n" not in reason.wrong + reason.allowed for reason in reasons)
    try:
        run_spec.parse_run_spec(spec)
    except run_spec.RunSpecError:
        assert reasons, f"parse_run_spec refused {spec!r}, reasons() found nothing"
    else:
        assert not reasons, f"parse_run_spec accepted {spec!r}, reasons() says {reasons}"


def guest_refuses(spec: str, programs: Path) -> str:
    try:
        run_spec.check_with_guest_code(spec, programs)
    except run_spec.RunSpecError as exc:
        return str(exc) or "refused"
    return ""


def names_a_kbench_variant(spec: str) -> bool:
    return any(item.startswith("kbench:") and "variant=" in item for item in spec.split("+"))


@budget()
@given(run_specs)
def test_the_host_refuses_exactly_what_the_guest_refuses(programs: Path, spec: str) -> None:
    host = run_spec.reasons(spec)
    guest = guest_refuses(spec, programs)
    if names_a_kbench_variant(spec) and host and not guest:
        return  # the host knows the kernel's variants; the guest's check does not
    assert bool(host) == bool(guest), f"{spec!r}: host says {host or 'fine'}, guest says {guest or 'fine'}"
