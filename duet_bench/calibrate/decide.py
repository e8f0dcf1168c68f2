"""The deciding steps of :func:`duet_bench.calibrate.calibrate`: the comparison with a sequential
A/A, which method pays on this machine, and the plan (runs, iterations, warm-up) with the widths it
buys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duet_bench.analysis import AnalysisSettings
from duet_bench.calibrate.data import AAData
from duet_bench.calibrate.experiment import (
    EXTRAPOLATION,
    EXTRAPOLATION_FLOOR,
    MAX_ITERATIONS,
    RUNS_GRID,
    Components,
    Method,
    Recommendation,
    components_of,
    recommend,
    summed,
    width_for_runs,
)
from duet_bench.calibrate.model import SequentialComparison
from duet_bench.calibrate.steps import AAInterval, Timing, Warnings, pct, skipped, timing
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS
from duet_stats.sequential import accuracy_gain, sequential_ci
from duet_stats.warmup import Warmup

__all__ = ["MethodChoice", "Plan", "Sequential", "choose_method", "plan", "sequential"]


@dataclass(frozen=True, slots=True)
class Sequential:
    """The sequential A/A: its interval next to duet's (None with too few runs), its
    variance components and the timing of its runs, for a sequential plan."""

    comparison: SequentialComparison | None
    components: Components | None
    timing: Timing


def sequential(
    data: AAData,
    warmup: Warmup,
    interval: AAInterval,
    settings: AnalysisSettings,
    rng: np.random.Generator,
) -> Sequential:
    """Analyse the sequential A/A of the same benchmark from the duet's warm-up on, and its
    accuracy gain: the sequential relative width over duet's ([duet] RQ1)."""
    skip = skipped(data, warmup)
    sa, sb = data.baseline_ns[:, skip:], data.candidate_ns[:, skip:]
    comparison: SequentialComparison | None = None
    if sa.shape[0] >= MIN_BOOTSTRAP_RUNS:
        est = sequential_ci(
            sa, sb, confidence=settings.confidence, reps=max(1000, settings.reps // 5),
            winsorize=settings.winsorize, rng=rng,
        )  # fmt: skip
        gain = None
        if interval.width is not None:
            gain = accuracy_gain(
                sequential_relative_width=est.relative_width,
                duet_width=interval.gain_width or interval.width,
            )
        comparison = SequentialComparison(
            relative_width=est.relative_width,
            ratio=est.ratio,
            ci_low=est.ratio_ci_low,
            ci_high=est.ratio_ci_high,
            accuracy_gain=gain,
            runs=int(sa.shape[0]),
            iterations=int(sa.shape[1]),
        )
    comps = summed(components_of(np.log(sa)), components_of(np.log(sb)))
    return Sequential(comparison, comps, timing(data, skip))


@dataclass(frozen=True, slots=True)
class MethodChoice:
    """Which method gives the narrower interval here, and why, in a sentence."""

    pays: Method
    reason: str


def choose_method(
    comparison: SequentialComparison | None, gain: float | None, width: float | None, runs: int
) -> MethodChoice:
    """The accuracy gain decides when the sequential method was measured (it is the direct
    comparison), else the sync gain (shuffled pairing is what sequential runs get)."""
    pays: Method = "duet"
    if comparison is not None and comparison.accuracy_gain is not None:
        if comparison.accuracy_gain < 1:
            pays = "sequential"
            reason = (
                f"the accuracy gain is {comparison.accuracy_gain:.3g}x: on this machine "
                "simultaneous runs measure worse than sequential ones (the sequential interval "
                f"is {pct(comparison.relative_width)} wide, duet's {pct(width or 0)}); use "
                "--method sequential"
            )
        else:
            reason = (
                f"the accuracy gain is {comparison.accuracy_gain:.3g}x: duet's interval is that "
                "many times narrower than the sequential method's on this machine"
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
    measured = comparison is not None and comparison.accuracy_gain is not None
    deciding = comparison.accuracy_gain if comparison is not None and measured else gain
    near_one = deciding is not None and deciding < 1.25
    if (pays == "sequential" or near_one) and runs < 30:
        reason += f" (gains near 1 are noisy at {runs} runs: confirm with a second calibration)"
    return MethodChoice(pays, reason)


@dataclass(frozen=True, slots=True)
class Plan:
    """The components the recommendation used, the recommendation, and the width formula 5
    predicts at its iterations for each of
    :data:`~duet_bench.calibrate.experiment.RUNS_GRID` runs."""

    components: Components | None
    recommended: Recommendation | None
    width_by_runs: dict[int, float]
    warnings: Warnings


def plan(
    method: Method,
    duet: tuple[Components | None, Components | None, Timing],
    seq: Sequential | None,
    warmup: Warmup,
    settings: AnalysisSettings,
) -> Plan:
    """Recommend runs, iterations and warm-up for ``method``.

    ``duet`` is the duet's ``(components of the log ratios, summed per-side components,
    timing)``. A sequential plan uses the sequential A/A's components and timing when one was
    measured, else each side's own run-to-run and iteration noise as if measured alone (in a
    duet it also holds the other side's interference, so this is an upper bound).
    """
    comps, side_comps, times = duet
    if method == "sequential":
        if seq is not None and seq.components is not None:
            comps = seq.components
            times = Timing(
                seq.timing.mean_iteration_ns or times.mean_iteration_ns,
                seq.timing.startup_ns,
                seq.timing.startup_iterations,
            )
        else:
            comps = side_comps
    if comps is None:
        return Plan(None, None, {}, ())
    rec = recommend(
        comps,
        threshold=settings.threshold,
        confidence=settings.confidence,
        method=method,
        warmup=warmup.iterations,
        startup_iterations=times.startup_iterations,
        startup_ns=times.startup_ns,
        iteration_ns=times.mean_iteration_ns,
        max_iterations=min(
            MAX_ITERATIONS, max(EXTRAPOLATION * comps.iterations, EXTRAPOLATION_FLOOR)
        ),
    )
    warnings: Warnings = ()
    if not rec.reachable:
        warnings = (
            f"a {pct(settings.threshold)} threshold is out of reach on this machine with a "
            "practical number of runs; raise --threshold or reduce the noise",
        )
    widths = width_for_runs(
        comps, iterations=rec.iterations, runs=RUNS_GRID, confidence=settings.confidence
    )
    return Plan(comps, rec, widths, warnings)


def data_warnings(data: AAData, interval: AAInterval, runs: int) -> Warnings:
    """What the data itself says about the benchmark: failed runs, frequent outliers."""
    out: list[str] = []
    if data.failed_runs:
        out.append(
            f"{data.failed_runs} run(s) failed and were left out: a calibration of a flaky "
            "benchmark describes the runs that worked"
        )
    winsorized = interval.estimate.winsorized
    if winsorized > max(1, runs // 2):
        out.append(
            f"winsorization replaced an outlier in {winsorized} of {runs} runs: single "
            "iterations are hit hard by something (preemption, interrupts)"
        )
    return tuple(out)
