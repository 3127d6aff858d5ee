"""The probe's DWARF -> each probe variable's type as nested Members.

Typedefs and qualifiers (const, volatile, _Atomic) are looked through. A
bitfield is placed at the byte its first bit is in, sized to the bytes it
touches. A flexible array member (no count) has size 0 and names no byte.
"""

from __future__ import annotations

from pathlib import Path

from elftools.dwarf.die import DIE
from elftools.elf.elffile import ELFFile

from lockstudy.kernel.layout.members import ARRAY, SCALAR, STRUCT, UNION, Member
from lockstudy.kernel.layout.requests import LayoutError

SEE_THROUGH = {"DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type", "DW_TAG_atomic_type", "DW_TAG_restrict_type"}
AGGREGATES = {"DW_TAG_structure_type": STRUCT, "DW_TAG_union_type": UNION}
BITS_PER_BYTE = 8


def _name(die: DIE) -> str | None:
    attribute = die.attributes.get("DW_AT_name")
    return attribute.value.decode() if attribute is not None else None


def _resolved(die: DIE) -> DIE:
    while die.tag in SEE_THROUGH and "DW_AT_type" in die.attributes:
        die = die.get_DIE_from_attribute("DW_AT_type")
    return die


def _byte_size(die: DIE) -> int:
    """A type's size in bytes (an array's: its element's times its count)."""
    die = _resolved(die)
    if die.tag == "DW_TAG_array_type":
        return _byte_size(die.get_DIE_from_attribute("DW_AT_type")) * _count(die)
    attribute = die.attributes.get("DW_AT_byte_size")
    return int(attribute.value) if attribute is not None else 0


def _count(array: DIE) -> int:
    """An array's element count over all its dimensions (0 for a flexible array)."""
    total = 1
    dimensions = [child for child in array.iter_children() if child.tag == "DW_TAG_subrange_type"]
    for dimension in dimensions:
        if "DW_AT_count" in dimension.attributes:
            total *= int(dimension.attributes["DW_AT_count"].value)
        elif "DW_AT_upper_bound" in dimension.attributes:
            total *= int(dimension.attributes["DW_AT_upper_bound"].value) + 1
        else:
            return 0
    return total if dimensions else 0


class LayoutReader:
    """Converts DWARF types to Members, each type once (task_struct embeds the same lists and locks many times)."""

    def __init__(self) -> None:
        self._done: dict[int, Member] = {}

    def type_layout(self, die: DIE, name: str | None = None, offset: int = 0) -> Member:
        """The layout of a type as a member called `name` at `offset` in its parent."""
        die = _resolved(die)
        layout = self._done.get(die.offset)
        if layout is None:
            layout = self._done[die.offset] = self._convert(die)
        return Member(name, offset, layout.size, layout.kind, layout.members, layout.element, layout.count)

    def _convert(self, die: DIE) -> Member:
        if die.tag in AGGREGATES:
            if "DW_AT_declaration" in die.attributes:
                raise LayoutError(f"{_name(die) or 'an anonymous type'}: only declared in the probe, its layout is not known there")
            members = tuple(self._member(child) for child in die.iter_children() if child.tag == "DW_TAG_member")
            return Member(None, 0, _byte_size(die), AGGREGATES[die.tag], members)
        if die.tag == "DW_TAG_array_type":
            element_die = _resolved(die.get_DIE_from_attribute("DW_AT_type"))
            count = _count(die)
            size = _byte_size(element_die) * count
            if count > 0 and size > 0:
                return Member(None, 0, size, ARRAY, element=self.type_layout(element_die), count=count)
            return Member(None, 0, size, ARRAY)
        return Member(None, 0, _byte_size(die), SCALAR)

    def _member(self, die: DIE) -> Member:
        name = _name(die)
        if "DW_AT_data_bit_offset" in die.attributes:
            bit = int(die.attributes["DW_AT_data_bit_offset"].value)
            width = int(die.attributes["DW_AT_bit_size"].value)
            first = bit // BITS_PER_BYTE
            return Member(name, first, (bit + width + BITS_PER_BYTE - 1) // BITS_PER_BYTE - first, SCALAR)
        location = die.attributes.get("DW_AT_data_member_location")
        if location is not None and not isinstance(location.value, int):
            raise LayoutError(f"member {name}: a location expression, not a constant offset (not a C struct?)")
        return self.type_layout(die.get_DIE_from_attribute("DW_AT_type"), name, int(location.value) if location is not None else 0)


def read_variables(object_file: Path, names: list[str]) -> dict[str, Member]:
    """The layout of each named global variable's type in the object's DWARF; LayoutError if one is missing."""
    wanted = set(names)
    reader = LayoutReader()
    found: dict[str, Member] = {}
    with open(object_file, "rb") as handle:
        elf = ELFFile(handle)
        if not elf.has_dwarf_info():
            raise LayoutError(f"{object_file.name}: no debug information (was it compiled with -g?)")
        for unit in elf.get_dwarf_info().iter_CUs():
            for die in unit.get_top_DIE().iter_children():
                if die.tag == "DW_TAG_variable" and _name(die) in wanted and "DW_AT_type" in die.attributes:
                    found[str(_name(die))] = reader.type_layout(die.get_DIE_from_attribute("DW_AT_type"))
    missing = sorted(wanted - set(found))
    if missing:
        raise LayoutError(f"{object_file.name}: no debug information for {', '.join(missing)}")
    return found
