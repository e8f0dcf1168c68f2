"""Impact factor of the random initial state (Kalibera, Bulej, Tůma, Figure 2; docs/statistics.md,
method 5).

A benchmark run starts from a random initial state (memory layout, JIT decisions, physical pages)
that stays fixed for the whole run. The impact factor compares the spread of samples taken from
*different* runs with the spread of samples taken from *one* run: well above 1 means that starting
a new run matters more than measuring another iteration, so more runs (not more iterations) buy
precision. On the *transformed* data (each run's mean subtracted) an impact factor near 1 says that
runs differ by a constant shift, the additive model under which :mod:`duet_stats.planning` is valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duet_stats._resample import uniform_indices
from duet_stats._typing import ArrayLike, FloatArray, IntArray
from duet_stats._validate import as_runs, check_count, check_rng

__all__ = ["ImpactFactors", "impact_factor", "impact_factors", "paired_impact_factors"]

#: The k repetitions are processed in blocks of at most this many drawn values (``c`` per
#: repetition; 1 MiB of int64 indices), which bounds memory for any ``k`` and keeps the working
#: set in cache. 30 runs x 100 samples (c = 22) give blocks of about 6,000 repetitions.
_BLOCK_VALUES = 1 << 17

#: At most this many entries in one block's "already chosen" mask of Floyd's algorithm.
_BLOCK_MASK = 1 << 22

#: Subsets up to this size are drawn by comparing with the previous picks (see ``_distinct``).
_COMPARE_MAX_SIZE = 64


@dataclass(frozen=True, slots=True)
class ImpactFactors:
    """Impact factor on the original and on the transformed (run-mean-centred) data.

    Attributes
    ----------
    plain : float
        Impact factor of the samples as measured.
    transformed : float
        Impact factor after subtracting each run's mean; near 1 means the additive model of
        Kalibera et al. (section 5.2) fits, so the planning formulas apply.
    """

    plain: float
    transformed: float


def _distinct(rng: np.random.Generator, population: int, size: int, count: int) -> IntArray:
    """``count`` independent uniform random ``size``-subsets of ``range(population)``.

    Floyd's algorithm, vectorised across the subsets: step ``j`` draws ``t`` uniform in
    ``[0, j]`` and takes ``j`` instead when ``t`` is already in the subset. Shape
    ``(size, count)``, one subset per column, so that reductions over a subset run along axis 0,
    which numpy vectorises across columns.
    """
    highs = np.arange(population - size + 1, population + 1, dtype=np.uint64)[:, None]
    picks = uniform_indices(rng, highs, (size, count))
    if size <= _COMPARE_MAX_SIZE and population <= 1 << 16:
        # "Already chosen?" by comparing with the previous picks of the column: O(size^2)
        # comparisons, but contiguous and in 8 or 16 bits, which beats a scattered "taken" mask
        # for the subset sizes of the impact factor (c = 22 for 30 runs).
        small = picks.astype(np.uint8 if population <= 1 << 8 else np.uint16)
        for row in range(1, size):
            pick = small[row]
            np.putmask(pick, (small[:row] == pick).any(axis=0), population - size + row)
        return small.astype(np.int64)
    # Large subsets: a (count, population) "taken" mask, three numpy calls per step.
    base = np.arange(0, count * population, population, dtype=np.int64)
    picks += base
    fallback = np.arange(population - size, population, dtype=np.int64)[:, None] + base
    taken = np.zeros(count * population, dtype=np.bool_)
    for row in range(size):
        flat = picks[row]
        np.putmask(flat, taken[flat], fallback[row])
        taken[flat] = True
    picks -= base
    return picks


def _sum_squares(values: FloatArray) -> FloatArray:
    """Sum of squared deviations from the mean of each column of a ``(c, count)`` array.

    Computed on deviations from the first row, a data value: a constant column then gives
    exactly 0, and a non-constant one a strictly positive value (its sum of squares is at least
    half its squared range, far above the rounding error), so ``> 0`` tests for spread exactly.
    """
    deviations = values - values[0]
    total = deviations.sum(axis=0)
    squares: FloatArray = np.einsum("ij,ij->j", deviations, deviations)
    squares -= total * total / values.shape[0]
    return np.maximum(squares, 0.0, out=squares)


def _sd_ratio(ss1: FloatArray, ss2: FloatArray) -> FloatArray:
    """``sd1 / sd2`` from sums of squares over the same number of values (``ddof`` cancels).

    A constant SD2 sample against a varying SD1 sample gives ``inf``; both constant give 1 (runs
    as alike as iterations).
    """
    constant = ss2 == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(ss1 / ss2)
    ratio[constant] = np.where(ss1[constant] > 0.0, np.inf, 1.0)
    return ratio


def _impact_medians(
    data: FloatArray, variants: list[FloatArray], *, k: int, rng: np.random.Generator
) -> list[float]:
    """Figure 2 of Kalibera et al. for each variant of ``data``, all with the same draws.

    SD2 (samples of one run) is computed on ``data`` itself: subtracting a run's mean does not
    change the spread within that run, so the transformed data share it exactly.
    """
    return _impact_medians_of([(data, variants)], k=k, rng=rng)[0]


def _impact_medians_of(
    groups: list[tuple[FloatArray, list[FloatArray]]], *, k: int, rng: np.random.Generator
) -> list[list[float]]:
    """:func:`_impact_medians` for several data sets of one shape, all with the same draws
    (the index draws are most of the cost; the data sets' estimates stay individually exact
    in distribution, only correlated with each other)."""
    runs, samples = groups[0][0].shape
    c = math.floor(0.75 * runs)
    block = max(1, min(_BLOCK_VALUES // c, _BLOCK_MASK // max(runs, samples)))
    # NaN, not np.empty: a draw the loop below failed to fill would show in the medians.
    ratios = [[np.full(k, np.nan) for _ in variants] for _, variants in groups]
    flats = [np.ravel(data) for data, _ in groups]
    flat_variants = [[np.ravel(v) for v in variants] for _, variants in groups]
    for start in range(0, k, block):
        count = min(k, start + block) - start
        # SD1: c distinct runs, one random sample from each (one repetition per column).
        across = _distinct(rng, runs, c, count) * samples
        across += uniform_indices(rng, samples, (c, count))
        # SD2: one random run, c distinct samples from it.
        within = _distinct(rng, samples, c, count)
        within += uniform_indices(rng, runs, (count,)) * samples
        for flat, variants_of, ratios_of in zip(flats, flat_variants, ratios, strict=True):
            ss2 = _sum_squares(flat[within])
            for variant, out in zip(variants_of, ratios_of, strict=True):
                out[start : start + count] = _sd_ratio(_sum_squares(variant[across]), ss2)
    return [[float(np.median(r)) for r in ratios_of] for ratios_of in ratios]


def _checked(
    samples: ArrayLike, k: int, rng: object
) -> tuple[FloatArray, int, np.random.Generator]:
    data = as_runs(samples, name="samples", positive=False, min_runs=1)
    runs, iterations = data.shape
    c = math.floor(0.75 * runs)
    if c < 2:
        raise ValueError(
            f"samples has {runs} run(s); the impact factor draws c = floor(0.75 * runs) samples "
            "per repetition and needs c >= 2, i.e. at least 3 runs"
        )
    if c >= iterations:
        raise ValueError(
            f"samples has {iterations} iteration(s) per run; with {runs} runs the impact factor "
            f"draws c = floor(0.75 * {runs}) = {c} distinct samples from one run and needs "
            f"c < min(runs, iterations), i.e. at least {c + 1} iterations per run"
        )
    return data, check_count(k, name="k"), check_rng(rng)


def impact_factor(
    samples: ArrayLike,
    *,
    transformed: bool = False,
    k: int = 10_000,
    rng: np.random.Generator,
) -> float:
    """Impact factor of the random initial state (Kalibera et al., Figure 2).

    With ``m`` runs of ``n`` samples and ``c = floor(0.75 m)``, repeat ``k`` times: SD1 is the
    standard deviation of one random sample from each of ``c`` distinct random runs; SD2 is the
    standard deviation of ``c`` distinct random samples of one random run; keep SD1/SD2. The
    impact factor is the median of the ``k`` ratios. All ``k`` repetitions are drawn at once
    (vectorised, in memory-bounded blocks).

    Parameters
    ----------
    samples : array_like, shape (runs, iterations)
        Finite samples (iteration times of one version, or log ratios); at least 3 runs and
        more than ``floor(0.75 * runs)`` iterations per run.
    transformed : bool, default False
        Subtract each run's mean first (section 5.2's test of the additive model).
    k : int, default 10_000
        Number of repetitions, >= 1.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    float
        The impact factor; about 1 when runs are interchangeable, well above 1 when the run
        matters. ``inf`` when more than half of the repetitions drew a constant SD2 sample
        against a varying SD1 sample (runs constant inside, different between).

    Raises
    ------
    ValueError
        On ragged, non-2-D or non-finite samples, too few runs or iterations, or ``k < 1``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    A repetition whose SD2 sample is constant (SD2 = 0, e.g. a quantised timer) counts as
    ``inf`` when its SD1 sample varies and as 1 when SD1 is also 0; the median keeps such
    repetitions from dominating unless they are the majority.

    References
    ----------
    .. [1] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
       SPECTS 2005, section 3 and Figure 2 ("Algorithm for estimating impact factor of random
       initial state"; ``c = 0.75 m``, ``k = 10000``); section 5.2 and Table 3 (transformed
       data).
    """
    data, k, rng = _checked(samples, k, rng)
    variant = data - data.mean(axis=1, keepdims=True) if transformed else data
    return _impact_medians(data, [variant], k=k, rng=rng)[0]


def impact_factors(
    samples: ArrayLike, *, k: int = 10_000, rng: np.random.Generator
) -> ImpactFactors:
    """Impact factor on the original and on the transformed data, from the same random draws.

    Using common random draws for both halves the cost and makes the comparison sharper: with
    the same seed, ``plain`` equals ``impact_factor(samples, rng=...)`` and ``transformed``
    equals ``impact_factor(samples, transformed=True, rng=...)``.

    Parameters
    ----------
    samples : array_like, shape (runs, iterations)
        As for :func:`impact_factor`.
    k : int, default 10_000
        Number of repetitions, >= 1.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ImpactFactors

    Raises
    ------
    ValueError, TypeError
        As :func:`impact_factor`.

    References
    ----------
    .. [1] Kalibera, Bulej, Tůma, "Benchmark Precision and Random Initial State", Figure 2 and
       section 5.2 (impact factor on data with each run's mean subtracted; near 1 means the
       additive model fits).
    """
    data, k, rng = _checked(samples, k, rng)
    centred = data - data.mean(axis=1, keepdims=True)
    plain, transformed = _impact_medians(data, [data, centred], k=k, rng=rng)
    return ImpactFactors(plain=plain, transformed=transformed)


def paired_impact_factors(
    baseline: ArrayLike, candidate: ArrayLike, *, k: int = 10_000, rng: np.random.Generator
) -> tuple[ImpactFactors, ImpactFactors]:
    """:func:`impact_factors` of both sides of a duet benchmark, from one set of draws.

    The two sides have the same shape (one run of each per duet run), so the random runs and
    samples of each repetition can be shared: half the cost of two calls, and each side's
    estimate has the same distribution as from :func:`impact_factors` (the two are only
    correlated with each other, as common random numbers are).

    Parameters
    ----------
    baseline, candidate : array_like, shape (runs, iterations)
        As for :func:`impact_factor`; the same shape.
    k : int, default 10_000
        Number of repetitions, >= 1.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    tuple of ImpactFactors
        ``(baseline, candidate)``.

    Raises
    ------
    ValueError
        As :func:`impact_factor`, or when the two shapes differ.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.
    """
    a, k, rng = _checked(baseline, k, rng)
    b, _, _ = _checked(candidate, k, rng)
    if a.shape != b.shape:
        raise ValueError(
            f"baseline has shape {a.shape} and candidate {b.shape}; paired impact factors need "
            "the same runs x iterations on both sides"
        )
    groups = [(x, [x, x - x.mean(axis=1, keepdims=True)]) for x in (a, b)]
    (pa, ta), (pb, tb) = _impact_medians_of(groups, k=k, rng=rng)
    return ImpactFactors(plain=pa, transformed=ta), ImpactFactors(plain=pb, transformed=tb)
