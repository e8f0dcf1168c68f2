"""The plots of one benchmark: its paired iteration times over time, and its run ratios.

``iterations_figure`` follows the duet paper's Figure 3 (Bulej et al., "Duet Benchmarking",
2020): the two sides move up and down together, which is what makes the ratio precise; below,
the ratio of every pair. ``runs_figure`` shows the geometric-mean ratio of every run with the
grand ratio and its interval: a run that disagrees with the others (a slow core, a noisy
neighbour) stands out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from duet_bench import units
from duet_bench.report.plot_style import (
    RUN_SHADE,
    SIDE_STYLE,
    VERDICT_STYLE,
    estimate_text,
    figure,
    interval_text,
    label,
    number,
    time_unit,
    verdict,
)
from duet_bench.results import BenchmarkRecord, RunRecord

__all__ = ["iterations_figure", "runs_figure"]


def iterations_figure(b: BenchmarkRecord) -> Any:
    """Paired iteration times of both sides over time (duet paper, Figure 3), and the ratio
    of every pair below; successful runs only, each in its own band."""
    runs = b.ok_runs()
    a: Mapping[str, Any] = b.analysis or {}
    fig = figure(10.0, 6.0)
    grid = fig.add_gridspec(2, 1, height_ratios=[3.0, 1.5])
    ax = fig.add_subplot(grid[0])
    axr = fig.add_subplot(grid[1], sharex=ax)
    samples = np.concatenate(
        [
            np.asarray(s.iterations_ns, dtype=np.float64)
            for r in runs
            for s in (r.baseline, r.candidate)
        ]
    )
    scale, unit = time_unit(float(np.median(samples)))
    timed = _starts_usable(runs)
    t0 = (
        min(min(s.iteration_start_ns or [0]) for r in runs for s in (r.baseline, r.candidate))
        if timed
        else 0
    )
    centres: list[float] = []
    offset = 0.0
    for k, r in enumerate(runs):
        base = np.asarray(r.baseline.iterations_ns, dtype=np.float64)
        cand = np.asarray(r.candidate.iterations_ns, dtype=np.float64)
        if timed:
            xb = (np.asarray(r.baseline.iteration_start_ns, dtype=np.float64) - t0) / 1e9
            xc = (np.asarray(r.candidate.iteration_start_ns, dtype=np.float64) - t0) / 1e9
        else:
            xb = xc = offset + np.arange(base.size, dtype=np.float64)
            offset += base.size + max(2.0, base.size * 0.25)
        left, right = float(min(xb.min(), xc.min())), float(max(xb.max(), xc.max()))
        centres.append((left + right) / 2)
        if k % 2:
            span = (right - left) * 0.02 + (0 if timed else 0.5)
            for axis in (ax, axr):
                axis.axvspan(left - span, right + span, color=RUN_SHADE, lw=0, zorder=0)
        for side, x, y in (("baseline", xb, base), ("candidate", xc, cand)):
            colour, marker = SIDE_STYLE[side]
            ax.plot(
                x,
                y / scale,
                color=colour,
                marker=marker,
                ms=3.5,
                lw=0.7,
                alpha=0.9,
                label=side if k == 0 else None,
                zorder=2,
            )
        n = min(base.size, cand.size)
        axr.plot(
            xb[:n],
            cand[:n] / base[:n],
            color="#333333",
            marker=".",
            ms=3,
            lw=0.6,
            zorder=2,
            label="ratio of the pair" if k == 0 else None,
        )
    ratio = number(a.get("ratio"))
    lo, hi = number(a.get("ci_low")), number(a.get("ci_high"))
    axr.axhline(1.0, color="#333333", lw=0.9, ls="--", zorder=1, label="1 = same speed")
    if ratio is not None:
        colour = VERDICT_STYLE[verdict(a)][0]
        axr.axhline(ratio, color=colour, lw=1.6, zorder=3, label=f"grand ratio {units.sig(ratio)}")
        if lo is not None and hi is not None:
            axr.axhspan(lo, hi, color=colour, alpha=0.25, lw=0, zorder=1, label=interval_text(a))
    handles = [*ax.get_legend_handles_labels()[0], *axr.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6))
    ax.set_ylabel(f"iteration time ({unit})")
    axr.set_ylabel("ratio\ncandidate/baseline")
    if timed:
        axr.set_xlabel("iteration start (s since the first start); runs in alternating bands")
    else:
        axr.set_xlabel("run (its iterations in order; no start times recorded)")
        for axis in (ax, axr):
            axis.grid(axis="x", visible=False)
        axr.set_xticks(centres, [str(r.index) for r in runs])
        if len(runs) > 25:
            step = math.ceil(len(runs) / 25)
            for i, tick in enumerate(axr.get_xticklabels()):
                tick.set_visible(i % step == 0)
    ax.tick_params(labelbottom=False)
    failed = len(b.runs) - len(runs)
    extra = f"; {failed} failed run{'s' if failed != 1 else ''} not shown" if failed else ""
    ax.set_title(f"{label(b.name, 90)}\n{estimate_text(a)}{extra}", loc="left")
    return fig


def runs_figure(b: BenchmarkRecord) -> Any:
    """The geometric-mean ratio of every run, with the grand ratio and its interval."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    a: Mapping[str, Any] = b.analysis or {}
    runs = b.ok_runs()
    fig = figure(max(7.0, 3.0 + 0.22 * len(b.runs)), 4.4)
    ax = fig.add_subplot()
    word = verdict(a)
    colour = VERDICT_STYLE[word][0]
    ratio = number(a.get("ratio"))
    lo, hi = number(a.get("ci_low")), number(a.get("ci_high"))
    handles: list[Any] = []
    if lo is not None and hi is not None:
        ax.axhspan(lo, hi, color=colour, alpha=0.22, lw=0, zorder=0)
        handles.append(Patch(color=colour, alpha=0.22, label=interval_text(a)))
    if ratio is not None:
        ax.axhline(ratio, color=colour, lw=1.6, zorder=1)
        handles.append(
            Line2D([], [], color=colour, lw=1.6, label=f"grand ratio {units.sig(ratio)}")
        )
    ax.axhline(1.0, color="#333333", lw=0.9, ls="--", zorder=1)
    handles.append(Line2D([], [], color="#333333", lw=0.9, ls="--", label="1 = same speed"))
    # Which core the baseline sat on: a faster core shows as two clusters of run ratios.
    cores = sorted({r.baseline.cores[0] for r in runs if r.baseline.cores})
    markers = ["o", "D", "s", "^"]
    for i, core in enumerate(cores if len(cores) > 1 else [None]):
        chosen = [r for r in runs if core is None or (r.baseline.cores or [None])[0] == core]
        if not chosen:
            continue
        xs = [r.index for r in chosen]
        ys = [math.exp(float(np.mean(_log_ratios(r)))) for r in chosen]
        m = markers[i % len(markers)]
        ax.plot(xs, ys, ls="none", marker=m, ms=6, color="#333333", mfc="white", mew=1.4, zorder=3)
        text = "run geometric mean" if core is None else f"run, baseline on CPU {core}"
        handles.append(
            Line2D([], [], ls="none", marker=m, color="#333333", mfc="white", label=text)
        )
    failed = [r.index for r in b.runs if not r.ok]
    for index in failed:
        ax.axvline(index, color="#D55E00", ls=":", lw=1.6, zorder=1)
    if failed:
        handles.append(
            Line2D([], [], color="#D55E00", ls=":", lw=1.6, label="failed run (not analysed)")
        )
    ax.set_xlabel("run")
    ax.set_ylabel("ratio candidate/baseline\n(geometric mean of the run)")
    if b.runs:
        ax.set_xlim(min(r.index for r in b.runs) - 0.7, max(r.index for r in b.runs) + 0.7)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{label(b.name, 70)}\n{estimate_text(a)}", loc="left")
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3))
    return fig


def _starts_usable(runs: Sequence[RunRecord]) -> bool:
    for r in runs:
        for side in (r.baseline, r.candidate):
            starts = side.iteration_start_ns
            if starts is None or len(starts) != len(side.iterations_ns):
                return False
    return bool(runs)


def _log_ratios(run: RunRecord) -> np.ndarray[Any, np.dtype[np.float64]]:
    a = np.asarray(run.baseline.iterations_ns, dtype=np.float64)
    b = np.asarray(run.candidate.iterations_ns, dtype=np.float64)
    n = min(a.size, b.size)
    return np.log(b[:n] / a[:n])
