"""result.json's fields as the analysis reads them (analysis/gem5_output/result_schema.py, analysis/data/result_json.toml)."""

from __future__ import annotations

from pathlib import Path

from analysis.gem5_output import result_schema

PATH = Path("result.json")


def with_lock_size(size: object) -> dict:
    lock = {"address": "0xffff8880021000b8", "name": "bdi:8:0 wb.list_lock", "physical": "0x21000b8", "size": size}
    return {"status": "ok", "guest": {"results": [{"locks": [lock]}]}}


def test_a_up_kernel_s_zero_byte_spinlock_is_read() -> None:
    # seen in fdlock-up: CONFIG_SMP=n makes spinlock_t empty, and the registry says so
    assert result_schema.problems(PATH, with_lock_size(0)) == []
    assert result_schema.problems(PATH, with_lock_size(4)) == []


def test_a_lock_size_that_is_no_size_is_named() -> None:
    for bad in (-1, "4", 1.5):
        found = result_schema.problems(PATH, with_lock_size(bad))
        assert len(found) == 1 and "guest.results[0].locks[0].size" in found[0] and "is not what the analysis reads (integer)" in found[0]
