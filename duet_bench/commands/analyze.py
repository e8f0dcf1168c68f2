"""``duet analyze RESULTS``: every benchmark's statistics and verdict again from the raw
samples."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from duet_bench.commands import raise_if_incomplete, reanalyze
from duet_bench.commands.finish import color_for, outcome_of
from duet_bench.commands.help import READS_RESULTS, Command
from duet_bench.commands.options import (
    allow_incomplete_option,
    analysis_options,
    fail_on_option,
)
from duet_bench.commands.output import format_option
from duet_bench.defaults import RESULTS_FORMATS
from duet_bench.errors import Outcome
from duet_bench.options.reading import AnalyzeOptions
from duet_bench.report import render, report_of
from duet_bench.report.layout import terminal_width
from duet_bench.results import load_given

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.options.reading import AnalyzeOptions


@click.command(cls=Command, exits=READS_RESULTS, interrupts=False)
@click.argument("results", type=click.Path(path_type=str))
@format_option(*RESULTS_FORMATS, what="json: the whole document with every analysis filled.")
@analysis_options
@fail_on_option
@allow_incomplete_option
@click.pass_context
def analyze(ctx: click.Context, /, **_given: Any) -> Outcome:
    """Recompute every benchmark's statistics and verdict from the raw samples in RESULTS (a
    results.json, or the --out DIR that holds one).

    Each benchmark is analysed with the settings it was measured with (duet.toml's
    `threshold`, `confidence` and `metric`, or the options of the run), except those given
    here explicitly."""
    return analyze_results(AnalyzeOptions.from_click(ctx))


def analyze_results(o: AnalyzeOptions) -> Outcome:
    """``duet analyze`` with its options: analyse again, print the report, exit by the
    verdicts."""
    doc = load_given(o.results)
    analysed = reanalyze(doc, o.analysis.settings(), o.analysis.explicit, only_missing=False)
    color, width = o.fmt == "text" and color_for(sys.stdout), terminal_width(sys.stdout)
    click.echo(render(report_of(analysed), o.fmt, color=color, width=width), nl=False)
    raise_if_incomplete(analysed, allow=o.allow_incomplete)
    return outcome_of(analysed, o.fail_on)
