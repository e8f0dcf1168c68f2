"""``duet merge SHARD.json... --out M.json``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duet.cli import FAIL_ON, reports_errors
from duet.errors import EXIT_REGRESSION


@click.command()
@click.argument("shards", nargs=-1, required=True, type=click.Path())
@click.option(
    "--out", type=click.Path(dir_okay=False), required=True, help="The merged results file."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
@click.option("--fail-on", type=FAIL_ON, default="regression", show_default=True)
@reports_errors
def merge(shards: tuple[str, ...], out: str, fmt: str, fail_on: str) -> None:
    """Merge the results of a suite split with `duet compare --shard i/n` into one document.

    Refuses shards that differ in commits, configuration or machine kind, naming the
    difference, and a benchmark that appears in two shards.
    """
    from duet.analysis import fails, verdicts_of
    from duet.merge import merge_files
    from duet.report import render

    doc = merge_files([Path(s) for s in shards], Path(out))
    click.echo(render(doc, fmt), nl=False)  # type: ignore[arg-type]
    click.echo(f"merged {len(shards)} shards into {out}", err=True)
    if fails(verdicts_of(doc), fail_on):  # type: ignore[arg-type]
        sys.exit(EXIT_REGRESSION)
