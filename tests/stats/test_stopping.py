"""Repeated confidence intervals for measuring until decided (docs/statistics.md, 2b)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duet_stats.intervals import t_quantile_two_sided
from duet_stats.stopping import (
    SHAPES,
    StoppingBounds,
    _simultaneous_miss,
    stopping_bounds,
    stopping_intervals,
)


def test_bounds_are_deterministic_and_shaped() -> None:
    pocock = stopping_bounds(min_runs=5, max_runs=40, confidence=0.99, shape="pocock")
    again = stopping_bounds(min_runs=5, max_runs=40, confidence=0.99, shape="pocock")
    assert pocock == again
    assert len(pocock.critical) == 36
    assert len(set(pocock.critical)) == 1
    # Wider than a single 99% t interval at the last look, narrower than at the first look
    # would need to be if all the error were spent there... and never narrower than one look.
    assert pocock.critical[0] > t_quantile_two_sided(0.99, 39)
    obf = stopping_bounds(min_runs=5, max_runs=40, confidence=0.99, shape="obrien-fleming")
    assert all(a > b for a, b in zip(obf.critical, obf.critical[1:], strict=False))
    assert obf.critical[-1] / obf.critical[0] == pytest.approx(math.sqrt(5 / 40))


def test_bonferroni_is_the_t_quantile_at_alpha_over_the_looks() -> None:
    b = stopping_bounds(min_runs=5, max_runs=14, confidence=0.99, shape="bonferroni")
    for n, c in zip(range(5, 15), b.critical, strict=True):
        assert c == pytest.approx(t_quantile_two_sided(1 - 0.01 / 10, n - 1), rel=1e-12)


def test_one_look_pocock_is_the_fixed_t_interval() -> None:
    """With a single look, the calibrated constant is the t quantile: the simulation of 2**17
    standard normal sequences reproduces ``t_{0.995, 9}`` = 3.25 to within its error."""
    b = stopping_bounds(min_runs=10, max_runs=10, confidence=0.99)
    assert b.critical[0] == pytest.approx(t_quantile_two_sided(0.99, 9), rel=0.02)


def test_the_interval_by_hand() -> None:
    x = [0.01, 0.03, 0.02, 0.04, 0.00]
    b = stopping_bounds(min_runs=3, max_runs=8, confidence=0.95, shape="bonferroni")
    got = b.interval(x)
    c = b.critical[5 - 3]
    half = c * float(np.std(x, ddof=1)) / math.sqrt(5)
    assert got.runs == 5
    assert got.critical == c
    assert got.log_ratio == pytest.approx(0.02)
    assert (got.log_low, got.log_high) == pytest.approx((0.02 - half, 0.02 + half))
    assert got.ratio == pytest.approx(math.exp(0.02))
    assert got.ci_low == pytest.approx(math.exp(0.02 - half))
    looks = stopping_intervals([*x, 0.01, 0.02, 0.03, 0.05], b)
    assert [i.runs for i in looks] == [3, 4, 5, 6, 7, 8]
    assert looks[2] == got


@pytest.mark.parametrize("shape", SHAPES)
def test_simultaneous_coverage_on_normal_sequences(shape: str) -> None:
    """Every look's interval holds the mean together with probability ``confidence``.

    20,000 fresh normal sequences (a seed other than the calibration's), 90% simultaneous
    confidence: the miss rate's standard error is 0.0021. Pocock and O'Brien-Fleming are exact
    up to the calibration's own error (0.0008 at 2**17 sequences): a miss rate outside
    0.1 +- 0.0112 (5 combined standard errors) happens by chance with probability below 1e-6.
    Bonferroni only promises at most 0.1: it fails by chance above 0.1 + 0.0106 with
    probability below 1e-6 as well.
    """
    b = stopping_bounds(min_runs=4, max_runs=30, confidence=0.9, shape=shape)  # type: ignore[arg-type]
    x = np.random.default_rng(3030).normal(0.7, 2.5, size=(20_000, 30)) - 0.7
    miss = float(_simultaneous_miss(b, x).mean())
    if shape == "bonferroni":
        assert miss <= 0.1 + 0.0106
        assert miss < 0.08  # the union bound is loose: it is what Bonferroni pays
    else:
        assert abs(miss - 0.1) < 0.0112


def test_peeking_with_fixed_intervals_would_not_hold() -> None:
    """The reason for the module: fixed 90% t intervals looked at after every run from 4 to 30
    miss somewhere far more often than 10% (measured: about 0.4; the test asks > 0.25, which
    20,000 sequences cannot miss by chance: 70 standard errors)."""
    fixed = StoppingBounds(
        min_runs=4,
        max_runs=30,
        confidence=0.9,
        shape="bonferroni",
        critical=tuple(t_quantile_two_sided(0.9, n - 1) for n in range(4, 31)),
    )
    x = np.random.default_rng(3031).standard_normal((20_000, 30))
    assert float(_simultaneous_miss(fixed, x).mean()) > 0.25


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="min_runs must be >= 3"):
        stopping_bounds(min_runs=2, max_runs=10)
    with pytest.raises(ValueError, match="max_runs must be >= 5"):
        stopping_bounds(min_runs=5, max_runs=4)
    with pytest.raises(ValueError, match="confidence"):
        stopping_bounds(min_runs=5, max_runs=10, confidence=1.0)
    with pytest.raises(ValueError, match="shape must be one of"):
        stopping_bounds(min_runs=5, max_runs=10, shape="triangular")  # type: ignore[arg-type]
    b = stopping_bounds(min_runs=5, max_runs=10)
    with pytest.raises(ValueError, match="looks are planned after 5 to 10 runs only"):
        b.interval([0.0] * 4)
    with pytest.raises(ValueError, match="looks are planned after 5 to 10 runs only"):
        b.interval([0.0] * 11)
    with pytest.raises(ValueError, match="one value per look"):
        StoppingBounds(min_runs=5, max_runs=10, confidence=0.99, shape="pocock", critical=(1.0,))


def test_identical_runs_give_a_point_interval() -> None:
    b = stopping_bounds(min_runs=5, max_runs=10)
    got = b.interval([0.01] * 6)
    assert got.log_low == got.log_high == pytest.approx(0.01)


def test_more_looks_never_lower_the_pocock_constant() -> None:
    """The calibration draws the same sequences whatever ``max_runs`` (the first runs of each
    do not depend on it), so the constant is non-decreasing in ``max_runs`` exactly, not only
    in expectation: continuing a measurement to a larger maximum relies on it."""
    maxima = (5, 10, 20, 40, 41, 60)
    constants = [stopping_bounds(min_runs=5, max_runs=m).critical[0] for m in maxima]
    assert constants == sorted(constants)
