"""``duet run``: two commands (or python callables) measured against each other, with every
setting from the command line (no configuration, no git)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from duet_bench import settings
from duet_bench.cli import finish, install_signal_handlers, reports_errors
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    analysis_options,
    fail_on_option,
    run_options,
    session_options,
)
from duet_bench.commands.output import format_option, is_file_form, out_option, results_path
from duet_bench.defaults import ANALYSIS_KEYS, RESULTS_FORMATS
from duet_bench.errors import Outcome, UsageError

if TYPE_CHECKING:
    from duet_bench.plan import SideSpec


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
@out_option(
    "duet-results",
    "results.json (rewritten after every run), report.md, junit.xml and metrics.txt",
)
@format_option(*RESULTS_FORMATS)
@analysis_options
@fail_on_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@reports_errors
def run(**o: Any) -> Outcome:
    """Measure two commands (or python callables) against each other, at the same time.

    \b
    Examples:
      duet run --baseline ./old/app --candidate ./new/app --runs 20
      duet run --python-baseline old/.venv/bin/python --python-candidate new/.venv/bin/python \\
               --callable mypkg.bench:parse
    """
    from duet_bench.plan import build
    from duet_bench.session import measure

    python = _is_python(o)
    name = o["name"] or (o["callable_"] if python else _name_from(o["baseline"], o["candidate"]))
    # Without a configuration every value is an option's (given or its default).
    resolved = settings.resolve(
        {
            **{k: o[k] for k in ANALYSIS_KEYS},
            **{
                k: o[k]
                for k in ("runs", "iterations", "warmup", "method", "crossover", "max_failures")
            },
            "timeout_s": o["timeout"],
            "memory_limit_bytes": o["memory_limit"],
            "isolation": o["isolation"],
        }
    )
    sides = (_side(o, "baseline", python), _side(o, "candidate", python))
    planned = build(name, *sides, resolved)
    bench = planned.spec

    out = results_path(o["out"])
    options = session_options(o, planned.analysis, "run", out)
    click.echo(
        f"duet: {bench.name}: {bench.runs} runs x ({bench.warmup} warm-up + {bench.iterations}) "
        f"iterations, timeout {bench.timeout_s:g} s per iteration, method {bench.method}"
        + (f", crossover {bench.crossover}" if bench.method == "duet" else ""),
        err=True,
    )
    install_signal_handlers()
    doc = measure([bench], options)
    if not is_file_form(o["out"]):
        from duet_bench.compare.outputs import write_outputs

        write_outputs(doc, out.parent, plots=False)
    return finish(doc, str(out), o["fmt"], o["fail_on"], o["max_failures"])


def _is_python(o: Mapping[str, Any]) -> bool:
    """Whether the options name a python benchmark (all three of its options) rather than two
    commands; anything in between is a usage error."""
    python = bool(o["python_baseline"] or o["python_candidate"] or o["callable_"])
    if python:
        if not (o["python_baseline"] and o["python_candidate"] and o["callable_"]):
            raise UsageError(
                "a python benchmark needs --python-baseline, --python-candidate and --callable",
                fix="give all three, e.g. --python-baseline old/.venv/bin/python "
                "--python-candidate new/.venv/bin/python --callable mypkg.bench:run",
            )
        if o["baseline"] or o["candidate"]:
            raise UsageError(
                "give either --baseline/--candidate commands or a python benchmark, not both"
            )
    elif not (o["baseline"] and o["candidate"]):
        raise UsageError(
            "nothing to measure: give --baseline CMD and --candidate CMD",
            fix="duet run --baseline './old' --candidate './new'",
        )
    return python


def _side(o: Mapping[str, Any], which: str, python: bool) -> SideSpec:
    """The ``baseline`` or ``candidate`` side the options describe."""
    from pathlib import Path

    from duet_bench.plan import SideSpec

    cwd = o[f"{which}_dir"]
    if python:
        return SideSpec(
            kind="python",
            interpreter=o[f"python_{which}"],
            callable=o["callable_"],
            setup=o["setup"],
            sys_path=(str(Path(cwd).resolve()),) if cwd else (),
            cwd=cwd,
        )
    return SideSpec(kind="native" if o["native"] else "command", command=o[which], cwd=cwd)


def _name_from(baseline: str, candidate: str) -> str:
    """The name of an ad hoc comparison: the common command, or both."""
    b, c = baseline.strip(), candidate.strip()
    # Stored whole (results, JUnit, metric labels must stay unique and greppable); reports
    # shorten it for display only.
    return " ".join((b if b == c else f"{b} vs {c}").split())
