"""The estimation per metric: one metric's ratio, interval and verdict through
:func:`duet_stats.ratio.duet_ratio`, each side's descriptive figures, the impact factors of the
metric that decides, and the notes on what the estimate could not do."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from duet_bench.analysis.model import AnalysisSettings, MetricEstimate, SideSummary
from duet_bench.analysis.series import Matrix, Series
from duet_bench.analysis.verdict import verdict
from duet_bench.metrics import MetricName, names
from duet_stats.crossover import centre_assignments, crossover_runs
from duet_stats.impact import ImpactFactors, paired_impact_factors
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS, duet_ratio
from duet_stats.winsor import MIN_ITERATIONS

#: Kalibera's impact factor needs c = floor(0.75 m) >= 2 runs and more iterations than c.
IMPACT_REPS = 10_000


def rng_for(name: str, seed: int) -> np.random.Generator:
    """A generator per benchmark: independent streams, the same numbers on every re-analysis."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def run_log_ratios(a: Matrix, b: Matrix, assignment: Matrix | None = None) -> list[float]:
    """Each run's log ratio of ``b`` over ``a`` as the analysis weighs it, untrimmed: the mean
    of its iterations' log ratios, or with the CPU ``assignment`` of every iteration (crossover)
    the two assignments weighed equally (:func:`duet_stats.crossover.crossover_runs`). What the
    progress line and the per-run plot show, so that neither carries a core difference the
    estimate does not."""

    log_ratios = np.log(b / a)
    if assignment is None:
        return [float(x) for x in np.mean(log_ratios, axis=1)]
    runs = crossover_runs(log_ratios, assignment, winsorize="off")
    return [float(x) for x in runs.log_run_ratios]


def estimate_metrics(
    series: Series, *, name: str, settings: AnalysisSettings
) -> tuple[dict[str, MetricEstimate], dict[str, str]]:
    """Every metric the runs recorded, estimated; and for the others, why they are missing."""
    estimates: dict[str, MetricEstimate] = {}
    missing: dict[str, str] = {}
    for metric in names():
        data = series.of(metric)
        if data is not None:
            estimates[metric] = estimate(
                metric, *data, name=name, settings=settings, assignment=series.assignment
            )
        else:
            missing[metric] = series.why_missing(metric) or "not recorded"
    return estimates, missing


def estimate(
    metric: MetricName,
    a: Matrix,
    b: Matrix,
    *,
    name: str,
    settings: AnalysisSettings,
    assignment: Matrix | None = None,
) -> MetricEstimate:
    """The duet ratio of ``b`` over ``a``; with a single run the point estimate only. With the
    CPU ``assignment`` of every iteration (crossover), each run weighs the two assignments
    equally (:func:`duet_stats.crossover.crossover_runs`)."""
    log_ratios = np.log(b / a)
    if a.shape[0] < 2:
        # One run has no interval and is not winsorized (as duet_ratio would not be asked).
        ratio = float(np.exp(run_log_ratios(a, b, assignment)[0]))
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
            assignment=assignment,
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
        baseline=summary(a),
        candidate=summary(b),
        log_ratios=log_ratios,
        assignment=assignment,
    )


def summary(x: Matrix) -> SideSummary:
    """Geometric mean, median and mean of one side's iterations."""
    return SideSummary(
        geomean_ns=float(np.exp(np.mean(np.log(x)))),
        median_ns=float(np.median(x)),
        mean_ns=float(np.mean(x)),
    )


def with_impact_factors(
    chosen: MetricEstimate, a: Matrix, b: Matrix, *, name: str, seed: int
) -> tuple[SideSummary, SideSummary]:
    """The deciding metric's side summaries with Kalibera's impact factors of ``a`` and ``b``
    (or why there are none), both sides from one set of draws (half the cost; see
    :func:`duet_stats.impact.paired_impact_factors`).

    With crossover each side's times swing between the two CPUs inside a run; that swing is
    taken out first (:func:`duet_stats.crossover.centre_assignments`), or it would count as
    iteration-to-iteration noise and pull the impact factor toward 1 for a reason that has
    nothing to do with the random initial state of a run."""
    if chosen.assignment is not None:
        a = centre_assignments(a, chosen.assignment)
        b = centre_assignments(b, chosen.assignment)
    factors: tuple[ImpactFactors, ImpactFactors] | None = None
    impact_missing: str | None = None
    try:
        factors = paired_impact_factors(a, b, k=IMPACT_REPS, rng=rng_for(name, seed))
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

    return with_impact(chosen.baseline, 0), with_impact(chosen.candidate, 1)


def interval_note(chosen: MetricEstimate, runs: int) -> str | None:
    """Why there is no interval (and so no verdict), if there is none."""
    if runs < 2:
        return "only 1 successful run: point estimate only, no interval and no verdict"
    if chosen.ci_low is None:
        return (
            f"only {runs} successful runs (< {MIN_BOOTSTRAP_RUNS}): a bootstrap "
            "interval would be meaningless; point estimate only, no verdict"
        )
    return None


def winsor_note(settings: AnalysisSettings, *, runs: int, iterations: int) -> str | None:
    """Say that winsorization was asked for but skipped: runs shorter than
    :data:`duet_stats.winsor.MIN_ITERATIONS` are left alone (``winsorized: 0`` is then no
    finding about outliers). A single run is never winsorized (no interval either)."""
    if not settings.winsorize or runs < 2 or iterations >= MIN_ITERATIONS:
        return None
    # In the reader's words (issue 31): what was done with outliers, and why.
    return (
        f"outliers left in: runs of {iterations} iterations are too short to tell an outlier "
        f"from the spread (that takes {MIN_ITERATIONS} or more)"
    )
