"""The two baselines duet is judged against (docs/statistics.md, method 4; duet paper, sections
4.1-4.2).

*Shuffled duet* keeps everything of the duet estimator except the synchronisation: each baseline
run is paired with the candidate series of a different run, so the two sides of a pair no longer
share interference. ``sync gain = width(shuffled) / width(duet)`` is what the barrier buys.

The *sequential* (standard) method measures the versions in separate runs and puts a two-level
bootstrap interval (runs, then iterations within each run) around the
difference of the means. ``accuracy gain = relative width(sequential) / width(duet)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duet_stats._resample import mean_replicates, percentile_bounds, uniform_indices
from duet_stats._typing import ArrayLike, FloatArray
from duet_stats._validate import (
    as_runs,
    check_confidence,
    check_count,
    check_nonnegative,
    check_rng,
)
from duet_stats.intervals import DEFAULT_CONFIDENCE, expanded_confidence
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS, _paired_runs
from duet_stats.winsor import DEFAULT_FRACTION, _winsorize_rows

__all__ = [
    "SequentialEstimate",
    "ShuffledEstimate",
    "accuracy_gain",
    "sequential_ci",
    "shuffled_ratio",
    "sync_gain",
]

#: Values drawn per block of the two-level bootstrap (2 MiB of indices and 2 MiB of values):
#: large enough that the per-call overhead of numpy is small next to the work, small enough to
#: stay in cache. At 30 runs x 1,000 iterations this is 8 replicates per block.
_SEQUENTIAL_BLOCK_VALUES = 1 << 18


@dataclass(frozen=True, slots=True)
class ShuffledEstimate:
    """Duet estimate with runs paired at random across the two sides, averaged over shuffles.

    Attributes
    ----------
    ratio, ci_low, ci_high, width : float
        Means over the shuffles of the ratio, the interval bounds and the relative width
        ``ci_high - ci_low``.
    confidence : float
        Confidence level of the intervals.
    shuffles : int
        Number of random pairings averaged.
    """

    ratio: float
    ci_low: float
    ci_high: float
    width: float
    confidence: float
    shuffles: int


@dataclass(frozen=True, slots=True)
class SequentialEstimate:
    """Two-level bootstrap interval of the sequential (standard) method.

    Attributes
    ----------
    baseline_mean_ns, candidate_mean_ns : float
        Mean of all (winsorized) samples of each version.
    difference_ns : float
        ``candidate_mean_ns - baseline_mean_ns``.
    ci_low_ns, ci_high_ns : float
        Percentile bootstrap interval of the difference of means.
    relative_width : float
        ``(ci_high_ns - ci_low_ns) / mean(all samples of both versions)`` (duet paper 4.1).
    ratio : float
        ``candidate_mean_ns / baseline_mean_ns``.
    ratio_ci_low, ratio_ci_high : float
        Percentile interval of the ratio of means, from the same replicates.
    confidence : float
        Confidence level.
    reps : int
        Bootstrap replicates.
    """

    baseline_mean_ns: float
    candidate_mean_ns: float
    difference_ns: float
    ci_low_ns: float
    ci_high_ns: float
    relative_width: float
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    confidence: float
    reps: int


def _derangement(rng: np.random.Generator, n: int) -> np.ndarray[tuple[int], np.dtype[np.intp]]:
    """A uniformly random permutation without fixed points (rejection; about e tries)."""
    identity = np.arange(n)
    while True:
        p = rng.permutation(n)
        if not np.any(p == identity):
            return p


def shuffled_ratio(
    baseline_ns: ArrayLike,
    candidate_ns: ArrayLike,
    *,
    shuffles: int = 20,
    confidence: float = DEFAULT_CONFIDENCE,
    reps: int = 10_000,
    winsorize: bool = True,
    method: str = "percentile",
    rng: np.random.Generator,
) -> ShuffledEstimate:
    """Duet ratio and percentile interval with the runs paired across sides at random.

    Each shuffle draws a random derangement ``p`` (a permutation with ``p[r] != r``), pairs
    baseline run ``r`` with candidate run ``p[r]`` iteration by iteration, and computes the duet
    ratio and its percentile interval exactly as :func:`duet_stats.ratio.duet_ratio` does (log
    ratios, optional winsorization of each run's log ratios). The result is the mean over the
    shuffles.

    Parameters
    ----------
    baseline_ns, candidate_ns : array_like, shape (runs, iterations)
        Paired positive finite iteration times, at least ``MIN_BOOTSTRAP_RUNS`` runs.
    shuffles : int, default 20
        Number of random pairings, >= 1.
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.
    reps : int, default 10_000
        Bootstrap replicates per shuffle, >= 1.
    winsorize : bool, default True
        Winsorize the log ratios of each (shuffled) run, as :func:`duet_stats.ratio.duet_ratio`
        does: only runs of at least ``duet_stats.winsor.MIN_ITERATIONS`` iterations.
    method : {"percentile", "expanded"}, default "percentile"
        Interval of each shuffle. A sync gain compares this width with the duet width, so pass
        the method the duet interval was computed with (``expanded`` is ``duet``'s default).
    rng : numpy.random.Generator
        Source of randomness for the pairings and the bootstraps.

    Returns
    -------
    ShuffledEstimate

    Raises
    ------
    ValueError
        On invalid times or shapes, fewer than ``MIN_BOOTSTRAP_RUNS`` runs, ``confidence``
        outside (0, 1), ``shuffles``/``reps`` < 1, or another ``method``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    Without winsorization the point estimate is the same for every pairing (the grand geometric
    mean of ``b / a`` equals ``gm(b) / gm(a)`` however the runs are paired); only the interval
    changes. Pairing within a run would change nothing at all (docs/statistics.md, method 4).

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 4.2 (RQ2: "we now perform a
       random shuffle and use ratios from unrelated measurements"; Figures 4 and 5).
    """
    a, b = _paired_runs(baseline_ns, candidate_ns, min_runs=MIN_BOOTSTRAP_RUNS)
    shuffles = check_count(shuffles, name="shuffles")
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    rng = check_rng(rng)
    if method not in ("percentile", "expanded"):
        raise ValueError(
            f"method must be 'percentile' or 'expanded' for the shuffled interval; got {method!r}"
        )
    level = expanded_confidence(confidence, a.shape[0]) if method == "expanded" else confidence
    log_a, log_b = np.log(a), np.log(b)
    ratios = np.empty(shuffles)
    lows = np.empty(shuffles)
    highs = np.empty(shuffles)
    for i in range(shuffles):
        log_s = log_b[_derangement(rng, a.shape[0])] - log_a
        if winsorize:
            log_s, _ = _winsorize_rows(log_s, DEFAULT_FRACTION)
        log_g = log_s.mean(axis=1)
        lo, hi = percentile_bounds(mean_replicates(log_g, reps, rng), level)
        ratios[i] = math.exp(log_g.mean())
        lows[i] = math.exp(lo)
        highs[i] = math.exp(hi)
    return ShuffledEstimate(
        ratio=float(ratios.mean()),
        ci_low=float(lows.mean()),
        ci_high=float(highs.mean()),
        width=float((highs - lows).mean()),
        confidence=confidence,
        shuffles=shuffles,
    )


def _two_level_means(data: FloatArray, reps: int, rng: np.random.Generator) -> FloatArray:
    """``reps`` two-level bootstrap replicates of the mean of ``data`` (runs, then iterations)."""
    runs, iterations = data.shape
    flat = data.ravel()
    per_rep = runs * iterations
    block = max(1, _SEQUENTIAL_BLOCK_VALUES // per_rep)
    out = np.empty(reps, dtype=np.float64)
    for start in range(0, reps, block):
        count = min(reps, start + block) - start
        # Level 1: runs with replacement; level 2: iterations with replacement within each.
        chosen = uniform_indices(rng, runs, (count, runs, 1))
        chosen *= iterations
        idx = uniform_indices(rng, iterations, (count, runs, iterations))
        idx += chosen
        out[start : start + count] = flat[idx.reshape(count, per_rep)].sum(axis=1)
    out /= per_rep
    return out


def sequential_ci(
    baseline_ns: ArrayLike,
    candidate_ns: ArrayLike,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    reps: int = 10_000,
    winsorize: bool = True,
    rng: np.random.Generator,
) -> SequentialEstimate:
    """Two-level bootstrap interval for the difference (and ratio) of means, sequential method.

    For each version independently, a replicate resamples the runs with replacement and then,
    within each resampled run, the iterations with replacement, and takes the mean of all
    resampled samples. The interval of ``mean(B*) - mean(A*)`` is the percentile interval over
    ``reps`` replicates; the ratio interval uses ``mean(B*) / mean(A*)`` of the same replicates.

    Parameters
    ----------
    baseline_ns : array_like, shape (runs_a, iterations_a)
        Positive finite iteration times of the baseline, at least ``MIN_BOOTSTRAP_RUNS`` runs.
    candidate_ns : array_like, shape (runs_b, iterations_b)
        The same for the candidate; run and iteration counts may differ from the baseline's.
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.
    reps : int, default 10_000
        Bootstrap replicates, >= 1.
    winsorize : bool, default True
        Winsorize the times within each run (docs/statistics.md, method 3) before anything else;
        runs of fewer than ``duet_stats.winsor.MIN_ITERATIONS`` iterations are left alone.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    SequentialEstimate

    Raises
    ------
    ValueError
        On invalid times, fewer than ``MIN_BOOTSTRAP_RUNS`` runs on a side, ``confidence``
        outside (0, 1) or ``reps < 1``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    The mean of a side is the mean of all its samples, which with equal iterations per run is
    also the mean of the run means. ``relative_width`` divides by the mean of all samples of both
    versions pooled, as the duet paper does for A/A experiments. The replicates are drawn in
    blocks of int64 indices bounded to a few MiB; 30 x 1,000 samples per side with 10,000
    replicates draws 6e8 indices.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 4.1 ("99% bootstrap confidence
       intervals for the difference of means, computed using the procedure in [3]"; relative
       width ``(diff_hi - diff_lo) / mean``).
    .. [2] L. Bulej, T. Bureš, V. Horký, J. Kotrč, L. Marek, T. Trojánek, P. Tůma, "Unit Testing
       Performance with Stochastic Performance Logic", Automated Software Engineering, 2016
       (reference [3] of the duet paper, the procedure it uses for the standard method).
    .. [3] T. Kalibera, R. Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013
       (hierarchical resampling: runs, then iterations within runs).
    """
    a = as_runs(baseline_ns, name="baseline_ns", min_runs=MIN_BOOTSTRAP_RUNS)
    b = as_runs(candidate_ns, name="candidate_ns", min_runs=MIN_BOOTSTRAP_RUNS)
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    rng = check_rng(rng)
    if winsorize:
        a, _ = _winsorize_rows(a, DEFAULT_FRACTION)
        b, _ = _winsorize_rows(b, DEFAULT_FRACTION)
    mean_a = float(a.mean())
    mean_b = float(b.mean())
    pooled = (a.sum() + b.sum()) / (a.size + b.size)
    star_a = _two_level_means(a, reps, rng)
    star_b = _two_level_means(b, reps, rng)
    lo, hi = percentile_bounds(star_b - star_a, confidence)
    ratio_lo, ratio_hi = percentile_bounds(star_b / star_a, confidence)
    return SequentialEstimate(
        baseline_mean_ns=mean_a,
        candidate_mean_ns=mean_b,
        difference_ns=mean_b - mean_a,
        ci_low_ns=lo,
        ci_high_ns=hi,
        relative_width=float((hi - lo) / pooled),
        ratio=mean_b / mean_a,
        ratio_ci_low=ratio_lo,
        ratio_ci_high=ratio_hi,
        confidence=confidence,
        reps=reps,
    )


def _gain(numerator: float, denominator: float, *, names: tuple[str, str]) -> float:
    num = check_nonnegative(numerator, name=names[0])
    den = check_nonnegative(denominator, name=names[1])
    if den == 0.0:
        # A zero-width duet interval (identical sides): infinitely better, or equal if both are 0.
        return math.inf if num > 0.0 else 1.0
    return num / den


def sync_gain(*, shuffled_width: float, duet_width: float) -> float:
    """What the synchronisation buys: ``shuffled_width / duet_width``.

    Parameters
    ----------
    shuffled_width : float
        ``ShuffledEstimate.width`` (finite, >= 0).
    duet_width : float
        ``RatioEstimate.width`` on the same data (finite, >= 0).

    Returns
    -------
    float
        Above 1 when pairing runs that ran together narrows the interval; ``inf`` when only the
        duet width is 0, 1 when both are.

    Raises
    ------
    ValueError
        If a width is negative or not finite.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 4.2 (RQ2, Figure 4);
       docs/statistics.md, method 4.
    """
    return _gain(shuffled_width, duet_width, names=("shuffled_width", "duet_width"))


def accuracy_gain(*, sequential_relative_width: float, duet_width: float) -> float:
    """Accuracy gain of duet over the sequential method: ``relative width ratio``.

    Parameters
    ----------
    sequential_relative_width : float
        ``SequentialEstimate.relative_width`` (finite, >= 0).
    duet_width : float
        ``RatioEstimate.width`` (finite, >= 0).

    Returns
    -------
    float
        ``sequential_relative_width / duet_width``; ``inf`` when only the duet width is 0, 1 when
        both are.

    Raises
    ------
    ValueError
        If a width is negative or not finite.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 4.1 (RQ1, Table 1: "average
       reduction of the relative confidence interval width").
    """
    return _gain(
        sequential_relative_width, duet_width, names=("sequential_relative_width", "duet_width")
    )
