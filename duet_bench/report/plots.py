"""Plots of an analysed document, as PNG (to look at) and SVG (inlined by the HTML report).

1. ``ratios``: a forest plot, every benchmark's ratio with its confidence interval
   (:mod:`duet_bench.report.plot_summary`).
2. ``<benchmark>-iterations``: the paired iterations of both sides over time in the metric that
   decided, as in the duet paper's Figure 3, and the ratio of every pair
   (:mod:`duet_bench.report.plot_benchmark`).
3. ``<benchmark>-runs``: the geometric-mean ratio of every run in every metric recorded, one
   panel each with its own grand ratio and interval (:mod:`duet_bench.report.plot_benchmark`).

Colours, rc parameters and labels are shared in :mod:`duet_bench.report.plot_style`. This module
plans the files (which plots, in reading order, under which stem), writes them and hands the
SVGs to the HTML report; it re-exports the names callers used from it before the split.

matplotlib is imported inside the functions (``duet --help`` stays fast) and used through
``Figure`` and the Agg canvas, never ``pyplot``: no global figure registry to leak, and nothing
here depends on a display. Benchmark names are untrusted: file names are slugs that cannot
leave the directory, and labels are drawn with mathtext off, so ``$\\foo$`` is just text.
"""

from __future__ import annotations

import functools
import hashlib
import re
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from duet_bench import dirfd
from duet_bench.metrics import METRIC_NAMES
from duet_bench.report.plot_benchmark import deciding_metric, iterations_figure, runs_figure
from duet_bench.report.plot_style import (
    RC_PARAMS,
    SIDE_STYLE,
    VERDICT_STYLE,
    label,
    time_unit,
)
from duet_bench.report.plot_summary import forest_figure
from duet_bench.results import BenchmarkRecord, ResultsDocument

__all__ = [
    "RC_PARAMS",
    "SIDE_STYLE",
    "VERDICT_STYLE",
    "forest_figure",
    "iterations_figure",
    "label",
    "plan",
    "runs_figure",
    "slug",
    "svg_plots",
    "time_unit",
    "write_plots",
]

_PNG_DPI = 150
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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
                f"{b.name}: paired iterations of both sides in {_metric(b)}, the metric that "
                "decided",
                functools.partial(iterations_figure, b),
            )
        )
        out.append(
            (
                f"{stem}-runs",
                f"{b.name}: ratio of every run, in every metric recorded ({_metric(b)} decided)",
                functools.partial(runs_figure, b),
            )
        )
    return out


def _metric(b: BenchmarkRecord) -> str:
    return METRIC_NAMES[deciding_metric(b)]


def write_plots(doc: ResultsDocument, directory: str | Path) -> list[Path]:
    """Write every plot of ``doc`` as PNG and SVG into ``directory``; returns the files."""
    import matplotlib

    out_dir = Path(directory)
    dirfd.make_directories(out_dir)
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
                assert path.parent == out_dir, path
                # Through a file of duet's own (root never writes through a planted link).
                with dirfd.replacing(path) as f:
                    fig.savefig(f, format=suffix[1:], **options)
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
