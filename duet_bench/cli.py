"""The ``duet`` command line.

Only this module turns errors into messages and exit codes (0 no regression, 1 regression
found, 2 usage error, 3 environment or infrastructure failure). Heavy modules (numpy, scipy,
matplotlib, GitPython) are imported inside the commands so ``duet --help`` starts fast.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import click

from duet_bench import __version__, settings
from duet_bench.errors import EXIT_REGRESSION, DuetError
from duet_bench.metrics import DEFAULT_METRIC, METRIC_CHOICES

F = TypeVar("F", bound=Callable[..., Any])

FAIL_ON = click.Choice(["regression", "inconclusive", "any", "never"])
FAIL_ON_HELP = (
    "Exit 1 on a regression; 'inconclusive' also when an interval can rule a regression "
    "neither in nor out; 'any' also on an improvement; 'never' always exits 0."
)


def color_for(stream: Any) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, and no ``NO_COLOR`` (no-color.org:
    set and not empty)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def fails_on(doc: Any, fail_on: str) -> bool:
    """Whether the verdicts of ``doc`` fail a CI job under ``--fail-on``
    (:func:`duet_bench.analysis.fails` has the rule)."""
    from duet_bench.analysis import fails, verdicts_of

    return fails(verdicts_of(doc), fail_on)  # type: ignore[arg-type]  # FAIL_ON's choices


def _die(error: DuetError) -> NoReturn:
    click.secho(
        f"duet: error: {error.message}", fg="red" if color_for(sys.stderr) else None, err=True
    )
    if error.fix:
        click.echo(f"  fix: {error.fix}", err=True)
    sys.exit(error.exit_code)


def reports_errors(fn: F) -> F:
    """Turn a :class:`DuetError` raised by library code into its message and exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DuetError as e:
            _die(e)

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature


def _apply(options: Sequence[Callable[[Any], Any]], fn: F) -> F:
    """Decorate ``fn`` with ``options`` so that they appear in ``--help`` in list order."""
    for option in reversed(options):
        fn = option(fn)
    return fn


def analysis_options(fn: F) -> F:
    """Options shared by every command that analyses samples."""
    options = [
        click.option(
            "--confidence",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            default=settings.DEFAULT_CONFIDENCE,
            show_default=True,
            help="Confidence level of the bootstrap interval.",
        ),
        click.option(
            "--threshold",
            type=click.FloatRange(0, min_open=False),
            default=settings.DEFAULT_THRESHOLD,
            show_default=True,
            help="Practical-significance threshold: changes smaller than this are 'no change' "
            "when the whole interval lies inside the band.",
        ),
        click.option(
            "--reps",
            type=click.IntRange(100),
            default=settings.DEFAULT_REPS,
            show_default=True,
            help="Bootstrap replicates.",
        ),
        click.option(
            "--seed",
            type=int,
            default=settings.DEFAULT_SEED,
            show_default=True,
            help="Seed of the bootstrap: the same data and seed give the same interval.",
        ),
        click.option(
            "--interval",
            type=click.Choice(settings.INTERVALS),
            default=settings.DEFAULT_INTERVAL,
            show_default=True,
            help="Bootstrap interval method; expanded widens percentile for few runs; "
            "basic and studentized need duet-bench[arch].",
        ),
        click.option(
            "--winsorize/--no-winsorize",
            default=settings.DEFAULT_WINSORIZE,
            show_default=True,
            help="Replace at most one outlying ratio per run by its neighbour (duet paper sec. 4).",
        ),
        click.option(
            "--metric",
            type=click.Choice(METRIC_CHOICES),
            default=DEFAULT_METRIC,
            show_default=True,
            help="What decides the verdict: per-iteration wall time, the CPU time of the measured "
            "code, wall time less the time spent waiting for a CPU, or auto (CPU time when both "
            "sides are CPU-bound; else wall time, less run-queue delay when another process "
            "delayed the sides). Every metric is analysed and shown.",
        ),
    ]
    return _apply(options, fn)


class LazyGroup(click.Group):
    """A group whose commands in :data:`LAZY_COMMANDS` are imported only when used or listed,
    so ``duet --help`` and every other command stay fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            import importlib

            module_name, attr = LAZY_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


#: Commands that live in their own module under ``duet_bench/commands/``
#: (name -> "module:attribute").
LAZY_COMMANDS: dict[str, str] = {
    "bisect": "duet_bench.commands.bisect:bisect",
    "doctor": "duet_bench.commands.doctor:doctor",
    "calibrate": "duet_bench.commands.calibrate:calibrate",
    "comment": "duet_bench.commands.comment:comment",
    "compare": "duet_bench.commands.compare:compare",
    "merge": "duet_bench.commands.merge:merge",
    "report": "duet_bench.commands.report:report",
}


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="duet")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def main(verbose: int) -> None:
    """duet: A/B performance regression testing for CI.

    Runs two versions of a program at the same time, each on its own core in its own cgroup,
    synchronised by a shared-memory barrier, and reports the ratio with a bootstrap confidence
    interval and a verdict: regression, improvement, no change or inconclusive.

    Exit codes: 0 no regression, 1 regression found (see --fail-on), 2 usage error,
    3 environment or infrastructure failure.
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG), format="duet: %(levelname)s: %(message)s")


@main.command()
@click.argument("results", type=click.Path(path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Output format; json prints the whole document with every analysis filled.",
)
@analysis_options
@click.option(
    "--fail-on",
    type=FAIL_ON,
    default="regression",
    show_default=True,
    help=FAIL_ON_HELP,
)
@reports_errors
@click.pass_context
def analyze(
    ctx: click.Context, /, results: str, fmt: str, fail_on: str, **_analysis_options: Any
) -> None:
    """Recompute every benchmark's statistics and verdict from the raw samples in RESULTS.

    Each benchmark is analysed with the settings it was measured with (duet.toml's
    `threshold`, `confidence` and `metric`, or the options of the run), except those given
    here explicitly."""
    from duet_bench.commands import load_results
    from duet_bench.report import render

    doc = load_results(results)
    analysed = reanalyze(doc, explicit_analysis_options(ctx), only_missing=False)
    click.echo(render(analysed, fmt, color=fmt == "text" and color_for(sys.stdout)), nl=False)  # type: ignore[arg-type]
    if fails_on(analysed, fail_on):
        sys.exit(EXIT_REGRESSION)


def parse_cores(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[int, int] | None:
    if value is None:
        return None
    parts = value.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise click.BadParameter(f"{value!r} is not two CPU numbers; write e.g. --cores 2,3")
    return int(parts[0]), int(parts[1])


def _size(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    from duet_bench.units import parse_size

    if value is None or value.lower() in ("none", "0"):
        return None
    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


ANALYSIS_KEYS = settings.ANALYSIS_KEYS


def analysis_settings(o: Mapping[str, Any]) -> Any:
    """The :class:`duet_bench.analysis.AnalysisSettings` of the :func:`analysis_options` in
    ``o``."""
    from duet_bench.analysis import AnalysisSettings

    return AnalysisSettings(**{k: o[k] for k in ANALYSIS_KEYS})


def explicit_settings(ctx: click.Context) -> dict[str, Any]:
    """Every setting (:data:`duet_bench.settings.BUILTIN`, by field name) the command has as an
    option and that was given on the command line; ``reps`` and ``seed`` always (the
    configuration cannot set them, and the results file says which were used)."""
    from click.core import ParameterSource

    out: dict[str, Any] = {}
    for name in settings.BUILTIN:
        param = settings.FILE_KEYS.get(name, name)
        if param not in ctx.params:
            continue
        if name in ("reps", "seed") or (
            ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE
        ):
            out[name] = ctx.params[param]
    return out


def explicit_analysis_options(ctx: click.Context) -> dict[str, Any]:
    """The :func:`analysis_options` given on the command line (the others are defaults)."""
    from click.core import ParameterSource

    return {
        k: ctx.params[k]
        for k in ANALYSIS_KEYS
        if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE
    }


def reanalyze(doc: Any, explicit: Mapping[str, Any], *, only_missing: bool) -> Any:
    """``doc`` with its benchmarks analysed again from the raw samples, each with the settings
    recorded with it except the ``explicit`` options (:func:`duet_bench.settings.for_record`).
    ``only_missing``: only the benchmarks without an analysis."""
    from dataclasses import replace

    from duet_bench.analysis import analyze_benchmark

    for b in doc.benchmarks:
        if not only_missing or b.analysis is None:
            these = settings.for_record(b, explicit)
            doc = doc.with_benchmark(replace(b, analysis=analyze_benchmark(b, these).to_dict()))
    return doc


def session_options(o: Mapping[str, Any], settings: Any, command: str) -> Any:
    """The :class:`duet_bench.session.SessionOptions` of the :func:`run_options` in ``o``."""
    from pathlib import Path

    from duet_bench.isolation import RunAs
    from duet_bench.session import SessionOptions

    return SessionOptions(
        out=Path(o["out"]),
        isolation=o["isolation"],
        cores=o["cores"],
        share_network=o.get("share_network", False),
        seed=o["plan_seed"],
        max_failures=o["max_failures"],
        analysis=settings,
        progress=not o["quiet"],
        run_as=RunAs.from_environment(o["user"], os.environ),
        config={"command": command, "argv": sys.argv[1:]},
        wait=o["wait"],
    )


def machine_options(fn: F) -> F:
    """Options of every command that measures on this machine (``run``, ``compare``,
    ``calibrate``): where and how the two sides run, and what makes a run fail."""
    options = [
        click.option(
            "--cores",
            callback=parse_cores,
            metavar="A,B",
            help="The two CPUs to use instead of the automatic choice.",
        ),
        click.option(
            "--isolation",
            type=click.Choice(["auto", "cgroup", "affinity"]),
            default=settings.DEFAULT_ISOLATION,
            show_default=True,
            help="cgroup refuses to run without cgroups; affinity never uses them.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(0, min_open=True),
            default=settings.DEFAULT_TIMEOUT_S,
            show_default=True,
            help="Seconds one iteration or one barrier wait may take before the run fails.",
        ),
        click.option(
            "--share-network",
            is_flag=True,
            help="Keep the host network instead of a private loopback per side.",
        ),
        click.option(
            "--max-failures",
            type=click.IntRange(0),
            default=settings.DEFAULT_MAX_FAILURES,
            show_default=True,
            help="Stop a benchmark, and exit 3, when more runs than this failed.",
        ),
        click.option(
            "--user",
            metavar="USER",
            help="Run the measured programs as USER (root only; under sudo the default is the "
            "user who ran sudo).",
        ),
        click.option(
            "--plan-seed",
            type=int,
            default=0,
            show_default=True,
            help="Seed of the side-to-core assignment and the sequential order.",
        ),
        click.option(
            "--wait",
            is_flag=True,
            help="When another duet is measuring on this machine, queue behind it instead of "
            "refusing (exit 3). The lock is $DUET_LOCK, else /run/lock/duet.lock.",
        ),
    ]
    return _apply(options, fn)


def run_options(fn: F) -> F:
    """Options shared by the commands that compare two versions: the plan of runs and
    iterations, the method, the limits, and :func:`machine_options`."""
    options = [
        click.option(
            "--runs",
            type=click.IntRange(settings.MIN_RUNS),
            default=settings.DEFAULT_RUNS,
            show_default=True,
            help=f"Runs: fresh pairs of processes; {settings.INTERVAL_RUNS} or more give an "
            "interval.",
        ),
        click.option(
            "--iterations",
            type=click.IntRange(1),
            default=settings.DEFAULT_ITERATIONS,
            show_default=True,
            help="Measured iterations per run.",
        ),
        click.option(
            "--warmup",
            type=click.IntRange(0),
            default=settings.DEFAULT_WARMUP,
            show_default=True,
            help="Warm-up iterations per run (recorded, not analysed).",
        ),
        click.option(
            "--memory-limit",
            callback=_size,
            metavar="SIZE",
            help="Memory limit per side (e.g. 2G); exceeding it fails the run.",
        ),
        click.option(
            "--method",
            type=click.Choice(["duet", "sequential"]),
            default=settings.DEFAULT_METHOD,
            show_default=True,
            help="sequential: each side alone, one after the other (randomized order).",
        ),
    ]
    return machine_options(_apply(options, fn))


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise :class:`Interrupted`: cleanup runs, the results file says where
    it stopped, and the exit code is 128 + the signal (130, 143)."""
    import signal

    from duet_bench.errors import Interrupted

    def handler(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def finish(
    doc: Any,
    out: str,
    fmt: str,
    fail_on: str,
    max_failures: int | None,
    *,
    missing: Sequence[str] = (),
) -> None:
    """Print the report, then exit by contract: 3 when a benchmark is broken or ``missing`` in
    one version (that outranks a regression: a verdict from a broken suite is not to be
    trusted), 1 on a regression per ``--fail-on``, else 0."""
    from duet_bench.report import render
    from duet_bench.session import raise_if_broken

    click.echo(render(doc, fmt, color=fmt == "text" and color_for(sys.stdout)), nl=False)  # type: ignore[arg-type]
    click.echo(f"results: {out}", err=True)
    raise_if_broken(doc, max_failures, missing=missing)
    if fails_on(doc, fail_on):
        sys.exit(EXIT_REGRESSION)


@main.command()
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
    help="Working directory (and python path) of the baseline.",
)
@click.option(
    "--candidate-dir",
    type=click.Path(file_okay=False, exists=True),
    help="Working directory (and python path) of the candidate.",
)
@click.option("--name", default=None, help="Benchmark name in reports (default: from the command).")
@run_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="duet-results/results.json",
    show_default=True,
    help="Results file, rewritten after every run.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
@analysis_options
@click.option("--fail-on", type=FAIL_ON, default="regression", show_default=True, help=FAIL_ON_HELP)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@reports_errors
def run(**o: Any) -> None:
    """Measure two commands (or python callables) against each other, at the same time.

    \b
    Examples:
      duet run --baseline ./old/app --candidate ./new/app --runs 20
      duet run --python-baseline old/.venv/bin/python --python-candidate new/.venv/bin/python \\
               --callable mypkg.bench:parse
    """
    from pathlib import Path

    from duet_bench.errors import UsageError
    from duet_bench.plan import SideSpec
    from duet_bench.session import measure

    python = o["python_baseline"] or o["python_candidate"] or o["callable_"]
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

    def side(which: str) -> SideSpec:
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

    name = o["name"] or (o["callable_"] if python else _name_from(o["baseline"], o["candidate"]))
    # Without a configuration every value is an option's (given or its default).
    resolved = settings.resolve(
        {
            **{k: o[k] for k in ANALYSIS_KEYS},
            **{k: o[k] for k in ("runs", "iterations", "warmup", "method", "max_failures")},
            "timeout_s": o["timeout"],
            "memory_limit_bytes": o["memory_limit"],
            "isolation": o["isolation"],
        }
    )
    planned = settings.build(name, side("baseline"), side("candidate"), resolved)
    bench = planned.spec
    options = session_options(o, planned.analysis, "run")
    click.echo(
        f"duet: {bench.name}: {bench.runs} runs x ({bench.warmup} warm-up + {bench.iterations}) "
        f"iterations, timeout {bench.timeout_s:g} s per iteration, method {bench.method}",
        err=True,
    )
    install_signal_handlers()
    doc = measure([bench], options)
    finish(doc, o["out"], o["fmt"], o["fail_on"], o["max_failures"])


def _name_from(baseline: str, candidate: str) -> str:
    """The name of an ad hoc comparison: the common command, or both."""
    b, c = baseline.strip(), candidate.strip()
    # Stored whole (results, JUnit, metric labels must stay unique and greppable); reports
    # shorten it for display only.
    return " ".join((b if b == c else f"{b} vs {c}").split())


@main.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="duet-results/demo",
    show_default=True,
    help="Directory for the demo's results and report.",
)
@click.option("--runs", type=click.IntRange(5), default=8, show_default=True)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "cgroup", "affinity"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--busy/--no-busy",
    default=True,
    show_default=True,
    help="Measure a second time with one busy process beside the sides.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--wait",
    is_flag=True,
    help="When another duet is measuring on this machine, queue behind it instead of "
    "refusing (exit 3). The lock is $DUET_LOCK, else /run/lock/duet.lock.",
)
@reports_errors
def demo(out: str, runs: int, isolation: str, busy: bool, quiet: bool, wait: bool) -> None:
    """The bundled example end to end: two versions of a small C program, the second doing 5%
    more work, measured on the machine as it is and with one busy process beside it. Needs gcc.
    Takes about half a minute to a minute."""
    from duet_bench.demo import CONDITIONS, expected_against_measured, run_demo

    install_signal_handlers()
    conditions = CONDITIONS if busy else CONDITIONS[:1]
    measured, out_dir = run_demo(
        out,
        runs=runs,
        isolation=isolation,  # type: ignore[arg-type]  # click.Choice guarantees the literal
        progress=not quiet,
        conditions=conditions,
        wait=wait,
    )
    from duet_bench.report import render
    from duet_bench.session import raise_if_broken

    for condition, doc in measured:
        click.echo(f"\n== {condition.name}")
        click.echo(render(doc, "text", color=color_for(sys.stdout)), nl=False)
        raise_if_broken(doc, settings.DEFAULT_MAX_FAILURES)
    click.echo("\nThe demo's candidate does 5% more work than its baseline (ratio 1.05):\n")
    click.echo(expected_against_measured(measured), nl=False)
    click.echo(f"\nresults and reports: {out_dir}/{{quiet,busy}}/")


if __name__ == "__main__":  # pragma: no cover
    main()
