"""How many runs would decide an inconclusive benchmark (docs/statistics.md, method 5), and the note
that says so, or that no practical number of runs would."""

from __future__ import annotations

import math

from duet_bench.analysis.model import AnalysisSettings, MetricEstimate
from duet_stats import FloatArray
from duet_stats.crossover import centre_assignments
from duet_stats.planning import runs_needed as planned_runs
from duet_stats.planning import variance_components

#: Above this, "N more runs would decide" is not advice anyone can follow.
PRACTICAL_RUNS = 1000


def runs_needed(log_ratios: FloatArray, *, ratio: float, settings: AnalysisSettings) -> int | None:
    """Runs that would shrink the interval enough to decide (docs/statistics.md, method 5).

    In log space the decision boundary is ``log(1 + t)``: to call a change, the half-width must
    be below the distance from ``log G`` to 1 (then ``lo > 1``); to call "no change" it must be
    below the distance from ``log G`` to the band edge. The nearer boundary that still decides
    is ``|log(1+t) - |log G||`` unless ``|log G| >= log(1+t)``, then ``|log G|``.
    """
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
            planned_runs(
                comps,
                iterations=int(log_ratios.shape[1]),
                half_width=target,
                confidence=settings.confidence,
            )
        )
    except ValueError:
        return None


def runs_needed_of(chosen: MetricEstimate, settings: AnalysisSettings) -> int | None:
    """:func:`runs_needed` for an inconclusive verdict of the deciding metric, else None.

    With crossover the log ratios go in with each run's two CPU assignments centred on the
    run's balanced log ratio (:func:`duet_stats.crossover.centre_assignments`): their run means
    are the run values the interval is computed from, and the within-run variance no longer
    holds the swing between the CPUs that the design cancels (it would ask for more runs than
    the estimator needs)."""
    if chosen.verdict != "inconclusive":
        return None
    log_ratios = chosen.log_ratios
    if chosen.assignment is not None:
        log_ratios = centre_assignments(log_ratios, chosen.assignment)
    return runs_needed(log_ratios, ratio=chosen.ratio, settings=settings)


def runs_needed_note(needed: int | None, *, runs_used: int, threshold: float) -> str | None:
    """``about N runs in all (M more) would decide``, or why no practical number would."""
    if needed is None:
        return None
    if needed <= PRACTICAL_RUNS:
        return (
            f"about {needed} runs in all ({max(needed - runs_used, 1)} more) "
            f"would decide at threshold {threshold:.3g}"
        )
    return (
        f"the ratio is too close to the threshold {threshold:.3g} to decide "
        f"with a practical number of runs (about {needed}); more iterations "
        "per run or a quieter machine would help more"
    )
