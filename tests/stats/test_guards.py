"""The statistical guards of issue 12 (docs/statistics.md, "Winsorization with few iterations"
and "Coverage"): winsorization must not manufacture verdicts, and the 99% A/A interval of the
default analysis (``expanded``, 10 runs) must contain 1 in at least 98% of A/A data sets at every
iteration count (in practice: at least 97% over 1,000 seeded data sets, see the test). Fixed
seeds throughout; ``benchmarks/aa_guards.py`` measures the same with more
trials, more models and every R."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest

from duet_stats import MIN_ITERATIONS, duet_ratio, winsorize_run, winsorize_runs
from duet_stats._typing import IntervalMethod
from duet_stats.intervals import (
    _f_survival_paulson,
    expanded_confidence,
    f_survival,
    t_quantile_two_sided,
    t_two_sided_p,
)
from tests.stats.synthetic import make_duet_data, make_noisy_cpu_aa

THRESHOLD = 0.02


def _regression(ratio: float, low: float | None) -> bool:
    """duet_bench.analysis.verdict's regression rule (stats does not import duet_bench)."""
    assert low is not None
    return low > 1.0 and ratio >= 1.0 + THRESHOLD


# --- the 5 runs x 5 iterations case ------------------------------------------------------------

#: A/A data with a noisy CPU (seed found by search): the paper's rule replaces one log ratio in
#: each of the 5 runs, always the run's "noisy" tail, which moves 0.979 [0.903, 1.035] to
#: 1.044 [1.007, 1.090], a regression that is not there (percentile interval).
FIVE_BY_FIVE_SEED = 516


@pytest.mark.parametrize("method", ["percentile", "expanded"])
def test_five_by_five_no_longer_becomes_a_regression(method: IntervalMethod) -> None:
    a, b = make_noisy_cpu_aa(np.random.default_rng(FIVE_BY_FIVE_SEED), 5, 5)

    def est(
        winsorize: bool = True, min_iterations: int = MIN_ITERATIONS
    ) -> tuple[float, float | None, float | None, int]:
        e = duet_ratio(
            a,
            b,
            method=method,
            winsorize=winsorize,
            winsorize_min_iterations=min_iterations,
            rng=np.random.default_rng(0),
        )
        return e.ratio, e.ci_low, e.ci_high, e.winsorized

    paper = est(min_iterations=3)
    assert paper[3] == 5  # one value in every run
    assert _regression(paper[0], paper[1])  # what the unguarded rule did

    guarded = est()  # the default guard
    assert guarded == est(winsorize=False)
    assert guarded[3] == 0
    assert not _regression(guarded[0], guarded[1])
    assert guarded[1] is not None
    assert guarded[2] is not None
    assert guarded[1] < 1.0 < guarded[2]


# --- the guard itself --------------------------------------------------------------------------


def _blatant(n: int) -> list[float]:
    return [*map(float, range(n - 1)), 1000.0]  # 1000 lies far outside 0..n-2


def test_runs_shorter_than_the_guard_are_left_alone() -> None:
    short = _blatant(MIN_ITERATIONS - 1)
    out, replaced = winsorize_run(short)
    assert replaced == 0
    np.testing.assert_array_equal(out, short)
    out, replaced = winsorize_runs([short, short])
    assert replaced == 0


def test_runs_of_guard_length_are_winsorized() -> None:
    out, replaced = winsorize_run(_blatant(MIN_ITERATIONS))
    assert replaced == 1
    assert out[-1] == MIN_ITERATIONS - 2


def test_the_guard_is_a_parameter() -> None:
    assert winsorize_run(_blatant(5), min_iterations=5)[1] == 1
    assert winsorize_run(_blatant(5), min_iterations=6)[1] == 0
    a = np.full((5, 4), 1e6)
    b = a.copy()
    b[:, 0] *= 2.0
    assert duet_ratio(a, b, winsorize_min_iterations=3, rng=np.random.default_rng()).winsorized == 5
    assert duet_ratio(a, b, rng=np.random.default_rng()).winsorized == 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: winsorize_run([1.0, 2.0, 3.0], min_iterations=0), "min_iterations must be >= 1"),
        (
            lambda: duet_ratio(
                [[1.0, 2.0]] * 5,
                [[1.0, 2.0]] * 5,
                winsorize_min_iterations=0,
                rng=np.random.default_rng(),
            ),
            "winsorize_min_iterations must be >= 1",
        ),
    ],
)
def test_invalid_guard(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


# --- the A/A promise ---------------------------------------------------------------------------

TRIALS = 1000
RUNS = 10  # duet's default


def _coverage(
    make: Callable[[np.random.Generator, int, int], tuple[np.ndarray, np.ndarray]],
    iterations: int,
    method: IntervalMethod,
) -> float:
    hits = 0
    for trial in range(TRIALS):
        a, b = make(np.random.default_rng([iterations, trial]), RUNS, iterations)
        e = duet_ratio(a, b, method=method, reps=2000, rng=np.random.default_rng(trial))
        assert e.ci_low is not None
        assert e.ci_high is not None
        hits += e.ci_low <= 1.0 <= e.ci_high
    return hits / TRIALS


def _lognormal_aa(rng: np.random.Generator, runs: int, its: int) -> tuple[np.ndarray, np.ndarray]:
    return make_duet_data(rng, runs, its, 1.0)


MODELS = {"lognormal": _lognormal_aa, "noisy-cpu": make_noisy_cpu_aa}


@pytest.mark.slow
@pytest.mark.parametrize("model", list(MODELS))
def test_default_interval_keeps_aa_intervals_around_one_at_every_iteration_count(
    model: str,
) -> None:
    """Expanded interval, guarded winsorization, 10 runs: about 98% or more at every I.

    Measured (docs/statistics.md): 97.4-98.3% on ``lognormal``, 98.4-99.6% on ``noisy-cpu``
    over 1,000 data sets per I; the bound is 97%, below which a true 98% falls with about 1%
    probability at 1,000 trials. The percentile interval, the old default, is about a 96%
    interval here and fails the same bound, which shows the trials can tell the two apart.
    """
    make = MODELS[model]
    expanded = {i: _coverage(make, i, "expanded") for i in (3, 5, 10, 30)}
    assert min(expanded.values()) >= 0.97, expanded
    assert _coverage(make, 3, "percentile") < 0.97


# --- the t quantile of the expanded interval, without scipy -----------------------------------


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99, 0.999, 0.9999])
def test_t_quantile_matches_scipy(level: float) -> None:
    from scipy.special import stdtrit

    for df in [*range(1, 120), 499, 1000, 1999, 2000, 2001, 5000, 10**6]:
        ours = t_quantile_two_sided(level, df)
        theirs = float(stdtrit(df, 0.5 + level / 2.0))
        # The exact series up to 2000 degrees of freedom, the expansion above.
        assert ours == pytest.approx(theirs, rel=1e-11 if df <= 2000 else 1e-8), (df, level)


def test_t_tail_matches_scipy() -> None:
    from scipy.special import stdtr

    for df in [1, 2, 3, 5, 10, 30, 100, 1000, 2000, 2001, 10**5]:
        for t in [0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, -2.0]:
            theirs = 2.0 * float(stdtr(df, -abs(t)))
            # The exact series up to 2000 degrees of freedom, the normal's tail above.
            tolerance = 1e-10 if df <= 2000 else 2e-4
            assert t_two_sided_p(t, df) == pytest.approx(theirs, abs=tolerance), (df, t)


def test_f_tail_without_scipy_stays_near_scipy() -> None:
    # Paulson's approximation (the core install's F tail): worst 0.0049 on this grid, at
    # df1 = 3 far in the left tail; the per-process note reads it near 0.01-0.05.
    from scipy.special import fdtrc

    for df1 in [3, 4, 5, 9, 19, 49, 99]:
        for df2 in [3, 5, 10, 50, 300, 5000]:
            for f in [0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0]:
                theirs = float(fdtrc(df1, df2, f))
                assert _f_survival_paulson(f, df1, df2) == pytest.approx(theirs, abs=0.006)
                assert f_survival(f, df1, df2) == pytest.approx(theirs, rel=1e-12)


def test_expanded_confidence_reference_values() -> None:
    # By hand with scipy: t_{0.995, 9} = 3.2498, sqrt(10/9) * 3.2498 = 3.4256, 2 Phi(-3.4256).
    assert expanded_confidence(0.99, 10) == pytest.approx(1 - 6.133e-4, abs=1e-7)
    assert expanded_confidence(0.99, 1000) == pytest.approx(0.99, abs=2e-4)
    with pytest.raises(ValueError, match="runs must be at least 2"):
        expanded_confidence(0.99, 1)


def test_expanded_interval_does_not_import_scipy() -> None:
    # scipy.special takes 0.5-0.8 s to import here; expanded is every analysis's interval.
    code = (
        "import sys, numpy as np, duet_stats\n"
        "a = np.full((10, 30), 1e6); b = a * np.linspace(0.9, 1.1, 300).reshape(10, 30)\n"
        "duet_stats.duet_ratio(a, b, method='expanded', rng=np.random.default_rng(0))\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_shuffled_interval_can_match_the_duet_interval() -> None:
    # A sync gain divides the shuffled width by the duet width: both must be the same kind of
    # interval, or the default expanded duet interval (about 30% wider at 10 runs) lowers it by
    # about a quarter.
    from duet_stats import shuffled_ratio

    a, b = make_duet_data(np.random.default_rng(3), 10, 20, 1.0)
    plain = shuffled_ratio(a, b, shuffles=5, reps=2000, rng=np.random.default_rng(1))
    wide = shuffled_ratio(
        a, b, shuffles=5, reps=2000, method="expanded", rng=np.random.default_rng(1)
    )
    assert wide.ratio == plain.ratio
    assert 1.15 < wide.width / plain.width < 1.5
    with pytest.raises(ValueError, match="method must be 'percentile' or 'expanded'"):
        shuffled_ratio(a, b, method="bca", rng=np.random.default_rng())
