"""Lines in gem5 X86's device address spaces (analysis/hotlines/device_space.py, analysis/data/device_spaces.toml).

The bus machine's traces count a CPU's uncacheable writes of its local
APIC's EOI and interrupt command registers (they cross the bus in gem5),
and these lines used to read `unknown (heap)`: the addresses below are
the ones the study's traced bus runs have among their top lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.hotlines.device_space import load_device_spaces
from analysis.hotlines.errors import HotlinesError
from analysis.hotlines.symbols import UNKNOWN_HEAP, read_system_map, symbolise
from analysis.hotlines.table import RunNamer, object_of
from analysis.traffic.locks import load_static_locks

BUS_LINE = 32  # piii-smp's line
LINE = 64
LOCAL_APIC = 0x2000000000000000
EOI_LINE = LOCAL_APIC + 0xA0  # CPU 0's PPR and EOI, the timer interrupt's EOI write
ICR_LINE_CPU1 = LOCAL_APIC + 0x1000 + 0x300  # CPU 1's interrupt command register: an IPI sent
SYSTEM_MAP = "ffffffff81000000 T _text\nffffffff81002000 B _end\n"


def test_a_local_apic_line_is_named_by_its_cpu_and_offset_with_or_without_a_system_map(tmp_path: Path) -> None:
    path = tmp_path / "System.map"
    path.write_text(SYSTEM_MAP)
    table = read_system_map(path, int(load_static_locks()["kernel_image_base"]))
    assert symbolise(EOI_LINE, BUS_LINE, table, ()) == ("io:local APIC [cpu 0]", 0xA0)
    assert symbolise(EOI_LINE, BUS_LINE, None, ()) == ("io:local APIC [cpu 0]", 0xA0)
    assert symbolise(ICR_LINE_CPU1, BUS_LINE, table, ()) == ("io:local APIC [cpu 1]", 0x300)
    # memory above the image is still heap: only the device spaces changed
    assert symbolise(0x3000000, BUS_LINE, table, ()) == (UNKNOWN_HEAP, None)


@pytest.mark.parametrize(
    ("line", "line_bytes", "registers"),
    [
        (EOI_LINE, BUS_LINE, "PPR, EOI"),
        (ICR_LINE_CPU1, BUS_LINE, "ICR low, ICR high"),
        (LOCAL_APIC + 0x80, LINE, "TPR, APR, PPR, EOI"),
        (LOCAL_APIC + 0x100, LINE, "ISR[0], ISR[1], ISR[2], ISR[3]"),
        (LOCAL_APIC + 0x3C0, LINE, "timer divide configuration"),
        (LOCAL_APIC + 0x40, BUS_LINE, ""),  # reserved offsets: no register
    ],
)
def test_a_local_apic_line_s_fields_are_its_registers(line: int, line_bytes: int, registers: str) -> None:
    assert RunNamer(line_bytes, None, ()).fields(line) == registers


def test_the_other_spaces_are_named_by_their_offset_in_the_space() -> None:
    assert symbolise(0x8000000000000000 + 0x3F8, BUS_LINE, None, ()) == ("io:I/O ports", 0x3F8)
    assert symbolise(0xA000000000002000 + 0x20, BUS_LINE, None, ()) == ("io:APIC messages [cpu 2]", 0x20)
    assert symbolise(0xC000000000000000 + 0x800, BUS_LINE, None, ()) == ("io:PCI config", 0x800)
    assert RunNamer(BUS_LINE, None, ()).fields(0x8000000000000000 + 0x3F8) == ""


def test_every_cpu_s_apic_counts_as_one_object() -> None:
    assert object_of("io:local APIC [cpu 1]") == object_of("io:local APIC [cpu 0]") == "io:local APIC"


def _spaces(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "device_spaces.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[space]]\nname = 'x'\nstart = '0x10'\n", "space[0].start: "),
        ("[[space]]\nname = 'x'\nstart = 0\n", "space[0].start: 0x0 is not a 64-bit address above 0"),
        ("[[space]]\nname = 'x'\nstart = 16\nper_cpu_bytes = 0\n", "space[0].per_cpu_bytes: 0 is not a positive count"),
        ("[[space]]\nname = 'x'\nstart = 16\n[[space.register]]\noffset = 0\nname = 'r'\n", "space[0].register[0]: registers need the space's per_cpu_bytes"),
        ("[[space]]\nname = 'x'\nstart = 16\nper_cpu_bytes = 16\n[[space.register]]\noffset = 0\nname = 'r'\ncount = 2\nstride = 16\n", "space[0].register[0]: offset 0x0 (and its 2 register(s)) not inside"),
        ("[[space]]\nname = 'x'\nstart = 16\n[[space]]\nname = 'y'\nstart = 16\n", "two spaces start at one address"),
        ("space = 1\n", ".space: "),
    ],
)
def test_a_bad_spaces_file_is_refused_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = _spaces(tmp_path, text)
    with pytest.raises(HotlinesError, match=r"device_spaces\.toml") as caught:
        load_device_spaces(path)
    assert message in str(caught.value)


def test_the_shipped_file_has_the_four_spaces_of_gem5_x86() -> None:
    spaces = load_device_spaces()
    assert [(space.name, hex(space.start)) for space in spaces.spaces] == [
        ("local APIC", "0x2000000000000000"),
        ("I/O ports", "0x8000000000000000"),
        ("APIC messages", "0xa000000000000000"),
        ("PCI config", "0xc000000000000000"),
    ]
