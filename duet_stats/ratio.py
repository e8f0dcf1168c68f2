"""The duet ratio and its bootstrap confidence interval (duet paper section 3, docs/statistics.md,
method 1).

Both versions run at the same time, one core each, and start every iteration together, so
interference that hits the machine hits both sides of an iteration alike. The estimator works on
the per-iteration ratio ``s[r, i] = b[r, i] / a[r, i]`` (candidate over baseline: above 1 means the
candidate is slower), aggregates it by geometric means within each run and across runs, and puts a
percentile bootstrap interval over runs around the grand geometric mean.

Internally everything is computed on the log scale (``log s = log b - log a``), where the geometric
means are arithmetic means. That makes identical sides give exactly ``log s = 0``, hence a ratio and
interval of exactly 1.0, and makes swapping the sides negate every intermediate value exactly.

The interval methods themselves are in :mod:`duet_stats.intervals` (``Interval`` and
``bootstrap_ci`` are re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from duet_stats._typing import ArrayLike, FloatArray, IntervalMethod
from duet_stats._validate import as_runs, as_vector, check_confidence, check_count, check_rng
from duet_stats.crossover import crossover_runs
from duet_stats.intervals import (
    DEFAULT_CONFIDENCE,
    Interval,
    bootstrap_ci,
    check_method,
    log_interval,
)
from duet_stats.winsor import DEFAULT_FRACTION, MIN_ITERATIONS, _winsorize_rows

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MIN_BOOTSTRAP_RUNS",
    "Interval",
    "RatioEstimate",
    "bootstrap_ci",
    "duet_ratio",
    "grand_geomean",
    "iteration_ratios",
    "run_geomeans",
]


#: Below this many runs a bootstrap over runs is meaningless (docs/statistics.md, method 1): with 4
#: runs there are only 35 distinct resamples. ``duet_ratio`` then reports the point estimate only.
MIN_BOOTSTRAP_RUNS = 5


@dataclass(frozen=True, slots=True)
class RatioEstimate:
    """The duet estimate of candidate time over baseline time.

    Attributes
    ----------
    ratio : float
        Grand geometric mean ``G`` of the per-run geometric means (> 1: candidate slower).
    ci_low, ci_high : float or None
        Bootstrap confidence interval for ``G``; ``None`` when ``runs < MIN_BOOTSTRAP_RUNS``.
    confidence : float
        Confidence level of the interval.
    method : str
        Interval method requested.
    reps : int
        Bootstrap replicates drawn (0 when no interval was computed).
    runs, iterations : int
        Shape of the analysed data.
    winsorized : int
        Number of per-iteration ratios replaced by winsorization (at most one per run).
    run_ratios : ndarray of float64, shape (runs,)
        Per-run geometric means ``g[r]`` (read-only; excluded from equality).
    """

    ratio: float
    ci_low: float | None
    ci_high: float | None
    confidence: float
    method: str
    reps: int
    runs: int
    iterations: int
    winsorized: int
    run_ratios: FloatArray = field(compare=False, repr=False)

    @property
    def width(self) -> float | None:
        """Relative CI width ``ci_high - ci_low`` (duet paper section 4.1), or ``None``."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_high - self.ci_low


def _frozen(array: FloatArray) -> FloatArray:
    array.flags.writeable = False
    return array


def _paired_runs(
    baseline_ns: ArrayLike, candidate_ns: ArrayLike, *, min_runs: int
) -> tuple[FloatArray, FloatArray]:
    a = as_runs(baseline_ns, name="baseline_ns", min_runs=min_runs)
    b = as_runs(candidate_ns, name="candidate_ns", min_runs=min_runs)
    if a.shape != b.shape:
        raise ValueError(
            f"candidate_ns has shape {b.shape} but baseline_ns has shape {a.shape}: duet pairs "
            "iteration i of run r on both sides, so both need the same (runs, iterations)"
        )
    return a, b


def iteration_ratios(baseline_ns: ArrayLike, candidate_ns: ArrayLike) -> FloatArray:
    """Per-iteration ratios ``s[r, i] = b[r, i] / a[r, i]`` of paired iteration times.

    Parameters
    ----------
    baseline_ns, candidate_ns : array_like, shape (runs, iterations)
        Positive finite iteration times of the baseline (A) and the candidate (B), measured
        together: element ``[r, i]`` of both comes from the same barrier-synchronised iteration.

    Returns
    -------
    ndarray of float64, shape (runs, iterations)
        ``candidate / baseline``; above 1 means the candidate was slower.

    Raises
    ------
    ValueError
        If either input is ragged, not 2-D, empty, non-positive or non-finite, or the shapes
        differ.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud",
       ICPE 2020, section 3, step 2 (the paper writes ``x/y``; docs/statistics.md, method 1 fixes
       the direction to candidate over baseline).
    """
    a, b = _paired_runs(baseline_ns, candidate_ns, min_runs=1)
    return b / a


def run_geomeans(ratios: ArrayLike) -> FloatArray:
    """Per-run geometric means ``g[r] = exp(mean_i log s[r, i])``.

    Parameters
    ----------
    ratios : array_like, shape (runs, iterations)
        Positive finite per-iteration ratios.

    Returns
    -------
    ndarray of float64, shape (runs,)

    Raises
    ------
    ValueError
        If ``ratios`` is ragged, not 2-D, empty, non-positive or non-finite.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 3, step 3.
    """
    s = as_runs(ratios, name="ratios", min_runs=1)
    g: FloatArray = np.exp(np.log(s).mean(axis=1))
    return g


def grand_geomean(run_geomeans: ArrayLike) -> float:
    """Grand geometric mean ``G = exp(mean_r log g[r])``, the duet point estimate.

    Parameters
    ----------
    run_geomeans : array_like, shape (runs,)
        Positive finite per-run geometric means.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the input is not 1-D, empty, non-positive or non-finite.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 3, step 4.
    """
    g = as_vector(run_geomeans, name="run_geomeans")
    return float(np.exp(np.log(g).mean()))


def _run_log_ratios(
    log_s: FloatArray, assignment: ArrayLike | None, *, winsorize: bool, min_iterations: int
) -> tuple[FloatArray, int]:
    """Each run's log ratio (winsorized if asked) and the values replaced: the plain run means,
    or with a crossover ``assignment`` the mean of each run's two assignment means."""
    if assignment is not None:
        balanced = crossover_runs(
            log_s,
            assignment,
            winsorize="centred" if winsorize else "off",
            winsorize_min_iterations=min_iterations,
        )
        return np.array(balanced.log_run_ratios), balanced.winsorized
    replaced = 0
    if winsorize:
        log_s, replaced = _winsorize_rows(log_s, DEFAULT_FRACTION, min_iterations)
    return log_s.mean(axis=1), replaced


def duet_ratio(
    baseline_ns: ArrayLike,
    candidate_ns: ArrayLike,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    reps: int = 10_000,
    method: IntervalMethod = "percentile",
    winsorize: bool = True,
    winsorize_min_iterations: int = MIN_ITERATIONS,
    assignment: ArrayLike | None = None,
    rng: np.random.Generator,
) -> RatioEstimate:
    """The duet ratio (candidate over baseline) with its bootstrap confidence interval.

    Computes ``log s[r, i] = log b[r, i] - log a[r, i]``, winsorizes ``log s`` within each run
    (optional, on by default), then the per-run geometric means ``g[r]``, the grand geometric
    mean ``G`` and, with at least ``MIN_BOOTSTRAP_RUNS`` runs, the bootstrap interval of
    :func:`bootstrap_ci`.

    Parameters
    ----------
    baseline_ns, candidate_ns : array_like, shape (runs, iterations)
        Paired positive finite iteration times (ns) of the baseline (A) and the candidate (B);
        at least 2 runs.
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.
    reps : int, default 10_000
        Bootstrap replicates, >= 1.
    method : {"percentile", "bca", "basic", "studentized"}, default "percentile"
        Interval construction, see :func:`bootstrap_ci`.
    winsorize : bool, default True
        Replace at most one per-iteration log ratio per run (:mod:`duet_stats.winsor`, 20% rule),
        in runs of at least ``winsorize_min_iterations`` iterations.
    winsorize_min_iterations : int, default ``duet_stats.winsor.MIN_ITERATIONS``
        Shorter runs are not winsorized: with few iterations the 20% rule replaces a value in
        almost every run and can shift the estimate by more than its interval allows
        (docs/statistics.md, "Winsorization with few iterations"). 3 is the paper's rule
        unguarded.
    assignment : array_like of {0, 1}, shape (runs, iterations), optional
        Crossover (docs/statistics.md, method 1b): the CPU assignment of each iteration; each run
        then weighs its two assignments equally (:func:`duet_stats.crossover.crossover_runs`).
    rng : numpy.random.Generator
        Source of randomness for the bootstrap.

    Returns
    -------
    RatioEstimate
        ``ci_low``/``ci_high`` are ``None`` (and ``reps`` is 0) when there are fewer than
        ``MIN_BOOTSTRAP_RUNS`` runs: the point estimate only, no basis for a verdict.

    Raises
    ------
    ValueError
        On ragged, non-2-D, non-positive or non-finite times, different shapes, fewer than 2
        runs, ``confidence`` outside (0, 1), ``reps < 1`` or an unknown ``method``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    Winsorization is applied to ``log s`` rather than ``s``: it is the series that is averaged,
    and the 20% rule on the log scale treats a ratio of 2 and a ratio of 1/2 alike, so that
    swapping the sides gives exactly the reciprocal estimate. For ratios near 1 the two scales
    differ by second-order terms. Identical sides give ``log s = 0`` everywhere, hence exactly
    ``ratio == ci_low == ci_high == 1.0``.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud",
       ICPE 2020, section 3 (steps 1-5) and section 4 (winsorization, 10,000 replicates, 99%).
    .. [2] S. Senn, "Cross-over Trials in Clinical Research", Wiley 2002, chapter 3 (AB/BA).
    """
    a, b = _paired_runs(baseline_ns, candidate_ns, min_runs=2)
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    min_iterations = check_count(winsorize_min_iterations, name="winsorize_min_iterations")
    method = check_method(method)
    rng = check_rng(rng)
    log_s = np.log(b) - np.log(a)
    log_g, replaced = _run_log_ratios(
        log_s, assignment, winsorize=winsorize, min_iterations=min_iterations
    )
    runs, iterations = log_s.shape
    ci_low = ci_high = None
    if runs >= MIN_BOOTSTRAP_RUNS:
        lo, hi = log_interval(log_g, confidence=confidence, reps=reps, method=method, rng=rng)
        ci_low, ci_high = float(np.exp(lo)), float(np.exp(hi))
    return RatioEstimate(
        ratio=float(np.exp(log_g.mean())),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        method=method,
        reps=reps if ci_low is not None else 0,
        runs=runs,
        iterations=iterations,
        winsorized=replaced,
        run_ratios=_frozen(np.exp(log_g)),
    )
