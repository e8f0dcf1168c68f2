"""``duet report RESULTS --format ... [--plot DIR] [--out DIR]``."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duet_bench import extras, files
from duet_bench.commands import raise_if_incomplete, reanalyze
from duet_bench.commands.finish import color_for
from duet_bench.commands.help import READS_RESULTS, Command
from duet_bench.commands.options import (
    allow_incomplete_option,
    analysis_options,
)
from duet_bench.commands.output import REPORT_FILES, format_option
from duet_bench.defaults import FORMATS
from duet_bench.errors import EnvironmentNotReady, UsageError
from duet_bench.options.reading import ReportOptions
from duet_bench.report import render, report_of
from duet_bench.report.layout import terminal_width
from duet_bench.results import load_given

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.options.reading import ReportOptions


@click.command(
    cls=Command,
    exits={
        0: "report written (whatever the verdicts; see duet analyze --fail-on)",
        1: "",
        **READS_RESULTS,
    },
    interrupts=False,
)
@click.argument("results", type=click.Path(path_type=str))
@format_option(
    *FORMATS,
    what="text for a terminal, markdown for a PR comment, junit and openmetrics for CI "
    "widgets, html for a standalone page with the plots, json for the whole document.",
)
@click.option(
    "--plot",
    "plot_dir",
    type=click.Path(file_okay=False, path_type=str),
    metavar="DIR",
    help="Also write the plots (PNG and SVG) into DIR.",
)
@click.option(
    "--out",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=str),
    help="Write the report into DIR (made if missing) instead of standard output, named as "
    "duet compare names its reports: report.md, junit.xml, metrics.txt, report.html, "
    "report.txt, report.json.",
)
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=str),
    hidden=True,
    help="Deprecated: the report into FILE; use --out DIR.",
)
@analysis_options
@allow_incomplete_option
@click.pass_context
def report(ctx: click.Context, /, **_given: Any) -> None:
    """Report on RESULTS (a results.json, or the --out DIR that holds one) in another format,
    without measuring again.

    \b
    Uses the analysis stored in RESULTS; a benchmark without one is analysed from its raw
    samples. Giving any analysis option (--confidence, --threshold, ...) re-analyses every
    benchmark with it, and with the other settings it was measured with. The html format
    inlines the plots.
    """
    write_report(ReportOptions.from_click(ctx))


def write_report(o: ReportOptions) -> None:
    """``duet report`` with its options: the report on standard output or into ``--out``."""
    given = o.analysis
    doc = reanalyze(
        load_given(o.results), given.settings(), given.explicit, only_missing=not given.explicit
    )

    fmt = o.fmt
    plots: dict[str, str] | None = None
    if o.plot_dir or fmt == "html":
        plots = _plots(doc, o.plot_dir, required=bool(o.plot_dir))
    out = _report_file(o.out, o.output, fmt)
    to_terminal = out is None and color_for(sys.stdout)
    width = terminal_width(sys.stdout) if out is None else None
    color = fmt == "text" and to_terminal
    text = render(report_of(doc), fmt, color=color, plots=plots, width=width)
    if out is None:
        click.echo(text, nl=False)
        raise_if_incomplete(doc, allow=o.allow_incomplete)
        return
    try:
        files.write_atomic(out, text)
    except OSError as e:
        raise EnvironmentNotReady(
            f"{out}: could not write the report ({e.strerror or e})",
            fix=files.fix_for(e, "choose another --out, or free disk space"),
        ) from e
    click.echo(f"report: {out}", err=True)
    raise_if_incomplete(doc, allow=o.allow_incomplete)


def _report_file(out: str | None, output: str | None, fmt: str) -> Path | None:
    """Where the report goes: ``--out DIR``'s file for ``fmt``, the deprecated ``--output
    FILE`` (with a warning naming ``--out``), or None for standard output."""
    if out is not None and output is not None:
        raise UsageError(
            "give --out DIR or the deprecated --output FILE, not both",
            fix=f"--out {out}",
        )
    if out is not None:
        return Path(out) / REPORT_FILES[fmt]
    if output is not None:
        directory = str(Path(output).parent)
        click.echo(
            f"duet: warning: --output {output} is deprecated and will be refused in a later "
            f"version; use --out {directory} (it writes {REPORT_FILES[fmt]} there)",
            err=True,
        )
        return Path(output)
    return None


def _plots(doc: Any, plot_dir: str | None, *, required: bool) -> dict[str, str] | None:
    """Write the plots (into ``plot_dir``, or a temporary directory just for the html page)
    and return them as caption -> SVG text. Without matplotlib: an error when the plots were
    asked for, a warning when only the html page would have shown them."""
    from duet_bench.report.plots import svg_plots, write_plots

    if not extras.available("matplotlib"):
        if required:
            raise extras.missing_error("matplotlib")
        click.echo(
            "duet: warning: html report without plots: matplotlib is not installed. "
            f"Fix: {extras.install_hint('matplotlib')}",
            err=True,
        )
        return None

    def draw(directory: Path) -> dict[str, str]:
        try:
            written = write_plots(doc, directory)
        except OSError as err:
            raise EnvironmentNotReady(
                f"{directory}: could not write the plots ({err.strerror or err})",
                fix=files.fix_for(err, "choose another --plot directory, or free disk space"),
            ) from err
        return svg_plots(doc, written)

    if plot_dir:
        svgs = draw(Path(plot_dir))
        click.echo(f"plots: {plot_dir} ({2 * len(svgs)} files)", err=True)
        return svgs
    with tempfile.TemporaryDirectory(prefix="duet-plots-") as tmp:
        return draw(Path(tmp))
