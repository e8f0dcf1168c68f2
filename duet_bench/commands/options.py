"""The options shared by ``duet`` commands (the typed options of each command, and the settings
given explicitly, are :mod:`duet_bench.options`).

The declarations (``--confidence``, ``--cores``, ``--runs``, ``--format`` of the reports, ...)
are written here once; each command module stacks the decorators it needs. Only click is
imported at module level, so that ``duet --help`` stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from duet_bench import defaults
from duet_bench.limits import LIMITS, pids_problem
from duet_bench.metrics import DEFAULT_METRIC, METRIC_CHOICES
from duet_bench.units import parse_duration, parse_size

F = TypeVar("F", bound=Callable[..., Any])

FAIL_ON = click.Choice(defaults.FAIL_ON)
FAIL_ON_HELP = (
    "Exit 1 on a regression; 'inconclusive' also when an interval can rule a regression "
    "neither in nor out; 'any' also on an improvement; 'never' always exits 0."
)


class FiniteRange(click.FloatRange):
    """A :class:`click.FloatRange` that also refuses ``nan`` (which compares false with both
    bounds, so click lets it through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if isinstance(rv, float) and math.isnan(rv):
            self.fail(
                f"{value!r} is not a number in the range {self._describe_range()}", param, ctx
            )
        return rv


class ConfidenceLevel(FiniteRange):
    """The confidence level, a fraction: ``99`` (or ``95``, ``99.9``) is refused with "did you
    mean 0.99"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise
            if 1 < number < 100:
                self.fail(
                    f"{value!r} is not a fraction between 0 and 1; did you mean {number / 100:g}?",
                    param,
                    ctx,
                )
            raise


#: ``--runs``: what a number of runs gives, from the bound (:data:`duet_bench.limits.LIMITS`)
#: to the runs a 99% interval needs (docs/statistics.md, "Five runs cannot give a 99% bootstrap
#: interval").
RUNS_HELP = (
    "A fixed design of N runs (fresh pairs of processes) instead of measuring until decided, "
    f"the default (bisect's --max-runs alone: rounds of {defaults.DEFAULT_RUNS}). "
    f"{defaults.MIN_RUNS} to {defaults.INTERVAL_RUNS - 1} give "
    f"a ratio without an interval (inconclusive); {defaults.INTERVAL_RUNS} or more give an "
    "interval; a 99% interval can reach its coverage from 8 runs."
)


def bounded(name: str, low: int | None = None) -> click.ParamType:  # type: ignore[type-arg]
    """The click type of the setting ``name`` (a field name), within its bounds in
    :data:`duet_bench.limits.LIMITS` (the same as the configuration's); ``low`` raises the lower
    bound for one command."""
    limit = LIMITS[name]
    if limit.number:
        return FiniteRange(limit.low, limit.high, min_open=limit.low_open)
    return click.IntRange(int(limit.low) if low is None else low, int(limit.high))


def _apply(options: Sequence[Callable[[Any], Any]], fn: F) -> F:
    """Decorate ``fn`` with ``options`` so that they appear in ``--help`` in list order."""
    for option in reversed(options):
        fn = option(fn)
    return fn


class AliasedOption(click.Option):
    """An option with old spellings that still work but are not shown in ``--help``
    (``hidden_aliases``)."""

    def __init__(self, *args: Any, hidden_aliases: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = self.opts
        self.opts = [o for o in shown if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown


def bench_option(what: str) -> Callable[[F], F]:
    """``--bench PATTERN``, the one way every command selects benchmarks of the configuration:
    a name, or a glob on the names (a name equal to the pattern always matches).
    ``--benchmark`` is its old spelling (bisect, calibrate), still accepted, not shown."""
    return click.option(
        "--bench",
        "--benchmark",
        "bench",
        cls=AliasedOption,
        hidden_aliases=("--benchmark",),
        metavar="PATTERN",
        help=what,
    )


def fail_on_option(fn: F) -> F:
    """``--fail-on``: which verdicts exit 1 (:func:`duet_bench.commands.finish.fails_on`)."""
    return click.option(
        "--fail-on", type=FAIL_ON, default="regression", show_default=True, help=FAIL_ON_HELP
    )(fn)


def allow_incomplete_option(fn: F) -> F:
    """``--allow-incomplete``: an interrupted results file exits by its verdicts, not 3."""
    return click.option(
        "--allow-incomplete",
        is_flag=True,
        help="Exit by the verdicts even when the results are incomplete (an interrupted run); "
        "by default an incomplete results file exits 3 after its report.",
    )(fn)


def versions_options(fn: F) -> F:
    """``--rebuild``, ``--keep-worktrees``, ``--repo``: how the commands that build versions of
    the user's repository (``compare``, ``bisect``) find and keep them."""
    options = [
        click.option(
            "--rebuild",
            is_flag=True,
            help="Build again even when a built worktree could be reused.",
        ),
        click.option(
            "--keep-worktrees", is_flag=True, help="Keep the worktrees (for debugging a build)."
        ),
        click.option(
            "--repo",
            type=click.Path(file_okay=False, exists=True),
            metavar="DIR",
            default=".",
            show_default=True,
            help="A path inside the git checkout.",
        ),
    ]
    return _apply(options, fn)


def analysis_options(fn: F) -> F:
    """Options shared by every command that analyses samples."""
    options = [
        click.option(
            "--confidence",
            type=ConfidenceLevel(0, 1, min_open=True, max_open=True),
            default=defaults.DEFAULT_CONFIDENCE,
            show_default=True,
            metavar="LEVEL",
            help="Confidence level of the bootstrap interval, a fraction (0.99, not 99).",
        ),
        click.option(
            "--threshold",
            type=bounded("threshold"),
            default=defaults.DEFAULT_THRESHOLD,
            show_default=True,
            metavar="FRACTION",
            help="Practical-significance threshold: changes smaller than this are 'no change' "
            "when the whole interval lies inside the band.",
        ),
        click.option(
            "--reps",
            type=bounded("reps"),
            default=defaults.DEFAULT_REPS,
            show_default=True,
            metavar="N",
            help="Bootstrap replicates.",
        ),
        click.option(
            "--seed",
            type=int,
            default=defaults.DEFAULT_SEED,
            show_default=True,
            metavar="N",
            help="Seed of the bootstrap: the same data and seed give the same interval.",
        ),
        click.option(
            "--interval",
            type=click.Choice(defaults.INTERVALS),
            default=defaults.DEFAULT_INTERVAL,
            show_default=True,
            help="Bootstrap interval method; expanded widens percentile for few runs; "
            "basic and studentized need duet-bench[arch].",
        ),
        click.option(
            "--winsorize/--no-winsorize",
            default=defaults.DEFAULT_WINSORIZE,
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
    if value is None or value.lower() == "none":
        return None
    if value.strip() == "0":
        # It meant "no limit" and was recorded as none: a limit of nothing was never asked for.
        raise click.BadParameter(
            "0 is not a memory limit: a side needs memory to run. Give a size (e.g. 2G), or "
            "leave out --memory-limit (or write none) to run without a limit"
        )
    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _pids(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """``--pids-limit``: a number of processes (:func:`duet_bench.limits.pids_problem`), or
    ``none``: no limit."""
    text = "none" if value is None else value.strip()
    if text.lower() == "none":
        return None
    # ASCII digits only ("²" is a digit to isdigit, not to int), and not thousands of them
    # (int() refuses 4,300): both would be a traceback.
    digits = text.lstrip("0") or "0"
    if not (text.isascii() and text.isdigit()) or len(digits) > 24:
        shown = f"{digits[:12]}... ({len(digits)} digits)" if len(digits) > 24 else repr(value)
        raise click.BadParameter(
            f"{shown} is not a number of processes; write e.g. --pids-limit 16384, or "
            "--pids-limit none for no limit"
        )
    pids = int(digits)
    problem = pids_problem(pids)
    if problem:
        raise click.BadParameter(problem)
    return pids


def machine_options(fn: F) -> F:
    """Options of every command that measures on this machine (``run``, ``compare``,
    ``calibrate``, ``bisect``): where and how the two sides run, and what makes a run fail."""
    options = [
        click.option(
            "--cores",
            callback=parse_cores,
            metavar="A,B",
            help="The two CPUs to use instead of the automatic choice.",
        ),
        click.option(
            "--isolation",
            type=click.Choice(defaults.ISOLATIONS),
            default=defaults.DEFAULT_ISOLATION,
            show_default=True,
            help="cgroup refuses to run without cgroups; affinity never uses them.",
        ),
        click.option(
            "--timeout",
            type=bounded("timeout_s"),
            default=defaults.DEFAULT_TIMEOUT_S,
            show_default=True,
            metavar="SECONDS",
            help="Seconds one iteration or one barrier wait may take before the run fails.",
        ),
        click.option(
            "--share-network",
            is_flag=True,
            help="Keep the host network instead of a private loopback per side.",
        ),
        click.option(
            "--max-failures",
            type=bounded("max_failures"),
            default=defaults.DEFAULT_MAX_FAILURES,
            show_default=True,
            metavar="N",
            help="Stop a benchmark, and exit 3, when more runs than this failed.",
        ),
        click.option(
            "--user",
            metavar="USER",
            help="Run the measured programs as USER (root only; under sudo the default is the "
            "user who ran sudo).",
        ),
        click.option(
            "--keep-env",
            "keep_env",
            multiple=True,
            metavar="NAME",
            help="Pass the variable NAME of duet's environment to the builds and benchmarks, "
            "which get only PATH, HOME, the locale, TERM, TZ and the go and cargo homes by "
            "default (the CI's tokens never); repeatable. $DUET_KEEP_ENV: more names.",
        ),
        click.option(
            "--plan-seed",
            type=int,
            default=0,
            show_default=True,
            metavar="N",
            help="Seed of the side-to-core assignment and the sequential order.",
        ),
        click.option(
            "--wait",
            is_flag=True,
            help="When another duet is measuring on this machine, queue behind it instead of "
            "refusing (exit 3). The lock is $DUET_LOCK, else /run/lock/duet.lock.",
        ),
        click.option(
            "--wait-timeout",
            type=bounded("wait_timeout_s"),
            default=3600,
            show_default=True,
            metavar="SECONDS",
            help="With --wait: give up (exit 3) when the other duet still measures after this "
            "long.",
        ),
    ]
    return _apply(options, fn)


def crossover_option(fn: F) -> F:
    """``--crossover``: which core each side runs on (docs/statistics.md, method 1b), for every
    command that measures a duet."""
    return click.option(
        "--crossover",
        type=click.Choice(defaults.CROSSOVERS),
        default=defaults.DEFAULT_CROSSOVER,
        show_default=True,
        help="iteration: the sides swap CPUs at every iteration (a core's speed changing "
        "within a run cancels); run: they keep their CPUs for a run, swapped between runs. "
        "The sequential method ignores it.",
    )(fn)


def _duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def until_decided_options(fn: F) -> F:
    """``--min-runs``, ``--max-runs``, ``--budget``: measure until the verdict is decided
    (docs/statistics.md, method 2b) instead of a fixed number of ``--runs``."""
    options = [
        click.option(
            "--min-runs",
            type=click.IntRange(3, int(LIMITS["runs"].high)),
            default=None,
            metavar="N",
            help="Measure until decided: the first look, after N runs [default: 5].",
        ),
        click.option(
            "--max-runs",
            type=bounded("runs", low=3),
            default=None,
            metavar="N",
            help="Measure until decided (the default, unless --runs or runs is given): stop as "
            "soon as the verdict is decided, at the latest after N runs [default: 80]. The "
            "verdict holds its error rate whenever it stops (the manual's statistics page, "
            "method 2b).",
        ),
        click.option(
            "--budget",
            callback=_duration,
            metavar="DURATION",
            help="Measure until decided within this machine time (10m, 90s, 1.5h), shared by "
            "the benchmarks; no run starts that would not end within it [default: 10m, unless "
            "--max-runs or max_runs is given].",
        ),
        click.option(
            "--continue",
            "continue_from",
            metavar="DIR",
            help="Give the undecided benchmarks measured until decided in DIR (its "
            "results.json) more runs under the same rule, up to a larger --max-runs; writes "
            "there unless --out is given.",
        ),
    ]
    return _apply(options, fn)


def run_options(fn: F) -> F:
    """Options shared by the commands that compare two versions: the plan of runs and
    iterations, the method, the limits, and :func:`machine_options`."""
    options = [
        click.option(
            "--runs",
            type=bounded("runs"),
            default=defaults.DEFAULT_RUNS,
            metavar="N",
            help=RUNS_HELP,
        ),
        click.option(
            "--iterations",
            type=bounded("iterations"),
            default=defaults.DEFAULT_ITERATIONS,
            show_default=True,
            metavar="N",
            help="Measured iterations per run.",
        ),
        click.option(
            "--warmup",
            type=bounded("warmup"),
            default=defaults.DEFAULT_WARMUP,
            show_default=True,
            metavar="N",
            help="Warm-up iterations per run (recorded, not analysed).",
        ),
        click.option(
            "--memory-limit",
            callback=_size,
            metavar="SIZE",
            help="Memory limit per side (e.g. 2G); exceeding it fails the run.",
        ),
        click.option(
            "--pids-limit",
            type=click.STRING,
            callback=_pids,
            default=defaults.DEFAULT_PIDS_MAX,
            show_default=True,
            metavar="N",
            help="Processes and threads a side may have at once (its cgroup's pids.max); a "
            "fork beyond it fails the run. none: no limit.",
        ),
        click.option(
            "--method",
            type=click.Choice(defaults.METHODS),
            default=defaults.DEFAULT_METHOD,
            show_default=True,
            help="sequential: each side alone, one after the other (randomized order).",
        ),
        crossover_option,
    ]
    return machine_options(_apply(options, fn))
