"""Shuffled duet and the sequential two-level bootstrap (docs/statistics.md, method 4)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from duet_stats import (
    MIN_BOOTSTRAP_RUNS,
    SequentialEstimate,
    ShuffledEstimate,
    accuracy_gain,
    duet_ratio,
    sequential_ci,
    shuffled_ratio,
    sync_gain,
)
from duet_stats.sequential import _derangement
from tests.stats.synthetic import make_duet_data


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- shuffled duet -----------------------------------------------------------------------------


def test_shuffled_interval_is_wider_whenever_interference_is_shared() -> None:
    for seed in range(20):
        a, b = make_duet_data(rng(seed), 10, 20, 1.02)
        duet = duet_ratio(a, b, reps=1000, rng=rng(seed))
        shuffled = shuffled_ratio(a, b, shuffles=5, reps=1000, rng=rng(seed))
        assert duet.width is not None
        assert shuffled.width > duet.width, seed
        assert sync_gain(shuffled_width=shuffled.width, duet_width=duet.width) > 1.0


def test_shuffling_changes_little_without_shared_interference() -> None:
    a, b = make_duet_data(rng(1), 20, 20, 1.0, shared_run_sd=0.0, shared_iteration_sd=0.0)
    duet = duet_ratio(a, b, reps=2000, rng=rng(2))
    shuffled = shuffled_ratio(a, b, shuffles=10, reps=2000, rng=rng(3))
    assert duet.width is not None
    assert 0.6 < sync_gain(shuffled_width=shuffled.width, duet_width=duet.width) < 1.6


def test_shuffled_point_estimate_equals_duet_without_winsorization() -> None:
    # The grand geometric mean of b/a is gm(b)/gm(a) however the runs are paired.
    a, b = make_duet_data(rng(4), 8, 6, 1.07)
    duet = duet_ratio(a, b, winsorize=False, reps=10, rng=rng())
    shuffled = shuffled_ratio(a, b, winsorize=False, shuffles=7, reps=200, rng=rng())
    assert isinstance(shuffled, ShuffledEstimate)
    assert shuffled.ratio == pytest.approx(duet.ratio, rel=1e-12)
    assert shuffled.ci_low < shuffled.ratio < shuffled.ci_high
    assert shuffled.width == pytest.approx(shuffled.ci_high - shuffled.ci_low, rel=0.2)
    assert (shuffled.shuffles, shuffled.confidence) == (7, 0.99)


def test_derangements_have_no_fixed_point_and_are_uniform() -> None:
    g = rng(5)
    seen = Counter(tuple(_derangement(g, 4).tolist()) for _ in range(9000))
    assert all(all(p[i] != i for i in range(4)) for p in seen)
    assert len(seen) == 9  # the derangements of 4 elements
    assert all(abs(n - 1000) < 5 * 31 for n in seen.values())


# --- sequential two-level bootstrap ------------------------------------------------------------


def sequential_data(
    g: np.random.Generator, runs: int, iterations: int, ratio: float
) -> tuple[np.ndarray, np.ndarray]:
    """Independent versions: per-run random state (sd 3%) and per-iteration noise (sd 5%)."""

    def side(scale: float) -> np.ndarray:
        return (
            1e7
            * scale
            * g.lognormal(0.0, 0.03, (runs, 1))
            * g.lognormal(0.0, 0.05, (runs, iterations))
        )

    return side(1.0), side(ratio)


def test_relative_width_shrinks_with_more_runs() -> None:
    a, b = sequential_data(rng(6), 40, 20, 1.0)
    few = sequential_ci(a[:10], b[:10], reps=2000, rng=rng(7))
    many = sequential_ci(a, b, reps=2000, rng=rng(7))
    assert many.relative_width < 0.75 * few.relative_width


def test_ratio_interval_contains_the_true_ratio() -> None:
    hits = 0
    for seed in range(10):
        a, b = sequential_data(rng(100 + seed), 10, 30, 1.05)
        est = sequential_ci(a, b, reps=2000, rng=rng(seed))
        hits += est.ratio_ci_low <= 1.05 <= est.ratio_ci_high
    assert hits >= 9


def test_sequential_fields_are_consistent() -> None:
    a, b = sequential_data(rng(8), 6, 15, 1.1)
    est = sequential_ci(a, b, reps=3000, winsorize=False, rng=rng(9))
    assert isinstance(est, SequentialEstimate)
    assert est.baseline_mean_ns == pytest.approx(a.mean(), rel=1e-12)
    assert est.candidate_mean_ns == pytest.approx(b.mean(), rel=1e-12)
    assert est.difference_ns == pytest.approx(b.mean() - a.mean(), rel=1e-12)
    assert est.ratio == pytest.approx(b.mean() / a.mean(), rel=1e-12)
    assert est.ci_low_ns < est.difference_ns < est.ci_high_ns
    assert est.ratio_ci_low < est.ratio < est.ratio_ci_high
    pooled = np.concatenate([a.ravel(), b.ravel()]).mean()
    assert est.relative_width == pytest.approx((est.ci_high_ns - est.ci_low_ns) / pooled)
    assert (est.confidence, est.reps) == (0.99, 3000)


def test_sides_may_differ_in_runs_and_iterations() -> None:
    g = rng(10)
    a = g.lognormal(16.0, 0.05, (7, 12))
    b = g.lognormal(16.0, 0.05, (9, 30))
    est = sequential_ci(a, b, reps=500, rng=rng())
    assert est.ci_low_ns < 0.0 < est.ci_high_ns


def test_winsorization_of_times() -> None:
    a, b = sequential_data(rng(11), 6, 20, 1.0)  # 20 iterations: the guard winsorizes from 20
    b[2, 7] *= 50.0  # one iteration hit by a one-off event
    on = sequential_ci(a, b, reps=500, rng=rng())
    off = sequential_ci(a, b, reps=500, winsorize=False, rng=rng())
    assert on.candidate_mean_ns < off.candidate_mean_ns
    assert on.candidate_mean_ns == pytest.approx(np.delete(b.ravel(), 2 * 20 + 7).mean(), rel=0.01)


def test_sequential_is_wider_than_duet_under_shared_interference() -> None:
    a, b = make_duet_data(rng(12), 10, 30, 1.0)
    duet = duet_ratio(a, b, reps=2000, rng=rng())
    seq = sequential_ci(a, b, reps=2000, rng=rng())
    assert duet.width is not None
    assert accuracy_gain(sequential_relative_width=seq.relative_width, duet_width=duet.width) > 3


def test_sequential_is_deterministic_for_a_seed() -> None:
    a, b = sequential_data(rng(13), 5, 5, 1.0)
    assert sequential_ci(a, b, reps=300, rng=rng(1)) == sequential_ci(a, b, reps=300, rng=rng(1))


def test_many_blocks_in_the_two_level_bootstrap() -> None:
    # 5 x 30,000 samples: one replicate per block, so 40 replicates are 40 blocks.
    g = rng(14)
    a = g.lognormal(16.0, 0.05, (5, 30_000))
    est = sequential_ci(a, a * 1.5, reps=40, rng=rng())
    assert est.ratio_ci_low < 1.5 < est.ratio_ci_high


# --- gains and argument checks -----------------------------------------------------------------


def test_gains() -> None:
    assert sync_gain(shuffled_width=0.08, duet_width=0.02) == pytest.approx(4.0)
    assert accuracy_gain(sequential_relative_width=0.1, duet_width=0.04) == pytest.approx(2.5)
    assert sync_gain(shuffled_width=0.05, duet_width=0.0) == math.inf
    assert accuracy_gain(sequential_relative_width=0.0, duet_width=0.0) == 1.0


GOOD = np.full((MIN_BOOTSTRAP_RUNS, 3), 1e6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: shuffled_ratio(GOOD[:4], GOOD[:4], rng=rng()), r"at least 5 run\(s\)"),
        (lambda: shuffled_ratio(GOOD, GOOD[:, :2], rng=rng()), "same"),
        (lambda: shuffled_ratio(GOOD, GOOD, shuffles=0, rng=rng()), "shuffles must be >= 1"),
        (lambda: shuffled_ratio(GOOD, GOOD, reps=0, rng=rng()), "reps must be >= 1"),
        (lambda: shuffled_ratio(GOOD, -GOOD, rng=rng()), "candidate_ns must hold positive"),
        (lambda: shuffled_ratio(GOOD, GOOD, confidence=2, rng=rng()), "confidence"),
        (lambda: sequential_ci(GOOD[:4], GOOD, rng=rng()), r"baseline_ns needs at least 5"),
        (lambda: sequential_ci(GOOD, [[1.0, 2.0], [1.0]] * 3, rng=rng()), "candidate_ns is rag"),
        (lambda: sequential_ci(GOOD, GOOD * 0.0, rng=rng()), "candidate_ns must hold positive"),
        (lambda: sequential_ci(GOOD, GOOD, confidence=-0.5, rng=rng()), "confidence"),
        (lambda: sequential_ci(GOOD, GOOD, reps=0, rng=rng()), "reps must be >= 1"),
        (lambda: sync_gain(shuffled_width=-1.0, duet_width=1.0), "shuffled_width must be"),
        (lambda: sync_gain(shuffled_width=1.0, duet_width=math.nan), "duet_width must be"),
        (
            lambda: accuracy_gain(sequential_relative_width=math.inf, duet_width=1.0),
            "sequential_relative_width must be a finite number",
        ),
    ],
)
def test_invalid_arguments(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_rng_must_be_a_generator() -> None:
    with pytest.raises(TypeError, match="rng"):
        sequential_ci(GOOD, GOOD, rng=1)  # type: ignore[arg-type]  # wrong type on purpose
    with pytest.raises(TypeError, match="rng"):
        shuffled_ratio(GOOD, GOOD, rng="seed")  # type: ignore[arg-type]  # wrong type on purpose
