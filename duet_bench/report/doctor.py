"""The terminal report of ``duet doctor`` (its ``json`` is the diagnosis's own ``to_dict``)."""

from __future__ import annotations

from typing import Any

import click

from duet_bench.report.layout import wrap

_LABEL = 13


def render_text(d: dict[str, Any], *, color: bool = False) -> str:
    """The human report: facts one per aligned line, then the findings, most severe first."""

    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    lines = ["duet doctor: what this machine allows and what will disturb measurements", ""]
    level = d["isolation"]
    lines.append(
        f"{'isolation':<{_LABEL}}"
        + style(level, fg="green" if level != "affinity-only" else "yellow", bold=True)
        + " (what `duet run` gets)"
    )
    for check in d["checks"]:
        if check["topic"] == "isolation":
            continue  # the level is the first line
        lines.append(wrap(f"{check['topic']:<{_LABEL}}{check['summary']}", _LABEL))
    findings = d["findings"]
    if not findings:
        lines += ["", style("No problems found.", fg="green")]
        return "\n".join(lines) + "\n"
    counts = {
        s: sum(1 for f in findings if f["severity"] == s) for s in ("error", "warning", "notice")
    }
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
    lines += ["", f"Findings ({summary}):"]
    colours = {"error": "red", "warning": "yellow", "notice": "cyan"}
    pad = 10
    for f in findings:
        head = style(f"{f['severity']:<{pad}}", fg=colours[f["severity"]], bold=True)
        lines.append("")
        lines.append(head + wrap(f["what"], pad, first=pad))
        lines.append(" " * pad + wrap(f"why: {f['why']}", pad + 5, first=pad))
        lines.append(" " * pad + wrap(f"fix: {f['fix']}", pad + 5, first=pad))
    return "\n".join(lines) + "\n"
