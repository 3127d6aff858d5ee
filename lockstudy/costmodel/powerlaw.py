"""A power law value = a * x^b, fitted by least squares on log(value) against log(x).

Host time per simulated ms, boot time and memory all grow with the
simulated CPUs roughly as a power (more CPUs: more events per simulated
ns, more state), so a straight line in log-log is the simplest model with
a slope to extrapolate. Standard library only: run.sh may run on the
system's Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class FitError(ValueError):
    """Too few or unusable points for a fit."""


@dataclass(frozen=True)
class PowerLaw:
    coefficient: float  # a
    exponent: float  # b
    points: int
    x_min: float
    x_max: float

    def __call__(self, x: float) -> float:
        return self.coefficient * x**self.exponent

    def scaled(self, factor: float) -> "PowerLaw":
        return PowerLaw(self.coefficient * factor, self.exponent, self.points, self.x_min, self.x_max)

    def describe(self) -> str:
        return f"{self.coefficient:.4g} x cpus^{self.exponent:.3f} ({self.points} points, cpus {self.x_min:g}-{self.x_max:g})"


def fit_power_law(xs: list[float], ys: list[float]) -> PowerLaw:
    """The least-squares line through (log x, log y); FitError without two distinct positive x."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len({x for x, _ in pairs}) < 2:
        raise FitError(f"{len(pairs)} positive point(s) at {len({x for x, _ in pairs})} size(s): a slope needs two sizes")
    return fit_power_law_within([(xs, ys)])


def fit_power_law_within(groups: list[tuple[list[float], list[float]]]) -> PowerLaw:
    """One slope for points that fall in groups of their own levels (a kernel build's boots): the
    least-squares slope of each group's points about their own means, pooled; the coefficient
    through every point. FitError without a group at two distinct positive x."""
    positive = [[(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0] for xs, ys in groups]
    logs = [[(math.log(x), math.log(y)) for x, y in group] for group in positive if group]
    spread = covariance = 0.0
    for group in logs:
        mean_x = sum(u for u, _ in group) / len(group)
        mean_y = sum(v for _, v in group) / len(group)
        spread += sum((u - mean_x) ** 2 for u, _ in group)
        covariance += sum((u - mean_x) * (v - mean_y) for u, v in group)
    if spread == 0.0:
        raise FitError("no group has points at two sizes: a slope needs two sizes")
    slope = covariance / spread
    every = [pair for group in logs for pair in group]
    intercept = sum(v - slope * u for u, v in every) / len(every)
    sizes = [x for group in positive for x, _ in group]
    return PowerLaw(math.exp(intercept), slope, len(every), min(sizes), max(sizes))


def scale_to_points(law: PowerLaw, xs: list[float], ys: list[float]) -> PowerLaw:
    """`law`'s slope through the given points: its coefficient times their geometric-mean ratio to it."""
    ratios = [math.log(y / law(x)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if not ratios:
        raise FitError("no positive point to scale to")
    scaled = law.scaled(math.exp(sum(ratios) / len(ratios)))
    return PowerLaw(scaled.coefficient, scaled.exponent, len(ratios), min(xs), max(xs))
