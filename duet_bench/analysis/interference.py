"""How busy the sides were and how much another process delayed them, from the per-iteration
CPU time and run-queue delay: the figures :mod:`duet_bench.analysis.choice` weighs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duet_bench.analysis.series import Series
from duet_bench.metrics import INTERFERED_RUNQ_SHARE
from duet_bench.results import SIDES
from duet_bench.results import analysis as stored


@dataclass(frozen=True, slots=True)
class Interference:
    """How much another process delayed the sides: iterations in which either side waited on
    the run queue for more than :data:`INTERFERED_RUNQ_SHARE` of its iteration, and the delay."""

    iterations: int
    interfered: int
    runq_ns: int
    wall_ns: int

    @property
    def share(self) -> float:
        return self.interfered / self.iterations if self.iterations else 0.0

    def to_block(self) -> stored.Interference:
        """What ``results.json`` stores, with the threshold it was counted at."""
        return stored.Interference(
            iterations=self.iterations,
            interfered=self.interfered,
            share=self.share,
            runq_ns=self.runq_ns,
            wall_ns=self.wall_ns,
            threshold=INTERFERED_RUNQ_SHARE,
        )


def busy_share(series: Series) -> dict[str, float]:
    """Per side, the median over iterations of (CPU time + run-queue delay) / wall time."""
    if series.cpu is None:
        return {}
    out: dict[str, float] = {}
    for i, name in enumerate(SIDES):
        busy = series.cpu[i] + (series.runq[i] if series.runq is not None else 0.0)
        out[name] = float(np.median(busy / series.wall[i]))
    return out


def interference(series: Series) -> Interference | None:
    """None without per-iteration run-queue delay."""
    if series.runq is None:
        return None
    (wall_a, wall_b), (runq_a, runq_b) = series.wall, series.runq
    hit = (runq_a > INTERFERED_RUNQ_SHARE * wall_a) | (runq_b > INTERFERED_RUNQ_SHARE * wall_b)
    return Interference(
        iterations=int(hit.size),
        interfered=int(hit.sum()),
        runq_ns=int(runq_a.sum() + runq_b.sum()),
        wall_ns=int(wall_a.sum() + wall_b.sum()),
    )
