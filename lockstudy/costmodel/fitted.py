"""The cost model as a command uses it: settings read, runs.csv read and checked, every group fitted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from lockstudy.campaign import artifacts
from lockstudy.campaign.spec import Resources, RunSpec
from lockstudy.costmodel.model import CostModel
from lockstudy.costmodel.plan import CampaignCost, campaign_cost
from lockstudy.costmodel.settings import CostSettings, load_settings
from lockstudy.costmodel.simulated import SimulatedTime
from lockstudy.costmodel.table import CostRow, read_cost_table


@dataclass(frozen=True)
class FittedModel:
    settings: CostSettings
    rows: list[CostRow]
    model: CostModel
    simulated: SimulatedTime

    def cost(self, specs: list[RunSpec], is_done: Callable[[RunSpec], bool]) -> CampaignCost:
        return campaign_cost(specs, self.model, self.simulated, self.settings.margin, is_done, built_kernel_id)


def built_kernel_id(build: str) -> str:
    """The build id of kernel build `build` as built now; "" when it is not built yet."""
    try:
        return artifacts.kernel(build, "vmlinux").identity
    except artifacts.MissingArtifact:
        return ""


def fitted_model(settings: CostSettings | None = None) -> FittedModel:
    """The model fitted on the table now (CostTableError, one line per problem, when it does not read)."""
    settings = settings or load_settings()
    rows = read_cost_table(settings.table)
    return FittedModel(settings, rows, CostModel.fit(rows, settings), SimulatedTime.gather(rows, settings))


def slurm_resources(cost: CampaignCost) -> Callable[[RunSpec], Resources]:
    """Each run's Slurm resources as the model derives them (the campaign's limits where it cannot)."""
    by_run = {run.spec.run_id: run.slurm.resources() for run in cost.runs}
    return lambda spec: by_run.get(spec.run_id, spec.resources)
