"""The A/A calibrator (``docs/statistics.md``, method 4-6): what this machine can detect, and how to
spend a CI budget on it.

An A/A duet runs the *same* version on both sides, swapping the sides' cores across runs. From
it this package computes (the figures without measuring anything themselves; the measuring of
``duet calibrate`` is :mod:`~duet_bench.calibrate.aa` and :mod:`~duet_bench.calibrate.interleave`):

- the A/A ratio and its interval (which must contain 1), and its width: the accuracy figure;
- the sync gain: the width when runs are paired with *other* runs' data (no shared noise)
  divided by the duet width, i.e. what running the two sides together buys here;
- Kalibera's impact factor, plain and on run-mean-centred data, per side and on the log ratios,
  and whether the additive model under which the planning formulas hold fits;
- variance components of the log ratios, the optimal iterations per run (Kalibera formula 8,
  with the measured start-up cost as ``w``) and the runs needed to decide at a threshold;
- the warm-up, from where the iteration series stops trending;
- the side asymmetry (is one core faster?) with its interval, and the barrier's start skew;
- with a sequential A/A of the same benchmark, the accuracy gain of duet over it;
- which method pays on this machine, and a recommendation ``{method, runs, iterations,
  warmup}`` with the machine time it costs.

:func:`calibrate` takes :class:`AAData` (arrays; :func:`aa_data` builds it from a results
document's :class:`~duet_bench.results.BenchmarkRecord`) and the analysis settings, and returns a
frozen :class:`Calibration`; :func:`calibrate_metrics` runs it on wall and CPU time and keeps the
metric that measures better. :func:`recommend` is the planning step on its own. The choices
made where the method (``docs/statistics.md``) is silent are listed in ``docs/calibration.md``.

The package, one job per module, in the order a calibration runs:

- :mod:`~duet_bench.calibrate.data`: the input, :class:`AAData`, from a results record;
- :mod:`~duet_bench.calibrate.steps`: the measuring steps (warm-up, A/A interval, sync gain, impact
  factor, variance components, timing of a run, side asymmetry, start skew);
- :mod:`~duet_bench.calibrate.decide`: the deciding steps (sequential comparison, which method pays,
  the plan);
- :mod:`~duet_bench.calibrate.experiment`: the planning of the A/A experiment, variance components
  and the recommendation (formulas 5, 8);
- :mod:`~duet_bench.calibrate.model`: the records of the result, :class:`Calibration`;
- :mod:`~duet_bench.calibrate.calibration`: :func:`calibrate`, the steps in sequence, and
  :func:`calibrate_metrics`.
- :mod:`~duet_bench.calibrate.interleave`: the designs of ``--compare-designs`` measured
  interleaved, and the calibration of the one the comparison recommends;
- :mod:`~duet_bench.calibrate.aa`: ``duet calibrate``'s A/A: its spec, measuring it, its
  calibration, and writing the recommendation into the configuration.

The numerics live in ``duet_stats``: warm-up detection in :mod:`duet_stats.warmup`, the side
asymmetry and its two-group bootstrap in :mod:`duet_stats.asymmetry`, the rest in
:mod:`duet_stats.ratio`, :mod:`duet_stats.sequential`, :mod:`duet_stats.impact` and
:mod:`duet_stats.planning`.

References
----------
.. [KBT] T. Kalibera, L. Bulej, P. Tůma, "Benchmark Precision and Random Initial State",
   SPECTS 2005: impact factor (Figure 2), additive model and formulas 3-5, 8.
.. [duet] L. Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud",
   ICPE 2020: A/A experiments, shuffled pairing (RQ2), accuracy gain (RQ1).
.. [MSER] K. P. White, "An effective truncation heuristic for bias reduction in simulation
   output", Simulation 69(6), 1997; K. Hoad, S. Robinson, R. Davies, "Automating warm-up
   length estimation", JORS 61, 2010 (MSER for warm-up detection).
"""

from duet_bench.calibrate.calibration import calibrate, calibrate_metrics
from duet_bench.calibrate.data import AAData, aa_data, has_metric
from duet_bench.calibrate.experiment import (
    EXTRAPOLATION,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    MIN_RUNS,
    RUNS_GRID,
    Components,
    Recommendation,
    components_of,
    recommend,
    width_for_runs,
)
from duet_bench.calibrate.model import (
    Calibration,
    ImpactEntry,
    SequentialComparison,
    SideAsymmetry,
    StartSkew,
)
from duet_bench.calibrate.steps import ADDITIVE_LIMIT
from duet_stats.warmup import Warmup, detect_warmup

__all__ = [
    "ADDITIVE_LIMIT",
    "EXTRAPOLATION",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "MIN_RUNS",
    "RUNS_GRID",
    "AAData",
    "Calibration",
    "Components",
    "ImpactEntry",
    "Recommendation",
    "SequentialComparison",
    "SideAsymmetry",
    "StartSkew",
    "Warmup",
    "aa_data",
    "calibrate",
    "calibrate_metrics",
    "components_of",
    "detect_warmup",
    "has_metric",
    "recommend",
    "width_for_runs",
]
