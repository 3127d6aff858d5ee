"""A type's members, nested, and the fields a byte range of an object holds.

A member's offset is from the start of its parent (the struct, union or
array element it is in), so a type's layout is the same wherever it is
embedded. Anonymous structs and unions (no name) are transparent, as in C:
their members are named as members of the parent.

The fields on a range are named as coarsely as is exact: a member whose
bytes all lie in the range is named whole (`i_rwsem`, not its five
members); one the range cuts is opened when it is a struct, a union or an
array, and otherwise marked "(part)". Whole array elements are given as
an index range (`fd_array[8..15]`), a cut one by its index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

STRUCT, UNION, ARRAY, SCALAR = "struct", "union", "array", "scalar"
KINDS = (STRUCT, UNION, ARRAY, SCALAR)
PART = " (part)"
PAST_THE_STRUCT = "(past the struct)"
NEXT_OBJECT = "next object: "
GROUP_SEPARATOR = "; "


@dataclass(frozen=True)
class Member:
    """One member: name (None when anonymous), offset in its parent, size, kind, and what it contains.

    A struct or union lists its `members`; an array has its `element`'s
    layout and `count` elements (a flexible array has neither: size 0); a
    scalar has neither."""

    name: str | None
    offset: int
    size: int
    kind: str
    members: tuple["Member", ...] = ()
    element: "Member | None" = None
    count: int = 0

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"name": self.name, "offset": self.offset, "size": self.size, "kind": self.kind}
        if self.members:
            record["members"] = [member.as_dict() for member in self.members]
        if self.element is not None:
            record["element"] = self.element.as_dict()
            record["count"] = self.count
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "Member":
        """The inverse of as_dict; ValueError naming what is wrong."""
        if not isinstance(record, dict):
            raise ValueError(f"a member is an object, not {record!r}")
        name, offset, size, kind = record.get("name"), record.get("offset"), record.get("size"), record.get("kind")
        if name is not None and not isinstance(name, str):
            raise ValueError(f"member name {name!r} is not a string or null")
        if not isinstance(offset, int) or not isinstance(size, int) or offset < 0 or size < 0:
            raise ValueError(f"member {name!r}: offset {offset!r} and size {size!r} must be integers >= 0")
        if kind not in KINDS:
            raise ValueError(f"member {name!r}: kind {kind!r} is not one of {KINDS}")
        element = record.get("element")
        return cls(
            name,
            offset,
            size,
            kind,
            tuple(cls.from_dict(member) for member in record.get("members", [])),
            cls.from_dict(element) if element is not None else None,
            int(record.get("count", 0)),
        )


@dataclass
class _Found:
    """Fields found so far: (path, whole?) in address order."""

    entries: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)

    def add(self, path: tuple[str, ...], whole: bool) -> None:
        if path:
            self.entries.append((path, whole))


def _with_index(path: tuple[str, ...], index: str) -> tuple[str, ...]:
    return (*path[:-1], f"{path[-1]}[{index}]") if path else (f"[{index}]",)


def _walk(members: tuple[Member, ...], base: int, start: int, end: int, prefix: tuple[str, ...], found: _Found) -> None:
    for member in members:
        first, last = base + member.offset, base + member.offset + member.size
        if member.size == 0 or last <= start or end <= first:
            continue
        path = (*prefix, member.name) if member.name is not None else prefix
        if member.name is None and member.members:
            _walk(member.members, first, start, end, prefix, found)
        elif start <= first and last <= end:
            found.add(path, True)
        elif member.members:
            _walk(member.members, first, start, end, path, found)
        elif member.element is not None and member.element.size > 0:
            _walk_array(member, first, start, end, path, found)
        else:
            found.add(path, False)


def _walk_array(array: Member, first: int, start: int, end: int, path: tuple[str, ...], found: _Found) -> None:
    """The elements of an array that the range touches: whole ones as an index range, a cut one opened (or marked part)."""
    element = array.element
    assert element is not None
    low = max(start - first, 0) // element.size
    high = min((min(end, first + array.size) - first - 1) // element.size, array.count - 1)
    whole: list[int] = []

    def flush() -> None:
        if whole:
            found.add(_with_index(path, str(whole[0]) if len(whole) == 1 else f"{whole[0]}..{whole[-1]}"), True)
            whole.clear()

    for index in range(low, high + 1):
        at = first + index * element.size
        if start <= at and at + element.size <= end:
            whole.append(index)
            continue
        flush()
        if element.members:
            _walk(element.members, at, start, end, _with_index(path, str(index)), found)
        else:
            found.add(_with_index(path, str(index)), False)
    flush()


def render(entries: list[tuple[tuple[str, ...], bool]]) -> str:
    """`a.b.{c, d (part)}; e, f`: consecutive fields with one parent share it (the type's own members need none)."""
    groups = []
    for parent, members in groupby(entries, key=lambda entry: entry[0][:-1]):
        names = [path[-1] + ("" if whole else PART) for path, whole in members]
        if not parent:
            groups.append(", ".join(names))
        else:
            groups.append(".".join(parent) + "." + (names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"))
    return GROUP_SEPARATOR.join(groups)


def fields_between(layout: Member, start: int, end: int) -> str:
    """The fields of an object of this type in bytes [start, end) (start >= 0); bytes past the type's size are "(past the struct)"."""
    found = _Found()
    _walk(layout.members, 0, start, end, (), found)
    text = render(found.entries)
    if end > layout.size:
        text = GROUP_SEPARATOR.join(part for part in (text, PAST_THE_STRUCT) if part)
    return text


def fields_on_line(layout: Member, offset: int, line_bytes: int, stride: int) -> str:
    """The fields of a line whose first byte is `offset` into an object, objects every `stride` bytes (a line
    reaching into the next object names that one's first fields too)."""
    text = fields_between(layout, offset, min(offset + line_bytes, stride))
    if offset + line_bytes > stride:
        following = fields_between(layout, 0, offset + line_bytes - stride)
        text = GROUP_SEPARATOR.join(part for part in (text, NEXT_OBJECT + following) if part)
    return text


def fields_in_variable(layout: Member, start: int, end: int) -> str:
    """The fields of bytes [start, end) of a kernel variable of this type (start may be negative: the line begins
    before it). An array's elements are named by index (`[2].mcs.{next, locked}`). Bytes past the variable name
    nothing: they are another symbol's, and the line's name lists it."""
    found = _Found()
    start, end = max(start, 0), min(end, layout.size)
    if start < end:
        if layout.kind == ARRAY and layout.element is not None and layout.element.size > 0:
            _walk_array(layout, 0, start, end, (), found)
        else:
            _walk(layout.members, 0, start, end, (), found)
    return render(found.entries)
