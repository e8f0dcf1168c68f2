"""From raw samples to a verdict: the ``duet_bench`` side of the statistics.

``duet_stats`` computes numbers; this package decides what they mean (docs/statistics.md, method 2):
the verdict words, the practical-significance threshold, which metric decides, how many runs would
decide an inconclusive benchmark, and which runs are analysed (the successful ones).

One module per concern, in the order :func:`analyze_benchmark` takes them:

- :mod:`~duet_bench.analysis.model`: the settings and the result records (``results.json``).
- :mod:`~duet_bench.analysis.series`: per-iteration figures out of the run records, per metric,
  and the CPU assignment of every iteration when the sides changed CPUs (crossover).
- :mod:`~duet_bench.analysis.estimate`: one metric's ratio, interval and verdict via
  ``duet_stats``; side summaries and impact factors.
- :mod:`~duet_bench.analysis.interference`: how busy the sides were, run-queue delay.
- :mod:`~duet_bench.analysis.choice`: which metric decides; contradicting verdicts.
- :mod:`~duet_bench.analysis.sides`: does the core matter (the side asymmetry between runs, or
  the core difference from inside crossover runs).
- :mod:`~duet_bench.analysis.runs_needed`: the runs that would decide an inconclusive one.
- :mod:`~duet_bench.analysis.verdict`: the verdict words and ``--fail-on``.
- :mod:`~duet_bench.analysis.benchmark`: :func:`analyze_benchmark`, the steps in sequence.
- :mod:`~duet_bench.analysis.document`: a whole results document, its verdicts, the running
  estimate of a benchmark being measured.
"""

from __future__ import annotations

from duet_bench.analysis.benchmark import analyze_benchmark
from duet_bench.analysis.choice import choose_metric, disagreement
from duet_bench.analysis.document import (
    analyze_document,
    running_estimate,
    verdicts_of,
)
from duet_bench.analysis.estimate import IMPACT_REPS, rng_for
from duet_bench.analysis.interference import Interference
from duet_bench.analysis.model import (
    AnalysisSettings,
    BenchmarkAnalysis,
    MetricEstimate,
    SideSummary,
    recorded_metric,
)
from duet_bench.analysis.runs_needed import PRACTICAL_RUNS
from duet_bench.analysis.sides import SideAsymmetry
from duet_bench.analysis.verdict import VERDICTS, Verdict, fails, verdict

__all__ = [
    "IMPACT_REPS",
    "PRACTICAL_RUNS",
    "VERDICTS",
    "AnalysisSettings",
    "BenchmarkAnalysis",
    "Interference",
    "MetricEstimate",
    "SideAsymmetry",
    "SideSummary",
    "Verdict",
    "analyze_benchmark",
    "analyze_document",
    "choose_metric",
    "disagreement",
    "fails",
    "recorded_metric",
    "rng_for",
    "running_estimate",
    "verdict",
    "verdicts_of",
]
