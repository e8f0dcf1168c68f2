"""From raw samples to a verdict: the ``duet`` side of the statistics.

``stats`` computes numbers; this module decides what they mean (method.md section 2): the
verdict words, the practical-significance threshold, how many runs would decide an
inconclusive benchmark, and which runs are analysed (the successful ones).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import numpy as np

from duet.results import BenchmarkRecord, ResultsDocument, RunRecord, SideName

Verdict: TypeAlias = Literal["regression", "improvement", "no change", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "no change", "inconclusive")
FailOn: TypeAlias = Literal["regression", "any", "never"]

DEFAULT_CONFIDENCE = 0.99
DEFAULT_THRESHOLD = 0.02
DEFAULT_REPS = 10_000
DEFAULT_SEED = 0
#: Kalibera's impact factor needs c = floor(0.75 m) >= 2 runs and more iterations than c.
IMPACT_REPS = 10_000
#: Above this, "N more runs would decide" is not advice anyone can follow.
PRACTICAL_RUNS = 1000


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    """How to analyse. The defaults are method.md's."""

    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_THRESHOLD
    reps: int = DEFAULT_REPS
    seed: int = DEFAULT_SEED
    interval: Literal["percentile", "expanded", "bca", "basic", "studentized"] = "expanded"
    winsorize: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be strictly between 0 and 1, got {self.confidence}")
        if not self.threshold >= 0 or not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be a finite number >= 0, got {self.threshold}")
        if self.reps < 100:
            raise ValueError(f"reps must be at least 100, got {self.reps}")


@dataclass(frozen=True, slots=True)
class SideSummary:
    """Descriptive figures for one side over the analysed runs (for tables, not for verdicts)."""

    median_ns: float
    mean_ns: float
    impact_plain: float | None
    impact_transformed: float | None
    impact_missing: str | None


@dataclass(frozen=True, slots=True)
class BenchmarkAnalysis:
    """The analysis of one benchmark; :meth:`to_dict` is what ``results.json`` stores."""

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

    def to_dict(self) -> dict[str, Any]:
        def side(s: SideSummary | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {"median_ns": s.median_ns, "mean_ns": s.mean_ns}

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
            "runs_used": self.runs_used,
            "runs_failed": self.runs_failed,
            "iterations": self.iterations,
            "winsorized": self.winsorized,
            "interval": self.interval,
            "reps": self.reps,
            "seed": self.seed,
            "baseline": side(self.baseline),
            "candidate": side(self.candidate),
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

    ``regression``: any regression. ``any``: any regression or improvement (a change either
    way must be acknowledged). ``never``: never.
    """
    if fail_on == "never":
        return False
    bad: set[Verdict | None] = (
        {"regression"} if fail_on == "regression" else {"regression", "improvement"}
    )
    return any(v in bad for v in verdicts)


def rng_for(name: str, seed: int) -> np.random.Generator:
    """A generator per benchmark: independent streams, the same numbers on every re-analysis."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def _matrix(runs: tuple[RunRecord, ...], side: SideName) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([r.side(side).iterations_ns for r in runs], dtype=np.float64)


def _failure_reasons(record: BenchmarkRecord) -> tuple[str, ...]:
    out = []
    for r in record.runs:
        if not r.ok:
            out.append(f"run {r.index}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
    return tuple(out)


def analyze_benchmark(record: BenchmarkRecord, settings: AnalysisSettings) -> BenchmarkAnalysis:
    """Recompute the analysis of one benchmark from its raw samples (successful runs only)."""
    from stats.impact import ImpactFactors, paired_impact_factors
    from stats.planning import variance_components
    from stats.ratio import MIN_BOOTSTRAP_RUNS, duet_ratio

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
    )
    if not ok:
        return empty
    lengths = {len(r.baseline.iterations_ns) for r in ok}
    if len(lengths) != 1:
        # Runs cut short (e.g. an interrupted last run kept as "ok") would bias the mean;
        # use the common length so every run weighs the same, and say so.
        n = min(lengths)
        ok = tuple(
            replace(
                r,
                baseline=replace(r.baseline, iterations_ns=r.baseline.iterations_ns[:n]),
                candidate=replace(r.candidate, iterations_ns=r.candidate.iterations_ns[:n]),
            )
            for r in ok
        )
    a = _matrix(ok, "baseline")
    b = _matrix(ok, "candidate")
    rng = rng_for(record.name, settings.seed)
    notes: list[str] = []
    if record.note:
        notes.append(record.note)
    if len(lengths) != 1:
        notes.append(f"runs had different iteration counts; each cut to {a.shape[1]}")

    if len(ok) < 2:
        ratio = float(np.exp(np.mean(np.log(b / a))))
        est_ci: tuple[float | None, float | None] = (None, None)
        winsorized = 0
        notes.append("only 1 successful run: point estimate only, no interval and no verdict")
    else:
        est = duet_ratio(
            a,
            b,
            confidence=settings.confidence,
            reps=settings.reps,
            method=settings.interval,
            winsorize=settings.winsorize,
            rng=rng,
        )
        ratio = est.ratio
        est_ci = (est.ci_low, est.ci_high)
        winsorized = est.winsorized
        if est.ci_low is None:
            notes.append(
                f"only {len(ok)} successful runs (< {MIN_BOOTSTRAP_RUNS}): a bootstrap "
                "interval would be meaningless; point estimate only, no verdict"
            )

    the_verdict: Verdict | None = None
    runs_needed: int | None = None
    lo, hi = est_ci
    if lo is not None and hi is not None:
        the_verdict = verdict(ratio=ratio, ci_low=lo, ci_high=hi, threshold=settings.threshold)
        if the_verdict == "inconclusive":
            runs_needed = _runs_needed(
                np.log(b / a),
                ratio=ratio,
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
    factors: tuple[ImpactFactors, ImpactFactors] | None = None
    missing: str | None = None
    try:
        factors = paired_impact_factors(a, b, k=IMPACT_REPS, rng=rng)
    except ValueError as e:
        missing = str(e)

    def summary(x: np.ndarray[Any, np.dtype[np.float64]], side: int) -> SideSummary:
        f = factors[side] if factors is not None else None
        return SideSummary(
            median_ns=float(np.median(x)),
            mean_ns=float(np.mean(x)),
            impact_plain=f.plain if f is not None else None,
            impact_transformed=f.transformed if f is not None else None,
            impact_missing=missing,
        )

    return replace(
        empty,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        verdict=the_verdict,
        runs_used=len(ok),
        iterations=int(a.shape[1]),
        winsorized=winsorized,
        baseline=summary(a, 0),
        candidate=summary(b, 1),
        runs_needed=runs_needed,
        note="; ".join(notes) or None,
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
    from stats.planning import runs_needed

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


def analyze_document(doc: ResultsDocument, settings: AnalysisSettings) -> ResultsDocument:
    """A copy of ``doc`` with every benchmark's ``analysis`` recomputed from raw samples."""
    out = doc
    for b in doc.benchmarks:
        out = out.with_benchmark(replace(b, analysis=analyze_benchmark(b, settings).to_dict()))
    return out


def verdicts_of(doc: ResultsDocument) -> list[Verdict | None]:
    out: list[Verdict | None] = []
    for b in doc.benchmarks:
        a: Mapping[str, Any] = b.analysis or {}
        v = a.get("verdict")
        out.append(v if v in VERDICTS else None)
    return out
