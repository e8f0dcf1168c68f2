"""The input of a calibration: one A/A measurement as arrays, taken from a results document.

:func:`aa_data` builds :class:`AAData` from a :class:`~duet_bench.results.BenchmarkRecord` (its
successful runs, cut to a common length, of one metric); everything after works on the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duet_bench.analysis.series import crossover_of, recorded_of
from duet_bench.calibrate.experiment import Method
from duet_bench.metrics import MetricName, get
from duet_bench.results import BenchmarkRecord
from duet_stats import FloatArray

__all__ = ["AAData", "aa_data", "has_metric"]


@dataclass(frozen=True, slots=True)
class AAData:
    """One A/A measurement as arrays (successful runs only, cut to a common length).

    Attributes
    ----------
    name : str
        The benchmark.
    method : {"duet", "sequential"}
        How it was measured.
    baseline_ns, candidate_ns : ndarray, shape (runs, iterations)
        Measured iteration times of the two (identical) sides.
    baseline_warmup_ns, candidate_warmup_ns : ndarray, shape (runs, warmup)
        The recorded warm-up iterations (may have 0 columns).
    baseline_cpus : tuple of int or None
        Per run, the CPU the baseline sat on (None when not recorded).
    start_skew_ns : ndarray of shape (runs, iterations), or None
        ``candidate start - baseline start`` of every measured iteration, from the recorded
        ``iteration_start_ns`` (same monotonic clock on both sides); None when not recorded or
        for the sequential method.
    wall_ns : ndarray of shape (runs, 2), or None
        Per run, the wall time of each side from its start to its exit (None if unrecorded).
    failed_runs : int
        Runs that failed and are not in the arrays.
    assignment : ndarray of shape (runs, iterations), or None
        Crossover at every iteration (docs/statistics.md, method 1b): per measured iteration, 0 with
        the baseline on the lower-numbered CPU of the pair, 1 on the other; None when the sides
        kept their CPUs for a run (or the CPUs were not recorded).
    iteration_period_ns : float or None
        The median time from one measured iteration's start to the next one's, from the
        baseline's ``iteration_start_ns``: what an iteration really costs, also when the sample
        is not its wall time (a suite adapter's time per operation, for an iteration that is a
        process running the benchmark tool). None when not recorded.
    """

    name: str
    method: Method
    baseline_ns: FloatArray
    candidate_ns: FloatArray
    baseline_warmup_ns: FloatArray
    candidate_warmup_ns: FloatArray
    baseline_cpus: tuple[int | None, ...]
    start_skew_ns: FloatArray | None = None
    wall_ns: FloatArray | None = None
    failed_runs: int = 0
    assignment: FloatArray | None = None
    iteration_period_ns: float | None = None

    def __post_init__(self) -> None:
        a, b = self.baseline_ns, self.candidate_ns
        if a.ndim != 2 or a.shape != b.shape:
            raise ValueError(
                f"baseline_ns {a.shape} and candidate_ns {b.shape} must be 2-D of one shape"
            )
        if a.shape[0] < 2 or a.shape[1] < 1:
            raise ValueError(
                f"an A/A calibration needs at least 2 successful runs of 1 iteration, got "
                f"{a.shape[0]} x {a.shape[1]}"
            )
        if not (
            np.all(np.isfinite(a)) and np.all(a > 0) and np.all(np.isfinite(b)) and np.all(b > 0)
        ):
            raise ValueError("iteration times must be positive and finite")
        for w in (self.baseline_warmup_ns, self.candidate_warmup_ns):
            if w.ndim != 2 or w.shape[0] != a.shape[0]:
                raise ValueError(f"warm-up arrays must have {a.shape[0]} rows, got {w.shape}")
        if len(self.baseline_cpus) != a.shape[0]:
            raise ValueError(f"baseline_cpus needs {a.shape[0]} entries")
        if self.start_skew_ns is not None and self.start_skew_ns.shape != a.shape:
            raise ValueError("start_skew_ns must have the shape of the iteration times")
        if self.wall_ns is not None and self.wall_ns.shape != (a.shape[0], 2):
            raise ValueError(f"wall_ns must have shape ({a.shape[0]}, 2)")
        if self.assignment is not None and self.assignment.shape != a.shape:
            raise ValueError("assignment must have the shape of the iteration times")

    @property
    def runs(self) -> int:
        return int(self.baseline_ns.shape[0])

    @property
    def iterations(self) -> int:
        return int(self.baseline_ns.shape[1])

    @property
    def warmup(self) -> int:
        return int(self.baseline_warmup_ns.shape[1])


def _rows(values: Sequence[Sequence[int]], width: int) -> FloatArray:
    return np.array([list(v)[:width] for v in values], dtype=np.float64).reshape(len(values), width)


def metric_matrices(
    record: BenchmarkRecord, metric: MetricName
) -> tuple[FloatArray, FloatArray] | str:
    """The (baseline, candidate) matrices of ``metric`` over the successful runs, cut to the
    shortest, as the analysis derives them (:func:`duet_bench.analysis.series.recorded_of`); or
    why there are none."""
    ok = record.ok_runs()
    registered = get(metric)
    if registered is None:
        return f"{metric!r} is not a metric this duet knows"
    if not ok:
        return "no successful run"
    return registered.derive(recorded_of(ok))


def has_metric(record: BenchmarkRecord, metric: MetricName) -> bool:
    """Whether every successful run recorded ``metric`` on both sides, in readings the metric
    can use (CPU time above 0 ns; run-queue delay below the wall time, for ``wall-runq``)."""
    return not isinstance(metric_matrices(record, metric), str)


def aa_data(record: BenchmarkRecord, metric: MetricName = "wall") -> AAData:
    """The arrays of an A/A benchmark record (its successful runs), of one metric.

    Runs of different lengths (an interrupted run kept as ok) are cut to the shortest, as
    :func:`duet_bench.analysis.analyze_benchmark` does. Warm-up iterations record wall time only, so
    a CPU-time or wall-less-run-queue calibration detects its warm-up in the measured iterations
    alone.

    Raises
    ------
    ValueError
        With fewer than 2 successful runs, or without ``metric`` in every run.
    """
    ok = record.ok_runs()
    if len(ok) < 2:
        raise ValueError(
            f"{record.name}: {len(ok)} successful run(s); a calibration needs at least 2 "
            "(better 10 or more)"
        )
    matrices = metric_matrices(record, metric)
    if isinstance(matrices, str):
        raise ValueError(f"{record.name}: {metric} time was not recorded in every run")
    n = min(len(r.baseline.iterations_ns) for r in ok)
    w = (
        min(min(len(r.baseline.warmup_ns), len(r.candidate.warmup_ns)) for r in ok)
        if metric == "wall"
        else 0
    )
    base, cand = matrices
    base_w = _rows([r.baseline.warmup_ns[-w:] if w else () for r in ok], w)
    cand_w = _rows([r.candidate.warmup_ns[-w:] if w else () for r in ok], w)
    cpus = tuple(r.baseline.cores[0] if r.baseline.cores else None for r in ok)
    method: Method = "sequential" if record.method == "sequential" else "duet"
    skews: list[FloatArray] = []
    for r in ok if method == "duet" else ():
        start_a, start_b = r.baseline.iteration_start_ns, r.candidate.iteration_start_ns
        if start_a is None or start_b is None or min(len(start_a), len(start_b)) < n:
            break
        # Both sides read the same CLOCK_MONOTONIC, so the difference is the start skew.
        skews.append(np.array(start_b[:n], dtype=np.float64) - np.array(start_a[:n]))
    skew = np.array(skews) if len(skews) == len(ok) and method == "duet" else None
    wall: FloatArray | None = None
    periods = [
        float(np.median(np.diff(np.array(r.baseline.iteration_start_ns[:n], dtype=np.float64))))
        for r in ok
        if r.baseline.iteration_start_ns is not None and len(r.baseline.iteration_start_ns) >= 2
    ]
    crossover = crossover_of(ok, n)[0] if method == "duet" else None
    if all(r.baseline.wall_ns is not None and r.candidate.wall_ns is not None for r in ok):
        wall = np.array([[r.baseline.wall_ns, r.candidate.wall_ns] for r in ok], dtype=np.float64)
    return AAData(
        name=record.name,
        method=method,
        baseline_ns=base,
        candidate_ns=cand,
        baseline_warmup_ns=base_w,
        candidate_warmup_ns=cand_w,
        baseline_cpus=cpus,
        start_skew_ns=skew,
        wall_ns=wall,
        failed_runs=len(record.runs) - len(ok),
        # Only when the sides moved inside the runs: per-run swaps keep their plain means.
        assignment=crossover.assignment
        if crossover is not None and crossover.within_runs
        else None,
        iteration_period_ns=float(np.median(periods)) if periods else None,
    )
