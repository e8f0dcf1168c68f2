"""stats.asymmetry: the core asymmetry from the log run ratios ([duet] section 3.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats.asymmetry import side_asymmetry


def test_half_the_difference_of_the_group_means_whatever_the_true_ratio() -> None:
    # True ratio R = 1.2, core b 10% slower: runs on a give R * 1.1, runs on b give R / 1.1.
    r, c = 1.2, 1.1
    log_g = np.log([r * c, r / c, r * c, r / c, r * c, r / c])
    on_a = [True, False, True, False, True, False]
    est = side_asymmetry(log_g, on_a, confidence=0.99, reps=2000, rng=np.random.default_rng(0))
    assert est is not None
    assert est.ratio == pytest.approx(c)
    # No spread within a group: the interval collapses on the estimate and excludes 1.
    assert est.ci_low == pytest.approx(c)
    assert est.ci_high == pytest.approx(c)
    assert est.significant is True
    assert (est.runs_a, est.runs_b) == (3, 3)
    assert est.residual_bias == pytest.approx(1.0)  # balanced


def test_an_unbalanced_assignment_leaves_a_bias_and_one_group_alone_gives_nothing() -> None:
    log_g = np.log([1.1, 1.1, 1.1, 1 / 1.1])
    est = side_asymmetry(
        log_g, [True, True, True, False], confidence=0.9, reps=500, rng=np.random.default_rng(1)
    )
    assert est is not None
    assert est.ratio == pytest.approx(1.1)
    assert est.ci_low is None  # one run on b: no interval
    assert est.significant is None
    assert est.residual_bias == pytest.approx(math.exp(math.log(1.1) * (3 - 1) / 4))
    assert (
        side_asymmetry(log_g, [True] * 4, confidence=0.9, reps=10, rng=np.random.default_rng(1))
        is None
    )


def test_noise_without_asymmetry_keeps_1_inside() -> None:
    rng = np.random.default_rng(7)
    log_g = rng.normal(0.0, 0.01, 20)
    est = side_asymmetry(
        log_g, [i % 2 == 0 for i in range(20)], confidence=0.99, reps=4000, rng=rng
    )
    assert est is not None
    assert est.ci_low is not None
    assert est.ci_high is not None
    assert est.ci_low < 1.0 < est.ci_high


def test_arguments_are_checked() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="one entry per run"):
        side_asymmetry([0.1, 0.2], [True], confidence=0.9, reps=10, rng=rng)
    with pytest.raises(ValueError, match="confidence"):
        side_asymmetry([0.1, 0.2], [True, False], confidence=1.5, reps=10, rng=rng)
