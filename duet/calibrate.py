"""The A/A calibrator (``method.md`` sections 4-6): what this machine can detect, and how to
spend a CI budget on it.

An A/A duet runs the *same* version on both sides, swapping the sides' cores across runs. From
it this module computes, without measuring anything itself:

- the A/A ratio and its interval (which must contain 1), and its width: the accuracy figure;
- the sync gain: the width when runs are paired with *other* runs' data (no shared noise)
  divided by the duet width, i.e. what running the two sides together buys here;
- Kalibera's impact factor, plain and on run-mean-centred data, per side and on the log ratios,
  and whether the additive model under which the planning formulas hold fits;
- variance components of the log ratios, the optimal iterations per run (Kalibera formula 8,
  with the measured start-up cost as ``w``) and the runs needed to decide at a threshold;
- the warm-up, from where the iteration series stops trending;
- the side asymmetry (is one core faster?) with its interval, and the barrier's start skew;
- with a sequential A/A of the same benchmark, the accuracy gain of duet over it;
- which method pays on this machine, and a recommendation ``{method, runs, iterations,
  warmup}`` with the machine time it costs.

:func:`calibrate` takes :class:`AAData` (arrays; :func:`aa_data` builds it from a results
document's :class:`~duet.results.BenchmarkRecord`) and returns a frozen :class:`Calibration`.
:func:`recommend` is the planning step on its own. The choices made where ``method.md`` is
silent are listed in ``docs/calibration.md``.

References
----------
.. [KBT] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
   SPECTS 2005: impact factor (Figure 2), additive model and formulas 3-5, 8.
.. [duet] L. Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud",
   ICPE 2020: A/A experiments, shuffled pairing (RQ2), accuracy gain (RQ1).
.. [MSER] K. P. White, "An effective truncation heuristic for bias reduction in simulation
   output", Simulation 69(6), 1997; K. Hoad, S. Robinson, R. Davies, "Automating warm-up
   length estimation", JORS 61, 2010 (MSER for warm-up detection).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from duet import units
from duet.analysis import rng_for, verdict
from duet.metrics import METRIC_NAMES, Metric, not_cpu_bound
from duet.results import BenchmarkRecord, SideRecord
from stats._typing import IntervalMethod

__all__ = [
    "ADDITIVE_LIMIT",
    "EXTRAPOLATION",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "MIN_RUNS",
    "AAData",
    "Calibration",
    "Components",
    "ImpactEntry",
    "Recommendation",
    "SequentialComparison",
    "SideAsymmetry",
    "StartSkew",
    "Warmup",
    "aa_data",
    "calibrate",
    "detect_warmup",
    "recommend",
    "width_for_runs",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
Method: TypeAlias = Literal["duet", "sequential"]

#: The additive model "fits" when the impact factor of the run-mean-centred data is at most
#: this. [KBT] section 5.2 asks for "tends to 1"; 1.2 leaves room for the sampling noise of a
#: median of 10,000 SD ratios over a few dozen runs (a centred run of n samples has SD
#: sqrt(1 - 1/n) of the uncentred one, which moves the value by a few percent on its own).
ADDITIVE_LIMIT = 1.2
#: Fewer runs than this are never recommended: a percentile bootstrap over fewer runs
#: under-covers (method.md says nothing below 5 at all; 10 is the paper's and duet's default).
MIN_RUNS = 10
#: Fewer measured iterations per run than this are never recommended: winsorization and the
#: within-run variance need a few values per run, and they cost little next to a run's start-up.
MIN_ITERATIONS = 5
#: More iterations per run than this are never recommended: formula 8 extrapolates from the
#: measured iterations, and a run many times longer than the calibration's runs is untested.
MAX_ITERATIONS = 1000
#: ... nor more than this many times the iterations the calibration measured per run (with a
#: floor of :data:`_EXTRAPOLATION_FLOOR`): a run effect estimated as 0 from a few runs would
#: otherwise always send formula 8 to the maximum.
EXTRAPOLATION = 10
_EXTRAPOLATION_FLOOR = 100
#: Iterations that must remain after the detected warm-up is removed from the analysis.
_KEEP_AT_LEAST = 3
#: The series is "flat" when a warm-up deviation is below this fraction of the decision band.
_WARMUP_TOLERANCE_OF_BAND = 0.25
_IMPACT_REPS = 10_000
#: Standard errors of the profile a warm-up iteration must lie outside of.
_WARMUP_SE = 4.0
#: Runs shown in the "interval width against runs" table and plot.
RUNS_GRID = (5, 10, 15, 20, 30, 50, 100, 200)


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True, slots=True)
class AAData:
    """One A/A measurement as arrays (successful runs only, cut to a common length).

    Attributes
    ----------
    name : str
        The benchmark.
    method : {"duet", "sequential"}
        How it was measured.
    baseline_ns, candidate_ns : ndarray, shape (runs, iterations)
        Measured iteration times of the two (identical) sides.
    baseline_warmup_ns, candidate_warmup_ns : ndarray, shape (runs, warmup)
        The recorded warm-up iterations (may have 0 columns).
    baseline_cpus : tuple of int or None
        Per run, the CPU the baseline sat on (None when not recorded).
    start_skew_ns : ndarray of shape (runs, iterations), or None
        ``candidate start - baseline start`` of every measured iteration, from the recorded
        ``iteration_start_ns`` (same monotonic clock on both sides); None when not recorded or
        for the sequential method.
    wall_ns : ndarray of shape (runs, 2), or None
        Per run, the wall time of each side from its start to its exit (None if unrecorded).
    failed_runs : int
        Runs that failed and are not in the arrays.
    """

    name: str
    method: Method
    baseline_ns: FloatArray
    candidate_ns: FloatArray
    baseline_warmup_ns: FloatArray
    candidate_warmup_ns: FloatArray
    baseline_cpus: tuple[int | None, ...]
    start_skew_ns: FloatArray | None = None
    wall_ns: FloatArray | None = None
    failed_runs: int = 0

    def __post_init__(self) -> None:
        a, b = self.baseline_ns, self.candidate_ns
        if a.ndim != 2 or a.shape != b.shape:
            raise ValueError(
                f"baseline_ns {a.shape} and candidate_ns {b.shape} must be 2-D of one shape"
            )
        if a.shape[0] < 2 or a.shape[1] < 1:
            raise ValueError(
                f"an A/A calibration needs at least 2 successful runs of 1 iteration, got "
                f"{a.shape[0]} x {a.shape[1]}"
            )
        if not (
            np.all(np.isfinite(a)) and np.all(a > 0) and np.all(np.isfinite(b)) and np.all(b > 0)
        ):
            raise ValueError("iteration times must be positive and finite")
        for w in (self.baseline_warmup_ns, self.candidate_warmup_ns):
            if w.ndim != 2 or w.shape[0] != a.shape[0]:
                raise ValueError(f"warm-up arrays must have {a.shape[0]} rows, got {w.shape}")
        if len(self.baseline_cpus) != a.shape[0]:
            raise ValueError(f"baseline_cpus needs {a.shape[0]} entries")
        if self.start_skew_ns is not None and self.start_skew_ns.shape != a.shape:
            raise ValueError("start_skew_ns must have the shape of the iteration times")
        if self.wall_ns is not None and self.wall_ns.shape != (a.shape[0], 2):
            raise ValueError(f"wall_ns must have shape ({a.shape[0]}, 2)")

    @property
    def runs(self) -> int:
        return int(self.baseline_ns.shape[0])

    @property
    def iterations(self) -> int:
        return int(self.baseline_ns.shape[1])

    @property
    def warmup(self) -> int:
        return int(self.baseline_warmup_ns.shape[1])


def _rows(values: Sequence[Sequence[int]], width: int) -> FloatArray:
    return np.array([list(v)[:width] for v in values], dtype=np.float64).reshape(len(values), width)


def has_metric(record: BenchmarkRecord, metric: Metric) -> bool:
    """Whether every successful run recorded ``metric`` on both sides, above 0 ns."""
    if metric == "wall":
        return True
    ok = record.ok_runs()
    return bool(ok) and all(
        s.iteration_cpu_ns is not None and min(s.iteration_cpu_ns, default=0) > 0
        for r in ok
        for s in (r.baseline, r.candidate)
    )


def aa_data(record: BenchmarkRecord, metric: Metric = "wall") -> AAData:
    """The arrays of an A/A benchmark record (its successful runs), of one metric.

    Runs of different lengths (an interrupted run kept as ok) are cut to the shortest, as
    :func:`duet.analysis.analyze_benchmark` does. Warm-up iterations record wall time only, so
    a CPU-time calibration detects its warm-up in the measured iterations alone.

    Raises
    ------
    ValueError
        With fewer than 2 successful runs, or without ``metric`` in every run.
    """
    ok = record.ok_runs()
    if len(ok) < 2:
        raise ValueError(
            f"{record.name}: {len(ok)} successful run(s); a calibration needs at least 2 "
            "(better 10 or more)"
        )
    if not has_metric(record, metric):
        raise ValueError(f"{record.name}: {metric} time was not recorded in every run")
    n = min(len(r.baseline.iterations_ns) for r in ok)

    def series(side: SideRecord) -> tuple[int, ...]:
        values = side.iteration_cpu_ns if metric == "cpu" else side.iterations_ns
        assert values is not None
        return values

    w = (
        min(min(len(r.baseline.warmup_ns), len(r.candidate.warmup_ns)) for r in ok)
        if metric == "wall"
        else 0
    )
    base = _rows([series(r.baseline) for r in ok], n)
    cand = _rows([series(r.candidate) for r in ok], n)
    base_w = _rows([r.baseline.warmup_ns[-w:] if w else () for r in ok], w)
    cand_w = _rows([r.candidate.warmup_ns[-w:] if w else () for r in ok], w)
    cpus = tuple(r.baseline.cores[0] if r.baseline.cores else None for r in ok)
    method: Method = "sequential" if record.method == "sequential" else "duet"
    skews: list[FloatArray] = []
    for r in ok if method == "duet" else ():
        start_a, start_b = r.baseline.iteration_start_ns, r.candidate.iteration_start_ns
        if start_a is None or start_b is None or min(len(start_a), len(start_b)) < n:
            break
        # Both sides read the same CLOCK_MONOTONIC, so the difference is the start skew.
        skews.append(np.array(start_b[:n], dtype=np.float64) - np.array(start_a[:n]))
    skew = np.array(skews) if len(skews) == len(ok) and method == "duet" else None
    wall: FloatArray | None = None
    if all(r.baseline.wall_ns is not None and r.candidate.wall_ns is not None for r in ok):
        wall = np.array([[r.baseline.wall_ns, r.candidate.wall_ns] for r in ok], dtype=np.float64)
    return AAData(
        name=record.name,
        method=method,
        baseline_ns=base,
        candidate_ns=cand,
        baseline_warmup_ns=base_w,
        candidate_warmup_ns=cand_w,
        baseline_cpus=cpus,
        start_skew_ns=skew,
        wall_ns=wall,
        failed_runs=len(record.runs) - len(ok),
    )


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class ImpactEntry:
    """Impact factor of one series ([KBT] Figure 2), plain and on run-mean-centred data."""

    plain: float | None
    transformed: float | None
    additive: bool | None
    missing: str | None = None
    #: The runs it was computed on (a random subset when the runs outnumber the iterations).
    runs_used: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "plain": self.plain,
            "transformed": self.transformed,
            "additive_model_fits": self.additive,
            "missing": self.missing,
            "runs_used": self.runs_used,
        }


@dataclass(frozen=True, slots=True)
class Components:
    """Variance components of one series under the additive model ([KBT] formulas 3 and 4).

    Attributes
    ----------
    within_run_var : float
        ``S_X^2``, the mean within-run sample variance (formula 3).
    between_run_var : float
        ``S_A^2``, the sample variance of the run means (formula 4, method.md section 5).
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
        True when the series was still moving at the end of the window searched (the first
        half of each run): the runs were too short to see a steady state.
    profile : tuple of float
        The median over runs and sides of each iteration's log time, relative to its run's
        steady level (what the detection looked at; for plots).
    """

    iterations: int
    slowdown: float
    trending: bool
    profile: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "slowdown": self.slowdown,
            "trending": self.trending,
            "profile": list(self.profile),
        }


@dataclass(frozen=True, slots=True)
class SideAsymmetry:
    """Does the core matter? From the runs where the baseline sat on ``cpu_a`` and on ``cpu_b``.

    In an A/A run with the baseline on CPU a, the run's ratio is ``T(b)/T(a)``; with the sides
    swapped it is ``T(a)/T(b)``. Half the difference of the two groups' mean log ratios is the
    log of ``ratio = T(b)/T(a)``: how much slower the same code runs on ``cpu_b``.

    Attributes
    ----------
    cpu_a, cpu_b : int
    ratio, ci_low, ci_high : float or None
        ``T(cpu_b)/T(cpu_a)`` with a stratified percentile bootstrap interval (runs resampled
        within each group); the interval is None with fewer than 2 runs in a group.
    runs_a, runs_b : int
        Runs with the baseline on ``cpu_a`` and on ``cpu_b``.
    significant : bool or None
        Whether the interval excludes 1.
    share_of_run_variance : float or None
        ``log(ratio)^2 / var(log g)``: how much of the between-run variance of the duet ratio
        the asymmetry explains (alternating the sides turns it into run-to-run noise).
    residual_bias : float
        The bias it leaves in a duet ratio with this side assignment,
        ``ratio ** ((runs_a - runs_b) / runs)`` (1.0 when balanced).
    """

    cpu_a: int
    cpu_b: int
    ratio: float
    ci_low: float | None
    ci_high: float | None
    runs_a: int
    runs_b: int
    significant: bool | None
    share_of_run_variance: float | None
    residual_bias: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu_a": self.cpu_a,
            "cpu_b": self.cpu_b,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "runs_a": self.runs_a,
            "runs_b": self.runs_b,
            "significant": self.significant,
            "share_of_run_variance": self.share_of_run_variance,
            "residual_bias": self.residual_bias,
        }


@dataclass(frozen=True, slots=True)
class StartSkew:
    """How far apart the two sides start an iteration after leaving the barrier (ns)."""

    median: float
    p99: float
    max: float
    count: int
    relative_p99: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "median": self.median,
            "p99": self.p99,
            "max": self.max,
            "count": self.count,
            "p99_of_iteration": self.relative_p99,
        }


@dataclass(frozen=True, slots=True)
class SequentialComparison:
    """The same A/A measured with the sequential method ([duet] section 4.1)."""

    relative_width: float
    ratio: float
    ci_low: float
    ci_high: float
    accuracy_gain: float | None
    runs: int
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "relative_width": self.relative_width,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "accuracy_gain": self.accuracy_gain,
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
    metric: Metric = "wall"

    def values(self) -> dict[str, Any]:
        """What ``--write`` puts into the configuration."""
        return {
            "runs": self.runs,
            "iterations": self.iterations,
            "warmup": self.warmup,
            "method": self.method,
            "metric": self.metric,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.values(),
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


@dataclass(frozen=True, slots=True)
class Calibration:
    """Everything an A/A calibration tells; :meth:`to_dict` is the JSON output of
    ``duet calibrate`` (``docs/calibration.md`` explains every figure).

    Attributes
    ----------
    runs, iterations : int
        The successful runs and the measured iterations per run that were analysed.
    warmup_measured : int
        Warm-up iterations recorded per run.
    analysed_from : int
        Measured iterations left out of every run because the detected warm-up was longer
        than the recorded one.
    ratio, ci_low, ci_high, ci_width : float
        The A/A duet ratio, its interval and the interval's relative width.
    contains_one, aa_verdict
        Whether the interval contains 1 (it must), and the verdict the A/A itself would get.
    shuffled_width, sync_gain : float or None
        Width with runs paired at random across the sides, and its ratio to ``ci_width``.
    impact_factor : mapping
        ``baseline``, ``candidate`` and ``log_ratio`` :class:`ImpactEntry`.
    components, side_components, plan_components : Components or None
        Of the log ratios; of the two sides' log times summed (each side alone); and the
        ones the recommendation used.
    mean_iteration_ns, startup_ns, startup_iterations
        The wall time of an iteration, and a run's start-up cost in ns and in iterations.
    warmup, side_asymmetry, start_skew_ns, sequential
        See :class:`Warmup`, :class:`SideAsymmetry`, :class:`StartSkew`,
        :class:`SequentialComparison`.
    method_pays, method_reason
        Which method gives the narrower interval here, and why, in a sentence.
    recommended : Recommendation or None
    width_by_runs : mapping of int to float
        The relative width formula 5 predicts at the recommended iterations, per runs.
    warnings : tuple of str
        What a performance engineer must know before trusting a verdict from this machine.
    """

    benchmark: str
    runs: int
    iterations: int
    warmup_measured: int
    analysed_from: int
    failed_runs: int
    confidence: float
    threshold: float
    ratio: float
    ci_low: float | None
    ci_high: float | None
    ci_width: float | None
    contains_one: bool | None
    aa_verdict: str | None
    winsorized: int
    shuffled_width: float | None
    sync_gain: float | None
    impact_factor: Mapping[str, ImpactEntry]
    components: Components | None
    side_components: Components | None
    plan_components: Components | None
    mean_iteration_ns: float
    startup_ns: float | None
    startup_iterations: float | None
    warmup: Warmup | None
    side_asymmetry: SideAsymmetry | None
    start_skew_ns: StartSkew | None
    sequential: SequentialComparison | None
    method_pays: Method
    method_reason: str
    recommended: Recommendation | None
    width_by_runs: Mapping[int, float]
    warnings: tuple[str, ...] = field(default=())
    #: The metric these figures are of, why it was chosen, and the A/A interval width of every
    #: metric and method measured (``{"wall": {"duet": w, "sequential": w}, "cpu": ...}``).
    metric: Metric = "wall"
    metric_reason: str | None = None
    widths_by_metric: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)

    @property
    def optimal_iterations(self) -> int | None:
        return self.recommended.optimal_iterations if self.recommended is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "runs": self.runs,
            "iterations": self.iterations,
            "warmup_measured": self.warmup_measured,
            "analysed_from": self.analysed_from,
            "failed_runs": self.failed_runs,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "ci_width": self.ci_width,
            "contains_one": self.contains_one,
            "aa_verdict": self.aa_verdict,
            "winsorized": self.winsorized,
            "shuffled_width": self.shuffled_width,
            "sync_gain": self.sync_gain,
            "impact_factor": {k: v.to_dict() for k, v in self.impact_factor.items()},
            "variance_components": self.components.to_dict() if self.components else None,
            "side_variance_components": (
                self.side_components.to_dict() if self.side_components else None
            ),
            "plan_variance_components": (
                self.plan_components.to_dict() if self.plan_components else None
            ),
            "mean_iteration_ns": self.mean_iteration_ns,
            "startup_ns": self.startup_ns,
            "startup_iterations": self.startup_iterations,
            "optimal_iterations": self.optimal_iterations,
            "warmup": self.warmup.to_dict() if self.warmup else None,
            "side_asymmetry": self.side_asymmetry.to_dict() if self.side_asymmetry else None,
            "start_skew_ns": self.start_skew_ns.to_dict() if self.start_skew_ns else None,
            "sequential": self.sequential.to_dict() if self.sequential else None,
            "accuracy_gain": self.sequential.accuracy_gain if self.sequential else None,
            "method": {"pays": self.method_pays, "reason": self.method_reason},
            "metric": {
                "chosen": self.metric,
                "reason": self.metric_reason,
                "widths": {k: dict(v) for k, v in self.widths_by_metric.items()},
            },
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "width_by_runs": {str(k): v for k, v in self.width_by_runs.items()},
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------------------------
# Pieces


def components_of(series: FloatArray) -> Components | None:
    """Variance components of a ``(runs, iterations)`` series, None when there are fewer
    than 2 runs or iterations."""
    from stats.planning import variance_components

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


def _summed(a: Components | None, b: Components | None) -> Components | None:
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


def _planning(c: Components) -> Any:
    """The stats-side components for planning: ``var A`` estimated without its ``var X / n``."""
    from stats.planning import VarianceComponents

    return VarianceComponents(
        within_run_var=c.within_run_var,
        between_run_var=c.run_effect_var,
        runs=c.runs,
        iterations=c.iterations,
        grand_mean=0.0,
    )


def detect_warmup(series: FloatArray, *, tolerance: float) -> Warmup:
    """Where the iteration series stops trending.

    ``series`` holds one row per run and side, from the first iteration of the run (recorded
    warm-up included). Each row is taken on the log scale and centred on the median of its
    second half (its steady level), which removes the run effect; the profile is the median
    over rows at each position. The truncation point ``d*`` (within the first half) minimises
    the MSER statistic ``sum((p[d:] - mean p[d:])^2) / (n - d)^2`` [MSER]; the warm-up ends
    after the last iteration before ``d*`` whose profile lies outside the noise band
    ``max(tolerance, 3 standard errors of the profile)`` around the steady level, so noise
    alone never costs iterations and a late hiccup is not mistaken for warm-up.

    Parameters
    ----------
    series : ndarray, shape (rows, n)
        Positive iteration times from the start of each run.
    tolerance : float
        A deviation (log scale) too small to matter: a quarter of the decision band.

    Returns
    -------
    Warmup
    """
    rows, n = series.shape
    if n < 4 or rows < 1:
        return Warmup(0, 1.0, False, tuple(0.0 for _ in range(n)))
    logs = np.log(series)
    centred = logs - np.median(logs[:, n // 2 :], axis=1, keepdims=True)
    profile = np.median(centred, axis=0)
    limit = n // 2
    best_d, best = 0, math.inf
    for d in range(limit + 1):
        tail = profile[d:]
        mser = float(np.sum((tail - tail.mean()) ** 2)) / (n - d) ** 2
        if mser < best - 1e-18:
            best_d, best = d, mser
    steady = float(np.median(profile[best_d:]))
    # The noise of one iteration (robust SD across rows, steady half), then the standard error
    # of a median over the rows: a profile value inside 4 of them is noise, not warm-up (3
    # would let one of the ~15 positions searched pass for warm-up in 1 series of 25).
    residual = centred[:, limit:] - profile[limit:]
    row_sd = 1.4826 * float(np.median(np.abs(residual)))
    band = max(tolerance, _WARMUP_SE * 1.2533 * row_sd / math.sqrt(rows))
    outside = [i for i in range(best_d) if abs(float(profile[i]) - steady) > band]
    d = outside[-1] + 1 if outside else 0
    slowdown = math.exp(float(np.mean(profile[:d])) - steady) if d else 1.0
    # Still trending: the steady half itself drifts by more than the band.
    tail = profile[limit:]
    slope = float(np.polyfit(np.arange(tail.size), tail, 1)[0]) if tail.size >= 3 else 0.0
    trending = abs(slope) * (tail.size - 1) > 2.0 * band
    return Warmup(d, slowdown, trending, tuple(float(x) for x in profile))


def _side_asymmetry(
    log_g: FloatArray,
    cpus: Sequence[int | None],
    *,
    confidence: float,
    reps: int,
    rng: np.random.Generator,
) -> SideAsymmetry | None:
    """:func:`stats.asymmetry.side_asymmetry` with the CPU numbers put back."""
    from stats.asymmetry import side_asymmetry

    known = sorted({c for c in cpus if c is not None})
    if len(known) != 2 or any(c is None for c in cpus):
        return None
    cpu_a, cpu_b = known
    est = side_asymmetry(
        log_g, [c == cpu_a for c in cpus], confidence=confidence, reps=reps, rng=rng
    )
    if est is None:
        return None
    return SideAsymmetry(
        cpu_a=cpu_a,
        cpu_b=cpu_b,
        ratio=est.ratio,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        runs_a=est.runs_a,
        runs_b=est.runs_b,
        significant=est.significant,
        share_of_run_variance=est.share_of_run_variance,
        residual_bias=est.residual_bias,
    )


def _start_skew(skew: FloatArray | None, mean_iteration_ns: float) -> StartSkew | None:
    if skew is None or skew.size == 0:
        return None
    magnitude = np.abs(skew).ravel()
    p99 = float(np.quantile(magnitude, 0.99))
    return StartSkew(
        median=float(np.median(magnitude)),
        p99=p99,
        max=float(magnitude.max()),
        count=int(magnitude.size),
        relative_p99=p99 / mean_iteration_ns if mean_iteration_ns > 0 else math.inf,
    )


def _impact(series: FloatArray, rng: np.random.Generator) -> ImpactEntry:
    """The impact factor of ``series``, on a random subset of runs when there are too many.

    [KBT] draws ``c = floor(0.75 m)`` distinct samples from one run, so it needs more
    iterations per run than ``c``: 40 runs of 30 iterations would not do. Rather than report
    nothing, it is then computed on the largest random subset of runs that fits (the impact
    factor compares spreads, which a subset estimates without bias).
    """
    from stats.impact import impact_factors

    runs, iterations = series.shape
    used = runs
    if math.floor(0.75 * runs) >= iterations:
        used = max(3, math.ceil(iterations / 0.75) - 1)
        while used > 3 and math.floor(0.75 * used) >= iterations:
            used -= 1
        if used < runs:
            series = series[np.sort(rng.choice(runs, size=used, replace=False))]
    try:
        f = impact_factors(series, k=_IMPACT_REPS, rng=rng)
    except ValueError as e:
        return ImpactEntry(None, None, None, str(e))
    additive = math.isfinite(f.transformed) and f.transformed <= ADDITIVE_LIMIT
    return ImpactEntry(f.plain, f.transformed, additive, runs_used=used)


def _startup(data: AAData, iteration_ns: float) -> tuple[float | None, float | None]:
    """Start-up cost of a run: wall time minus every iteration, in ns and in iterations."""
    if data.wall_ns is None or iteration_ns <= 0:
        return None, None
    spent = np.stack(
        [
            data.baseline_ns.sum(axis=1) + data.baseline_warmup_ns.sum(axis=1),
            data.candidate_ns.sum(axis=1) + data.candidate_warmup_ns.sum(axis=1),
        ],
        axis=1,
    )
    # Clipped at 0: a clock step or a rounding in the worker must not make start-up negative.
    startup = float(np.median(np.clip(data.wall_ns - spent, 0.0, None)))
    return startup, startup / iteration_ns


def width_for_runs(
    components: Components, *, iterations: int, runs: Sequence[int], confidence: float
) -> dict[int, float]:
    """Relative interval width that formula 5 predicts for each number of runs.

    The log-scale half-width ``h`` becomes the relative width ``exp(h) - exp(-h)``.
    """
    from stats.planning import ci_half_width

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
    from stats.planning import ci_half_width, optimal_iterations, runs_needed

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


# --------------------------------------------------------------------------------------------
# The calibration


def _iteration_wall(data: AAData, skip: int) -> float:
    """Mean wall time of one iteration: both sides together for duet (an iteration ends when
    the slower side reaches the barrier), one side for sequential."""
    a, b = data.baseline_ns[:, skip:], data.candidate_ns[:, skip:]
    if data.method == "duet":
        return float(np.maximum(a, b).mean())
    return float((a.mean() + b.mean()) / 2.0)


def _full_series(data: AAData) -> FloatArray:
    return np.vstack(
        [
            np.hstack([data.baseline_warmup_ns, data.baseline_ns]),
            np.hstack([data.candidate_warmup_ns, data.candidate_ns]),
        ]
    )


def _pct(x: float) -> str:
    return f"{x * 100:.3g}%"


def calibrate(
    data: AAData,
    *,
    sequential: AAData | None = None,
    confidence: float = 0.99,
    threshold: float = 0.02,
    reps: int = 10_000,
    seed: int = 0,
    interval: IntervalMethod = "expanded",
    winsorize: bool = True,
) -> Calibration:
    """Calibrate from an A/A duet (and optionally a sequential A/A of the same benchmark).

    Parameters
    ----------
    data : AAData
        The A/A duet: the same version on both sides, sides alternating between cores.
    sequential : AAData, optional
        The same A/A measured with the sequential method, for the accuracy gain.
    confidence, threshold, reps, seed, interval, winsorize
        As for ``duet analyze``; the threshold is the change the recommendation must detect.

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        If ``data`` was not measured with the duet method, or on invalid settings.
    """
    from stats.ratio import MIN_BOOTSTRAP_RUNS, duet_ratio
    from stats.sequential import accuracy_gain, sequential_ci, shuffled_ratio, sync_gain

    if data.method != "duet":
        raise ValueError("the calibration's main measurement must use the duet method")
    if not (threshold > 0 and 0 < confidence < 1):
        raise ValueError(
            f"threshold must be > 0 and confidence in (0, 1), got {threshold}, {confidence}"
        )
    rng = rng_for(data.name, seed)
    warnings: list[str] = []
    band = math.log1p(threshold)

    # Warm-up first: everything else is computed on the steady part of each run.
    warm = detect_warmup(_full_series(data), tolerance=band * _WARMUP_TOLERANCE_OF_BAND)
    skip = min(max(0, warm.iterations - data.warmup), max(0, data.iterations - _KEEP_AT_LEAST))
    if warm.trending:
        warnings.append(
            "the iteration times were still trending in the middle of the runs: the warm-up is "
            "longer than the runs measured; calibrate again with more --iterations"
        )
    a = data.baseline_ns[:, skip:]
    b = data.candidate_ns[:, skip:]
    runs, iterations = a.shape
    log_s = np.log(b) - np.log(a)

    est = duet_ratio(
        a, b, confidence=confidence, reps=reps, method=interval, winsorize=winsorize, rng=rng
    )
    width = est.width
    # The gains compare methods like for like: the sequential and the shuffled intervals are
    # percentile bootstraps, so duet's is too (the expanded default widens only duet's).
    gain_width = width
    if interval != "percentile" and width is not None:
        gain_width = duet_ratio(
            a, b, confidence=confidence, reps=reps, method="percentile", winsorize=winsorize,
            rng=rng_for(data.name + "/gains", seed),
        ).width  # fmt: skip
    contains_one: bool | None = None
    aa_verdict: str | None = None
    if est.ci_low is not None and est.ci_high is not None:
        contains_one = est.ci_low <= 1.0 <= est.ci_high
        aa_verdict = verdict(
            ratio=est.ratio, ci_low=est.ci_low, ci_high=est.ci_high, threshold=threshold
        )
    if est.ci_low is None:
        warnings.append(
            f"only {runs} runs: fewer than {MIN_BOOTSTRAP_RUNS}, so no interval; calibrate with "
            f"--runs {MIN_RUNS * 2} or more"
        )
    elif runs < MIN_RUNS:
        warnings.append(
            f"only {runs} runs: the calibration's own figures are rough (widths at 10 runs "
            "moved by a factor of 3 between replicates here); use --runs 20 or more"
        )
    if contains_one is False:
        warnings.append(
            f"THE A/A INTERVAL EXCLUDES 1 ([{est.ci_low:.4g}, {est.ci_high:.4g}]): two "
            "identical sides measured differently, so the two cores (or sides) of this machine "
            "are not equivalent and a comparison here can report a change that is not there"
        )

    shuffled_width = gain = None
    if runs >= MIN_BOOTSTRAP_RUNS and width is not None:
        sh = shuffled_ratio(
            a, b, confidence=confidence, reps=max(1000, reps // 5), winsorize=winsorize, rng=rng
        )
        shuffled_width = sh.width
        gain = sync_gain(shuffled_width=sh.width, duet_width=gain_width or width)

    impact = {
        "baseline": _impact(a, rng),
        "candidate": _impact(b, rng),
        "log_ratio": _impact(log_s, rng),
    }
    if impact["log_ratio"].additive is False:
        warnings.append(
            "the additive model does not fit the log ratios (transformed impact factor "
            f"{impact['log_ratio'].transformed:.3g} > {ADDITIVE_LIMIT}): runs differ by more "
            "than a constant shift, so the planned runs and iterations are approximate"
        )

    if winsorize:
        from stats.winsor import winsorize_runs

        log_for_plan, _ = winsorize_runs(log_s)
    else:
        log_for_plan = log_s
    comps = components_of(log_for_plan)
    side_comps = _summed(components_of(np.log(a)), components_of(np.log(b)))

    mean_iteration = _iteration_wall(data, skip)
    startup_ns, startup_iterations = _startup(data, mean_iteration)

    asym = _side_asymmetry(
        np.log(est.run_ratios), data.baseline_cpus, confidence=confidence, reps=reps, rng=rng
    )
    if asym is not None and asym.significant:
        slower = asym.cpu_b if asym.ratio > 1 else asym.cpu_a
        faster = asym.cpu_a if asym.ratio > 1 else asym.cpu_b
        r = asym.ratio if asym.ratio > 1 else 1 / asym.ratio
        warnings.append(
            f"CPU {slower} is {_pct(r - 1)} slower than CPU {faster}: with fixed sides every "
            "ratio would be biased by that much; duet's balanced alternation cancels it"
            + (
                f", but this plan was unbalanced (residual bias {_pct(asym.residual_bias - 1)})"
                if asym.runs_a != asym.runs_b
                else ""
            )
        )

    skew = _start_skew(
        data.start_skew_ns[:, skip:] if data.start_skew_ns is not None else None, mean_iteration
    )
    if skew is not None and skew.relative_p99 > 0.01:
        warnings.append(
            f"the sides' start skew reaches {units.duration(skew.p99)} at the 99th percentile, "
            f"{_pct(skew.relative_p99)} of an iteration: iterations this short are not well "
            "synchronised (the noise the ratio should cancel is not shared); make each "
            "iteration longer (more work per iteration) if you can"
        )

    seq: SequentialComparison | None = None
    seq_comps: Components | None = None
    seq_iteration = seq_startup = seq_startup_iter = None
    if sequential is not None:
        sa, sb = sequential.baseline_ns, sequential.candidate_ns
        s_skip = min(
            max(0, warm.iterations - sequential.warmup),
            max(0, sequential.iterations - _KEEP_AT_LEAST),
        )
        sa, sb = sa[:, s_skip:], sb[:, s_skip:]
        if sa.shape[0] >= MIN_BOOTSTRAP_RUNS:
            s_est = sequential_ci(
                sa, sb, confidence=confidence, reps=max(1000, reps // 5), winsorize=winsorize,
                rng=rng,
            )  # fmt: skip
            acc = (
                accuracy_gain(
                    sequential_relative_width=s_est.relative_width, duet_width=gain_width or width
                )
                if width is not None
                else None
            )
            seq = SequentialComparison(
                relative_width=s_est.relative_width,
                ratio=s_est.ratio,
                ci_low=s_est.ratio_ci_low,
                ci_high=s_est.ratio_ci_high,
                accuracy_gain=acc,
                runs=int(sa.shape[0]),
                iterations=int(sa.shape[1]),
            )
        seq_comps = _summed(components_of(np.log(sa)), components_of(np.log(sb)))
        seq_iteration = _iteration_wall(sequential, s_skip)
        seq_startup, seq_startup_iter = _startup(sequential, seq_iteration)

    # Which method pays: the accuracy gain when the sequential method was measured (it is the
    # direct comparison), else the sync gain (shuffled pairing is what sequential runs get).
    pays: Method = "duet"
    if seq is not None and seq.accuracy_gain is not None:
        if seq.accuracy_gain < 1:
            pays = "sequential"
            reason = (
                f"the accuracy gain is {seq.accuracy_gain:.3g}x: on this machine simultaneous "
                "runs measure worse than sequential ones (the sequential interval is "
                f"{_pct(seq.relative_width)} wide, duet's {_pct(width or 0)}); use --method "
                "sequential"
            )
        else:
            reason = (
                f"the accuracy gain is {seq.accuracy_gain:.3g}x: duet's interval is that many "
                "times narrower than the sequential method's on this machine"
            )
    elif gain is not None:
        if gain < 1:
            pays = "sequential"
            reason = (
                f"the sync gain is {gain:.3g}x: pairing each run with another run's data gives "
                "a narrower interval than pairing the sides that ran together, so simultaneous "
                "runs measure worse than sequential ones on this machine; use --method "
                "sequential (confirm with --compare-sequential)"
            )
        else:
            reason = (
                f"the sync gain is {gain:.3g}x: running the sides together narrows the "
                "interval that much, because the noise here is shared by both cores"
            )
    else:
        reason = "not enough runs to compare the methods; duet is the default"
    # The gain the decision rested on: the accuracy gain when measured, else the sync gain.
    deciding = seq.accuracy_gain if seq is not None and seq.accuracy_gain is not None else gain
    near_one = deciding is not None and deciding < 1.25
    if (pays == "sequential" or near_one) and runs < 30:
        reason += f" (gains near 1 are noisy at {runs} runs: confirm with a second calibration)"

    rec: Recommendation | None = None
    plan_comps = comps
    plan_iter, plan_startup, plan_startup_iter = mean_iteration, startup_ns, startup_iterations
    if pays == "sequential":
        if seq_comps is not None:
            plan_comps = seq_comps
            plan_iter, plan_startup, plan_startup_iter = (
                seq_iteration or mean_iteration,
                seq_startup,
                seq_startup_iter,
            )
        else:
            # Each side's own run-to-run and iteration noise, as if measured alone (in a duet
            # it also holds the other side's interference, so this is an upper bound).
            plan_comps = side_comps
    if plan_comps is not None:
        rec = recommend(
            plan_comps,
            threshold=threshold,
            confidence=confidence,
            method=pays,
            warmup=warm.iterations,
            startup_iterations=plan_startup_iter,
            startup_ns=plan_startup,
            iteration_ns=plan_iter,
            max_iterations=min(
                MAX_ITERATIONS, max(EXTRAPOLATION * plan_comps.iterations, _EXTRAPOLATION_FLOOR)
            ),
        )
        if not rec.reachable:
            warnings.append(
                f"a {_pct(threshold)} threshold is out of reach on this machine with a "
                "practical number of runs; raise --threshold or reduce the noise"
            )
    widths: dict[int, float] = {}
    if plan_comps is not None and rec is not None:
        widths = width_for_runs(
            plan_comps, iterations=rec.iterations, runs=RUNS_GRID, confidence=confidence
        )
    if data.failed_runs:
        warnings.append(
            f"{data.failed_runs} run(s) failed and were left out: a calibration of a flaky "
            "benchmark describes the runs that worked"
        )
    if est.winsorized > max(1, runs // 2):
        warnings.append(
            f"winsorization replaced an outlier in {est.winsorized} of {runs} runs: single "
            "iterations are hit hard by something (preemption, interrupts)"
        )
    return Calibration(
        benchmark=data.name,
        runs=runs,
        iterations=iterations,
        warmup_measured=data.warmup,
        analysed_from=skip,
        failed_runs=data.failed_runs,
        confidence=confidence,
        threshold=threshold,
        ratio=est.ratio,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        ci_width=width,
        contains_one=contains_one,
        aa_verdict=aa_verdict,
        winsorized=est.winsorized,
        shuffled_width=shuffled_width,
        sync_gain=gain,
        impact_factor=impact,
        components=comps,
        side_components=side_comps,
        plan_components=plan_comps,
        mean_iteration_ns=mean_iteration,
        startup_ns=startup_ns,
        startup_iterations=startup_iterations,
        warmup=warm,
        side_asymmetry=asym,
        start_skew_ns=skew,
        sequential=seq,
        method_pays=pays,
        method_reason=reason,
        recommended=rec,
        width_by_runs=widths,
        warnings=tuple(warnings),
    )


def _deciding_width(cal: Calibration) -> float | None:
    """The A/A width of the method a calibration recommends (what a user would get)."""
    if cal.method_pays == "sequential" and cal.sequential is not None:
        return cal.sequential.relative_width
    return cal.ci_width


def calibrate_metrics(
    record: BenchmarkRecord,
    sequential: BenchmarkRecord | None = None,
    *,
    busy_share: Mapping[str, float] | None = None,
    forced: Metric | None = None,
    **settings: Any,
) -> Calibration:
    """Calibrate on wall time and on CPU time, and keep the metric that measures better here.

    CPU time is a candidate only when it was recorded and both sides are CPU-bound
    (``busy_share``: per side, the median share of an iteration on a CPU or in its run queue,
    as :func:`duet.analysis.analyze_benchmark` computes it; the rule of ``metric = "auto"``):
    for code that sleeps or waits, CPU time would not see what wall time sees. Between the
    candidates, the narrower A/A interval of the method each recommends wins. Every width is
    kept in ``widths_by_metric``.
    """
    chosen: Metric
    calibrations: dict[Metric, Calibration] = {}
    for metric in ("wall", "cpu"):
        metric_t: Metric = metric
        if not has_metric(record, metric_t):
            continue
        seq = (
            aa_data(sequential, metric_t)
            if sequential is not None and has_metric(sequential, metric_t)
            else None
        )
        calibrations[metric_t] = calibrate(aa_data(record, metric_t), sequential=seq, **settings)
    widths: dict[str, dict[str, float | None]] = {
        m: {
            "duet": c.ci_width,
            "sequential": c.sequential.relative_width if c.sequential is not None else None,
        }
        for m, c in calibrations.items()
    }
    wall = calibrations["wall"]
    cpu = calibrations.get("cpu")
    shares = busy_share or {}
    idle = not_cpu_bound(shares)
    if forced is not None and (forced == "wall" or cpu is not None):
        chosen = forced
        reason = f"{METRIC_NAMES[forced]}, as asked (--metric {forced})"
    elif cpu is None:
        chosen = "wall"
        reason = "wall time: no per-iteration CPU time was recorded"
    elif idle or not shares:
        chosen = "wall"
        reason = (
            "wall time: the benchmark is not CPU-bound (the "
            + " and ".join(f"{side} {units.share(shares[side])}" for side in idle or ())
            + " of the iteration on a CPU or waiting for one), so CPU time would miss sleeping "
            "and I/O"
            if idle
            else "wall time: whether the sides are CPU-bound is unknown"
        )
    else:
        w_wall, w_cpu = _deciding_width(wall), _deciding_width(cpu)
        if w_cpu is not None and (w_wall is None or w_cpu <= w_wall):
            chosen = "cpu"
            reason = (
                f"CPU time: both sides CPU-bound, and its A/A interval ({_pct(w_cpu)} wide with "
                f"{cpu.method_pays}) is narrower than wall time's"
                + (f" ({_pct(w_wall)} with {wall.method_pays})" if w_wall is not None else "")
            )
        else:
            chosen = "wall"
            reason = (
                f"wall time: its A/A interval ({_pct(w_wall or 0)} wide with "
                f"{wall.method_pays}) is narrower than CPU time's ({_pct(w_cpu or 0)} with "
                f"{cpu.method_pays}) on this machine"
            )
    best = calibrations[chosen]
    rec = best.recommended
    warnings = best.warnings
    if chosen == "cpu" and wall.contains_one is False and best.contains_one is not False:
        warnings = (
            *warnings,
            f"wall time's A/A interval excludes 1 ([{wall.ci_low:.4g}, {wall.ci_high:.4g}]) "
            "while CPU time's does not: something delays one side more than the other "
            "(another process, a slower core); CPU time removes the waiting, not its effect "
            "on caches",
        )
    from dataclasses import replace

    return replace(
        best,
        metric=chosen,
        metric_reason=reason,
        widths_by_metric=widths,
        recommended=replace(rec, metric=chosen) if rec is not None else None,
        warnings=warnings,
    )
