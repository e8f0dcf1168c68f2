"""``duet github annotate|summary|outputs PATH``: the steps of the GitHub composite action
(``action.yml`` at the repository root) that turn duet's output into workflow commands, the job
summary and the step's outputs. What they print is made by :mod:`duet_bench.ci.github`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from duet_bench.ci import github as gh
from duet_bench.ci.github import escape_data
from duet_bench.commands.help import Command
from duet_bench.errors import EXIT_INFRASTRUCTURE, EXIT_OK, EXIT_REGRESSION, DuetError
from duet_bench.isolation.privileges import open_as_invoking_user
from duet_bench.results import load_given

if TYPE_CHECKING:
    from duet_bench.results import ResultsDocument

#: What the action's steps print (the WHAT argument).
WHATS = ("annotate", "summary", "outputs")


@click.command(
    cls=Command,
    exits={
        EXIT_OK: "printed, also when RESULTS cannot be read (a ::warning says why) or REPORT "
        "is missing (the summary says that duet wrote no report): the action's last step "
        "fails the job by duet compare's exit code",
        EXIT_REGRESSION: "",
        EXIT_INFRASTRUCTURE: "RESULTS were read but could not be analysed (outputs of results "
        "without an analysis)",
    },
    interrupts=False,
)
@click.argument("what", type=click.Choice(WHATS), metavar="WHAT")
@click.argument("path", type=click.Path(path_type=str))
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=None,
    metavar="N",
    help="annotate: at most N ::error commands, then one ::notice that counts the rest "
    "(default: 10, what GitHub shows for a step).",
)
def github(what: str, path: str, limit: int | None) -> None:
    """Print the job summary, regression annotations or outputs of duet's GitHub action, from
    the results or the report of a duet run:

    \b
      annotate RESULTS   ::error commands, one per regression
      summary REPORT     the job summary ($GITHUB_STEP_SUMMARY)
      outputs RESULTS    verdict=... and counts ($GITHUB_OUTPUT)

    RESULTS is a results.json or the --out DIR that holds one; REPORT the report.md beside
    it. The action (action.yml) runs these after duet compare, whatever its exit code.

    \b
    Examples:
      duet github summary duet-results/report.md >> "$GITHUB_STEP_SUMMARY"
      duet github outputs duet-results >> "$GITHUB_OUTPUT"
    """
    # print, not click.echo: the lines go to GitHub as written (click would strip escapes).
    if what == "summary":
        sys.stdout.write(gh.summary(_read_report(path)))
        return
    doc = _results(path, warn_on_stderr=what == "outputs")
    if doc is None:
        return
    if what == "outputs":
        print("\n".join(gh.outputs(doc)))
        return
    shown = gh.MAX_ERROR_ANNOTATIONS if limit is None else limit
    for line in gh.error_annotations(doc, limit=shown):
        print(line)


def _results(path: str, *, warn_on_stderr: bool) -> ResultsDocument | None:
    """The results at ``path``, read as the user who ran sudo; unreadable ones are a
    ``::warning`` workflow command and None (stderr where stdout goes to ``$GITHUB_OUTPUT``)."""
    try:
        return load_given(path)
    except DuetError as e:
        print(
            f"::warning title=duet::{escape_data(str(e))}",
            file=sys.stderr if warn_on_stderr else sys.stdout,
        )
        return None


def _read_report(path: str) -> str | None:
    """The report at ``path`` (opened as the user who ran sudo, as every file a user names),
    or None when it cannot be read."""
    import os

    try:
        with os.fdopen(open_as_invoking_user(path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
