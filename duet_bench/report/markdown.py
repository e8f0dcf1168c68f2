"""The markdown report: what the pull-request comment carries.

A headline (counts per verdict), the benchmarks that changed or could not be decided, the full
table folded in ``<details>``, the commits compared and the machine in one line. Every string
that comes from the measured code goes through :func:`duet_bench.report.escape.markdown_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duet_bench import units
from duet_bench.report.escape import markdown_text
from duet_bench.report.rows import (
    Row,
    common_confidence,
    headline,
    isolation_line,
    metric_line,
    rows,
    summary_sentence,
)
from duet_bench.results import ResultsDocument
from duet_bench.results.completeness import completeness

_ICON = {
    "regression": "🔴",
    "improvement": "🟢",
    "inconclusive": "🟡",
    "no change": "⚪",
    "no verdict": "⚫",
}


def _table(items: list[Row], shared: float | None) -> list[str]:
    other = any(r.other for r in items)
    level = f" [{units.percent(shared)} CI]" if shared is not None else " [CI]"
    out = [
        f"| benchmark | baseline | candidate | change{level} | verdict |"
        + (" other metrics |" if other else ""),
        "|---|---:|---:|---|---|" + ("---|" if other else ""),
    ]
    for r in items:
        change = r.change if r.change_interval == "n/a" else f"{r.change} {r.change_interval}"
        if shared is None and r.confidence is not None and r.change_interval != "n/a":
            change += f" {units.percent(r.confidence)}"
        out.append(
            f"| {markdown_text(r.name)} | {r.baseline} | {r.candidate} | {change} | "
            f"{_ICON.get(r.verdict, '')} {r.verdict} |" + (f" {r.other} |" if other else "")
            # Built by duet from numbers and fixed words: nothing to escape.
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
    """The sentence a reviewer reads first, the table of what changed (or could not be
    decided), the notes, every benchmark folded away when there is more to see, and the machine
    in one line."""
    items = rows(doc)
    shared = common_confidence(items)
    out = [
        "## duet: " + headline(items),
        "",
    ]
    incomplete = completeness(doc).sentence
    if incomplete:
        out += [f"**Incomplete:** {markdown_text(incomplete, limit=600)}", ""]
    out += [
        summary_sentence(items, name=lambda n: f"**{markdown_text(n)}**"),
        "",
    ]
    changed = [r for r in items if r.changed]
    if changed:
        out += _table(changed, shared)
        out.append("")
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
    if len(changed) < len(items):
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
