"""The calibration as a sequence of named steps (:func:`calibrate`), and the choice of the
metric: wall time, CPU time or wall time less run-queue delay (:func:`calibrate_metrics`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from duet_bench import units
from duet_bench.analysis import AnalysisSettings, rng_for
from duet_bench.calibrate import decide, steps
from duet_bench.calibrate.data import AAData, aa_data, has_metric
from duet_bench.calibrate.model import Calibration
from duet_bench.calibrate.until_decided import (
    UntilDecidedAdvice,
    per_run_sd,
    until_decided_advice,
)
from duet_bench.metrics import (
    METRIC_NAMES,
    MetricName,
    auto_rival,
    instead_of,
    names,
    not_cpu_bound,
)
from duet_bench.results import BenchmarkRecord

__all__ = ["calibrate", "calibrate_metrics"]


def calibrate(
    data: AAData,
    settings: AnalysisSettings = AnalysisSettings(),  # noqa: B008 (frozen: safe to share)
    *,
    sequential: AAData | None = None,
    method: decide.MethodChoice | None = None,
) -> Calibration:
    """Calibrate from an A/A duet (and optionally a sequential A/A of the same benchmark).

    ``data`` is the A/A duet (the same version on both sides, the sides alternating between
    the cores; with crossover at every iteration, its ``assignment``). ``settings`` are those of
    ``duet analyze``; the threshold is the change the recommendation must detect
    (``settings.metric`` is not read: ``data`` is of one metric already). ``sequential`` is the
    same A/A measured with the sequential method, for the accuracy gain. ``method`` is the
    method to plan for when decided elsewhere (the comparison of the designs); by default the
    accuracy gain, else the sync gain, decides.

    Raises
    ------
    ValueError
        If ``data`` was not measured with the duet method, or the threshold is 0.
    """
    if data.method != "duet":
        raise ValueError("the calibration's main measurement must use the duet method")
    if not settings.threshold > 0:
        raise ValueError(
            f"a calibration needs a threshold above 0 (the change to detect), got "
            f"{settings.threshold}"
        )
    rng = rng_for(data.name, settings.seed)
    # Warm-up first: everything else is computed on the steady part of each run.
    steady = steps.steady_part(data, settings.threshold)
    interval = steps.aa_interval(data.name, steady, settings, rng)
    shuffled_width, gain = steps.sync_gain(steady, interval, settings, rng)
    impact, impact_warnings = steps.impact(steady, rng)
    comps, side_comps = steps.components(steady, winsorize=settings.winsorize)
    times = steps.timing(data, steady.skip)
    asym, asym_warnings = steps.side_asymmetry(
        interval.estimate.run_ratios, data.baseline_cpus, settings, rng
    )
    contrast, contrast_warnings = steps.core_contrast(steady, settings, rng)
    skew, skew_warnings = steps.start_skew(data, steady.skip, times.mean_iteration_ns)
    seq = (
        decide.sequential(sequential, steady.warmup, interval, settings, rng)
        if sequential is not None
        else None
    )
    comparison = seq.comparison if seq is not None else None
    if method is None:
        method = decide.choose_method(comparison, gain, interval.width, steady.runs)
    plan = decide.plan(method.pays, (comps, side_comps, times), seq, steady.warmup, settings)
    est = interval.estimate
    stopping = _until_decided(est.run_ratios, plan, steady.iterations, settings)
    return Calibration(
        benchmark=data.name,
        runs=steady.runs,
        iterations=steady.iterations,
        warmup_measured=data.warmup,
        analysed_from=steady.skip,
        failed_runs=data.failed_runs,
        confidence=settings.confidence,
        threshold=settings.threshold,
        ratio=est.ratio,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        ci_width=interval.width,
        contains_one=interval.contains_one,
        aa_verdict=interval.verdict,
        winsorized=est.winsorized,
        shuffled_width=shuffled_width,
        sync_gain=gain,
        impact_factor=impact,
        components=comps,
        side_components=side_comps,
        plan_components=plan.components,
        mean_iteration_ns=times.mean_iteration_ns,
        startup_ns=times.startup_ns,
        startup_iterations=times.startup_iterations,
        warmup=steady.warmup,
        side_asymmetry=asym,
        core_contrast=contrast,
        start_skew_ns=skew,
        sequential=comparison,
        method_pays=method.pays,
        method_reason=method.reason,
        recommended=plan.recommended,
        width_by_runs=plan.width_by_runs,
        until_decided=stopping,
        warnings=(
            *steady.warnings,
            *interval.warnings,
            *impact_warnings,
            *asym_warnings,
            *contrast_warnings,
            *skew_warnings,
            *plan.warnings,
            *decide.data_warnings(data, interval, steady.runs),
        ),
    )


def _until_decided(
    run_ratios: Any, plan: decide.Plan, iterations: int, settings: AnalysisSettings
) -> UntilDecidedAdvice | None:
    """min_runs and max_runs of measuring until decided, at the recommended iterations when
    the plan has variance components, else at the A/A's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_run_ratios = np.log(np.asarray(run_ratios, dtype=float))
    comps, rec = plan.components, plan.recommended
    found = per_run_sd(
        log_run_ratios,
        run_effect_var=comps.run_effect_var if comps is not None and rec is not None else None,
        within_run_var=comps.within_run_var if comps is not None and rec is not None else None,
        iterations=rec.iterations if comps is not None and rec is not None else None,
    )
    if found is None:
        return None
    sd, source = found
    return until_decided_advice(
        sd,
        iterations=rec.iterations if source == "components" and rec is not None else iterations,
        threshold=settings.threshold,
        confidence=settings.confidence,
        source=source,
        seed=settings.seed,
    )


def _deciding_width(cal: Calibration) -> float | None:
    """The A/A width of the method a calibration recommends (what a user would get)."""
    if cal.method_pays == "sequential" and cal.sequential is not None:
        return cal.sequential.relative_width
    return cal.ci_width


def _choose_metric(
    calibrations: Mapping[MetricName, Calibration],
    busy_share: Mapping[str, float],
    forced: MetricName | None,
) -> tuple[MetricName, str]:
    """The metric whose recommended method gives the narrowest A/A interval among those that
    fit the code, or the one asked for; and why.

    The rule of ``metric = "auto"`` (:func:`duet_bench.metrics.auto_rival`, shared with the
    analysis): for CPU-bound sides, CPU time against wall time (CPU time wins a tie); otherwise
    wall time less run-queue delay against wall time (it keeps sleeping and I/O, and replaces
    wall time only when strictly narrower). The registry says which
    metric stands in for one that was not recorded, and which the rival is measured against
    (:func:`duet_bench.metrics.instead_of`).
    """

    def calibrated(name: MetricName) -> bool:
        return name in calibrations

    if forced is not None:
        if forced in calibrations:
            return forced, f"{METRIC_NAMES[forced]}, as asked (--metric {forced})"
        instead = instead_of(forced, calibrated)
        return instead, (
            f"{METRIC_NAMES[instead]}: {METRIC_NAMES[forced]} was asked for but not recorded"
        )
    idle = not_cpu_bound(busy_share)
    rival = auto_rival(busy_share, calibrated)
    cpu_fits = rival == "cpu"
    base = instead_of(rival, calibrated)
    candidates = [m for m in (base, rival) if m in calibrations]
    widths = {m: _deciding_width(calibrations[m]) for m in candidates}
    # At most one rival to wall time: CPU time wins a tie, wall-runq must be narrower.
    best = base
    if len(candidates) == 2:
        w, w_base = widths[rival], widths[base]
        if w is not None and (w_base is None or w < w_base or (rival == "cpu" and w == w_base)):
            best = rival

    def width(m: MetricName) -> str:
        return f"{steps.pct(widths[m] or 0)} with {calibrations[m].method_pays}"

    beaten = " and ".join(f"{METRIC_NAMES[m]}'s ({width(m)})" for m in candidates if m != best)
    own = f"its A/A interval ({width(best)} wide) is narrower than {beaten}"
    name = METRIC_NAMES[best]
    if best == "cpu":
        return "cpu", f"CPU time: both sides CPU-bound, and {own}"
    if cpu_fits:
        return best, f"{name}: {own} on this machine"
    if "cpu" not in calibrations:
        why = "no per-iteration CPU time was recorded"
    elif idle:
        why = (
            "the benchmark is not CPU-bound (the "
            + " and ".join(f"{side} {units.share(busy_share[side])}" for side in idle)
            + " of the iteration on a CPU or waiting for one), so CPU time would miss sleeping "
            "and I/O"
        )
    else:
        why = "whether the sides are CPU-bound is unknown"
    return best, f"{name}: {why}" + (f"; {own}" if beaten else "")


def calibrate_metrics(
    record: BenchmarkRecord,
    sequential: BenchmarkRecord | None = None,
    settings: AnalysisSettings = AnalysisSettings(),  # noqa: B008 (frozen: safe to share)
    *,
    busy_share: Mapping[str, float] | None = None,
    method: decide.MethodChoice | None = None,
) -> Calibration:
    """Calibrate on every metric recorded (wall time, CPU time, wall time less run-queue
    delay), and keep the one that measures better here.

    CPU time is a candidate only when both sides are CPU-bound (``busy_share``: per side, the
    median share of an iteration on a CPU or in its run queue, as
    :func:`duet_bench.analysis.analyze_benchmark` computes it; the rule of ``metric = "auto"``):
    for code that sleeps or waits, CPU time would not see what wall time sees, and wall time
    less run-queue delay is the candidate instead. The narrower A/A interval of the method
    each recommends wins against wall time. Every width is
    kept in ``widths_by_metric``. ``method`` plans every metric for that method (as
    :func:`calibrate`). ``settings.metric`` other than ``auto`` forces a metric
    (wall time when the one asked for was not recorded).

    Raises
    ------
    ValueError
        As :func:`aa_data` and :func:`calibrate` do.
    """
    calibrations: dict[MetricName, Calibration] = {}
    for metric in names():
        if not has_metric(record, metric):
            continue
        seq = (
            aa_data(sequential, metric)
            if sequential is not None and has_metric(sequential, metric)
            else None
        )
        calibrations[metric] = calibrate(
            aa_data(record, metric), settings, sequential=seq, method=method
        )
    forced = None if settings.metric == "auto" else settings.metric
    chosen, reason = _choose_metric(calibrations, busy_share or {}, forced)
    wall, best = calibrations["wall"], calibrations[chosen]
    warnings = best.warnings
    if chosen == "cpu" and wall.contains_one is False and best.contains_one is not False:
        warnings = (
            *warnings,
            f"wall time's A/A interval excludes 1 ([{wall.ci_low:.4g}, {wall.ci_high:.4g}]) "
            "while CPU time's does not: something delays one side more than the other "
            "(another process, a slower core); CPU time removes the waiting, not its effect "
            "on caches",
        )
    rec = best.recommended
    return replace(
        best,
        metric=chosen,
        metric_reason=reason,
        widths_by_metric={
            m: {
                "duet": c.ci_width,
                "sequential": c.sequential.relative_width if c.sequential is not None else None,
            }
            for m, c in calibrations.items()
        },
        recommended=replace(rec, metric=chosen) if rec is not None else None,
        warnings=warnings,
    )
