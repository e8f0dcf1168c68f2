"""Winsorization of one extreme observation per run (duet paper, section 4; docs/statistics.md,
method 3).

Within a run, at most one observation is replaced by its nearest neighbour, and only when it lies
further outside the min-max range of the *remaining* observations than ``fraction`` (20%) of that
range. This tames the occasional iteration hit by a one-off event (a page-fault storm, a
preemption) without trimming genuine spread, in runs of many iterations.

With few values the rule is aggressive: of 3 evenly spaced values one is always replaced (each
extreme lies a whole range outside the other two), and in runs of normally distributed values it
replaces one in 92% of runs of 5, 72% of 10, 48% of 20, 36% of 30 and 15% of 100 (the paper's
runs had up to 100 iterations). In short runs it then removes the tail of every run, and where
that tail is one-sided (one side's CPU preempted more often) it moves every run the same way and
narrows the interval. Measured with ``benchmarks/aa_guards.py``: below 20 iterations it bought
no A/A coverage on average and cost about a point where the noise was one-sided (percentile
interval, 10 runs); on the real A/A data of the accuracy study it moved single pools by up to 17
points at 3-10 iterations, in both directions; and it turned a 5 x 5 A/A
``0.979 [0.903, 1.035]`` into ``1.044 [1.007, 1.090]``, a regression that is not there. Hence
the guard: runs of fewer than ``MIN_ITERATIONS`` (20) iterations are left alone. From 20
iterations on the paper's rule applies unchanged (docs/statistics.md, "Winsorization with few
iterations").

The caller chooses the series: for the duet estimator it is the per-iteration *log* ratio
``log s[r, i]`` (the series whose arithmetic mean is the per-run geometric mean), for the
sequential method the iteration times themselves.
"""

from __future__ import annotations

import numpy as np

from duet_stats._typing import ArrayLike, FloatArray
from duet_stats._validate import as_runs, as_vector, check_count, check_fraction

__all__ = ["DEFAULT_FRACTION", "MIN_ITERATIONS", "winsorize_run", "winsorize_runs"]

#: The paper's threshold: 20% of the min-max range of the remaining observations.
DEFAULT_FRACTION = 0.2

#: Runs of fewer iterations are not winsorized (the guard; see the module docstring). Chosen
#: from the A/A measurements of docs/statistics.md: below 20 the rule cost coverage on the
#: skewed-noise model and on the real data; from 20 on its cost was within the noise of the
#: measurement, and the default 30 iterations keep the paper's rule as the study measured it.
MIN_ITERATIONS = 20


def _winsorize_rows(
    rows: FloatArray, fraction: float, min_iterations: int = MIN_ITERATIONS
) -> tuple[FloatArray, int]:
    """Row-wise winsorization of a validated ``(runs, n)`` array; returns (copy, replaced)."""
    out = rows.copy()
    runs, n = rows.shape
    # Fewer than 3 values have no "remaining range" to compare with, whatever the guard says.
    if n < max(3, min_iterations) or runs == 0:
        return out, 0
    # The two smallest and the two largest values of each row, without a full sort.
    part = np.partition(rows, (0, 1, n - 2, n - 1), axis=1)
    lowest, second_lowest = part[:, 0], part[:, 1]
    second_highest, highest = part[:, n - 2], part[:, n - 1]
    # How far each extreme lies outside the range of the values that remain without it. A value
    # that is tied with its neighbour has excess 0 and can never qualify (strict comparison).
    low_excess = second_lowest - lowest
    high_excess = highest - second_highest
    low_qualifies = low_excess > fraction * (highest - second_lowest)
    high_qualifies = high_excess > fraction * (second_highest - lowest)
    i_low = np.argmin(rows, axis=1)
    i_high = np.argmax(rows, axis=1)
    # Both qualify: replace the one further out; on an exact tie the one met first in the run, a
    # rule that is unchanged when the series is negated (log ratios of swapped sides).
    low_wins = (low_excess > high_excess) | ((low_excess == high_excess) & (i_low < i_high))
    replace_low = low_qualifies & (~high_qualifies | low_wins)
    replace_high = high_qualifies & ~replace_low
    r_low = np.flatnonzero(replace_low)
    r_high = np.flatnonzero(replace_high)
    out[r_low, i_low[r_low]] = second_lowest[r_low]
    out[r_high, i_high[r_high]] = second_highest[r_high]
    return out, int(r_low.size + r_high.size)


def winsorize_run(
    values: ArrayLike, *, fraction: float = DEFAULT_FRACTION, min_iterations: int = MIN_ITERATIONS
) -> tuple[FloatArray, int]:
    """Winsorize one run: replace at most one extreme observation by its nearest neighbour.

    The smallest value qualifies when it lies more than ``fraction`` times the range
    (max - min) of the remaining values below that range, i.e. when
    ``second_min - min > fraction * (max - second_min)``; the largest value symmetrically. If both
    qualify, the one further outside (larger excess) is replaced; on an exact tie the one that
    occurs first in the run. A value exactly at the threshold is kept.

    Parameters
    ----------
    values : array_like, shape (n,)
        One run's series (finite numbers; may be negative, e.g. log ratios).
    fraction : float, default 0.2
        Threshold as a fraction of the range of the remaining values.
    min_iterations : int, default ``MIN_ITERATIONS``
        Runs with fewer values are returned unchanged (the guard; 3 gives the paper's rule at
        every length).

    Returns
    -------
    winsorized : ndarray of float64, shape (n,)
        A copy of ``values`` with at most one value replaced.
    replaced : int
        0 or 1. Runs with fewer than ``max(3, min_iterations)`` values are returned unchanged
        with 0.

    Raises
    ------
    ValueError
        If ``values`` is not 1-D or holds NaN/infinity, ``fraction`` is negative or
        ``min_iterations`` is below 1.

    References
    ----------
    .. [1] L. Bulej, V. Horký, P. Tůma, F. Farquet, A. Prokopec, "Duet Benchmarking: Improving
       Measurement Accuracy in the Cloud", ICPE 2020, section 4 (outlier filtering by
       winsorization, "replacing at most one observation in a run with its nearest neighbor
       when that observation is further than 20% away from the min-max range of the remaining
       observations").
    """
    fraction = check_fraction(fraction, name="fraction")
    min_iterations = check_count(min_iterations, name="min_iterations")
    array = as_vector(values, name="values", positive=False, min_size=0)
    out, replaced = _winsorize_rows(array.reshape(1, -1), fraction, min_iterations)
    return out.reshape(-1), replaced


def winsorize_runs(
    values: ArrayLike, *, fraction: float = DEFAULT_FRACTION, min_iterations: int = MIN_ITERATIONS
) -> tuple[FloatArray, int]:
    """Winsorize every run (row) of a ``(runs, iterations)`` array, as :func:`winsorize_run`.

    Parameters
    ----------
    values : array_like, shape (runs, iterations)
        Finite numbers, one run per row.
    fraction : float, default 0.2
        Threshold as a fraction of the range of the remaining values of the run.
    min_iterations : int, default ``MIN_ITERATIONS``
        Runs of fewer iterations are returned unchanged (the guard).

    Returns
    -------
    winsorized : ndarray of float64, shape (runs, iterations)
        A copy with at most one value per run replaced.
    replaced : int
        Total number of values replaced (at most ``runs``; 0 for runs shorter than
        ``max(3, min_iterations)``).

    Raises
    ------
    ValueError
        If ``values`` is ragged, not 2-D, empty or holds NaN/infinity, ``fraction`` is
        negative or ``min_iterations`` is below 1.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 4 (winsorization, applied
       within each run).
    """
    fraction = check_fraction(fraction, name="fraction")
    min_iterations = check_count(min_iterations, name="min_iterations")
    array = as_runs(values, name="values", positive=False, min_runs=1)
    return _winsorize_rows(array, fraction, min_iterations)
