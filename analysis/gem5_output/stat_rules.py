"""Renames across gem5 releases and the stats gem5 omits when zero.

Both are data (analysis/data/gem5_stats.toml, with their gem5 sources);
this module compiles them once:

- `Renamer.normalise(stat)` -> (v24 name, old name or "") — memoised,
  since a campaign repeats the same few thousand names in every run;
- `ZeroRules.match(stat, sub)` -> the rule saying an absent (stat, sub)
  is a zero, with the object whose presence the rule requires, or None.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "gem5_stats.toml"

# Placeholders of the pattern language (see the data file's header).
OBJECT_PLACEHOLDER = "{obj}"
GENERIC_PLACEHOLDERS = {
    "{int}": r"[0-9]+",
    "{any}": r"(?:(?!::).)+",
}
PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")


class RulesError(ValueError):
    """The data file is malformed."""


@dataclass(frozen=True)
class Rename:
    old: re.Pattern[str]
    new: str


@dataclass(frozen=True)
class ZeroRule:
    stat_pattern: str
    sub_pattern: str
    source: str
    stat_regex: re.Pattern[str]
    sub_regex: re.Pattern[str]
    index_type: str | None = None  # sub is an index over config.json objects of this type


@dataclass(frozen=True)
class ZeroMatch:
    rule: ZeroRule
    owner: str  # the object that must exist in the dump ("" when the rule names none)


def _pattern_regex(pattern: str, sets: dict[str, list[str]], where: str, allow_object: bool) -> re.Pattern[str]:
    parts: list[str] = []
    position = 0
    objects = 0
    for match in PLACEHOLDER.finditer(pattern):
        parts.append(re.escape(pattern[position : match.start()]))
        token = match.group(0)
        name = match.group(1)
        if token == OBJECT_PLACEHOLDER:
            if not allow_object or objects:
                raise RulesError(f"{DATA_FILE}: {where}: {{obj}} is allowed once, in a stat pattern")
            parts.append(r"(?P<owner>[^:]+?)")
            objects += 1
        elif token in GENERIC_PLACEHOLDERS:
            parts.append(GENERIC_PLACEHOLDERS[token])
        elif name in sets:
            parts.append("(?:" + "|".join(re.escape(value) for value in sets[name]) + ")")
        else:
            raise RulesError(f"{DATA_FILE}: {where}: unknown placeholder {token} (not in [sets])")
        position = match.end()
    parts.append(re.escape(pattern[position:]))
    if "{" in PLACEHOLDER.sub("", pattern) or "}" in PLACEHOLDER.sub("", pattern):
        raise RulesError(f"{DATA_FILE}: {where}: a brace that is not a {{placeholder}} in {pattern!r}")
    # `|` in a sub pattern separates alternatives ("{int}|total").
    body = "".join(parts)
    if not allow_object and "\\|" in body:
        body = "|".join(f"(?:{alternative})" for alternative in body.split("\\|"))
    return re.compile(f"^(?:{body})$")


class Renamer:
    def __init__(self, renames: list[Rename]) -> None:
        self.renames = renames
        self._memo: dict[str, tuple[str, str]] = {}

    def normalise(self, stat: str) -> tuple[str, str]:
        """(gem5 v24 name, the old name when it was renamed, else "")."""
        known = self._memo.get(stat)
        if known is not None:
            return known
        result = (stat, "")
        for rename in self.renames:
            new, count = rename.old.subn(rename.new, stat)
            if count:
                result = (new, stat)
                break
        self._memo[stat] = result
        return result


class ZeroRules:
    def __init__(self, rules: list[ZeroRule]) -> None:
        self.rules = rules

    def match(self, stat: str, sub: str) -> ZeroMatch | None:
        for rule in self.rules:
            found = rule.stat_regex.match(stat)
            if found and rule.sub_regex.match(sub):
                owner = found.groupdict().get("owner") or ""
                return ZeroMatch(rule, owner)
        return None


def _table(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise RulesError(f"{DATA_FILE}: [[{key}]] must be an array of tables")
    return value


def _load(path: Path) -> tuple[Renamer, ZeroRules]:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    sets = data.get("sets", {})
    renames: list[Rename] = []
    for number, entry in enumerate(_table(data, "rename"), 1):
        try:
            renames.append(Rename(re.compile(entry["old"]), entry["new"]))
        except (KeyError, re.error) as exc:
            raise RulesError(f"{path}: rename #{number}: {exc}") from exc
    rules: list[ZeroRule] = []
    for number, entry in enumerate(_table(data, "omitted_when_zero"), 1):
        where = f"omitted_when_zero #{number}"
        missing = {"stat", "sub", "source"} - set(entry)
        if missing:
            raise RulesError(f"{path}: {where}: missing {sorted(missing)}")
        rules.append(
            ZeroRule(
                stat_pattern=entry["stat"],
                sub_pattern=entry["sub"],
                source=entry["source"],
                stat_regex=_pattern_regex(entry["stat"], sets, where, allow_object=True),
                sub_regex=_pattern_regex(entry["sub"], sets, where, allow_object=False),
                index_type=entry.get("index_type"),
            )
        )
    return Renamer(renames), ZeroRules(rules)


@lru_cache(maxsize=None)
def load_rules(path: Path = DATA_FILE) -> tuple[Renamer, ZeroRules]:
    """The rules of one data file, compiled once per process."""
    return _load(path)
