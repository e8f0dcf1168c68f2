"""Warm-up detection: where an iteration series stops trending (MSER on the run-centred profile).

The first iterations of a run are often slower (caches, JIT, page faults, frequency ramps). To
find how many to leave out, every run is put on the log scale and centred on its own steady
level (the median of its second half, which removes the run effect), the median over runs gives
one profile, and the MSER truncation rule [MSER] picks the point after which the profile is
flattest. Only iterations before that point that lie outside the noise band count as warm-up,
so noise alone never costs iterations.

References
----------
.. [MSER] K. P. White, "An effective truncation heuristic for bias reduction in simulation
   output", Simulation 69(6), 1997; K. Hoad, S. Robinson, R. Davies, "Automating warm-up
   length estimation", JORS 61, 2010 (MSER for warm-up detection).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duet_stats._typing import ArrayLike, FloatArray
from duet_stats._validate import as_runs, check_nonnegative, check_positive

__all__ = ["STANDARD_ERRORS", "Warmup", "detect_warmup"]

#: Standard errors of the profile a warm-up iteration must lie outside of. 3 would let one of
#: the ~15 positions searched pass for warm-up in about 1 series of 25 made of noise alone.
STANDARD_ERRORS = 4.0
#: ``MAD * 1.4826`` estimates the SD of normal data; ``1.2533 = sqrt(pi / 2)`` is the standard
#: error of a median of normal data in units of ``SD / sqrt(rows)``.
_MAD_TO_SD = 1.4826
_MEDIAN_SE = 1.2533


@dataclass(frozen=True, slots=True)
class Warmup:
    """Where the iteration series stops trending.

    Attributes
    ----------
    iterations : int
        Iterations to discard from the start of every run (recorded warm-up included).
    slowdown : float
        How much slower the discarded iterations were than the steady state, as a ratio
        (1.0: no difference).
    trending : bool
        True when the series was still moving in its second half (beyond the end of the window
        searched): the runs were too short to see a steady state.
    profile : tuple of float
        The median over rows of each iteration's log time, relative to its row's steady level
        (what the detection looked at; for plots).
    """

    iterations: int
    slowdown: float
    trending: bool
    profile: tuple[float, ...]


def _mser_truncation(profile: FloatArray, limit: int) -> int:
    """The ``d`` in ``[0, limit]`` minimising ``sum((p[d:] - mean p[d:])^2) / (n - d)^2``;
    the first one on ties (a later ``d`` must be better by more than rounding)."""
    n = profile.size
    best_d, best = 0, math.inf
    for d in range(limit + 1):
        tail = profile[d:]
        mser = float(np.sum((tail - tail.mean()) ** 2)) / (n - d) ** 2
        if mser < best - 1e-18:
            best_d, best = d, mser
    return best_d


def detect_warmup(
    series: ArrayLike, *, tolerance: float, standard_errors: float = STANDARD_ERRORS
) -> Warmup:
    """Where the iteration series stops trending.

    ``series`` holds one row per run (and side), from the first iteration of the run (recorded
    warm-up included). Each row is taken on the log scale and centred on the median of its
    second half (its steady level), which removes the run effect; the profile is the median
    over rows at each position. The truncation point ``d*`` (within the first half) minimises
    the MSER statistic ``sum((p[d:] - mean p[d:])^2) / (n - d)^2`` [MSER]; the warm-up ends
    after the last iteration before ``d*`` whose profile lies outside the noise band
    ``max(tolerance, standard_errors * SE)`` around the steady level (``SE`` the standard error
    of the profile, a median over the rows of a robust per-row SD), so noise alone never costs
    iterations and a late hiccup is not mistaken for warm-up. The series is *trending* when a
    straight line fitted to the second half of the profile moves by more than twice the band.

    Parameters
    ----------
    series : array_like, shape (rows, n)
        Positive, finite iteration times from the start of each run; at least one row. With
        fewer than 4 iterations there is nothing to detect: no warm-up, flat profile.
    tolerance : float
        A deviation (log scale) too small to matter, >= 0.
    standard_errors : float
        Width of the noise band in standard errors of the profile, > 0.

    Returns
    -------
    Warmup

    Raises
    ------
    ValueError
        If ``series`` is not 2-D with at least one row, holds values that are not positive and
        finite, or ``tolerance``/``standard_errors`` are out of range.

    References
    ----------
    .. [MSER] White 1997, the MSER statistic; Hoad, Robinson and Davies 2010, section 3
       (MSER-5 and its use for warm-up), here on the median profile of many runs.
    """
    array = as_runs(series, name="series", min_runs=1, min_iterations=0)
    tolerance = check_nonnegative(tolerance, name="tolerance")
    standard_errors = check_positive(standard_errors, name="standard_errors")
    rows, n = array.shape
    if n < 4:
        return Warmup(0, 1.0, False, tuple(0.0 for _ in range(n)))
    logs = np.log(array)
    centred = logs - np.median(logs[:, n // 2 :], axis=1, keepdims=True)
    profile = np.median(centred, axis=0)
    limit = n // 2
    best_d = _mser_truncation(profile, limit)
    steady = float(np.median(profile[best_d:]))
    # The noise of one iteration (robust SD across rows, steady half), then the standard error
    # of a median over the rows: a profile value inside the band is noise, not warm-up.
    residual = centred[:, limit:] - profile[limit:]
    row_sd = _MAD_TO_SD * float(np.median(np.abs(residual)))
    band = max(tolerance, standard_errors * _MEDIAN_SE * row_sd / math.sqrt(rows))
    outside = [i for i in range(best_d) if abs(float(profile[i]) - steady) > band]
    d = outside[-1] + 1 if outside else 0
    slowdown = math.exp(float(np.mean(profile[:d])) - steady) if d else 1.0
    # Still trending: the steady half itself drifts by more than the band.
    tail = profile[limit:]
    slope = float(np.polyfit(np.arange(tail.size), tail, 1)[0]) if tail.size >= 3 else 0.0
    trending = abs(slope) * (tail.size - 1) > 2.0 * band
    return Warmup(d, slowdown, trending, tuple(float(x) for x in profile))
