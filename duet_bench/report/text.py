"""The terminal report: one aligned row per benchmark, then the notes."""

from __future__ import annotations

import click

from duet_bench.report.rows import (
    common_confidence,
    isolation_line,
    metric_line,
    ratio_cell,
    ratio_header,
    rows,
    summary_sentence,
)
from duet_bench.results import ResultsDocument
from duet_bench.results.completeness import completeness
from duet_bench.units import short_name
from duet_bench.untrusted import for_terminal

_COLORS = {"regression": "red", "improvement": "green", "inconclusive": "yellow"}


def table(header: list[str], body: list[list[str]], *, right: set[int]) -> list[str]:
    """Aligned columns separated by two spaces; columns in ``right`` are right-aligned."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(line: list[str]) -> str:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ]
        return "  ".join(cells).rstrip()

    return [fmt(header), *(fmt(line) for line in body)]


def render_text(doc: ResultsDocument, *, color: bool = False) -> str:
    items = rows(doc)
    shared = common_confidence(items)
    header = [
        "benchmark",
        "runs",
        "baseline",
        "candidate",
        ratio_header(shared),
        "change",
        "verdict",
    ]
    body = [
        [
            short_name(r.name),
            r.runs,
            r.baseline,
            r.candidate,
            ratio_cell(r, shared),
            r.change,
            r.verdict,
        ]
        for r in items
    ]
    if any(r.other for r in items):
        # Both metrics are always analysed: the one that did not decide is shown beside.
        header.append("other metric")
        for line, r in zip(body, items, strict=True):
            line.append(r.other)
    lines = [for_terminal(line) for line in table(header, body, right={1, 2, 3, 5})]
    if color:
        for i, r in enumerate(items, start=1):
            fg = _COLORS.get(r.verdict)
            if fg:
                lines[i] = click.style(lines[i], fg=fg, bold=r.verdict == "regression")
    incomplete = completeness(doc).sentence
    out = (
        [f"INCOMPLETE: {for_terminal(incomplete)}", "", *lines, ""] if incomplete else [*lines, ""]
    )
    notes = [f"  {short_name(r.name)}: {r.note}" for r in items if r.note]
    notes += [f"  {short_name(r.name)}: {r.interference}" for r in items if r.interference]
    if notes:
        out += ["notes:", *map(for_terminal, notes), ""]
    decided = metric_line(items, doc)
    if decided:
        out.append(decided)
    iso = isolation_line(doc)
    if iso:
        out.append(iso)
    out.append(for_terminal(summary_sentence(items)))
    if doc.environment.get("isolation") == "affinity-only":
        out.append(
            "WARNING: affinity-only isolation: no cgroups, so CPU time of orphaned children and "
            "peak memory are unreliable"
        )
    return "\n".join(out) + "\n"
