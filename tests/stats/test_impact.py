"""Impact factor of the random initial state (Kalibera et al., Figure 2; docs/statistics.md, method
5)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from duet_stats import ImpactFactors, impact_factor, impact_factors, paired_impact_factors
from duet_stats.impact import _distinct


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_runs_differing_by_a_constant_offset() -> None:
    # Run offsets with sd 10 over per-iteration noise with sd 1: the run matters (plain impact
    # about sqrt(1 + 100) ~ 10), and subtracting each run's mean leaves i.i.d. noise (about 1).
    g = rng(1)
    samples = 1000.0 + g.normal(0.0, 10.0, (30, 1)) + g.normal(0.0, 1.0, (30, 100))
    factors = impact_factors(samples, rng=rng(2))
    assert factors.plain > 5.0
    assert factors.transformed == pytest.approx(1.0, abs=0.1)


def test_iid_data_gives_about_one_for_both() -> None:
    samples = rng(3).lognormal(16.0, 0.1, (30, 100))
    factors = impact_factors(samples, rng=rng(4))
    assert factors.plain == pytest.approx(1.0, abs=0.1)
    assert factors.transformed == pytest.approx(1.0, abs=0.1)


def test_multiplicative_run_effect_is_not_additive_on_times() -> None:
    # Runs that scale the noise as well as the level: the transformed factor stays well above 1
    # only when the spread differs between runs; here it does (factors 0.25 to 4).
    g = rng(5)
    scale = np.exp(g.uniform(np.log(0.25), np.log(4.0), (30, 1)))
    samples = 1e6 * scale * (1.0 + 0.05 * g.standard_normal((30, 100)))
    factors = impact_factors(samples, rng=rng(6))
    assert factors.plain > 5.0
    assert factors.transformed > 1.1


def test_pair_equals_the_two_single_calls_with_the_same_seed() -> None:
    samples = rng(7).lognormal(0.0, 0.2, (12, 40)) + rng(8).normal(0.0, 0.3, (12, 1))
    both = impact_factors(samples, k=3000, rng=rng(9))
    assert isinstance(both, ImpactFactors)
    assert both.plain == impact_factor(samples, k=3000, rng=rng(9))
    assert both.transformed == impact_factor(samples, transformed=True, k=3000, rng=rng(9))


def test_both_sides_from_one_draw_equal_the_single_calls_with_the_same_seed() -> None:
    # The draws do not depend on the data: sharing them changes no side's estimate.
    a = rng(1).lognormal(0.0, 0.2, (30, 100)) * rng(2).lognormal(0.0, 0.3, (30, 1))
    b = rng(3).lognormal(0.0, 0.2, (30, 100)) + rng(4).normal(0.0, 0.3, (30, 1))
    pa, pb = paired_impact_factors(a, b, k=20_000, rng=rng(5))  # several blocks
    assert pa == impact_factors(a, k=20_000, rng=rng(5))
    assert pb == impact_factors(b, k=20_000, rng=rng(5))
    assert pa != pb
    with pytest.raises(ValueError, match="same runs x iterations"):
        paired_impact_factors(a, b[:, :50], rng=rng(5))


def test_deterministic_for_a_seed() -> None:
    samples = rng(10).lognormal(0.0, 0.2, (8, 20))
    assert impact_factor(samples, k=500, rng=rng(1)) == impact_factor(samples, k=500, rng=rng(1))


def test_constant_runs() -> None:
    # Every run constant, at different levels: iterations never vary, runs do -> inf; after
    # subtracting the run means everything is 0: runs as alike as iterations -> 1.
    samples = np.repeat(np.arange(1.0, 11.0)[:, None], 12, axis=1)
    factors = impact_factors(samples, k=500, rng=rng())
    assert factors.plain == math.inf
    assert factors.transformed == 1.0


def test_all_equal_samples_give_one() -> None:
    assert impact_factor(np.full((6, 8), 7.0), k=200, rng=rng()) == 1.0


def test_minimum_shape_and_many_blocks() -> None:
    # 3 runs -> c = 2, so 3 iterations are enough; 5,000 repetitions of c = 2 span blocks.
    samples = rng(11).normal(size=(3, 3))
    value = impact_factor(samples, k=40_000, rng=rng())
    assert math.isfinite(value)
    assert value > 0.0


def test_large_populations_use_the_slow_draw_path() -> None:
    samples = rng(12).normal(size=(4, 70_000))
    assert impact_factor(samples, k=50, rng=rng()) > 0.0


def test_distinct_subsets_are_uniform_and_distinct() -> None:
    subsets = _distinct(rng(13), 5, 3, 60_000)
    assert subsets.shape == (3, 60_000)
    columns = np.sort(subsets, axis=0)
    assert np.all(np.diff(columns, axis=0) > 0)  # distinct within each subset
    counts = Counter(map(tuple, columns.T.tolist()))
    assert len(counts) == 10  # all C(5, 3) subsets
    # Each has probability 1/10: 6,000 expected, sd about 73.
    assert all(abs(n - 6000) < 5 * 73 for n in counts.values())
    big = _distinct(rng(14), 100, 22, 2000)
    assert np.all(np.diff(np.sort(big, axis=0), axis=0) > 0)
    assert big.min() >= 0
    assert big.max() < 100


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: impact_factor(np.ones((2, 10)), rng=rng()), r"2 run\(s\).*at least 3 runs"),
        (
            lambda: impact_factor(np.ones((10, 7)), rng=rng()),
            r"floor\(0\.75 \* 10\) = 7 .* at least 8 iterations per run",
        ),
        (lambda: impact_factors(np.ones((30, 22)), rng=rng()), "at least 23 iterations"),
        (lambda: impact_factor(np.ones((4, 4)), k=0, rng=rng()), "k must be >= 1"),
        (lambda: impact_factor(np.ones(10), rng=rng()), "samples must be a 2-D array"),
        (lambda: impact_factor([[1.0] * 4, [1.0] * 3] * 2, rng=rng()), "samples is ragged"),
        (lambda: impact_factor(np.full((4, 4), np.nan), rng=rng()), "finite"),
    ],
)
def test_invalid_arguments(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_rng_must_be_a_generator() -> None:
    with pytest.raises(TypeError, match="rng"):
        impact_factors(np.ones((4, 4)), rng=None)  # type: ignore[arg-type]  # wrong type on purpose
