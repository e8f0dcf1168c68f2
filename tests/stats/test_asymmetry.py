"""duet_stats.asymmetry: the core asymmetry from the log run ratios ([duet] section 3.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_stats.asymmetry import Asymmetry, side_asymmetry


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


def test_the_share_of_run_variance_is_the_squared_half_difference_over_the_variance() -> None:
    # Group means 0.2 and 0.0: delta = 0.1; the four values' variance (ddof 1) is 0.08 / 3.
    est = side_asymmetry(
        [0.1, 0.3, -0.1, 0.1],
        [True, True, False, False],
        confidence=0.9,
        reps=100,
        rng=np.random.default_rng(0),
    )
    assert est is not None
    assert est.share_of_run_variance == pytest.approx(0.01 / (0.08 / 3), rel=1e-12)


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


def test_the_stratified_bootstrap_covers_a_known_asymmetry() -> None:
    # 20 runs alternating between the cores, core b 2% slower, run noise 1%: the 90% interval
    # must contain 1.02 about 90% of the time (a percentile bootstrap of a mean over 10 runs
    # per group under-covers a little: the resampled spread is (m - 1) / m of the true one).
    rng = np.random.default_rng(11)
    on_a = np.array([i % 2 == 0 for i in range(20)])
    truth = math.log(1.02)
    hits = 0
    trials = 300
    for _ in range(trials):
        log_g = np.where(on_a, truth, -truth) + rng.normal(0.0, 0.01, 20)
        est = side_asymmetry(log_g, on_a, confidence=0.9, reps=1000, rng=rng)
        assert est is not None
        assert est.ci_low is not None
        assert est.ci_high is not None
        hits += est.ci_low <= 1.02 <= est.ci_high
    assert 0.8 <= hits / trials <= 0.96


group_sizes = st.tuples(st.integers(1, 12), st.integers(1, 12))
log_ratio = st.floats(-0.5, 0.5, allow_nan=False)


@settings(max_examples=80, deadline=None)
@given(sizes=group_sizes, data=st.data(), shift=log_ratio)
def test_the_groups_swapped_invert_the_ratio_and_a_true_ratio_does_not_move_it(
    sizes: tuple[int, int], data: st.DataObject, shift: float
) -> None:
    n_a, n_b = sizes
    log_g = np.array(data.draw(st.lists(log_ratio, min_size=n_a + n_b, max_size=n_a + n_b)))
    on_a = np.array([True] * n_a + [False] * n_b)

    def est(values: np.ndarray, labels: np.ndarray) -> Asymmetry:
        out = side_asymmetry(values, labels, confidence=0.9, reps=200, rng=np.random.default_rng(0))
        assert out is not None
        return out

    plain = est(log_g, on_a)
    swapped = est(log_g, ~on_a)
    shifted = est(log_g + shift, on_a)
    assert swapped.ratio == pytest.approx(1.0 / plain.ratio, rel=1e-9)
    assert (swapped.runs_a, swapped.runs_b) == (plain.runs_b, plain.runs_a)
    assert shifted.ratio == pytest.approx(plain.ratio, rel=1e-9)
    n = n_a + n_b
    assert plain.residual_bias == pytest.approx(plain.ratio ** ((n_a - n_b) / n), rel=1e-9)
    assert plain.share_of_run_variance is None or 0.0 <= plain.share_of_run_variance <= 1.0
    if n_a >= 2 and n_b >= 2:
        assert plain.ci_low is not None
        assert plain.ci_high is not None
        assert plain.ci_low <= plain.ci_high
    else:
        assert plain.ci_low is None
        assert plain.significant is None
