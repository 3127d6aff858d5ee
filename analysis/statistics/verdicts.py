"""A claim's verdict from the interval of our ratio a / b against the "same" band.

seed_comparison.py calls two numbers "same" when |a - b| / |b| is within
the band (analysis/data/seeds.toml [agreement] relative_tolerance), i.e.
when a / b lies in [1 - band, 1 + band]; outside it, the higher rate is
the better one (our rates are all higher-is-better). With repeats, our
direction is decided by the whole interval of the ratio, not its point:

  interval entirely above 1 + band   -> a_better
  interval entirely below 1 - band   -> b_better
  interval entirely inside the band  -> same
  anything else (it straddles an edge, or is unbounded) -> undecided

A claim agrees when our decided direction is the published one, disagrees
when it is another; undecided is "inconclusive", and a side with one run
has no interval: "inconclusive (n=1)", whatever its point ratio says.
"""

from __future__ import annotations

import math

from analysis.seed_verdicts.seeds import FLOAT_SLACK
from analysis.statistics.intervals import Interval

AGREES = "agrees"
DISAGREES = "disagrees"
INCONCLUSIVE = "inconclusive"
SINGLE_RUN = "inconclusive (n=1)"
# Repeats with different perturbation seeds that came out bit-identical carry one run's information:
# the perturbation did not reach what the rate depends on (on the bus machine a lock bench's lines move
# cache to cache and never wait for the perturbed memory), so they give no interval.
IDENTICAL_REPEATS = "inconclusive (repeats identical: the perturbation did not change the runs)"
MIN_RUNS = 2  # runs per side for an interval (Student's t needs one degree of freedom)


def our_direction(interval: Interval, band: float) -> str:
    """"a_better", "b_better" or "same" when the whole interval says so; "" when it does not."""
    low, high = interval.low, interval.high
    if math.isnan(low) or math.isnan(high):
        return ""
    upper, lower = 1 + band + FLOAT_SLACK, 1 - band - FLOAT_SLACK
    if low > upper:
        return "a_better"
    if high < lower:
        return "b_better"
    if lower <= low and high <= upper:
        return "same"
    return ""


def verdict(interval: Interval, published: str, band: float, n_a: int, n_b: int, identical: bool = False) -> tuple[str, str]:
    """(our direction or "", the verdict) of a claim whose published direction is `published`;
    `identical`: a side's repeats are all the same number."""
    if n_a < MIN_RUNS or n_b < MIN_RUNS:
        return "", SINGLE_RUN
    if identical:
        return "", IDENTICAL_REPEATS
    ours = our_direction(interval, band)
    if not ours:
        return "", INCONCLUSIVE
    return ours, AGREES if ours == published else DISAGREES
