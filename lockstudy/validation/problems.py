"""A problem with a user's input, and the error that carries every problem of a file (standard library only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reason:
    """Why a value is refused, and what would be accepted."""

    wrong: str
    allowed: str = ""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a file: where, the value found, what is wrong and what is allowed."""

    file: str
    field: str
    value: str
    wrong: str
    allowed: str = ""

    def line(self) -> str:
        field = self.field if self.field.isprintable() else self.field.encode("unicode_escape").decode("ascii")
        where = f"{self.file}:{field}" if field else self.file
        allowed = f" ({self.allowed})" if self.allowed else ""
        return f"{where}: {self.value}: {self.wrong}{allowed}"


# A value longer than this is cut in a problem line, which stays one line.
SHOWN_MAX_CHARS = 80
CUT_MARK = "..."


def shown(value: Any) -> str:
    """A value as a problem line shows it: plain strings as written, the rest as Python writes them."""
    text = value if isinstance(value, str) and value and value.isprintable() else repr(value)
    return text if len(text) <= SHOWN_MAX_CHARS else text[: SHOWN_MAX_CHARS - len(CUT_MARK)] + CUT_MARK


class InputError(ValueError):
    """Input a user can fix: its message is one line per problem, never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lines = message.splitlines()

    @classmethod
    def of(cls, lines: list[str]) -> "InputError":
        """One error for every problem line of a file, each once, in the order found."""
        return cls("\n".join(dict.fromkeys(lines)))
