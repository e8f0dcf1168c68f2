"""Does the core matter? The side asymmetry of :mod:`duet_stats.asymmetry` with the CPU numbers
the runs sat on: the one record of it, for a benchmark's own runs here and for an A/A run in
:mod:`duet_bench.calibrate`, and the note a benchmark's analysis adds when it matters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from duet_bench import units
from duet_bench.results import RunRecord
from duet_stats import FloatArray
from duet_stats.asymmetry import Asymmetry


@dataclass(frozen=True, slots=True)
class SideAsymmetry:
    """:func:`duet_stats.asymmetry.side_asymmetry` with the CPU numbers.

    In an A/A run with the baseline on CPU a, the run's ratio is ``T(b)/T(a)``; with the sides
    swapped it is ``T(a)/T(b)``. Half the difference of the two groups' mean log ratios is the
    log of ``estimate.ratio = T(b)/T(a)``: how much slower the same code runs on ``cpu_b``.

    Attributes
    ----------
    cpu_a, cpu_b : int
        The two CPUs the baseline sat on, ``cpu_a < cpu_b``.
    estimate : duet_stats.asymmetry.Asymmetry
        The ratio ``T(cpu_b)/T(cpu_a)``, its stratified bootstrap interval, the runs in each
        group, the share of the run-to-run variance it explains and the residual bias it
        leaves with this side assignment.
    """

    cpu_a: int
    cpu_b: int
    estimate: Asymmetry

    @classmethod
    def of_runs(
        cls,
        log_run_ratios: FloatArray,
        cpus: Sequence[int | None],
        *,
        confidence: float,
        reps: int,
        rng: np.random.Generator,
    ) -> SideAsymmetry | None:
        """Estimate it from the runs' log ratios and, per run, the CPU the baseline sat on;
        None unless the baseline sat on exactly two CPUs, all of them known, both used."""
        from duet_stats.asymmetry import side_asymmetry

        known = sorted({c for c in cpus if c is not None})
        if len(known) != 2 or any(c is None for c in cpus):
            return None
        cpu_a, cpu_b = known
        est = side_asymmetry(
            log_run_ratios, [c == cpu_a for c in cpus], confidence=confidence, reps=reps, rng=rng
        )
        return None if est is None else cls(cpu_a=cpu_a, cpu_b=cpu_b, estimate=est)

    def figures(self) -> dict[str, Any]:
        """The CPUs, the ratio, its interval and the runs per group: what a benchmark's
        ``analysis.side_asymmetry`` stores in ``results.json``."""
        e = self.estimate
        return {
            "cpu_a": self.cpu_a,
            "cpu_b": self.cpu_b,
            "ratio": e.ratio,
            "ci_low": e.ci_low,
            "ci_high": e.ci_high,
            "runs_a": e.runs_a,
            "runs_b": e.runs_b,
        }

    def to_dict(self) -> dict[str, Any]:
        """:meth:`figures` and what a calibration adds: significance, the share of the run
        variance and the residual bias."""
        e = self.estimate
        return {
            **self.figures(),
            "significant": e.significant,
            "share_of_run_variance": e.share_of_run_variance,
            "residual_bias": e.residual_bias,
        }


def _baseline_cpus(ok: Sequence[RunRecord]) -> list[int | None]:
    """Per run, the CPU the baseline sat on (None when not recorded)."""
    return [r.baseline.cores[0] if r.baseline.cores else None for r in ok]


def benchmark_asymmetry(
    ok: Sequence[RunRecord],
    log_ratios: FloatArray,
    *,
    confidence: float,
    reps: int,
    rng: np.random.Generator,
) -> SideAsymmetry | None:
    """The asymmetry in one benchmark's analysed runs (``log_ratios`` of shape ``(runs,
    iterations)``), None with fewer than 4 runs or unless the baseline sat on two known CPUs."""
    if len(ok) < 4:
        return None
    return SideAsymmetry.of_runs(
        log_ratios.mean(axis=1), _baseline_cpus(ok), confidence=confidence, reps=reps, rng=rng
    )


def asymmetry_note(
    asymmetry: SideAsymmetry | None,
    ok: Sequence[RunRecord],
    log_ratios: FloatArray,
    *,
    threshold: float,
) -> str | None:
    """A note when the asymmetry matters: significant and at least half the threshold (the
    balanced alternation cancels it in the ratio, but the interval widens and a reader of the
    per-run plot sees two groups)."""
    if asymmetry is None:
        return None
    est, cpu_a, cpu_b = asymmetry.estimate, asymmetry.cpu_a, asymmetry.cpu_b
    if not est.significant or abs(math.log(est.ratio)) < math.log1p(threshold) / 2:
        return None
    g = np.exp(log_ratios.mean(axis=1))
    on_a = np.array([c == cpu_a for c in _baseline_cpus(ok)])

    def spread(group: FloatArray) -> str:
        low, high = units.ratio(float(group.min())), units.ratio(float(group.max()))
        return low if low == high else f"{low}-{high}"

    slower, faster = (cpu_b, cpu_a) if est.ratio > 1 else (cpu_a, cpu_b)
    return (
        f"the cores differ: runs with the baseline on CPU {cpu_a} gave {spread(g[on_a])}, on "
        f"CPU {cpu_b} {spread(g[~on_a])}; the same code runs "
        f"{units.change(max(est.ratio, 1 / est.ratio))} on CPU {slower} against CPU {faster}. "
        "Alternating the sides cancels it in the ratio but widens the interval; "
        "`duet doctor` and an A/A `duet calibrate` tell what makes the cores unequal"
    )
