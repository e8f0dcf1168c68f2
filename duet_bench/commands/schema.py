"""``duet schema [RESULTS]``: print the JSON Schema of ``results.json``, or check a results file
against it (:mod:`duet_bench.results.schema`; docs/results-schema.md).

A command of its own rather than an option of ``duet report``: printing the schema reads no
results file, and checking one renders nothing; ``duet --help`` lists it where a user looks.
"""

from __future__ import annotations

import json

import click

from duet_bench.commands.help import Command
from duet_bench.errors import EXIT_INFRASTRUCTURE, ResultsError
from duet_bench.results.load import read_given
from duet_bench.results.schema import MAX_PROBLEMS, problems, schema_text
from duet_bench.untrusted import for_terminal


@click.command(
    cls=Command,
    exits={
        0: "the schema printed, or RESULTS matches it",
        1: "",
        EXIT_INFRASTRUCTURE: "RESULTS does not match the schema or cannot be read, or "
        "jsonschema (the 'schema' extra) is not installed",
    },
    interrupts=False,
)
@click.argument("results", required=False, metavar="[RESULTS]")
def schema(results: str | None) -> None:
    """Print the JSON Schema (draft 2020-12) of results.json, or check RESULTS against it.

    RESULTS is a results.json (or results.json.gz), or the --out DIR that holds one. Checking
    needs jsonschema: pip install 'duet-bench[schema]'. Each problem is printed as its JSON
    path and what is wrong there.

    \b
    Examples:
      duet schema > results-schema.json
      duet schema duet-results
    """
    if results is None:
        click.echo(schema_text(), nl=False)
        return
    path, data = read_given(results)
    found = problems(data)
    version = data.get("schema") if isinstance(data, dict) else None
    if not found:
        click.echo(f"{for_terminal(str(path))}: matches the results schema ({version})")
        return
    for problem in found[:MAX_PROBLEMS]:
        click.echo(for_terminal(problem))
    if len(found) > MAX_PROBLEMS:
        click.echo(f"... and {len(found) - MAX_PROBLEMS} more")
    raise ResultsError(
        f"{path} does not match the results schema: {len(found)} "
        f"problem{'s' if len(found) != 1 else ''} (above; the document says "
        f"{json.dumps(version)})",
        fix="a file that duet did not write or that was edited: write it again with duet, "
        'or, if it is from a newer duet (a later "schema" version), check it with that '
        "duet's `duet schema`",
    )
