"""The planning of an A/A experiment (``docs/statistics.md``, method 5): variance components of
the duet's data, the runs and iterations that decide at a threshold, and the interval width a plan
buys. (Named ``experiment``, not ``plan``: :mod:`duet_bench.plan` is the runs of a benchmark.)

The numbers come from :mod:`duet_stats.planning` ([KBT] formulas 3-5 and 8); this module adds the
duet side: the unbiased run-effect variance the formulas need, the bounds a recommendation
keeps within, and the machine time it costs.

References
----------
.. [KBT] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
   SPECTS 2005: additive model and formulas 3-5, 8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from duet_bench.config.model import RecommendedSettings
from duet_bench.metrics import MetricName
from duet_stats import FloatArray
from duet_stats.planning import (
    VarianceComponents,
    ci_half_width,
    optimal_iterations,
    runs_needed,
    variance_components,
)

if TYPE_CHECKING:
    from duet_stats.planning import VarianceComponents

__all__ = [
    "EXTRAPOLATION",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "MIN_RUNS",
    "RUNS_GRID",
    "Components",
    "Method",
    "Recommendation",
    "components_of",
    "recommend",
    "summed",
    "width_for_runs",
]

Method: TypeAlias = Literal["duet", "sequential"]

#: Fewer runs than this are never recommended: a percentile bootstrap over fewer runs
#: under-covers (the method, docs/statistics.md, says nothing below 5 at all; 10 is the paper's and
#: duet's default).
MIN_RUNS = 10
#: Fewer measured iterations per run than this are never recommended: winsorization and the
#: within-run variance need a few values per run, and they cost little next to a run's start-up.
MIN_ITERATIONS = 5
#: More iterations per run than this are never recommended: formula 8 extrapolates from the
#: measured iterations, and a run many times longer than the calibration's runs is untested.
MAX_ITERATIONS = 1000
#: ... nor more than this many times the iterations the calibration measured per run (with a
#: floor of :data:`EXTRAPOLATION_FLOOR`): a run effect estimated as 0 from a few runs would
#: otherwise always send formula 8 to the maximum.
EXTRAPOLATION = 10
EXTRAPOLATION_FLOOR = 100
#: Runs shown in the "interval width against runs" table and plot.
RUNS_GRID = (5, 10, 15, 20, 30, 50, 100, 200)


@dataclass(frozen=True, slots=True)
class Components:
    """Variance components of one series under the additive model ([KBT] formulas 3 and 4).

    Attributes
    ----------
    within_run_var : float
        ``S_X^2``, the mean within-run sample variance (formula 3).
    between_run_var : float
        ``S_A^2``, the sample variance of the run means (formula 4, docs/statistics.md, method 5).
        Its expectation is ``var A + var X / n``: it still holds the within-run noise of a
        mean of ``n`` iterations.
    run_effect_var : float
        ``max(0, S_A^2 - S_X^2 / n)``: the unbiased estimate of ``var A``, the variance of the
        run effect itself (the one-way random-effects ANOVA estimator). The planning uses this
        one; with ``S_A^2`` instead, formula 5 would count ``var X / n`` twice.
    runs, iterations : int
        Shape of the data they come from.
    """

    within_run_var: float
    between_run_var: float
    run_effect_var: float
    runs: int
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "within_run_var": self.within_run_var,
            "between_run_var": self.between_run_var,
            "run_effect_var": self.run_effect_var,
            "runs": self.runs,
            "iterations": self.iterations,
        }


@dataclass(frozen=True, slots=True)
class Recommendation:
    """Runs, iterations and warm-up that reach a threshold at a confidence, and their cost.

    Attributes
    ----------
    method : {"duet", "sequential"}
    runs, iterations, warmup : int
    target_half_width : float
        The log-scale half-width aimed at: ``log(1 + threshold) / 2`` (see
        ``docs/calibration.md``: with it an unchanged benchmark gets "no change", and a change
        of the threshold's size is significant, each with about the confidence's probability).
    expected_ci_width : float
        The relative interval width formula 5 predicts for this plan.
    optimal_iterations : int
        Formula 8's ``n*`` (within ``max_iterations``) before the floor
        :data:`MIN_ITERATIONS` was applied.
    max_iterations : int
        The cap that applied; ``optimal_iterations == max_iterations`` means formula 8 asked for
        more (the run effect is small next to the iteration noise).
    run_cost_iterations : float
        ``w``: start-up cost plus warm-up, in iterations.
    machine_time_ns : float or None
        Expected wall time of one benchmark with this plan (None when the start-up cost or
        the iteration time is unknown).
    reachable : bool
        False when even the maximum number of runs does not reach the target.
    """

    method: Method
    runs: int
    iterations: int
    warmup: int
    threshold: float
    confidence: float
    target_half_width: float
    expected_ci_width: float
    optimal_iterations: int
    run_cost_iterations: float
    machine_time_ns: float | None
    reachable: bool
    max_iterations: int = MAX_ITERATIONS
    metric: MetricName = "wall"
    #: The core design, when the designs were compared (``--compare-designs``) and a duet design
    #: won; None otherwise (the configuration's setting is left as it is).
    crossover: Literal["iteration", "run"] | None = None

    def recommendation(self) -> RecommendedSettings:
        """What ``--write`` puts into the configuration."""
        return RecommendedSettings(
            runs=self.runs,
            iterations=self.iterations,
            warmup=self.warmup,
            method=self.method,
            metric=self.metric,
            crossover=self.crossover,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.recommendation().to_toml(),
            "threshold": self.threshold,
            "confidence": self.confidence,
            "target_half_width": self.target_half_width,
            "expected_ci_width": self.expected_ci_width,
            "optimal_iterations": self.optimal_iterations,
            "max_iterations": self.max_iterations,
            "run_cost_iterations": self.run_cost_iterations,
            "machine_time_ns": self.machine_time_ns,
            "reachable": self.reachable,
        }


def components_of(series: FloatArray) -> Components | None:
    """Variance components of a ``(runs, iterations)`` series, None when there are fewer
    than 2 runs or iterations."""
    if series.shape[0] < 2 or series.shape[1] < 2:
        return None
    c = variance_components(series)
    return Components(
        within_run_var=c.within_run_var,
        between_run_var=c.between_run_var,
        run_effect_var=max(0.0, c.between_run_var - c.within_run_var / c.iterations),
        runs=c.runs,
        iterations=c.iterations,
    )


def summed(a: Components | None, b: Components | None) -> Components | None:
    """Components of the difference of two independent series (the sequential method)."""
    if a is None or b is None:
        return None
    return Components(
        within_run_var=a.within_run_var + b.within_run_var,
        between_run_var=a.between_run_var + b.between_run_var,
        run_effect_var=a.run_effect_var + b.run_effect_var,
        runs=min(a.runs, b.runs),
        iterations=min(a.iterations, b.iterations),
    )


def _planning(c: Components) -> VarianceComponents:
    """The stats-side components for planning: ``var A`` estimated without its ``var X / n``."""
    return VarianceComponents(
        within_run_var=c.within_run_var,
        between_run_var=c.run_effect_var,
        runs=c.runs,
        iterations=c.iterations,
        grand_mean=0.0,
    )


def width_for_runs(
    components: Components, *, iterations: int, runs: Sequence[int], confidence: float
) -> dict[int, float]:
    """Relative interval width that formula 5 predicts for each number of runs.

    The log-scale half-width ``h`` becomes the relative width ``exp(h) - exp(-h)``.
    """
    plan = _planning(components)
    out: dict[int, float] = {}
    for k in runs:
        if k < 2:
            continue
        h = ci_half_width(plan, runs=k, iterations=iterations, confidence=confidence)
        out[k] = math.exp(h) - math.exp(-h)
    return out


def recommend(
    components: Components,
    *,
    threshold: float,
    confidence: float,
    method: Method = "duet",
    warmup: int = 0,
    startup_iterations: float | None = None,
    startup_ns: float | None = None,
    iteration_ns: float | None = None,
    min_runs: int = MIN_RUNS,
    max_iterations: int = MAX_ITERATIONS,
    max_runs: int = 10_000,
) -> Recommendation:
    """Plan runs and iterations that decide at ``threshold`` with ``confidence``.

    The iterations per run are [KBT] formula 8, ``n* = ceil(sqrt(w S_X^2 / var A))`` with
    ``w = startup_iterations + warmup`` (the cost of a run in iterations), kept within
    ``[MIN_ITERATIONS, max_iterations]``; the runs are the fewest whose formula-5 half-width is
    at most ``log(1 + threshold) / 2``, and at least ``min_runs``. ``var A`` is the unbiased
    run-effect variance (:class:`Components`).

    Parameters
    ----------
    components : Components
        Of the log ratios (duet) or the summed per-side log times (sequential).
    threshold : float
        Practical-significance threshold, > 0.
    confidence : float
        Confidence level, in (0, 1).
    method : {"duet", "sequential"}
        The sequential method runs the two sides one after the other: twice the time per run.
    warmup : int
        Warm-up iterations per run.
    startup_iterations : float, optional
        Process start-up and set-up time of a run in iterations; 0 when unknown.
    startup_ns, iteration_ns : float, optional
        For the machine-time estimate.
    min_runs, max_iterations, max_runs : int
        Bounds of the plan.

    Returns
    -------
    Recommendation

    Raises
    ------
    ValueError
        If ``threshold`` is not positive or ``confidence`` not in (0, 1).

    References
    ----------
    .. [1] Kalibera, Bulej, Tůma, section 5.2, formulas 5 and 8.
    """
    if not (threshold > 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be positive and finite, got {threshold}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    plan = _planning(components)
    w = (startup_iterations or 0.0) + warmup
    n_star = optimal_iterations(plan, run_cost_iterations=w, max_iterations=max_iterations)
    n = min(max(n_star, MIN_ITERATIONS), max_iterations)
    target = math.log1p(threshold) / 2.0
    k = runs_needed(plan, iterations=n, half_width=target, confidence=confidence, max_runs=max_runs)
    reachable = k < max_runs or (
        ci_half_width(plan, runs=k, iterations=n, confidence=confidence) <= target
    )
    k = max(k, min_runs)
    h = ci_half_width(plan, runs=k, iterations=n, confidence=confidence)
    machine: float | None = None
    if startup_ns is not None and iteration_ns is not None:
        per_side_run = startup_ns + (warmup + n) * iteration_ns
        machine = k * per_side_run * (2 if method == "sequential" else 1)
    return Recommendation(
        method=method,
        runs=int(k),
        iterations=int(n),
        warmup=int(warmup),
        threshold=threshold,
        confidence=confidence,
        target_half_width=target,
        expected_ci_width=math.exp(h) - math.exp(-h),
        optimal_iterations=int(n_star),
        run_cost_iterations=w,
        machine_time_ns=machine,
        reachable=reachable,
        max_iterations=max_iterations,
    )
