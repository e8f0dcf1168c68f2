"""The duet ratio and its bootstrap confidence interval (duet paper section 3, method.md section 1).

Both versions run at the same time, one core each, and start every iteration together, so
interference that hits the machine hits both sides of an iteration alike. The estimator works on
the per-iteration ratio ``s[r, i] = b[r, i] / a[r, i]`` (candidate over baseline: above 1 means the
candidate is slower), aggregates it by geometric means within each run and across runs, and puts a
percentile bootstrap interval over runs around the grand geometric mean.

Internally everything is computed on the log scale (``log s = log b - log a``), where the geometric
means are arithmetic means. That makes identical sides give exactly ``log s = 0``, hence a ratio and
interval of exactly 1.0, and makes swapping the sides negate every intermediate value exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast, get_args

import numpy as np
import numpy.typing as npt

from duet_stats._typing import ArrayLike, FloatArray, IntArray, IntervalMethod
from duet_stats._validate import as_runs, as_vector, check_confidence, check_count, check_rng
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

#: The confidence level of every interval in ``stats`` when the caller gives none: the one
#: default of the package, for using it on its own. duet does not rely on it: it always passes
#: the level it resolved (``duet_bench.settings``; ``stats`` never imports ``duet``).
DEFAULT_CONFIDENCE = 0.99

#: Below this many runs a bootstrap over runs is meaningless (method.md section 1): with 4 runs
#: there are only 35 distinct resamples. ``duet_ratio`` then reports the point estimate only.
MIN_BOOTSTRAP_RUNS = 5

#: Bootstrap replicates are drawn in blocks of at most this many indices (256 KiB of int64), which
#: bounds memory for any ``reps * runs`` and is also the fastest choice measured here: cache-sized
#: temporaries beat multi-megabyte ones (10,000 replicates of 30 runs: 1.6 ms in blocks of 2**15,
#: 4-6 ms in one block).
_BLOCK_ELEMENTS = 1 << 15

_METHODS: tuple[str, ...] = get_args(IntervalMethod)


@dataclass(frozen=True, slots=True)
class Interval:
    """A confidence interval for a ratio.

    Attributes
    ----------
    low, high : float
        The interval bounds (ratios, candidate over baseline).
    confidence : float
        The confidence level, e.g. 0.99.
    method : str
        ``"percentile"``, ``"bca"``, ``"basic"`` or ``"studentized"``.
    reps : int
        Number of bootstrap replicates drawn.
    """

    low: float
    high: float
    confidence: float
    method: str
    reps: int

    @property
    def width(self) -> float:
        """``high - low``: for ratios near 1, the relative width of the interval."""
        return self.high - self.low


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


def _check_method(method: object) -> IntervalMethod:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    return cast("IntervalMethod", method)


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
       ICPE 2020, section 3, step 2 (the paper writes ``x/y``; method.md section 1 fixes the
       direction to candidate over baseline).
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


#: Populations up to this size use the fast index draw of :func:`_uniform_indices`.
_FAST_DRAW_LIMIT = 1 << 16


def _random_words(rng: np.random.Generator, count: int) -> npt.NDArray[np.uint32]:
    """``count`` uniform 32-bit words: both halves of each raw 64-bit output of the generator."""
    words = np.asarray(rng.bit_generator.random_raw((count + 1) // 2), dtype=np.uint64)
    return words.view(np.uint32)[:count]


def _uniform_indices(
    rng: np.random.Generator, high: int | npt.NDArray[np.uint64], shape: tuple[int, ...]
) -> IntArray:
    """Uniform random integers in ``[0, high)`` of the given shape (``high`` may broadcast).

    Resampling spends most of its time drawing indices, so for populations up to 65,536 this
    maps each 32-bit half of the generator's raw 64-bit words to ``floor(u * high / 2**32)``
    (Lemire's multiply-shift without the rejection step): about twice as fast as
    ``Generator.integers`` here. The price is a non-uniformity of at most ``high / 2**32`` in the
    probability of each value (below 1.6e-5 relative), far below what 10,000 replicates can
    resolve. Larger populations use ``Generator.integers``.
    """
    if int(np.max(high)) > _FAST_DRAW_LIMIT:
        return rng.integers(0, high, size=shape, dtype=np.int64)
    halves = _random_words(rng, math.prod(shape)).reshape(shape)
    scaled = np.multiply(halves, high, dtype=np.uint64)
    scaled >>= np.uint64(32)
    return scaled.view(np.int64)


def _percentile_replicates(log_g: FloatArray, reps: int, rng: np.random.Generator) -> FloatArray:
    """``reps`` bootstrap replicates of ``mean(log_g)``, drawn in memory-bounded blocks."""
    runs = log_g.size
    block = max(1, _BLOCK_ELEMENTS // runs)
    out = np.empty(reps, dtype=np.float64)
    for start in range(0, reps, block):
        stop = min(reps, start + block)
        # One replicate per column: the sum over a replicate then runs along axis 0, which numpy
        # vectorises across replicates (a row-wise mean over 30 values is several times slower).
        idx = _uniform_indices(rng, runs, (runs, stop - start))
        out[start:stop] = log_g[idx].sum(axis=0) / runs
    return out


def _percentile_bounds(replicates: FloatArray, confidence: float) -> tuple[float, float]:
    lo, hi = np.quantile(replicates, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(lo), float(hi)


def _log_interval(
    log_g: FloatArray,
    *,
    confidence: float,
    reps: int,
    method: str,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Interval bounds for ``mean(log_g)`` on the log scale (validated arguments)."""
    if np.all(log_g == log_g[0]):
        # Every resample is identical: the interval is the point itself. Short-circuited because
        # BCa and the studentized method divide by the (zero) spread.
        point = float(log_g.mean())
        return point, point
    if method == "percentile":
        return _percentile_bounds(_percentile_replicates(log_g, reps, rng), confidence)
    if method == "expanded":
        wider = expanded_confidence(confidence, log_g.size)
        return _percentile_bounds(_percentile_replicates(log_g, reps, rng), wider)
    if method == "bca":
        return _bca_log_interval(log_g, confidence=confidence, reps=reps, rng=rng)
    return _arch_log_interval(log_g, confidence=confidence, reps=reps, method=method, rng=rng)


def _t_two_sided_cdf(theta: float, df: int) -> float:
    """``P(|T| <= sqrt(df) * tan(theta))`` for Student's t with integer ``df`` >= 1.

    The exact finite series of Abramowitz and Stegun 26.7.3 (odd ``df``) and 26.7.4 (even),
    written in ``theta = atan(t / sqrt(df))``.
    """
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 1:
        # (2/pi) * (theta + sin cos * (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)), to cos^(df-3).
        if df == 1:
            return 2.0 * theta / math.pi
        for j in range(1, (df - 1) // 2):
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    # sin * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...), to cos^(df-2).
    for j in range(1, df // 2):
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


#: Above this many degrees of freedom the t quantile comes from its expansion around the normal.
_T_SERIES_LIMIT = 2000


def _t_quantile_two_sided(level: float, df: int) -> float:
    """The ``t`` with ``P(|T| <= t) = level`` for Student's t with integer ``df`` >= 1.

    Bisection on the exact series of :func:`_t_two_sided_cdf` (to double precision), or for
    ``df`` above ``_T_SERIES_LIMIT`` the Cornish-Fisher expansion to ``1/df**2`` (relative error
    below 1e-8 there, against ``scipy.special.stdtrit``). This keeps scipy out of every analysis:
    ``scipy.special`` takes 0.5-0.8 s to import on the development VM, longer than the rest of a
    typical ``duet analyze``.
    """
    from statistics import NormalDist

    if df > _T_SERIES_LIMIT:
        z = NormalDist().inv_cdf(0.5 + level / 2.0)
        return z + (z**3 + z) / (4.0 * df) + (5.0 * z**5 + 16.0 * z**3 + 3.0 * z) / (96.0 * df * df)
    lo, hi = 0.0, math.pi / 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if _t_two_sided_cdf(mid, df) < level:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df) * math.tan((lo + hi) / 2.0)


def expanded_confidence(confidence: float, runs: int) -> float:
    """The confidence level at which to read the percentile interval so that it has about
    ``confidence`` coverage with few runs (Hesterberg's expanded percentile interval).

    The percentile interval is too narrow for small samples: it behaves like a z interval with
    the ``n - 1`` variance divisor missing. Reading it at ``alpha' / 2 =
    Phi(-sqrt(n / (n - 1)) * t_{1 - alpha/2, n - 1})`` corrects both. The t quantile is computed
    here without scipy (:func:`_t_quantile_two_sided`; tests compare it with
    ``scipy.special.stdtrit``), since ``expanded`` is the interval every ``duet`` analysis uses.

    References
    ----------
    .. [1] T. Hesterberg, "What Teachers Should Know about the Bootstrap", arXiv:1411.5279,
       2014, section 5.3 ("expanded percentile interval").
    .. [2] M. Abramowitz, I. A. Stegun, "Handbook of Mathematical Functions", 1964, 26.7.3-4
       (the t distribution for integer degrees of freedom) and 26.7.5 (its expansion).
    """
    from statistics import NormalDist

    if runs < 2:
        raise ValueError(f"runs must be at least 2, got {runs}")
    t = _t_quantile_two_sided(confidence, runs - 1)
    half = NormalDist().cdf(-math.sqrt(runs / (runs - 1)) * t)
    return 1.0 - 2.0 * half


def _bca_log_interval(
    log_g: FloatArray, *, confidence: float, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    import scipy.stats  # lazy: scipy.stats takes about 1 s to import

    def mean(x: FloatArray, axis: int = -1) -> Any:
        return np.mean(x, axis=axis)

    result = scipy.stats.bootstrap(
        (log_g,),
        mean,
        n_resamples=reps,
        batch=max(1, _BLOCK_ELEMENTS // log_g.size),
        vectorized=True,
        axis=-1,
        confidence_level=confidence,
        method="BCa",
        rng=rng,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _arch_log_interval(
    log_g: FloatArray, *, confidence: float, reps: int, method: str, rng: np.random.Generator
) -> tuple[float, float]:
    try:
        from arch.bootstrap import IIDBootstrap  # optional extra, about 1.8 s to import
    except ImportError as exc:
        raise ImportError(
            f"the {method!r} interval method needs the optional 'arch' package; install it with "
            "pip install 'duet-bench[arch]', or use method='percentile' (the default) or 'bca'"
        ) from exc

    def mean(x: FloatArray) -> FloatArray:
        return np.atleast_1d(np.mean(x))

    def std_err(params: FloatArray, x: FloatArray) -> FloatArray:
        # The standard error of a mean is known in closed form; without it arch would run a
        # nested bootstrap of 1,000 replicates inside every one of the ``reps`` replicates.
        return np.atleast_1d(np.std(x, ddof=1) / np.sqrt(x.size))

    bs = IIDBootstrap(log_g, seed=rng)
    ci = bs.conf_int(
        mean,
        reps=reps,
        method="studentized" if method == "studentized" else "basic",
        size=confidence,
        std_err_func=std_err if method == "studentized" else None,
    )
    return float(ci[0, 0]), float(ci[1, 0])


def bootstrap_ci(
    run_geomeans: ArrayLike,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    reps: int = 10_000,
    method: IntervalMethod = "percentile",
    rng: np.random.Generator,
) -> Interval:
    """Bootstrap confidence interval over runs for the grand geometric mean.

    Resamples the runs with replacement ``reps`` times and computes ``G*`` for each resample.
    ``"percentile"`` takes the ``(1 - c)/2`` and ``(1 + c)/2`` quantiles of ``G*`` (numpy,
    vectorised in blocks). ``"bca"`` is the bias-corrected and accelerated interval of
    ``scipy.stats.bootstrap``; ``"basic"`` and ``"studentized"`` come from
    ``arch.bootstrap.IIDBootstrap`` (optional extra, imported on first use; the studentized
    method uses the closed-form standard error of a mean). All methods work on ``log g`` and
    transform the bounds back with ``exp``; for the percentile method this is the same interval
    as on ``G*`` itself, up to interpolation between neighbouring replicates.

    Parameters
    ----------
    run_geomeans : array_like, shape (runs,)
        Positive finite per-run geometric means ``g[r]``; at least 2.
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.
    reps : int, default 10_000
        Number of bootstrap replicates, >= 1.
    method : {"percentile", "bca", "basic", "studentized"}, default "percentile"
        Interval construction.
    rng : numpy.random.Generator
        Source of randomness; the same seed gives the same interval.

    Returns
    -------
    Interval

    Raises
    ------
    ValueError
        On fewer than 2 values, non-positive or non-finite values, ``confidence`` outside
        (0, 1), ``reps < 1`` or an unknown ``method``.
    ImportError
        For ``"basic"`` or ``"studentized"`` when arch is not installed.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    When every ``g[r]`` is equal the interval is ``[G, G]`` for every method.
    ``duet_ratio`` only calls this with at least ``MIN_BOOTSTRAP_RUNS`` runs.

    References
    ----------
    .. [1] Bulej et al., "Duet Benchmarking", ICPE 2020, section 3, step 5 (non-parametric
       percentile bootstrap of ``ggms`` over the per-run means ``gms``).
    .. [2] T. Hesterberg, "What Teachers Should Know about the Bootstrap", arXiv:1411.5279,
       2014 (reference [12] of the duet paper).
    .. [3] B. Efron, "Better Bootstrap Confidence Intervals", JASA 82(397), 1987 (BCa).
    """
    g = as_vector(run_geomeans, name="run_geomeans", min_size=2)
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    method = _check_method(method)
    rng = check_rng(rng)
    lo, hi = _log_interval(np.log(g), confidence=confidence, reps=reps, method=method, rng=rng)
    return Interval(
        low=float(np.exp(lo)),
        high=float(np.exp(hi)),
        confidence=confidence,
        method=method,
        reps=reps,
    )


def duet_ratio(
    baseline_ns: ArrayLike,
    candidate_ns: ArrayLike,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    reps: int = 10_000,
    method: IntervalMethod = "percentile",
    winsorize: bool = True,
    winsorize_min_iterations: int = MIN_ITERATIONS,
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
    """
    a, b = _paired_runs(baseline_ns, candidate_ns, min_runs=2)
    confidence = check_confidence(confidence)
    reps = check_count(reps, name="reps")
    min_iterations = check_count(winsorize_min_iterations, name="winsorize_min_iterations")
    method = _check_method(method)
    rng = check_rng(rng)
    log_s = np.log(b) - np.log(a)
    replaced = 0
    if winsorize:
        log_s, replaced = _winsorize_rows(log_s, DEFAULT_FRACTION, min_iterations)
    log_g = log_s.mean(axis=1)
    runs, iterations = log_s.shape
    ci_low: float | None = None
    ci_high: float | None = None
    used_reps = 0
    if runs >= MIN_BOOTSTRAP_RUNS:
        lo, hi = _log_interval(log_g, confidence=confidence, reps=reps, method=method, rng=rng)
        ci_low, ci_high = float(np.exp(lo)), float(np.exp(hi))
        used_reps = reps
    return RatioEstimate(
        ratio=float(np.exp(log_g.mean())),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        method=method,
        reps=used_reps,
        runs=runs,
        iterations=iterations,
        winsorized=replaced,
        run_ratios=_frozen(np.exp(log_g)),
    )
