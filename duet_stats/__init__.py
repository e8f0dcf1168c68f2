"""Pure statistics for duet benchmarking: numpy arrays in, numbers out.

``duet_stats`` never imports ``duet_bench``: thresholds and verdict words live on the ``duet_bench``
side; these functions return numbers (ratios, intervals, impact factors, variance components), never
opinions. Only numpy is imported here; scipy and the optional arch are imported inside the functions
that need them, so that ``import duet_stats`` stays fast.

Modules: :mod:`duet_stats.ratio` (the duet ratio), :mod:`duet_stats.intervals` (its bootstrap
interval, five methods), :mod:`duet_stats.winsor`
(outlier winsorization), :mod:`duet_stats.sequential` (shuffled and sequential baselines, gains),
:mod:`duet_stats.impact` (impact factor of the random initial state), :mod:`duet_stats.planning`
(variance components, interval half-width, optimal iterations, runs needed),
:mod:`duet_stats.asymmetry` (does the core a side sits on matter, from the runs),
:mod:`duet_stats.crossover` (the sides change CPUs at every iteration: run ratios that weigh the
two assignments equally, the core difference from inside the runs), :mod:`duet_stats.warmup` (where
an iteration series stops trending). The array and method aliases (:data:`FloatArray`,
:data:`IntArray`, :data:`ArrayLike`,
:data:`IntervalMethod`) are public here for callers' annotations.
"""

from duet_stats._typing import ArrayLike, FloatArray, IntArray, IntervalMethod
from duet_stats.asymmetry import Asymmetry, side_asymmetry
from duet_stats.crossover import (
    CoreContrast,
    CrossoverRuns,
    CrossoverWinsor,
    centre_assignments,
    core_contrast,
    crossover_runs,
)
from duet_stats.impact import ImpactFactors, impact_factor, impact_factors, paired_impact_factors
from duet_stats.planning import (
    T_QUANTILE_BELOW,
    VarianceComponents,
    ci_half_width,
    optimal_iterations,
    runs_needed,
    variance_components,
)
from duet_stats.ratio import (
    MIN_BOOTSTRAP_RUNS,
    Interval,
    RatioEstimate,
    bootstrap_ci,
    duet_ratio,
    grand_geomean,
    iteration_ratios,
    run_geomeans,
)
from duet_stats.sequential import (
    SequentialEstimate,
    ShuffledEstimate,
    accuracy_gain,
    sequential_ci,
    shuffled_ratio,
    sync_gain,
)
from duet_stats.stopping import (
    StoppingBounds,
    StoppingInterval,
    StoppingShape,
    stopping_bounds,
    stopping_intervals,
)
from duet_stats.warmup import Warmup, detect_warmup
from duet_stats.winsor import DEFAULT_FRACTION, MIN_ITERATIONS, winsorize_run, winsorize_runs

__all__ = [
    "DEFAULT_FRACTION",
    "MIN_BOOTSTRAP_RUNS",
    "MIN_ITERATIONS",
    "T_QUANTILE_BELOW",
    "ArrayLike",
    "Asymmetry",
    "CoreContrast",
    "CrossoverRuns",
    "CrossoverWinsor",
    "FloatArray",
    "ImpactFactors",
    "IntArray",
    "Interval",
    "IntervalMethod",
    "RatioEstimate",
    "SequentialEstimate",
    "ShuffledEstimate",
    "StoppingBounds",
    "StoppingInterval",
    "StoppingShape",
    "VarianceComponents",
    "Warmup",
    "accuracy_gain",
    "bootstrap_ci",
    "centre_assignments",
    "ci_half_width",
    "core_contrast",
    "crossover_runs",
    "detect_warmup",
    "duet_ratio",
    "grand_geomean",
    "impact_factor",
    "impact_factors",
    "iteration_ratios",
    "optimal_iterations",
    "paired_impact_factors",
    "run_geomeans",
    "runs_needed",
    "sequential_ci",
    "shuffled_ratio",
    "side_asymmetry",
    "stopping_bounds",
    "stopping_intervals",
    "sync_gain",
    "variance_components",
    "winsorize_run",
    "winsorize_runs",
]
