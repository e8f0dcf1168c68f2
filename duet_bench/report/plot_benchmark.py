"""The plots of one benchmark: its paired iterations over time, and its run ratios, both in the
metric that decided its verdict (wall time, CPU time or wall time less run-queue delay).

``iterations_figure`` follows the duet paper's Figure 3 (Bulej et al., "Duet Benchmarking",
2020): the two sides move up and down together, which is what makes the ratio precise; below,
the ratio of every pair. ``runs_figure`` shows the geometric-mean ratio of every run with the
grand ratio and its interval, one panel per metric, the deciding one first: a run that
disagrees with the others (a slow core, a noisy neighbour) stands out, and no metric is ever
drawn under another metric's interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from duet_bench import units
from duet_bench.analysis.estimate import run_log_ratios
from duet_bench.analysis.series import series_of
from duet_bench.metrics import METRIC_NAMES, known, names, usable
from duet_bench.report.plot_style import (
    RUN_SHADE,
    SIDE_STYLE,
    VERDICT_STYLE,
    figure,
    label,
    time_unit,
)
from duet_bench.report.rows import MetricCell, Row, row
from duet_bench.results import BenchmarkRecord, RunRecord

__all__ = ["iterations_figure", "metric_series", "runs_figure"]

Matrix = np.ndarray[Any, np.dtype[np.float64]]


def metric_series(b: BenchmarkRecord) -> dict[str, tuple[Matrix, Matrix]]:
    """Metric key -> (baseline, candidate) ``(runs, iterations)`` matrices of the successful
    runs, for every metric recorded; the same figures the analysis made its estimates from."""
    runs = b.ok_runs()
    if not runs:
        return {}
    series = series_of(runs)
    return {key: pair for key in names() if (pair := series.of(key)) is not None}


def deciding_metric(b: BenchmarkRecord) -> str:
    """The key of the metric that decided (wall time for a file analysed without one)."""
    a = b.analysis
    return known(None if a is None else a.metric)


def _cell(r: Row, key: str) -> MetricCell | None:
    """The row's estimate of metric ``key``: the deciding one or one of the others (the same
    cells the text, markdown and html reports show), None when it has none."""
    for cell in (r.decided, *r.others):
        if cell is not None and not cell.missing and known(cell.key) == key:
            return cell
    return None


def _interval_label(cell: MetricCell | None, confidence: float | None) -> str:
    """``[1.090, 1.094] 99% CI`` or ``no interval``."""
    if cell is None or cell.interval_text() == "n/a":
        return "no interval"
    level = f" {units.percent(confidence)} CI" if confidence is not None else " CI"
    return cell.interval_text() + level


def _estimate_label(cell: MetricCell | None, confidence: float | None) -> str:
    """``ratio 1.092 [1.090, 1.094] 99% CI, regression``."""
    if cell is None or cell.ratio is None:
        return "no successful run"
    return f"ratio {cell.ratio_text()} {_interval_label(cell, confidence)}, {cell.verdict}"


def iterations_figure(b: BenchmarkRecord) -> Any:
    """Paired iterations of both sides over time (duet paper, Figure 3) in the metric that
    decided, and the ratio of every pair below with that metric's grand ratio and interval;
    successful runs only, each in its own band."""
    runs = b.ok_runs()
    model = row(b)
    key = deciding_metric(b)
    matrices = metric_series(b)
    key = usable(key, matrices.__contains__)
    base_m, cand_m = matrices[key]
    # The overlay is the estimate of the metric drawn, never another metric's.
    cell = _cell(model, key)
    metric = METRIC_NAMES[key]
    fig = figure(10.0, 6.0)
    grid = fig.add_gridspec(2, 1, height_ratios=[3.0, 1.5])
    ax = fig.add_subplot(grid[0])
    axr = fig.add_subplot(grid[1], sharex=ax)
    scale, unit = time_unit(float(np.median(np.concatenate([base_m.ravel(), cand_m.ravel()]))))
    n_iter = base_m.shape[1]
    timed = _starts_usable(runs)
    t0 = (
        min(min(s.iteration_start_ns or [0]) for r in runs for s in (r.baseline, r.candidate))
        if timed
        else 0
    )
    centres: list[float] = []
    offset = 0.0
    for k, r in enumerate(runs):
        base, cand = base_m[k], cand_m[k]
        if timed:
            starts_b = r.baseline.iteration_start_ns or ()
            starts_c = r.candidate.iteration_start_ns or ()
            xb = (np.asarray(starts_b[:n_iter], dtype=np.float64) - t0) / 1e9
            xc = (np.asarray(starts_c[:n_iter], dtype=np.float64) - t0) / 1e9
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
    _grand_ratio(axr, cell, model.confidence)
    handles = [*ax.get_legend_handles_labels()[0], *axr.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3))
    ax.set_ylabel(f"{metric} per iteration ({unit})")
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
    estimate = _estimate_label(cell, model.confidence)
    ax.set_title(f"{label(b.name, 90)}\n{metric} decided: {estimate}{extra}", loc="left")
    return fig


def _grand_ratio(axr: Any, cell: MetricCell | None, confidence: float | None) -> None:
    """Same speed, the grand ratio of ``cell`` and its interval on the pair-ratio axes."""
    axr.axhline(1.0, color="#333333", lw=0.9, ls="--", zorder=1, label="1 = same speed")
    if cell is None or cell.ratio is None:
        return
    colour = VERDICT_STYLE[cell.verdict if cell.verdict in VERDICT_STYLE else "no verdict"][0]
    axr.axhline(
        cell.ratio, color=colour, lw=1.6, zorder=3, label=f"grand ratio {cell.ratio_text()}"
    )
    if cell.low is not None and cell.high is not None:
        band = f"{_interval_label(cell, confidence)} of the grand ratio"
        axr.axhspan(cell.low, cell.high, color=colour, alpha=0.25, lw=0, zorder=1, label=band)


def runs_figure(b: BenchmarkRecord) -> Any:
    """The geometric-mean ratio of every run with the grand ratio and its interval: one panel
    per metric recorded, the deciding one first, each under its own interval only."""
    r = row(b)
    runs = b.ok_runs()
    matrices = metric_series(b)
    assignment = series_of(runs).assignment if runs else None
    decided = deciding_metric(b)
    keys = [decided] + [k for k in names() if k != decided and k in matrices]
    keys = [k for k in keys if k in matrices] or [known(None)]
    fig = figure(max(7.0, 3.0 + 0.22 * len(b.runs)) + 3.2 * (len(keys) - 1), 4.6)
    axes = fig.subplots(1, len(keys), sharey=True, squeeze=False)[0]
    handles: list[Any] = []
    for i, (ax, key) in enumerate(zip(axes, keys, strict=True)):
        cell = _cell(r, key)
        pair = matrices.get(key)
        panel = _runs_panel(ax, b, runs, cell, r.confidence, pair, assignment)
        if i == 0:
            handles = panel
        role = "decided" if key == decided else "did not decide"
        estimate = _estimate_label(cell, r.confidence)
        ax.set_title(f"{METRIC_NAMES[key]} ({role})\n{estimate}", loc="left")
    axes[0].set_ylabel("ratio candidate/baseline\n(geometric mean of the run)")
    fig.suptitle(label(b.name, 70), x=0.01, ha="left")
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3))
    return fig


def _runs_panel(
    ax: Any,
    b: BenchmarkRecord,
    runs: Sequence[RunRecord],
    cell: MetricCell | None,
    confidence: float | None,
    pair: tuple[Matrix, Matrix] | None,
    assignment: Matrix | None,
) -> list[Any]:
    """One metric's run ratios, grand ratio and interval on ``ax``; the legend handles."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    word = cell.verdict if cell and cell.verdict in VERDICT_STYLE else "no verdict"
    colour = VERDICT_STYLE[word][0]
    handles: list[Any] = []
    if cell is not None and cell.low is not None and cell.high is not None:
        ax.axhspan(cell.low, cell.high, color=colour, alpha=0.22, lw=0, zorder=0)
        label_ = f"its {_interval_label(cell, confidence)}"
        handles.append(Patch(color=colour, alpha=0.22, label=label_))
    if cell is not None and cell.ratio is not None:
        ax.axhline(cell.ratio, color=colour, lw=1.6, zorder=1)
        handles.append(
            Line2D([], [], color=colour, lw=1.6, label=f"grand ratio {cell.ratio_text()}")
        )
    ax.axhline(1.0, color="#333333", lw=0.9, ls="--", zorder=1)
    handles.append(Line2D([], [], color="#333333", lw=0.9, ls="--", label="1 = same speed"))
    per_run = _run_ratios(pair, assignment) if pair is not None else []
    # Which core the baseline sat on: a faster core shows as two clusters of run ratios.
    cores = sorted({r.baseline.cores[0] for r in runs if r.baseline.cores})
    markers = ["o", "D", "s", "^"]
    for i, core in enumerate(cores if len(cores) > 1 else [None]):
        chosen = [
            (r.index, y)
            for r, y in zip(runs, per_run, strict=False)
            if core is None or (r.baseline.cores or [None])[0] == core
        ]
        if not chosen:
            continue
        m = markers[i % len(markers)]
        xs, ys = zip(*chosen, strict=True)
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
    if b.runs:
        ax.set_xlim(min(r.index for r in b.runs) - 0.7, max(r.index for r in b.runs) + 0.7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return handles


def _run_ratios(pair: tuple[Matrix, Matrix], assignment: Matrix | None) -> list[float]:
    """The ratio of every run (row) as the analysis weighs it: with crossover, the two CPU
    assignments of the run weighed equally (:func:`duet_bench.analysis.estimate.run_log_ratios`),
    so the points do not carry the core difference the grand ratio does not."""
    return [math.exp(x) for x in run_log_ratios(*pair, assignment)]


def _starts_usable(runs: Sequence[RunRecord]) -> bool:
    for r in runs:
        for side in (r.baseline, r.candidate):
            starts = side.iteration_start_ns
            if starts is None or len(starts) != len(side.iterations_ns):
                return False
    return bool(runs)
