"""The records of the results document ``duet-results/3`` (frozen; docs/statistics.md, method 7) and
the names of its schema: sides, run statuses, methods, the per-iteration series."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from duet_bench.results.analysis import AnalysisBlock
from duet_bench.results.plan import RecordedPlan

#: Bump only with an entry in the schema history of docs/results-schema.md.
SCHEMA = "duet-results/3"
SCHEMA_FAMILY = "duet-results"
SCHEMA_VERSION = 3
#: Versions this duet reads. A version 1 file has no per-iteration CPU time or run-queue delay:
#: it is analysed on wall time, and the analysis says what is missing. Versions 1 and 2 have no
#: ``iteration_cpus`` (the sides kept their CPUs for a run: ``cores``).
READABLE_VERSIONS = (1, 2, 3)

SideName: TypeAlias = Literal["baseline", "candidate"]
SIDES: tuple[SideName, SideName] = ("baseline", "candidate")

#: ``ok`` runs are analysed; every other status is a failed run with a ``reason``.
RUN_STATUSES = ("ok", "failed", "timeout", "out-of-memory", "pids-limit", "interrupted")
METHODS = ("duet", "sequential")

JSONObject: TypeAlias = dict[str, Any]
#: Per-iteration series next to ``iterations_ns`` (schema 2): non-negative integers, one each.
SIDE_SERIES = ("iteration_cpu_ns", "iteration_runq_ns", "iteration_nivcsw", "iteration_cpus")


@dataclass(frozen=True, slots=True)
class SideRecord:
    """What one side recorded in one run (docs/statistics.md, method 7).

    Every optional number is ``None`` when it was not measured; ``missing`` then says why.
    """

    #: Wall time of every measured iteration (from leaving the barrier to the end of the work).
    iterations_ns: tuple[int, ...]
    warmup_ns: tuple[int, ...] = ()
    iteration_start_ns: tuple[int, ...] | None = None
    #: Per measured iteration: CPU time of the measured code (docs/measurement.md says what each
    #: kind includes), time spent runnable but waiting for a CPU, involuntary context switches.
    iteration_cpu_ns: tuple[int, ...] | None = None
    iteration_runq_ns: tuple[int, ...] | None = None
    iteration_nivcsw: tuple[int, ...] | None = None
    #: Per measured iteration: the logical CPU the side ran it on (crossover moves the sides
    #: between the two CPUs of the pair; docs/statistics.md). None in files that predate it.
    iteration_cpus: tuple[int, ...] | None = None
    #: Where ``iteration_runq_ns`` came from: ``"pressure"`` (the side's cgroup, every process of
    #: the side) or ``"task"`` (the measured thread, or for a command the process duet spawned);
    #: None when there is no such series or the file predates this field.
    runq_source: str | None = None
    #: The benchmark tool's own figures beside the time, by unit (go's ``B/op``, ``allocs/op``,
    #: ``MB/s``, ``b.ReportMetric`` units), each the median of the run's measured iterations;
    #: None when the tool printed none or the file predates this field.
    figures: Mapping[str, float] | None = None
    #: What ran the side's code, as its harness described it at the end of the run: today only
    #: JMH's, ``{"jvm": {"jvm": path, "vm_name", "vm_version", "jdk_version", "jmh_version",
    #: "mode", "threads", "flags": [...]}}`` (the forked JVM, the flags it really ran with).
    #: None for every other kind and in files that predate this field.
    runtime: Mapping[str, Any] | None = None
    cores: tuple[int, ...] | None = None
    cpu_ns: int | None = None
    cpu_user_ns: int | None = None
    cpu_system_ns: int | None = None
    peak_memory_bytes: int | None = None
    wall_ns: int | None = None
    exit_code: int | None = None
    status: str = "ok"
    reason: str | None = None
    hit_limit: str | None = None
    stderr_tail: str | None = None
    missing: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: a fresh pair of processes, baseline and candidate."""

    index: int
    status: str
    baseline: SideRecord
    candidate: SideRecord
    reason: str | None = None
    #: For the sequential method, which side ran first; for duet runs, None.
    order: tuple[SideName, SideName] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def side(self, name: SideName) -> SideRecord:
        return self.baseline if name == "baseline" else self.candidate


@dataclass(frozen=True, slots=True)
class BenchmarkRecord:
    """One benchmark: its runs, how it was measured and (once analysed) the analysis."""

    name: str
    runs: tuple[RunRecord, ...]
    kind: str | None = None
    method: str = "duet"
    #: Per side: what was measured (``command``, ``commit``, ``interpreter``, ...).
    versions: Mapping[str, Any] = field(default_factory=dict)
    #: The plan (the file's ``settings``): ``runs``, ``iterations``, ``warmup``, ``timeout_s``,
    #: ..., and ``analysis``: the settings it was judged with
    #: (:meth:`duet_bench.analysis.model.AnalysisSettings.to_record`), which ``duet analyze`` and
    #: ``duet report`` use again unless an option says otherwise.
    settings: RecordedPlan = field(default_factory=RecordedPlan)
    #: ``None`` until analysed; then the record :mod:`duet_bench.analysis` made
    #: (:class:`duet_bench.results.analysis.AnalysisBlock`).
    analysis: AnalysisBlock | None = None
    #: Why a benchmark has no runs (e.g. missing in the baseline version), else None.
    note: str | None = None

    def ok_runs(self) -> tuple[RunRecord, ...]:
        return tuple(r for r in self.runs if r.ok)


@dataclass(frozen=True, slots=True)
class ResultsDocument:
    """The whole document."""

    benchmarks: tuple[BenchmarkRecord, ...]
    schema: str = SCHEMA
    tool: Mapping[str, Any] = field(default_factory=dict)
    created: str | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    #: Progress: ``{"complete": bool, "stopped": reason or None, "updated": iso time}``.
    state: Mapping[str, Any] = field(default_factory=dict)

    def benchmark(self, name: str) -> BenchmarkRecord:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def with_benchmark(self, record: BenchmarkRecord) -> ResultsDocument:
        """A copy with ``record`` replacing the benchmark of the same name (or appended)."""
        items = list(self.benchmarks)
        for i, b in enumerate(items):
            if b.name == record.name:
                items[i] = record
                break
        else:
            items.append(record)
        return replace(self, benchmarks=tuple(items))


def replace_name(doc: ResultsDocument, old: str, new: str) -> ResultsDocument:
    """A copy of ``doc`` with benchmark ``old`` renamed ``new`` (order kept)."""
    return replace(
        doc,
        benchmarks=tuple(replace(b, name=new) if b.name == old else b for b in doc.benchmarks),
    )
