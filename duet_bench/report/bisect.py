"""The summary of a bisection (``duet bisect``): ``text`` (terminal), ``markdown``
(``report.md``), ``json`` (``bisect.json``'s content)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

from duet_bench import units
from duet_bench.metrics import METRIC_NAMES

if TYPE_CHECKING:
    from duet_bench.bisect.run import Bisection
    from duet_bench.bisect.search import Step

Format = Literal["text", "markdown", "json"]

_PURPOSE = {
    "GOOD..BAD": "BAD vs GOOD",
    "search": "search",
    "against parent": "vs parent",
    "rest": "BAD vs named",
}


def _ref(state: Bisection, i: int) -> str:
    if i == 0:
        return "GOOD"
    if i == len(state.commits) - 1:
        return "BAD"
    return f"{i}:{state.commits[i].short[:8]}"


def _row(state: Bisection, s: Step) -> list[str]:
    c = s.comparison
    return [
        str(s.number),
        _PURPOSE[s.purpose],
        _ref(state, s.candidate),
        _ref(state, s.baseline),
        units.ratio(c.ratio),
        units.interval(c.ci_low, c.ci_high),
        c.verdict or "n/a",
        str(c.runs),
        s.outcome,
    ]


_HEAD = ["step", "what", "commit", "against", "ratio", "interval", "verdict", "runs", "outcome"]


def render(state: Bisection, fmt: Format) -> str:
    if fmt == "json":
        return json.dumps(state.to_dict(), indent=2) + "\n"
    r = state.result
    steps = r.steps if r is not None else state.steps
    n = len(state.commits) - 1
    metric = METRIC_NAMES.get(state.metric, f"metric {state.metric}")
    title = (
        f"duet bisect {state.good}..{state.bad}: {state.benchmark}, {n} commits "
        f"(first-parent), {metric}, threshold {units.change(1 + state.threshold)}, "
        f"{units.percent(state.confidence)} intervals"
    )
    outcome: str = "running" if r is None else r.outcome
    if state.stopped:
        outcome = f"stopped: {state.stopped}"
    rows = [_row(state, s) for s in steps]
    if fmt == "markdown":
        lines = [f"## {title}", "", f"**{outcome}**: {r.message if r else ''}".rstrip(), ""]
        if r is not None and r.advice:
            lines += [f"What would help: {r.advice}", ""]
        lines += [
            "| " + " | ".join(_HEAD) + " |",
            "|" + "---|" * len(_HEAD),
            *("| " + " | ".join(row) + " |" for row in rows),
            "",
            f"{len(steps)} comparisons; commits are `index:sha` on BAD's first-parent line "
            f"(GOOD is 0, BAD is {n}).",
            "",
        ]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(_HEAD, *rows, strict=False)]
    table = [
        "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
        for row in (_HEAD, *rows)
    ]
    lines = [title, "", *table, "", f"{len(steps)} comparisons", f"{outcome}:"]
    if r is not None:
        lines += [f"  {line}" for line in r.message.splitlines()]
        if r.advice:
            lines.append(f"  what would help: {r.advice}")
    return "\n".join(lines) + "\n"
