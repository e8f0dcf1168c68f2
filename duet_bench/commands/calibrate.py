"""``duet calibrate``: an A/A duet that tells what this machine can detect and how to spend CI
minutes on it (``docs/statistics.md``, method 6; the figures are explained in
``docs/calibration.md``).

The same version runs on both sides, the sides crossing over the two CPUs at every iteration
(or swapping them between runs, ``--crossover run``); the measurement goes through
:func:`duet_bench.session.measure` like any other, and :func:`duet_bench.calibrate.calibrate`
turns it into figures and a recommendation: :mod:`duet_bench.calibrate.aa` does this work, and
this module wires the options to it and the report.
``--compare-designs`` (old spelling ``--compare-sequential``) measures the same A/A with each
design, crossover at every iteration, sides swapped between runs and sequential, interleaved
(:mod:`duet_bench.calibrate.interleave`), and recommends the design with the narrowest
interval at equal machine time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duet_bench import interrupts
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    analysis_options,
    bench_option,
    bounded,
    crossover_option,
    machine_options,
)
from duet_bench.commands.output import format_option, out_option, results_path
from duet_bench.errors import EXIT_REGRESSION
from duet_bench.options.calibrate import CalibrateOptions
from duet_bench.report.rows import interference_line
from duet_bench.results import load_given

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.options.calibrate import CalibrateOptions
    from duet_bench.plan import BenchmarkSpec
    from duet_bench.results import ResultsDocument


@click.command(
    cls=Command,
    exits={0: "calibrated (an A/A has no regression to find)", EXIT_REGRESSION: ""},
)
@bench_option(
    "The benchmark of the configuration file to measure, in the working tree as it is (build "
    "it first): its name, or a glob that matches one name; a suite's benchmark (SUITE/NAME) "
    "is found by discovering the suites there. With --results: the table --write sets."
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
    metavar="DIR",
    help="Working directory (and, with --python, python path) of both sides.",
)
@click.option(
    "--results",
    "from_results",
    type=click.Path(),
    help="Calibrate from an A/A results file written earlier (no measuring).",
)
@click.option("--config", "config_path", metavar="PATH", help="Configuration file (--bench).")
@click.option(
    "--runs",
    type=bounded("runs"),
    default=20,
    show_default=True,
    metavar="N",
    help="Runs of the A/A (a calibration needs more than a comparison).",
)
@click.option(
    "--iterations",
    type=bounded("iterations"),
    default=30,
    show_default=True,
    metavar="N",
    help="Per run.",
)
@click.option(
    "--warmup",
    type=bounded("warmup"),
    default=0,
    show_default=True,
    metavar="N",
    help="Warm-up iterations per run; the calibration finds where the series stops trending "
    "itself and leaves those iterations out.",
)
@click.option(
    "--compare-designs",
    "--compare-sequential",
    "compare_designs",
    is_flag=True,
    help="Measure the same A/A with each design too: crossover at every iteration, sides "
    "swapped between runs, and sequential (the runs interleaved in blocks, about 2.5 times the "
    "machine time of one A/A); report each design's width and recommend the narrowest at equal "
    "machine time, which --write stores as crossover (and method). --compare-sequential is the "
    "old spelling.",
)
@crossover_option
@machine_options
@analysis_options
@out_option("duet-results/calibration", "results.json, the A/A measurement (raw samples)")
@format_option(
    "text",
    "json",
    elsewhere="duet report --format FORMAT on the A/A's results under --out",
)
@click.option(
    "--plot",
    "plot_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write the plots (samples by run, interval width against runs) as PNG and SVG here.",
)
@click.option(
    "--write",
    is_flag=True,
    help="Put the recommended runs, iterations and warmup into the configuration file "
    "(comments kept): the benchmark's table with --bench (for a suite's benchmark, its "
    "[[suite]] table: every benchmark the suite finds), else the suite defaults. With them "
    "min_runs and max_runs, which make that suite measured until decided.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def calibrate(ctx: click.Context, /, **_given: Any) -> None:
    """Measure an A/A duet (the same version on both sides) and tell what this machine detects.

    Reports the A/A ratio and its interval (which must contain 1), the interval width, the
    sync gain (what running the sides together buys here), Kalibera's impact factor, variance
    components, the warm-up, the side asymmetry (does the core matter?), the barrier's start
    skew, which method pays on this machine, and the runs, iterations and warm-up that detect
    --threshold at --confidence, with the machine time they cost.

    \b
    Examples:
      duet calibrate --command 'python -c "sum(range(10**6))"'
      duet calibrate --bench parse --compare-designs --write
      duet calibrate --python .venv/bin/python --callable mypkg.bench:parse --plot plots/
    """
    run_calibration(CalibrateOptions.from_click(ctx))


def run_calibration(o: CalibrateOptions) -> None:
    """``duet calibrate`` with its options: measure the A/A (or read it with ``--results``),
    calibrate, write the recommendation and the plots when asked, print the report."""
    from duet_bench.calibrate.aa import calibrate_aa, config_target, write_recommended
    from duet_bench.report.calibration import finite, render_text
    from duet_bench.report.calibration_plots import write_plots

    # The benchmark --write sets: the one --bench named (a suite's benchmark resolved by
    # discovery when measured), which names a [[benchmark]] or, for a suite's, its [[suite]].
    table = o.source.bench
    if o.source.from_results:
        doc = load_given(o.source.from_results)
        out = Path(o.source.from_results)
    else:
        out = results_path(o.out)
        spec = _spec(o)
        table = spec.name if o.source.bench else None
        doc = _measure(spec, o, out)
    aa = calibrate_aa(doc, o.analysis, out)
    cal = aa.calibration
    env = doc.environment
    context = {
        "results": str(out),
        "isolation": env.get("isolation"),
        "machine": env.get("machine_kind"),
        "load_average_before": env.get("load_average"),
        "load_average_after": env.get("load_average_after"),
        "command": aa.record.versions.get("baseline"),
        "interference": interference_line(aa.analysis.to_block()),
    }
    target = config_target(o.source.config_path, table) if (o.write or o.source.bench) else None
    written = write_recommended(cal, target) if o.write else None
    plots = write_plots(aa.data, cal, Path(o.plot_dir)) if o.plot_dir else []
    if o.fmt == "json":
        payload = {**cal.to_dict(), "context": context}
        payload["plots"] = [str(p) for p in plots]
        payload["written"] = written
        click.echo(json.dumps(finite(payload), indent=1, ensure_ascii=False))
    else:
        click.echo(
            render_text(cal, context, config_target=target, written=written, plots=plots),
            nl=False,
        )
    click.echo(f"results: {out}", err=True)


def _spec(o: CalibrateOptions) -> BenchmarkSpec:
    """The A/A spec with the settings the options give (:meth:`CalibrateOptions.settings`)."""
    from duet_bench.calibrate.aa import bench_spec, command_spec

    explicit = o.settings()
    if o.source.bench:
        return bench_spec(
            o.source.bench,
            o.source.config_path,
            explicit,
            run_as=o.machine.options.run_as,
            keep_env=o.machine.options.keep_env,
        )
    return command_spec(
        o.source.name(), o.source.side(), explicit.adding(timeout_s=o.machine.timeout_s)
    )


def _measure(spec: BenchmarkSpec, o: CalibrateOptions, out: Path) -> ResultsDocument:
    """Measure the A/A, saying what on stderr (and each block of ``--compare-designs``)."""
    from duet_bench.calibrate.aa import measure_aa

    compare = o.compare_designs
    click.echo(
        f"duet: calibrating {spec.name!r}: A/A, {spec.runs} runs x ({spec.warmup} warm-up + "
        f"{spec.iterations}) iterations"
        + (
            ", with crossover at every iteration, sides swapped between runs and sequentially, "
            "interleaved"
            if compare
            else ""
        ),
        err=True,
    )
    interrupts.install()

    def on_block(n: int, total: int) -> None:
        if not o.machine.quiet:
            click.echo(f"duet: block {n + 1}/{total}", err=True)

    return measure_aa(
        spec,
        o.machine.session(o.analysis, "calibrate", out),
        compare_designs=compare,
        max_failures=o.machine.max_failures,
        on_block=on_block,
    )
