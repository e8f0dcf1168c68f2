"""The records of an analysis: how to analyse (:class:`AnalysisSettings`) and what came out,
per metric (:class:`MetricEstimate`) and per benchmark (:class:`BenchmarkAnalysis`, whose
:meth:`~BenchmarkAnalysis.to_dict` is what ``results.json`` stores)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from duet_bench.analysis.interference import Interference
from duet_bench.analysis.sides import CoreDifference, SideAsymmetry
from duet_bench.analysis.verdict import Verdict
from duet_bench.defaults import (
    ANALYSIS_KEYS,
    DEFAULT_CONFIDENCE,
    DEFAULT_INTERVAL,
    DEFAULT_REPS,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_WINSORIZE,
    INTERVALS,
    Interval,
)
from duet_bench.errors import ResultsError
from duet_bench.metrics import DEFAULT_METRIC, MetricChoice, MetricName, choices
from duet_bench.results import analysis as stored
from duet_bench.results.plan import RecordedAnalysis

if TYPE_CHECKING:
    from duet_bench.analysis.stopping import Stopping
    from duet_bench.results import BenchmarkRecord


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    """How to analyse. The defaults are the method's (``docs/statistics.md``), from
    :mod:`duet_bench.defaults`; :mod:`duet_bench.settings` resolves them per benchmark against
    the configuration and the options (:meth:`duet_bench.settings.Settings.analysis`)."""

    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    reps: int = DEFAULT_REPS
    seed: int = DEFAULT_SEED
    interval: Interval = DEFAULT_INTERVAL
    winsorize: bool = DEFAULT_WINSORIZE
    metric: MetricChoice = DEFAULT_METRIC

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be strictly between 0 and 1, got {self.confidence}")
        if not self.threshold >= 0 or not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be a finite number >= 0, got {self.threshold}")
        if self.reps < 100:
            raise ValueError(f"reps must be at least 100, got {self.reps}")
        if self.metric not in choices():
            raise ValueError(f"metric must be one of {', '.join(choices())}, got {self.metric}")

    def to_record(self) -> RecordedAnalysis:
        """The settings as a benchmark's results keep them (``settings.analysis``)."""
        return RecordedAnalysis(
            confidence=self.confidence,
            threshold=self.threshold,
            reps=self.reps,
            seed=self.seed,
            interval=self.interval,
            winsorize=self.winsorize,
            metric=self.metric,
        )

    @classmethod
    def from_record(
        cls,
        record: BenchmarkRecord,
        given: AnalysisSettings | None = None,
        names: Collection[str] = (),
    ) -> AnalysisSettings:
        """The settings to analyse ``record`` again with: the settings ``names`` of ``given``
        (the options given explicitly), else the settings it was analysed with when measured
        (``settings.analysis``), else (a file written before duet recorded them) the metric its
        analysis asked for, else the built-in defaults.

        Raises
        ------
        ResultsError
            The recorded settings are not valid settings.
        """
        recorded = record.settings.analysis
        try:
            if recorded is not None:
                out = _recorded(recorded)
            elif (metric := recorded_metric(record)) is not None:
                out = cls(metric=metric)
            else:
                out = cls()
            if given is not None:
                out = replace(out, **{k: getattr(given, k) for k in ANALYSIS_KEYS if k in names})
            return out
        except ValueError as e:
            raise ResultsError(
                f"benchmark {record.name!r}: the analysis settings recorded with it "
                f"(settings.analysis) are not valid: {e}",
                fix="give the settings explicitly (--confidence, --threshold, ...), or remove "
                "settings.analysis from the file to use the defaults",
            ) from None


def _recorded(recorded: RecordedAnalysis) -> AnalysisSettings:
    """The settings ``recorded`` records, the built-in default for each it lacks.

    Raises
    ------
    ValueError
        A value that is not one of its choices or out of its range.
    """
    default = AnalysisSettings()
    interval = default.interval if recorded.interval is None else recorded.interval
    metric = default.metric if recorded.metric is None else recorded.metric
    intervals = [i for i in INTERVALS if i == interval]
    if not intervals:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    metrics = [m for m in choices() if m == metric]
    if not metrics:
        raise ValueError(f"metric must be one of {', '.join(choices())}, got {metric!r}")
    return AnalysisSettings(
        confidence=default.confidence if recorded.confidence is None else recorded.confidence,
        threshold=default.threshold if recorded.threshold is None else recorded.threshold,
        reps=default.reps if recorded.reps is None else recorded.reps,
        seed=default.seed if recorded.seed is None else recorded.seed,
        interval=intervals[0],
        winsorize=default.winsorize if recorded.winsorize is None else recorded.winsorize,
        metric=metrics[0],
    )


def recorded_metric(record: BenchmarkRecord) -> MetricChoice | None:
    """The metric a benchmark was analysed with before (its configured choice), if any."""
    value = None if record.analysis is None else record.analysis.metric_requested
    return value if value in choices() else None


@dataclass(frozen=True, slots=True)
class SideSummary:
    """Descriptive figures for one side over the analysed runs (for tables, not for verdicts).

    ``geomean_ns`` is the geometric mean of exactly the iterations the ratio pairs, so the two
    sides' geometric means divide to the ratio (up to winsorization, which acts on the ratios).
    """

    geomean_ns: float
    median_ns: float
    mean_ns: float
    impact_plain: float | None = None
    impact_transformed: float | None = None
    impact_missing: str | None = None

    def to_block(self) -> stored.SideSummary:
        return stored.SideSummary(
            geomean_ns=self.geomean_ns, median_ns=self.median_ns, mean_ns=self.mean_ns
        )


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """The ratio, interval and verdict of one metric (wall or CPU time) of one benchmark."""

    metric: MetricName
    ratio: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict | None
    winsorized: int
    baseline: SideSummary
    candidate: SideSummary
    #: Per-iteration log ratios that were analysed (for planning; not stored).
    log_ratios: np.ndarray[Any, np.dtype[np.float64]]
    #: Per iteration, the CPU assignment (crossover, 0: baseline on the lower CPU), or None:
    #: the estimate then weighed each run's two assignments equally (not stored).
    assignment: np.ndarray[Any, np.dtype[np.float64]] | None = None

    def to_block(self) -> stored.MetricBlock:
        return stored.MetricBlock(
            ratio=self.ratio,
            ci_low=self.ci_low,
            ci_high=self.ci_high,
            verdict=self.verdict,
            winsorized=self.winsorized,
            baseline=self.baseline.to_block(),
            candidate=self.candidate.to_block(),
        )


@dataclass(frozen=True, slots=True)
class Design:
    """Which core design the runs used and which estimate of the run ratios followed from it.

    ``crossover`` is the benchmark's ``settings["crossover"]`` (``"iteration"``: the sides change
    CPUs at every iteration; ``"run"``: at most between runs). ``estimate`` is
    ``"assignment-balanced"`` when every run's log ratio weighed its two CPU assignments equally
    (docs/statistics.md, method 1b; the CPUs of every iteration were recorded), else ``"run-mean"``.
    """

    crossover: Literal["iteration", "run"]
    estimate: Literal["assignment-balanced", "run-mean"]
    #: Runs that ran under one assignment only and kept their plain mean (None: not known).
    single_assignment_runs: int | None = None
    #: Iterations in which both sides were recorded on the same CPU.
    clashes: int = 0

    def to_block(self) -> stored.Design:
        return stored.Design(
            crossover=self.crossover,
            estimate=self.estimate,
            single_assignment_runs=self.single_assignment_runs,
            clashes=self.clashes,
        )


@dataclass(frozen=True, slots=True)
class BenchmarkAnalysis:
    """The analysis of one benchmark; :meth:`to_dict` is what ``results.json`` stores.

    The top-level figures (``ratio`` ... ``verdict``, ``baseline``, ``candidate``) are those of
    the metric that decided (``metric``); ``metrics`` holds every metric that was analysed.
    """

    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    threshold: float
    verdict: Verdict | None
    runs_used: int
    runs_failed: int
    iterations: int
    winsorized: int
    interval: str
    reps: int
    seed: int
    baseline: SideSummary | None
    candidate: SideSummary | None
    runs_needed: int | None
    note: str | None
    failures: tuple[str, ...]
    metric: MetricName = "wall"
    metric_requested: MetricChoice = DEFAULT_METRIC
    metric_reason: str | None = None
    metrics: Mapping[str, MetricEstimate] = field(default_factory=dict)
    #: Why a metric could not be analysed (e.g. ``{"cpu": "not recorded (duet-results/1)"}``).
    metrics_missing: Mapping[str, str] = field(default_factory=dict)
    #: Per side, the median share of the iteration spent on a CPU or waiting for one.
    busy_share: Mapping[str, float] = field(default_factory=dict)
    interference: Interference | None = None
    disagreement: str | None = None
    #: Does the core matter? When the runs used two cores, else None; from inside the runs
    #: (:class:`CoreDifference`) when the sides changed CPUs within them.
    side_asymmetry: SideAsymmetry | CoreDifference | None = None
    #: The core design and the estimate used; None for files that predate the crossover
    #: (no ``settings["crossover"]``, no per-iteration CPUs): ``to_dict`` then has no
    #: ``design`` key, so that their stored analyses stay as they were.
    design: Design | None = None
    #: A measurement until decided (docs/statistics.md, method 2b); None for a fixed design:
    #: ``to_dict`` then has no ``stopping`` key.
    stopping: Stopping | None = None

    def to_block(self) -> stored.AnalysisBlock:
        """The record ``results.json`` stores (:class:`duet_bench.results.analysis.AnalysisBlock`);
        ``design`` is left out when None, so that older files' analyses stay as they were."""

        def side(s: SideSummary | None) -> stored.SideSummary | None:
            return None if s is None else s.to_block()

        def impact(s: SideSummary | None) -> stored.Impact | None:
            if s is None or s.impact_plain is None:
                return None if s is None else stored.Impact(missing=s.impact_missing)
            return stored.Impact(plain=s.impact_plain, transformed=s.impact_transformed)

        return stored.AnalysisBlock(
            ratio=self.ratio,
            ci_low=self.ci_low,
            ci_high=self.ci_high,
            confidence=self.confidence,
            threshold=self.threshold,
            verdict=self.verdict,
            metric=self.metric,
            metric_requested=self.metric_requested,
            metric_reason=self.metric_reason,
            runs_used=self.runs_used,
            runs_failed=self.runs_failed,
            iterations=self.iterations,
            winsorized=self.winsorized,
            interval=self.interval,
            reps=self.reps,
            seed=self.seed,
            baseline=side(self.baseline),
            candidate=side(self.candidate),
            metrics={
                **{name: m.to_block() for name, m in self.metrics.items()},
                **{
                    name: stored.MetricBlock(missing=why)
                    for name, why in self.metrics_missing.items()
                },
            },
            busy_share=dict(self.busy_share) or None,
            interference=None if self.interference is None else self.interference.to_block(),
            disagreement=self.disagreement,
            side_asymmetry=None
            if self.side_asymmetry is None
            else stored.Asymmetry.from_dict(self.side_asymmetry.figures()),
            impact_baseline=impact(self.baseline),
            impact_candidate=impact(self.candidate),
            runs_needed=self.runs_needed,
            note=self.note,
            failures=tuple(self.failures),
            design=None if self.design is None else self.design.to_block(),
            stopping=None if self.stopping is None else self.stopping.to_block(),
            absent=frozenset(
                ({"design"} if self.design is None else set())
                | ({"stopping"} if self.stopping is None else set())
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """What ``results.json`` stores: :meth:`to_block` as JSON."""
        return self.to_block().to_dict()
