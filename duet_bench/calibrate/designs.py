"""Which design measures best here: crossover at every iteration, the per-run swap, or the
sequential method (issue 21; docs/statistics.md, method 1b and 6).

``duet calibrate --compare-designs`` measures the same A/A with each design, interleaved so that
they see the same machine minutes. :func:`design_figures` turns one design's A/A into the figures
a calibration reports for it (the A/A interval width, impact factor, runs needed, the core
difference), and :func:`choose_design` (pure: figures in, choice out) recommends the design with
the narrowest interval **at equal machine time**.

Equal machine time: at a fixed number of iterations the interval width falls as one over the
square root of the runs, and a design whose run costs ``c`` times as much gets ``1/c`` times as
many runs in the same time, so its width is multiplied by ``sqrt(c)``. The two duet designs run
the same work at the same time (the move between the CPUs is done inside the barrier wait), so
they cost the same; the sequential method runs the sides one after the other, and its cost is
its measured wall time per run over the duet designs' (:data:`NOMINAL_COST`, 2, when a run's
wall time was not recorded).

All widths are of percentile bootstrap intervals, the interval the sequential method has, so
that the three are compared on one footing (as the accuracy gain is).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from duet_bench.analysis import AnalysisSettings, rng_for
from duet_bench.calibrate import steps
from duet_bench.calibrate.data import AAData
from duet_bench.calibrate.experiment import (
    EXTRAPOLATION,
    EXTRAPOLATION_FLOOR,
    MAX_ITERATIONS,
    Method,
    components_of,
    recommend,
    summed,
)
from duet_bench.calibrate.model import Design, DesignChoice, DesignComparison, DesignFigures
from duet_bench.calibrate.steps import pct
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS, duet_ratio
from duet_stats.sequential import sequential_ci

__all__ = [
    "CLOSE",
    "DESIGNS",
    "DESIGN_NAMES",
    "NOMINAL_COST",
    "Design",
    "DesignChoice",
    "DesignComparison",
    "DesignFigures",
    "choose_design",
    "design_figures",
    "equal_time_widths",
]

#: The designs, in the order that breaks a tie (the default first).
DESIGNS: tuple[Design, ...] = ("iteration", "run", "sequential")

DESIGN_NAMES: Mapping[Design, str] = {
    "iteration": "crossover at every iteration",
    "run": "sides swapped between runs",
    "sequential": "sequential",
}

#: The cost of a run relative to a duet run when the wall times were not recorded.
NOMINAL_COST: Mapping[Design, float] = {"iteration": 1.0, "run": 1.0, "sequential": 2.0}

#: A winner less than this factor narrower than the runner-up is "close": with fewer than 30
#: runs such a difference is within the noise of the widths (the prototype of docs/accuracy.md saw
#: widths at 10 runs move by a factor of 3 between replicates).
CLOSE = 1.25


def _median_run_ns(data: AAData) -> float | None:
    if data.wall_ns is None:
        return None
    per_run = data.wall_ns.sum(axis=1) if data.method == "sequential" else data.wall_ns.max(axis=1)
    return float(np.median(per_run))


def design_figures(design: Design, data: AAData, settings: AnalysisSettings) -> DesignFigures:
    """The figures of one design's A/A (``data`` measured with that design).

    Raises
    ------
    ValueError
        If ``data`` was measured with another method than the design's.
    """
    want: Method = "sequential" if design == "sequential" else "duet"
    if data.method != want:
        raise ValueError(f"the {design} design needs an A/A measured with the {want} method")
    rng = rng_for(f"{data.name}/design/{design}", settings.seed)
    steady = steps.steady_part(data, settings.threshold)
    a, b = steady.baseline_ns, steady.candidate_ns
    width: float | None
    core: tuple[float, float | None, float | None] | None = None
    if design == "sequential":
        est = sequential_ci(
            a, b, confidence=settings.confidence, reps=max(1000, settings.reps // 5),
            winsorize=settings.winsorize, rng=rng,
        )  # fmt: skip
        ratio = est.ratio
        width = est.relative_width if steady.runs >= MIN_BOOTSTRAP_RUNS else None
        comps = summed(components_of(np.log(a)), components_of(np.log(b)))
        impact = steps.impact(steady, rng)[0]["baseline"]
    else:
        d = duet_ratio(
            a, b, confidence=settings.confidence, reps=settings.reps, method="percentile",
            winsorize=settings.winsorize, assignment=steady.assignment, rng=rng,
        )  # fmt: skip
        ratio, width = d.ratio, d.width
        comps = steps.components(steady, winsorize=settings.winsorize)[0]
        impact = steps.impact(steady, rng)[0]["log_ratio"]
        contrast = steps.core_contrast(steady, settings, rng)[0]
        if contrast is not None:
            core = (contrast.ratio, contrast.ci_low, contrast.ci_high)
        else:
            asym = steps.side_asymmetry(d.run_ratios, data.baseline_cpus, settings, rng)[0]
            if asym is not None:
                e = asym.estimate
                core = (e.ratio, e.ci_low, e.ci_high)
    times = steps.timing(data, steady.skip)
    rec = (
        recommend(
            comps,
            threshold=settings.threshold,
            confidence=settings.confidence,
            method=want,
            warmup=steady.warmup.iterations,
            startup_iterations=times.startup_iterations,
            # The bounds of the calibration's own plan (decide.plan), so the figures agree.
            max_iterations=min(
                MAX_ITERATIONS, max(EXTRAPOLATION * comps.iterations, EXTRAPOLATION_FLOOR)
            ),
        )
        if comps is not None
        else None
    )
    return DesignFigures(
        design=design,
        runs=steady.runs,
        iterations=steady.iterations,
        ratio=ratio,
        width=width,
        run_ns=_median_run_ns(data),
        impact_factor=impact.plain,
        runs_needed=rec.runs if rec is not None else None,
        iterations_needed=rec.iterations if rec is not None else None,
        core_ratio=core[0] if core else None,
        core_ci_low=core[1] if core else None,
        core_ci_high=core[2] if core else None,
    )


def _costs(figures: Sequence[DesignFigures]) -> dict[Design, float]:
    """Each design's cost of a run relative to a duet run (see the module's docstring)."""
    duet_ns = [f.run_ns for f in figures if f.design != "sequential" and f.run_ns]
    costs: dict[Design, float] = {}
    for f in figures:
        if f.design != "sequential":
            costs[f.design] = 1.0
        elif f.run_ns and duet_ns:
            costs[f.design] = f.run_ns / float(np.mean(duet_ns))
        else:
            costs[f.design] = NOMINAL_COST[f.design]
    return costs


def equal_time_widths(
    figures: Sequence[DesignFigures],
) -> tuple[dict[Design, float], dict[Design, float]]:
    """``(widths at the machine time of a duet run, costs)``: each width times the square root
    of its design's cost; designs without a width are left out."""
    costs = _costs(figures)
    widths = {
        f.design: f.width * math.sqrt(costs[f.design])
        for f in figures
        if f.width is not None and math.isfinite(f.width)
    }
    return widths, costs


def choose_design(figures: Sequence[DesignFigures]) -> DesignChoice:
    """The design with the narrowest A/A interval at equal machine time; a tie goes to the
    earlier of :data:`DESIGNS` (crossover at every iteration first).

    Raises
    ------
    ValueError
        If a design appears twice.
    """
    designs = [f.design for f in figures]
    if len(set(designs)) != len(designs):
        raise ValueError(f"each design once, got {designs}")
    widths, costs = equal_time_widths(figures)
    if not widths:
        return DesignChoice(
            "iteration",
            widths,
            costs,
            "no design has an interval (too few runs): crossover at every iteration is the "
            "default; calibrate with --runs 20 or more",
        )
    ranked = sorted(widths, key=lambda d: (widths[d], DESIGNS.index(d)))
    best = ranked[0]
    listed = ", ".join(f"{DESIGN_NAMES[d]} {pct(widths[d])}" for d in ranked)
    cost = costs.get("sequential")
    norm = (
        f" (the sequential width times sqrt({cost:.3g}), its cost per run in machine time)"
        if cost is not None and "sequential" in widths
        else ""
    )
    reason = f"narrowest A/A interval at equal machine time: {listed}{norm}"
    if best == "sequential":
        duet = next((d for d in ranked if d != "sequential"), None)
        reason = (
            "running the two sides at the same time measures worse than running them one after "
            "the other on this machine, for this benchmark (typical when process start-up "
            "dominates the iterations: the two start-ups compete for caches, memory bandwidth "
            'and the kernel); use method = "sequential": at equal machine time its interval is '
            f"{pct(widths[best])} wide"
            + (f" against {pct(widths[duet])} for {DESIGN_NAMES[duet]}" if duet else "")
            + f". {reason}"
        )
    runs = min((f.runs for f in figures if f.design in widths), default=0)
    if len(ranked) > 1 and widths[ranked[1]] < CLOSE * widths[best] and runs < 30:
        reason += (
            f"; {DESIGN_NAMES[ranked[1]]} is within {CLOSE:g}x, which is noise at {runs} runs: "
            "confirm with a second calibration"
        )
    return DesignChoice(best, widths, costs, reason)
