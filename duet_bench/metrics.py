"""The metrics a verdict can rest on, as one registry (:data:`METRICS`), and the thresholds of the
rule that chooses one: one home for :mod:`duet_bench.analysis` (which derives and estimates them),
:mod:`duet_bench.calibrate`, the reports and the comment (which read a results file and must name
them the same way) and the demo.

A metric is a :class:`Metric`: its name, its label in reports, its unit, how its per-iteration
matrices are derived from the figures every run recorded (:class:`Recorded`), and the metric to
use instead when it cannot be. Names, choices and labels derive from the registry. Everything that
lists metrics reads the registry when it runs, through :func:`registered`, :func:`names`,
:func:`get` and
:data:`METRIC_NAMES` (never a copy of :data:`METRICS` taken at import), so that a metric added to
it, a test's included, reaches the analysis and every report.

No numpy here (the reports import this module, and so does ``duet --help``): the derivations use
the arrays' own operators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import numpy as np

    Matrix: TypeAlias = np.ndarray[Any, np.dtype[np.float64]]
    #: (baseline, candidate), each of shape (runs, iterations).
    Pair: TypeAlias = tuple[Matrix, Matrix]

#: A metric's name, as in ``--metric``, ``duet.toml`` and the results file: one of :func:`names`.
MetricName: TypeAlias = str
#: ``auto`` or a metric's name: one of :func:`choices`.
MetricChoice: TypeAlias = str


@dataclass(frozen=True, slots=True)
class Recorded:
    """The per-iteration figures of the analysed runs of one benchmark, each as (baseline,
    candidate) ``(runs, iterations)`` float matrices, every run cut to the shortest: what a metric
    is derived from (:func:`duet_bench.analysis.series.recorded_of` builds it)."""

    wall_ns: Pair
    #: None unless every analysed run recorded it on both sides.
    cpu_ns: Pair | None
    #: As ``cpu_ns``; each reading capped at its iteration's wall time.
    runq_ns: Pair | None


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric a verdict can rest on."""

    #: As written in ``--metric``, ``duet.toml`` and the results file.
    name: MetricName
    #: As reports name it ("CPU time").
    label: str
    #: The unit of the derived figures.
    unit: str
    #: The (baseline, candidate) matrices out of the recorded figures, or why there are none
    #: (said in the report: "not recorded", a reading the metric cannot use).
    derive: Callable[[Recorded], Pair | str]
    #: The metric to use when this one cannot be (wall time); None for the one every run has.
    fallback: MetricName | None


def _wall(r: Recorded) -> Pair | str:
    return r.wall_ns


def _cpu(r: Recorded) -> Pair | str:
    if r.cpu_ns is None:
        return "no per-iteration CPU time recorded (a duet-results/1 file or an old harness)"
    a, b = r.cpu_ns
    if (a <= 0).any() or (b <= 0).any():
        return (
            "an iteration used 0 ns of CPU time as measured (the clock's resolution is coarser "
            "than the iteration)"
        )
    return r.cpu_ns


def wall_less_runq(r: Recorded) -> Pair | str:
    """Wall time less run-queue delay (each delay capped at its iteration's wall time)."""
    if r.runq_ns is None:
        return "no per-iteration run-queue delay recorded"
    a, b = r.wall_ns[0] - r.runq_ns[0], r.wall_ns[1] - r.runq_ns[1]
    if (a > 0).all() and (b > 0).all():
        return a, b
    # The task waited for the whole iteration as measured (a capped reading): unusable.
    return "the run-queue delay took a whole iteration (clock resolutions)"


#: The one registry, in the order reports list the metrics. What a per-iteration sample is:
#: wall time (from leaving the barrier to the end of the work) or the CPU time the measured code
#: used in it (docs/measurement.md). ``wall-runq`` is the wall time less the time the measured
#: task waited for a CPU: what the iteration would have taken had nothing else wanted the side's
#: CPU (it keeps sleeping and I/O).
METRICS: tuple[Metric, ...] = (
    Metric("wall", "wall time", "ns", _wall, fallback=None),
    Metric("cpu", "CPU time", "ns", _cpu, fallback="wall"),
    Metric("wall-runq", "wall time less run-queue delay", "ns", wall_less_runq, fallback="wall"),
)


def registered() -> tuple[Metric, ...]:
    """The registry as it is when called (what a test registered included)."""
    return METRICS


def names() -> tuple[MetricName, ...]:
    """Every registered metric's name, in the registry's order."""
    return tuple(m.name for m in METRICS)


def get(name: object) -> Metric | None:
    """The registered metric called ``name``; None for any other value (a results file may hold
    anything)."""
    return next((m for m in METRICS if m.name == name), None)


def _any(name: MetricName) -> bool:
    return True


def choices() -> tuple[MetricChoice, ...]:
    """What ``metric`` may be set to: ``auto`` and every registered metric."""
    return ("auto", *names())


def known(name: object) -> MetricName:
    """``name`` when it is registered, else the metric every run has (wall time: what a file
    analysed without a metric, or with one this duet does not know, decided by)."""
    return name if isinstance(name, str) and get(name) is not None else instead_of(None, _any)


def usable(name: object, available: Callable[[MetricName], bool]) -> MetricName:
    """``name`` when it is registered and ``available``, else :func:`instead_of` it."""
    if isinstance(name, str) and get(name) is not None and available(name):
        return name
    return instead_of(name, available)


def instead_of(name: object, available: Callable[[MetricName], bool]) -> MetricName:
    """What takes the place of ``name`` when it cannot be used or is not wanted: the first
    ``available`` metric along its fallbacks; for a name not registered, the metric every run
    has (the one without a fallback)."""
    every_run = next(m.name for m in METRICS if m.fallback is None)
    metric = get(name)
    for _ in METRICS:  # a chain longer than the registry goes round in a loop
        if metric is None or metric.fallback is None:
            break
        metric = get(metric.fallback)
        if metric is not None and available(metric.name):
            return metric.name
    return every_run


class _Labels(Mapping[str, str]):
    """Name -> label of every registered metric, read from :data:`METRICS` at each use."""

    def __getitem__(self, name: str) -> str:
        metric = get(name)
        if metric is None:
            raise KeyError(name)
        return metric.label

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(METRICS)


#: A metric's name -> its label in reports ("wall time", "CPU time", ...).
METRIC_NAMES: Mapping[str, str] = _Labels()
#: :func:`choices` when this module was imported: for the option and configuration checks
#: (``click.Choice``, ``duet.toml``), which take a list when they load.
METRIC_CHOICES: tuple[MetricChoice, ...] = choices()
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


def auto_rival(busy_share: Mapping[str, float], usable: Callable[[MetricName], bool]) -> MetricName:
    """The rule of ``auto``, written once: the metric weighed against wall time. CPU time when
    it can be used (``usable``) and both sides are CPU-bound (:func:`not_cpu_bound` names none;
    an unknown ``busy_share`` is not CPU-bound), else wall time less run-queue delay, which
    keeps the sleeping and I/O that CPU time misses. What decides between it and wall time is
    the caller's evidence: the run's interference for the analysis
    (:func:`duet_bench.analysis.choose_metric`), the narrower A/A interval for a calibration
    (:func:`duet_bench.calibrate.calibrate_metrics`)."""
    cpu_bound = bool(busy_share) and not not_cpu_bound(busy_share)
    return "cpu" if cpu_bound and usable("cpu") else "wall-runq"
