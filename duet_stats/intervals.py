"""The bootstrap interval over runs of the duet ratio, five ways (docs/statistics.md, method 1).

The interval is built on the log scale, around the mean of the log run ratios ``log g[r]``, and
its bounds transformed back with ``exp``. ``"percentile"`` is the duet paper's method;
``"expanded"`` (what ``duet`` analyses with) reads the same replicates at a wider level so that
few runs keep their coverage; ``"bca"`` comes from scipy, ``"basic"`` and ``"studentized"`` from
the optional arch. scipy and arch are imported on first use only: ``import duet_stats`` stays
numpy-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast, get_args

import numpy as np

from duet_stats._resample import BLOCK_ELEMENTS, mean_replicates, percentile_bounds
from duet_stats._typing import ArrayLike, FloatArray, IntervalMethod
from duet_stats._validate import as_vector, check_confidence, check_count, check_rng

__all__ = [
    "DEFAULT_CONFIDENCE",
    "Interval",
    "bootstrap_ci",
    "expanded_confidence",
]

#: The confidence level of every interval in ``duet_stats`` when the caller gives none: the one
#: default of the package, for using it on its own. duet does not rely on it: it always passes
#: the level it resolved (``duet_bench.settings``; ``duet_stats`` never imports ``duet_bench``).
DEFAULT_CONFIDENCE = 0.99

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
        ``"percentile"``, ``"expanded"``, ``"bca"``, ``"basic"`` or ``"studentized"``.
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
    vectorised in blocks); ``"expanded"`` reads the same replicates at the wider level of
    :func:`expanded_confidence`. ``"bca"`` is the bias-corrected and accelerated interval of
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
    method : {"percentile", "expanded", "bca", "basic", "studentized"}, default "percentile"
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
    method = check_method(method)
    rng = check_rng(rng)
    lo, hi = log_interval(np.log(g), confidence=confidence, reps=reps, method=method, rng=rng)
    return Interval(
        low=float(np.exp(lo)),
        high=float(np.exp(hi)),
        confidence=confidence,
        method=method,
        reps=reps,
    )


def check_method(method: object) -> IntervalMethod:
    """``method`` if it names one of the five interval methods, else a ``ValueError``."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    return cast("IntervalMethod", method)


def log_interval(
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
        return percentile_bounds(mean_replicates(log_g, reps, rng), confidence)
    if method == "expanded":
        wider = expanded_confidence(confidence, log_g.size)
        return percentile_bounds(mean_replicates(log_g, reps, rng), wider)
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


def t_two_sided_p(t: float, df: int) -> float:
    """``P(|T| >= t)`` for Student's t with ``df`` >= 1 degrees of freedom, without scipy (the
    core install has none): the exact series of :func:`_t_two_sided_cdf` up to
    :data:`_T_SERIES_LIMIT` degrees of freedom, the normal tail above."""
    if df > _T_SERIES_LIMIT:
        return math.erfc(abs(t) / math.sqrt(2.0))
    return max(0.0, 1.0 - _t_two_sided_cdf(math.atan(abs(t) / math.sqrt(df)), df))


def f_survival(f: float, df1: int, df2: int) -> float:
    """``P(F >= f)`` for Snedecor's F with ``(df1, df2)`` degrees of freedom, without scipy:
    Paulson's normal approximation of the cube root of F (Abramowitz and Stegun 26.6.15),
    within about 0.01 of the exact tail for df1, df2 >= 3; scipy's ``fdtrc`` where installed."""
    try:
        import scipy.special  # an optional extra; lazy: about 0.3 s to import
    except ImportError:
        return _f_survival_paulson(f, df1, df2)
    return float(scipy.special.fdtrc(df1, df2, f))


def _f_survival_paulson(f: float, df1: int, df2: int) -> float:
    """Paulson's approximation of ``P(F >= f)``: :func:`f_survival` without scipy."""
    a, b = 2.0 / (9.0 * df1), 2.0 / (9.0 * df2)
    root = max(f, 0.0) ** (1.0 / 3.0)
    z = ((1.0 - b) * root - (1.0 - a)) / math.sqrt(b * root * root + a)
    return 0.5 * math.erfc(z / math.sqrt(2.0))


#: Above this many degrees of freedom the t quantile comes from its expansion around the normal.
_T_SERIES_LIMIT = 2000


def t_quantile_two_sided(level: float, df: int) -> float:
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
    here without scipy (:func:`t_quantile_two_sided`; tests compare it with
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
    t = t_quantile_two_sided(confidence, runs - 1)
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
        batch=max(1, BLOCK_ELEMENTS // log_g.size),
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
