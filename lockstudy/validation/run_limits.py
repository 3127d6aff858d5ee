"""gem5-configs/run.toml: what run.py allows a run, outside any machine.

Standard library only: gem5's Python reads it through run_plan.py, and the
campaign store reads it to tell whether a run stopped as stuck after its
ROI would be stuck again.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

RUN_LIMITS_FILE = Path(__file__).resolve().parents[2] / "gem5-configs" / "run.toml"
# run.py's option that overrides after_roi.limit_ms for one run (a study's [study.resources] after_roi_ms).
AFTER_ROI_OPTION = "--after-roi-limit-ms"
# The result.json field (run.py's, copied into the run's own by the gem5 backend) that gives
# the limit a run stopped as stuck after its ROI was stopped under.
STUCK_LIMIT_FIELD = "after_roi_limit_ms"


class RunLimitsError(ValueError):
    """gem5-configs/run.toml is not what its comments say."""


@functools.lru_cache(maxsize=None)
def run_limit(section: str, key: str, unit: str, path: Path = RUN_LIMITS_FILE) -> float:
    """A positive limit of run.toml, `[section] key`, in `unit` (named in the error)."""
    try:
        value = tomllib.loads(path.read_text()).get(section, {}).get(key)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RunLimitsError(f"{path}: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise RunLimitsError(f"{path}: {section}.{key}: expected a positive number of {unit}, found {value!r}")
    return float(value)


def after_roi_limit_ms(path: Path = RUN_LIMITS_FILE) -> float:
    """How long a restored run may simulate after an ROI with no new ROI and no exit (run.toml)."""
    return run_limit("after_roi", "limit_ms", "milliseconds", path)
