"""``duet compare BASE HEAD``: check out, build and measure two git versions; report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from duet_bench import interrupts
from duet_bench.commands.finish import finish
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    analysis_options,
    bench_option,
    fail_on_option,
    run_options,
    until_decided_options,
    versions_options,
)
from duet_bench.commands.output import format_option, out_option
from duet_bench.defaults import RESULTS_FORMATS
from duet_bench.errors import EXIT_INFRASTRUCTURE, EXIT_USAGE, Outcome
from duet_bench.options.measuring import CompareCommandOptions
from duet_bench.report.files import write_reports
from duet_bench.report.model import report_of
from duet_bench.untrusted import for_terminal

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.options.measuring import CompareCommandOptions


@click.command(
    cls=Command,
    exits={
        EXIT_USAGE: "usage or configuration error (a ref that names no commit included)",
        EXIT_INFRASTRUCTURE: "a build failed, a benchmark failed or is missing in BASE (see "
        "--allow-missing), or the machine refused",
    },
)
@click.argument("base")
@click.argument("head", default="HEAD")
@click.option(
    "--config",
    metavar="PATH",
    help="Configuration file (default duet.toml, then pyproject.toml, at HEAD). A path "
    "inside the repository is read at HEAD's commit; one outside it is read from disk.",
)
@out_option("duet-results", "results.json, report.md, junit.xml, metrics.txt and plots/")
@bench_option(
    "Only the benchmarks whose name is PATTERN or matches it as a glob (quote it: 'parse*')."
)
@click.option("--shard", metavar="I/N", help="Measure shard I of N of the suite (see duet merge).")
@versions_options
@click.option("--no-plots", is_flag=True, help="Skip the plots (faster).")
@click.option(
    "--allow-missing",
    is_flag=True,
    help="A benchmark that BASE's configuration lacks (added by this change) is reported as "
    "not measured instead of failing the command with exit 3.",
)
@run_options
@until_decided_options
@analysis_options
@fail_on_option
@format_option(*RESULTS_FORMATS)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def compare(ctx: click.Context, /, **_given: Any) -> Outcome:
    """Measure HEAD against BASE: check both out into worktrees, build each, run the suite of
    HEAD's configuration with both versions at the same time, and report.

    \b
    BASE and HEAD are any git refs: branches, tags, shas, HEAD~1, origin/main.
    """
    return compare_versions(CompareCommandOptions.from_click(ctx))


def compare_versions(o: CompareCommandOptions) -> Outcome:
    """``duet compare`` with its options: compare, print the report, exit by the verdicts."""
    from duet_bench.compare import compare as run_compare

    interrupts.install()
    doc = run_compare(
        o.comparison, on_note=lambda text: click.echo(f"duet: {for_terminal(text)}", err=True)
    )
    out_dir = o.comparison.out_dir
    report = report_of(doc)  # once, for the files and the terminal
    write_reports(report, out_dir, plots=o.comparison.plots)
    max_failures = doc.config.get("max_failures", o.max_failures)
    missing = [] if o.allow_missing else doc.config.get("missing_in_baseline") or []
    outcome = finish(
        report,
        str(out_dir / "results.json"),
        o.fmt,
        o.fail_on,
        max_failures,
        missing=[str(name) for name in missing],
    )
    if o.fmt == "text":
        click.echo(f"report: {out_dir / 'report.md'}", err=True)
    sys.stdout.flush()
    return outcome
