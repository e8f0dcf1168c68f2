"""The report built once from an analysed document: every figure and sentence the renderers
show (:class:`Report`, :func:`report_of`).

The renderers (``text``, ``markdown``, ``junit``, ``openmetrics``, ``html``) take a
:class:`Report` and only lay it out: what the document says (the rows, whether it is complete,
the title, the summary sentence, which metric decided, the common confidence, the isolation, the
versions) is computed here once, not once per format. What a format needs to escape (markdown,
XML, HTML, the terminal) stays in that format's renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from duet_bench import units
from duet_bench.report.rows import (
    Row,
    common_confidence,
    metric_line,
    row,
    summary_sentence,
    title,
)
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.results.completeness import Completeness, completeness

__all__ = ["BenchmarkView", "Report", "isolation_line", "measured_ns", "report_of"]


@dataclass(frozen=True, slots=True)
class BenchmarkView:
    """What a report shows of one benchmark beyond its :class:`Row`: how long it was measured
    and what its record says of itself (the JUnit report's test case)."""

    row: Row
    #: Seconds spent measuring it (:func:`measured_ns`), 3 significant digits, or None.
    measured_s: str | None
    #: At least one run succeeded.
    ok_runs: bool
    #: The record's own note (why it was not measured), or None.
    record_note: str | None
    #: Iterations per run, as the analysis counted them, or None.
    iterations: int | None
    #: The analysis note as it stands (the row splits it into notes and details), or None.
    analysis_note: str | None


@dataclass(frozen=True, slots=True)
class Report:
    """An analysed results document as every report shows it (:func:`report_of` builds it)."""

    #: The document itself: what one format alone shows (junit's run times, openmetrics'
    #: numbers at full precision, the json report).
    doc: ResultsDocument
    #: One row per benchmark, in the document's order.
    rows: tuple[Row, ...]
    #: Runs done and planned, and why it stopped.
    completeness: Completeness
    #: ``parse-json 5.00% slower``, ``no change in 6 benchmarks``.
    title: str
    #: The summary sentence with the names as they are (a format escapes them: :meth:`sentence`).
    summary: str
    #: ``decided by CPU time: both sides CPU-bound``, or None.
    metric_line: str | None
    #: The confidence level every row shares, or None when they differ.
    confidence: float | None
    #: ``99%``: :attr:`confidence` as the reports print it, or None.
    confidence_text: str | None
    #: ``isolation cgroup-v2, AMD EPYC (2 CPUs), cores 0,1``, or None.
    isolation: str | None
    #: The isolation was affinity only (no cgroups): every format warns.
    affinity_only: bool
    #: The versions' records (``ref``, ``commit``) of BASE and HEAD, or None for ``duet run``.
    versions: tuple[Mapping[str, Any], Mapping[str, Any]] | None
    #: The first benchmark's threshold, as a fraction, or None.
    threshold: float | None
    #: ``5%``: :attr:`threshold` in percent with 3 significant digits, or None.
    threshold_text: str | None
    #: One view per benchmark, beside its row (:attr:`rows`), in the document's order.
    benchmarks: tuple[BenchmarkView, ...]
    #: Seconds spent measuring every benchmark (``0`` when nothing was recorded).
    measured_s: str

    @property
    def incomplete(self) -> str | None:
        """``interrupted after 12 of 40 runs (...)`` for an incomplete document, else None."""
        return self.completeness.sentence

    def sentence(self, name: Callable[[str], str]) -> str:
        """The summary sentence with every benchmark name formatted by ``name`` (markdown makes
        it bold and escapes it)."""
        return summary_sentence(list(self.rows), name=name)

    def short_names(self, width: int) -> list[str]:
        """Every row's name within ``width`` characters, shortened where the names are alike
        (:func:`duet_bench.units.differing_name`)."""
        return [units.differing_name(r.name, width) for r in self.rows]

    def tool_version(self) -> str | None:
        """The duet that wrote the document, or None."""
        version = self.doc.tool.get("version")
        return str(version) if version else None


def _versions(doc: ResultsDocument) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    versions: Any = doc.config.get("versions") or {}
    if not isinstance(versions, Mapping):
        return None
    base, head = versions.get("baseline"), versions.get("candidate")
    if not isinstance(base, Mapping) or not isinstance(head, Mapping):
        return None
    return base, head


def isolation_line(doc: ResultsDocument) -> str | None:
    """``isolation cgroup-v1, AMD EPYC (2 CPUs), cores 0,1`` from the environment record."""
    env = doc.environment
    bits = []
    if env.get("isolation"):
        bits.append(f"isolation {env['isolation']}")
    cpu = env.get("cpu")
    if isinstance(cpu, Mapping) and cpu.get("model"):
        bits.append(f"{cpu['model']} ({cpu.get('online', '?')} CPUs)")
    elif env.get("machine_kind"):
        bits.append(str(env["machine_kind"]))
    pair = env.get("pair")
    if isinstance(pair, Mapping) and pair.get("cpus"):
        bits.append("cores " + ",".join(str(c) for c in pair["cpus"]))
    return ", ".join(bits) if bits else None


def measured_ns(b: BenchmarkRecord) -> int | None:
    """Time spent measuring ``b``: per run the recorded wall time, else its iterations.

    The two sides of a duet run at the same time, so a run lasts as long as the slower side;
    the sequential method runs them one after the other, so there the sides add up. None when
    nothing was recorded.
    """
    total = 0
    known = False
    for r in b.runs:
        sides = (r.baseline, r.candidate)
        walls = [s.wall_ns for s in sides if s.wall_ns is not None]
        if len(walls) == 2:
            spans = walls
        else:
            spans = [sum(s.warmup_ns) + sum(s.iterations_ns) for s in sides]
        if not any(spans):
            continue
        known = True
        total += sum(spans) if b.method == "sequential" else max(spans)
    return total if known else None


def _seconds(ns: int) -> str:
    return units.sig(ns / 1e9)


def _view(b: BenchmarkRecord, r: Row, ns: int | None) -> BenchmarkView:
    a = b.analysis
    return BenchmarkView(
        row=r,
        measured_s=None if ns is None else _seconds(ns),
        ok_runs=bool(b.ok_runs()),
        record_note=b.note,
        iterations=None if a is None else a.iterations,
        analysis_note=None if a is None else a.note,
    )


def report_of(doc: ResultsDocument) -> Report:
    """The report of an analysed document, computed once for every format."""
    items = [row(b) for b in doc.benchmarks]
    spans = [measured_ns(b) for b in doc.benchmarks]
    views = tuple(map(_view, doc.benchmarks, items, spans))
    shared = common_confidence(items)
    threshold = next((r.threshold for r in items if r.threshold is not None), None)
    return Report(
        doc=doc,
        rows=tuple(items),
        completeness=completeness(doc),
        title=title(items),
        summary=summary_sentence(items),
        metric_line=metric_line(items),
        confidence=shared,
        confidence_text=None if shared is None else units.percent(shared),
        isolation=isolation_line(doc),
        affinity_only=doc.environment.get("isolation") == "affinity-only",
        versions=_versions(doc),
        threshold=threshold,
        threshold_text=None if threshold is None else units.sig(threshold * 100) + "%",
        benchmarks=views,
        measured_s=_seconds(sum(ns for ns in spans if ns is not None)),
    )
