"""Leave-one-out check of the model against measured host time: `run.sh costs check`.

The host time compared is the row's time on a core of its own
(CostRow.own_core_seconds), which is what the model predicts.

For every row with a measured host time (a boot, or a restored run whose
ROI simulated time is known) the model is fitted on all the other rows and
predicts that row; the error is |predicted - measured| / measured. A
restored run is predicted from the simulated time it actually had, so the
check judges the host-time model, not the guess of a ROI's length. The
median of those errors over the measured rows is what issue 19 sets a goal
for (costmodel.toml [check]).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from lockstudy.costmodel.model import CostModel, Estimate, Prediction
from lockstudy.costmodel.settings import CostSettings
from lockstudy.costmodel.table import CostRow

PERCENT = 100.0


@dataclass(frozen=True)
class Checked:
    row: CostRow
    prediction: Prediction

    @property
    def error_percent(self) -> float | None:
        measured = self.row.own_core_seconds
        if not isinstance(self.prediction, Estimate) or not measured:
            return None
        return abs(self.prediction.value - measured) / measured * PERCENT


def checkable(row: CostRow) -> bool:
    if row.host_seconds is None or row.host_seconds <= 0:
        return False
    return row.phase == "boot" or row.roi_simulated_ms is not None


def predict(model: CostModel, row: CostRow) -> Prediction:
    if row.phase == "boot":
        return model.boot_seconds(row.machine, row.cpus, row.kernel_build_id)
    assert row.roi_simulated_ms is not None
    return model.restored_run_seconds(row.machine, row.cpus, row.cpu_model, row.traced, row.roi_simulated_ms, row.run_spec, row.boot_args)


def leave_one_out(rows: list[CostRow], settings: CostSettings) -> list[Checked]:
    """Each checkable row predicted by the model fitted on every other row."""
    checked = []
    for index, row in enumerate(rows):
        if checkable(row):
            others = rows[:index] + rows[index + 1 :]
            checked.append(Checked(row, predict(CostModel.fit(others, settings), row)))
    return checked


def median_abs_percent_error(checked: list[Checked]) -> float | None:
    errors = [c.error_percent for c in checked if c.error_percent is not None]
    return statistics.median(errors) if errors else None
