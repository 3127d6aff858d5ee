"""The host's registry of testcases (lockstudy/data/testcases.toml) agrees with the guest's code.

The limits live in the workloads' C parameter tables (printed by each
program's --help) and in /init's spec.sh; the registry is a copy the host
can read without building or booting anything. These tests fail when the
two drift apart.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lockstudy import run_spec, workloads
from lockstudy.paths import ROOT
from lockstudy.validation import testcases

SPEC_SH = run_spec.SPEC_LIBRARY
# `  name=N [min..max]` or `  name=S` in a harness program's --help (workloads/harness.c, print_param()).
HELP_PARAM = re.compile(r"^  ([a-z][a-z0-9_]*)=([NS])(?: \[(\d+)\.\.(\d+)\])?$")
# `ls_check_number "$item" KEY "$(ls_arg "$args" KEY DEFAULT)" MIN MAX` in spec.sh.
SPEC_SH_RANGE = re.compile(r'ls_check_number "\$item" (\w+) "\$\(ls_arg "\$args" \w+ \d+\)" (\d+) (\d+)')
SPEC_SH_KEYS = re.compile(r'^LS_(\w+)_KEYS="([^"]*)"$', re.M)
SPEC_SH_TOOL_LABEL = re.compile(r"^\t(\w+)\)$")  # a case label alone on its line: the checks of one tool follow


@pytest.fixture(scope="module")
def programs() -> Path:
    return workloads.build(echo=False)


def help_params(program: Path) -> dict[str, tuple[str, int, int]]:
    """name -> (N or S, min, max) of every parameter a harness program's --help lists."""
    text = subprocess.run([str(program), "--help"], capture_output=True, text=True, check=True, timeout=30).stdout
    found = {}
    for line in text.splitlines():
        match = HELP_PARAM.match(line)
        if match:
            name, kind, low, high = match.groups()
            found[name] = (kind, int(low or 0), int(high or 0))
    return found


def registry_as_help(case: testcases.Testcase) -> dict[str, tuple[str, int, int]]:
    return {
        name: ("N", param.low, param.high) if param.kind == "uint" else ("S", 0, 0)
        for name, param in case.params.items()
    }


def test_the_registry_names_every_testcase_of_the_workloads() -> None:
    harness = [name for name in workloads.testcases() if name not in workloads.KERNEL_TESTCASES]
    tools = re.search(r'^LS_TOOL_TESTCASES="([^"]*)"$', SPEC_SH.read_text(), re.M)
    assert tools is not None
    assert set(testcases.registry()) == set(harness) | set(tools.group(1).split())
    assert set(testcases.names()) == set(workloads.testcases()) | set(tools.group(1).split())


@pytest.mark.parametrize("name", workloads.native_testcases())
def test_the_registry_is_what_each_program_s_help_lists(programs: Path, name: str) -> None:
    assert registry_as_help(testcases.registry()[name]) == help_params(programs / name)


def test_the_registry_is_what_spec_sh_checks_for_the_outside_programs() -> None:
    text = SPEC_SH.read_text()
    keys = {name.lower(): set(words.split()) for name, words in SPEC_SH_KEYS.findall(text)}
    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    tool = ""
    for line in text.splitlines():
        label = SPEC_SH_TOOL_LABEL.match(line)
        tool = label.group(1) if label else tool
        for key, low, high in SPEC_SH_RANGE.findall(line):
            ranges.setdefault(tool, {})[key] = (int(low), int(high))
    for tool in ("dd1b", "dbench"):
        case = testcases.registry()[tool]
        assert set(case.params) == keys[tool]
        assert {k: (p.low, p.high) for k, p in case.params.items() if p.kind == "uint"} == ranges[tool]


def test_the_registry_s_data_file_lives_in_the_project() -> None:
    assert testcases.REGISTRY_FILE.is_relative_to(ROOT)
