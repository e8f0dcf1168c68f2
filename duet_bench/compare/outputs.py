"""What ``duet compare`` writes beside ``results.json``: the reports (report.md, junit.xml,
metrics.txt, plots/), or a results file that says why nothing was measured."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duet_bench import __version__, extras, files, results
from duet_bench.defaults import Format
from duet_bench.errors import ResultsError
from duet_bench.report import render
from duet_bench.results import ResultsDocument

log = logging.getLogger(__name__)


def write_outputs(doc: ResultsDocument, out_dir: Path, *, plots: bool = True) -> list[Path]:
    """report.md, junit.xml, metrics.txt and plots/ next to results.json."""
    written = []
    reports: tuple[tuple[str, Format], ...] = (
        ("report.md", "markdown"),
        ("junit.xml", "junit"),
        ("metrics.txt", "openmetrics"),
    )
    for name, fmt in reports:
        try:
            text = render(doc, fmt)
        except ValueError as e:  # a format this build does not have
            log.warning("could not write %s: %s", name, e)
            continue
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
    if plots:
        if extras.available("matplotlib"):
            from duet_bench.report.plots import write_plots

            try:
                written += write_plots(doc, out_dir / "plots")
            except OSError as e:
                raise ResultsError(
                    f"{out_dir / 'plots'}: could not write the plots ({e.strerror or e}); the "
                    "measurements are in results.json beside it",
                    fix=files.fix_for(e, "choose another --out, free disk space, or --no-plots"),
                ) from e
        else:
            # The core install (what a CI job needs) has no matplotlib: the reports are whole.
            log.warning(
                "plots skipped: matplotlib is not installed. Fix: %s, or --no-plots",
                extras.install_hint("matplotlib"),
            )
    return written


def write_stopped(
    path: Path,
    suite: Mapping[str, Any],
    versions: Mapping[str, Any],
    why: str,
    *,
    config_source: Mapping[str, Any],
) -> None:
    """A results file that says why nothing was measured (CI keeps it as an artifact)."""
    doc = ResultsDocument(
        benchmarks=(),
        tool={"name": "duet-bench", "version": __version__},
        config={
            "command": "compare",
            "suite": dict(suite),
            "versions": dict(versions),
            "config_source": dict(config_source),
        },
        state={"complete": False, "stopped": why},
    )
    results.save(doc, path)
