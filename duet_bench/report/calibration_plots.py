"""The plots of ``duet calibrate --plot DIR``: Kalibera et al.'s Figure 1 for the A/A (samples
by run, with each run's ratios) and the interval width against the number of runs, in the
style of :mod:`duet_bench.report.plots` (same colours, same rc parameters, PNG and SVG)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from duet_bench import dirfd
from duet_bench.calibrate import width_for_runs
from duet_bench.report.calibration import pct
from duet_bench.report.plots import RC_PARAMS, SIDE_STYLE, label, time_unit
from duet_bench.units import sig

if TYPE_CHECKING:
    from duet_bench.calibrate import AAData, Calibration

_CPU_COLOURS = ("#009E73", "#CC79A7")
#: Ticks of the ratio axis (and their reciprocals): the two largest that fit are shown.
_NICE_RATIOS = (1.001, 1.002, 1.005, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def samples_figure(data: AAData, cal: Calibration) -> Any:
    """Kalibera et al.'s Figure 1 for the A/A: every iteration time by run (vertical lines
    separate runs; warm-up greyed), and below, every iteration's ratio with each run's geometric
    mean coloured by the CPU the baseline sat on (side asymmetry shows as two levels)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = _figure(10, 6.2)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    w0 = data.warmup
    full_a = np.hstack([data.baseline_warmup_ns, data.baseline_ns])
    full_b = np.hstack([data.candidate_warmup_ns, data.candidate_ns])
    per_run = full_a.shape[1]
    scale, unit = time_unit(float(np.median(full_a)))
    dropped = w0 + cal.analysed_from
    x = np.arange(full_a.size).reshape(full_a.shape)
    for side, values in (("baseline", full_a), ("candidate", full_b)):
        colour, marker = SIDE_STYLE[side]
        y = values / scale
        top.scatter(x[:, dropped:].ravel(), y[:, dropped:].ravel(), s=7, c=colour, marker=marker,
                    label=side, linewidths=0)  # fmt: skip
        if dropped:
            top.scatter(x[:, :dropped].ravel(), y[:, :dropped].ravel(), s=7, c="#AAAAAA",
                        marker=marker, linewidths=0)  # fmt: skip
    if dropped:
        top.scatter([], [], s=7, c="#AAAAAA", label="warm-up (left out)")
    for r in range(1, data.runs):
        for ax in (top, bottom):
            ax.axvline(r * per_run - 0.5, color="#BBBBBB", linewidth=0.6)
    top.set_ylabel(f"iteration time ({unit})")
    top.set_title(label(f"A/A samples by run: {cal.benchmark}", 80), loc="left")
    top.legend(loc="upper right", ncols=3, frameon=False)

    ratio = full_b / full_a
    bottom.scatter(x.ravel(), ratio.ravel(), s=5, c="#666666", linewidths=0)
    cpus = sorted({c for c in data.baseline_cpus if c is not None})
    seen: set[int] = set()
    log_s = np.log(data.candidate_ns[:, cal.analysed_from :]) - np.log(
        data.baseline_ns[:, cal.analysed_from :]
    )
    for r in range(data.runs):
        g = float(np.exp(log_s[r].mean()))
        cpu = data.baseline_cpus[r]
        colour = _CPU_COLOURS[cpus.index(cpu) % 2] if cpu in cpus else "#000000"
        lbl = None
        if cpu is not None and cpu not in seen:
            seen.add(cpu)
            lbl = f"run geometric mean, baseline on CPU {cpu}"
        bottom.hlines(g, r * per_run + dropped - 0.5, (r + 1) * per_run - 0.5, colors=colour,
                      linewidth=2.2, label=lbl)  # fmt: skip
    bottom.axhline(1.0, color="#000000", linewidth=0.8)
    # A log axis symmetric around 1: a ratio r and 1/r are the same distance from it.
    lo, hi = np.quantile(np.log(ratio), [0.005, 0.995])
    span = max(float(hi), -float(lo), 0.005) * 1.15
    bottom.set_yscale("log")
    bottom.set_ylim(math.exp(-span), math.exp(span))
    nice = [v for v in _NICE_RATIOS if math.log(v) <= span][-2:]
    bottom.yaxis.set_major_locator(FixedLocator([1.0, *nice, *(1 / v for v in nice)]))
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: sig(v)))
    bottom.yaxis.set_minor_locator(NullLocator())
    bottom.set_ylabel("ratio candidate / baseline")
    bottom.set_xlabel(f"iteration, run after run ({data.runs} runs of {per_run})")
    if seen:
        bottom.legend(loc="upper right", ncols=2, frameon=False)
    return fig


def width_figure(cal: Calibration) -> Any:
    """Relative interval width against runs: formula 5 with the measured components at the
    recommended iterations (and at the measured ones), the target, and the widths measured."""
    fig = _figure(8, 4.6)
    ax = fig.subplots()
    rec = cal.recommended
    if rec is None or cal.plan_components is None:
        ax.text(0.5, 0.5, "not enough data for a prediction", ha="center", transform=ax.transAxes)
        return fig
    top = max(200, 2 * rec.runs)
    grid = [int(k) for k in np.unique(np.geomspace(2, top, 60).round().astype(int))]
    curves = [(rec.method, cal.plan_components, "#0072B2")]
    if rec.method == "sequential" and cal.components is not None:
        curves.append(("duet", cal.components, "#009E73"))
    for method, comps, colour in curves:
        for iterations, style, text in (
            (rec.iterations, "-", f"{rec.iterations} iterations/run (recommended)"),
            (cal.iterations, "--", f"{cal.iterations} iterations/run (measured)"),
        ):
            if style == "--" and iterations == rec.iterations:
                continue
            widths = width_for_runs(
                comps, iterations=iterations, runs=grid, confidence=cal.confidence
            )
            ax.plot(list(widths), [v * 100 for v in widths.values()], style, color=colour,
                    label=f"predicted, {method}, {text}")  # fmt: skip
    target = (math.exp(rec.target_half_width) - math.exp(-rec.target_half_width)) * 100
    ax.axhline(target, color="#D55E00", linewidth=1,
               label=f"target: decides at {pct(cal.threshold)}")  # fmt: skip
    ax.scatter([rec.runs], [rec.expected_ci_width * 100], color="#D55E00", zorder=3, s=30,
               label=f"recommended: {rec.runs} runs")  # fmt: skip
    if cal.ci_width is not None:
        ax.scatter([cal.runs], [cal.ci_width * 100], marker="D", color="#000000", zorder=3,
                   label="measured: duet")  # fmt: skip
    if cal.shuffled_width is not None:
        ax.scatter([cal.runs], [cal.shuffled_width * 100], marker="s", color="#999999",
                   zorder=3, label="measured: shuffled (no shared noise)")  # fmt: skip
    if cal.sequential is not None:
        ax.scatter([cal.sequential.runs], [cal.sequential.relative_width * 100], marker="v",
                   color="#CC79A7", zorder=3, label="measured: sequential")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{sig(v, 2)}%"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("runs")
    ax.set_ylabel(f"{cal.confidence * 100:g}% interval width")
    ax.set_title("Interval width against runs (Kalibera formula 5)", loc="left")
    ax.legend(frameon=False, fontsize=8)
    return fig


def write_plots(data: AAData, cal: Calibration, directory: Path) -> list[Path]:
    """Write ``calibration-samples`` and ``calibration-width`` as PNG and SVG."""
    import warnings

    import matplotlib

    dirfd.make_directories(directory)
    written: list[Path] = []
    with matplotlib.rc_context(RC_PARAMS), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        figures = (
            ("calibration-samples", samples_figure(data, cal)),
            ("calibration-width", width_figure(cal)),
        )
        for stem, fig in figures:
            for suffix, options in (
                (".png", {"dpi": 130}),
                (".svg", {"metadata": {"Date": None}}),
            ):
                path = directory / f"{stem}{suffix}"
                with dirfd.replacing(path) as f:  # never through a planted link
                    fig.savefig(f, format=suffix[1:], **options)
                written.append(path)
    return written
