"""Pure statistics for duet benchmarking: numpy arrays in, numbers out.

``stats`` never imports ``duet``: thresholds and verdict words live on the ``duet`` side; these
functions return numbers (ratios, intervals, impact factors, variance components), never opinions.
Only numpy is imported here; scipy and the optional arch are imported inside the functions that
need them, so that ``import stats`` stays fast.

Modules: :mod:`stats.ratio` (duet ratio and bootstrap interval), :mod:`stats.winsor` (outlier
winsorization), :mod:`stats.sequential` (shuffled and sequential baselines, gains),
:mod:`stats.impact` (impact factor of the random initial state), :mod:`stats.planning` (variance
components, interval half-width, optimal iterations, runs needed), :mod:`stats.asymmetry` (does
the core a side sits on matter), :mod:`stats.warmup` (where an iteration series stops trending).
The array and method aliases (:data:`FloatArray`, :data:`IntArray`, :data:`ArrayLike`,
:data:`IntervalMethod`) are public here for callers' annotations.
"""

from stats._typing import ArrayLike, FloatArray, IntArray, IntervalMethod
from stats.asymmetry import Asymmetry, side_asymmetry
from stats.impact import ImpactFactors, impact_factor, impact_factors, paired_impact_factors
from stats.planning import (
    T_QUANTILE_BELOW,
    VarianceComponents,
    ci_half_width,
    optimal_iterations,
    runs_needed,
    variance_components,
)
from stats.ratio import (
    MIN_BOOTSTRAP_RUNS,
    Interval,
    RatioEstimate,
    bootstrap_ci,
    duet_ratio,
    grand_geomean,
    iteration_ratios,
    run_geomeans,
)
from stats.sequential import (
    SequentialEstimate,
    ShuffledEstimate,
    accuracy_gain,
    sequential_ci,
    shuffled_ratio,
    sync_gain,
)
from stats.warmup import Warmup, detect_warmup
from stats.winsor import DEFAULT_FRACTION, MIN_ITERATIONS, winsorize_run, winsorize_runs

__all__ = [
    "DEFAULT_FRACTION",
    "MIN_BOOTSTRAP_RUNS",
    "MIN_ITERATIONS",
    "T_QUANTILE_BELOW",
    "ArrayLike",
    "Asymmetry",
    "FloatArray",
    "ImpactFactors",
    "IntArray",
    "Interval",
    "IntervalMethod",
    "RatioEstimate",
    "SequentialEstimate",
    "ShuffledEstimate",
    "VarianceComponents",
    "Warmup",
    "accuracy_gain",
    "bootstrap_ci",
    "ci_half_width",
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
    "sync_gain",
    "variance_components",
    "winsorize_run",
    "winsorize_runs",
]
