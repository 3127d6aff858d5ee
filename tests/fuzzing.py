"""What the property-based fuzz tests share: their budget, a TOML writer and the strategies of our inputs.

The budget comes from tests/fuzz.toml: small and derandomized in CI (the
same inputs every run), long and random under `./run.sh test --fuzz`
(which sets LOCKSTUDY_FUZZ=1).
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from lockstudy.validation import testcases

BUDGETS_FILE = Path(__file__).with_name("fuzz.toml")
LONG_RUN_VARIABLE = "LOCKSTUDY_FUZZ"
TOML_INT_MIN, TOML_INT_MAX = -(2**63), 2**63 - 1
# The run-spec grammar's characters (lockstudy/run_spec.py), and a few outside it.
SPEC_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:=+/-"
FOREIGN_CHARACTERS = " ;$'\"*\n\t\x00é"


def long_run() -> bool:
    return os.environ.get(LONG_RUN_VARIABLE) == "1"


def budget(kind: str = "examples") -> settings:
    """Hypothesis settings for one fuzz test: `kind` is a key of tests/fuzz.toml's tables."""
    with open(BUDGETS_FILE, "rb") as handle:
        table = tomllib.load(handle)["long" if long_run() else "ci"]
    return settings(
        max_examples=int(table[kind]),
        derandomize=not long_run(),
        deadline=None,
        database=None,
        print_blob=long_run(),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    )


# --- TOML text from Python values (tomllib reads, nothing in the standard library writes)

def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("-inf" if value < 0 else "inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {value!r}")


def toml_text(data: dict[str, Any]) -> str:
    """A document: top-level tables as [name], lists of tables as [[name]], the rest inline."""
    lines = [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in data.items() if not _is_table(v) and not _is_table_list(v)]
    for key, value in data.items():
        if _is_table(value):
            lines.append(f"[{json.dumps(str(key))}]")
            lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()]
        elif _is_table_list(value):
            for table in value:
                lines.append(f"[[{json.dumps(str(key))}]]")
                lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


# --- strategies

toml_scalars = st.one_of(
    st.integers(TOML_INT_MIN, TOML_INT_MAX),
    st.integers(-3, 70),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.text(SPEC_CHARACTERS, max_size=20),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(SPEC_CHARACTERS, min_size=1, max_size=8), inner, max_size=3)),
    max_leaves=8,
)


def _interesting_numbers() -> st.SearchStrategy[str]:
    edges = {str(n) for p in testcases.registry().values() for q in p.params.values() for n in (q.low - 1, q.low, q.high, q.high + 1)}
    return st.one_of(st.sampled_from(sorted(edges)), st.integers(-10, 10**6).map(str), st.sampled_from(["-5", "00", "1e2", "0x10", "0.5", "inf", "nan", "1_0"]))


@st.composite
def run_spec_items(draw: st.DrawFn) -> str:
    """One TESTCASE[:KEY=VALUE,...] item, mostly near what a testcase accepts."""
    name = draw(st.one_of(st.sampled_from(testcases.names()), st.sampled_from(["nosuchtest", "Pft", "", "m5", "runtimed"]), st.text("abcdefgxyz_", max_size=6)))
    known = testcases.registry().get(name)
    keys = sorted(known.params) if known else ["variant", "cpus", "duration_ms", "placement", "repeat"]
    words = ["off", "inst", "addr", "boot", "hbo", "tas", "shared", "padded", "/tmp", ".", "0-1.3", "3-1"]
    values = st.one_of(_interesting_numbers(), st.sampled_from(words), st.text(SPEC_CHARACTERS, min_size=1, max_size=8))
    pairs = draw(st.lists(st.tuples(st.one_of(st.sampled_from(keys), st.text("abcdefgxyz_T", min_size=1, max_size=6)), values), max_size=4))
    args = ",".join(f"{k}={v}" for k, v in pairs)
    return name + (":" + args if args or draw(st.booleans()) else "")


run_specs = st.one_of(
    st.lists(run_spec_items(), min_size=1, max_size=3).map("+".join),
    st.text(SPEC_CHARACTERS, max_size=30),
    st.text(SPEC_CHARACTERS + FOREIGN_CHARACTERS, max_size=30),
)
