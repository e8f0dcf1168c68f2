"""Reading a results document with validation: strict where a typo would silently change a
result (unknown keys in runs and sides, non-integer or non-positive samples), lenient where the
content is descriptive (``environment``, ``config``, ``versions``, ``analysis`` read into its
record by :mod:`duet_bench.results.analysis`; other unknown fields ignored with one warning);
every error names the field and the fix. A gzip-compressed file is read as if uncompressed."""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import fields
from typing import Any

from duet_bench.defaults import ANALYSIS_KEYS
from duet_bench.errors import ResultsError
from duet_bench.limits import MAX_COUNTER, MAX_SAMPLE_NS, show
from duet_bench.results.analysis import KEYS, AnalysisBlock
from duet_bench.results.model import (
    METHODS,
    READABLE_VERSIONS,
    RUN_STATUSES,
    SCHEMA,
    SCHEMA_FAMILY,
    SCHEMA_VERSION,
    SIDE_SERIES,
    SIDES,
    BenchmarkRecord,
    ResultsDocument,
    RunRecord,
    SideName,
    SideRecord,
)
from duet_bench.results.plan import ABSENT, Absent, RecordedAnalysis, RecordedDesign, RecordedPlan

log = logging.getLogger(__name__)

_PLAN_KEYS = tuple(f.name for f in fields(RecordedPlan) if f.name != "unknown")


class _Reader:
    """Validation helpers that name the offending field and the fix."""

    def __init__(self, source: str) -> None:
        self.source = source
        #: Unknown fields ignored where the schema allows them: ``where: 'name'``.
        self.ignored: list[str] = []

    def fail(self, where: str, problem: str, fix: str | None = None) -> ResultsError:
        return ResultsError(
            f"{self.source}: {where}: {problem}",
            fix=fix or "correct the field, or re-create the file with duet",
        )

    def obj(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a JSON object, got {_kind(value)}")
        return value

    def keys(
        self,
        value: Mapping[str, Any],
        where: str,
        allowed: set[str],
        required: set[str],
        *,
        tolerate: bool = False,
    ) -> None:
        """Refuse an unknown field, or with ``tolerate`` note it for the one warning of
        :func:`from_dict` (docs/results-schema.md says where the schema allows them)."""
        unknown = sorted(set(value) - allowed)
        if unknown and tolerate:
            self.ignored.append(f"{where} {', '.join(map(repr, unknown))}")
        elif unknown:
            raise self.fail(
                where,
                f"unknown field {unknown[0]!r}",
                f"remove it or rename it to one of: {', '.join(sorted(allowed))}",
            )
        lacking = sorted(required - set(value))
        if lacking:
            raise self.fail(where, f"missing required field {lacking[0]!r}")

    def string(self, value: Any, where: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        return value

    def integer(
        self, value: Any, where: str, *, optional: bool = False, minimum: int | None = None
    ) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            raise self.fail(where, f"expected an integer >= {minimum}, got {show(value)}")
        if abs(value) > MAX_COUNTER:
            raise self.fail(where, f"{show(value)} is beyond a 64-bit integer ({MAX_COUNTER})")
        return value

    def samples(self, value: Any, where: str, *, positive: bool) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list of integer nanoseconds, got {_kind(value)}")
        for i, x in enumerate(value):
            if isinstance(x, bool) or not isinstance(x, int):
                raise self.fail(
                    f"{where}[{i}]",
                    f"expected an integer number of nanoseconds, got {_kind(x)} {x!r}",
                    "samples are integer nanoseconds; re-create the file with duet",
                )
            if positive and x <= 0:
                raise self.fail(f"{where}[{i}]", f"a duration must be positive, got {x}")
            # A duration beyond the largest sample, any other value beyond int64.
            limit = MAX_SAMPLE_NS if positive else MAX_COUNTER
            if abs(x) > limit:
                raise self.fail(
                    f"{where}[{i}]",
                    f"{show(x)} is over the largest value duet reads here ("
                    + ("10^15 ns, about 11.6 days)" if positive else "2^63 - 1)"),
                    "the file was edited or produced by another tool; re-run the benchmark",
                )
        return tuple(value)

    def choice(self, value: Any, where: str, allowed: Sequence[str]) -> str:
        s = self.string(value, where)
        assert s is not None
        if s not in allowed:
            raise self.fail(where, f"{s!r} is not one of {', '.join(map(repr, allowed))}")
        return s

    def numbers(self, value: Any, where: str) -> dict[str, float]:
        """Numbers by name (a side's ``figures``: go's ``B/op``, ``allocs/op``)."""
        out = {str(k): v for k, v in self.obj(value, where).items()}
        bad = next((k for k, v in out.items() if type(v) not in (int, float)), None)
        if bad is not None:
            raise self.fail(f"{where}.{bad}", f"expected a number, got {out[bad]!r}")
        return {k: float(v) for k, v in out.items()}

    def free(self, value: Any, where: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        return self.obj(value, where)


_SIDE_INT_FIELDS = (
    "cpu_ns",
    "cpu_user_ns",
    "cpu_system_ns",
    "peak_memory_bytes",
    "wall_ns",
)
_SIDE_FIELDS = {
    "iterations_ns",
    "warmup_ns",
    "iteration_start_ns",
    *SIDE_SERIES,
    "cores",
    "exit_code",
    "status",
    "reason",
    "hit_limit",
    "runq_source",
    "figures",
    "runtime",
    "stderr_tail",
    "missing",
    *_SIDE_INT_FIELDS,
}
_RUN_FIELDS = {"index", "status", "reason", "order", "baseline", "candidate"}
_BENCH_FIELDS = {"name", "runs", "kind", "method", "versions", "settings", "analysis", "note"}
_DOC_FIELDS = {"schema", "benchmarks", "tool", "created", "environment", "config", "state"}


def _side(rd: _Reader, raw: Any, where: str, *, ok: bool) -> SideRecord:
    m = rd.obj(raw, where)
    rd.keys(m, where, _SIDE_FIELDS, {"iterations_ns"})
    iterations = rd.samples(m["iterations_ns"], f"{where}.iterations_ns", positive=True)
    if ok and not iterations:
        raise rd.fail(f"{where}.iterations_ns", "an 'ok' run needs at least one sample")
    warmup = rd.samples(m.get("warmup_ns", []), f"{where}.warmup_ns", positive=True)
    starts = None
    if m.get("iteration_start_ns") is not None:
        starts = rd.samples(m["iteration_start_ns"], f"{where}.iteration_start_ns", positive=False)
    cores = None
    if m.get("cores") is not None:
        cores = rd.samples(m["cores"], f"{where}.cores", positive=False)
    series: dict[str, tuple[int, ...] | None] = {}
    for key in SIDE_SERIES:
        raw_series = m.get(key)
        if raw_series is None:
            series[key] = None
            continue
        values = rd.samples(raw_series, f"{where}.{key}", positive=False)
        if any(v < 0 for v in values):
            raise rd.fail(f"{where}.{key}", "expected non-negative integers")
        if len(values) != len(iterations):
            raise rd.fail(
                f"{where}.{key}",
                f"{len(values)} values for {len(iterations)} iterations; one per iteration",
            )
        series[key] = values
    ints: dict[str, int | None] = {
        k: rd.integer(m.get(k), f"{where}.{k}", optional=True, minimum=0) for k in _SIDE_INT_FIELDS
    }
    figures = None if m.get("figures") is None else rd.numbers(m["figures"], f"{where}.figures")
    runtime = None if m.get("runtime") is None else rd.obj(m["runtime"], f"{where}.runtime")
    missing_raw = rd.free(m.get("missing"), f"{where}.missing")
    missing = {str(k): str(v) for k, v in missing_raw.items()}
    return SideRecord(
        iterations_ns=iterations,
        warmup_ns=warmup,
        iteration_start_ns=starts,
        iteration_cpu_ns=series["iteration_cpu_ns"],
        iteration_runq_ns=series["iteration_runq_ns"],
        iteration_nivcsw=series["iteration_nivcsw"],
        iteration_cpus=series["iteration_cpus"],
        runq_source=rd.string(m.get("runq_source"), f"{where}.runq_source", optional=True),
        figures=figures,
        runtime=runtime,
        cores=cores,
        exit_code=rd.integer(m.get("exit_code"), f"{where}.exit_code", optional=True),
        status=rd.string(m.get("status", "ok"), f"{where}.status") or "ok",
        reason=rd.string(m.get("reason"), f"{where}.reason", optional=True),
        hit_limit=rd.string(m.get("hit_limit"), f"{where}.hit_limit", optional=True),
        stderr_tail=rd.string(m.get("stderr_tail"), f"{where}.stderr_tail", optional=True),
        missing=missing,
        **ints,
    )


def _run(rd: _Reader, raw: Any, where: str) -> RunRecord:
    m = rd.obj(raw, where)
    rd.keys(m, where, _RUN_FIELDS, {"index", "status", "baseline", "candidate"})
    status = rd.choice(m["status"], f"{where}.status", RUN_STATUSES)
    ok = status == "ok"
    baseline = _side(rd, m["baseline"], f"{where}.baseline", ok=ok)
    candidate = _side(rd, m["candidate"], f"{where}.candidate", ok=ok)
    if ok and len(baseline.iterations_ns) != len(candidate.iterations_ns):
        raise rd.fail(
            where,
            f"baseline has {len(baseline.iterations_ns)} samples but candidate has "
            f"{len(candidate.iterations_ns)}; an 'ok' run pairs them one to one",
            "mark the run as failed with a reason, or remove it",
        )
    order: tuple[SideName, SideName] | None = None
    if m.get("order") is not None:
        raw_order = m["order"]
        if (
            not isinstance(raw_order, list)
            or not all(isinstance(side, str) for side in raw_order)
            or sorted(raw_order) != sorted(SIDES)
        ):
            raise rd.fail(f"{where}.order", 'expected ["baseline", "candidate"] in some order')
        order = (raw_order[0], raw_order[1])
    return RunRecord(
        index=rd.integer(m["index"], f"{where}.index", minimum=0) or 0,
        status=status,
        reason=rd.string(m.get("reason"), f"{where}.reason", optional=True),
        order=order,
        baseline=baseline,
        candidate=candidate,
    )


def _number(rd: _Reader, value: Any, where: str) -> float | None:
    """A finite number as written (an integer stays one, so a rewrite keeps the text)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise rd.fail(where, f"expected a finite number, got {_kind(value)} {value!r}")
    return value


def _flag(rd: _Reader, value: Any, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise rd.fail(where, f"expected true or false, got {_kind(value)} {value!r}")
    return value


def _limit(rd: _Reader, m: Mapping[str, Any], key: str, where: str) -> int | Absent | None:
    if key not in m:
        return ABSENT
    return rd.integer(m[key], f"{where}.{key}", optional=True)


def _unknown(m: Mapping[str, Any], known: Collection[str]) -> dict[str, object]:
    return {k: v for k, v in m.items() if k not in known}


def _recorded_analysis(rd: _Reader, raw: Any, where: str) -> RecordedAnalysis | None:
    if raw is None:
        return None
    m = rd.obj(raw, where)
    return RecordedAnalysis(
        confidence=_number(rd, m.get("confidence"), f"{where}.confidence"),
        threshold=_number(rd, m.get("threshold"), f"{where}.threshold"),
        reps=rd.integer(m.get("reps"), f"{where}.reps", optional=True),
        seed=rd.integer(m.get("seed"), f"{where}.seed", optional=True),
        interval=rd.string(m.get("interval"), f"{where}.interval", optional=True),
        winsorize=_flag(rd, m.get("winsorize"), f"{where}.winsorize"),
        metric=rd.string(m.get("metric"), f"{where}.metric", optional=True),
        unknown=_unknown(m, ANALYSIS_KEYS),
    )


def _recorded_design(rd: _Reader, raw: Any, where: str) -> RecordedDesign | None:
    if raw is None:
        return None
    m = rd.obj(raw, where)
    return RecordedDesign(
        min_runs=rd.integer(m.get("min_runs"), f"{where}.min_runs", optional=True),
        max_runs=rd.integer(m.get("max_runs"), f"{where}.max_runs", optional=True),
        budget_s=_number(rd, m.get("budget_s"), f"{where}.budget_s"),
        shape=rd.string(m.get("shape"), f"{where}.shape", optional=True),
        unknown=_unknown(m, ("min_runs", "max_runs", "budget_s", "shape")),
    )


def _plan(rd: _Reader, raw: Any, where: str) -> RecordedPlan:
    """A benchmark's ``settings``: each known key of its type (or refused, naming it), the others
    kept as they are."""
    if raw is None:
        return RecordedPlan()
    m = rd.obj(raw, where)
    by_block = m.get("inner_loops_by_block")
    if by_block is not None and not isinstance(by_block, list):
        raise rd.fail(f"{where}.inner_loops_by_block", f"expected a list, got {_kind(by_block)}")

    def integer(key: str) -> int | None:
        return rd.integer(m.get(key), f"{where}.{key}", optional=True)

    return RecordedPlan(
        runs=integer("runs"),
        iterations=integer("iterations"),
        warmup=integer("warmup"),
        timeout_s=_number(rd, m.get("timeout_s"), f"{where}.timeout_s"),
        memory_limit_bytes=_limit(rd, m, "memory_limit_bytes", where),
        pids_max=_limit(rd, m, "pids_max", where),
        method=rd.string(m.get("method"), f"{where}.method", optional=True),
        crossover=rd.string(m.get("crossover"), f"{where}.crossover", optional=True),
        until_decided=_recorded_design(rd, m.get("until_decided"), f"{where}.until_decided"),
        seed=integer("seed"),
        inner_loops=integer("inner_loops"),
        inner_loops_by_block=None
        if by_block is None
        else tuple(
            rd.integer(n, f"{where}.inner_loops_by_block[{i}]", optional=True)
            for i, n in enumerate(by_block)
        ),
        analysis=_recorded_analysis(rd, m.get("analysis"), f"{where}.analysis"),
        unknown=_unknown(m, _PLAN_KEYS),
    )


def _benchmark(rd: _Reader, raw: Any, where: str) -> BenchmarkRecord:
    m = rd.obj(raw, where)
    rd.keys(m, where, _BENCH_FIELDS, {"name", "runs"}, tolerate=True)
    name = rd.string(m["name"], f"{where}.name")
    assert name is not None
    where = f"{where} ({name!r})"
    runs_raw = m["runs"]
    if not isinstance(runs_raw, list):
        raise rd.fail(f"{where}.runs", f"expected a list of runs, got {_kind(runs_raw)}")
    runs = tuple(_run(rd, r, f"{where}.runs[{i}]") for i, r in enumerate(runs_raw))
    analysis = m.get("analysis")
    if analysis is not None:
        analysis = rd.obj(analysis, f"{where}.analysis")
        rd.keys(analysis, f"{where}.analysis", set(KEYS), set(), tolerate=True)
    return BenchmarkRecord(
        name=name,
        runs=runs,
        kind=rd.string(m.get("kind"), f"{where}.kind", optional=True),
        method=rd.choice(m.get("method", "duet"), f"{where}.method", METHODS),
        versions=rd.free(m.get("versions"), f"{where}.versions"),
        settings=_plan(rd, m.get("settings"), f"{where}.settings"),
        analysis=None if analysis is None else AnalysisBlock.from_dict(analysis),
        note=rd.string(m.get("note"), f"{where}.note", optional=True),
    )


def from_dict(data: Any, *, source: str = "<results>") -> ResultsDocument:
    """Validate a parsed JSON value and build the document; raises :class:`ResultsError`."""
    rd = _Reader(source)
    m = rd.obj(data, "top level")
    schema = m.get("schema")
    if not isinstance(schema, str):
        raise rd.fail(
            "schema",
            "missing or not a string; this is not a duet results document",
            f'a duet results file starts with {{"schema": "{SCHEMA}", ...}}',
        )
    family, _, version = schema.partition("/")
    if family != SCHEMA_FAMILY or not version.isdigit():
        raise rd.fail("schema", f"{schema!r} is not a duet results schema (expected {SCHEMA!r})")
    if int(version) > SCHEMA_VERSION:
        raise rd.fail(
            "schema",
            f"written by a newer duet ({schema}); this duet reads up to {SCHEMA}",
            "upgrade: pip install --upgrade duet-bench",
        )
    if int(version) not in READABLE_VERSIONS:
        raise rd.fail("schema", f"{schema!r} is not a known version")
    rd.keys(m, "top level", _DOC_FIELDS, {"schema", "benchmarks"}, tolerate=True)
    raw_benchmarks = m["benchmarks"]
    if not isinstance(raw_benchmarks, list):
        raise rd.fail("benchmarks", f"expected a list, got {_kind(raw_benchmarks)}")
    benchmarks = tuple(_benchmark(rd, b, f"benchmarks[{i}]") for i, b in enumerate(raw_benchmarks))
    names = [b.name for b in benchmarks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise rd.fail("benchmarks", f"the name {dupes[0]!r} appears more than once")
    if rd.ignored:
        # Another tool's annotations (the accuracy study's "accuracy_cell") or a newer duet's
        # fields: nothing measured depends on them, so they cost a warning, not the file.
        shown = "; ".join(rd.ignored[:5]) + (
            f"; and {len(rd.ignored) - 5} more" if len(rd.ignored) > 5 else ""
        )
        log.warning(
            "%s: ignored fields this duet does not know (%s): they are read by nothing here and "
            "left out of any file duet writes from it",
            source,
            shown,
        )
    return ResultsDocument(
        schema=SCHEMA,
        benchmarks=benchmarks,
        tool=rd.free(m.get("tool"), "tool"),
        created=rd.string(m.get("created"), "created", optional=True),
        environment=rd.free(m.get("environment"), "environment"),
        config=rd.free(m.get("config"), "config"),
        state=rd.free(m.get("state"), "state"),
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
