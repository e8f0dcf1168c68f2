"""Variance components and planning (Kalibera et al., formulas 3-5 and 8; docs/statistics.md, method
5)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_stats import (
    T_QUANTILE_BELOW,
    VarianceComponents,
    ci_half_width,
    optimal_iterations,
    runs_needed,
    variance_components,
)

Z_995 = 2.5758293035489004  # normal 99.5% quantile (tables: 2.5758)
T_995_DF4 = 4.604094871349992  # t 99.5% quantile, 4 degrees of freedom (tables: 4.6041)
T_975_DF9 = 2.262157162798205  # t 97.5% quantile, 9 degrees of freedom (tables: 2.2622)


def components(within: float, between: float) -> VarianceComponents:
    return VarianceComponents(
        within_run_var=within, between_run_var=between, runs=10, iterations=10, grand_mean=0.0
    )


def test_variance_components_of_a_tiny_array() -> None:
    # Runs (1, 2, 3) and (4, 5, 6): within-run variances 1 and 1 -> S_X^2 = 1; run means 2 and
    # 5 -> S_A^2 = ((2 - 3.5)^2 + (5 - 3.5)^2) / (2 - 1) = 4.5; grand mean 3.5.
    vc = variance_components([[1, 2, 3], [4, 5, 6]])
    assert vc == VarianceComponents(
        within_run_var=1.0, between_run_var=4.5, runs=2, iterations=3, grand_mean=3.5
    )


def test_variance_components_unequal_within_variances() -> None:
    # Within: (0, 2) -> 2, (1, 1) -> 0, (3, 7) -> 8: mean 10/3. Run means 1, 1, 5 -> mean 7/3,
    # S_A^2 = ((4/3)^2 + (4/3)^2 + (8/3)^2) / 2 = 16/3.
    vc = variance_components([[0.0, 2.0], [1.0, 1.0], [3.0, 7.0]])
    assert vc.within_run_var == pytest.approx(10.0 / 3.0, rel=1e-15)
    assert vc.between_run_var == pytest.approx(16.0 / 3.0, rel=1e-15)
    assert vc.grand_mean == pytest.approx(7.0 / 3.0, rel=1e-15)


def test_variance_components_accept_negative_log_ratios() -> None:
    vc = variance_components(np.log([[0.5, 2.0], [1.0, 1.0]]))
    assert vc.within_run_var == pytest.approx(math.log(2.0) ** 2 * 2 / 2, rel=1e-14)
    assert vc.between_run_var == 0.0


def test_formula_5_normal_quantile() -> None:
    # k = 10, n = 3: kn = 30, normal quantile; sqrt((3 * 4.5 + 1) / 30).
    vc = components(within=1.0, between=4.5)
    expected = Z_995 * math.sqrt((3 * 4.5 + 1.0) / 30.0)
    assert ci_half_width(vc, runs=10, iterations=3) == pytest.approx(expected, rel=1e-12)


def test_formula_5_t_quantile_when_kn_is_small() -> None:
    # k = 2, n = 3: kn = 6 < 30, t quantile with k(n - 1) = 4 degrees of freedom.
    vc = components(within=1.0, between=4.5)
    expected = T_995_DF4 * math.sqrt((3 * 4.5 + 1.0) / 6.0)
    assert ci_half_width(vc, runs=2, iterations=3) == pytest.approx(expected, rel=1e-9)
    # One iteration per run: k(n - 1) = 0, so k - 1 = 9 degrees of freedom.
    expected_95 = T_975_DF9 * math.sqrt((4.5 + 1.0) / 10.0)
    assert ci_half_width(vc, runs=10, iterations=1, confidence=0.95) == pytest.approx(
        expected_95, rel=1e-9
    )


def test_two_iterations_per_run_have_k_degrees_of_freedom() -> None:
    # k = 3, n = 2: k(n - 1) = 3 degrees of freedom (not the k - 1 = 2 of one iteration per run).
    from scipy.special import stdtrit

    vc = components(within=1.0, between=4.5)
    expected = float(stdtrit(3, 0.995)) * math.sqrt((2 * 4.5 + 1.0) / 6.0)
    assert ci_half_width(vc, runs=3, iterations=2) == pytest.approx(expected, rel=1e-9)


def test_t_cut_is_at_thirty_samples() -> None:
    assert T_QUANTILE_BELOW == 30
    vc = components(within=1.0, between=0.0)
    below = ci_half_width(vc, runs=29, iterations=1)
    at = ci_half_width(vc, runs=30, iterations=1)
    assert below / math.sqrt(1.0 / 29.0) > Z_995  # t quantile
    assert at == pytest.approx(Z_995 * math.sqrt(1.0 / 30.0), rel=1e-12)


def test_formula_8_optimal_iterations() -> None:
    vc = components(within=1.0, between=4.5)
    assert optimal_iterations(vc, run_cost_iterations=18.0) == 2  # sqrt(18 / 4.5) = 2 exactly
    assert optimal_iterations(vc, run_cost_iterations=20.0) == 3  # sqrt(4.44) = 2.11 -> 3
    assert optimal_iterations(vc, run_cost_iterations=0.0) == 1  # clamped up
    wide = components(within=1e6, between=1e-6)
    assert optimal_iterations(wide, run_cost_iterations=100.0, max_iterations=500) == 500
    huge = components(within=1e300, between=1e-300)
    assert optimal_iterations(huge, run_cost_iterations=1e10) == 10_000  # overflow -> cap
    flat = components(within=1.0, between=0.0)
    assert optimal_iterations(flat, run_cost_iterations=5.0, max_iterations=77) == 77


def test_runs_needed_solves_formula_5() -> None:
    # per run (100 * 1e-4 + 1e-2) / 100 = 2e-4; k >= z^2 * 2e-4 / (1e-3)^2 = 1326.97 -> 1327.
    vc = components(within=1e-2, between=1e-4)
    k = runs_needed(vc, iterations=100, half_width=1e-3)
    assert k == 1327
    assert ci_half_width(vc, runs=k, iterations=100) <= 1e-3
    assert ci_half_width(vc, runs=k - 1, iterations=100) > 1e-3


def test_runs_needed_with_the_t_quantile() -> None:
    vc = components(within=1.0, between=0.5)
    k = runs_needed(vc, iterations=2, half_width=1.0)
    brute = next(r for r in range(2, 10_000) if ci_half_width(vc, runs=r, iterations=2) <= 1.0)
    assert k == brute
    assert k * 2 < T_QUANTILE_BELOW  # the t branch was exercised


def test_runs_needed_bounds() -> None:
    assert runs_needed(components(0.0, 0.0), iterations=10, half_width=0.01) == 2
    assert runs_needed(components(1.0, 1.0), iterations=10, half_width=1e-9, max_runs=50) == 50


@settings(max_examples=80, deadline=None)
@given(
    within=st.floats(1e-8, 1e2),
    between=st.floats(0.0, 1e2),
    iterations=st.integers(1, 200),
    half_width=st.floats(1e-2, 1e1),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_runs_needed_is_the_smallest_sufficient_k(
    within: float, between: float, iterations: int, half_width: float, confidence: float
) -> None:
    vc = components(within, between)
    cap = 10**6
    k = runs_needed(
        vc, iterations=iterations, half_width=half_width, confidence=confidence, max_runs=cap
    )
    assert 2 <= k <= cap
    if k < cap:  # at the cap the target may be out of reach
        width = ci_half_width(vc, runs=k, iterations=iterations, confidence=confidence)
        assert width <= half_width
    if k > 2:
        smaller = ci_half_width(vc, runs=k - 1, iterations=iterations, confidence=confidence)
        assert smaller > half_width


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: variance_components([[1.0, 2.0]]), r"at least 2 run\(s\)"),
        (lambda: variance_components([[1.0], [2.0]]), r"at least 2 iteration\(s\)"),
        (lambda: variance_components([[1.0, 2.0], [3.0]]), "samples is ragged"),
        (lambda: variance_components([1.0, 2.0]), "samples must be a 2-D array"),
        (lambda: variance_components([[1.0, np.inf], [1.0, 2.0]]), "finite"),
        (lambda: ci_half_width(components(1, 1), runs=1, iterations=5), "runs must be >= 2"),
        (lambda: ci_half_width(components(1, 1), runs=5, iterations=0), "iterations must be"),
        (
            lambda: ci_half_width(components(1, 1), runs=5, iterations=5, confidence=1.0),
            "confidence must be strictly between 0 and 1",
        ),
        (lambda: ci_half_width(components(-1, 1), runs=5, iterations=5), "within_run_var"),
        (
            lambda: ci_half_width(components(1, math.nan), runs=5, iterations=5),
            "between_run_var",
        ),
        (
            lambda: optimal_iterations(components(1, 1), run_cost_iterations=-1.0),
            "run_cost_iterations must be a finite number >= 0",
        ),
        (
            lambda: optimal_iterations(components(1, 1), run_cost_iterations=1, max_iterations=0),
            "max_iterations must be >= 1",
        ),
        (
            lambda: runs_needed(components(1, 1), iterations=5, half_width=0.0),
            "half_width must be a finite number > 0",
        ),
        (
            lambda: runs_needed(components(1, 1), iterations=5, half_width=0.1, max_runs=1),
            "max_runs must be >= 2",
        ),
        (
            lambda: runs_needed(components(1, 1), iterations=0, half_width=0.1),
            "iterations must be >= 1",
        ),
    ],
)
def test_invalid_arguments(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_components_must_be_variance_components() -> None:
    with pytest.raises(TypeError, match="components must be a VarianceComponents"):
        ci_half_width((1.0, 1.0), runs=5, iterations=5)  # type: ignore[arg-type]  # on purpose


def test_small_experiments_are_planned_without_scipy() -> None:
    # The core install has no scipy, and every inconclusive analysis plans its runs: a CI job's
    # 5 runs of 3 iterations read the t quantile here and once failed for want of scipy.
    from scipy.special import stdtrit

    code = (
        "import sys\n"
        "sys.modules['scipy'] = None  # any import of scipy raises ImportError\n"
        "from duet_stats.planning import VarianceComponents, ci_half_width, runs_needed\n"
        "vc = VarianceComponents(\n"
        "    within_run_var=1.0, between_run_var=4.5, runs=10, iterations=10, grand_mean=0.0\n"
        ")\n"
        "print(repr(ci_half_width(vc, runs=3, iterations=2)))\n"
        "print(runs_needed(vc, iterations=3, half_width=3.0))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    half_width, runs = done.stdout.split()
    expected = float(stdtrit(3, 0.995)) * math.sqrt((2 * 4.5 + 1.0) / 6.0)
    assert float(half_width) == pytest.approx(expected, rel=1e-9)
    assert 2 <= int(runs) < 10
