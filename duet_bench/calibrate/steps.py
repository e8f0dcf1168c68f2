"""The measuring steps of :func:`duet_bench.calibrate.calibrate`, in the order it runs them: the
steady part after the warm-up, the A/A interval, the sync gain, the impact factor, the variance
components, the timing of a run, the side asymmetry and the start skew.

Each step takes what it needs and returns its figures with the warnings they call for; the
random generator is passed along in a fixed order (interval, shuffled pairing, impact factor,
side asymmetry), so that a calibration of the same data and seed gives the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from duet_bench import units
from duet_bench.analysis import AnalysisSettings, rng_for, verdict
from duet_bench.calibrate.data import AAData
from duet_bench.calibrate.experiment import MIN_RUNS, Components, components_of, summed
from duet_bench.calibrate.model import ImpactEntry, SideAsymmetry, StartSkew
from duet_stats import FloatArray, RatioEstimate
from duet_stats.crossover import CoreContrast, centre_assignments
from duet_stats.crossover import core_contrast as contrast_of
from duet_stats.impact import impact_factors
from duet_stats.ratio import MIN_BOOTSTRAP_RUNS, duet_ratio
from duet_stats.sequential import shuffled_ratio
from duet_stats.sequential import sync_gain as gain_of
from duet_stats.warmup import Warmup, detect_warmup
from duet_stats.winsor import winsorize_runs

__all__ = [
    "ADDITIVE_LIMIT",
    "AAInterval",
    "Steady",
    "Timing",
    "aa_interval",
    "components",
    "core_contrast",
    "impact",
    "pct",
    "planning_log_ratios",
    "side_asymmetry",
    "start_skew",
    "steady_part",
    "sync_gain",
    "timing",
]

#: The additive model "fits" when the impact factor of the run-mean-centred data is at most
#: this. [KBT] section 5.2 asks for "tends to 1"; 1.2 leaves room for the sampling noise of a
#: median of 10,000 SD ratios over a few dozen runs (a centred run of n samples has SD
#: sqrt(1 - 1/n) of the uncentred one, which moves the value by a few percent on its own).
ADDITIVE_LIMIT = 1.2
#: Iterations that must remain after the detected warm-up is removed from the analysis.
KEEP_AT_LEAST = 3
#: The series is "flat" when a warm-up deviation is below this fraction of the decision band.
WARMUP_TOLERANCE_OF_BAND = 0.25
_IMPACT_REPS = 10_000

Warnings = tuple[str, ...]


def pct(x: float) -> str:
    return f"{x * 100:.3g}%"


# --------------------------------------------------------------------------------------------
# Warm-up and the steady part


@dataclass(frozen=True, slots=True)
class Steady:
    """The measured iterations left after the detected warm-up: what later steps work on.

    ``skip`` measured iterations are left out of every run (the detected warm-up beyond the
    recorded one, keeping at least :data:`KEEP_AT_LEAST`).
    """

    warmup: Warmup
    skip: int
    baseline_ns: FloatArray
    candidate_ns: FloatArray
    log_ratios: FloatArray
    warnings: Warnings
    #: The CPU assignment of every kept iteration (crossover at every iteration), or None.
    assignment: FloatArray | None = None

    @property
    def runs(self) -> int:
        return int(self.baseline_ns.shape[0])

    @property
    def iterations(self) -> int:
        return int(self.baseline_ns.shape[1])


def full_series(data: AAData) -> FloatArray:
    """Every run of both sides from its first iteration, recorded warm-up included."""
    return np.vstack(
        [
            np.hstack([data.baseline_warmup_ns, data.baseline_ns]),
            np.hstack([data.candidate_warmup_ns, data.candidate_ns]),
        ]
    )


def skipped(data: AAData, warmup: Warmup) -> int:
    """Measured iterations to leave out of every run of ``data`` for ``warmup``."""
    return min(max(0, warmup.iterations - data.warmup), max(0, data.iterations - KEEP_AT_LEAST))


def steady_part(data: AAData, threshold: float) -> Steady:
    """Detect the warm-up (tolerance: a quarter of the decision band) and cut it off."""
    band = math.log1p(threshold)
    warm = detect_warmup(full_series(data), tolerance=band * WARMUP_TOLERANCE_OF_BAND)
    skip = skipped(data, warm)
    warnings: Warnings = ()
    if warm.trending:
        warnings = (
            "the iteration times were still trending in the middle of the runs: the warm-up is "
            "longer than the runs measured; calibrate again with more --iterations",
        )
    a = data.baseline_ns[:, skip:]
    b = data.candidate_ns[:, skip:]
    assignment = data.assignment[:, skip:] if data.assignment is not None else None
    return Steady(warm, skip, a, b, np.log(b) - np.log(a), warnings, assignment)


def planning_log_ratios(steady: Steady) -> FloatArray:
    """The log ratios for planning and the impact factor: with crossover, each run's two CPU
    assignments centred on its balanced mean (:func:`duet_stats.crossover.centre_assignments`),
    so that the +-D swing the design cancels does not count as iteration noise."""
    if steady.assignment is None:
        return steady.log_ratios

    return centre_assignments(steady.log_ratios, steady.assignment)


# --------------------------------------------------------------------------------------------
# The A/A interval and what synchronisation buys


@dataclass(frozen=True, slots=True)
class AAInterval:
    """The A/A ratio and its interval.

    ``gain_width`` is the width of a percentile interval of the same data: the gains compare
    it with the sequential and shuffled intervals, which are percentile bootstraps (the
    expanded default widens only duet's).
    """

    estimate: RatioEstimate
    gain_width: float | None
    contains_one: bool | None
    verdict: str | None
    warnings: Warnings

    @property
    def width(self) -> float | None:
        return self.estimate.width


def aa_interval(
    name: str, steady: Steady, settings: AnalysisSettings, rng: np.random.Generator
) -> AAInterval:
    """The A/A duet ratio with the analysis' interval, and whether it contains 1."""
    a, b = steady.baseline_ns, steady.candidate_ns
    est = duet_ratio(
        a, b, confidence=settings.confidence, reps=settings.reps, method=settings.interval,
        winsorize=settings.winsorize, assignment=steady.assignment, rng=rng,
    )  # fmt: skip
    gain_width = est.width
    if settings.interval != "percentile" and est.width is not None:
        gain_width = duet_ratio(
            a, b, confidence=settings.confidence, reps=settings.reps, method="percentile",
            winsorize=settings.winsorize, assignment=steady.assignment,
            rng=rng_for(name + "/gains", settings.seed),
        ).width  # fmt: skip
    contains_one: bool | None = None
    aa_verdict: str | None = None
    if est.ci_low is not None and est.ci_high is not None:
        contains_one = est.ci_low <= 1.0 <= est.ci_high
        aa_verdict = verdict(
            ratio=est.ratio, ci_low=est.ci_low, ci_high=est.ci_high, threshold=settings.threshold
        )
    warnings: list[str] = []
    runs = steady.runs
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
    return AAInterval(est, gain_width, contains_one, aa_verdict, tuple(warnings))


def sync_gain(
    steady: Steady, interval: AAInterval, settings: AnalysisSettings, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """``(shuffled width, sync gain)``: the width with each run paired with another run's
    data, and its ratio to the duet width ([duet] RQ2); None with too few runs."""
    if steady.runs < MIN_BOOTSTRAP_RUNS or interval.width is None:
        return None, None
    sh = shuffled_ratio(
        steady.baseline_ns, steady.candidate_ns, confidence=settings.confidence,
        reps=max(1000, settings.reps // 5), winsorize=settings.winsorize, rng=rng,
    )  # fmt: skip
    duet_width = interval.gain_width or interval.width
    return sh.width, gain_of(shuffled_width=sh.width, duet_width=duet_width)


# --------------------------------------------------------------------------------------------
# Impact factor and variance components


def _impact(series: FloatArray, rng: np.random.Generator) -> ImpactEntry:
    """The impact factor of ``series``, on a random subset of runs when there are too many.

    [KBT] draws ``c = floor(0.75 m)`` distinct samples from one run, so it needs more
    iterations per run than ``c``: 40 runs of 30 iterations would not do. Rather than report
    nothing, it is then computed on the largest random subset of runs that fits (the impact
    factor compares spreads, which a subset estimates without bias).
    """
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


def impact(steady: Steady, rng: np.random.Generator) -> tuple[Mapping[str, ImpactEntry], Warnings]:
    """Kalibera's impact factor of each side and of the log ratios, and whether the additive
    model (under which the planning formulas hold) fits the log ratios."""
    entries = {
        "baseline": _impact(steady.baseline_ns, rng),
        "candidate": _impact(steady.candidate_ns, rng),
        "log_ratio": _impact(planning_log_ratios(steady), rng),
    }
    ratio = entries["log_ratio"]
    if ratio.additive is not False:
        return entries, ()
    return entries, (
        "the additive model does not fit the log ratios (transformed impact factor "
        f"{ratio.transformed:.3g} > {ADDITIVE_LIMIT}): runs differ by more "
        "than a constant shift, so the planned runs and iterations are approximate",
    )


def components(steady: Steady, *, winsorize: bool) -> tuple[Components | None, Components | None]:
    """Variance components of the log ratios (winsorized as the interval was), and of the two
    sides' log times summed (each side as if measured alone)."""
    if winsorize:
        log_for_plan, _ = winsorize_runs(planning_log_ratios(steady))
    else:
        log_for_plan = planning_log_ratios(steady)
    sides = summed(
        components_of(np.log(steady.baseline_ns)), components_of(np.log(steady.candidate_ns))
    )
    return components_of(log_for_plan), sides


# --------------------------------------------------------------------------------------------
# The timing of a run


@dataclass(frozen=True, slots=True)
class Timing:
    """The wall time of an iteration, and a run's start-up cost in ns and in iterations."""

    mean_iteration_ns: float
    startup_ns: float | None
    startup_iterations: float | None


#: A sample shorter than this share of the time between iteration starts is not the iteration's
#: wall time but a figure inside it (a suite adapter's time per operation): the iteration's cost
#: is then that time between starts. An iteration whose sample is its wall time takes nearly all
#: of it (the barrier wait and the sample's writing are microseconds).
PERIOD_SHARE = 0.5


def timing(data: AAData, skip: int) -> Timing:
    """Mean wall time of one iteration (both sides together for duet: an iteration ends when
    the slower side reaches the barrier; one side for sequential), and the start-up cost: a
    run's wall time minus every iteration.

    When the samples are a figure inside the iteration (Google Benchmark's, go's or
    criterion's time per operation, where an iteration is a process running the tool), the
    iteration's cost is the time between iteration starts (``data.iteration_period_ns``):
    measured by the samples, a run's start-up would come out as thousands of "iterations" and
    formula 8 would ask for the most iterations allowed whatever the noise."""
    a, b = data.baseline_ns[:, skip:], data.candidate_ns[:, skip:]
    if data.method == "duet":
        iteration_ns = float(np.maximum(a, b).mean())
    else:
        iteration_ns = float((a.mean() + b.mean()) / 2.0)
    period = data.iteration_period_ns
    if period is not None and iteration_ns < PERIOD_SHARE * period:
        iteration_ns = period
        if data.wall_ns is None:
            return Timing(iteration_ns, None, None)
        total = data.baseline_ns.shape[1] + data.baseline_warmup_ns.shape[1]
        startup = float(np.median(np.clip(data.wall_ns - total * period, 0.0, None)))
        return Timing(iteration_ns, startup, startup / iteration_ns)
    if data.wall_ns is None or iteration_ns <= 0:
        return Timing(iteration_ns, None, None)
    spent = np.stack(
        [
            data.baseline_ns.sum(axis=1) + data.baseline_warmup_ns.sum(axis=1),
            data.candidate_ns.sum(axis=1) + data.candidate_warmup_ns.sum(axis=1),
        ],
        axis=1,
    )
    # Clipped at 0: a clock step or a rounding in the worker must not make start-up negative.
    startup = float(np.median(np.clip(data.wall_ns - spent, 0.0, None)))
    return Timing(iteration_ns, startup, startup / iteration_ns)


# --------------------------------------------------------------------------------------------
# The machine: side asymmetry and start skew


def side_asymmetry(
    run_ratios: FloatArray,
    cpus: Sequence[int | None],
    settings: AnalysisSettings,
    rng: np.random.Generator,
) -> tuple[SideAsymmetry | None, Warnings]:
    """:meth:`SideAsymmetry.of_runs` on the A/A's run ratios, and a warning when the core
    matters."""
    asym = SideAsymmetry.of_runs(
        np.log(run_ratios), cpus, confidence=settings.confidence, reps=settings.reps, rng=rng
    )
    if asym is None or not asym.estimate.significant:
        return asym, ()
    est, cpu_a, cpu_b = asym.estimate, asym.cpu_a, asym.cpu_b
    slower, faster = (cpu_b, cpu_a) if est.ratio > 1 else (cpu_a, cpu_b)
    r = est.ratio if est.ratio > 1 else 1 / est.ratio
    return asym, (
        f"CPU {slower} is {pct(r - 1)} slower than CPU {faster}: with fixed sides every "
        "ratio would be biased by that much; duet's balanced alternation cancels it"
        + (
            f", but this plan was unbalanced (residual bias {pct(est.residual_bias - 1)})"
            if est.runs_a != est.runs_b
            else ""
        ),
    )


def core_contrast(
    steady: Steady, settings: AnalysisSettings, rng: np.random.Generator
) -> tuple[CoreContrast | None, Warnings]:
    """With crossover at every iteration, the core difference from inside the runs
    (:func:`duet_stats.crossover.core_contrast`, docs/statistics.md, method 1b), and a warning when
    the cores differ; None for the per-run design (the side asymmetry says it there)."""
    if steady.assignment is None:
        return None, ()
    contrast = contrast_of(
        steady.log_ratios, steady.assignment, confidence=settings.confidence,
        reps=max(1000, settings.reps // 5), rng=rng,
    )  # fmt: skip
    if contrast is None or not contrast.significant:
        return contrast, ()
    r = contrast.ratio
    return contrast, (
        f"the same code runs {pct(abs(r - 1))} {'slower' if r > 1 else 'faster'} on the second "
        "CPU of the pair than on the first (the within-run contrast): crossing over at every "
        "iteration cancels it inside each run",
    )


def start_skew(
    data: AAData, skip: int, mean_iteration_ns: float
) -> tuple[StartSkew | None, Warnings]:
    """How far apart the sides start an iteration after the barrier, and a warning when the
    99th percentile exceeds 1% of an iteration."""
    skew = data.start_skew_ns[:, skip:] if data.start_skew_ns is not None else None
    if skew is None or skew.size == 0:
        return None, ()
    magnitude = np.abs(skew).ravel()
    p99 = float(np.quantile(magnitude, 0.99))
    out = StartSkew(
        median=float(np.median(magnitude)),
        p99=p99,
        max=float(magnitude.max()),
        count=int(magnitude.size),
        relative_p99=p99 / mean_iteration_ns if mean_iteration_ns > 0 else math.inf,
    )
    if not out.relative_p99 > 0.01:
        return out, ()
    return out, (
        f"the sides' start skew reaches {units.duration(out.p99)} at the 99th percentile, "
        f"{pct(out.relative_p99)} of an iteration: iterations this short are not well "
        "synchronised (the noise the ratio should cancel is not shared); make each "
        "iteration longer (more work per iteration) if you can",
    )
