"""Reports over an analysed results document: one module per format.

Only this package and the CLI print; every renderer is a pure function ``Report -> str`` over the
:class:`~duet_bench.report.model.Report` built once from the document (:func:`report_of`).
"""

from __future__ import annotations

from collections.abc import Mapping

from duet_bench.defaults import FORMATS, Format
from duet_bench.report.html import render_html
from duet_bench.report.junit import render_junit
from duet_bench.report.layout import WIDTH
from duet_bench.report.markdown import render_markdown
from duet_bench.report.model import Report
from duet_bench.report.model import report_of as report_of
from duet_bench.report.openmetrics import render_openmetrics
from duet_bench.report.text import render_text
from duet_bench.results import dumps


def render(
    report: Report,
    fmt: Format,
    *,
    color: bool = False,
    plots: Mapping[str, str] | None = None,
    width: int | None = None,
) -> str:
    """Render the report of an analysed document (:func:`report_of`) in ``fmt``; several
    formats of one document share one :class:`Report`.

    ``color`` and ``width`` are for ``text`` (a terminal; :func:`duet_bench.report.layout.
    terminal_width` gives the width, 100 columns by default); ``plots`` (caption -> SVG
    document) for ``html``, which inlines them.
    """
    if fmt == "text":
        return render_text(report, color=color, width=width or WIDTH)
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "junit":
        return render_junit(report)
    if fmt == "openmetrics":
        return render_openmetrics(report)
    if fmt == "html":
        return render_html(report, plots=plots)
    if fmt != "json":
        raise ValueError(f"unknown report format {fmt!r}; one of {', '.join(FORMATS)}")
    from dataclasses import replace

    data, incomplete = report.doc, report.incomplete
    if incomplete:  # said in the state, next to complete: false
        data = replace(data, state={**data.state, "completeness": incomplete})
    return dumps(data)
