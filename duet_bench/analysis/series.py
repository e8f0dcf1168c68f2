"""Per-iteration figures out of run records: the analysed runs of one benchmark as
``(runs, iterations)`` matrices per side, the recorded figures (:func:`recorded_of`) and every
registered metric derived from them (:mod:`duet_bench.metrics`), or why a metric has none; and,
when the sides changed CPUs at every iteration, which CPU assignment each iteration ran under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from duet_bench.metrics import MetricName, Recorded, registered
from duet_bench.results import SIDES, RunRecord, SideName

Matrix: TypeAlias = np.ndarray[Any, np.dtype[np.float64]]


@dataclass(frozen=True, slots=True)
class Crossover:
    """Where each analysed iteration ran: ``assignment[r, i]`` is 0 with the baseline on
    ``cpu_a`` (the lower-numbered CPU of the pair), 1 with it on ``cpu_b``."""

    cpu_a: int
    cpu_b: int
    assignment: Matrix
    #: Iterations in which both sides were recorded on the same CPU (the move failed).
    clashes: int

    @property
    def within_runs(self) -> bool:
        """Whether some run ran under both assignments (the sides moved inside it)."""
        a = self.assignment
        return bool(((a.min(axis=1) == 0) & (a.max(axis=1) == 1)).any())


@dataclass(frozen=True, slots=True)
class Series:
    """The analysed runs of one benchmark as ``(runs, iterations)`` matrices per side."""

    recorded: Recorded
    #: Every registered metric's matrices, or why it has none.
    derived: Mapping[MetricName, tuple[Matrix, Matrix] | str]
    #: Set when the runs had different iteration counts: what was done about it.
    cut_note: str | None = None
    #: Per iteration, the CPU assignment, when every analysed run recorded it on both sides.
    crossover: Crossover | None = None
    #: Why the recorded CPUs could not be used, or that the sides shared a CPU.
    crossover_note: str | None = None

    @property
    def wall(self) -> tuple[Matrix, Matrix]:
        return self.recorded.wall_ns

    @property
    def assignment(self) -> Matrix | None:
        """Per iteration, which CPU assignment it ran under (crossover), else None."""
        return None if self.crossover is None else self.crossover.assignment

    @property
    def cpu(self) -> tuple[Matrix, Matrix] | None:
        """CPU time, None when it was not recorded or is unusable (as the metric)."""
        return self.of("cpu")

    @property
    def runq(self) -> tuple[Matrix, Matrix] | None:
        return self.recorded.runq_ns

    def of(self, metric: MetricName) -> tuple[Matrix, Matrix] | None:
        derived = self.derived.get(metric)
        return None if derived is None or isinstance(derived, str) else derived

    def why_missing(self, metric: MetricName) -> str | None:
        """None when ``metric`` can be analysed, else why not (for the report)."""
        derived = self.derived.get(metric, f"{metric!r} is not a metric this duet knows")
        return derived if isinstance(derived, str) else None


def recorded_of(ok: tuple[RunRecord, ...]) -> Recorded:
    """The figures of the first ``n`` iterations of every run, ``n`` the shortest run's count;
    CPU time and run-queue delay only when every analysed run recorded them on both sides."""
    n = min(len(r.baseline.iterations_ns) for r in ok)

    def matrix(attr: str) -> tuple[Matrix, Matrix] | None:
        rows: dict[SideName, list[tuple[int, ...]]] = {"baseline": [], "candidate": []}
        for r in ok:
            for name in SIDES:
                values = getattr(r.side(name), attr)
                if values is None or len(values) < n:
                    return None
                rows[name].append(values[:n])
        return (
            np.array(rows["baseline"], dtype=np.float64),
            np.array(rows["candidate"], dtype=np.float64),
        )

    wall = matrix("iterations_ns")
    assert wall is not None
    runq = matrix("iteration_runq_ns")
    if runq is not None:
        # The kernel adds a wait to run_delay when the task next gets a CPU; under heavy load a
        # reading above the iteration's wall time was seen (a wait that began before the
        # iteration). The samples keep the reading; the analysis caps it at the iteration.
        runq = (np.minimum(runq[0], wall[0]), np.minimum(runq[1], wall[1]))
    return Recorded(wall_ns=wall, cpu_ns=matrix("iteration_cpu_ns"), runq_ns=runq)


def series_of(ok: tuple[RunRecord, ...], *, crossing: bool = True) -> Series:
    """The recorded figures (:func:`recorded_of`), every registered metric derived from them,
    and the CPU assignment of every iteration. ``crossing=False`` for the sequential method (one
    side after the other): the sides never cross over, so their CPUs say nothing about an
    assignment, and sharing a CPU is the design, not a failed move."""
    lengths = {len(r.baseline.iterations_ns) for r in ok}
    # Runs cut short (e.g. an interrupted last run kept as "ok") would bias the mean; use the
    # common length so every run weighs the same, and say so.
    n = min(lengths)
    cut_note = f"runs had different iteration counts; each cut to {n}" if len(lengths) > 1 else None
    recorded = recorded_of(ok)
    crossover, crossover_note = crossover_of(ok, n) if crossing else (None, None)
    return Series(
        recorded=recorded,
        derived={m.name: m.derive(recorded) for m in registered()},
        cut_note=cut_note,
        crossover=crossover,
        crossover_note=crossover_note,
    )


def _clash_note(
    cpus: list[tuple[tuple[int, ...], tuple[int, ...]]], cpu_a: int, cpu_b: int, clashes: int
) -> str:
    """Say in plain words which side left the CPU duet moved it to (the recorded CPUs are where
    each side really ran: issue 33, finding 3). The sides alternate in opposite phase; the
    phase that most recorded CPUs follow is the plan, and a side off it left its CPU."""
    left: dict[str, list[int]] = {"baseline": [], "candidate": []}
    for base, cand in cpus:
        plan = [cpu_a if k % 2 == 0 else cpu_b for k in range(len(base))]
        other = [cpu_b if c == cpu_a else cpu_a for c in plan]
        if sum(map(int.__eq__, base, plan)) + sum(map(int.__eq__, cand, other)) < sum(
            map(int.__eq__, base, other)
        ) + sum(map(int.__eq__, cand, plan)):
            plan, other = other, plan
        left["baseline"] += [c for c, p in zip(base, plan, strict=True) if c != p]
        left["candidate"] += [c for c, p in zip(cand, other, strict=True) if c != p]
    total = sum(len(base) for base, _ in cpus)
    said = []
    for side, went in left.items():
        if not went:
            continue
        where = sorted(set(went))
        if len(where) == 1:
            said.append(
                f"the {side} pinned itself to CPU {where[0]} (sched_setaffinity, taskset): in "
                f"{len(went)} of {total} iterations it ran there, not on the CPU duet had moved "
                "it to"
            )
        else:
            said.append(
                f"the {side} left the CPU duet had moved it to in {len(went)} of {total} "
                f"iterations (it ran on CPUs {', '.join(map(str, where))})"
            )
    if not said:
        return (
            f"in {clashes} iteration(s) both sides ran on the same CPU: the move between the "
            "CPUs did not happen there"
        )
    return (
        "; ".join(said)
        + f". In {clashes} iteration(s) both versions ran on one CPU at the same time: those "
        "compare them sharing a CPU, not the machine's cores"
    )


def crossover_of(ok: tuple[RunRecord, ...], n: int) -> tuple[Crossover | None, str | None]:
    """The CPU assignment of the first ``n`` iterations of every run, from ``iteration_cpus``;
    None (and why, unless the files predate the field) when a run lacks it on a side or the
    sides used other than two CPUs in all."""
    cpus: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for r in ok:
        base, cand = r.baseline.iteration_cpus, r.candidate.iteration_cpus
        if base is None or cand is None or len(base) < n or len(cand) < n:
            # Old files and the per-run design have no per-iteration CPUs: nothing to say.
            return None, (
                None
                if all(s.iteration_cpus is None for q in ok for s in (q.baseline, q.candidate))
                else f"run {r.index} did not record the CPU of every iteration on both sides: "
                "the runs' plain means were used"
            )
        cpus.append((base[:n], cand[:n]))
    used = sorted({c for pair in cpus for side in pair for c in side})
    if len(used) != 2:
        return None, (
            f"the sides ran on CPUs {', '.join(map(str, used))}, not on one pair: the CPU "
            "assignment is unknown and the runs' plain means were used"
        )
    cpu_a, cpu_b = used
    base_cpus = np.array([b for b, _ in cpus])
    clashes = int(np.count_nonzero(base_cpus == np.array([c for _, c in cpus])))
    # Such an iteration compared the versions on one CPU at the same time; it is kept (its
    # assignment is the baseline's CPU), but the move between the CPUs did not happen.
    note = _clash_note(cpus, cpu_a, cpu_b, clashes) if clashes else None
    assignment = (base_cpus == cpu_b).astype(np.float64)
    return Crossover(cpu_a=cpu_a, cpu_b=cpu_b, assignment=assignment, clashes=clashes), note
