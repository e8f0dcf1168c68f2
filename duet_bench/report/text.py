"""The terminal report: which metric decided and why, one aligned row per benchmark that fits
the terminal, the other metrics and notes under it, then the sentence that sums it up.

The width is the terminal's (:func:`duet_bench.report.layout.terminal_width`), 100 columns
when the output is not a terminal. When the table would be wider, the ratio column goes first
(the change column says the same in percent), then the runs column, then benchmark names are
shortened where the two commands they name are alike (:func:`duet_bench.units.differing_name`).
"""

from __future__ import annotations

import click

from duet_bench.report.layout import WIDTH, wrap
from duet_bench.report.rows import (
    Row,
    common_confidence,
    isolation_line,
    metric_line,
    rows,
    summary_sentence,
)
from duet_bench.results import ResultsDocument
from duet_bench.results.completeness import completeness
from duet_bench.units import differing_name, percent
from duet_bench.untrusted import for_terminal

_COLORS = {"regression": "red", "improvement": "green", "inconclusive": "yellow"}
#: Benchmark names are never shortened below this many characters.
_MIN_NAME = 12
_GAP = "  "


def table(header: list[str], body: list[list[str]], *, right: set[int]) -> list[str]:
    """Aligned columns separated by two spaces; columns in ``right`` are right-aligned."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(line: list[str]) -> str:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ]
        return _GAP.join(cells).rstrip()

    return [fmt(header), *(fmt(line) for line in body)]


def _columns(items: list[Row], shared: float | None) -> list[tuple[str, list[str], bool]]:
    """(header, cells, right-aligned) of every column but the name, in display order."""
    level = f" [{percent(shared)} CI]" if shared is not None else " [CI]"

    def with_interval(point: str, interval: str, r: Row) -> str:
        if interval == "n/a":
            return point
        own = f" {percent(r.confidence)}" if shared is None and r.confidence is not None else ""
        return f"{point} {interval}{own}"

    return [
        ("baseline", [r.baseline for r in items], True),
        ("candidate", [r.candidate for r in items], True),
        ("change" + level, [with_interval(r.change, r.change_interval, r) for r in items], False),
        ("ratio" + level, [with_interval(r.ratio, r.interval, r) for r in items], False),
        ("verdict", [r.verdict for r in items], False),
        ("runs", [r.runs for r in items], True),
    ]


def _fit(items: list[Row], shared: float | None, width: int) -> tuple[list[str], int]:
    """The table lines within ``width`` (see the module docstring) and the name width used."""
    columns = _columns(items, shared)

    def needed(cols: list[tuple[str, list[str], bool]]) -> int:
        return sum(max(len(h), *(len(c) for c in cells)) + len(_GAP) for h, cells, _ in cols)

    for drop in ((), ("ratio",), ("ratio", "runs")):
        kept = [c for c in columns if c[0].split()[0] not in drop]
        room = width - needed(kept)
        longest = max(len("benchmark"), *(len(r.name) for r in items))
        if room >= min(longest, _MIN_NAME) or drop == ("ratio", "runs"):
            break
    name_width = max(min(longest, room), _MIN_NAME)
    names = [differing_name(r.name, name_width) for r in items]
    header = ["benchmark", *(h for h, _, _ in kept)]
    body = [[n, *(cells[i] for _, cells, _ in kept)] for i, n in enumerate(names)]
    right = {i + 1 for i, (_, _, r) in enumerate(kept) if r}
    return table(header, body, right=right), name_width


def render_text(doc: ResultsDocument, *, color: bool = False, width: int = WIDTH) -> str:
    items = rows(doc)
    out: list[str] = []
    incomplete = completeness(doc).sentence
    if incomplete:
        # Before anything else: every verdict below rests on part of what was planned.
        out += [f"INCOMPLETE: {for_terminal(incomplete)}", ""]
    decided = metric_line(items, doc)
    if decided:
        # Which metric the verdicts rest on, and why, before the numbers that come from it.
        out += [wrap(decided[0].upper() + decided[1:], 2, width=width), ""]
    if not items:
        return "\n".join([*out, summary_sentence(items)]) + "\n"
    lines, name_width = _fit(items, common_confidence(items), width)
    # Names and notes come from the results file: no escape sequence reaches the terminal.
    lines = [for_terminal(line) for line in lines]
    if color:
        for i, r in enumerate(items, start=1):
            fg = _COLORS.get(r.verdict)
            if fg:
                lines[i] = click.style(lines[i], fg=fg, bold=r.verdict == "regression")
    out += [*lines, ""]
    notes = [for_terminal(n) for n in _notes(items, name_width, width)]
    if notes:
        out += ["notes:", *notes, ""]
    # Why each metric decided, interference and the other metrics, then winsorization: for
    # whoever checks the method, after what a reader acts on.
    details = [
        wrap(f"  {differing_name(r.name, name_width)}: {d}", 4, width=width)
        for r in items
        for d in (r.decided_line(), *r.details)
        if d
    ]
    if details:
        out += ["details:", *map(for_terminal, details), ""]
    iso = isolation_line(doc)
    if iso:
        out.append(wrap(iso, 2, width=width))
    out.append(for_terminal(wrap(summary_sentence(items), 2, width=width)))
    if doc.environment.get("isolation") == "affinity-only":
        out.append(
            wrap(
                "WARNING: affinity-only isolation: no cgroups, so CPU time of orphaned children "
                "and peak memory are unreliable",
                2,
                width=width,
            )
        )
    return "\n".join(out) + "\n"


def _notes(items: list[Row], name_width: int, width: int) -> list[str]:
    """Per benchmark: what would decide it and its notes."""
    out = []
    for r in items:
        name = differing_name(r.name, name_width)
        lines = []
        hint = r.decide_hint()
        if hint:
            lines.append(f"inconclusive: {hint}")
        lines += list(r.notes)
        out += [wrap(f"  {name}: {line}", 4, width=width) for line in lines]
    return out
