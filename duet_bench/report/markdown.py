"""The markdown report: what the pull-request comment carries.

Above the fold, in the order a reviewer reads: a title that says what happened, one sentence
(what changed, by how much, how sure), BASE and HEAD with their commits, which metric decided
and why, then a BASE | HEAD | change | interval | verdict table of the benchmarks that changed,
could not be decided or had a failed run, and what would decide an inconclusive one. Folded:
every benchmark with the metrics that did not decide, the notes no reader acts on
(winsorization), and the machine. Every string that comes from the measured code goes through
:func:`duet_bench.report.escape.markdown_text`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from duet_bench.report.escape import markdown_text
from duet_bench.report.model import Report
from duet_bench.report.rows import Row

_ICON = {
    "regression": "🔴",
    "improvement": "🟢",
    "inconclusive": "🟡",
    "no change": "⚪",
    "no verdict": "⚫",
}
#: The fold with every benchmark: :func:`duet_bench.ci.body.fit` drops it first when a comment
#: is too long, so its first line is fixed.
ALL_BENCHMARKS = "<details><summary>All benchmarks</summary>"


def _table(items: Sequence[Row], shared: str | None, *, others: bool) -> list[str]:
    """BASE | HEAD | change | interval | verdict, and with ``others`` the metrics that did not
    decide (the deciding metric is the one the numbers come from); ``shared`` is the
    confidence every row shares (``99%``), else None."""
    other = others and any(r.other for r in items)
    level = f"{shared} interval" if shared is not None else "interval"
    out = [
        f"| benchmark | BASE | HEAD | change | {level} | verdict |"
        + (" other metrics |" if other else ""),
        "|---|---:|---:|---:|---|---|" + ("---|" if other else ""),
    ]
    for r in items:
        interval = "" if r.change_interval == "n/a" else r.change_interval
        if shared is None and r.confidence_text and interval:
            interval += f" {r.confidence_text}"
        verdict = f"{_ICON.get(r.verdict, '')} {r.verdict}"
        if r.runs_failed:
            verdict += f" ({r.runs_failed} failed run{'s' if r.runs_failed > 1 else ''})"
        out.append(
            f"| {markdown_text(r.name)} | {r.baseline} | {r.candidate} | {r.change} | "
            f"{interval} | {verdict} |" + (f" {r.other} |" if other else "")
            # Built by duet from numbers and fixed words; the name and notes are escaped.
        )
    return out


def _label(v: Mapping[str, Any]) -> str:
    # A results file is outside input: the ref and commit are escaped like any other text.
    sha = markdown_text(str(v.get("commit") or "")[:12])
    ref = markdown_text(str(v.get("ref"))) if v.get("ref") else ""
    if ref and sha:
        return f"`{ref}` ({sha})"
    return f"`{ref}`" if ref else (sha or "?")


def versions_line(report: Report) -> str | None:
    """``**BASE** `main` (1a2b3c4d5e6f) → **HEAD** `topic` (6f5e4d3c2b1a)``."""
    if report.versions is None:
        return None
    base, head = report.versions
    return f"**BASE** {_label(base)} → **HEAD** {_label(head)}"


def _attention(items: Sequence[Row]) -> list[str]:
    """What would decide each inconclusive benchmark, the notes a reader needs and the failed
    runs: one bullet each (interference is counted in the metric line, detailed in the fold)."""
    out = []
    for r in items:
        name = f"**{markdown_text(r.name)}**"
        hint = r.decide_hint()
        if hint:
            text = markdown_text(hint, limit=None)
            # An option a reader copies: code, as in the rest of duet's messages.
            text = text.replace("--fail-on inconclusive", "`--fail-on inconclusive`")
            text = re.sub(r"--runs (\d+)", r"`--runs \1`", text)
            out.append(f"- {name} is inconclusive: {text}")
        out += [f"- {name}: {markdown_text(n, limit=400)}" for n in r.notes]
    return out


def render_markdown(report: Report) -> str:
    """See the module docstring for the order; every benchmark is folded away below."""
    items = report.rows
    shared = report.confidence_text
    out = [
        "## duet: " + markdown_text(report.title, limit=None),
        "",
    ]
    incomplete = report.incomplete
    if incomplete:
        out += [f"**Incomplete:** {markdown_text(incomplete, limit=600)}", ""]
    out += [
        report.sentence(name=lambda n: f"**{markdown_text(n)}**"),
        "",
    ]
    versions = versions_line(report)
    if versions:
        out += [versions, ""]
    decided = report.metric_line
    if decided:
        out += [markdown_text(decided[0].upper() + decided[1:], limit=None) + ".", ""]
    shown = [r for r in items if r.needs_attention]
    if shown:
        out += [*_table(shown, shared, others=False), ""]
    attention = _attention(items)
    if attention:
        out += [*attention, ""]
    out += [ALL_BENCHMARKS, "", *_table(items, shared, others=True), "", "</details>", ""]
    out += _folded_details(report)
    if report.affinity_only:
        out += [
            "> [!WARNING]",
            "> affinity-only isolation: CPU time of orphaned children and peak memory "
            "are unreliable.",
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


def _folded_details(report: Report) -> list[str]:
    """How the numbers were made: why each metric decided, what the others said, interference,
    the notes no reader acts on, and the machine."""
    details = [
        f"- **{markdown_text(r.name)}**: {markdown_text(d, limit=600)}"
        for r in report.rows
        for d in (r.decided_line(), *r.details)
        if d
    ]
    facts = [markdown_text(report.isolation, limit=None)] if report.isolation else []
    if report.threshold_text is not None:
        facts.append(f"threshold ±{report.threshold_text}")
    if not details and not facts:
        return []
    out = ["<details><summary>How these numbers were made</summary>", ""]
    if details:
        out += [*details, ""]
    if facts:
        out += [" · ".join(facts), ""]
    return [*out, "</details>", ""]
