"""The report files beside a ``results.json``: ``report.md``, ``junit.xml``, ``metrics.txt`` and
``plots/``, what ``duet run``, ``duet compare`` and ``duet merge`` write in their ``--out``
directory, each rendered by its renderer and written atomically."""

from __future__ import annotations

import logging
from pathlib import Path

from duet_bench import extras, files
from duet_bench.defaults import Format
from duet_bench.errors import ResultsError
from duet_bench.report import render
from duet_bench.report.model import Report

log = logging.getLogger(__name__)

__all__ = ["PLOTS_NOT_DRAWN", "write_reports", "write_text_reports"]

#: report.md's last line when plots were wanted and matplotlib is not installed.
PLOTS_NOT_DRAWN = (
    "_Plots not drawn: matplotlib is not installed (`pip install 'duet-bench[plots]'`; "
    "`--no-plots` says you do not want them)._"
)


def write_reports(report: Report, out_dir: Path, *, plots: bool = True) -> list[Path]:
    """report.md, junit.xml, metrics.txt (:func:`write_text_reports`) and plots/ next to
    results.json, all from one :class:`~duet_bench.report.model.Report`."""
    # The core install (what a CI job needs) has no matplotlib: the reports are whole, and
    # report.md says once, on its last line, that the plots were not drawn (not a warning on
    # every compare's stderr).
    plots_missing = plots and not extras.available("matplotlib")
    written = write_text_reports(report, out_dir, plots_missing=plots_missing)
    if plots and not plots_missing:
        from duet_bench.report.plots import write_plots  # matplotlib: about 0.5 s to import

        try:
            written += write_plots(report.doc, out_dir / "plots")
        except OSError as e:
            raise ResultsError(
                f"{out_dir / 'plots'}: could not write the plots ({e.strerror or e}); the "
                "measurements are in results.json beside it",
                fix=files.fix_for(e, "choose another --out, free disk space, or --no-plots"),
            ) from e
    return written


def write_text_reports(report: Report, out_dir: Path, *, plots_missing: bool = False) -> list[Path]:
    """report.md, junit.xml and metrics.txt next to results.json (``duet run`` writes these
    alone: it draws no plots); report.md's last line says when ``plots_missing``."""
    written = []
    reports: tuple[tuple[str, Format], ...] = (
        ("report.md", "markdown"),
        ("junit.xml", "junit"),
        ("metrics.txt", "openmetrics"),
    )
    for name, fmt in reports:
        try:
            text = render(report, fmt)
        except ValueError as e:  # a format this build does not have
            log.warning("could not write %s: %s", name, e)
            continue
        if fmt == "markdown" and plots_missing:
            text += f"\n{PLOTS_NOT_DRAWN}\n"
        try:
            files.write_atomic(out_dir / name, text)
        except OSError as e:
            raise ResultsError(
                f"{out_dir / name}: could not write the report ({e.strerror or e}); the "
                "measurements are in results.json beside it",
                fix=files.fix_for(
                    e, "choose another --out, or free disk space; `duet report` renders it again"
                ),
            ) from e
        written.append(out_dir / name)
    return written
