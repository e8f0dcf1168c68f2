"""Which metric decides (``metric = auto`` and a configured one), and the disagreement to
report when another metric's verdict contradicts the deciding one."""

from __future__ import annotations

from collections.abc import Mapping

from duet_bench import units
from duet_bench.analysis.interference import Interference
from duet_bench.analysis.model import MetricEstimate
from duet_bench.analysis.verdict import Verdict
from duet_bench.metrics import (
    INTERFERENCE_NOTICE_SHARE,
    METRIC_NAMES,
    MetricChoice,
    MetricName,
    auto_rival,
    instead_of,
    names,
    not_cpu_bound,
)
from duet_bench.results import SIDES


def choose_metric(
    requested: MetricChoice,
    *,
    available: Mapping[str, str | None],
    busy_share: Mapping[str, float],
    interference: Interference | None,
) -> tuple[MetricName, str]:
    """The metric that decides, and why, in words for the report.

    ``available`` maps every metric to None when it was analysed, else to why it was not. The
    policy of ``auto`` is CPU time for CPU-bound sides (the rule, shared with a calibration:
    :func:`duet_bench.metrics.auto_rival`), else wall time less run-queue delay when another
    process delayed a side, else wall time; the registry says which metric takes the place of
    one that cannot be used (:func:`duet_bench.metrics.instead_of`).
    """

    def analysed(name: MetricName) -> bool:
        return available.get(name) is None

    if requested != "auto":
        why_not = available.get(requested)
        if why_not is None:
            return requested, f"{METRIC_NAMES[requested]}, as configured"
        instead = instead_of(requested, analysed)
        return instead, (
            f"{METRIC_NAMES[instead]}: {METRIC_NAMES[requested]} was asked for, but {why_not}"
        )
    if available.get("cpu") is not None:
        instead = instead_of("cpu", analysed)
        return instead, f"{METRIC_NAMES[instead]}: {available['cpu']}"
    shares = ", ".join(f"{name} {units.share(busy_share[name])}" for name in SIDES)
    sides: dict[str, float] = {name: busy_share[name] for name in SIDES}
    idle = not_cpu_bound(sides)
    if auto_rival(sides, analysed) == "cpu":
        return "cpu", (
            f"CPU time: both sides CPU-bound ({shares} of the wall time on a CPU or in its queue)"
        )
    sleeper = (
        f"the {' and the '.join(idle)} spent only {shares} of the iteration on a CPU or waiting "
        "for one (it sleeps or waits for I/O, which CPU time misses)"
    )
    delayed = interference is not None and interference.share >= INTERFERENCE_NOTICE_SHARE
    if delayed and available.get("wall-runq") is None:
        assert interference is not None
        return "wall-runq", (
            f"wall time less run-queue delay: {sleeper}, and another process delayed a side in "
            f"{units.share(interference.share)} of iterations, which wall time would count"
        )
    instead = instead_of("wall-runq", analysed)
    return instead, f"{METRIC_NAMES[instead]}: {sleeper}"


def _contradict(x: Verdict | None, y: Verdict | None) -> bool:
    """A change against no change, or opposite changes; an inconclusive verdict (or none)
    contradicts nothing: that metric is simply the less sharp one."""
    changes = ("regression", "improvement")
    if x == y or x in ("inconclusive", None) or y in ("inconclusive", None):
        return False
    return x in changes or y in changes


def disagreement(estimates: Mapping[str, MetricEstimate], chosen: MetricName) -> str | None:
    """Say so when another metric contradicts the deciding one: a change only wall time shows
    (more sleeping, I/O or lock waits) is real and must not be hidden."""
    decided = estimates[chosen]

    def say(m: MetricEstimate) -> str:
        return (
            f"{METRIC_NAMES[m.metric]} says {m.verdict or 'no verdict'} ({units.change(m.ratio)})"
        )

    for name in names():
        other = estimates.get(name)
        if other is None or name == chosen or not _contradict(other.verdict, decided.verdict):
            continue
        text = f"{say(other)} but {say(decided)}, which decided"
        wall, rest = (other, decided) if name == "wall" else (decided, other)
        changes = ("regression", "improvement")
        if "wall" in (name, chosen) and wall.verdict in changes and rest.verdict not in changes:
            text += (
                ": the difference is time off the CPU (sleeping, I/O, locks) or a process that "
                "delayed one side"
            )
        return text
    return None
