"""The analysis block of a benchmark in ``results.json``, typed (docs/results-schema.md, "The
``analysis`` object"): :class:`AnalysisBlock` and the records it holds, each with ``from_dict``
and ``to_dict``.

:mod:`duet_bench.analysis` makes these records (``BenchmarkAnalysis.to_block``); the reports,
the comment, ``merge`` and the demo read them. ``from_dict`` reads a value of the wrong type as
None (:mod:`duet_bench.results.values`): the block is derived from the samples and made again by
``duet analyze``. A key the stored block lacks (an analysis written by an earlier duet: before
``duet-results/2`` no ``metric``, ``metrics``, ..., nor ``geomean_ns``; before crossover no
``design``) is filled with None and noted in ``absent``, and ``to_dict`` leaves it out again, so
that ``to_dict(from_dict(x)) == x`` for every block duet wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from duet_bench.results.values import count, integer, mapping, number, string

Verdict: TypeAlias = Literal["regression", "improvement", "no change", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "no change", "inconclusive")
SIDES = ("baseline", "candidate")


def verdict(value: object) -> Verdict | None:
    """One of the four verdict words, else None."""
    for v in VERDICTS:
        if value == v:
            return v
    return None


@dataclass(frozen=True, slots=True)
class SideSummary:
    """One side's typical iteration under a metric, over exactly the analysed iterations."""

    median_ns: float | None = None
    mean_ns: float | None = None
    #: The geometric mean the ratio divides; None in analyses before ``duet-results/2``.
    geomean_ns: float | None = None

    @staticmethod
    def from_dict(value: object) -> SideSummary | None:
        m = mapping(value)
        if m is None:
            return None
        return SideSummary(
            median_ns=number(m.get("median_ns")),
            mean_ns=number(m.get("mean_ns")),
            geomean_ns=number(m.get("geomean_ns")),
        )

    def to_dict(self) -> dict[str, Any]:
        head = {} if self.geomean_ns is None else {"geomean_ns": self.geomean_ns}
        return {**head, "median_ns": self.median_ns, "mean_ns": self.mean_ns}

    @property
    def typical_ns(self) -> float | None:
        """The geometric mean, or the median for analyses that predate it."""
        return self.geomean_ns or self.median_ns


def _side(s: SideSummary | None) -> dict[str, Any] | None:
    return None if s is None else s.to_dict()


@dataclass(frozen=True, slots=True)
class MetricBlock:
    """One metric of ``analysis.metrics``: its ratio, interval, verdict and sides, or why it
    could not be analysed (``missing``, the only key then stored)."""

    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: Verdict | None = None
    winsorized: int | None = None
    baseline: SideSummary | None = None
    candidate: SideSummary | None = None
    missing: str | None = None

    @staticmethod
    def from_dict(value: object) -> MetricBlock | None:
        m = mapping(value)
        if m is None:
            return None
        if "missing" in m:
            return MetricBlock(missing=string(m["missing"]) or "")
        return MetricBlock(
            ratio=number(m.get("ratio")),
            ci_low=number(m.get("ci_low")),
            ci_high=number(m.get("ci_high")),
            verdict=verdict(m.get("verdict")),
            winsorized=count(m.get("winsorized")),
            baseline=SideSummary.from_dict(m.get("baseline")),
            candidate=SideSummary.from_dict(m.get("candidate")),
        )

    def to_dict(self) -> dict[str, Any]:
        if self.missing is not None:
            return {"missing": self.missing}
        return {
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
            "winsorized": self.winsorized,
            "baseline": _side(self.baseline),
            "candidate": _side(self.candidate),
        }


@dataclass(frozen=True, slots=True)
class Interference:
    """How often another process held a measuring CPU: iterations in which a side waited on the
    run queue for more than ``threshold`` of it (``interfered``), their ``share``, the wait."""

    iterations: int | None = None
    interfered: int | None = None
    share: float | None = None
    runq_ns: int | None = None
    wall_ns: int | None = None
    threshold: float | None = None

    @staticmethod
    def from_dict(value: object) -> Interference | None:
        m = mapping(value)
        if m is None:
            return None
        return Interference(
            iterations=count(m.get("iterations")),
            interfered=count(m.get("interfered")),
            share=number(m.get("share")),
            runq_ns=count(m.get("runq_ns")),
            wall_ns=count(m.get("wall_ns")),
            threshold=number(m.get("threshold")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "interfered": self.interfered,
            "share": self.share,
            "runq_ns": self.runq_ns,
            "wall_ns": self.wall_ns,
            "threshold": self.threshold,
        }


@dataclass(frozen=True, slots=True)
class Asymmetry:
    """Does the core matter: ``T(cpu_b) / T(cpu_a)`` and its interval, from between the runs
    (``runs_a``/``runs_b``: runs with the baseline on each CPU) or, ``estimate ==
    "within-run"``, from inside crossover runs (``runs``)."""

    cpu_a: int | None = None
    cpu_b: int | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    runs_a: int | None = None
    runs_b: int | None = None
    estimate: str | None = None
    runs: int | None = None

    @staticmethod
    def from_dict(value: object) -> Asymmetry | None:
        m = mapping(value)
        if m is None:
            return None
        return Asymmetry(
            cpu_a=integer(m.get("cpu_a")),
            cpu_b=integer(m.get("cpu_b")),
            ratio=number(m.get("ratio")),
            ci_low=number(m.get("ci_low")),
            ci_high=number(m.get("ci_high")),
            runs_a=count(m.get("runs_a")),
            runs_b=count(m.get("runs_b")),
            estimate=string(m.get("estimate")),
            runs=count(m.get("runs")),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "cpu_a": self.cpu_a,
            "cpu_b": self.cpu_b,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }
        if self.estimate is not None:
            return {**out, "estimate": self.estimate, "runs": self.runs}
        return {**out, "runs_a": self.runs_a, "runs_b": self.runs_b}


@dataclass(frozen=True, slots=True)
class Impact:
    """A side's impact factor (docs/statistics.md), plain and transformed, or why missing."""

    plain: float | None = None
    transformed: float | None = None
    missing: str | None = None

    @staticmethod
    def from_dict(value: object) -> Impact | None:
        m = mapping(value)
        if m is None:
            return None
        if "plain" not in m:
            return Impact(missing=string(m.get("missing")))
        return Impact(plain=number(m.get("plain")), transformed=number(m.get("transformed")))

    def to_dict(self) -> dict[str, Any]:
        if self.plain is None:
            return {"missing": self.missing}
        return {"plain": self.plain, "transformed": self.transformed}


@dataclass(frozen=True, slots=True)
class Design:
    """The core design of the runs (``crossover``: ``iteration`` | ``run``) and the estimate it
    led to (``assignment-balanced`` | ``run-mean``); docs/statistics.md."""

    crossover: str | None = None
    estimate: str | None = None
    single_assignment_runs: int | None = None
    clashes: int | None = None

    @staticmethod
    def from_dict(value: object) -> Design | None:
        m = mapping(value)
        if m is None:
            return None
        return Design(
            crossover=string(m.get("crossover")),
            estimate=string(m.get("estimate")),
            single_assignment_runs=count(m.get("single_assignment_runs")),
            clashes=count(m.get("clashes")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "crossover": self.crossover,
            "estimate": self.estimate,
            "single_assignment_runs": self.single_assignment_runs,
            "clashes": self.clashes,
        }


@dataclass(frozen=True, slots=True)
class Look:
    """One look of a measurement until decided: the verdict after ``runs`` successful runs."""

    runs: int | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: Verdict | None = None

    @staticmethod
    def from_dict(value: object) -> Look | None:
        m = mapping(value)
        if m is None:
            return None
        return Look(
            runs=count(m.get("runs")),
            ratio=number(m.get("ratio")),
            ci_low=number(m.get("ci_low")),
            ci_high=number(m.get("ci_high")),
            verdict=verdict(m.get("verdict")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
        }


@dataclass(frozen=True, slots=True)
class StoppingBlock:
    """A measurement until decided (docs/statistics.md, method 2b): the design, where it
    stopped and why, the machine time, and every look."""

    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    shape: str | None = None
    decided_after: int | None = None
    stopped: str | None = None
    elapsed_ns: int | None = None
    looks: tuple[Look, ...] = ()

    @staticmethod
    def from_dict(value: object) -> StoppingBlock | None:
        m = mapping(value)
        if m is None:
            return None
        looks = m.get("looks")
        return StoppingBlock(
            min_runs=count(m.get("min_runs")),
            max_runs=count(m.get("max_runs")),
            budget_s=number(m.get("budget_s")),
            shape=string(m.get("shape")),
            decided_after=count(m.get("decided_after")),
            stopped=string(m.get("stopped")),
            elapsed_ns=count(m.get("elapsed_ns")),
            looks=tuple(x for v in looks if (x := Look.from_dict(v)) is not None)
            if isinstance(looks, list)
            else (),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_runs": self.min_runs,
            "max_runs": self.max_runs,
            "budget_s": self.budget_s,
            "shape": self.shape,
            "decided_after": self.decided_after,
            "stopped": self.stopped,
            "elapsed_ns": self.elapsed_ns,
            "looks": [x.to_dict() for x in self.looks],
        }


@dataclass(frozen=True, slots=True)
class AnalysisBlock:
    """A benchmark's ``analysis``: the figures of the metric that decided (``metric``), the
    settings it was judged with, every metric analysed (``metrics``), and what the reports add
    (interference, side asymmetry, impact factors, runs needed, notes, failed runs)."""

    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    threshold: float | None = None
    verdict: Verdict | None = None
    metric: str | None = None
    metric_requested: str | None = None
    metric_reason: str | None = None
    runs_used: int | None = None
    runs_failed: int | None = None
    iterations: int | None = None
    winsorized: int | None = None
    interval: str | None = None
    reps: int | None = None
    seed: int | None = None
    baseline: SideSummary | None = None
    candidate: SideSummary | None = None
    metrics: Mapping[str, MetricBlock] = field(default_factory=dict)
    busy_share: Mapping[str, float] | None = None
    interference: Interference | None = None
    disagreement: str | None = None
    side_asymmetry: Asymmetry | None = None
    impact_baseline: Impact | None = None
    impact_candidate: Impact | None = None
    runs_needed: int | None = None
    note: str | None = None
    failures: tuple[str, ...] = ()
    design: Design | None = None
    #: A measurement until decided; None (and absent) for a fixed design.
    stopping: StoppingBlock | None = None
    #: The keys of :meth:`to_dict` the stored block did not have: left out when written.
    absent: frozenset[str] = frozenset()

    @staticmethod
    def from_dict(m: Mapping[str, Any]) -> AnalysisBlock:
        metrics = mapping(m.get("metrics")) or {}
        busy = mapping(m.get("busy_share"))
        impact = mapping(m.get("impact_factor")) or {}
        failures = m.get("failures")
        return AnalysisBlock(
            ratio=number(m.get("ratio")),
            ci_low=number(m.get("ci_low")),
            ci_high=number(m.get("ci_high")),
            confidence=number(m.get("confidence")),
            threshold=number(m.get("threshold")),
            verdict=verdict(m.get("verdict")),
            metric=string(m.get("metric")),
            metric_requested=string(m.get("metric_requested")),
            metric_reason=string(m.get("metric_reason")),
            runs_used=count(m.get("runs_used")),
            runs_failed=count(m.get("runs_failed")),
            iterations=count(m.get("iterations")),
            winsorized=count(m.get("winsorized")),
            interval=string(m.get("interval")),
            reps=count(m.get("reps")),
            seed=integer(m.get("seed")),
            baseline=SideSummary.from_dict(m.get("baseline")),
            candidate=SideSummary.from_dict(m.get("candidate")),
            metrics={
                str(k): e for k, v in metrics.items() if (e := MetricBlock.from_dict(v)) is not None
            },
            busy_share=None
            if busy is None
            else {str(k): x for k, v in busy.items() if (x := number(v)) is not None},
            interference=Interference.from_dict(m.get("interference")),
            disagreement=string(m.get("disagreement")),
            side_asymmetry=Asymmetry.from_dict(m.get("side_asymmetry")),
            impact_baseline=Impact.from_dict(impact.get("baseline")),
            impact_candidate=Impact.from_dict(impact.get("candidate")),
            runs_needed=count(m.get("runs_needed")),
            note=string(m.get("note")),
            failures=tuple(f for f in failures if isinstance(f, str))
            if isinstance(failures, list)
            else (),
            design=Design.from_dict(m.get("design")),
            stopping=StoppingBlock.from_dict(m.get("stopping")),
            absent=frozenset(k for k in KEYS if k not in m),
        )

    def to_dict(self) -> dict[str, Any]:
        def optional(
            x: Interference | Asymmetry | Impact | Design | StoppingBlock | None,
        ) -> Any:
            return None if x is None else x.to_dict()

        out = {
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "verdict": self.verdict,
            "metric": self.metric,
            "metric_requested": self.metric_requested,
            "metric_reason": self.metric_reason,
            "runs_used": self.runs_used,
            "runs_failed": self.runs_failed,
            "iterations": self.iterations,
            "winsorized": self.winsorized,
            "interval": self.interval,
            "reps": self.reps,
            "seed": self.seed,
            "baseline": _side(self.baseline),
            "candidate": _side(self.candidate),
            "metrics": {k: e.to_dict() for k, e in self.metrics.items()},
            "busy_share": None if self.busy_share is None else dict(self.busy_share),
            "interference": optional(self.interference),
            "disagreement": self.disagreement,
            "side_asymmetry": optional(self.side_asymmetry),
            "impact_factor": {
                "baseline": optional(self.impact_baseline),
                "candidate": optional(self.impact_candidate),
            },
            "runs_needed": self.runs_needed,
            "note": self.note,
            "failures": list(self.failures),
            "design": optional(self.design),
            "stopping": optional(self.stopping),
        }
        return {k: v for k, v in out.items() if k not in self.absent}


#: Every key of a stored analysis block, in the order duet writes them.
KEYS = tuple(AnalysisBlock().to_dict())
