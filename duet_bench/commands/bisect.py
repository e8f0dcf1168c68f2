"""``duet bisect GOOD BAD``: find the commit that made a benchmark slower."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from duet_bench import interrupts
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    _duration,
    analysis_options,
    bench_option,
    bounded,
    run_options,
    versions_options,
)
from duet_bench.commands.output import format_option, out_option
from duet_bench.errors import EXIT_INFRASTRUCTURE, EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, Outcome
from duet_bench.options.measuring import BisectCommandOptions
from duet_bench.report.bisect import render
from duet_bench.results import write_atomic
from duet_bench.untrusted import for_terminal

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.options.measuring import BisectCommandOptions

#: The outcome of each result of the search; any other (none: stopped undecided) is
#: :attr:`Outcome.UNDECIDED`.
OUTCOMES: dict[str, Outcome] = {
    "not slower": Outcome.OK,
    "single": Outcome.FAILS,
    "spread": Outcome.FAILS,
}


@click.command(
    cls=Command,
    exits={
        EXIT_OK: "BAD is not slower than GOOD",
        EXIT_REGRESSION: "the slowdown was located (one commit or spread)",
        EXIT_USAGE: "usage or configuration error (GOOD not an ancestor of BAD, no such benchmark "
        "or ref)",
        EXIT_INFRASTRUCTURE: "a build or benchmark failed, the machine refused, or the search "
        "stopped undecided (bisect.json says what would decide it; run again with the same --out)",
    },
)
@click.argument("good")
@click.argument("bad", default="HEAD")
@bench_option(
    "The benchmark to follow: its name, or a glob that matches one name (needed when the "
    "suite has several)."
)
@click.option(
    "--config",
    metavar="PATH",
    help="Configuration file (default duet.toml, then pyproject.toml, at BAD). A path inside "
    "the repository is read at BAD's commit; one outside it is read from disk.",
)
@out_option(
    "duet-bisect",
    "bisect.json, report.md, steps/ (every comparison's results files) and logs/. Run again "
    "with the same --out to resume: what was measured is read back",
)
@click.option(
    "--max-runs",
    type=bounded("runs"),
    metavar="N",
    help="Fixed-design steps (as --runs or the configuration's runs give): runs in all one "
    "comparison may take when it is inconclusive (more runs as the planning asks, up to this). "
    "Default: 4 x --runs.",
)
@click.option(
    "--step-max-runs",
    type=bounded("runs", low=3),
    metavar="N",
    help="Measure every step until decided (the default, unless --runs, --max-runs or the "
    "configuration's runs is given): stop as soon as its verdict is decided, at the latest "
    "after N runs [default: 80]; no top-up round (the manual's statistics page, method 2b). "
    "The configuration's max_runs and budget do the same.",
)
@click.option(
    "--step-min-runs",
    type=bounded("runs", low=3),
    metavar="N",
    help="Measuring every step until decided: the first look, after N runs [default: 5].",
)
@click.option(
    "--step-budget",
    callback=_duration,
    metavar="DURATION",
    help="Measure every step until decided within this machine time each (5m, 90s) "
    "[default without --step-max-runs: 10m; with it: none].",
)
@click.option(
    "--spread-share",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.75,
    show_default=True,
    metavar="SHARE",
    help="A commit is named alone when it carries at least this share of GOOD..BAD's change "
    "(log ratio); below it the search goes on for the commits that carry the rest.",
)
@versions_options
@run_options
@analysis_options
@format_option(
    "text",
    "markdown",
    "json",
    elsewhere="duet report on a step's results under --out's steps/",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar (the step lines stay).")
@click.pass_context
def bisect(ctx: click.Context, /, **_given: Any) -> Outcome:
    """Find the commit between GOOD and BAD that made a benchmark slower: every step is a duet
    comparison (a commit against GOOD, both built in worktrees, run at the same time), an
    inconclusive one gets more runs, and the commit found is confirmed against its parent.

    \b
    GOOD is the older commit where the benchmark was fast, BAD (default HEAD) a later one
    where it is slow; GOOD must be on BAD's first-parent line (a merge is one step).
    A slowdown carried by several commits is reported as spread, naming them.
    """
    return search(BisectCommandOptions.from_click(ctx))


def search(o: BisectCommandOptions) -> Outcome:
    """``duet bisect`` with its options: search, print the report, exit by the result."""
    from duet_bench.bisect import Bisection
    from duet_bench.bisect import bisect as run_bisect

    def write_report(state: Bisection) -> None:
        write_atomic(o.search.out_dir / "report.md", render(state, "markdown"))

    interrupts.install()
    state = run_bisect(
        o.search,
        on_note=lambda text: click.echo(f"duet: {for_terminal(text)}", err=True),
        on_save=write_report,
    )
    click.echo(render(state, o.fmt), nl=False)
    click.echo(f"results: {o.search.out_dir / 'bisect.json'}", err=True)
    sys.stdout.flush()
    if state.result is None:
        return Outcome.UNDECIDED
    return OUTCOMES.get(state.result.outcome, Outcome.UNDECIDED)
