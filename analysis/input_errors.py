"""The errors a user's results can cause, each a one-line message: what `analyze` and `report` catch.

A results folder that does not read (a truncated or foreign stats.txt, a
result.json that is not JSON, an ROI trace not in gem5's format, a stat a
metric needs that the run lacks) ends the command with its message and a
non-zero status, never a traceback. An error not listed here is a bug.
"""

from __future__ import annotations

from analysis.gem5_output.config_reader import ConfigError
from analysis.gem5_output.runs import MissingStatError, RunLayoutError
from analysis.gem5_output.stat_rules import RulesError
from analysis.gem5_output.stats_reader import StatsFileError
from analysis.handoff_chart.teaching import TeachingDataError
from analysis.hotlines.errors import HotlinesError
from analysis.model_comparison.rules import ModelComparisonError
from analysis.seed_curve.rules import SeedCurveError
from analysis.seed_verdicts.upstream_moves import UpstreamMovesError
from analysis.statistics.rules import StatisticsError
from analysis.traffic.handoffs import BoundsError
from analysis.traffic.locks import StaticLocksError
from analysis.traffic.metrics import MetricsError
from analysis.traffic.protocol_trace import TraceFormatError

INPUT_ERRORS: tuple[type[Exception], ...] = (
    ConfigError,
    BoundsError,
    HotlinesError,
    StaticLocksError,
    MetricsError,
    ModelComparisonError,
    TraceFormatError,
    MissingStatError,
    RunLayoutError,
    SeedCurveError,
    RulesError,
    StatsFileError,
    StatisticsError,
    UpstreamMovesError,
    TeachingDataError,
)


def messages(exc: Exception) -> list[str]:
    """An input error's lines, one per problem (a LookupError's message without the quotes str() adds)."""
    text = exc.args[0] if isinstance(exc, LookupError) and exc.args else str(exc)
    return [line.strip() for line in str(text).splitlines() if line.strip()] or [type(exc).__name__]
