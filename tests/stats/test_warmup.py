"""duet_stats.warmup: MSER warm-up detection on the run-centred median profile."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from duet_stats import Warmup, detect_warmup
from duet_stats.warmup import STANDARD_ERRORS

TOLERANCE = math.log1p(0.02) / 4  # what duet calibrate uses at a 2% threshold


def series(
    rows: int = 20,
    n: int = 30,
    *,
    warmup: int = 0,
    slowdown: float = 1.0,
    sd: float = 0.0,
    run_sd: float = 0.0,
    seed: int = 0,
) -> np.ndarray:
    """``rows`` runs of ``n`` iterations of 1 ms, the first ``warmup`` ``slowdown`` times slower,
    with log-normal iteration noise ``sd`` and a per-run offset ``run_sd``."""
    rng = np.random.default_rng(seed)
    logs = rng.normal(0.0, sd, (rows, n)) + rng.normal(0.0, run_sd, (rows, 1))
    logs[:, :warmup] += math.log(slowdown)
    return 1e6 * np.exp(logs)


# --------------------------------------------------------------------------------------------
# Known answers


def test_a_flat_series_has_no_warmup() -> None:
    w = detect_warmup(series(), tolerance=TOLERANCE)
    assert w == Warmup(0, 1.0, False, tuple(0.0 for _ in range(30)))


def test_a_noiseless_step_is_found_exactly_with_its_slowdown() -> None:
    # Profile: log 1.1 for 5 iterations, then 0. MSER of the tail from d = 5 is 0 (the minimum),
    # the noise band is the tolerance (no noise), and all 5 lie outside it.
    w = detect_warmup(series(warmup=5, slowdown=1.1, run_sd=0.05), tolerance=TOLERANCE)
    assert w.iterations == 5
    assert w.slowdown == pytest.approx(1.1, rel=1e-12)
    assert w.trending is False
    assert w.profile[:5] == pytest.approx([math.log(1.1)] * 5)
    assert w.profile[5:] == pytest.approx([0.0] * 25, abs=1e-12)


def test_a_step_inside_the_tolerance_costs_nothing() -> None:
    # 0.3% slower for 5 iterations: below a quarter of a 2% band, not worth dropping.
    w = detect_warmup(series(warmup=5, slowdown=1.003), tolerance=TOLERANCE)
    assert w.iterations == 0
    assert w.slowdown == 1.0


def test_the_mser_point_is_searched_in_the_first_half_only() -> None:
    # Slow for 20 of 30 iterations: the search stops at 15, so at most 15 are dropped, and the
    # second half (5 slow, then 10 fast) moves: trending.
    w = detect_warmup(series(warmup=20, slowdown=1.2), tolerance=TOLERANCE)
    assert w.iterations <= 15
    assert w.trending is True


def test_a_drifting_series_is_trending() -> None:
    ramp = 1e6 * np.exp(np.linspace(0.0, 0.2, 40))
    w = detect_warmup(np.tile(ramp, (6, 1)), tolerance=TOLERANCE)
    assert w.trending is True


@pytest.mark.parametrize(("true_w", "slowdown"), [(3, 1.5), (6, 1.2), (10, 1.05)])
def test_a_warmup_in_noise_is_found(true_w: int, slowdown: float) -> None:
    found = [
        detect_warmup(
            series(40, 40, warmup=true_w, slowdown=slowdown, sd=0.01, run_sd=0.02, seed=s),
            tolerance=TOLERANCE,
        ).iterations
        for s in range(10)
    ]
    assert all(true_w - 1 <= f <= true_w + 1 for f in found), found


def test_noise_alone_rarely_costs_iterations() -> None:
    # The band is 4 standard errors of the profile: pure noise must almost never pass for warm-up.
    found = [
        detect_warmup(series(20, 30, sd=0.03, seed=s), tolerance=0.0).iterations for s in range(40)
    ]
    assert sum(f > 0 for f in found) <= 2, found


def test_fewer_than_4_iterations_is_nothing_to_detect() -> None:
    w = detect_warmup([[3.0, 2.0, 1.0]], tolerance=TOLERANCE)
    assert w == Warmup(0, 1.0, False, (0.0, 0.0, 0.0))


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="series must be a 2-D array"):
        detect_warmup([1.0, 2.0, 3.0, 4.0], tolerance=TOLERANCE)
    with pytest.raises(ValueError, match="positive numbers"):
        detect_warmup([[1.0, 2.0, 0.0, 4.0]], tolerance=TOLERANCE)
    with pytest.raises(ValueError, match="finite numbers"):
        detect_warmup([[1.0, 2.0, math.nan, 4.0]], tolerance=TOLERANCE)
    with pytest.raises(ValueError, match="at least 1 run"):
        detect_warmup(np.empty((0, 5)), tolerance=TOLERANCE)
    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
        detect_warmup(series(), tolerance=-0.1)
    with pytest.raises(ValueError, match="standard_errors must be a finite number > 0"):
        detect_warmup(series(), tolerance=TOLERANCE, standard_errors=0.0)


def test_a_wider_band_never_finds_more() -> None:
    data = series(20, 30, warmup=4, slowdown=1.02, sd=0.01, seed=3)
    narrow = detect_warmup(data, tolerance=0.0, standard_errors=1.0).iterations
    default = detect_warmup(data, tolerance=0.0, standard_errors=STANDARD_ERRORS).iterations
    wide = detect_warmup(data, tolerance=0.05).iterations
    assert narrow >= default >= wide == 0


# --------------------------------------------------------------------------------------------
# Properties

times = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(4, 24)),
    elements=st.floats(1e3, 1e9, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=100, deadline=None)
@given(data=times, tolerance=st.floats(0.0, 0.5))
def test_the_result_is_within_its_bounds(data: np.ndarray, tolerance: float) -> None:
    w = detect_warmup(data, tolerance=tolerance)
    n = data.shape[1]
    assert 0 <= w.iterations <= n // 2
    assert len(w.profile) == n
    assert all(math.isfinite(p) for p in w.profile)
    assert (w.slowdown == 1.0) if w.iterations == 0 else (w.slowdown > 0)


@settings(max_examples=100, deadline=None)
@given(
    data=times,
    run_factors=st.lists(st.integers(-4, 4), min_size=8, max_size=8),
    tolerance=st.floats(1e-3, 0.5),
)
def test_a_run_effect_changes_nothing(
    data: np.ndarray, run_factors: list[int], tolerance: float
) -> None:
    # Each run centred on its own steady level: a per-run speed factor (a power of 2, so the
    # scaling itself is exact) leaves the profile and the decision as they were.
    scale = np.exp2(np.array(run_factors[: data.shape[0]], dtype=np.float64))[:, None]
    plain = detect_warmup(data, tolerance=tolerance)
    scaled = detect_warmup(data * scale, tolerance=tolerance)
    assert scaled.profile == pytest.approx(plain.profile, abs=1e-9)
    assert scaled.iterations == plain.iterations
    assert scaled.trending == plain.trending
