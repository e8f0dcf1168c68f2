"""``--out DIR`` and ``--format``: where every command writes, always a directory, and the one
set of format names (docs/cli.md, "--out" and "--format").

``run``, ``compare``, ``merge`` and ``calibrate`` write ``results.json`` inside it (``run``,
``compare`` and ``merge`` their reports beside it), ``bisect`` its ``bisect.json`` and steps,
``demo`` one directory per condition, ``report`` the report under its usual name. Until this
vocabulary, ``run``, ``calibrate`` and ``merge`` took a results file: a value ending in ``.json``
or ``.json.gz`` is still that file, with a warning that names the directory form, so that scripts
and CI jobs do not break in one step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from duet_bench.defaults import FORMATS

# Resolved where the options are parsed (a command's options record holds the results file):
# ``merge`` and ``calibrate`` take them from here with the options they go with.
from duet_bench.options.common import RESULTS as RESULTS
from duet_bench.options.common import is_file_form as is_file_form
from duet_bench.options.common import results_path as results_path

F = TypeVar("F", bound=Callable[..., Any])


def out_option(default: str | None, what: str) -> Callable[[F], F]:
    """``--out DIR`` of a command that writes ``what`` into the directory (``default`` None:
    required)."""
    return click.option(
        "--out",
        type=click.Path(path_type=str),
        metavar="DIR",
        default=default,
        required=default is None,
        show_default=default is not None,
        help=f"Directory (made if missing) for {what}.",
    )


#: The file ``duet report --out DIR`` writes, by format: the names ``duet compare`` gives its
#: reports where it writes the format.
REPORT_FILES = {
    "text": "report.txt",
    "markdown": "report.md",
    "json": "report.json",
    "junit": "junit.xml",
    "openmetrics": "metrics.txt",
    "html": "report.html",
}


_ELSEWHERE = "duet report RESULTS --format FORMAT"


def format_option(*produces: str, what: str = "", elsewhere: str = _ELSEWHERE) -> Callable[[F], F]:
    """``--format FORMAT`` with the names of :data:`duet_bench.defaults.FORMATS`, of a command
    that writes only ``produces``: the others are refused, saying what writes them
    (``elsewhere``, FORMAT standing for the name given)."""
    cannot = [f for f in FORMATS if f not in produces]

    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if value not in produces:
            raise click.BadParameter(
                f"duet {ctx.info_name} writes {_words(produces)}, not {value}; for {value}: "
                + elsewhere.replace("FORMAT", value),
                ctx,
                param,
            )
        return value

    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        callback=check,
        help=what
        if what and not cannot
        else (f"{what} " if what else "")
        + f"Writes {_words(produces)}"
        + (f"; {_words(cannot)}: {_for(elsewhere, cannot)}." if cannot else "."),
    )


def _for(elsewhere: str, cannot: Sequence[str]) -> str:
    return elsewhere.replace("FORMAT", cannot[0]) if len(cannot) == 1 else elsewhere


def _words(names: Sequence[str], last: str = "or") -> str:
    return ", ".join(names[:-1]) + f" {last} {names[-1]}" if len(names) > 1 else names[0]
