"""The metrics a verdict can rest on, and the thresholds of the rule that chooses one: one home
for :mod:`duet_bench.analysis` (which applies them), the reports and the comment (which read a
results file and must name them the same way), ``duet calibrate`` and the demo. No numpy here: the
reports import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

#: What a per-iteration sample is: wall time (from leaving the barrier to the end of the work)
#: or the CPU time the measured code used in it (docs/measurement.md).
#: ``wall-runq`` is the wall time less the time the measured task waited for a CPU: what the
#: iteration would have taken had nothing else wanted the side's CPU (it keeps sleeping and I/O).
Metric: TypeAlias = Literal["wall", "cpu", "wall-runq"]
MetricChoice: TypeAlias = Literal["wall", "cpu", "wall-runq", "auto"]
METRICS: tuple[Metric, ...] = ("wall", "cpu", "wall-runq")
METRIC_CHOICES: tuple[MetricChoice, ...] = ("auto", "wall", "cpu", "wall-runq")
METRIC_NAMES: Mapping[str, str] = {
    "wall": "wall time",
    "cpu": "CPU time",
    "wall-runq": "wall time less run-queue delay",
}
DEFAULT_METRIC: MetricChoice = "auto"
#: ``auto`` takes CPU time when, on both sides, the median iteration spent at least this share
#: of its wall time on a CPU or waiting for one (run-queue delay): the code was CPU-bound, and
#: what is left of the wall time is the scheduler's doing. Below it the code sleeps, waits for
#: I/O or locks, which only wall time sees (docs/measurement.md has the measurements).
CPU_BOUND_SHARE = 0.90
#: An iteration counts as interfered with when a side waited on the run queue for more than
#: this share of the iteration's wall time.
INTERFERED_RUNQ_SHARE = 0.01
#: Reports mention interference when at least this share of iterations had it.
INTERFERENCE_NOTICE_SHARE = 0.05


def not_cpu_bound(busy_share: Mapping[str, float]) -> list[str]:
    """The sides (in ``busy_share``'s order) whose median iteration spent less than
    :data:`CPU_BOUND_SHARE` of its wall time on a CPU or waiting for one: the rule of ``auto``."""
    return [side for side, share in busy_share.items() if share < CPU_BOUND_SHARE]
