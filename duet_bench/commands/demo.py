"""``duet demo``: the bundled example measured end to end (:mod:`duet_bench.demo` does the
work)."""

from __future__ import annotations

import sys

import click

from duet_bench import defaults, interrupts
from duet_bench.commands.finish import color_for
from duet_bench.commands.help import Command
from duet_bench.commands.options import bounded, crossover_option
from duet_bench.commands.output import out_option
from duet_bench.report import render, report_of


@click.command(
    cls=Command,
    exits={
        0: "the demo ran (whatever it found)",
        1: "",
        3: "a benchmark failed, or the machine refused (no gcc, no cores)",
    },
)
@out_option("duet-results/demo", "the results and report of each condition (quiet/, busy/)")
@click.option(
    "--runs",
    type=bounded("runs", low=5),
    default=defaults.DEMO_RUNS,
    show_default=True,
    metavar="N",
    help="Runs per condition; fewer are quicker and may leave the 5% inconclusive.",
)
@click.option(
    "--isolation",
    type=click.Choice(defaults.ISOLATIONS),
    default=defaults.DEFAULT_ISOLATION,
    show_default=True,
)
@click.option(
    "--busy/--no-busy",
    default=True,
    show_default=True,
    help="Measure a second time with one busy process beside the sides.",
)
@crossover_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--wait",
    is_flag=True,
    help="When another duet is measuring on this machine, queue behind it instead of "
    "refusing (exit 3). The lock is $DUET_LOCK, else /run/lock/duet.lock.",
)
def demo(
    out: str,
    runs: int,
    isolation: defaults.Isolation,
    busy: bool,
    crossover: defaults.Crossover,
    quiet: bool,
    wait: bool,
) -> None:
    """The bundled example end to end: two versions of a small C program, the second doing 5%
    more work, measured on the machine as it is and with one busy process beside it. Needs gcc.
    Takes about a minute."""
    from duet_bench.demo import CONDITIONS, expected_against_measured, run_demo
    from duet_bench.session import raise_if_broken

    interrupts.install()
    conditions = CONDITIONS if busy else CONDITIONS[:1]
    measured, out_dir = run_demo(
        out,
        runs=runs,
        isolation=isolation,
        progress=not quiet,
        conditions=conditions,
        wait=wait,
        crossover=crossover,
    )
    for condition, doc in measured:
        click.echo(f"\n== {condition.name}")
        click.echo(render(report_of(doc), "text", color=color_for(sys.stdout)), nl=False)
        raise_if_broken(doc, defaults.DEFAULT_MAX_FAILURES)
    click.echo("\nThe demo's candidate does 5% more work than its baseline (ratio 1.05):\n")
    click.echo(expected_against_measured(measured), nl=False)
    click.echo(f"\nresults and reports: {out_dir}/{{quiet,busy}}/")
