"""The duet ratio and its interval (duet paper section 3, docs/statistics.md, method 1)."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from duet_stats import (
    MIN_BOOTSTRAP_RUNS,
    Interval,
    RatioEstimate,
    bootstrap_ci,
    duet_ratio,
    grand_geomean,
    iteration_ratios,
    run_geomeans,
)
from duet_stats._resample import percentile_bounds, uniform_indices
from duet_stats._typing import IntervalMethod
from tests.stats.synthetic import make_duet_data


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- reference values by hand ------------------------------------------------------------------


def test_iteration_ratios_candidate_over_baseline() -> None:
    a = [[100, 200, 400], [50, 50, 50]]
    b = [[150, 100, 400], [100, 25, 50]]
    s = iteration_ratios(a, b)
    assert s.dtype == np.float64
    np.testing.assert_array_equal(s, [[1.5, 0.5, 1.0], [2.0, 0.5, 1.0]])


def test_geometric_means_of_a_2x3_array() -> None:
    # run 0: (2 * 8 * 0.5)^(1/3) = 2; run 1: 3; G = sqrt(2 * 3)
    g = run_geomeans([[2.0, 8.0, 0.5], [3.0, 3.0, 3.0]])
    np.testing.assert_allclose(g, [2.0, 3.0], rtol=1e-15)
    assert grand_geomean(g) == pytest.approx(math.sqrt(6.0), rel=1e-15)


def test_duet_ratio_by_hand_without_winsorization() -> None:
    a = np.full((2, 3), 100.0)
    b = a * [[1.0, 2.0, 4.0], [1.0, 1.0, 1.0]]
    est = duet_ratio(a, b, winsorize=False, rng=rng())
    assert est.ratio == pytest.approx(math.sqrt(2.0), rel=1e-15)
    np.testing.assert_allclose(est.run_ratios, [2.0, 1.0], rtol=1e-15)
    assert (est.ci_low, est.ci_high, est.width, est.reps) == (None, None, None, 0)
    assert (est.runs, est.iterations, est.winsorized) == (2, 3, 0)


def test_duet_ratio_winsorizes_log_ratios() -> None:
    # Run 0 has log ratios 0, ln 2, 3 ln 2: both extremes qualify (ln 2 > 0.2 * 2 ln 2 and
    # 2 ln 2 > 0.2 * ln 2); the high one lies further out and is replaced by ln 2, so
    # g0 = 2^(2/3) instead of 2^(4/3). Run 1 is constant: untouched.
    a = np.full((2, 3), 100.0)
    b = a * [[1.0, 2.0, 8.0], [1.0, 1.0, 1.0]]
    # 3 iterations: below the guard, so the paper's rule is asked for explicitly.
    est = duet_ratio(a, b, winsorize_min_iterations=3, rng=rng())
    assert est.winsorized == 1
    np.testing.assert_allclose(est.run_ratios, [2.0 ** (2 / 3), 1.0], rtol=1e-14)
    assert est.ratio == pytest.approx(2.0 ** (1 / 3), rel=1e-14)
    plain = duet_ratio(a, b, winsorize=False, rng=rng())
    assert plain.ratio == pytest.approx(2.0 ** (2 / 3), rel=1e-14)


def test_percentile_interval_of_two_runs_by_hand() -> None:
    # With g = (1, 4), G* is 1, 2 or 4 with probabilities 1/4, 1/2, 1/4: the 0.5% and 99.5%
    # quantiles of 10,000 replicates are 1 and 4 exactly.
    ci = bootstrap_ci([1.0, 4.0], rng=rng())
    assert (ci.low, ci.high) == (1.0, 4.0)
    assert (ci.confidence, ci.method, ci.reps) == (0.99, "percentile", 10_000)
    assert ci.width == 3.0


def test_percentile_interval_of_three_runs_by_hand() -> None:
    # g = (1, 1, 8): G* = 8^(j/3), j ~ Binomial(3, 1/3); P(j = 0) = 8/27, P(j = 3) = 1/27, so the
    # 0.5% quantile is 1 and the 99.5% quantile is 8.
    ci = bootstrap_ci([1.0, 1.0, 8.0], rng=rng(3))
    assert ci.low == 1.0
    assert ci.high == pytest.approx(8.0, rel=1e-14)
    # At 90% the upper quantile is 4 = 8^(2/3) (P(j >= 2) = 7/27 > 5%, P(j = 3) < 5%).
    ci90 = bootstrap_ci([1.0, 1.0, 8.0], confidence=0.9, rng=rng(3))
    assert ci90.high == pytest.approx(4.0, rel=1e-14)


def test_percentile_bounds_are_the_two_tail_quantiles() -> None:
    # 0, 1, ..., 1000 in any order: the (1 - c)/2 and (1 + c)/2 quantiles are 1000 times them.
    replicates = np.random.default_rng(5).permutation(np.arange(1001.0))
    for confidence, expected in ((0.9, (50.0, 950.0)), (0.99, (5.0, 995.0)), (0.5, (250, 750))):
        assert percentile_bounds(replicates, confidence) == pytest.approx(expected, rel=1e-12)


# --- exactness, determinism, records -----------------------------------------------------------


@pytest.mark.parametrize("runs", [2, 4, 5, 30])
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_identical_sides_give_exactly_one(runs: int, method: IntervalMethod) -> None:
    a = rng(runs).lognormal(16.0, 0.3, size=(runs, 7))
    est = duet_ratio(a, a.copy(), method=method, rng=rng())
    assert est.ratio == 1.0
    if runs >= MIN_BOOTSTRAP_RUNS:
        assert (est.ci_low, est.ci_high) == (1.0, 1.0)
    np.testing.assert_array_equal(est.run_ratios, np.ones(runs))


def test_same_seed_same_interval() -> None:
    a, b = make_duet_data(rng(1), 12, 20, 1.02)
    first = duet_ratio(a, b, rng=rng(42))
    again = duet_ratio(a, b, rng=rng(42))
    other = duet_ratio(a, b, rng=rng(43))
    assert first == again
    assert first.ratio == other.ratio
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)


def test_min_bootstrap_runs_boundary() -> None:
    a, b = make_duet_data(rng(2), MIN_BOOTSTRAP_RUNS, 10, 1.1)
    below = duet_ratio(a[:-1], b[:-1], rng=rng())
    at = duet_ratio(a, b, reps=500, rng=rng())
    assert below.ci_low is None
    assert below.ci_high is None
    assert below.width is None
    assert below.reps == 0
    assert at.ci_low is not None
    assert at.ci_high is not None
    assert at.ci_low <= at.ratio <= at.ci_high
    assert at.reps == 500
    assert at.width == pytest.approx(at.ci_high - at.ci_low)


def test_records_are_frozen_and_the_array_read_only() -> None:
    a, b = make_duet_data(rng(3), 6, 5, 1.0)
    est = duet_ratio(a, b, reps=100, rng=rng())
    assert isinstance(est, RatioEstimate)
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.ratio = 2.0  # type: ignore[misc]  # writing a frozen field is the test
    with pytest.raises(ValueError, match="read-only"):
        est.run_ratios[0] = 2.0
    assert est.run_ratios.dtype == np.float64
    assert not hasattr(est, "__dict__")  # slots
    ci = bootstrap_ci(est.run_ratios, reps=100, rng=rng())
    assert isinstance(ci, Interval)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ci.low = 0.0  # type: ignore[misc]  # writing a frozen field is the test


def test_many_blocks_and_odd_rep_counts() -> None:
    # 3,000 runs make blocks of 10 replicates: 1,001 replicates span 101 blocks.
    a, b = make_duet_data(rng(4), 3000, 2, 1.05)
    est = duet_ratio(a, b, reps=1001, rng=rng())
    assert est.ci_low is not None
    assert est.ci_high is not None
    assert est.ci_low < 1.05 < est.ci_high
    assert est.ci_low < est.ratio < est.ci_high


def test_more_runs_than_the_fast_draw_handles() -> None:
    g = rng(5).lognormal(0.0, 0.1, size=70_000)
    ci = bootstrap_ci(g, reps=20, rng=rng())
    assert ci.low < grand_geomean(g) < ci.high


def test_uniform_indices_are_uniform() -> None:
    draws = uniform_indices(rng(6), 7, (700_000,))
    assert draws.min() == 0
    assert draws.max() == 6
    counts = np.bincount(draws, minlength=7)
    # Binomial(700000, 1/7): sd about 293; allow 5 sd.
    assert np.all(np.abs(counts - 100_000) < 5 * 293)
    varying = uniform_indices(rng(7), np.array([[2], [5]], dtype=np.uint64), (2, 50_000))
    assert set(np.unique(varying[0])) == {0, 1}
    assert set(np.unique(varying[1])) == {0, 1, 2, 3, 4}


# --- coverage (asv's _check_ci) ----------------------------------------------------------------


def test_coverage_of_the_99_percent_interval() -> None:
    """400 seeded trials, 30 runs x 20 iterations, 2,000 replicates each (not 10,000: speed).

    The percentile bootstrap over runs is a little narrow for few runs (it uses the plug-in
    variance and normal-like tails); at 30 runs the 99% interval should cover 97.5-100%.
    """
    true_ratio = 1.05
    hits = 0
    for seed in range(400):
        generator = np.random.default_rng([30, seed])
        a, b = make_duet_data(generator, 30, 20, true_ratio)
        est = duet_ratio(a, b, reps=2000, rng=generator)
        assert est.ci_low is not None
        assert est.ci_high is not None
        hits += est.ci_low <= true_ratio <= est.ci_high
    assert 0.975 <= hits / 400 <= 1.0


# --- hypothesis properties ---------------------------------------------------------------------

times = hnp.arrays(
    np.float64,
    st.tuples(st.integers(2, 8), st.integers(1, 6)),
    elements=st.floats(1e3, 1e9, allow_nan=False, allow_infinity=False),
)


def _same_shape_pair(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    a = draw(times)
    b = draw(hnp.arrays(np.float64, a.shape, elements=st.floats(1e3, 1e9, allow_infinity=False)))
    return a, b


@st.composite
def pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    return _same_shape_pair(draw)


def _close(x: float | None, y: float | None, rel: float = 1e-9) -> bool:
    assert x is not None
    assert y is not None
    return math.isclose(x, y, rel_tol=rel)


@settings(max_examples=60, deadline=None)
@given(pair=pairs(), scale=st.floats(1e-3, 1e3), seed=st.integers(0, 2**32 - 1))
def test_scaling_both_sides_changes_nothing(
    pair: tuple[np.ndarray, np.ndarray], scale: float, seed: int
) -> None:
    # Without winsorization: on arbitrary data a value can sit exactly at the 20% threshold,
    # where the rounding of a scaled copy may tip the decision (tested below on generic data).
    a, b = pair
    base = duet_ratio(a, b, reps=200, winsorize=False, rng=rng(seed))
    scaled = duet_ratio(a * scale, b * scale, reps=200, winsorize=False, rng=rng(seed))
    assert _close(base.ratio, scaled.ratio)
    if base.ci_low is not None:
        assert _close(base.ci_low, scaled.ci_low)
        assert _close(base.ci_high, scaled.ci_high)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(1e-3, 1e3),
    runs=st.integers(5, 12),
    iterations=st.integers(3, 12),
)
def test_scaling_with_winsorization_on_generic_data(
    seed: int, scale: float, runs: int, iterations: int
) -> None:
    # The paper's rule at every length (3): these short runs are below the default guard.
    a, b = make_duet_data(rng(seed), runs, iterations, 1.03, own_sd=0.2)
    base = duet_ratio(a, b, reps=200, winsorize_min_iterations=3, rng=rng(seed))
    scaled = duet_ratio(a * scale, b * scale, reps=200, winsorize_min_iterations=3, rng=rng(seed))
    assert base.winsorized == scaled.winsorized
    assert _close(base.ratio, scaled.ratio)
    assert _close(base.ci_low, scaled.ci_low)
    assert _close(base.ci_high, scaled.ci_high)


@settings(max_examples=60, deadline=None)
@given(pair=pairs(), seed=st.integers(0, 2**32 - 1), winsorize=st.booleans())
def test_swapping_sides_inverts_ratio_and_interval(
    pair: tuple[np.ndarray, np.ndarray], seed: int, winsorize: bool
) -> None:
    a, b = pair
    # The paper's rule at every length (3): the drawn runs are below the default guard.
    forward = duet_ratio(
        a, b, reps=200, winsorize=winsorize, winsorize_min_iterations=3, rng=rng(seed)
    )
    backward = duet_ratio(
        b, a, reps=200, winsorize=winsorize, winsorize_min_iterations=3, rng=rng(seed)
    )
    assert forward.winsorized == backward.winsorized
    assert _close(backward.ratio, 1.0 / forward.ratio)
    if forward.ci_low is not None:
        assert forward.ci_high is not None
        assert _close(backward.ci_low, 1.0 / forward.ci_high)
        assert _close(backward.ci_high, 1.0 / forward.ci_low)


@settings(max_examples=60, deadline=None)
@given(a=times, seed=st.integers(0, 2**32 - 1))
def test_identical_sides_exactly_one_property(a: np.ndarray, seed: int) -> None:
    est = duet_ratio(a, a, reps=100, winsorize_min_iterations=3, rng=rng(seed))
    assert est.ratio == 1.0
    assert est.winsorized == 0
    if est.ci_low is not None:
        assert (est.ci_low, est.ci_high) == (1.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(
    g=hnp.arrays(np.float64, st.integers(2, 40), elements=st.floats(0.5, 2.0)),
    seed=st.integers(0, 2**32 - 1),
)
def test_percentile_interval_brackets_the_estimate(g: np.ndarray, seed: int) -> None:
    ci = bootstrap_ci(g, reps=300, rng=rng(seed))
    point = grand_geomean(g)
    tol = 1e-12 * point
    assert g.min() - tol <= ci.low <= point + tol
    assert point - tol <= ci.high <= g.max() + tol


# --- other interval methods --------------------------------------------------------------------


def test_bca_brackets_the_estimate_and_is_near_percentile() -> None:
    a, b = make_duet_data(rng(8), 20, 10, 0.97)
    bca = duet_ratio(a, b, method="bca", rng=rng(9))
    pct = duet_ratio(a, b, rng=rng(9))
    assert bca.method == "bca"
    assert bca.ci_low is not None
    assert bca.ci_high is not None
    assert pct.ci_low is not None
    assert pct.ci_high is not None
    assert pct.width is not None
    assert bca.ci_low < bca.ratio < bca.ci_high
    assert abs(bca.ci_low - pct.ci_low) < 0.2 * pct.width
    assert abs(bca.ci_high - pct.ci_high) < 0.2 * pct.width


def test_arch_cross_check_of_the_percentile_interval() -> None:
    arch_bootstrap = pytest.importorskip(
        "arch.bootstrap", reason="arch is an optional extra: pip install 'duet-bench[arch]'"
    )
    a, b = make_duet_data(rng(10), 30, 20, 1.02)
    ours = duet_ratio(a, b, rng=rng(11))
    assert ours.ci_low is not None
    assert ours.ci_high is not None
    assert ours.width is not None

    def geomean(x: np.ndarray) -> np.ndarray:
        return np.atleast_1d(np.exp(np.mean(np.log(x))))

    bs = arch_bootstrap.IIDBootstrap(ours.run_ratios, seed=np.random.default_rng(12))
    low, high = bs.conf_int(geomean, reps=10_000, method="percentile", size=0.99)[:, 0]
    # Independent implementations and random streams: the bounds agree within bootstrap noise
    # (the 0.5% quantile of 10,000 replicates has a standard error of ~1% of the width).
    assert abs(low - ours.ci_low) < 0.05 * ours.width
    assert abs(high - ours.ci_high) < 0.05 * ours.width


def test_the_basic_interval_reflects_the_percentile_one_and_studentized_differs() -> None:
    """The basic interval is the percentile interval of the same replicates reflected about the
    estimate, ``[2m - q_hi, 2m - q_lo]`` (arch draws both from one seed); the studentized one
    is not. Before the slower arch tests, so that a broken dispatch fails fast."""
    arch_bootstrap = pytest.importorskip(
        "arch.bootstrap", reason="arch is an optional extra: pip install 'duet-bench[arch]'"
    )
    from duet_stats.intervals import log_interval

    log_g = np.log([1.01, 1.03, 0.99, 1.05, 1.02, 1.0, 1.04, 1.08])
    m = float(log_g.mean())

    def mean(x: np.ndarray) -> np.ndarray:
        return np.atleast_1d(np.mean(x))

    reference = arch_bootstrap.IIDBootstrap(log_g, seed=rng(21))
    q_lo, q_hi = reference.conf_int(mean, reps=400, method="percentile", size=0.9)[:, 0]
    basic = log_interval(log_g, confidence=0.9, reps=400, method="basic", rng=rng(21))
    assert basic == pytest.approx((2 * m - q_hi, 2 * m - q_lo), rel=1e-12)
    student = log_interval(log_g, confidence=0.9, reps=400, method="studentized", rng=rng(21))
    assert student[0] < m < student[1]
    assert student != pytest.approx(basic, rel=1e-6)


@pytest.mark.parametrize("method", ["basic", "studentized"])
def test_arch_methods_run(method: IntervalMethod) -> None:
    pytest.importorskip(
        "arch.bootstrap", reason="arch is an optional extra: pip install 'duet-bench[arch]'"
    )
    a, b = make_duet_data(rng(13), 15, 10, 1.1)
    est = duet_ratio(a, b, method=method, reps=2000, rng=rng(14))
    pct = duet_ratio(a, b, reps=2000, rng=rng(14))
    assert est.method == method
    assert est.ci_low is not None
    assert est.ci_high is not None
    assert pct.width is not None
    assert est.width is not None
    assert est.ci_low < est.ratio < est.ci_high
    assert 0.5 * pct.width < est.width < 2.0 * pct.width


def test_missing_arch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail as if arch were not installed.
    monkeypatch.setitem(sys.modules, "arch", None)
    monkeypatch.setitem(sys.modules, "arch.bootstrap", None)
    with pytest.raises(ImportError, match=r"pip install 'duet-bench\[arch\]'"):
        bootstrap_ci([1.0, 1.1, 1.2], method="basic", rng=rng())


# --- argument checks ---------------------------------------------------------------------------

GOOD = np.full((5, 3), 1e6)


def _ratio(**kw: object) -> Callable[[], object]:
    args: dict[str, object] = {"baseline_ns": GOOD, "candidate_ns": GOOD, "rng": rng()}
    args.update(kw)
    return lambda: duet_ratio(**args)  # type: ignore[arg-type]  # deliberately bad arguments


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (_ratio(baseline_ns=[[1.0, 2.0], [3.0]]), "baseline_ns is ragged"),
        (_ratio(candidate_ns=[1.0, 2.0, 3.0]), "candidate_ns must be a 2-D array"),
        (_ratio(baseline_ns=np.ones((2, 2, 2))), "baseline_ns must be a 2-D array.*3-D"),
        (_ratio(baseline_ns=GOOD[:1], candidate_ns=GOOD[:1]), "at least 2 run"),
        (_ratio(baseline_ns=np.ones((5, 0)), candidate_ns=np.ones((5, 0))), "at least 1 iter"),
        (_ratio(baseline_ns=np.where(np.eye(5, 3) > 0, 0.0, 1e6)), "baseline_ns must hold pos"),
        (_ratio(candidate_ns=-GOOD), r"candidate_ns .*run 0, iteration 0: -1000000\.0"),
        (_ratio(candidate_ns=np.where(np.eye(5, 3) > 0, np.nan, 1e6)), "finite"),
        (_ratio(baseline_ns=np.full((5, 3), np.inf)), "finite"),
        (_ratio(baseline_ns=[["a", "b"], ["c", "d"]]), "baseline_ns must be an array of numbers"),
        (_ratio(candidate_ns=np.ones((5, 4))), r"candidate_ns has shape \(5, 4\) but baseline"),
        (_ratio(confidence=1.0), "confidence must be strictly between 0 and 1"),
        (_ratio(confidence=0.0), "confidence must be strictly between 0 and 1"),
        (_ratio(confidence=float("nan")), "confidence must be strictly between 0 and 1"),
        (_ratio(reps=0), "reps must be >= 1"),
        (_ratio(reps=2.5), "reps must be an integer"),
        (_ratio(reps=True), "reps must be an integer"),
        (_ratio(method="jackknife"), "method must be one of"),
        (lambda: iteration_ratios(GOOD, GOOD[:4]), "same"),
        (lambda: run_geomeans([[1.0, 0.0]]), "ratios must hold positive"),
        (lambda: grand_geomean([]), "run_geomeans needs at least 1"),
        (lambda: grand_geomean([[1.0]]), "run_geomeans must be 1-D"),
        (lambda: bootstrap_ci([1.0], rng=rng()), "run_geomeans needs at least 2"),
        (lambda: bootstrap_ci([1.0, -1.0], rng=rng()), "run_geomeans must hold positive"),
        (lambda: bootstrap_ci([1.0, 2.0], confidence=1.5, rng=rng()), "confidence"),
        (lambda: bootstrap_ci([1.0, 2.0], reps=-1, rng=rng()), "reps"),
    ],
)
def test_invalid_arguments(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_rng_must_be_a_generator() -> None:
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        duet_ratio(GOOD, GOOD, rng=42)  # type: ignore[arg-type]  # wrong type on purpose
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        bootstrap_ci([1.0, 2.0], rng=np.random.RandomState(0))  # type: ignore[arg-type]  # wrong type on purpose


def test_ragged_message_lists_run_lengths() -> None:
    with pytest.raises(ValueError, match=r"run lengths: 3, 2, 3"):
        duet_ratio([[1, 2, 3], [1, 2], [1, 2, 3]], [[1, 2, 3]] * 3, rng=rng())


def test_expanded_interval_holds_its_level_with_ten_runs() -> None:
    """The expanded percentile interval keeps 99% coverage at R = 10 where the plain
    percentile interval falls to about 96% (docs/statistics.md)."""
    from duet_stats.intervals import expanded_confidence
    from duet_stats.ratio import duet_ratio

    assert expanded_confidence(0.99, 10) > 0.999
    assert expanded_confidence(0.99, 1000) == pytest.approx(0.99, abs=2e-4)
    rng = np.random.default_rng(7)
    hits = 0
    trials = 400
    for _ in range(trials):
        run = rng.lognormal(0, 0.1, size=(10, 1))
        shared = rng.lognormal(0, 0.05, size=(10, 30))
        a = 1e7 * run * shared * rng.lognormal(0, 0.02, size=(10, 30))
        b = 1.05e7 * run * shared * rng.lognormal(0, 0.02, size=(10, 30))
        est = duet_ratio(a, b, confidence=0.99, reps=2000, method="expanded", rng=rng)
        assert est.ci_low is not None
        assert est.ci_high is not None
        hits += est.ci_low <= 1.05 <= est.ci_high
    assert 0.975 <= hits / trials <= 1.0
