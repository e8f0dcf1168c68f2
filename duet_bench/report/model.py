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
    isolation_line,
    metric_line,
    row,
    summary_sentence,
    title,
)
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.results.completeness import Completeness, completeness

__all__ = ["Report", "report_of"]


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

    @property
    def incomplete(self) -> str | None:
        """``interrupted after 12 of 40 runs (...)`` for an incomplete document, else None."""
        return self.completeness.sentence

    @property
    def benchmarks(self) -> tuple[tuple[BenchmarkRecord, Row], ...]:
        """Each benchmark's record beside its row."""
        return tuple(zip(self.doc.benchmarks, self.rows, strict=True))

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


def report_of(doc: ResultsDocument) -> Report:
    """The report of an analysed document, computed once for every format."""
    items = [row(b) for b in doc.benchmarks]
    shared = common_confidence(items)
    threshold = next((r.threshold for r in items if r.threshold is not None), None)
    return Report(
        doc=doc,
        rows=tuple(items),
        completeness=completeness(doc),
        title=title(items),
        summary=summary_sentence(items),
        metric_line=metric_line(items, doc),
        confidence=shared,
        confidence_text=None if shared is None else units.percent(shared),
        isolation=isolation_line(doc),
        affinity_only=doc.environment.get("isolation") == "affinity-only",
        versions=_versions(doc),
        threshold=threshold,
        threshold_text=None if threshold is None else units.sig(threshold * 100) + "%",
    )
