"""Does the core matter? The side asymmetry of :mod:`duet_stats.asymmetry` with the CPU numbers
the runs sat on: the one record of it, for a benchmark's own runs here and for an A/A run in
:mod:`duet_bench.calibrate`, and the note a benchmark's analysis adds when it matters. When the
sides changed CPUs inside the runs (crossover), the core difference comes from inside the runs
instead (:class:`CoreDifference`, :func:`duet_stats.crossover.core_contrast`), and it is named
only when it stands out of the noise between iterations under the same CPU assignment. Where an
iteration is a process, that noise is the variation between processes, and when it is what
widens the interval, :func:`process_note` says so in plain words."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from duet_bench import units
from duet_bench.analysis.series import Crossover
from duet_bench.results import RunRecord
from duet_stats import FloatArray
from duet_stats.asymmetry import Asymmetry, side_asymmetry
from duet_stats.crossover import CoreContrast, centre_assignments, core_contrast
from duet_stats.intervals import f_survival
from duet_stats.planning import VarianceComponents, variance_components

#: The share of the run ratios' variance that the variation between iterations (processes)
#: must make up for :func:`process_note` to say that it dominates.
PROCESS_SHARE = 0.5


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


@dataclass(frozen=True, slots=True)
class CoreDifference:
    """:func:`duet_stats.crossover.core_contrast` with the CPU numbers: in crossover runs, half
    the difference of a run's mean log ratios with the baseline on ``cpu_a`` and on ``cpu_b`` is
    the log of ``contrast.ratio = T(cpu_b)/T(cpu_a)``, measured inside the runs, minutes apart
    at most, whatever the true ratio.

    Attributes
    ----------
    cpu_a, cpu_b : int
        The CPU pair, ``cpu_a < cpu_b``.
    contrast : duet_stats.crossover.CoreContrast
        The ratio, its bootstrap interval over runs and the runs it came from.
    """

    cpu_a: int
    cpu_b: int
    contrast: CoreContrast

    def figures(self) -> dict[str, Any]:
        """What a benchmark's ``analysis.side_asymmetry`` stores for crossover runs: the CPUs,
        the ratio and its interval as for the between-run estimate, ``estimate: "within-run"``
        and the runs it came from (in place of ``runs_a``/``runs_b``)."""
        c = self.contrast
        return {
            "cpu_a": self.cpu_a,
            "cpu_b": self.cpu_b,
            "ratio": c.ratio,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "estimate": "within-run",
            "runs": c.runs,
        }


def crossover_difference(
    crossover: Crossover,
    log_ratios: FloatArray,
    *,
    winsorize: bool,
    confidence: float,
    reps: int,
    rng: np.random.Generator,
) -> CoreDifference | None:
    """The core difference from inside crossover runs (``log_ratios`` of shape ``(runs,
    iterations)``), None unless some run ran under both CPU assignments."""
    if not crossover.within_runs:
        return None
    est = core_contrast(
        log_ratios,
        crossover.assignment,
        confidence=confidence,
        reps=reps,
        winsorize="centred" if winsorize else "off",
        rng=rng,
    )
    return None if est is None else CoreDifference(crossover.cpu_a, crossover.cpu_b, est)


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


def _crossover_note(difference: CoreDifference, *, threshold: float) -> str | None:
    # ``significant`` asks both the bootstrap over runs and the test against the noise within
    # each assignment (duet_stats.crossover.CoreContrast.beyond_noise).
    c = difference.contrast
    if not c.significant or abs(math.log(c.ratio)) < math.log1p(threshold) / 2:
        return None
    cpu_a, cpu_b = difference.cpu_a, difference.cpu_b
    slower, faster = (cpu_b, cpu_a) if c.ratio > 1 else (cpu_a, cpu_b)
    size = units.change(max(c.ratio, 1 / c.ratio)).lstrip("+")
    return (
        f"the cores differ: the same code runs {size} slower on CPU {slower} than on CPU "
        f"{faster} (within {c.runs} runs). The sides changed CPUs at every iteration, so it "
        "cancels in each run's ratio; `duet doctor` and an A/A `duet calibrate` tell what makes "
        "the cores unequal"
    )


def asymmetry_note(
    asymmetry: SideAsymmetry | CoreDifference | None,
    ok: Sequence[RunRecord],
    log_ratios: FloatArray,
    *,
    threshold: float,
) -> str | None:
    """A note when the asymmetry matters: significant and at least half the threshold. Between
    runs, the balanced alternation cancels it in the ratio, but the interval widens and a
    reader of the per-run plot sees two groups; with crossover it cancels inside each run, and
    the note names its size (the machine, not the code, differs)."""
    if asymmetry is None:
        return None
    if isinstance(asymmetry, CoreDifference):
        return _crossover_note(asymmetry, threshold=threshold)
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


def _process_spread(times: tuple[FloatArray, FloatArray], assignment: FloatArray | None) -> float:
    """How many times slower the slowest process ran than the fastest on the same CPU in one
    run: per run, side and CPU assignment the largest over the smallest time, the median over
    these groups (one disturbed run does not set it)."""
    spreads: list[float] = []
    for side in times:
        for r, row in enumerate(side):
            groups = [row] if assignment is None else [row[assignment[r] == k] for k in (0, 1)]
            spreads.extend(float(g.max() / g.min()) for g in groups if g.size >= 2)
    return float(np.median(spreads)) if spreads else 1.0


def _runs_stand_out(c: VarianceComponents, confidence: float) -> bool:
    """Whether the run means differ by more than the iterations' noise explains: the F test of
    ``n S_A^2 / S_X^2`` with ``(k - 1, k (n - 1))`` degrees of freedom at ``1 - confidence``."""
    if c.within_run_var <= 0.0:
        return True
    f = c.iterations * c.between_run_var / c.within_run_var
    return f_survival(f, c.runs - 1, c.runs * (c.iterations - 1)) < 1.0 - confidence


class Estimate(Protocol):
    """What :func:`process_note` reads of the deciding metric's estimate: a
    :class:`duet_bench.analysis.model.MetricEstimate` (the model imports this module for its
    records, so this one names the fields it reads instead of importing it)."""

    @property
    def ci_low(self) -> float | None: ...

    @property
    def ci_high(self) -> float | None: ...

    @property
    def log_ratios(self) -> FloatArray: ...

    @property
    def assignment(self) -> FloatArray | None: ...


def process_note(
    kind: str | None,
    times: tuple[FloatArray, FloatArray],
    chosen: Estimate,
    *,
    threshold: float,
    confidence: float,
) -> str | None:
    """Where every iteration is a new process (``kind == "command"``), a note in plain words when
    the variation between processes is what widens the interval.

    It dominates when the within-run variance over the iterations, ``S_X^2 / n``, makes up at
    least :data:`PROCESS_SHARE` of the variance of the run ratios, or when the runs do not
    differ by more than it explains (an F test at ``1 - confidence``; with 5 runs the share
    alone is a noisy estimate), both from the log ratios with the core difference taken out
    (:func:`duet_stats.crossover.centre_assignments`). The note is given only when the interval
    is wider than the threshold, where narrowing it matters. More iterations per run then
    narrow the interval as ``1 / sqrt(n)``, and ``duet calibrate`` plans how many (Kalibera et
    al., formula 8)."""
    lo, hi = chosen.ci_low, chosen.ci_high
    x = chosen.log_ratios
    if kind != "command" or lo is None or hi is None or hi / lo - 1.0 <= threshold:
        return None
    if x.shape[0] < 2 or x.shape[1] < 2:
        return None
    if chosen.assignment is not None:
        x = centre_assignments(x, chosen.assignment)
    c = variance_components(x)
    if c.between_run_var <= 0.0:
        return None
    share = c.within_run_var / c.iterations / c.between_run_var
    if share < PROCESS_SHARE and _runs_stand_out(c, confidence):
        return None
    spread = _process_spread(times, chosen.assignment)
    return (
        f"this benchmark's time changes up to {units.sig(spread)}x from one process to the next "
        "on the same CPU (every iteration is a new process), and that, not a difference between "
        "the cores, is what widens the interval: more iterations per run narrow it, and "
        "`duet calibrate` plans how many"
    )
