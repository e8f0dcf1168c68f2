"""Reading a results document with validation: strict where a typo would silently change a
result (unknown keys in runs and sides, non-integer or non-positive samples), lenient where the
content is descriptive (``environment``, ``config``, ``versions``, ``analysis`` read into its
record by :mod:`duet_bench.results.analysis`; other unknown fields ignored with one warning);
every error names the field and the fix. A gzip-compressed file is read as if uncompressed."""

from __future__ import annotations

import gzip
import json
import logging
import os
import stat
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from duet_bench.errors import ResultsError
from duet_bench.limits import MAX_COUNTER, MAX_RESULTS_BYTES, MAX_SAMPLE_NS, show
from duet_bench.manual import cite
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

log = logging.getLogger(__name__)


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
    figures = None
    if m.get("figures") is not None:
        figures = {}
        for unit, value in rd.obj(m["figures"], f"{where}.figures").items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise rd.fail(f"{where}.figures.{unit}", f"expected a number, got {value!r}")
            figures[str(unit)] = float(value)
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
        settings=rd.free(m.get("settings"), f"{where}.settings"),
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


_GZIP_MAGIC = b"\x1f\x8b"


class _NonFiniteNumber(ValueError):
    """``NaN`` or ``Infinity`` in a file: Python's json accepts them, duet never writes them."""


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


def _gunzip(raw: bytes, p: Path) -> bytes:
    """``raw`` decompressed, refused once it grows past the size duet reads (a small .gz can
    hold gigabytes)."""
    out = zlib.decompressobj(wbits=31)  # 31: the gzip container
    data = out.decompress(raw, MAX_RESULTS_BYTES + 1)
    if not out.eof and len(data) <= MAX_RESULTS_BYTES:
        raise ResultsError(
            f"{p}: a gzip file that cannot be decompressed (it ends before its gzip trailer)",
            fix="the file was cut short or damaged; restore it from the CI artifact",
        )
    if len(data) > MAX_RESULTS_BYTES:
        raise ResultsError(
            f"{p}: decompresses to over the {MAX_RESULTS_BYTES // 2**20} MiB that duet reads in a "
            f"results file ({cite('configuration.md')}, Limits)",
            fix="split the suite with duet compare --shard i/N, or measure fewer runs "
            "or iterations",
        )
    return data


def load(
    path: str | os.PathLike[str], *, opener: Callable[[Path], int] | None = None
) -> ResultsDocument:
    """Read and validate a results file.

    ``opener`` opens it read-only and returns the descriptor (default: ``os.open`` by this
    process); :func:`load_given` passes one that opens as the invoking user.

    Raises
    ------
    ResultsError
        The file is missing, unreadable, truncated, not JSON, from a newer schema or has a
        wrong field; the message names the field and the fix.
    """
    p = Path(path)
    try:
        fd = (opener or _open_read_only)(p)
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_RESULTS_BYTES:
                raise ResultsError(
                    f"{p}: {size / 2**20:,.0f} MiB, over the {MAX_RESULTS_BYTES // 2**20} MiB "
                    f"that duet reads in a results file ({cite('configuration.md')}, Limits)",
                    fix="a file that large was not written by duet within its limits (runs, "
                    "iterations); split the suite with duet compare --shard i/N, or measure "
                    "fewer runs or iterations",
                )
            raw = f.read(MAX_RESULTS_BYTES + 1)  # a file that grew since: the gzip check says
        if raw[:2] == _GZIP_MAGIC:
            # By content, not by name: results.json.gz, or one renamed to results.json.
            raw = _gunzip(raw, p)
        text = raw.decode("utf-8")
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ResultsError(
            f"{p}: a gzip file that cannot be decompressed ({e})",
            fix="the file was cut short or damaged; restore it from the CI artifact",
        ) from None
    except FileNotFoundError:
        raise ResultsError(
            f"{p}: no such file", fix="give the path of a results.json written by duet"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{p}: cannot read it: {e}") from None
    if not text.strip():
        raise ResultsError(f"{p}: the file is empty", fix="re-run the benchmark that wrote it")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except _NonFiniteNumber as e:
        raise ResultsError(
            f"{p}: holds {e.args[0]}, which is not a JSON number and never written by duet",
            fix="the file was edited or produced by another tool; re-run the benchmark",
        ) from None
    except RecursionError:
        raise ResultsError(
            f"{p}: nested too deeply to be a results document",
            fix="give the path of a results.json written by duet",
        ) from None
    except ValueError as e:
        if not isinstance(e, json.JSONDecodeError):
            # Integers over sys.get_int_max_str_digits() digits, which duet never writes.
            raise ResultsError(
                f"{p}: not a results document: {e}",
                fix="give the path of a results.json written by duet",
            ) from None
        truncated = e.pos >= len(text.rstrip()) - 1
        what = "truncated" if truncated else "not valid JSON"
        raise ResultsError(
            f"{p}: {what} (line {e.lineno}, column {e.colno}: {e.msg})",
            fix="the file was cut short or edited by hand; restore it from the CI artifact or "
            "re-run the benchmark",
        ) from None
    return from_dict(data, source=str(p))


def _open_read_only(p: Path) -> int:
    return os.open(p, os.O_RDONLY | os.O_CLOEXEC)


def load_given(path: str | os.PathLike[str]) -> ResultsDocument:
    """The results document at ``path``, a path the user gave on the command line.

    A directory is the ``--out DIR`` of the command that wrote it: its results.json is read.
    A path that names no results file, a directory without one as much as a missing file, is
    the same failure for every command that reads results (exit 3: the input is unreadable,
    which in CI means that the step that should have written it did not).

    Root under ``sudo`` opens it, the directory test included, as the user who ran sudo
    (:func:`duet_bench.isolation.privileges.open_as_invoking_user`): a link in the path leads
    only where that user may read (docs/isolation.md, "What runs as root").
    """
    from duet_bench.isolation.privileges import open_as_invoking_user

    given = Path(path)
    try:
        fd = open_as_invoking_user(given)
    except OSError:  # missing or unreadable: load opens it again and says which, in its words
        return load(given, opener=open_as_invoking_user)
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        return load(given, opener=lambda _p: fd)
    os.close(fd)

    def in_directory(p: Path) -> int:
        try:
            return open_as_invoking_user(p)
        except FileNotFoundError:
            raise ResultsError(
                f"{given} is a directory without a results.json",
                fix="give the --out DIR that duet run, compare or merge wrote, or its results.json",
            ) from None

    # load names the file, not the directory, in every error it raises.
    return load(given / "results.json", opener=in_directory)


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
