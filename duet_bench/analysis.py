"""From raw samples to a verdict: the ``duet`` side of the statistics.

``stats`` computes numbers; this module decides what they mean (method.md section 2): the
verdict words, the practical-significance threshold, how many runs would decide an
inconclusive benchmark, and which runs are analysed (the successful ones).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

import numpy as np

from duet_bench import units
from duet_bench.metrics import (
    DEFAULT_METRIC,
    INTERFERED_RUNQ_SHARE,
    INTERFERENCE_NOTICE_SHARE,
    METRIC_CHOICES,
    METRIC_NAMES,
    METRICS,
    Metric,
    MetricChoice,
    not_cpu_bound,
)
from duet_bench.results import SIDES, BenchmarkRecord, ResultsDocument, RunRecord, SideName
from duet_bench.settings import (
    DEFAULT_CONFIDENCE,
    DEFAULT_INTERVAL,
    DEFAULT_REPS,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_WINSORIZE,
)

Verdict: TypeAlias = Literal["regression", "improvement", "no change", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "no change", "inconclusive")
FailOn: TypeAlias = Literal["regression", "inconclusive", "any", "never"]
#: Kalibera's impact factor needs c = floor(0.75 m) >= 2 runs and more iterations than c.
IMPACT_REPS = 10_000
#: Above this, "N more runs would decide" is not advice anyone can follow.
PRACTICAL_RUNS = 1000


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    """How to analyse. The defaults are method.md's, from :mod:`duet_bench.settings`, which also
    resolves them per benchmark against the configuration and the options."""

    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    reps: int = DEFAULT_REPS
    seed: int = DEFAULT_SEED
    interval: Literal["percentile", "expanded", "bca", "basic", "studentized"] = DEFAULT_INTERVAL
    winsorize: bool = DEFAULT_WINSORIZE
    metric: MetricChoice = DEFAULT_METRIC

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be strictly between 0 and 1, got {self.confidence}")
        if not self.threshold >= 0 or not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be a finite number >= 0, got {self.threshold}")
        if self.reps < 100:
            raise ValueError(f"reps must be at least 100, got {self.reps}")
        if self.metric not in METRIC_CHOICES:
            raise ValueError(
                f"metric must be one of {', '.join(METRIC_CHOICES)}, got {self.metric}"
            )


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

    def to_dict(self) -> dict[str, Any]:
        return {"geomean_ns": self.geomean_ns, "median_ns": self.median_ns, "mean_ns": self.mean_ns}


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """The ratio, interval and verdict of one metric (wall or CPU time) of one benchmark."""

    metric: Metric
    ratio: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict | None
    winsorized: int
    baseline: SideSummary
    candidate: SideSummary
    #: Per-iteration log ratios that were analysed (for planning; not stored).
    log_ratios: np.ndarray[Any, np.dtype[np.float64]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
            "winsorized": self.winsorized,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Interference:
    """How much another process delayed the sides: iterations in which either side waited on
    the run queue for more than :data:`INTERFERED_RUNQ_SHARE` of its iteration, and the delay."""

    iterations: int
    interfered: int
    runq_ns: int
    wall_ns: int

    @property
    def share(self) -> float:
        return self.interfered / self.iterations if self.iterations else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "interfered": self.interfered,
            "share": self.share,
            "runq_ns": self.runq_ns,
            "wall_ns": self.wall_ns,
            "threshold": INTERFERED_RUNQ_SHARE,
        }


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
    metric: Metric = "wall"
    metric_requested: MetricChoice = DEFAULT_METRIC
    metric_reason: str | None = None
    metrics: Mapping[str, MetricEstimate] = field(default_factory=dict)
    #: Why a metric could not be analysed (e.g. ``{"cpu": "not recorded (duet-results/1)"}``).
    metrics_missing: Mapping[str, str] = field(default_factory=dict)
    #: Per side, the median share of the iteration spent on a CPU or waiting for one.
    busy_share: Mapping[str, float] = field(default_factory=dict)
    interference: Interference | None = None
    disagreement: str | None = None
    #: Does the core matter? ``{cpu_a, cpu_b, ratio, ci_low, ci_high, runs_a, runs_b}`` when
    #: the runs used two cores, else None.
    side_asymmetry: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        def side(s: SideSummary | None) -> dict[str, Any] | None:
            return None if s is None else s.to_dict()

        def impact(s: SideSummary | None) -> dict[str, Any] | None:
            if s is None or s.impact_plain is None:
                return None if s is None else {"missing": s.impact_missing}
            return {"plain": s.impact_plain, "transformed": s.impact_transformed}

        return {
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
            "baseline": side(self.baseline),
            "candidate": side(self.candidate),
            "metrics": {
                **{name: m.to_dict() for name, m in self.metrics.items()},
                **{name: {"missing": why} for name, why in self.metrics_missing.items()},
            },
            "busy_share": dict(self.busy_share) or None,
            "interference": None if self.interference is None else self.interference.to_dict(),
            "disagreement": self.disagreement,
            "side_asymmetry": None if self.side_asymmetry is None else dict(self.side_asymmetry),
            "impact_factor": {
                "baseline": impact(self.baseline),
                "candidate": impact(self.candidate),
            },
            "runs_needed": self.runs_needed,
            "note": self.note,
            "failures": list(self.failures),
        }


def verdict(*, ratio: float, ci_low: float, ci_high: float, threshold: float) -> Verdict:
    """The verdict of method.md section 2.

    ``regression`` needs the whole interval above 1 *and* a point estimate at least ``1 + t``;
    ``no change`` needs the whole interval inside ``[1/(1+t), 1+t]``: a wide interval is never
    called "no change".
    """
    band_high = 1.0 + threshold
    band_low = 1.0 / band_high
    if ci_low > 1.0 and ratio >= band_high:
        return "regression"
    if ci_high < 1.0 and ratio <= band_low:
        return "improvement"
    if band_low <= ci_low and ci_high <= band_high:
        return "no change"
    return "inconclusive"


def fails(verdicts: list[Verdict | None], fail_on: FailOn) -> bool:
    """Whether these verdicts fail a CI job under ``--fail-on``.

    ``regression``: any regression. ``inconclusive``: a regression, or an inconclusive verdict
    (a job that must prove "not slower" fails when the data cannot say). ``any``: any
    regression or improvement (a change either way must be acknowledged). ``never``: never.
    """
    failing: dict[FailOn, set[Verdict | None]] = {
        "regression": {"regression"},
        "inconclusive": {"regression", "inconclusive"},
        "any": {"regression", "improvement"},
        "never": set(),
    }
    bad = failing[fail_on]
    return any(v in bad for v in verdicts)


def rng_for(name: str, seed: int) -> np.random.Generator:
    """A generator per benchmark: independent streams, the same numbers on every re-analysis."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


Matrix: TypeAlias = np.ndarray[Any, np.dtype[np.float64]]


def _failure_reasons(record: BenchmarkRecord) -> tuple[str, ...]:
    out = []
    for r in record.runs:
        if not r.ok:
            out.append(f"run {r.index}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Series:
    """The analysed runs of one benchmark as ``(runs, iterations)`` matrices per side."""

    wall: tuple[Matrix, Matrix]
    cpu: tuple[Matrix, Matrix] | None
    runq: tuple[Matrix, Matrix] | None
    cpu_missing: str | None

    def wall_less_runq(self) -> tuple[Matrix, Matrix] | None:
        if self.runq is None:
            return None
        a, b = self.wall[0] - self.runq[0], self.wall[1] - self.runq[1]
        # The task waited for the whole iteration as measured (a capped reading): unusable.
        return (a, b) if (a > 0).all() and (b > 0).all() else None

    def of(self, metric: Metric) -> tuple[Matrix, Matrix] | None:
        if metric == "cpu":
            return self.cpu
        if metric == "wall-runq":
            return self.wall_less_runq()
        return self.wall


def _series(ok: tuple[RunRecord, ...], n: int) -> _Series:
    """Matrices of the first ``n`` iterations of every run; CPU time and run-queue delay only
    when every analysed run recorded them on both sides."""

    def matrix(attr: str) -> tuple[Matrix, Matrix] | None:
        rows: dict[SideName, list[tuple[int, ...]]] = {"baseline": [], "candidate": []}
        for r in ok:
            for name in SIDES:
                values = getattr(r.side(name), attr)
                if values is None:
                    return None
                rows[name].append(values[:n])
        return (
            np.array(rows["baseline"], dtype=np.float64),
            np.array(rows["candidate"], dtype=np.float64),
        )

    wall = matrix("iterations_ns")
    assert wall is not None
    cpu = matrix("iteration_cpu_ns")
    cpu_missing = None
    if cpu is None:
        cpu_missing = "no per-iteration CPU time recorded (a duet-results/1 file or an old harness)"
    elif (cpu[0] <= 0).any() or (cpu[1] <= 0).any():
        cpu_missing = (
            "an iteration used 0 ns of CPU time as measured (the clock's resolution is coarser "
            "than the iteration)"
        )
        cpu = None
    runq = matrix("iteration_runq_ns")
    if runq is not None:
        # The kernel adds a wait to run_delay when the task next gets a CPU; under heavy load a
        # reading above the iteration's wall time was seen (a wait that began before the
        # iteration). The samples keep the reading; the analysis caps it at the iteration.
        runq = (np.minimum(runq[0], wall[0]), np.minimum(runq[1], wall[1]))
    return _Series(wall=wall, cpu=cpu, runq=runq, cpu_missing=cpu_missing)


def _estimate(
    metric: Metric, a: Matrix, b: Matrix, *, name: str, settings: AnalysisSettings
) -> MetricEstimate:
    from duet_stats.ratio import duet_ratio

    log_ratios = np.log(b / a)
    if a.shape[0] < 2:
        ratio = float(np.exp(np.mean(log_ratios)))
        lo: float | None = None
        hi: float | None = None
        winsorized = 0
    else:
        est = duet_ratio(
            a,
            b,
            confidence=settings.confidence,
            reps=settings.reps,
            method=settings.interval,
            winsorize=settings.winsorize,
            rng=rng_for(name, settings.seed),
        )
        ratio, lo, hi, winsorized = est.ratio, est.ci_low, est.ci_high, est.winsorized
    the_verdict = (
        verdict(ratio=ratio, ci_low=lo, ci_high=hi, threshold=settings.threshold)
        if lo is not None and hi is not None
        else None
    )
    return MetricEstimate(
        metric=metric,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        verdict=the_verdict,
        winsorized=winsorized,
        baseline=_summary(a),
        candidate=_summary(b),
        log_ratios=log_ratios,
    )


def _summary(x: Matrix) -> SideSummary:
    return SideSummary(
        geomean_ns=float(np.exp(np.mean(np.log(x)))),
        median_ns=float(np.median(x)),
        mean_ns=float(np.mean(x)),
    )


def _busy_share(series: _Series) -> dict[str, float]:
    """Per side, the median over iterations of (CPU time + run-queue delay) / wall time."""
    if series.cpu is None:
        return {}
    out: dict[str, float] = {}
    for i, name in enumerate(SIDES):
        busy = series.cpu[i] + (series.runq[i] if series.runq is not None else 0.0)
        out[name] = float(np.median(busy / series.wall[i]))
    return out


def _interference(series: _Series) -> Interference | None:
    if series.runq is None:
        return None
    (wall_a, wall_b), (runq_a, runq_b) = series.wall, series.runq
    hit = (runq_a > INTERFERED_RUNQ_SHARE * wall_a) | (runq_b > INTERFERED_RUNQ_SHARE * wall_b)
    return Interference(
        iterations=int(hit.size),
        interfered=int(hit.sum()),
        runq_ns=int(runq_a.sum() + runq_b.sum()),
        wall_ns=int(wall_a.sum() + wall_b.sum()),
    )


def choose_metric(
    requested: MetricChoice,
    *,
    available: Mapping[str, str | None],
    busy_share: Mapping[str, float],
    interference: Interference | None,
) -> tuple[Metric, str]:
    """The metric that decides, and why, in words for the report.

    ``available`` maps every metric to None when it was analysed, else to why it was not.
    """
    if requested != "auto":
        why_not = available.get(requested)
        if why_not is None:
            return requested, f"{METRIC_NAMES[requested]}, as configured"
        return "wall", f"wall time: {METRIC_NAMES[requested]} was asked for, but {why_not}"
    if available.get("cpu") is not None:
        return "wall", f"wall time: {available['cpu']}"
    shares = ", ".join(f"{name} {units.share(busy_share[name])}" for name in SIDES)
    idle = not_cpu_bound({name: busy_share[name] for name in SIDES})
    if not idle:
        return "cpu", (
            f"CPU time: both sides CPU-bound ({shares} of the wall time on a CPU or in its queue)"
        )
    sleeper = (
        f"the {' and the '.join(idle)} spent only {shares} of the iteration on a CPU or waiting "
        "for one (it sleeps or waits for I/O, which CPU time misses)"
    )
    delayed = interference is not None and interference.share >= INTERFERENCE_NOTICE_SHARE
    if delayed and available.get("wall-runq") is None:
        assert interference is not None
        return "wall-runq", (
            f"wall time less run-queue delay: {sleeper}, and another process delayed a side in "
            f"{units.share(interference.share)} of iterations, which wall time would count"
        )
    return "wall", f"wall time: {sleeper}"


def _contradict(x: Verdict | None, y: Verdict | None) -> bool:
    """A change against no change, or opposite changes; an inconclusive verdict (or none)
    contradicts nothing: that metric is simply the less sharp one."""
    changes = ("regression", "improvement")
    if x == y or x in ("inconclusive", None) or y in ("inconclusive", None):
        return False
    return x in changes or y in changes


def _disagreement(estimates: Mapping[str, MetricEstimate], chosen: Metric) -> str | None:
    """Say so when another metric contradicts the deciding one: a change only wall time shows
    (more sleeping, I/O or lock waits) is real and must not be hidden."""
    decided = estimates[chosen]

    def say(m: MetricEstimate) -> str:
        return (
            f"{METRIC_NAMES[m.metric]} says {m.verdict or 'no verdict'} ({units.change(m.ratio)})"
        )

    for name in METRICS:
        other = estimates.get(name)
        if other is None or name == chosen or not _contradict(other.verdict, decided.verdict):
            continue
        text = f"{say(other)} but {say(decided)}, which decided"
        wall, rest = (other, decided) if name == "wall" else (decided, other)
        changes = ("regression", "improvement")
        if "wall" in (name, chosen) and wall.verdict in changes and rest.verdict not in changes:
            text += (
                ": the difference is time off the CPU (sleeping, I/O, locks) or a process that "
                "delayed one side"
            )
        return text
    return None


def _side_asymmetry(
    ok: tuple[RunRecord, ...], chosen: MetricEstimate, settings: AnalysisSettings, name: str
) -> tuple[dict[str, Any] | None, str | None]:
    """The core asymmetry in this benchmark's own runs, and a note when it matters: significant
    and at least half the threshold (the balanced alternation cancels it in the ratio, but the
    interval widens and a reader of the per-run plot sees two groups)."""
    from duet_stats.asymmetry import side_asymmetry

    cores = [r.baseline.cores[0] if r.baseline.cores else None for r in ok]
    known = sorted({c for c in cores if c is not None})
    if len(known) != 2 or None in cores:
        return None, None
    cpu_a, cpu_b = known
    on_a = np.array([c == cpu_a for c in cores])
    log_g = chosen.log_ratios.mean(axis=1)
    est = side_asymmetry(
        log_g,
        on_a,
        confidence=settings.confidence,
        reps=min(settings.reps, 2000),
        rng=rng_for(name + "/sides", settings.seed),
    )
    if est is None:
        return None, None
    info = {
        "cpu_a": cpu_a,
        "cpu_b": cpu_b,
        "ratio": est.ratio,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "runs_a": est.runs_a,
        "runs_b": est.runs_b,
    }
    if not est.significant or abs(math.log(est.ratio)) < math.log1p(settings.threshold) / 2:
        return info, None
    g = np.exp(log_g)

    def spread(group: np.ndarray[Any, np.dtype[np.float64]]) -> str:
        low, high = units.ratio(float(group.min())), units.ratio(float(group.max()))
        return low if low == high else f"{low}-{high}"

    slower, faster = (cpu_b, cpu_a) if est.ratio > 1 else (cpu_a, cpu_b)
    note = (
        f"the cores differ: runs with the baseline on CPU {cpu_a} gave {spread(g[on_a])}, on "
        f"CPU {cpu_b} {spread(g[~on_a])}; the same code runs "
        f"{units.change(max(est.ratio, 1 / est.ratio))} on CPU {slower} against CPU {faster}. "
        "Alternating the sides cancels it in the ratio but widens the interval; "
        "`duet doctor` and an A/A `duet calibrate` tell what makes the cores unequal"
    )
    return info, note


def analyze_benchmark(record: BenchmarkRecord, settings: AnalysisSettings) -> BenchmarkAnalysis:
    """Recompute the analysis of one benchmark from its raw samples (successful runs only)."""
    from duet_stats.impact import ImpactFactors, paired_impact_factors
    from duet_stats.planning import variance_components
    from duet_stats.ratio import MIN_BOOTSTRAP_RUNS

    ok = record.ok_runs()
    failures = _failure_reasons(record)
    empty = BenchmarkAnalysis(
        ratio=None,
        ci_low=None,
        ci_high=None,
        confidence=settings.confidence,
        threshold=settings.threshold,
        verdict=None,
        runs_used=0,
        runs_failed=len(failures),
        iterations=0,
        winsorized=0,
        interval=settings.interval,
        reps=settings.reps,
        seed=settings.seed,
        baseline=None,
        candidate=None,
        runs_needed=None,
        note=record.note or "no successful run: nothing to analyse",
        failures=failures,
        metric_requested=settings.metric,
    )
    if not ok:
        return empty
    lengths = {len(r.baseline.iterations_ns) for r in ok}
    # Runs cut short (e.g. an interrupted last run kept as "ok") would bias the mean; use the
    # common length so every run weighs the same, and say so.
    series = _series(ok, min(lengths))
    notes: list[str] = []
    if record.note:
        notes.append(record.note)
    if len(lengths) != 1:
        notes.append(f"runs had different iteration counts; each cut to {min(lengths)}")

    estimates: dict[str, MetricEstimate] = {}
    missing: dict[str, str] = {}
    for name in METRICS:
        data = series.of(name)
        if data is not None:
            estimates[name] = _estimate(name, *data, name=record.name, settings=settings)
        elif name == "cpu":
            missing[name] = series.cpu_missing or "not recorded"
        else:
            missing[name] = (
                "no per-iteration run-queue delay recorded"
                if series.runq is None
                else "the run-queue delay took a whole iteration (clock resolutions)"
            )
    busy = _busy_share(series)
    interference = _interference(series)
    metric, reason = choose_metric(
        settings.metric,
        available={name: missing.get(name) for name in METRICS},
        busy_share=busy,
        interference=interference,
    )
    chosen = estimates[metric]
    asymmetry, asymmetry_note = (
        _side_asymmetry(ok, chosen, settings, record.name) if len(ok) >= 4 else (None, None)
    )
    if asymmetry_note:
        notes.append(asymmetry_note)
    if len(ok) < 2:
        notes.append("only 1 successful run: point estimate only, no interval and no verdict")
    elif chosen.ci_low is None:
        notes.append(
            f"only {len(ok)} successful runs (< {MIN_BOOTSTRAP_RUNS}): a bootstrap "
            "interval would be meaningless; point estimate only, no verdict"
        )

    runs_needed: int | None = None
    if chosen.verdict == "inconclusive":
        runs_needed = _runs_needed(
            chosen.log_ratios,
            ratio=chosen.ratio,
            settings=settings,
            variance_components=variance_components,
        )
        if runs_needed is not None and runs_needed <= PRACTICAL_RUNS:
            notes.append(
                f"about {runs_needed} runs in all ({max(runs_needed - len(ok), 1)} more) "
                f"would decide at threshold {settings.threshold:.3g}"
            )
        elif runs_needed is not None:
            notes.append(
                f"the ratio is too close to the threshold {settings.threshold:.3g} to decide "
                f"with a practical number of runs (about {runs_needed}); more iterations "
                "per run or a quieter machine would help more"
            )

    # Both sides from one set of draws (half the cost; see paired_impact_factors).
    a, b = series.of(metric) or series.wall
    factors: tuple[ImpactFactors, ImpactFactors] | None = None
    impact_missing: str | None = None
    try:
        factors = paired_impact_factors(
            a, b, k=IMPACT_REPS, rng=rng_for(record.name, settings.seed)
        )
    except ValueError as e:
        impact_missing = str(e)

    def with_impact(s: SideSummary, side: int) -> SideSummary:
        f = factors[side] if factors is not None else None
        return replace(
            s,
            impact_plain=f.plain if f is not None else None,
            impact_transformed=f.transformed if f is not None else None,
            impact_missing=impact_missing,
        )

    return replace(
        empty,
        ratio=chosen.ratio,
        ci_low=chosen.ci_low,
        ci_high=chosen.ci_high,
        verdict=chosen.verdict,
        runs_used=len(ok),
        iterations=int(a.shape[1]),
        winsorized=chosen.winsorized,
        baseline=with_impact(chosen.baseline, 0),
        candidate=with_impact(chosen.candidate, 1),
        runs_needed=runs_needed,
        note="; ".join(notes) or None,
        metric=metric,
        metric_reason=reason,
        metrics=estimates,
        metrics_missing=missing,
        busy_share=busy,
        interference=interference,
        disagreement=_disagreement(estimates, metric),
        side_asymmetry=asymmetry,
    )


def _runs_needed(
    log_ratios: np.ndarray[Any, np.dtype[np.float64]],
    *,
    ratio: float,
    settings: AnalysisSettings,
    variance_components: Any,
) -> int | None:
    """Runs that would shrink the interval enough to decide (method.md section 5).

    In log space the decision boundary is ``log(1 + t)``: to call a change, the half-width must
    be below the distance from ``log G`` to 1 (then ``lo > 1``); to call "no change" it must be
    below the distance from ``log G`` to the band edge. The nearer boundary that still decides
    is ``|log(1+t) - |log G||`` unless ``|log G| >= log(1+t)``, then ``|log G|``.
    """
    from duet_stats.planning import runs_needed

    if log_ratios.shape[0] < 2 or log_ratios.shape[1] < 2:
        return None
    band = math.log1p(settings.threshold)
    distance = abs(math.log(ratio))
    target = distance if distance >= band else band - distance
    if target <= 0:
        return None
    comps = variance_components(log_ratios)
    try:
        return int(
            runs_needed(
                comps,
                iterations=int(log_ratios.shape[1]),
                half_width=target,
                confidence=settings.confidence,
            )
        )
    except ValueError:
        return None


def running_estimate(record: BenchmarkRecord, requested: MetricChoice) -> str | None:
    """``ratio 1.05 so far (CPU time)``: the point estimate of the runs measured so far, for the
    progress line; no bootstrap (that waits for the last run). None before the first good run."""
    ok = record.ok_runs()
    if not ok:
        return None
    series = _series(ok, min(len(r.baseline.iterations_ns) for r in ok))
    available: dict[str, str | None] = {
        name: None if series.of(name) is not None else "not recorded" for name in METRICS
    }
    metric, _ = choose_metric(
        requested,
        available=available,
        busy_share=_busy_share(series),
        interference=_interference(series),
    )
    a, b = series.of(metric) or series.wall
    ratio = float(np.exp(np.mean(np.log(b / a))))
    return f"ratio {units.ratio(ratio)} so far ({METRIC_NAMES[metric]})"


def recorded_metric(record: BenchmarkRecord) -> MetricChoice | None:
    """The metric a benchmark was analysed with before (its configured choice), if any."""
    value = (record.analysis or {}).get("metric_requested")
    return value if value in METRIC_CHOICES else None


def analyze_document(
    doc: ResultsDocument, settings: AnalysisSettings, *, keep_recorded_metric: bool = False
) -> ResultsDocument:
    """A copy of ``doc`` with every benchmark's ``analysis`` recomputed from raw samples.

    With ``keep_recorded_metric`` a benchmark analysed before keeps the metric it asked for
    (``duet.toml``'s ``metric``), unless it recorded none.
    """
    out = doc
    for b in doc.benchmarks:
        these = settings
        if keep_recorded_metric and (metric := recorded_metric(b)) is not None:
            these = replace(settings, metric=metric)
        out = out.with_benchmark(replace(b, analysis=analyze_benchmark(b, these).to_dict()))
    return out


def verdicts_of(doc: ResultsDocument) -> list[Verdict | None]:
    out: list[Verdict | None] = []
    for b in doc.benchmarks:
        a: Mapping[str, Any] = b.analysis or {}
        v = a.get("verdict")
        out.append(v if v in VERDICTS else None)
    return out
