"""The bounds of measuring until decided for this machine (docs/statistics.md, method 2b): the
``min_runs`` and ``max_runs`` with which an unchanged benchmark is decided ``no change`` at the
threshold in all but :data:`UNDECIDED_SHARE` of measurements, from the per-run spread the A/A
measured.

The runs the rule needs are simulated, not taken from a formula: A/A sequences of independent
normal per-run log ratios with mean 0 and the A/A's per-run standard deviation, judged at every
look by the repeated intervals of :mod:`duet_stats.stopping` and the verdict of method 2, for
each candidate maximum in turn (the critical value grows with the maximum, so a larger maximum
is not free). The smallest candidate that leaves at most :data:`UNDECIDED_SHARE` undecided is
recommended. The spread is that of a run of the recommended iterations, from the variance
components the plan rests on (``var A + var X / n``, docs/statistics.md, method 5), or, without
them, the spread of the A/A's own per-run log ratios (:func:`per_run_sd`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from duet_bench.analysis.stopping import DEFAULT_MIN_RUNS, SHAPE
from duet_bench.units import sig
from duet_stats.stopping import stopping_bounds

__all__ = ["MAX_RUNS_CANDIDATES", "UNDECIDED_SHARE", "UntilDecidedAdvice", "until_decided_advice"]

#: The maxima tried, smallest first (the CLI's --max-runs default, 80, among them).
MAX_RUNS_CANDIDATES: Final = (10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100)
#: The share of A/A measurements allowed to end undecided at the maximum (the issue's target:
#: A/A inconclusive within the budget at most 5%).
UNDECIDED_SHARE: Final = 0.05
#: Simulated A/A sequences per candidate maximum: the undecided share to about +-0.3%.
SEQUENCES: Final = 4000


@dataclass(frozen=True, slots=True)
class UntilDecidedAdvice:
    """The recommended ``min_runs`` and ``max_runs`` and what the simulation found with them.

    ``per_run_sd`` is the standard deviation of one run's log ratio at ``iterations``
    iterations, from ``source`` (``components``: the plan's variance components; ``runs``: the
    A/A's per-run log ratios); ``median_runs`` and ``p95_runs`` the runs the rule took to
    decide an unchanged benchmark (among those decided); ``undecided`` the share still
    undecided at ``max_runs``; ``reachable`` False when even the largest candidate leaves more
    than :data:`UNDECIDED_SHARE` undecided (then ``max_runs`` is that largest candidate)."""

    min_runs: int
    max_runs: int
    per_run_sd: float
    iterations: int
    source: str
    median_runs: float | None
    p95_runs: float | None
    undecided: float
    reachable: bool
    sequences: int = SEQUENCES

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_runs": self.min_runs,
            "max_runs": self.max_runs,
            "per_run_sd": self.per_run_sd,
            "iterations": self.iterations,
            "source": self.source,
            "median_runs": self.median_runs,
            "p95_runs": self.p95_runs,
            "undecided": self.undecided,
            "reachable": self.reachable,
            "sequences": self.sequences,
            "shape": SHAPE,
        }

    def sentence(self) -> str:
        """The bounds for this machine (``--min-runs``, ``--max-runs``) and what the simulation
        of an unchanged benchmark found with them, for the calibration report."""
        took = (
            f"decided 'no change' after a median of {self.median_runs:g} runs "
            f"(95% within {self.p95_runs:g}), "
            if self.median_runs is not None and self.p95_runs is not None
            else ""
        )
        head = (
            f"Measuring until decided: min_runs = {self.min_runs}, max_runs = {self.max_runs} "
            f"(--min-runs {self.min_runs} --max-runs {self.max_runs}). "
        )
        spread = (
            f"{_pct(self.per_run_sd)} s.d. of a run's log ratio at {self.iterations} iterations, "
            + (
                "from the variance components"
                if self.source == "components"
                else "measured over this A/A's runs"
            )
        )
        why = (
            f"With this machine's per-run spread ({spread}) an unchanged benchmark is {took}"
            f"{_pct(self.undecided)} still undecided at {self.max_runs} runs ({self.sequences} "
            "simulated sequences)."
        )
        if not self.reachable:
            why += (
                f" More than {_pct(UNDECIDED_SHARE)} stay undecided even at {self.max_runs} "
                "runs: the threshold is too tight for this spread (more iterations per run, a "
                "quieter machine, or a larger threshold)."
            )
        else:
            why += (
                " With max_runs in the configuration (the lines below), duet run, compare and "
                "bisect measure until decided; --runs N on the command line keeps a fixed design."
            )
        return head + why


def _pct(x: float) -> str:
    return f"{sig(x * 100, 3)}%"


def _decided_at(
    x: np.ndarray[Any, Any], critical: tuple[float, ...], min_runs: int, threshold: float
) -> np.ndarray[Any, Any]:
    """The runs at the first decided look of every sequence (rows of ``x``), 0 when none."""
    band = math.log1p(threshold)
    n = np.arange(1, x.shape[1] + 1)
    sums = np.cumsum(x, axis=1)
    means = sums / n
    squares = np.cumsum(x * x, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (squares - n * means * means) / np.maximum(n - 1, 1)
    sd = np.sqrt(np.maximum(var, 0.0))
    first = np.zeros(x.shape[0], dtype=int)
    for i, c in enumerate(critical):
        runs = min_runs + i
        m, half = means[:, runs - 1], c * sd[:, runs - 1] / math.sqrt(runs)
        lo, hi = m - half, m + half
        # Method 2 on the log scale: regression, improvement, no change.
        decided = (
            ((lo > 0) & (m >= band)) | ((hi < 0) & (m <= -band)) | ((lo >= -band) & (hi <= band))
        )
        first = np.where((first == 0) & decided, runs, first)
    return first


def per_run_sd(
    log_run_ratios: np.ndarray[Any, Any],
    *,
    run_effect_var: float | None = None,
    within_run_var: float | None = None,
    iterations: int | None = None,
) -> tuple[float, str] | None:
    """The standard deviation of one run's log ratio and where it comes from: at
    ``iterations`` from the variance components when given, else the A/A's per-run log ratios
    (None with fewer than ``DEFAULT_MIN_RUNS`` finite ones)."""
    if run_effect_var is not None and within_run_var is not None and iterations:
        return math.sqrt(max(0.0, run_effect_var) + max(0.0, within_run_var) / iterations), (
            "components"
        )
    x = np.asarray(log_run_ratios, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < DEFAULT_MIN_RUNS:
        return None
    return float(np.std(x, ddof=1)), "runs"


def until_decided_advice(
    sd: float,
    *,
    iterations: int,
    threshold: float,
    confidence: float,
    source: str = "runs",
    seed: int = 0,
) -> UntilDecidedAdvice | None:
    """The bounds for this machine from the per-run spread ``sd`` (a standard deviation of
    per-run log ratios at ``iterations`` iterations); None without a usable spread."""
    if not math.isfinite(sd) or not sd >= 0 or not threshold > 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((SEQUENCES, MAX_RUNS_CANDIDATES[-1])) * sd
    min_runs = DEFAULT_MIN_RUNS
    first: np.ndarray[Any, Any] = np.zeros(SEQUENCES, dtype=int)
    max_runs = MAX_RUNS_CANDIDATES[-1]
    for max_runs in MAX_RUNS_CANDIDATES:
        bounds = stopping_bounds(
            min_runs=min_runs, max_runs=max_runs, confidence=confidence, shape=SHAPE
        )
        first = _decided_at(draws[:, :max_runs], bounds.critical, min_runs, threshold)
        if float(np.mean(first == 0)) <= UNDECIDED_SHARE:
            break
    undecided = float(np.mean(first == 0))
    decided = first[first > 0]
    return UntilDecidedAdvice(
        min_runs=min_runs,
        max_runs=max_runs,
        per_run_sd=sd,
        iterations=iterations,
        source=source,
        median_runs=float(np.median(decided)) if decided.size else None,
        p95_runs=float(np.percentile(decided, 95)) if decided.size else None,
        undecided=undecided,
        reachable=undecided <= UNDECIDED_SHARE,
    )
