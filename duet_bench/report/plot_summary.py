"""The summary plot of a report: every benchmark's ratio with its interval (a forest plot).

The no-change band ``[1/(1+t), 1+t]`` is shaded and a line drawn at 1. The verdict is shown by
colour *and* marker shape (BenchExec's advice: it must survive a grey-scale print).
"""

from __future__ import annotations

import math
from typing import Any

from duet_bench import units
from duet_bench.report.plot_style import (
    BAND,
    VERDICT_STYLE,
    figure,
    label,
)
from duet_bench.report.rows import common_confidence, rows, title
from duet_bench.results import ResultsDocument

__all__ = ["forest_figure"]


def forest_figure(doc: ResultsDocument) -> Any:
    """Every benchmark's ratio with its interval; height grows with the number of benchmarks."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    items = rows(doc)  # the one row model the text, markdown and html reports read too
    n = len(items)
    # Room for the longest name on the left and the numbers on the right, then the axis.
    longest = max((len(label(r.name)) for r in items), default=0)
    fig = figure(6.5 + 0.075 * longest, 2.2 + 0.42 * max(n, 1))
    ax = fig.add_subplot()
    threshold = next((r.threshold for r in items if r.threshold is not None), None)
    shared = common_confidence(items)
    extent = [1.0]
    if threshold is not None:
        extent += [1.0 / (1.0 + threshold), 1.0 + threshold]
        ax.axvspan(1.0 / (1.0 + threshold), 1.0 + threshold, color=BAND, lw=0, zorder=0)
    ax.axvline(1.0, color="#333333", lw=1.0, ls="--", zorder=1)
    seen: list[str] = []
    for y, r in enumerate(items):
        word = r.verdict if r.verdict in VERDICT_STYLE else "no verdict"
        colour, marker, filled = VERDICT_STYLE[word]
        cell = r.decided
        ratio = cell.ratio if cell else None
        lo, hi = (cell.low, cell.high) if cell else (None, None)
        if lo is not None and hi is not None:
            ax.plot([lo, hi], [y, y], color=colour, lw=2.2, solid_capstyle="butt", zorder=2)
            ax.plot([lo, hi], [y, y], ls="none", marker="|", ms=10, mew=2, color=colour, zorder=2)
            extent += [lo, hi]
        if ratio is not None:
            ax.plot(
                [ratio],
                [y],
                ls="none",
                marker=marker,
                ms=9,
                color=colour,
                mfc=colour if filled else "white",
                mew=1.6,
                zorder=3,
            )
            extent.append(ratio)
            text = r.ratio if r.interval == "n/a" else f"{r.ratio} {r.interval}"
            if shared is None and r.confidence is not None and r.interval != "n/a":
                text += f" {units.percent(r.confidence)} CI"
            if word not in seen:
                seen.append(word)
        else:
            text = "no successful run"
        ax.annotate(
            f"{text}  {word}",
            xy=(1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
            color="#222222",
        )
    low, high = min(extent), max(extent)
    pad = (math.log(high) - math.log(low)) * 0.08 or 0.01
    _ratio_axis(ax, math.exp(math.log(low) - pad), math.exp(math.log(high) + pad))
    mixed = len({r.metric for r in items if r.metric}) > 1
    ax.set_yticks(
        range(n), [label(r.name) + (f" ({r.metric})" if mixed and r.metric else "") for r in items]
    )
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    if not n:
        ax.text(1.0, 0.0, "no benchmarks", ha="center", va="center", style="italic")
    ax.grid(axis="y", visible=False)
    level = f"{units.percent(shared)} CI" if shared is not None else "CI at each benchmark's level"
    decided = sorted({r.metric for r in items if r.metric}) or ["wall time"]
    ax.set_xlabel(
        # The metric named is the one that decided: the axis carries no other.
        f"ratio candidate/baseline in {' or '.join(decided)} ({level}), log scale: "
        "right of 1 is slower"
    )
    ax.set_title(f"duet: {title(items)}", loc="left")
    handles: list[Any] = [
        Line2D(
            [],
            [],
            ls="none",
            marker=VERDICT_STYLE[w][1],
            color=VERDICT_STYLE[w][0],
            mfc=VERDICT_STYLE[w][0] if VERDICT_STYLE[w][2] else "white",
            ms=8,
            label=w,
        )
        for w in VERDICT_STYLE
        if w in seen
    ]
    if threshold is not None:
        handles.append(Patch(color=BAND, label=f"no-change band ±{units.sig(threshold * 100)}%"))
    handles.append(Line2D([], [], color="#333333", ls="--", label="1 = same speed"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
    return fig


def _ratio_axis(ax: Any, lo: float, hi: float) -> None:
    """A log axis for ratios with plain tick labels at 3 significant digits."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    if hi / lo > 4:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    else:
        # Over a narrow range a log axis has no decade ticks: place evenly spaced values.
        ax.xaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: units.sig(x)))
    ax.xaxis.set_minor_locator(NullLocator())
