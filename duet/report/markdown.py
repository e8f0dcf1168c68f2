"""The markdown report: what the pull-request comment carries.

A headline (counts per verdict), the benchmarks that changed or could not be decided, the full
table folded in ``<details>``, the commits compared and the machine in one line. Every string
that comes from the measured code goes through :func:`duet.report.escape.markdown_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duet import units
from duet.report.escape import markdown_text
from duet.report.rows import (
    Row,
    common_confidence,
    headline,
    isolation_line,
    metric_line,
    ratio_cell,
    ratio_header,
    rows,
)
from duet.results import ResultsDocument

_ICON = {
    "regression": "🔴",
    "improvement": "🟢",
    "inconclusive": "🟡",
    "no change": "⚪",
    "no verdict": "⚫",
}


def _table(items: list[Row], shared: float | None) -> list[str]:
    other = any(r.other for r in items)
    out = [
        f"| benchmark | baseline | candidate | change | {ratio_header(shared)} | verdict |"
        + (" other metric |" if other else ""),
        "|---|---:|---:|---:|---|---|" + ("---|" if other else ""),
    ]
    for r in items:
        out.append(
            f"| {markdown_text(r.name)} | {r.baseline} | {r.candidate} | {r.change} | "
            f"{ratio_cell(r, shared)} | {_ICON.get(r.verdict, '')} {r.verdict} |"
            # Built by duet from numbers and fixed words: nothing to escape.
            + (f" {r.other} |" if other else "")
        )
    return out


def _commits(doc: ResultsDocument) -> str | None:
    versions: Mapping[str, Any] = doc.config.get("versions") or {}
    base = versions.get("baseline") if isinstance(versions, Mapping) else None
    head = versions.get("candidate") if isinstance(versions, Mapping) else None
    if not isinstance(base, Mapping) or not isinstance(head, Mapping):
        return None

    def label(v: Mapping[str, Any]) -> str:
        # A results file is outside input: the commit is escaped like any other text.
        sha = markdown_text(str(v.get("commit") or "")[:12])
        ref = v.get("ref")
        text = markdown_text(str(ref)) if ref else ""
        return f"{text} ({sha})" if text and sha else (text or sha or "?")

    return f"baseline {label(base)} → candidate {label(head)}"


def render_markdown(doc: ResultsDocument) -> str:
    items = rows(doc)
    shared = common_confidence(items)
    out = ["## duet: " + headline(items), ""]
    changed = [r for r in items if r.changed]
    if changed:
        out += _table(changed, shared)
        out.append("")
    else:
        out += ["No benchmark changed beyond the threshold.", ""]
    notes = [
        f"- **{markdown_text(r.name)}**: {markdown_text(r.note, limit=400)}"
        for r in items
        if r.note
    ]
    notes += [
        f"- **{markdown_text(r.name)}**: {markdown_text(r.interference)}"
        for r in items
        if r.interference
    ]
    if notes:
        out += ["Notes:", "", *notes, ""]
    out += [
        "<details><summary>All benchmarks</summary>",
        "",
        *_table(items, shared),
        "",
        "</details>",
        "",
    ]
    iso = isolation_line(doc)
    decided = metric_line(items, doc)
    facts = [
        f
        for f in (
            _commits(doc),
            markdown_text(iso, limit=None) if iso else None,
            markdown_text(decided, limit=None) if decided else None,
        )
        if f
    ]
    threshold = next((b.analysis.get("threshold") for b in doc.benchmarks if b.analysis), None)
    if threshold is not None:
        facts.append(f"threshold {units.sig(float(threshold) * 100)}%")
    if facts:
        out.append("<sub>" + " · ".join(facts) + "</sub>")
    if doc.environment.get("isolation") == "affinity-only":
        out += [
            "",
            "> [!WARNING]",
            "> affinity-only isolation: CPU time of orphaned children and peak memory "
            "are unreliable.",
        ]
    return "\n".join(out) + "\n"
