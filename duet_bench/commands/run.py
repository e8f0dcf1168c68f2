"""``duet run``: two commands (or python callables) measured against each other, with every
setting from the command line (no configuration, no git)."""

from __future__ import annotations

from typing import Any

import click

from duet_bench import interrupts, settings
from duet_bench.commands.finish import finish
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    analysis_options,
    fail_on_option,
    run_options,
    until_decided_options,
)
from duet_bench.commands.output import format_option, out_option
from duet_bench.defaults import RESULTS_FORMATS
from duet_bench.errors import Outcome
from duet_bench.options.measuring import RunOptions
from duet_bench.plan import build
from duet_bench.report.files import write_text_reports
from duet_bench.report.model import report_of
from duet_bench.untrusted import for_terminal


@click.command(cls=Command)
@click.option("--baseline", metavar="CMD", help="Command of the baseline (old) version.")
@click.option("--candidate", metavar="CMD", help="Command of the candidate (new) version.")
@click.option(
    "--native",
    is_flag=True,
    help="The commands are native programs that use the barrier client themselves.",
)
@click.option("--python-baseline", metavar="INTERP", help="Python interpreter of the baseline.")
@click.option("--python-candidate", metavar="INTERP", help="Python interpreter of the candidate.")
@click.option(
    "--callable",
    "callable_",
    metavar="MODULE:FUNCTION",
    help="The python benchmark: called every iteration.",
)
@click.option(
    "--setup",
    metavar="MODULE:FUNCTION",
    help="Called once per run before the first iteration; its result is passed on.",
)
@click.option(
    "--baseline-dir",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Working directory (and python path) of the baseline.",
)
@click.option(
    "--candidate-dir",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Working directory (and python path) of the candidate.",
)
@click.option("--name", default=None, help="Benchmark name in reports (default: from the command).")
@run_options
@until_decided_options
@out_option(
    "duet-results",
    "results.json (rewritten after every run), report.md, junit.xml and metrics.txt",
)
@format_option(*RESULTS_FORMATS)
@analysis_options
@fail_on_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def run(ctx: click.Context, /, **_given: Any) -> Outcome:
    """Measure two commands (or python callables) against each other, at the same time.

    \b
    Examples:
      duet run --baseline ./old/app --candidate ./new/app --runs 20
      duet run --python-baseline old/.venv/bin/python --python-candidate new/.venv/bin/python \\
               --callable mypkg.bench:parse
    """
    return measure_run(RunOptions.from_click(ctx))


def measure_run(o: RunOptions) -> Outcome:
    """``duet run`` with its options: plan the one benchmark, measure it, write and print the
    reports."""
    from duet_bench.session import continuing, measure

    given = o.settings()
    resolved = settings.resolve(given)
    planned = build(o.name, o.sides.side("baseline"), o.sides.side("candidate"), resolved)
    bench = planned.spec

    options = o.machine.session(planned.analysis, "run", o.out.results)
    if o.continue_from is not None:
        options = continuing(options, o.continue_from, bench)
    click.echo(
        f"duet: {for_terminal(bench.name)}: "
        + (
            f"{bench.runs} runs"
            if bench.until_decided is None
            else f"until decided, {bench.until_decided.min_runs} to {bench.runs} runs"
            + (
                f" within {bench.until_decided.budget_s:g} s"
                if bench.until_decided.budget_s
                else ""
            )
        )
        + f" x ({bench.warmup} warm-up + {bench.iterations}) "
        f"iterations, timeout {bench.timeout_s:g} s per iteration, method {bench.method}"
        + (f", crossover {bench.crossover}" if bench.method == "duet" else ""),
        err=True,
    )
    interrupts.install()
    doc = measure([bench], options)
    report = report_of(doc)  # once, for the files and the terminal
    if o.out.reports_dir is not None:
        write_text_reports(report, o.out.reports_dir)
    return finish(report, str(o.out.results), o.fmt, o.fail_on, o.machine.max_failures)
