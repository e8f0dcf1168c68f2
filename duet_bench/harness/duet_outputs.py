"""What a benchmark tool printed, turned into one duet sample (standard library only).

The worker runs a suite adapter's iteration (one invocation of the benchmark tool for one benchmark)
with its stdout in a file, then calls :func:`parse` with the worker spec's ``"output"`` and
that text. The sample is the tool's own time per operation, not the process's wall time:
the start-up of the binary, its warm-up and its calibration are not in it.

``parse`` returns ``(real_ns, cpu_ns)``: the real (wall-clock) time per operation, and the CPU
time per operation when there is one, else None. Both are rounded to whole nanoseconds, at
least 1 (a sample line needs a positive ``duration_ns``). ``process_cpu_ns`` is the CPU time
of the whole invocation (user + system, from ``wait4``), which a format that runs a fixed
number of operations divides by that number.

Formats:

- ``google-benchmark``: ``--benchmark_format=json``; the entries of ``benchmarks`` with
  ``run_type`` ``iteration`` (one, or one per repetition: their mean), their ``real_time`` and
  ``cpu_time`` in their ``time_unit``. A benchmark whose name ends in ``/real_time`` or
  ``/manual_time`` (``UseRealTime``, ``UseManualTime``) is the real (or manual) time only: its
  author said that figure is the measure, and its ``cpu_time`` (the main thread's) is not.
- ``go``: ``go test -bench`` text; the result line ``BenchmarkName[-P]  N  X ns/op ...``; the
  figures after it (``B/op``, ``allocs/op``, ``MB/s``, ``b.ReportMetric``'s units) by
  :func:`figures`.
- ``criterion``: ``--output-format bencher``; ``test NAME ... bench:  X ns/iter (+/- D)``;
  criterion's own timing, no CPU time.
- ``criterion-calls/N``: the same line, from an invocation that ran a fixed ``N`` calls of the
  benchmark's routine (``duet_bench/adapters/cargo.py``); the CPU time per operation is the
  invocation's CPU time divided by ``N`` (its start-up and criterion's analysis included, the
  same on both sides).

Every problem raises :class:`OutputError` saying what was expected and quoting what came.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMATS = ("google-benchmark", "go", "criterion", "criterion-calls/N")

#: ``criterion-calls/N``: the fixed number of calls of the invocation.
_CRITERION_CALLS = re.compile(r"criterion-calls/([1-9][0-9]*)")

_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

#: ``BenchmarkParse-2  100  12345 ns/op  48 B/op  1 allocs/op`` (the -P suffix is
#: GOMAXPROCS): the name, the operation count, then ``value unit`` figures, which Go separates
#: by tabs (``testing.BenchmarkResult.String`` and ``MemString``).
_GO_LINE = re.compile(r"^(Benchmark\S*)[ \t]+(\d+)((?:[ \t]+[0-9.eE+-]+ \S+)+)[ \t]*$", re.M)
_GO_FIGURE = re.compile(r"[ \t]+([0-9.eE+-]+) (\S+)")
#: ``test parse ... bench:      27,551 ns/iter (+/- 1,120)`` (libtest's format; criterion's
#: bencher output prints the number without the thousands separators, libtest with them).
_BENCHER_LINE = re.compile(r"^test (.+?) \.\.\. bench:\s+([0-9,._]+) ns/iter\b", re.M)


class OutputError(Exception):
    """The benchmark tool's output holds no usable result."""


def _quote(text: str, limit: int = 600) -> str:
    text = text.strip()
    if not text:
        return "(nothing)"
    return text if len(text) <= limit else "..." + text[-limit:]


def _positive_ns(value: float) -> int:
    return max(1, round(value))


def known(output: str) -> bool:
    """Whether ``output`` names a format of :data:`FORMATS` (``criterion-calls/N`` with a
    positive N)."""
    return output in FORMATS[:-1] or _CRITERION_CALLS.fullmatch(output) is not None


def parse(output: str, text: str, process_cpu_ns: int | None = None) -> tuple[int, int | None]:
    """``(real_ns, cpu_ns or None)`` per operation from ``text`` in the format ``output``;
    ``process_cpu_ns`` is the invocation's CPU time, for the formats that use it."""
    if output == "google-benchmark":
        return google_benchmark(text)
    if output == "go":
        return go(text), None
    if output == "criterion":
        return criterion(text), None
    calls = _CRITERION_CALLS.fullmatch(output)
    if calls is not None:
        real_ns = criterion(text)
        if process_cpu_ns is None:
            return real_ns, None
        return real_ns, _positive_ns(process_cpu_ns / int(calls.group(1)))
    raise OutputError(f"unknown output format {output!r}; known: {', '.join(FORMATS)}")


def google_benchmark(text: str) -> tuple[int, int | None]:
    try:
        data: Any = json.loads(text)
    except ValueError as error:
        raise OutputError(
            f"Google Benchmark printed no JSON ({error}); its output: {_quote(text)}"
        ) from None
    entries = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise OutputError(f"Google Benchmark's JSON has no 'benchmarks' list: {_quote(text)}")
    # Aggregates (_mean, _median, _stddev, _cv and the benchmark's own statistics) are rows
    # of run_type "aggregate": summaries of the repetitions, not results of their own.
    runs = [
        e for e in entries if isinstance(e, dict) and e.get("run_type", "iteration") == "iteration"
    ]
    if not runs:
        # ReportAggregatesOnly(true) in the benchmark's code prints the aggregates only: the
        # "mean" one is the mean of the repetitions, the figure the rows would have given.
        runs = [
            e
            for e in entries
            if isinstance(e, dict)
            and e.get("run_type") == "aggregate"
            and e.get("aggregate_name") == "mean"
        ]
    for e in runs:
        if e.get("error_occurred"):
            raise OutputError(
                f"the benchmark {e.get('name')!r} reported an error: {e.get('error_message')}"
            )
    names = {str(e.get("run_name", e.get("name"))) for e in runs}
    if len(names) != 1:
        raise OutputError(
            f"expected the result of one benchmark, got {len(names)} "
            f"({', '.join(sorted(names)) or 'none'}): the filter must select exactly one"
        )
    real_ns = cpu_ns = 0.0
    for entry in runs:
        # Repetitions (the benchmark's own Repetitions(n)): their mean, as the library's
        # "_mean" aggregate would say.
        scale = _UNIT_NS.get(str(entry.get("time_unit", "ns")))
        real, cpu = _time(entry.get("real_time")), _time(entry.get("cpu_time"))
        if scale is None or real is None or cpu is None:
            raise OutputError(
                "the result has no usable real_time, cpu_time and time_unit: "
                f"{_quote(json.dumps(entry))}"
            )
        real_ns += real * scale / len(runs)
        cpu_ns += cpu * scale / len(runs)
    if real_time_only(names.pop()):
        return _positive_ns(real_ns), None
    return _positive_ns(real_ns), _positive_ns(cpu_ns)


def real_time_only(name: str) -> bool:
    """Whether the Google Benchmark ``name`` is measured in real or manual time
    (``UseRealTime()``, ``UseManualTime()``: the library appends ``/real_time`` or
    ``/manual_time``, before ``/threads:N`` when there is one)."""
    return any(part in ("real_time", "manual_time") for part in name.split("/")[1:])


def _time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return float(value)


def go(text: str) -> int:
    return _positive_ns(go_result(text)[0])


def go_result(text: str) -> tuple[float, dict[str, float]]:
    """The ``ns/op`` of the one result line of ``go test -bench`` output, and every other figure
    on it by its unit: ``B/op`` and ``allocs/op`` (``-benchmem``, ``b.ReportAllocs``), ``MB/s``
    (``b.SetBytes``), and the units of ``b.ReportMetric``."""
    found = _GO_LINE.findall(text)
    if len(found) != 1:
        if not found:
            why = (
                "no result line: the benchmark was skipped (b.Skip), failed (b.Fatal, a panic: "
                "see its output), or its name did not match the pattern"
            )
        else:
            names = ", ".join(name for name, _, _ in found)
            why = (
                f"{len(found)} result lines ({names}): the pattern selected more than one benchmark"
            )
        raise OutputError(
            f"expected one 'BenchmarkName  N  X ns/op' line from go test, got {why}; its "
            f"output: {_quote(text)}"
        )
    figures: dict[str, float] = {}
    for value, unit in _GO_FIGURE.findall(found[0][2]):
        try:
            figures[unit] = float(value)
        except ValueError:
            continue
    ns = figures.pop("ns/op", None)
    if ns is None:
        raise OutputError(
            f'go test printed no ns/op for {found[0][0]} (b.ReportMetric(0, "ns/op") removes '
            "it): duet's sample is the time per operation; remove that call or give the "
            f"benchmark a time. Its result line: {_quote(found[0][0] + found[0][2])}"
        )
    return ns, figures


def operations(output: str, text: str) -> int | None:
    """The operation count the tool reports for the invocation (``go``: the count on its
    result line, which ``-test.benchtime Nx`` fixes), else None. Call after :func:`parse`."""
    if output == "go":
        return int(_GO_LINE.findall(text)[0][1]) or None
    return None


def figures(output: str, text: str) -> dict[str, float]:
    """The figures the tool printed beside the time (``go``: B/op, allocs/op, MB/s and
    b.ReportMetric's units), by unit; empty for the other formats. Call after :func:`parse`."""
    if output == "go":
        return go_result(text)[1]
    return {}


def criterion(text: str) -> int:
    found = _BENCHER_LINE.findall(text)
    if len(found) != 1:
        what = "no result line" if not found else f"{len(found)} result lines"
        raise OutputError(
            "expected one 'test NAME ... bench: X ns/iter' line from criterion "
            f"(--output-format bencher), got {what}; its output: {_quote(text)}"
        )
    return _positive_ns(float(found[0][1].replace(",", "").replace("_", "")))
