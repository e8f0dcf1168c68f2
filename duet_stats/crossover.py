"""The crossover design: the sides change CPUs at every iteration (docs/statistics.md, method 1b).

The two CPUs of a pair are not equal, and on a virtual machine their difference changes within
seconds. With the baseline on CPU ``a`` and the candidate on CPU ``b`` an iteration's log ratio is
``log R + D`` (``D = log(c_b / c_a)``, the log of how much slower the same code runs on ``b``);
with the sides swapped it is ``log R - D``. When the sides swap only between runs, ``D`` moves
into the between-run variance and widens the interval; when they swap at every iteration,
``+D`` and ``-D`` alternate inside each run and cancel in its mean, as long as ``D`` is stable
over two consecutive iterations.

Assignment 0 is "baseline on the lower-numbered CPU of the pair", assignment 1 the other.
A run's log ratio weighs the two assignments equally: the mean of the two assignment means. With
an odd number of iterations one assignment has one iteration more, and a plain mean would keep
``D / iterations`` of the core difference; the equal weighting keeps none. Half the difference of
the two assignment means is an estimate of ``D`` from inside the run (the within-run contrast).

Winsorization (duet paper section 4, at most one value per run) is applied to the run's log
ratios with each assignment's median subtracted (``"centred"``, the default): the 20% rule then
judges an iteration against the spread of the run as it would be with equal cores. Applied to the
raw series (``"series"``) the gap ``2 D`` between the two assignments would count as range, and a
core difference of a few percent would switch the rule off; applied to each assignment's half
separately it would replace up to two values per run in series half as long, where the rule is
aggressive (docs/statistics.md, "Winsorization with few iterations").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from duet_stats._typing import ArrayLike, FloatArray, IntervalMethod
from duet_stats._validate import as_runs, check_confidence, check_count, check_rng
from duet_stats.intervals import check_method, log_interval, t_two_sided_p
from duet_stats.winsor import DEFAULT_FRACTION, MIN_ITERATIONS, _winsorize_rows

__all__ = [
    "CoreContrast",
    "CrossoverRuns",
    "CrossoverWinsor",
    "centre_assignments",
    "core_contrast",
    "crossover_runs",
]

#: How a crossover run is winsorized: each assignment's median subtracted first (the default),
#: the raw series as in the per-run design, or not at all.
CrossoverWinsor: TypeAlias = Literal["centred", "series", "off"]
_WINSOR_CHOICES = ("centred", "series", "off")

BoolArray: TypeAlias = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CrossoverRuns:
    """Each run's log ratio with the two CPU assignments weighed equally.

    Attributes
    ----------
    log_run_ratios : ndarray of float64, shape (runs,)
        ``(mean under assignment 0 + mean under assignment 1) / 2``; the plain mean of the run
        where only one assignment occurred (read-only).
    log_contrasts : ndarray of float64, shape (runs,)
        ``(mean under 0 - mean under 1) / 2``, an estimate of ``log(c_b / c_a)``; NaN where only
        one assignment occurred (read-only).
    both : ndarray of bool, shape (runs,)
        Whether the run ran under both assignments (read-only).
    winsorized : int
        Log ratios replaced by winsorization (at most one per run).
    log_contrast_vars : ndarray of float64, shape (runs,)
        The variance of each run's contrast that the noise within each assignment alone gives,
        ``(s0^2 / n0 + s1^2 / n1) / 4`` (``s0^2``, ``s1^2`` the sample variances of the
        assignments' ``n0``, ``n1`` log ratios, after winsorization); NaN where an assignment
        has fewer than 2 iterations (read-only).
    """

    log_run_ratios: FloatArray
    log_contrasts: FloatArray
    both: BoolArray
    winsorized: int
    log_contrast_vars: FloatArray

    @property
    def single_assignment_runs(self) -> int:
        """Runs that fell back to their plain mean (one assignment only)."""
        return int(np.count_nonzero(~self.both))


@dataclass(frozen=True, slots=True)
class CoreContrast:
    """``ratio = T(on b) / T(on a)`` from inside the runs: how much slower the second CPU is.

    Attributes
    ----------
    ratio : float
        ``exp`` of the mean over runs of the within-run contrasts.
    ci_low, ci_high : float or None
        Bootstrap interval over runs; None with fewer than 2 runs under both assignments.
    runs : int
        Runs that ran under both assignments (the others say nothing about the cores).
    share_of_within_run_variance : float or None
        ``log(ratio)^2 / S_X^2`` of the raw log ratios: the share of the within-run variance that
        the core difference accounts for (None when that variance is 0).
    noise_p : float or None
        Two-sided p-value of the contrast against the noise within each assignment (between
        iterations under the same CPU assignment: with a process per iteration, between
        processes): ``t = log(ratio) / se`` with ``se^2 = sum of the runs' contrast variances /
        runs^2`` (:attr:`CrossoverRuns.log_contrast_vars`) and the pooled ``sum (n0 + n1 - 2)``
        degrees of freedom. None when no run has 2 iterations under each assignment.
    beyond_noise : bool or None
        ``noise_p < 1 - confidence``: the contrast is distinguishable from that noise at the
        level of the interval (a false alarm with probability ``1 - confidence`` when the cores
        are equal and the iterations independent). None with ``noise_p``.
    """

    ratio: float
    ci_low: float | None
    ci_high: float | None
    runs: int
    share_of_within_run_variance: float | None
    noise_p: float | None = None
    beyond_noise: bool | None = None

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 1 and, where it could be tested, the contrast stands
        out of the noise within each assignment (None without an interval).

        The bootstrap over runs alone is too narrow with few runs (3 runs of a benchmark whose
        processes differ by up to 2.7x: a 99% interval excluded 1 in a quarter of A/A data
        sets); the noise test holds its level at any number of runs."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_low > 1.0 or self.ci_high < 1.0) and self.beyond_noise is not False


_A = TypeVar("_A", FloatArray, BoolArray)


def _frozen(array: _A) -> _A:
    array.flags.writeable = False
    return array


def _checked_assignment(assignment: ArrayLike, shape: tuple[int, ...]) -> BoolArray:
    """``assignment == 1`` as a bool array, after checking it holds only 0 and 1 in ``shape``."""
    raw = np.asarray(assignment)
    if raw.shape != shape:
        raise ValueError(
            f"assignment must have the shape of the log ratios {shape}, one entry per "
            f"iteration; got shape {raw.shape}"
        )
    if raw.dtype != np.bool_ and not np.isin(raw, (0, 1)).all():
        bad = raw[~np.isin(raw, (0, 1))]
        raise ValueError(
            "assignment must hold 0 (baseline on the lower-numbered CPU) or 1 (on the other); "
            f"found {bad.flat[0]!r}"
        )
    return np.asarray(raw == 1, dtype=np.bool_)


def _group_means(values: FloatArray, on_1: BoolArray) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per run, the mean under assignment 0, under 1 (NaN where absent), and whether both occur."""
    n1 = on_1.sum(axis=1)
    n0 = on_1.shape[1] - n1
    sum1 = np.where(on_1, values, 0.0).sum(axis=1)
    sum0 = np.where(on_1, 0.0, values).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean0 = np.where(n0 > 0, sum0 / np.maximum(n0, 1), np.nan)
        mean1 = np.where(n1 > 0, sum1 / np.maximum(n1, 1), np.nan)
    return mean0, mean1, (n0 > 0) & (n1 > 0)


def _centres(values: FloatArray, on_1: BoolArray, both: BoolArray) -> FloatArray:
    """Each cell's assignment median in runs under both assignments, 0 elsewhere.

    The median rather than the mean: the value being judged must not drag its own centre.
    Runs under one assignment are not centred, so that they are winsorized bit for bit as in
    the per-run design (the rule does not depend on a shift of the whole run).
    """
    masked1 = np.where(on_1, values, np.nan)
    masked0 = np.where(on_1, np.nan, values)
    centre = np.zeros_like(values)
    if both.any():
        med1 = np.nanmedian(masked1[both], axis=1, keepdims=True)
        med0 = np.nanmedian(masked0[both], axis=1, keepdims=True)
        centre[both] = np.where(on_1[both], med1, med0)
    return centre


def _winsorized(
    values: FloatArray, on_1: BoolArray, both: BoolArray, mode: str, min_iterations: int
) -> tuple[FloatArray, int]:
    if mode == "off":
        return values, 0
    if mode == "series":
        return _winsorize_rows(values, DEFAULT_FRACTION, min_iterations)
    centre = _centres(values, on_1, both)
    residual = values - centre
    kept, replaced = _winsorize_rows(residual, DEFAULT_FRACTION, min_iterations)
    # Only the replaced cell changes; the others keep their exact value (x - c + c need not be x).
    return np.where(kept != residual, kept + centre, values), replaced


def crossover_runs(
    log_ratios: ArrayLike,
    assignment: ArrayLike,
    *,
    winsorize: CrossoverWinsor = "centred",
    winsorize_min_iterations: int = MIN_ITERATIONS,
) -> CrossoverRuns:
    """Each run's log ratio with the two CPU assignments weighed equally, and its contrast.

    Parameters
    ----------
    log_ratios : array_like, shape (runs, iterations)
        Finite per-iteration log ratios ``log b - log a`` (candidate over baseline).
    assignment : array_like of {0, 1} or bool, shape (runs, iterations)
        Which assignment each iteration ran under: 0 with the baseline on the lower-numbered
        CPU of the pair, 1 with it on the other.
    winsorize : {"centred", "series", "off"}, default "centred"
        ``"centred"``: the 20% rule of :mod:`duet_stats.winsor` on the run's log ratios with
        each assignment's median subtracted (the replaced value gets its own assignment's
        median back); ``"series"``: on the raw series; ``"off"``. At most one value per run
        either way, and not in runs shorter than ``winsorize_min_iterations``.
    winsorize_min_iterations : int, default ``duet_stats.winsor.MIN_ITERATIONS``
        The guard of :func:`duet_stats.ratio.duet_ratio`, on the run's whole length.

    Returns
    -------
    CrossoverRuns
        ``log_run_ratios`` is the mean of the two assignment means of each run; a run where
        only one assignment occurred (the per-run design, or a crossover run of one
        iteration) falls back to its plain mean and has a NaN contrast.

    Raises
    ------
    ValueError
        If ``log_ratios`` is ragged, not 2-D, empty or non-finite, ``assignment`` has another
        shape or holds anything but 0 and 1, ``winsorize`` is unknown or
        ``winsorize_min_iterations < 1``.

    Notes
    -----
    Equal weighting: with 2m + 1 iterations, m + 1 under one assignment, the plain mean is
    ``log R + D / (2m + 1)`` in expectation, the mean of the assignment means ``log R``. With an
    even count and a strict alternation the two agree exactly.

    References
    ----------
    .. [1] L. Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud",
       ICPE 2020, section 3 (per-run geometric means) and section 4 (winsorization, at most one
       observation per run).
    .. [2] S. Senn, "Cross-over Trials in Clinical Research", 2nd ed., Wiley 2002, chapter 3
       (the AB/BA design: the treatment estimate as the mean of the two period contrasts, the
       period effect as half their difference).
    """
    values = as_runs(log_ratios, name="log_ratios", positive=False, min_runs=1)
    on_1 = _checked_assignment(assignment, values.shape)
    if winsorize not in _WINSOR_CHOICES:
        raise ValueError(
            f"winsorize must be one of {', '.join(_WINSOR_CHOICES)}; got {winsorize!r}"
        )
    min_iterations = check_count(winsorize_min_iterations, name="winsorize_min_iterations")
    _, _, both = _group_means(values, on_1)
    kept, replaced = _winsorized(values, on_1, both, winsorize, min_iterations)
    mean0, mean1, _ = _group_means(kept, on_1)
    contrast_vars = _contrast_vars(kept, on_1, mean0, mean1)
    balanced = np.where(both, (mean0 + mean1) / 2.0, kept.mean(axis=1))
    contrasts = np.where(both, (mean0 - mean1) / 2.0, np.nan)
    return CrossoverRuns(
        log_run_ratios=_frozen(balanced),
        log_contrasts=_frozen(contrasts),
        both=_frozen(both),
        winsorized=replaced,
        log_contrast_vars=_frozen(contrast_vars),
    )


def _contrast_vars(
    values: FloatArray, on_1: BoolArray, mean0: FloatArray, mean1: FloatArray
) -> FloatArray:
    """Per run, ``(s0^2 / n0 + s1^2 / n1) / 4``; NaN where an assignment has < 2 iterations."""
    n1 = on_1.sum(axis=1)
    n0 = on_1.shape[1] - n1
    dev = np.where(on_1, values - mean1[:, None], values - mean0[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        ss1 = np.where(on_1, dev * dev, 0.0).sum(axis=1)
        ss0 = np.where(on_1, 0.0, dev * dev).sum(axis=1)
        out = (ss0 / (n0 - 1) / n0 + ss1 / (n1 - 1) / n1) / 4.0
    return np.where((n0 >= 2) & (n1 >= 2), out, np.nan)


def _noise_p(runs: CrossoverRuns, on_1: BoolArray) -> float | None:
    """The two-sided p-value of the mean contrast against the within-assignment noise, over the
    runs where both assignments have 2 iterations or more (see :attr:`CoreContrast.noise_p`)."""
    usable = runs.both & np.isfinite(runs.log_contrast_vars)
    if not usable.any():
        return None
    delta = float(runs.log_contrasts[usable].mean())
    var = float(runs.log_contrast_vars[usable].sum()) / float(usable.sum()) ** 2
    if var <= 0.0:
        return 1.0 if delta == 0.0 else 0.0
    df = int((on_1.shape[1] - 2) * usable.sum())
    return t_two_sided_p(abs(delta) / math.sqrt(var), df)


def core_contrast(
    log_ratios: ArrayLike,
    assignment: ArrayLike,
    *,
    confidence: float,
    reps: int,
    method: IntervalMethod = "expanded",
    winsorize: CrossoverWinsor = "centred",
    winsorize_min_iterations: int = MIN_ITERATIONS,
    rng: np.random.Generator,
) -> CoreContrast | None:
    """How much slower the same code runs on the second CPU, from inside crossover runs.

    Per run with both assignments, ``(mean under 0 - mean under 1) / 2`` estimates
    ``log(c_b / c_a)`` whatever the true ratio (the same estimate serves an A/A and an A/B);
    the summary is their mean over runs with a bootstrap interval over runs.

    Parameters
    ----------
    log_ratios, assignment : array_like, shape (runs, iterations)
        As :func:`crossover_runs`.
    confidence : float
        Level of the interval, strictly between 0 and 1.
    reps : int
        Bootstrap replicates (at least 1).
    method : {"percentile", "expanded", "bca", "basic", "studentized"}, default "expanded"
        Interval construction, as :func:`duet_stats.intervals.bootstrap_ci`.
    winsorize, winsorize_min_iterations
        As :func:`crossover_runs` (the contrast is taken on the same series as the ratio).
    rng : numpy.random.Generator

    Returns
    -------
    CoreContrast or None
        None when no run ran under both assignments (then the between-run estimate of
        :func:`duet_stats.asymmetry.side_asymmetry` is the one there is).

    Raises
    ------
    ValueError
        As :func:`crossover_runs`, and on a ``confidence`` outside (0, 1), ``reps < 1`` or an
        unknown ``method``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    References
    ----------
    .. [1] L. Bulej et al., "Duet Benchmarking", ICPE 2020, section 3.2 (the core a side sits
       on).
    .. [2] S. Senn, "Cross-over Trials in Clinical Research", 2nd ed., Wiley 2002, chapter 3
       (the period effect of an AB/BA design).
    """
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    method = check_method(method)
    rng = check_rng(rng)
    runs = crossover_runs(
        log_ratios,
        assignment,
        winsorize=winsorize,
        winsorize_min_iterations=winsorize_min_iterations,
    )
    contrasts = runs.log_contrasts[runs.both]
    if contrasts.size == 0:
        return None
    delta = float(contrasts.mean())
    lo = hi = None
    if contrasts.size >= 2:
        log_lo, log_hi = log_interval(
            np.ascontiguousarray(contrasts),
            confidence=confidence,
            reps=reps,
            method=method,
            rng=rng,
        )
        lo, hi = math.exp(log_lo), math.exp(log_hi)
    values = np.asarray(log_ratios, dtype=np.float64)
    noise_p = _noise_p(runs, _checked_assignment(assignment, values.shape))
    within = float(values.var(axis=1, ddof=1).mean()) if values.shape[1] > 1 else 0.0
    share = min(1.0, delta * delta / within) if within > 0 else None
    return CoreContrast(
        ratio=math.exp(delta),
        ci_low=lo,
        ci_high=hi,
        runs=int(contrasts.size),
        share_of_within_run_variance=share,
        noise_p=noise_p,
        beyond_noise=None if noise_p is None else noise_p < 1.0 - confidence,
    )


def centre_assignments(values: ArrayLike, assignment: ArrayLike) -> FloatArray:
    """The values with the core difference taken out of each run, for planning and diagnostics.

    In runs under both assignments every value is shifted by minus its assignment's contrast:
    ``x - (m0 - m1) / 2`` under 0 and ``x + (m0 - m1) / 2`` under 1 (``m0``, ``m1`` the run's
    assignment means), so that both assignments are centred on the run's balanced mean. The run
    means are then the balanced run means (the between-run variance ``S_A^2`` is that of the
    estimator), and the within-run variance ``S_X^2`` no longer counts the ``+-D`` swing the
    design cancels. Runs under one assignment are returned unchanged. Works on log ratios and on
    one side's times alike.

    Parameters
    ----------
    values : array_like, shape (runs, iterations)
        Finite numbers (log ratios, or one side's iteration times).
    assignment : array_like of {0, 1} or bool, shape (runs, iterations)
        As :func:`crossover_runs`.

    Returns
    -------
    ndarray of float64, shape (runs, iterations)

    Raises
    ------
    ValueError
        As :func:`crossover_runs`.

    References
    ----------
    .. [1] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
       SPECTS 2005, section 5.2 (the additive model the variance components assume).
    """
    data = as_runs(values, name="values", positive=False, min_runs=1)
    on_1 = _checked_assignment(assignment, data.shape)
    mean0, mean1, both = _group_means(data, on_1)
    half = np.where(both, (mean0 - mean1) / 2.0, 0.0)[:, None]
    out: FloatArray = np.where(on_1, data + half, data - half)
    return out
