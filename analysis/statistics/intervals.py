"""Confidence intervals: of a configuration's mean, and of the ratio of two configurations' means.

The mean: Student's t interval, mean +- t(level, n-1) * s / sqrt(n), for
n >= 2 (n = 1 has no interval). Student's t quantile is computed here
(the analysis has no statistics library): Simpson's rule over the t
density from 0, inverted by bisection.

The ratio a/b of two means: Fieller's interval, for two independent
samples. Fieller, "Some problems in interval estimation", J. R. Stat. Soc.
B 16(2):175-185, 1954; as applied to a ratio of two independent means in
Franz, "Ratios: a short guide to confidence limits and proper use",
arXiv:0710.2024 (2007), sec. 3. It is the set of ratios r for which
a - r*b is not significantly different from 0:

    (mean_a - r mean_b)^2 <= t^2 (var_a/n_a + r^2 var_b/n_b)

Why Fieller and not a bootstrap or the delta method: our configurations
have about five repeats; a percentile bootstrap resamples only those five
values and is known to be too narrow at such n, and needs a seed; the
delta method is symmetric around a/b and too narrow when b is noisy.
Fieller's interval is exact for normal means, deterministic, asymmetric
as a ratio should be, and honest when b is not clearly away from zero:
the interval is then unbounded, and a verdict inconclusive. Degrees of
freedom: min(n_a, n_b) - 1, the conservative choice for two samples of
unequal variance (Welch's lower bound), so that the interval errs wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from analysis.statistics.rules import StatisticsError, StatisticsRules, load_rules

STUDENT_T = "Student t"
FIELLER = "Fieller"
NO_INTERVAL = "none (n=1)"


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided interval at `level` and the method that gave it."""

    estimate: float
    low: float
    high: float
    level: float
    method: str

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def clipped(self, low: float, high: float) -> "Interval":
        """The interval cut to [low, high], what the quantity can be (a share: [0, 1]); the method says so."""
        if low <= self.low and self.high <= high:
            return self
        return Interval(self.estimate, max(self.low, low), min(self.high, high), self.level, f"{self.method}, clipped to [{low:g}, {high:g}]")

    @property
    def half_width_share(self) -> float:
        """Half the interval's width over the estimate (0.05: +-5 %); NaN without an interval."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.estimate == 0:
            return math.nan
        return (self.high - self.low) / 2 / abs(self.estimate)


def _t_density(x: np.ndarray, df: int) -> np.ndarray:
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return np.exp(log_scale - (df + 1) / 2 * np.log1p(x * x / df))


def _t_mass(upper: float, df: int, points: int) -> float:
    """The t distribution's probability between 0 and `upper` (Simpson's rule, `points` odd)."""
    x = np.linspace(0.0, upper, points)
    y = _t_density(x, df)
    step = upper / (points - 1)
    return float(step / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))


@lru_cache(maxsize=None)
def t_quantile(level: float, df: int, points: int, steps: int) -> float:
    """The two-sided quantile q of Student's t with `df` degrees of freedom: P(|T| <= q) = level."""
    if df < 1:
        raise StatisticsError(f"Student's t needs at least 1 degree of freedom, not {df}")
    half = level / 2
    high = 1.0
    while _t_mass(high, df, points) < half:
        high *= 2
    low = 0.0
    for _ in range(steps):
        middle = (low + high) / 2
        if _t_mass(middle, df, points) < half:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _finite(values: Sequence[float], what: str) -> np.ndarray:
    array = np.asarray(list(values), dtype=float)
    if array.size == 0:
        raise StatisticsError(f"{what}: no values")
    if not np.isfinite(array).all():
        raise StatisticsError(f"{what}: values {array.tolist()} are not all finite numbers")
    return array


def mean_interval(values: Sequence[float], rules: StatisticsRules | None = None, what: str = "mean") -> Interval:
    """The mean of `values` with its Student-t interval (none for one value)."""
    rules = rules or load_rules()
    array = _finite(values, what)
    mean = float(array.mean())
    if array.size < 2:
        return Interval(mean, math.nan, math.nan, rules.level, NO_INTERVAL)
    q = t_quantile(rules.level, array.size - 1, rules.integration_points, rules.bisection_steps)
    half = q * float(array.std(ddof=1)) / math.sqrt(array.size)
    return Interval(mean, mean - half, mean + half, rules.level, STUDENT_T)


def runs_for_half_width(values: Sequence[float], rules: StatisticsRules | None = None, what: str = "runs") -> int | None:
    """How many runs of the spread of `values` would give a mean interval within the rules' target
    (half-width over the mean): the smallest n with t(level, n-1) * s / sqrt(n) <= target * |mean|.
    None when more than the rules' max_runs_for_target would be needed, or there is no spread to judge."""
    rules = rules or load_rules()
    array = _finite(values, what)
    mean, spread = abs(float(array.mean())), float(array.std(ddof=1)) if array.size > 1 else math.nan
    if not math.isfinite(spread) or mean == 0:
        return None
    allowed = rules.target_half_width * mean

    def quantile(n: int) -> float:
        return t_quantile(rules.level, n - 1, rules.integration_points, rules.bisection_steps)

    # t(n-1) falls towards its limit as n grows: start where even the limit would not yet reach it
    limit = quantile(rules.max_runs_for_target)
    n = max(2, math.ceil((limit * spread / allowed) ** 2)) if allowed > 0 else rules.max_runs_for_target + 1
    while n <= rules.max_runs_for_target:
        if quantile(n) * spread / math.sqrt(n) <= allowed:
            return n
        n += 1
    return None


def ratio_interval(a: Sequence[float], b: Sequence[float], rules: StatisticsRules | None = None, what: str = "a / b") -> Interval:
    """mean(a) / mean(b) with Fieller's interval (module docstring); none when a side has one value,
    (-inf, inf) when b's mean is not clearly away from zero."""
    rules = rules or load_rules()
    xa, xb = _finite(a, f"{what}: a"), _finite(b, f"{what}: b")
    mean_a, mean_b = float(xa.mean()), float(xb.mean())
    if mean_b == 0:
        raise StatisticsError(f"{what}: the mean of b is 0: no ratio")
    ratio = mean_a / mean_b
    if xa.size < 2 or xb.size < 2:
        return Interval(ratio, math.nan, math.nan, rules.level, NO_INTERVAL)
    q = t_quantile(rules.level, min(xa.size, xb.size) - 1, rules.integration_points, rules.bisection_steps)
    var_a, var_b = float(xa.var(ddof=1)) / xa.size, float(xb.var(ddof=1)) / xb.size
    squared = mean_b * mean_b - q * q * var_b
    if squared <= 0:
        return Interval(ratio, -math.inf, math.inf, rules.level, FIELLER)
    centre = mean_a * mean_b
    spread = math.sqrt(max(centre * centre - squared * (mean_a * mean_a - q * q * var_a), 0.0))
    return Interval(ratio, (centre - spread) / squared, (centre + spread) / squared, rules.level, FIELLER)
