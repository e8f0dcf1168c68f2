"""The terminal report: which metric decided and why, one aligned row per benchmark that fits
the terminal, the other metrics and notes under it, then the sentence that sums it up.

The width is the terminal's (:func:`duet_bench.report.layout.terminal_width`), 100 columns
when the output is not a terminal. When the table would be wider, the ratio column goes first
(the change column says the same in percent), then the runs column, then benchmark names are
shortened where the two commands they name are alike (:meth:`Report.short_names
<duet_bench.report.model.Report.short_names>`). What is printed comes from the :class:`Report`
built once; what reaches the terminal passes :func:`duet_bench.untrusted.for_terminal` (the
terminal's escaping, as markdown and HTML have theirs), line by line as laid out.
"""

from __future__ import annotations

import click

from duet_bench.report.layout import WIDTH, wrap
from duet_bench.report.model import Report
from duet_bench.report.rows import Row
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


def _columns(items: tuple[Row, ...], shared: str | None) -> list[tuple[str, list[str], bool]]:
    """(header, cells, right-aligned) of every column but the name, in display order;
    ``shared`` is the confidence every row shares (``99%``), else None."""
    level = f" [{shared} CI]" if shared is not None else " [CI]"

    def with_interval(point: str, interval: str, r: Row) -> str:
        if interval == "n/a":
            return point
        own = f" {r.confidence_text}" if shared is None and r.confidence_text else ""
        return f"{point} {interval}{own}"

    return [
        ("baseline", [r.baseline for r in items], True),
        ("candidate", [r.candidate for r in items], True),
        ("change" + level, [with_interval(r.change, r.change_interval, r) for r in items], False),
        ("ratio" + level, [with_interval(r.ratio, r.interval, r) for r in items], False),
        ("verdict", [r.verdict for r in items], False),
        ("runs", [r.runs for r in items], True),
    ]


def _fit(report: Report, width: int) -> tuple[list[str], list[str]]:
    """The table lines within ``width`` (see the module docstring) and the names as shortened."""
    items = report.rows
    columns = _columns(items, report.confidence_text)

    def needed(cols: list[tuple[str, list[str], bool]]) -> int:
        return sum(max(len(h), *(len(c) for c in cells)) + len(_GAP) for h, cells, _ in cols)

    for drop in ((), ("ratio",), ("ratio", "runs")):
        kept = [c for c in columns if c[0].split()[0] not in drop]
        room = width - needed(kept)
        longest = max(len("benchmark"), *(len(r.name) for r in items))
        if room >= min(longest, _MIN_NAME) or drop == ("ratio", "runs"):
            break
    names = report.short_names(max(min(longest, room), _MIN_NAME))
    header = ["benchmark", *(h for h, _, _ in kept)]
    body = [[n, *(cells[i] for _, cells, _ in kept)] for i, n in enumerate(names)]
    right = {i + 1 for i, (_, _, r) in enumerate(kept) if r}
    return table(header, body, right=right), names


def render_text(report: Report, *, color: bool = False, width: int = WIDTH) -> str:
    items = report.rows
    out: list[str] = []
    incomplete = report.incomplete
    if incomplete:
        # Before anything else: every verdict below rests on part of what was planned.
        out += [f"INCOMPLETE: {for_terminal(incomplete)}", ""]
    decided = report.metric_line
    if decided:
        # Which metric the verdicts rest on, and why, before the numbers that come from it.
        out += [wrap(decided[0].upper() + decided[1:], 2, width=width), ""]
    if not items:
        return "\n".join([*out, report.summary]) + "\n"
    lines, names = _fit(report, width)
    # Names and notes come from the results file: no escape sequence reaches the terminal.
    lines = [for_terminal(line) for line in lines]
    if color:
        for i, r in enumerate(items, start=1):
            fg = _COLORS.get(r.verdict)
            if fg:
                lines[i] = click.style(lines[i], fg=fg, bold=r.verdict == "regression")
    out += [*lines, ""]
    notes = [for_terminal(n) for n in _notes(items, names, width)]
    if notes:
        out += ["notes:", *notes, ""]
    # Why each metric decided, interference and the other metrics, then winsorization: for
    # whoever checks the method, after what a reader acts on.
    details = [
        wrap(f"  {name}: {d}", 4, width=width)
        for r, name in zip(items, names, strict=True)
        for d in (r.decided_line(), *r.details)
        if d
    ]
    if details:
        out += ["details:", *map(for_terminal, details), ""]
    if report.isolation:
        out.append(wrap(report.isolation, 2, width=width))
    out.append(for_terminal(wrap(report.summary, 2, width=width)))
    if report.affinity_only:
        out.append(
            wrap(
                "WARNING: affinity-only isolation: no cgroups, so CPU time of orphaned children "
                "and peak memory are unreliable",
                2,
                width=width,
            )
        )
    return "\n".join(out) + "\n"


def _notes(items: tuple[Row, ...], names: list[str], width: int) -> list[str]:
    """Per benchmark: what would decide it and its notes."""
    out = []
    for r, name in zip(items, names, strict=True):
        lines = []
        hint = r.decide_hint()
        if hint:
            lines.append(f"inconclusive: {hint}")
        lines += list(r.notes)
        out += [wrap(f"  {name}: {line}", 4, width=width) for line in lines]
    return out
