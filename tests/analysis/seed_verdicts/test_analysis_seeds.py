"""The seeds' published numbers (analysis/data/seeds.toml) and their loader.

The transcription tests read the seed texts themselves: every row's numbers
must end its stated line of the seed, in order, and every claim's quote must
be on its stated line. The seed texts are looked for in LOCKSTUDY_SEEDS_DIR,
else in the repository's seeds/ folder; without them those tests skip and
say so.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from analysis.seed_verdicts import seeds
from analysis.seed_verdicts.seeds import SeedsError, claim_direction, load_seed_file, load_seeds, published_frame
from lockstudy.paths import ROOT

SEEDS_DIR_VARIABLE = "LOCKSTUDY_SEEDS_DIR"
# The study each seed is for (issue: "the study name our campaign will use").
EXPECTED_STUDIES = {
    "000": "padding",
    "001": "fdlock",
    "002": "numa-spinlock",
    "003": "rwsem-wakeflag",
    "004": "lockref",
}
# A printed number: optional sign, digits, optional fraction ("+214.6%", "6.055s100028.084").
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
# A boot switch as kernel/patches/README-switches.md titles it: `lockstudy.fdlock=none|rwlock|spinlock`.
SWITCH_TITLE = re.compile(r"`lockstudy\.([a-z_]+)=([A-Za-z0-9_|]+)`")
SPINLOCK_SWITCH = "lockstudy.spinlock="


# ---------------------------------------------------------------------------
# The real file


@pytest.fixture(scope="module")
def seed_file() -> seeds.SeedFile:
    return load_seed_file()


@pytest.fixture(scope="module")
def seed_texts() -> Path:
    named = os.environ.get(SEEDS_DIR_VARIABLE)
    if named:
        if not any(Path(named).glob("000_*.txt")):
            pytest.fail(f"{SEEDS_DIR_VARIABLE}={named} holds no seed texts (000_*.txt)")
        return Path(named)
    in_repository = ROOT / "seeds"
    if any(in_repository.glob("000_*.txt")):
        return in_repository
    pytest.skip(f"needs the seed texts: set {SEEDS_DIR_VARIABLE} or put them in {in_repository}")


def seed_lines(directory: Path, seed: seeds.Seed) -> list[str]:
    path = directory / seed.source
    assert path.is_file(), f"seed {seed.id}: {seed.source} is not in {directory}"
    return path.read_text(encoding="utf-8", errors="replace").split("\n")


def test_real_file_loads(seed_file: seeds.SeedFile) -> None:
    assert [seed.id for seed in seed_file.seeds] == sorted(EXPECTED_STUDIES)
    assert {seed.id: seed.study for seed in seed_file.seeds} == EXPECTED_STUDIES
    assert load_seeds() == list(seed_file.seeds)
    assert 0 < seed_file.agreement.relative_tolerance < 1


def test_every_seed_has_tables_claims_and_one_headline(seed_file: seeds.SeedFile) -> None:
    for seed in seed_file.seeds:
        assert seed.tables, seed.id
        assert seed.claims, seed.id
        assert all(table.rows for table in seed.tables), seed.id
        assert seed.headline().id.startswith(seed.id), seed.id
        for claim in seed.claims:
            ours = (seed.our_configuration(claim.a), seed.our_configuration(claim.b))
            assert ours[0] != ours[1], f"{claim.id}: a and b differ only in keys our runs do not have"


def test_sources_are_seed_file_names(seed_file: seeds.SeedFile) -> None:
    for seed in seed_file.seeds:
        assert re.fullmatch(rf"{seed.id}_[0-9a-f]{{16}}\.txt", seed.source), seed.source


def row_tokens(text: list[str], row: seeds.Row) -> list[str]:
    """The printed numbers of a row's line that its values stand for: the last ones."""
    printed = NUMBER.findall(text[row.line - 1])
    return printed[max(0, len(printed) - len(row.values)):]


def half_unit(token: str) -> Decimal:
    """Half a unit in the last printed digit: how far the printed number may be from the true one."""
    decimals = len(token.split(".")[1]) if "." in token else 0
    return Decimal(5) / Decimal(10) ** (decimals + 1)


def test_rows_match_the_seed_text(seed_file: seeds.SeedFile, seed_texts: Path) -> None:
    """Every transcribed number, against the seed's own line: the line's printed
    numbers end with the row's values, in order (a slipped digit, a swapped
    column or a wrong line number fails)."""
    checked = 0
    for seed in seed_file.seeds:
        text = seed_lines(seed_texts, seed)
        for table in seed.tables:
            assert table.lines[1] <= len(text), f"{seed.id} {table.name}: lines {table.lines} beyond the file"
            for row in table.rows:
                tokens = row_tokens(text, row)
                where = f"{seed.source}:{row.line} ({table.name})"
                assert len(tokens) == len(row.values), f"{where}: {len(tokens)} numbers, expected {len(row.values)}"
                for value, token in zip(row.values, tokens):
                    assert Decimal(token) == Decimal(str(value)), f"{where}: transcribed {value}, printed {token}"
                    checked += 1
    assert checked == sum(len(row.values) for seed in seed_file.seeds for table in seed.tables for row in table.rows)


def test_spot_check_numbers_on_their_lines(seed_file: seeds.SeedFile, seed_texts: Path) -> None:
    """A few headline numbers, found by hand in the seed text."""
    by_id = {seed.id: seed for seed in seed_file.seeds}
    spots = [
        ("000", "dbench-improvement", ("smp", 8), "peak_change_pct", "16.5%"),
        ("001", "dd-p4-spinlock", (), "total_s", "2.329 total"),
        ("002", "pft-hbo", (1, 3, 32, 1), "fault_per_wsec", "89925.762"),
        ("003", "high-systime-jpm", ("off",), "jpm_with", "170896"),
        ("004", "short-jpm", ("10-100", 8), "jpm_with", "5191497"),
    ]
    for seed_id, table_name, key, column, printed in spots:
        seed = by_id[seed_id]
        table = seed.table(table_name)
        row = next(row for row in table.rows if row.key == key)
        value = row.values[[c.name for c in table.columns].index(column)]
        line = seed_lines(seed_texts, seed)[row.line - 1]
        assert printed in line, f"{seed.source}:{row.line}: {printed!r} not in {line!r}"
        assert Decimal(NUMBER.search(printed).group()) == Decimal(str(value))


def test_claim_quotes_are_on_their_lines(seed_file: seeds.SeedFile, seed_texts: Path) -> None:
    for seed in seed_file.seeds:
        text = seed_lines(seed_texts, seed)
        for claim in seed.claims:
            line = " ".join(text[claim.quote_line - 1].split())
            assert " ".join(claim.quote.split()) in line, f"{seed.source}:{claim.quote_line}: {claim.id}: {claim.quote!r} not in {line!r}"


def test_published_directions_agree_with_their_tables(seed_file: seeds.SeedFile) -> None:
    for seed in seed_file.seeds:
        for claim in seed.claims:
            assert seeds.published_direction(seed, claim) == claim.direction, f"{seed.id} {claim.id}"


def test_printed_changes_agree_with_their_values(seed_file: seeds.SeedFile, seed_texts: Path) -> None:
    """A "% change" column and the two values beside it must agree to the
    printed precision: some value within half a unit of each printed
    number gives the printed change (the seeds computed their changes from
    means they printed rounded, e.g. 545.6% on line 54 of seed 004 where
    the rounded JPMs give 545.5498%)."""
    checked = 0
    for seed in seed_file.seeds:
        text = seed_lines(seed_texts, seed)
        for table in seed.tables:
            names = [column.name for column in table.columns]
            for row in table.rows:
                tokens = dict(zip(names, row_tokens(text, row)))
                cells = [cell for cell in table.cells() if cell.line == row.line]
                values = [cell for cell in cells if cell.change is None]
                for cell in cells:
                    if cell.change is None:
                        continue
                    a = next((v for v in values if v.metric == cell.metric and v.config == cell.change[0]), None)
                    b = next((v for v in values if v.metric == cell.metric and v.config == cell.change[1]), None)
                    if a is None or b is None:
                        continue
                    a_value, b_value = Decimal(tokens[a.column]), Decimal(tokens[b.column])
                    a_slack, b_slack = half_unit(tokens[a.column]), half_unit(tokens[b.column])
                    lowest = ((a_value - a_slack) / (b_value + b_slack) - 1) * 100
                    highest = ((a_value + a_slack) / (b_value - b_slack) - 1) * 100
                    printed = Decimal(tokens[cell.column])
                    slack = half_unit(tokens[cell.column])
                    assert lowest - slack <= printed <= highest + slack, (
                        f"{seed.source}:{row.line}: printed {printed}%, the values give {lowest:.4f}..{highest:.4f}%"
                    )
                    checked += 1
    assert checked == 26  # 003: 2 rows; 004: 2 tables of 12


def test_workloads_are_programs_of_the_image(seed_file: seeds.SeedFile) -> None:
    init = (ROOT / "disk-image" / "overlay" / "init").read_text()
    for seed in seed_file.seeds:
        for workload in seed.workloads:
            is_testcase = (ROOT / "workloads" / f"tc_{workload.name}.c").is_file()
            is_builtin = re.search(rf"^\s*{re.escape(workload.name)}\)", init, re.MULTILINE) is not None
            assert is_testcase or is_builtin, f"seed {seed.id}: workload {workload.name} is not run by the image"


def test_variants_are_ours(seed_file: seeds.SeedFile) -> None:
    """Each variant's kernel build and boot argument exist in our kernel."""
    with open(ROOT / "kernel" / "builds.toml", "rb") as handle:
        builds = {build["name"] for build in tomllib.load(handle)["build"]}
    with open(ROOT / "kernel" / "variants.toml", "rb") as handle:
        spinlocks = {entry["name"] for entry in tomllib.load(handle)["spinlock"]}
    switches = {
        name: set(values.split("|"))
        for name, values in SWITCH_TITLE.findall((ROOT / "kernel" / "patches" / "README-switches.md").read_text())
    }
    for seed in seed_file.seeds:
        for variant in seed.variants.values():
            where = f"seed {seed.id} variant {variant.name}"
            if variant.kernel_build is not None:
                assert variant.kernel_build in builds, where
            if variant.boot is None:
                continue
            if variant.boot.startswith(SPINLOCK_SWITCH):
                assert variant.boot.removeprefix(SPINLOCK_SWITCH) in spinlocks, where
            else:
                switch, _, value = variant.boot.removeprefix("lockstudy.").partition("=")
                assert value in switches.get(switch, set()), f"{where}: {variant.boot} is not a documented switch value"


def test_published_frame(seed_file: seeds.SeedFile) -> None:
    seed = next(seed for seed in seed_file.seeds if seed.id == "004")
    frame = published_frame(seed, "short-jpm")
    assert list(frame.columns) == ["user_range", "nodes", "jpm_without", "jpm_with", "change_pct", "seed_line"]
    assert len(frame) == 12
    first = frame.iloc[0]
    assert (first["user_range"], first["nodes"], first["jpm_with"], first["seed_line"]) == ("10-100", 8, 5191497, 40)
    assert frame.attrs["lines"] == (34, 58)
    assert frame.attrs["units"]["change_pct"] == "%"
    assert published_frame(seed).attrs["table"] == seed.tables[0].name
    with pytest.raises(KeyError, match="no table 'nope'"):
        published_frame(seed, "nope")


# ---------------------------------------------------------------------------
# claim_direction


@pytest.mark.parametrize(
    ("a", "b", "better", "tolerance", "expected"),
    [
        (110.0, 100.0, "higher", 0.02, "a_better"),
        (90.0, 100.0, "higher", 0.02, "b_better"),
        (90.0, 100.0, "lower", 0.02, "a_better"),
        (110.0, 100.0, "lower", 0.02, "b_better"),
        (101.9, 100.0, "higher", 0.02, "same"),
        (98.1, 100.0, "lower", 0.02, "same"),
        (0.999, 1.0, "higher", 0.001, "same"),  # exactly at the band's edge
        (1.0011, 1.0, "higher", 0.001, "a_better"),
        (5.0, 5.0, "higher", 0.0, "same"),
        (0.0, 0.0, "lower", 0.02, "same"),
    ],
)
def test_claim_direction(a: float, b: float, better: str, tolerance: float, expected: str) -> None:
    assert claim_direction(a, b, better, tolerance) == expected


@pytest.mark.parametrize(
    ("a", "b", "better", "tolerance", "message"),
    [
        (1.0, 1.0, "faster", 0.02, "better must be one of"),
        (1.0, 1.0, "none", 0.02, "better must be one of"),
        (1.0, 1.0, "higher", -0.1, "tolerance"),
        (math.nan, 1.0, "higher", 0.02, "a must be a finite number"),
        (1.0, math.inf, "higher", 0.02, "b must be a finite number"),
        (1.0, 0.0, "higher", 0.02, "b is 0"),
    ],
)
def test_claim_direction_rejects(a: float, b: float, better: str, tolerance: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        claim_direction(a, b, better, tolerance)


def test_our_tolerance_keeps_every_headline_decidable(seed_file: seeds.SeedFile) -> None:
    """Our band for "same" must not swallow any seed's headline effect."""
    for seed in seed_file.seeds:
        headline = seed.headline()
        assert headline.direction != "same", seed.id
        assert abs(headline.ratio - 1) > seed_file.agreement.relative_tolerance, f"{seed.id} {headline.id}"


# ---------------------------------------------------------------------------
# Rejected files

MINIMAL = """\
[agreement]
relative_tolerance = 0.02
ratio_decimals = 4

[[seed]]
id = "007"
title = "a test seed"
source = "007_0123456789abcdef.txt"
study = "test-study"
workloads = [{ name = "samefile", result = "ops_per_s", better = "higher" }]
match_keys = ["variant", "nodes"]
published_noise = 0.02

[seed.variants]
old = { seed_label = "w/o patch", boot = "lockstudy.lockref=spinlock" }
new = { seed_label = "with patch", boot = "lockstudy.lockref=cmpxchg" }

[[seed.table]]
name = "jpm"
caption = "jobs per minute"
lines = [10, 12]
config = {}
keys = ["nodes"]
columns = [
  { name = "without", metric = "jpm", unit = "jobs/min", better = "higher", config = { variant = "old" } },
  { name = "with", metric = "jpm", unit = "jobs/min", better = "higher", config = { variant = "new" } },
]
rows = [
  { line = 11, key = [1], values = [100, 101] },
  { line = 12, key = [8], values = [100, 300] },
]

[[seed.claim]]
id = "new-8nodes"
headline = true
metric = "jpm"
a = { nodes = 8, variant = "new" }
b = { nodes = 8, variant = "old" }
direction = "a_better"
ratio = 3.0
lines = [12]
quote = "much better"
quote_line = 3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "seeds-under-test.toml"
    path.write_text(text)
    return path


def mutated(old: str, new: str) -> str:
    assert old in MINIMAL, f"the mutation's target {old!r} is not in the minimal file"
    return MINIMAL.replace(old, new, 1)


def test_minimal_file_loads(tmp_path: Path) -> None:
    (seed,) = load_seeds(write(tmp_path, MINIMAL))
    (claim,) = seed.claims
    assert seeds.published_direction(seed, claim) == "a_better"
    assert seeds.published_comparison(seed, claim).lines == (12,)


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        # a row with one value too few
        ("values = [100, 300]", "values = [100]", "seed[0].table[0].rows[1].values", "1 value(s) but the table has 2 column(s)"),
        # a row key of the wrong length
        ("key = [8]", "key = [8, 2]", "seed[0].table[0].rows[1].key", "2 value(s) but the table has 1 key(s)"),
        # a direction that is not one of the three words
        ('direction = "a_better"', 'direction = "better"', "seed[0].claim[0].direction", "'better' is not one of a_better, b_better, same"),
        # a claim naming a configuration no table has
        ("b = { nodes = 8, variant = \"old\" }", "b = { nodes = 4, variant = \"old\" }", "seed[0].claim[0].b", "no table of seed 007 has jpm at configuration"),
        # a claim naming a metric no table has
        ('metric = "jpm"\na =', 'metric = "jobs"\na =', "seed[0].claim[0].metric", "no table of seed 007 has the metric 'jobs'"),
        # a ratio the table does not give
        ("ratio = 3.0", "ratio = 2.9", "seed[0].claim[0].ratio", "but the table gives 300.0 / 100.0"),
        # claim lines that are not the numbers' lines
        ("lines = [12]", "lines = [11]", "seed[0].claim[0].lines", "on line(s) [12]"),
        # a row outside the table's lines
        ("{ line = 11,", "{ line = 13,", "seed[0].table[0].rows[0].line", "outside the table's lines 10-12"),
        # a variant nobody declared
        ('config = { variant = "new" }', 'config = { variant = "newer" }', "seed[0].table[0]", "variant 'newer'"),
        # a misspelt field
        ('caption = "jobs per minute"', 'captoin = "jobs per minute"', "seed[0].table[0]", "unknown field(s) captoin"),
        # a value that is not a number
        ("values = [100, 101]", 'values = [100, "101"]', "seed[0].table[0].rows[0].values[1]", "must be a finite number"),
        # a better that is not a word we know
        ('unit = "jobs/min", better = "higher", config = { variant = "old" }', 'unit = "jobs/min", better = "more", config = { variant = "old" }',
         "seed[0].table[0].columns[0].better", "'more' is not one of higher, lower, none"),
        # no headline
        ("headline = true\n", "", "seed[0].claim", "exactly one claim must be the headline"),
        # a claim without the seed's match keys
        ("a = { nodes = 8, variant = \"new\" }", "a = { variant = \"new\" }", "seed[0].claim[0].a", "lacks the match key(s) ['nodes']"),
        # a source that is a path
        ('source = "007_0123456789abcdef.txt"', 'source = "seeds/007_0123456789abcdef.txt"', "seed[0].source", "must be the seed text's file name"),
        # a rate that is not a column our claims can be judged on
        ('result = "ops_per_s", better = "higher" }', 'result = "ops_per_s", better = "higher", rate = "ops_per_s" }',
         "seed[0].workloads[0].rate", "'ops_per_s' does not match"),
        # a band out of range
        ("relative_tolerance = 0.02", "relative_tolerance = 2", "agreement.relative_tolerance", "not a relative band"),
    ],
)
def test_bad_files_are_rejected(tmp_path: Path, old: str, new: str, field: str, reason: str) -> None:
    path = write(tmp_path, mutated(old, new))
    with pytest.raises(SeedsError) as caught:
        load_seeds(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {field}: "), message
    assert reason in message, message


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "\n[[seed\n")
    with pytest.raises(SeedsError, match=rf"^{re.escape(str(path))}: not valid TOML"):
        load_seeds(path)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(SeedsError, match=rf"^{re.escape(str(path))}: cannot read"):
        load_seeds(path)


@pytest.mark.parametrize(("value", "message"), [
    ("{ sockets = 1 }", r"compare_on.sockets: 'sockets' is not one of cpus, nodes, threads"),
    ("{ cpus = 0 }", r"compare_on.cpus: must be a count >= 1"),
    ("3", r"compare_on: must be a table of sizes"),
])  # fmt: skip
def test_compare_on_must_name_sizes_of_ours(tmp_path, value: str, message: str) -> None:
    from analysis.seed_verdicts.seeds import DEFAULT, SeedsError, load_seed_file

    text = DEFAULT.read_text().replace("compare_on = { cpus = 1 }", f"compare_on = {value}")
    path = tmp_path / "seeds.toml"
    path.write_text(text)
    with pytest.raises(SeedsError, match=message):
        load_seed_file(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('packed = { kernel_build = "smp-bench-pair", run = "variant=tas placement=pair-packed" }',
     'packed = { kernel_build = "smp-bench-pair", run = "variant=tas placement pair-packed" }',
     r"precondition.variants.packed.run: must be testcase parameters key=value, space-separated, "
     r"not 'variant=tas placement pair-packed'"),
    ('packed = { kernel_build = "smp-bench-pair", run = "variant=tas placement=pair-packed" }',
     'packed = { kernel_build = "smp-bench-pair", run = "variant=tas,placement=pair-packed" }',
     r"precondition.variants.packed.run: must be testcase parameters key=value, space-separated, "
     r"not 'variant=tas,placement=pair-packed'"),
    ('workloads = ["kbench"]', 'workloads = ["pft"]', r"precondition.workloads: \['pft'\] not among the seed's workloads"),
])  # fmt: skip
def test_a_preconditions_run_parameter_and_workloads_are_checked(tmp_path, old: str, new: str, message: str) -> None:
    from analysis.seed_verdicts.seeds import DEFAULT, SeedsError, load_seed_file

    text = DEFAULT.read_text()
    assert old in text
    path = tmp_path / "seeds.toml"
    path.write_text(text.replace(old, new))
    with pytest.raises(SeedsError, match=message):
        load_seed_file(path)


def test_a_workload_of_the_precondition_alone_is_judged_only_there() -> None:
    """Seed 003: mmapsem as shipped and under the precondition, the rwsem bench (a load of ours) only
    under the precondition; seed 000's precondition workloads keep their meaning."""
    from analysis.seed_verdicts.seeds import load_seeds

    seeds = {seed.id: seed for seed in load_seeds()}
    names = {(seed_id, condition): [w.name for w in seeds[seed_id].under(condition).workloads]
             for seed_id in ("000", "003") for condition in ("as-shipped", "precondition")}  # fmt: skip
    assert names[("003", "as-shipped")] == ["mmapsem"] and names[("003", "precondition")] == ["mmapsem", "kbench"]
    assert names[("000", "as-shipped")] == ["fsmix", "dbench"] and names[("000", "precondition")] == ["kbench"]


@pytest.mark.parametrize(("new", "message"), [
    ('conditions = ["shipped"]', r"seed\[3\].workloads\[1\].conditions: 'shipped' is not one of as-shipped, precondition"),
    ('conditions = ["precondition", "precondition"]', r"seed\[3\].workloads\[1\].conditions: repeats a condition"),
])  # fmt: skip
def test_a_workloads_conditions_are_checked(tmp_path: Path, new: str, message: str) -> None:
    from analysis.seed_verdicts.seeds import DEFAULT, SeedsError, load_seed_file

    old = 'better = "higher", conditions = ["precondition"] }'
    text = DEFAULT.read_text()
    assert text.count(old) == 1
    path = tmp_path / "seeds.toml"
    path.write_text(text.replace(old, f'better = "higher", {new} }}'))
    with pytest.raises(SeedsError, match=message):
        load_seed_file(path)


def test_a_workload_only_for_a_precondition_needs_one(tmp_path: Path) -> None:
    path = write(tmp_path, mutated('result = "ops_per_s", better = "higher" }', 'result = "ops_per_s", better = "higher", conditions = ["precondition"] }'))
    with pytest.raises(SeedsError, match=r"seed\[0\].workloads: \['[a-z0-9]+'\] run only under the precondition, and the seed declares no"):
        load_seeds(path)
