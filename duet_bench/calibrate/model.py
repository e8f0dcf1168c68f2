"""What a calibration tells, as frozen records: :class:`Calibration` and its parts.

:meth:`Calibration.to_dict` is the JSON output of ``duet calibrate``; ``docs/calibration.md``
explains every figure. The numbers inside come from ``duet_stats``
(:class:`duet_stats.warmup.Warmup`, :class:`duet_stats.asymmetry.Asymmetry`); these records add what
the duet side knows (the CPUs, the verdict, the warnings) and the JSON form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from duet_bench.analysis.sides import SideAsymmetry  # one record, shared with analysis
from duet_bench.calibrate.experiment import Components, Method, Recommendation
from duet_bench.calibrate.until_decided import UntilDecidedAdvice
from duet_bench.metrics import MetricName
from duet_stats.crossover import CoreContrast
from duet_stats.warmup import Warmup

__all__ = [
    "Calibration",
    "ConfigTarget",
    "Design",
    "DesignChoice",
    "DesignComparison",
    "DesignFigures",
    "ImpactEntry",
    "SequentialComparison",
    "SideAsymmetry",
    "StartSkew",
    "contrast_dict",
    "warmup_dict",
]


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


def contrast_dict(contrast: CoreContrast | None) -> dict[str, Any] | None:
    """The JSON form of a :class:`duet_stats.crossover.CoreContrast` (None stays None)."""
    if contrast is None:
        return None
    return {
        "ratio": contrast.ratio,
        "ci_low": contrast.ci_low,
        "ci_high": contrast.ci_high,
        "runs": contrast.runs,
        "significant": contrast.significant,
        "share_of_within_run_variance": contrast.share_of_within_run_variance,
    }


def warmup_dict(warmup: Warmup) -> dict[str, Any]:
    """The JSON form of a :class:`duet_stats.warmup.Warmup`."""
    return {
        "iterations": warmup.iterations,
        "slowdown": warmup.slowdown,
        "trending": warmup.trending,
        "profile": list(warmup.profile),
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


#: A design of the A/A (``duet calibrate --compare-designs``, :mod:`duet_bench.calibrate.designs`).
Design: TypeAlias = Literal["iteration", "run", "sequential"]


@dataclass(frozen=True, slots=True)
class DesignFigures:
    """One design's A/A, as a calibration reports it.

    Attributes
    ----------
    design : {"iteration", "run", "sequential"}
    runs, iterations : int
        The runs and the iterations per run analysed (after the detected warm-up).
    ratio : float
        The A/A ratio (must be near 1).
    width : float or None
        Relative width of the percentile interval at the confidence; None with too few runs.
    run_ns : float or None
        Median wall time of one run (duet: the longer side; sequential: both sides in turn).
    impact_factor : float or None
        Kalibera's impact factor (plain) of the log ratios (duet designs, with crossover the
        swing between the CPUs taken out) or of the baseline's times (sequential).
    runs_needed, iterations_needed : int or None
        The plan that decides at the threshold with this design (formulas 5 and 8).
    core_ratio, core_ci_low, core_ci_high : float or None
        How much slower the second CPU runs the same code: from inside the runs (crossover:
        the within-run contrast) or between runs (per-run swap: the side asymmetry); None for
        the sequential method.
    """

    design: Design
    runs: int
    iterations: int
    ratio: float
    width: float | None
    run_ns: float | None = None
    impact_factor: float | None = None
    runs_needed: int | None = None
    iterations_needed: int | None = None
    core_ratio: float | None = None
    core_ci_low: float | None = None
    core_ci_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "design": self.design,
            "runs": self.runs,
            "iterations": self.iterations,
            "ratio": self.ratio,
            "width": self.width,
            "run_ns": self.run_ns,
            "impact_factor": self.impact_factor,
            "runs_needed": self.runs_needed,
            "iterations_needed": self.iterations_needed,
            "core_ratio": self.core_ratio,
            "core_ci_low": self.core_ci_low,
            "core_ci_high": self.core_ci_high,
        }


@dataclass(frozen=True, slots=True)
class DesignChoice:
    """The design recommended, every design's width at equal machine time, and why."""

    design: Design
    equal_time_widths: Mapping[Design, float]
    costs: Mapping[Design, float]
    reason: str

    @property
    def method(self) -> Method:
        return "sequential" if self.design == "sequential" else "duet"

    @property
    def crossover(self) -> Literal["iteration", "run"] | None:
        """The ``crossover`` setting to write, None when the sequential method wins."""
        return None if self.design == "sequential" else self.design


@dataclass(frozen=True, slots=True)
class DesignComparison:
    """The designs compared on one metric, and the choice."""

    metric: MetricName
    figures: tuple[DesignFigures, ...]
    choice: DesignChoice

    def to_dict(self) -> dict[str, Any]:
        c = self.choice
        return {
            "metric": self.metric,
            "figures": {f.design: f.to_dict() for f in self.figures},
            "cost": dict(c.costs),
            "equal_time_width": dict(c.equal_time_widths),
            "chosen": c.design,
            "method": c.method,
            "crossover": c.crossover,
            "reason": c.reason,
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
    metric: MetricName = "wall"
    metric_reason: str | None = None
    widths_by_metric: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    #: With crossover at every iteration: the core difference from inside the runs.
    core_contrast: CoreContrast | None = None
    #: With the designs compared (``--compare-designs``): every design's figures and the choice.
    designs: DesignComparison | None = None
    #: The min_runs and max_runs of measuring until decided for this machine
    #: (:mod:`duet_bench.calibrate.until_decided`); None: too few runs to simulate from.
    until_decided: UntilDecidedAdvice | None = None

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
            "warmup": warmup_dict(self.warmup) if self.warmup else None,
            "side_asymmetry": self.side_asymmetry.to_dict() if self.side_asymmetry else None,
            "core_contrast": contrast_dict(self.core_contrast),
            "designs": self.designs.to_dict() if self.designs is not None else None,
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
            "until_decided": self.until_decided.to_dict() if self.until_decided else None,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class ConfigTarget:
    """Where ``--write`` puts the plan (and the lines say it goes): the file, its form
    (``"duet"`` or ``"pyproject"``), and the table: a ``[[benchmark]]`` by name, a ``[[suite]]``
    (by name, and its place among the suites for the writer) for a benchmark a suite found, or
    the suite defaults when neither is set."""

    path: Path
    form: str
    benchmark: str | None = None
    suite: str | None = None
    suite_index: int | None = None
