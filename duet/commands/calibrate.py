"""``duet calibrate``: an A/A duet that tells what this machine can detect and how to spend CI
minutes on it (``method.md`` section 6; the figures are explained in ``docs/calibration.md``).

The same version runs on both sides, the sides swapping cores across runs; the measurement
goes through :func:`duet.session.measure` like any other, and :func:`duet.calibrate.calibrate`
turns it into figures and a recommendation. ``--compare-sequential`` measures the same A/A a
second time with the sequential method, in the same session and results file.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duet.cli import (
    analysis_options,
    analysis_settings,
    install_signal_handlers,
    reports_errors,
    session_options,
)

if TYPE_CHECKING:
    from duet.calibrate import AAData, Calibration, Recommendation
    from duet.plan import BenchmarkSpec
    from duet.results import ResultsDocument

#: The suffix of the sequential copy of the benchmark in the results file.
SEQUENTIAL_SUFFIX = " [sequential]"
_WIDTH = 100
_LABEL = 17
_NBSP = "\u00a0"


def _cores(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[int, int] | None:
    if value is None:
        return None
    parts = value.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise click.BadParameter(f"{value!r} is not two CPU numbers; write e.g. --cores 2,3")
    return int(parts[0]), int(parts[1])


@click.command()
@click.option(
    "--benchmark",
    metavar="NAME",
    help="A benchmark of the configuration file, measured in the working tree as it is (build "
    "it first). With --results: the table --write sets.",
)
@click.option("--command", metavar="CMD", help="A shell command, run every iteration.")
@click.option(
    "--native", is_flag=True, help="--command is a native program using the barrier client."
)
@click.option(
    "--python", "python", metavar="INTERP", help="A python interpreter (with --callable)."
)
@click.option("--callable", "callable_", metavar="MODULE:FUNCTION", help="With --python.")
@click.option("--setup", metavar="MODULE:FUNCTION", help="With --python: called once per run.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    help="Working directory (and, with --python, python path) of both sides.",
)
@click.option(
    "--results",
    "from_results",
    type=click.Path(dir_okay=False, exists=True),
    help="Calibrate from an A/A results file written earlier (no measuring).",
)
@click.option("--config", "config_path", metavar="PATH", help="Configuration file (--benchmark).")
@click.option(
    "--runs",
    type=click.IntRange(2),
    default=20,
    show_default=True,
    help="Runs of the A/A (a calibration needs more than a comparison).",
)
@click.option(
    "--iterations", type=click.IntRange(1), default=30, show_default=True, help="Per run."
)
@click.option(
    "--warmup",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Warm-up iterations per run; the calibration finds where the series stops trending "
    "itself and leaves those iterations out.",
)
@click.option(
    "--compare-sequential",
    is_flag=True,
    help="Measure the same A/A with the sequential method too and report the accuracy gain.",
)
@click.option("--cores", callback=_cores, metavar="A,B", help="The two CPUs to use.")
@click.option(
    "--isolation",
    type=click.Choice(["auto", "cgroup", "affinity"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds an iteration or barrier wait may take.",
)
@click.option(
    "--max-failures", type=click.IntRange(0), default=2, show_default=True, help="Failed runs."
)
@click.option("--plan-seed", type=int, default=0, show_default=True, help="Side assignment seed.")
@click.option(
    "--user",
    metavar="USER",
    help="Run the measured programs as USER (root only; under sudo the default is the user who "
    "ran sudo).",
)
@click.option(
    "--wait",
    is_flag=True,
    help="When another duet is measuring on this machine, queue behind it instead of refusing.",
)
@analysis_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="duet-results/calibration.json",
    show_default=True,
    help="Results file of the A/A measurement (raw samples).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--plot",
    "plot_dir",
    type=click.Path(file_okay=False),
    help="Write the plots (samples by run, interval width against runs) as PNG and SVG here.",
)
@click.option(
    "--write",
    is_flag=True,
    help="Put the recommended runs, iterations and warmup into the configuration file "
    "(comments kept): the benchmark's table with --benchmark, else the suite defaults.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@reports_errors
def calibrate(**o: Any) -> None:
    """Measure an A/A duet (the same version on both sides) and tell what this machine detects.

    Reports the A/A ratio and its interval (which must contain 1), the interval width, the
    sync gain (what running the sides together buys here), Kalibera's impact factor, variance
    components, the warm-up, the side asymmetry (does the core matter?), the barrier's start
    skew, which method pays on this machine, and the runs, iterations and warm-up that detect
    --threshold at --confidence, with the machine time they cost.

    \b
    Examples:
      duet calibrate --command 'python -c "sum(range(10**6))"'
      duet calibrate --benchmark parse --compare-sequential --write
      duet calibrate --python .venv/bin/python --callable mypkg.bench:parse --plot plots/
    """
    from duet.calibrate import aa_data
    from duet.calibrate import calibrate as run_calibration
    from duet.errors import UsageError

    sources = [k for k in ("benchmark", "command", "python") if o[k]]
    if o["from_results"]:
        # No measuring: --benchmark then only names the configuration table for --write.
        if o["command"] or o["python"]:
            raise UsageError(
                "--results calibrates from a file: it cannot be combined with --command or "
                "--python (they say what to measure)",
                fix="drop --command/--python, or drop --results to measure anew",
            )
    elif len(sources) != 1:
        raise UsageError(
            "give exactly one of --benchmark NAME, --command CMD, --python INTERP --callable "
            "MODULE:FUNCTION (or --results FILE to calibrate from an earlier A/A)"
            + (f" (got {', '.join('--' + s for s in sources)})" if sources else ""),
            fix="e.g. duet calibrate --command 'sleep 0.01'",
        )
    if o["python"] and not o["callable_"]:
        raise UsageError(
            "--python needs --callable MODULE:FUNCTION", fix="e.g. --callable mypkg.bench:run"
        )
    if o["callable_"] and not o["python"]:
        raise UsageError("--callable needs --python INTERP", fix="e.g. --python .venv/bin/python")
    settings = analysis_settings(o)
    if settings.threshold <= 0:
        raise UsageError("--threshold must be above 0 for a calibration (the change to detect)")

    if o["from_results"]:
        from duet import results as results_mod

        doc = results_mod.load(o["from_results"])
        out = Path(o["from_results"])
    else:
        spec = _spec(o)
        doc = _measure(spec, o, settings)
        out = Path(o["out"])
    main_record, seq_record = _records(doc)
    try:
        data = aa_data(main_record)
        seq_data = aa_data(seq_record) if seq_record is not None else None
    except ValueError as e:
        from duet.errors import BenchmarkFailed

        raise BenchmarkFailed(str(e), fix=f"the run failures are in {out}") from e
    cal = run_calibration(
        data,
        sequential=seq_data,
        confidence=settings.confidence,
        threshold=settings.threshold,
        reps=settings.reps,
        seed=settings.seed,
        interval=settings.interval,
        winsorize=settings.winsorize,
    )
    env = doc.environment
    context = {
        "results": str(out),
        "isolation": env.get("isolation"),
        "machine": env.get("machine_kind"),
        "load_average_before": env.get("load_average"),
        "load_average_after": env.get("load_average_after"),
        "command": main_record.versions.get("baseline"),
    }
    config_target = _config_target(o) if (o["write"] or o["benchmark"]) else None
    written: str | None = None
    if o["write"]:
        written = _write(cal, config_target, o)
    plots: list[Path] = []
    if o["plot_dir"]:
        plots = write_plots(data, cal, Path(o["plot_dir"]))
    if o["fmt"] == "json":
        payload = {**cal.to_dict(), "context": context}
        payload["plots"] = [str(p) for p in plots]
        payload["written"] = written
        click.echo(json.dumps(_finite(payload), indent=1, ensure_ascii=False))
    else:
        click.echo(
            render_text(cal, context, config_target=config_target, written=written, plots=plots),
            nl=False,
        )
    click.echo(f"results: {out}", err=True)


# --------------------------------------------------------------------------------------------
# What to measure, and measuring it


def _spec(o: dict[str, Any]) -> BenchmarkSpec:
    from duet.plan import BenchmarkSpec, SideSpec

    if o["benchmark"]:
        from duet.config import load_config, to_specs

        config = load_config(Path(o["config_path"]) if o["config_path"] else None)
        config.benchmark(o["benchmark"])  # a ConfigError naming the closest name
        root = config.path.resolve().parent
        overrides: dict[str, Any] = {"timeout_s": o["timeout"]} if _given("timeout") else {}
        specs = [
            s
            for s in to_specs(
                config,
                baseline_dir=root,
                candidate_dir=root,
                select=o["benchmark"],
                overrides=overrides,
            )
            if s.name == o["benchmark"]
        ]
        base = specs[0]
        # A/A: the baseline's side on both sides (the same directory, so the same version).
        return replace(
            base,
            candidate=base.baseline,
            runs=o["runs"],
            iterations=o["iterations"],
            warmup=o["warmup"],
            method="duet",
        )
    if o["python"]:
        cwd = o["directory"]
        side = SideSpec(
            kind="python",
            interpreter=o["python"],
            callable=o["callable_"],
            setup=o["setup"],
            sys_path=(str(Path(cwd).resolve()),) if cwd else (),
            cwd=cwd,
        )
        name = o["callable_"]
    else:
        side = SideSpec(
            kind="native" if o["native"] else "command", command=o["command"], cwd=o["directory"]
        )
        name = o["command"].strip()
        name = name if len(name) <= 60 else name[:57] + "..."
    return BenchmarkSpec(
        name=name,
        baseline=side,
        candidate=side,
        runs=o["runs"],
        iterations=o["iterations"],
        warmup=o["warmup"],
        timeout_s=o["timeout"],
        method="duet",
    )


def _given(name: str) -> bool:
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE


def _measure(spec: BenchmarkSpec, o: dict[str, Any], settings: Any) -> ResultsDocument:

    from duet.session import measure, raise_if_broken

    benchmarks = [spec]
    if o["compare_sequential"]:
        benchmarks.append(replace(spec, name=spec.name + SEQUENTIAL_SUFFIX, method="sequential"))
    options = session_options(o, settings, "calibrate")
    click.echo(
        f"duet: calibrating {spec.name!r}: A/A, {spec.runs} runs x ({spec.warmup} warm-up + "
        f"{spec.iterations}) iterations"
        + (", then the same sequentially" if o["compare_sequential"] else ""),
        err=True,
    )
    install_signal_handlers()
    doc = measure(benchmarks, options)
    raise_if_broken(doc, o["max_failures"])
    return doc


def _records(doc: ResultsDocument) -> tuple[Any, Any]:
    """The A/A duet record and, when present, its sequential copy."""
    from duet.errors import ResultsError

    duets = [b for b in doc.benchmarks if b.method == "duet"]
    if not duets:
        raise ResultsError(
            "the results hold no benchmark measured with the duet method",
            fix="calibrate from an A/A written by `duet calibrate` or `duet run` (same command "
            "on both sides)",
        )
    main = duets[0]
    seq = next(
        (b for b in doc.benchmarks if b.method == "sequential" and b.name.startswith(main.name)),
        None,
    )
    if main.versions.get("baseline") != main.versions.get("candidate"):
        import logging

        logging.getLogger(__name__).warning(
            "%s: the two sides ran different things (%s vs %s): this is not an A/A",
            main.name,
            main.versions.get("baseline"),
            main.versions.get("candidate"),
        )
    return main, seq


# --------------------------------------------------------------------------------------------
# The configuration


def _config_target(o: dict[str, Any]) -> tuple[Path, str, str | None] | None:
    """``(file, form, benchmark name or None)`` of the configuration the lines belong in."""
    from duet.config import find_config

    path = Path(o["config_path"]) if o["config_path"] else find_config(Path.cwd())
    if path is None:
        return None
    form = "pyproject" if path.name == "pyproject.toml" else "duet"
    return path, form, o["benchmark"] or None


def _write(
    cal: Calibration, target: tuple[Path, str, str | None] | None, o: dict[str, Any]
) -> str | None:
    from duet.config import RECOMMENDATION_KEYS, write_recommendation
    from duet.errors import ConfigError

    rec = cal.recommended
    if rec is None:
        raise ConfigError(
            "there is no recommendation to write (too little data for variance components)",
            fix="calibrate with more --runs and --iterations",
        )
    if target is None:
        raise ConfigError(
            "--write found no configuration file (duet.toml, or [tool.duet] in pyproject.toml)",
            fix="create duet.toml, or name the file with --config PATH",
        )
    path, _form, benchmark = target
    values: dict[str, int | str] = {
        k: (str(v) if k == "method" else int(v))
        for k, v in rec.values().items()
        if k in RECOMMENDATION_KEYS
    }
    write_recommendation(path, benchmark=benchmark, values=values)
    where = f"benchmark {benchmark!r}" if benchmark else "the suite defaults"
    return f"{path} ({where})"


def config_lines(rec: Recommendation, target: tuple[Path, str, str | None] | None) -> list[str]:
    """The exact lines for the configuration file, with where they go."""
    if target is None:
        where = "duet.toml (top level, or the benchmark's [[benchmark]] table)"
    else:
        path, form, benchmark = target
        table = "[[tool.duet.benchmark]]" if form == "pyproject" else "[[benchmark]]"
        top = "[tool.duet]" if form == "pyproject" else "the top of the file"
        where = (
            f"{path}, in the {table} table with name = {json.dumps(benchmark)}"
            if benchmark
            else f"{path}, {top} (suite defaults)"
        )
    lines = [
        f"# {where}:",
        f"runs = {rec.runs}",
        f"iterations = {rec.iterations}",
        f"warmup = {rec.warmup}",
        f'method = "{rec.method}"',
    ]
    return lines


# --------------------------------------------------------------------------------------------
# Text


def _pct(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    from duet.units import sig

    return f"{sig(x * 100, digits)}%"


def _change(ratio: float) -> str:
    from duet.units import change

    return change(ratio)


def _wrap(text: str, indent: int, *, first: int = 0) -> str:
    # A command is copied from the terminal: never break one across lines.
    protected = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", _NBSP), text)
    filled = textwrap.fill(
        protected,
        width=_WIDTH,
        initial_indent=" " * first,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return filled[first:].replace(_NBSP, " ")


def _line(label: str, text: str) -> str:
    return f"{label:<{_LABEL}}" + _wrap(text, _LABEL, first=_LABEL)


def render_text(
    cal: Calibration,
    context: dict[str, Any],
    *,
    config_target: tuple[Path, str, str | None] | None = None,
    written: str | None = None,
    plots: list[Path] | None = None,
) -> str:
    """The human report: aligned figures, each with what it means here, then the plan."""
    from duet.units import duration, interval, percent, sig

    conf = percent(cal.confidence)
    out: list[str] = []
    head = (
        f"duet calibrate: A/A of {cal.benchmark!r}, {cal.runs} runs x {cal.iterations} "
        f"iterations analysed"
    )
    if cal.analysed_from:
        head += f" (the first {cal.analysed_from} measured iteration(s) of each run left out)"
    out.append(_wrap(head, 2))
    if context.get("machine"):
        out.append(
            _wrap(
                f"on {context['machine']}; load average before "
                f"{_loads(context.get('load_average_before'))}, after "
                f"{_loads(context.get('load_average_after'))}",
                2,
            )
        )
    out.append("")

    # The interval.
    if cal.ci_low is not None and cal.ci_high is not None:
        verdict_text = (
            "contains 1, as it must"
            if cal.contains_one
            else "DOES NOT CONTAIN 1: the two sides are not equivalent here"
        )
        out.append(
            _line(
                "A/A ratio",
                f"{sig(cal.ratio)} {interval(cal.ci_low, cal.ci_high)} {conf} CI, width "
                f"{_pct(cal.ci_width)}: {verdict_text}",
            )
        )
        out.append(
            _line(
                "A/A verdict",
                f"{cal.aa_verdict} at threshold {_pct(cal.threshold)}"
                + (
                    " (a false positive: identical sides)"
                    if cal.aa_verdict in ("regression", "improvement")
                    else ""
                ),
            )
        )
    else:
        out.append(_line("A/A ratio", f"{sig(cal.ratio)} (too few runs for an interval)"))
    if cal.sync_gain is not None:
        out.append(
            _line(
                "sync gain",
                f"{sig(cal.sync_gain)}x: pairing each run with another run's data gives a "
                f"{_pct(cal.shuffled_width)} wide interval instead of {_pct(cal.ci_width)}",
            )
        )
    if cal.sequential is not None:
        s = cal.sequential
        out.append(
            _line(
                "accuracy gain",
                f"{sig(s.accuracy_gain) if s.accuracy_gain is not None else 'n/a'}x over the "
                f"sequential method (its interval: {_pct(s.relative_width)} wide, ratio "
                f"{sig(s.ratio)} {interval(s.ci_low, s.ci_high)})",
            )
        )

    # Impact factors and components.
    parts = []
    for key, label in (
        ("baseline", "baseline"),
        ("candidate", "candidate"),
        ("log_ratio", "ratio"),
    ):
        entry = cal.impact_factor[key]
        if entry.plain is None:
            parts.append(f"{label} n/a")
        else:
            parts.append(f"{label} {sig(entry.plain)} (centred {sig(entry.transformed or 0)})")
    lr = cal.impact_factor["log_ratio"]
    if lr.plain is None:
        fit = f" ({lr.missing})"
    elif lr.additive:
        fit = (
            "; the additive model fits (centred near 1): the planning below holds"
            if lr.plain > 1.5
            else "; runs barely differ more than iterations do"
        )
    else:
        fit = "; the additive model does NOT fit: the plan below is approximate"
    out.append(_line("impact factor", ", ".join(parts) + fit))
    if cal.components is not None:
        c = cal.components
        out.append(
            _line(
                "variance (log)",
                f"within runs S_X² {sig(c.within_run_var)}, between runs S_A² "
                f"{sig(c.between_run_var)}, run effect var A {sig(c.run_effect_var)}",
            )
        )
    if cal.startup_ns is not None and cal.startup_iterations is not None:
        out.append(
            _line(
                "start-up cost",
                f"{duration(cal.startup_ns)} per run = {sig(cal.startup_iterations)} iterations "
                f"of {duration(cal.mean_iteration_ns)}",
            )
        )
    else:
        out.append(_line("iteration", duration(cal.mean_iteration_ns)))
    if cal.warmup is not None:
        w = cal.warmup
        if w.iterations:
            text = (
                f"{w.iterations} iteration(s): they ran {_change(w.slowdown)} against the "
                "steady state"
            )
        else:
            text = "none: the series is flat from the first iteration"
        if w.trending:
            text += "; still trending in the second half of the runs (runs too short to tell)"
        out.append(_line("warm-up", text))
    if cal.side_asymmetry is not None:
        a = cal.side_asymmetry
        if a.ci_low is not None:
            cpu_text = (
                f"CPU {a.cpu_b} runs {_change(a.ratio)} against CPU {a.cpu_a} "
                f"{interval(a.ci_low, a.ci_high)} {conf} CI"
            )
            if a.significant:
                cpu_text += (
                    ": the core matters; balanced alternation cancels it in the ratio but it "
                    "widens the interval"
                )
                if a.share_of_run_variance is not None:
                    cpu_text += f" ({_pct(a.share_of_run_variance, 2)} of the run-to-run variance)"
            else:
                cpu_text += ": no detectable difference between the cores"
        else:
            cpu_text = f"{a.runs_a} vs {a.runs_b} runs per core: too few to tell"
        out.append(_line("side asymmetry", cpu_text))
    if cal.start_skew_ns is not None:
        k = cal.start_skew_ns
        out.append(
            _line(
                "start skew",
                f"median {duration(k.median)}, p99 {duration(k.p99)} (p99 is "
                f"{_pct(k.relative_p99, 2)} of an iteration), max {duration(k.max)}",
            )
        )
    out.append(_line("method", f"{cal.method_pays} pays here: {cal.method_reason}"))

    if cal.warnings:
        out.append("")
        for warning in cal.warnings:
            out.append(_wrap(f"warning: {warning}", 9))

    rec = cal.recommended
    out.append("")
    if rec is None:
        out.append("No recommendation: too little data for the variance components.")
    else:
        cost = (
            f", about {_long_duration(rec.machine_time_ns)} of machine time per benchmark"
            if rec.machine_time_ns is not None
            else ""
        )
        out.append(
            _wrap(
                f"Recommendation for a {_pct(rec.threshold)} threshold at {conf} confidence: "
                f"method {rec.method}, {rec.runs} runs x ({rec.warmup} warm-up + "
                f"{rec.iterations}) iterations. Expected {conf} interval width "
                f"{_pct(rec.expected_ci_width)}{cost}.",
                0,
            )
        )
        out.append(
            _wrap(
                f"Iterations per run from Kalibera's formula 8: n* = {rec.optimal_iterations} "
                f"with w = {sig(rec.run_cost_iterations)} iterations of start-up and warm-up"
                + (
                    f" (raised to the minimum of {rec.iterations})"
                    if rec.iterations > rec.optimal_iterations
                    else ""
                )
                + (
                    f" (formula 8 asked for more, capped at {rec.max_iterations}: the run "
                    "effect is small next to the iteration noise, and runs more than 10 times "
                    "longer than the measured ones are not extrapolated to)"
                    if rec.optimal_iterations >= rec.max_iterations
                    else ""
                )
                + ". An unchanged benchmark then gets 'no change', and a change of the "
                "threshold's size is significant, each with about the confidence's probability.",
                0,
            )
        )
        if rec.method == "sequential":
            out.append(
                _wrap(
                    "Simultaneous runs measure worse than sequential ones on this machine: "
                    "measure with `duet run --method sequential` / `duet compare --method "
                    'sequential`, or method = "sequential" in the configuration.',
                    0,
                )
            )
        if not rec.reachable:
            out.append(_wrap("The threshold is out of reach at a practical number of runs.", 0))
        if cal.width_by_runs:
            table = ", ".join(f"{k} → {_pct(v, 2)}" for k, v in sorted(cal.width_by_runs.items()))
            out.append(
                _wrap(f"Interval width by runs (at {rec.iterations} iterations): {table}", 2)
            )
        out.append("")
        lines = config_lines(rec, config_target)
        if written:
            out.append(f"Written to {written}:")
            lines = [ln for ln in lines if not ln.startswith("#")]
            if rec.method != "duet":
                out.append('(method = "sequential" is not written by --write: add it by hand)')
        else:
            out.append("Configuration lines:")
        out.extend(f"  {ln}" for ln in lines)
    if plots:
        out.append("")
        out.append("plots: " + ", ".join(str(p) for p in plots if p.suffix == ".png"))
    return "\n".join(out) + "\n"


def _long_duration(ns: float) -> str:
    """A machine-time budget: seconds up to 100 s, then minutes, then hours."""
    from duet.units import duration, sig

    seconds = ns / 1e9
    if seconds < 100:
        return duration(ns)
    if seconds < 6000:
        return f"{sig(seconds / 60)} min"
    return f"{sig(seconds / 3600)} h"


def _loads(value: Any) -> str:
    if isinstance(value, list) and value:
        return " ".join(f"{x:.2f}" for x in value)
    return "n/a"


def _finite(value: Any) -> Any:
    """JSON has no infinity or NaN: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# Plots


# Typed Any: matplotlib's stubs want a dict keyed by the literal names of every rc parameter.
_RC: Any = {
    "font.size": 10,
    "axes.titlesize": 11,
    "legend.fontsize": 9,
    "text.parse_math": False,
    "text.usetex": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "svg.fonttype": "path",
    "svg.hashsalt": "duet",
}
_SIDE = {"baseline": ("#0072B2", "o"), "candidate": ("#D55E00", "^")}
_CPU_COLOURS = ("#009E73", "#CC79A7")
#: Ticks of the ratio axis (and their reciprocals): the two largest that fit are shown.
_NICE_RATIOS = (1.001, 1.002, 1.005, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def samples_figure(data: AAData, cal: Calibration) -> Any:
    """Kalibera et al.'s Figure 1 for the A/A: every iteration time by run (vertical lines
    separate runs; warm-up greyed), and below, every iteration's ratio with each run's geometric
    mean coloured by the CPU the baseline sat on (side asymmetry shows as two levels)."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from duet.report.plots import label, time_unit
    from duet.units import sig

    fig = _figure(10, 6.2)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    w0 = data.warmup
    full_a = np.hstack([data.baseline_warmup_ns, data.baseline_ns])
    full_b = np.hstack([data.candidate_warmup_ns, data.candidate_ns])
    per_run = full_a.shape[1]
    scale, unit = time_unit(float(np.median(full_a)))
    dropped = w0 + cal.analysed_from
    x = np.arange(full_a.size).reshape(full_a.shape)
    for side, values in (("baseline", full_a), ("candidate", full_b)):
        colour, marker = _SIDE[side]
        y = values / scale
        top.scatter(x[:, dropped:].ravel(), y[:, dropped:].ravel(), s=7, c=colour, marker=marker,
                    label=side, linewidths=0)  # fmt: skip
        if dropped:
            top.scatter(x[:, :dropped].ravel(), y[:, :dropped].ravel(), s=7, c="#AAAAAA",
                        marker=marker, linewidths=0)  # fmt: skip
    if dropped:
        top.scatter([], [], s=7, c="#AAAAAA", label="warm-up (left out)")
    for r in range(1, data.runs):
        for ax in (top, bottom):
            ax.axvline(r * per_run - 0.5, color="#BBBBBB", linewidth=0.6)
    top.set_ylabel(f"iteration time ({unit})")
    top.set_title(label(f"A/A samples by run: {cal.benchmark}", 80), loc="left")
    top.legend(loc="upper right", ncols=3, frameon=False)

    ratio = full_b / full_a
    bottom.scatter(x.ravel(), ratio.ravel(), s=5, c="#666666", linewidths=0)
    cpus = sorted({c for c in data.baseline_cpus if c is not None})
    seen: set[int] = set()
    log_s = np.log(data.candidate_ns[:, cal.analysed_from :]) - np.log(
        data.baseline_ns[:, cal.analysed_from :]
    )
    for r in range(data.runs):
        g = float(np.exp(log_s[r].mean()))
        cpu = data.baseline_cpus[r]
        colour = _CPU_COLOURS[cpus.index(cpu) % 2] if cpu in cpus else "#000000"
        lbl = None
        if cpu is not None and cpu not in seen:
            seen.add(cpu)
            lbl = f"run geometric mean, baseline on CPU {cpu}"
        bottom.hlines(g, r * per_run + dropped - 0.5, (r + 1) * per_run - 0.5, colors=colour,
                      linewidth=2.2, label=lbl)  # fmt: skip
    bottom.axhline(1.0, color="#000000", linewidth=0.8)
    # A log axis symmetric around 1: a ratio r and 1/r are the same distance from it.
    lo, hi = np.quantile(np.log(ratio), [0.005, 0.995])
    span = max(float(hi), -float(lo), 0.005) * 1.15
    bottom.set_yscale("log")
    bottom.set_ylim(math.exp(-span), math.exp(span))
    nice = [v for v in _NICE_RATIOS if math.log(v) <= span][-2:]
    bottom.yaxis.set_major_locator(FixedLocator([1.0, *nice, *(1 / v for v in nice)]))
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: sig(v)))
    bottom.yaxis.set_minor_locator(NullLocator())
    bottom.set_ylabel("ratio candidate / baseline")
    bottom.set_xlabel(f"iteration, run after run ({data.runs} runs of {per_run})")
    if seen:
        bottom.legend(loc="upper right", ncols=2, frameon=False)
    return fig


def width_figure(cal: Calibration) -> Any:
    """Relative interval width against runs: formula 5 with the measured components at the
    recommended iterations (and at the measured ones), the target, and the widths measured."""
    import numpy as np

    from duet.calibrate import width_for_runs

    fig = _figure(8, 4.6)
    ax = fig.subplots()
    rec = cal.recommended
    if rec is None or cal.plan_components is None:
        ax.text(0.5, 0.5, "not enough data for a prediction", ha="center", transform=ax.transAxes)
        return fig
    top = max(200, 2 * rec.runs)
    grid = [int(k) for k in np.unique(np.geomspace(2, top, 60).round().astype(int))]
    curves = [(rec.method, cal.plan_components, "#0072B2")]
    if rec.method == "sequential" and cal.components is not None:
        curves.append(("duet", cal.components, "#009E73"))
    for method, comps, colour in curves:
        for iterations, style, text in (
            (rec.iterations, "-", f"{rec.iterations} iterations/run (recommended)"),
            (cal.iterations, "--", f"{cal.iterations} iterations/run (measured)"),
        ):
            if style == "--" and iterations == rec.iterations:
                continue
            widths = width_for_runs(
                comps, iterations=iterations, runs=grid, confidence=cal.confidence
            )
            ax.plot(list(widths), [v * 100 for v in widths.values()], style, color=colour,
                    label=f"predicted, {method}, {text}")  # fmt: skip
    target = (math.exp(rec.target_half_width) - math.exp(-rec.target_half_width)) * 100
    ax.axhline(target, color="#D55E00", linewidth=1,
               label=f"target: decides at {_pct(cal.threshold)}")  # fmt: skip
    ax.scatter([rec.runs], [rec.expected_ci_width * 100], color="#D55E00", zorder=3, s=30,
               label=f"recommended: {rec.runs} runs")  # fmt: skip
    if cal.ci_width is not None:
        ax.scatter([cal.runs], [cal.ci_width * 100], marker="D", color="#000000", zorder=3,
                   label="measured: duet")  # fmt: skip
    if cal.shuffled_width is not None:
        ax.scatter([cal.runs], [cal.shuffled_width * 100], marker="s", color="#999999",
                   zorder=3, label="measured: shuffled (no shared noise)")  # fmt: skip
    if cal.sequential is not None:
        ax.scatter([cal.sequential.runs], [cal.sequential.relative_width * 100], marker="v",
                   color="#CC79A7", zorder=3, label="measured: sequential")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    from duet.units import sig

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{sig(v, 2)}%"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("runs")
    ax.set_ylabel(f"{cal.confidence * 100:g}% interval width")
    ax.set_title("Interval width against runs (Kalibera formula 5)", loc="left")
    ax.legend(frameon=False, fontsize=8)
    return fig


def write_plots(data: AAData, cal: Calibration, directory: Path) -> list[Path]:
    """Write ``calibration-samples`` and ``calibration-width`` as PNG and SVG."""
    import warnings

    import matplotlib

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with matplotlib.rc_context(_RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        figures = (
            ("calibration-samples", samples_figure(data, cal)),
            ("calibration-width", width_figure(cal)),
        )
        for stem, fig in figures:
            for suffix, options in (
                (".png", {"dpi": 130}),
                (".svg", {"metadata": {"Date": None}}),
            ):
                path = directory / f"{stem}{suffix}"
                fig.savefig(path, **options)
                written.append(path)
    return written
