"""Planning runs and iterations from variance components (Kalibera et al., formulas 3-5 and 8).

Under the additive model of Kalibera, Bulej and Tůma, a sample of run ``j`` is ``a_j + x_ji``: a
per-run offset drawn once when the run starts (variance ``var A``) plus per-iteration noise
(variance ``var X``). The two variances, estimated from an earlier experiment, tell how wide an
interval ``k`` runs of ``n`` iterations will give (formula 5), how many iterations per run make the
best use of a fixed budget (formula 8) and how many runs a target precision needs.

For the duet method the components are computed on the per-iteration log ratios ``log s``
(half-widths are then on the log scale, where ``h`` corresponds to a relative half-width of about
``h``); for one version alone on its iteration times. :func:`duet_stats.impact.impact_factors` on
the transformed data says whether the additive model fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from duet_stats._typing import ArrayLike
from duet_stats._validate import (
    as_runs,
    check_confidence,
    check_count,
    check_nonnegative,
    check_positive,
)
from duet_stats.intervals import t_quantile_two_sided
from duet_stats.ratio import DEFAULT_CONFIDENCE

__all__ = [
    "T_QUANTILE_BELOW",
    "VarianceComponents",
    "ci_half_width",
    "optimal_iterations",
    "runs_needed",
    "variance_components",
]

#: Below this many samples in total (``runs * iterations``) formula 5 uses the t quantile with
#: ``runs * (iterations - 1)`` degrees of freedom instead of the normal one. At 30 samples the
#: 99% t quantile (df >= 15) exceeds the normal one by at most 15%, less than the uncertainty of
#: a variance estimated from that few samples.
T_QUANTILE_BELOW = 30


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """Variance components of a ``(runs, iterations)`` experiment under the additive model.

    Attributes
    ----------
    within_run_var : float
        ``S_X^2``: mean over runs of the within-run sample variance (formula 3).
    between_run_var : float
        ``S_A^2``: sample variance of the run means (formula 4).
    runs, iterations : int
        Shape of the experiment the components were estimated from.
    grand_mean : float
        Mean of all samples (``r_{k,n}``).
    """

    within_run_var: float
    between_run_var: float
    runs: int
    iterations: int
    grand_mean: float


def variance_components(samples: ArrayLike) -> VarianceComponents:
    """Estimate ``S_X^2`` and ``S_A^2`` from ``runs x iterations`` samples.

    Parameters
    ----------
    samples : array_like, shape (runs, iterations)
        Finite samples: ``log s`` for the duet method, iteration times for one version; at least
        2 runs and 2 iterations per run.

    Returns
    -------
    VarianceComponents

    Raises
    ------
    ValueError
        On ragged, non-2-D or non-finite samples, or fewer than 2 runs or iterations.

    Notes
    -----
    Both variances use ``ddof=1``, as the paper's formulas 3 and 4.

    References
    ----------
    .. [1] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
       SPECTS 2005, section 5.2, formula 3 (``S(X)^2``, mean of per-run variances) and formula 4
       (``S(A)^2``, variance of run means).
    """
    data = as_runs(samples, name="samples", positive=False, min_runs=2, min_iterations=2)
    runs, iterations = data.shape
    run_means = data.mean(axis=1)
    return VarianceComponents(
        within_run_var=float(data.var(axis=1, ddof=1).mean()),
        between_run_var=float(run_means.var(ddof=1)),
        runs=runs,
        iterations=iterations,
        grand_mean=float(data.mean()),
    )


def _check_components(components: object) -> VarianceComponents:
    if not isinstance(components, VarianceComponents):
        raise TypeError(
            "components must be a VarianceComponents (from variance_components); "
            f"got {type(components).__name__}"
        )
    check_nonnegative(components.within_run_var, name="components.within_run_var")
    check_nonnegative(components.between_run_var, name="components.between_run_var")
    return components


def _quantile(confidence: float, runs: int, iterations: int) -> float:
    """Two-sided quantile of formula 5: normal, or t with k(n-1) df when kn is small."""
    p = (1.0 + confidence) / 2.0
    if runs * iterations >= T_QUANTILE_BELOW:
        return NormalDist().inv_cdf(p)
    # k(n-1) is the paper's choice; with one iteration per run it is 0, so use the k-1 degrees
    # of freedom of the run means, the only variance estimable from such an experiment.
    df = runs * (iterations - 1) if iterations > 1 else runs - 1
    # Without scipy: the core install has none, and every inconclusive analysis plans its runs.
    return t_quantile_two_sided(confidence, df)


def _half_width(c: VarianceComponents, runs: int, iterations: int, confidence: float) -> float:
    spread = (iterations * c.between_run_var + c.within_run_var) / (runs * iterations)
    return _quantile(confidence, runs, iterations) * math.sqrt(spread)


def ci_half_width(
    components: VarianceComponents,
    *,
    runs: int,
    iterations: int,
    confidence: float = DEFAULT_CONFIDENCE,
) -> float:
    """Half-width of the confidence interval for the mean with ``runs`` x ``iterations`` samples.

    ``q * sqrt((n * S_A^2 + S_X^2) / (k * n))`` with ``k = runs``, ``n = iterations`` and ``q``
    the normal quantile ``z_{(1+c)/2}``, or the t quantile with ``k(n-1)`` degrees of freedom when
    ``k * n < T_QUANTILE_BELOW`` (30).

    Parameters
    ----------
    components : VarianceComponents
        From :func:`variance_components` on an earlier experiment.
    runs : int
        Planned number of runs ``k``, >= 2.
    iterations : int
        Planned measured iterations per run ``n``, >= 1.
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.

    Returns
    -------
    float
        The half-width, in the units of the samples the components came from.

    Raises
    ------
    ValueError
        If ``runs < 2``, ``iterations < 1``, ``confidence`` is outside (0, 1) or a component is
        negative or non-finite.
    TypeError
        If ``components`` is not a :class:`VarianceComponents`.

    Notes
    -----
    With ``iterations == 1`` and fewer than 30 runs the t quantile has ``k - 1`` degrees of
    freedom, since ``k(n-1)`` would be 0.

    References
    ----------
    .. [1] Kalibera, Bulej, Tůma, "Benchmark Precision and Random Initial State", section 5.2,
       formula 5 and the paragraph after it (t quantile with ``k(n-1)`` degrees of freedom when
       ``kn`` is small).
    """
    c = _check_components(components)
    runs = check_count(runs, name="runs", minimum=2)
    iterations = check_count(iterations, name="iterations")
    confidence = check_confidence(confidence)
    return _half_width(c, runs, iterations, confidence)


def optimal_iterations(
    components: VarianceComponents,
    *,
    run_cost_iterations: float,
    max_iterations: int = 10_000,
) -> int:
    """Optimal measured iterations per run: ``ceil(sqrt(w * S_X^2 / S_A^2))`` (formula 8).

    Minimises the half-width of formula 5 for a fixed total cost ``k (w + n)``.

    Parameters
    ----------
    components : VarianceComponents
        From :func:`variance_components`.
    run_cost_iterations : float
        ``w``: the cost of starting a run in iterations (warm-up iterations plus process start-up
        and set-up time divided by the mean iteration time), >= 0.
    max_iterations : int, default 10_000
        Upper bound of the result, >= 1.

    Returns
    -------
    int
        In ``[1, max_iterations]``. ``max_iterations`` when ``S_A^2 == 0`` (runs do not differ:
        as few runs as possible, as many iterations as allowed).

    Raises
    ------
    ValueError
        If ``run_cost_iterations`` is negative or non-finite, ``max_iterations < 1`` or a
        component is invalid.
    TypeError
        If ``components`` is not a :class:`VarianceComponents`.

    References
    ----------
    .. [1] Kalibera, Bulej, Tůma, "Benchmark Precision and Random Initial State", section 5.2,
       formulas 6-8 (cost ``k(w + n)``; the paper's brackets are read as rounding up).
    """
    c = _check_components(components)
    w = check_nonnegative(run_cost_iterations, name="run_cost_iterations")
    max_iterations = check_count(max_iterations, name="max_iterations")
    if c.between_run_var == 0.0:
        return max_iterations
    optimum = math.sqrt(w * c.within_run_var / c.between_run_var)
    if not optimum < max_iterations:  # also catches an overflow to inf
        return max_iterations
    return max(1, math.ceil(optimum))


def runs_needed(
    components: VarianceComponents,
    *,
    iterations: int,
    half_width: float,
    confidence: float = DEFAULT_CONFIDENCE,
    max_runs: int = 100_000,
) -> int:
    """Smallest number of runs whose formula-5 half-width is at most ``half_width``.

    Solves ``z^2 (n S_A^2 + S_X^2) / (k n) <= h^2`` for ``k``; when the solution has fewer than
    ``T_QUANTILE_BELOW`` samples in total the t quantile applies and ``k`` is increased until the
    t-based half-width meets the target.

    Parameters
    ----------
    components : VarianceComponents
        From :func:`variance_components`.
    iterations : int
        Measured iterations per run ``n``, >= 1.
    half_width : float
        Target half-width ``h`` (> 0), in the units of the samples (log units for duet log
        ratios, where ``log(1 + t)`` is the half-width that decides at threshold ``t``).
    confidence : float, default 0.99
        Confidence level, strictly between 0 and 1.
    max_runs : int, default 100_000
        Upper bound of the result, >= 2.

    Returns
    -------
    int
        The total number of runs ``k``, at least 2 (a variance needs two runs) and at most
        ``max_runs``; a result equal to ``max_runs`` means the target may be out of reach.

    Raises
    ------
    ValueError
        If ``iterations < 1``, ``half_width`` is not positive and finite, ``confidence`` is
        outside (0, 1), ``max_runs < 2`` or a component is invalid.
    TypeError
        If ``components`` is not a :class:`VarianceComponents`.

    References
    ----------
    .. [1] Kalibera, Bulej, Tůma, "Benchmark Precision and Random Initial State", section 5.2,
       formula 5 solved for ``k``.
    """
    c = _check_components(components)
    iterations = check_count(iterations, name="iterations")
    h = check_positive(half_width, name="half_width")
    confidence = check_confidence(confidence)
    max_runs = check_count(max_runs, name="max_runs", minimum=2)
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    per_run = (iterations * c.between_run_var + c.within_run_var) / iterations
    exact = z * z * per_run / (h * h)
    if not exact < max_runs:
        return max_runs
    k = max(2, math.ceil(exact))
    # ceil() of a value that is an integer up to rounding can overshoot by one.
    if k > 2 and _half_width(c, k - 1, iterations, confidence) <= h:
        k -= 1
    # The t quantile exceeds z, so no smaller k can do; only larger ones need checking, and only
    # while the t quantile applies (k * n < 30 means k < 30).
    while k < max_runs and k * iterations < T_QUANTILE_BELOW:
        if _half_width(c, k, iterations, confidence) <= h:
            break
        k += 1
    return k
