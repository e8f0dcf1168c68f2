"""Plots of an analysed document, as PNG (to look at) and SVG (inlined by the HTML report).

1. ``ratios``: a forest plot, every benchmark's ratio with its confidence interval, the
   no-change band ``[1/(1+t), 1+t]`` shaded and a line at 1. The verdict is shown by colour
   *and* marker shape (BenchExec's advice: it must survive a grey-scale print).
2. ``<benchmark>-iterations``: the paired iteration times of both sides over time, as in the
   duet paper's Figure 3 (Bulej et al., "Duet Benchmarking", 2020): the two sides move up and
   down together, which is what makes the ratio precise; below, the ratio of every pair.
3. ``<benchmark>-runs``: the geometric-mean ratio of every run, with the grand ratio and its
   interval: a run that disagrees with the others (a slow core, a noisy neighbour) stands out.

matplotlib is imported inside the functions (``duet --help`` stays fast) and used through
``Figure`` and the Agg canvas, never ``pyplot``: no global figure registry to leak, and nothing
here depends on a display. Benchmark names are untrusted: file names are slugs that cannot
leave the directory, and labels are drawn with mathtext off, so ``$\\foo$`` is just text.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from duet_bench import units
from duet_bench.report.rows import common_confidence, headline, rows
from duet_bench.results import BenchmarkRecord, ResultsDocument, RunRecord

#: Verdict -> (colour, marker, filled). Okabe-Ito hues; the marker points the way the
#: candidate moved on the ratio axis (right: slower, left: faster).
VERDICT_STYLE: dict[str, tuple[str, str, bool]] = {
    "regression": ("#D55E00", ">", True),
    "improvement": ("#0072B2", "<", True),
    "inconclusive": ("#E69F00", "D", True),
    "no change": ("#4D4D4D", "o", True),
    "no verdict": ("#000000", "s", False),
}
#: Side -> (colour, marker): Okabe-Ito blue and vermillion, distinct in every common
#: colour-vision deficiency, and different shapes for grey scale.
SIDE_STYLE: dict[str, tuple[str, str]] = {
    "baseline": ("#0072B2", "o"),
    "candidate": ("#D55E00", "^"),
}
_BAND = "#E3E3E3"
_RUN_SHADE = "#F1F1F1"

#: rcParams for every plot (typed loosely: matplotlib types the keys as a Literal of names).
RC_PARAMS: dict[Any, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 12,
    "text.parse_math": False,
    "text.usetex": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "svg.fonttype": "path",
    "svg.hashsalt": "duet",
}
_PNG_DPI = 150
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_LABEL_LIMIT = 48


# --------------------------------------------------------------------------------------------
# Names


def slug(name: str, *, limit: int = 80) -> str:
    """A file-name-safe stem for an untrusted benchmark name.

    Only ``[A-Za-z0-9._-]``, no leading dot or dash, at most ``limit`` characters. A name that
    had to change gets 8 hex digits of its hash, so ``a/b`` and ``a-b`` never collide and an
    empty or all-punctuation name still gets a file.
    """
    clean = _SLUG_UNSAFE.sub("-", name).strip(".-")[:limit].rstrip(".-")
    if clean == name and clean:
        return clean
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean}-{digest}" if clean else digest


def label(name: str, limit: int = _LABEL_LIMIT) -> str:
    """An untrusted name as one line of plain text for a plot."""
    s = _CONTROL.sub("\ufffd", " ".join(str(name).split()))
    return s if len(s) <= limit else s[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------
# Numbers


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def _verdict(a: Mapping[str, Any]) -> str:
    v = a.get("verdict")
    return v if isinstance(v, str) and v in VERDICT_STYLE else "no verdict"


def _interval_text(a: Mapping[str, Any], *, with_level: bool = True) -> str:
    lo, hi = _number(a.get("ci_low")), _number(a.get("ci_high"))
    if lo is None or hi is None:
        return "no interval"
    conf = _number(a.get("confidence"))
    level = f" {units.percent(conf)} CI" if with_level and conf is not None else ""
    return f"{units.interval(lo, hi)}{level}"


def _summary(a: Mapping[str, Any]) -> str:
    """``ratio 1.05 [1.04, 1.06] 99% CI, regression``."""
    ratio = _number(a.get("ratio"))
    if ratio is None:
        return "no successful run"
    return f"ratio {units.sig(ratio)} {_interval_text(a)}, {_verdict(a)}"


_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def time_unit(typical_ns: float) -> tuple[float, str]:
    """The SI unit that shows ``typical_ns`` with 1 to 3 digits before the point."""
    for scale, unit in _TIME_UNITS:
        if typical_ns >= scale:
            return scale, unit
    return 1.0, "ns"


def _log_ratios(run: RunRecord) -> np.ndarray[Any, np.dtype[np.float64]]:
    a = np.asarray(run.baseline.iterations_ns, dtype=np.float64)
    b = np.asarray(run.candidate.iterations_ns, dtype=np.float64)
    n = min(a.size, b.size)
    return np.log(b[:n] / a[:n])


def _threshold(doc: ResultsDocument) -> float | None:
    for b in doc.benchmarks:
        t = _number((b.analysis or {}).get("threshold"))
        if t is not None:
            return t
    return None


# --------------------------------------------------------------------------------------------
# The figures (each returns a matplotlib Figure)


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
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


def forest_figure(doc: ResultsDocument) -> Any:
    """Every benchmark's ratio with its interval; height grows with the number of benchmarks."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    benches = doc.benchmarks
    n = len(benches)
    # Room for the longest name on the left and the numbers on the right, then the axis.
    longest = max((len(label(b.name)) for b in benches), default=0)
    fig = _figure(6.5 + 0.075 * longest, 2.2 + 0.42 * max(n, 1))
    ax = fig.add_subplot()
    threshold = _threshold(doc)
    shared = common_confidence(rows(doc))
    extent = [1.0]
    if threshold is not None:
        extent += [1.0 / (1.0 + threshold), 1.0 + threshold]
        ax.axvspan(1.0 / (1.0 + threshold), 1.0 + threshold, color=_BAND, lw=0, zorder=0)
    ax.axvline(1.0, color="#333333", lw=1.0, ls="--", zorder=1)
    seen: list[str] = []
    for y, b in enumerate(benches):
        a: Mapping[str, Any] = b.analysis or {}
        word = _verdict(a)
        colour, marker, filled = VERDICT_STYLE[word]
        ratio = _number(a.get("ratio"))
        lo, hi = _number(a.get("ci_low")), _number(a.get("ci_high"))
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
            text = f"{units.sig(ratio)} {_interval_text(a, with_level=shared is None)}"
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
    ax.set_yticks(range(n), [label(b.name) for b in benches])
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    if not n:
        ax.text(1.0, 0.0, "no benchmarks", ha="center", va="center", style="italic")
    ax.grid(axis="y", visible=False)
    level = f"{units.percent(shared)} CI" if shared is not None else "CI at each benchmark's level"
    ax.set_xlabel(f"ratio candidate/baseline ({level}), log scale: right of 1 is slower")
    ax.set_title(f"duet: {headline(rows(doc))}", loc="left")
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
        handles.append(Patch(color=_BAND, label=f"no-change band ±{units.sig(threshold * 100)}%"))
    handles.append(Line2D([], [], color="#333333", ls="--", label="1 = same speed"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
    return fig


def _starts_usable(runs: Sequence[RunRecord]) -> bool:
    for r in runs:
        for side in (r.baseline, r.candidate):
            starts = side.iteration_start_ns
            if starts is None or len(starts) != len(side.iterations_ns):
                return False
    return bool(runs)


def iterations_figure(b: BenchmarkRecord) -> Any:
    """Paired iteration times of both sides over time (duet paper, Figure 3), and the ratio
    of every pair below; successful runs only, each in its own band."""
    runs = b.ok_runs()
    a: Mapping[str, Any] = b.analysis or {}
    fig = _figure(10.0, 6.0)
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
                axis.axvspan(left - span, right + span, color=_RUN_SHADE, lw=0, zorder=0)
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
    ratio = _number(a.get("ratio"))
    lo, hi = _number(a.get("ci_low")), _number(a.get("ci_high"))
    axr.axhline(1.0, color="#333333", lw=0.9, ls="--", zorder=1, label="1 = same speed")
    if ratio is not None:
        colour = VERDICT_STYLE[_verdict(a)][0]
        axr.axhline(ratio, color=colour, lw=1.6, zorder=3, label=f"grand ratio {units.sig(ratio)}")
        if lo is not None and hi is not None:
            axr.axhspan(lo, hi, color=colour, alpha=0.25, lw=0, zorder=1, label=_interval_text(a))
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
    ax.set_title(f"{label(b.name, 90)}\n{_summary(a)}{extra}", loc="left")
    return fig


def runs_figure(b: BenchmarkRecord) -> Any:
    """The geometric-mean ratio of every run, with the grand ratio and its interval."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    a: Mapping[str, Any] = b.analysis or {}
    runs = b.ok_runs()
    fig = _figure(max(7.0, 3.0 + 0.22 * len(b.runs)), 4.4)
    ax = fig.add_subplot()
    word = _verdict(a)
    colour = VERDICT_STYLE[word][0]
    ratio = _number(a.get("ratio"))
    lo, hi = _number(a.get("ci_low")), _number(a.get("ci_high"))
    handles: list[Any] = []
    if lo is not None and hi is not None:
        ax.axhspan(lo, hi, color=colour, alpha=0.22, lw=0, zorder=0)
        handles.append(Patch(color=colour, alpha=0.22, label=_interval_text(a)))
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
    ax.set_title(f"{label(b.name, 70)}\n{_summary(a)}", loc="left")
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3))
    return fig


# --------------------------------------------------------------------------------------------
# Files


def plan(doc: ResultsDocument) -> list[tuple[str, str, Callable[[], Any]]]:
    """``(file stem, caption, draw)`` for every plot of ``doc``, in reading order."""
    out: list[tuple[str, str, Callable[[], Any]]] = [
        (
            "ratios",
            "Ratio candidate/baseline of every benchmark",
            functools.partial(forest_figure, doc),
        )
    ]
    for b in doc.benchmarks:
        if not b.ok_runs():
            continue
        stem = slug(b.name)
        out.append(
            (
                f"{stem}-iterations",
                f"{b.name}: paired iteration times of both sides",
                functools.partial(iterations_figure, b),
            )
        )
        out.append(
            (
                f"{stem}-runs",
                f"{b.name}: ratio of every run",
                functools.partial(runs_figure, b),
            )
        )
    return out


def write_plots(doc: ResultsDocument, directory: str | Path) -> list[Path]:
    """Write every plot of ``doc`` as PNG and SVG into ``directory``; returns the files."""
    import matplotlib

    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with matplotlib.rc_context(RC_PARAMS), warnings.catch_warnings():
        # A name in a script DejaVu Sans lacks draws boxes; that is no reason to fail a report.
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        for stem, _caption, draw in plan(doc):
            fig = draw()
            for suffix, options in (
                (".png", {"dpi": _PNG_DPI}),
                (".svg", {"metadata": {"Date": None}}),
            ):
                path = out_dir / f"{stem}{suffix}"
                # The stem is a slug; the check guards the invariant, not the input.
                assert path.resolve().parent == out_dir.resolve(), path
                fig.savefig(path, **options)
                written.append(path)
                # The layout is settled by the first save; keep it rather than solve it again.
                fig.set_layout_engine("none")
    return written


def svg_plots(doc: ResultsDocument, paths: Iterable[Path]) -> dict[str, str]:
    """Caption -> SVG text for the SVG files among ``paths`` (as :func:`write_plots` made
    them), in reading order, for :func:`duet_bench.report.html.render_html`."""
    by_stem = {p.stem: p for p in paths if p.suffix == ".svg"}
    out: dict[str, str] = {}
    for stem, caption, _draw in plan(doc):
        if stem in by_stem:
            out[caption] = by_stem[stem].read_text(encoding="utf-8")
    return out
