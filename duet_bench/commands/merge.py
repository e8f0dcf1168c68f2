"""``duet merge SHARD... --out DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from duet_bench.commands import raise_if_incomplete
from duet_bench.commands.finish import outcome_of
from duet_bench.commands.help import READS_RESULTS, Command
from duet_bench.commands.options import (
    allow_incomplete_option,
    fail_on_option,
)
from duet_bench.commands.output import format_option, is_file_form, out_option, results_path
from duet_bench.defaults import RESULTS_FORMATS, Format
from duet_bench.errors import Outcome
from duet_bench.merge import merge_files
from duet_bench.report import render, report_of
from duet_bench.report.files import write_reports


@click.command(cls=Command, exits=READS_RESULTS, interrupts=False)
@click.argument("shards", nargs=-1, required=True, type=click.Path())
@out_option(None, "the merged results.json and its report.md, junit.xml and metrics.txt")
@format_option(*RESULTS_FORMATS)
@fail_on_option
@allow_incomplete_option
def merge(
    shards: tuple[str, ...], out: str, fmt: Format, fail_on: str, allow_incomplete: bool
) -> Outcome:
    """Merge the results of a suite split with `duet compare --shard i/n` into one document.

    Refuses, naming the difference: a results file that `duet compare` did not write (two
    `duet run` files are not shards of a suite); shards that differ in commits, configuration,
    command-line options, --bench/--shard N, machine kind, isolation or duet version; the same
    shard twice, and a benchmark that appears in two shards.

    An interrupted shard is merged: its benchmarks never started stay listed, and the merged
    document is incomplete (exit 3 after writing it, unless --allow-incomplete).
    """
    path = results_path(out)
    doc = merge_files([Path(s) for s in shards], path)
    report = report_of(doc)
    if not is_file_form(out):
        write_reports(report, path.parent, plots=False)
    click.echo(render(report, fmt), nl=False)
    click.echo(f"merged {len(shards)} shards into {path}", err=True)
    raise_if_incomplete(doc, allow=allow_incomplete)
    return outcome_of(doc, fail_on)
