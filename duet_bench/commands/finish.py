"""How a command ends: its report printed, then its outcome by contract (:func:`finish`,
:func:`outcome_of`, :func:`fails_on`), and whether a stream takes colour (:func:`color_for`).

A command returns the :class:`~duet_bench.errors.Outcome` these give, or raises a
:class:`~duet_bench.errors.DuetError`; the ``duet`` group (:mod:`duet_bench.cli`), on top of
every command, turns either into a message and an exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from duet_bench.defaults import Format
from duet_bench.errors import Outcome
from duet_bench.report import render
from duet_bench.report.layout import terminal_width
from duet_bench.report.model import Report


def color_for(stream: Any) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, and no ``NO_COLOR`` (no-color.org:
    set and not empty)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def fails_on(doc: Any, fail_on: str) -> bool:
    """Whether the verdicts of ``doc`` fail a CI job under ``--fail-on``
    (:func:`duet_bench.analysis.fails` has the rule)."""
    # Deferred: duet_bench.analysis loads numpy, and duet --help imports every command.
    from duet_bench.analysis import fails, verdicts_of

    return fails(verdicts_of(doc), fail_on)  # type: ignore[arg-type]  # FAIL_ON's choices


def outcome_of(doc: Any, fail_on: str) -> Outcome:
    """:attr:`Outcome.FAILS` when the verdicts of ``doc`` fail a CI job under ``--fail-on``
    (:func:`fails_on`), else :attr:`Outcome.OK`."""
    return Outcome.FAILS if fails_on(doc, fail_on) else Outcome.OK


def finish(
    report: Report,
    out: str,
    fmt: Format,
    fail_on: str,
    max_failures: int | None,
    *,
    missing: Sequence[str] = (),
) -> Outcome:
    """Print ``report`` (built once by the command, for the files it wrote too), then the
    outcome by contract: raise (exit 3) when a benchmark is broken or ``missing`` in one
    version (that outranks a regression: a verdict from a broken suite is not to be trusted),
    else :attr:`Outcome.FAILS` on a regression per ``--fail-on``, else :attr:`Outcome.OK`."""
    # Deferred: duet_bench.session loads numpy, and duet --help imports every command.
    from duet_bench.session import raise_if_broken

    outcome = outcome_of(report.doc, fail_on)
    color, width = fmt == "text" and color_for(sys.stdout), terminal_width(sys.stdout)
    click.echo(render(report, fmt, color=color, width=width), nl=False)
    click.echo(f"results: {out}", err=True)
    raise_if_broken(report.doc, max_failures, missing=missing)
    return outcome
