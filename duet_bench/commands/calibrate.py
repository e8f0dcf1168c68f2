"""``duet calibrate``: an A/A duet that tells what this machine can detect and how to spend CI
minutes on it (``docs/statistics.md``, method 6; the figures are explained in
``docs/calibration.md``).

The same version runs on both sides, the sides crossing over the two CPUs at every iteration
(or swapping them between runs, ``--crossover run``); the measurement goes through
:func:`duet_bench.session.measure` like any other, and :func:`duet_bench.calibrate.calibrate`
turns it into figures and a recommendation.
``--compare-designs`` (old spelling ``--compare-sequential``) measures the same A/A with each
design, crossover at every iteration, sides swapped between runs and sequential, interleaved
(:mod:`duet_bench.commands.calibrate_designs`), and recommends the design with the narrowest
interval at equal machine time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duet_bench import interrupts, settings
from duet_bench.commands.help import Command
from duet_bench.commands.options import (
    analysis_options,
    bench_option,
    bounded,
    crossover_option,
    machine_options,
)
from duet_bench.commands.output import format_option, out_option, results_path
from duet_bench.errors import EXIT_REGRESSION, BenchmarkFailed, ConfigError, ResultsError
from duet_bench.results import load_given

if TYPE_CHECKING:  # imported by the command when it runs: duet --help does not load it
    from duet_bench.calibrate import Calibration
    from duet_bench.config import Config
    from duet_bench.options.calibrate import AASource, CalibrateOptions
    from duet_bench.options.common import MachineGiven
    from duet_bench.plan import BenchmarkSpec
    from duet_bench.report.calibration import ConfigTarget
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
    from duet_bench.options.calibrate import CalibrateOptions

    run_calibration(CalibrateOptions.from_click(ctx))


def run_calibration(o: CalibrateOptions) -> None:
    """``duet calibrate`` with its options: measure the A/A (or read it with ``--results``),
    calibrate, write the recommendation and the plots when asked, print the report."""
    from duet_bench.calibrate import aa_data, calibrate_metrics

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
    main_record, seq_record = _records(doc)
    from duet_bench.analysis import analyze_benchmark
    from duet_bench.commands.calibrate_designs import design_records, with_designs
    from duet_bench.report.rows import interference_line

    analysis = analyze_benchmark(main_record, o.analysis)
    designs = design_records(doc, main_record)
    try:
        cal = calibrate_metrics(main_record, seq_record, o.analysis, busy_share=analysis.busy_share)
        if len(designs) > 1:
            cal, main_record = with_designs(designs, cal, o.analysis, analysis.busy_share)
        data = aa_data(main_record, cal.metric)
    except ValueError as e:
        raise BenchmarkFailed(str(e), fix=f"the run failures are in {out}") from e
    env = doc.environment
    context = {
        "results": str(out),
        "isolation": env.get("isolation"),
        "machine": env.get("machine_kind"),
        "load_average_before": env.get("load_average"),
        "load_average_after": env.get("load_average_after"),
        "command": main_record.versions.get("baseline"),
        "interference": interference_line(analysis.to_block()),
    }
    config_target = _config_target(o.source, table) if (o.write or o.source.bench) else None
    written: str | None = None
    if o.write:
        written = _write(cal, config_target)
    from duet_bench.report.calibration import finite, render_text
    from duet_bench.report.calibration_plots import write_plots

    plots: list[Path] = []
    if o.plot_dir:
        plots = write_plots(data, cal, Path(o.plot_dir))
    if o.fmt == "json":
        payload = {**cal.to_dict(), "context": context}
        payload["plots"] = [str(p) for p in plots]
        payload["written"] = written
        click.echo(json.dumps(finite(payload), indent=1, ensure_ascii=False))
    else:
        click.echo(
            render_text(cal, context, config_target=config_target, written=written, plots=plots),
            nl=False,
        )
    click.echo(f"results: {out}", err=True)


# --------------------------------------------------------------------------------------------
# What to measure, and measuring it


def _spec(o: CalibrateOptions) -> BenchmarkSpec:
    """The A/A spec, through the one spec builder (:func:`duet_bench.plan.build`), with the
    settings the options give (:meth:`CalibrateOptions.settings`)."""
    from duet_bench.plan import build, for_suite

    explicit = o.settings()
    source = o.source
    if source.bench:
        from duet_bench.config import load_config

        config = load_config(Path(source.config_path) if source.config_path else None)
        root = config.path.resolve().parent
        if config.suites and not any(b.name == source.bench for b in config.benchmarks):
            config = _with_suites(config, root, o.machine)
        b = config.select_one(source.bench)  # a ConfigError naming the closest name
        # A/A: the baseline's side on both sides (the same directory, so the same version).
        (planned,) = [
            p
            for p in for_suite(
                config,
                baseline_dir=root,
                candidate_dir=root,
                select=b.name,
                explicit=explicit,
            )
            if p.spec.name == b.name
        ]
        return replace(planned.spec, candidate=planned.spec.baseline)
    side = source.side()
    resolved = settings.resolve({**explicit, "timeout_s": o.machine.timeout_s})
    return build(source.name(), side, side, resolved).spec


def _with_suites(config: Config, root: Path, machine: MachineGiven) -> Config:
    """``config`` with what its suites find in the working tree (discovered as ``duet compare``
    discovers a version: as the invoking user, without the CI's secrets), so that ``--bench``
    can name a suite's benchmark (``gb/BM_Sort``) and the A/A measures it as a comparison would:
    the adapter's command and sample, the suite's settings."""
    import os

    from duet_bench.adapters.expand import expand_config
    from duet_bench.isolation import RunAs

    expanded, _found = expand_config(
        config,
        baseline_dir=root,
        candidate_dir=root,
        run_as=RunAs.from_environment(machine.user, os.environ),
        keep_env=machine.keep_env,
    )
    return expanded


def _measure(spec: BenchmarkSpec, o: CalibrateOptions, out: Path) -> ResultsDocument:
    from duet_bench.commands.calibrate_designs import design_specs, measure_interleaved
    from duet_bench.session import measure, raise_if_broken

    options = o.machine.session(o.analysis, "calibrate", out)
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
    if compare:

        def on_block(n: int, total: int) -> None:
            if not o.machine.quiet:
                click.echo(f"duet: block {n + 1}/{total}", err=True)

        doc = measure_interleaved(
            design_specs(spec), replace(options, progress=False), on_block=on_block
        )
    else:
        doc = measure([spec], options)
    raise_if_broken(doc, o.machine.max_failures)
    return doc


def _records(doc: ResultsDocument) -> tuple[Any, Any]:
    """The A/A duet record and, when present, its sequential copy."""
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


def _config_target(source: AASource, bench: str | None) -> ConfigTarget | None:
    """The configuration file and the table the lines belong in: ``bench``'s ``[[benchmark]]``,
    the ``[[suite]]`` that found it (``suite name/benchmark``), or the suite defaults."""
    from duet_bench.config import find_config
    from duet_bench.report.calibration import ConfigTarget

    path = Path(source.config_path) if source.config_path else find_config(Path.cwd())
    if path is None:
        return None
    form = "pyproject" if path.name == "pyproject.toml" else "duet"
    if not bench:
        return ConfigTarget(path, form)
    from duet_bench.config import load_config

    config = load_config(path)
    if not any(b.name == bench for b in config.benchmarks):
        for index, suite in enumerate(config.suites):
            if bench == suite.name or bench.startswith(suite.name + "/"):
                return ConfigTarget(path, form, suite=suite.name, suite_index=index)
    return ConfigTarget(path, form, benchmark=config.select_one(bench).name)


def _until_decided_values(cal: Calibration) -> dict[str, int]:
    """min_runs and max_runs of measuring until decided, when the simulation reached its
    target (docs/calibration.md); nothing otherwise."""
    u = cal.until_decided
    if u is None or not u.reachable:
        return {}
    return {"min_runs": u.min_runs, "max_runs": u.max_runs}


def _write(cal: Calibration, target: ConfigTarget | None) -> str | None:
    from duet_bench.config import RECOMMENDATION_KEYS, WORD_RECOMMENDATIONS
    from duet_bench.config.writer import write_recommendation

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
    values: dict[str, int | str] = {
        k: (str(v) if k in WORD_RECOMMENDATIONS else int(v))
        for k, v in {**rec.values(), **_until_decided_values(cal)}.items()
        if k in RECOMMENDATION_KEYS
    }
    write_recommendation(
        target.path, benchmark=target.benchmark, values=values, suite=target.suite_index
    )
    if target.suite is not None:
        where = f"suite {target.suite!r}: every benchmark it finds"
    elif target.benchmark:
        where = f"benchmark {target.benchmark!r}"
    else:
        where = "the suite defaults"
    return f"{target.path} ({where})"
