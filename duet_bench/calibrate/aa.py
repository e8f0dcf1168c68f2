"""The A/A of ``duet calibrate``, measured or read: its spec (:func:`bench_spec`,
:func:`command_spec`), measuring it (:func:`measure_aa`, the designs interleaved with
``--compare-designs``: :mod:`duet_bench.calibrate.interleave`), the calibration of its results
(:func:`calibrate_aa`), and writing the recommendation into the configuration
(:func:`config_target`, :func:`write_recommended`). The command
(:mod:`duet_bench.commands.calibrate`) wires these and prints the report
(:mod:`duet_bench.report.calibration`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from duet_bench import settings
from duet_bench.adapters.expand import expand_config
from duet_bench.analysis import AnalysisSettings, BenchmarkAnalysis, analyze_benchmark
from duet_bench.calibrate import AAData, Calibration, aa_data, calibrate_metrics
from duet_bench.calibrate.interleave import (
    design_records,
    design_specs,
    measure_interleaved,
    with_designs,
)
from duet_bench.calibrate.model import ConfigTarget
from duet_bench.config import Config, find_config, load_config
from duet_bench.config.model import RecommendedSettings
from duet_bench.config.writer import write_recommendation
from duet_bench.errors import BenchmarkFailed, ConfigError, ResultsError
from duet_bench.isolation import RunAs
from duet_bench.plan import BenchmarkSpec, SideSpec, build, for_suite
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.session import SessionOptions, measure, raise_if_broken

__all__ = [
    "CalibratedAA",
    "bench_spec",
    "calibrate_aa",
    "command_spec",
    "config_target",
    "measure_aa",
    "write_recommended",
]


@dataclass(frozen=True, slots=True)
class CalibratedAA:
    """The calibration of an A/A's results: the figures, the record they come from (the
    design the comparison recommends, with ``--compare-designs``), its data, and the analysis
    of the main record (what the report's interference line says)."""

    calibration: Calibration
    record: BenchmarkRecord
    data: AAData
    analysis: BenchmarkAnalysis


# --------------------------------------------------------------------------------------------
# What to measure, and measuring it


def bench_spec(
    bench: str,
    config_path: str | None,
    explicit: settings.Given,
    *,
    run_as: RunAs | None,
    keep_env: tuple[str, ...],
) -> BenchmarkSpec:
    """The A/A spec of the configuration's benchmark ``bench`` (a suite's benchmark, such as
    ``gb/BM_Sort``, found by discovering the suites in the working tree as ``duet compare``
    discovers a version: as ``run_as``, without the CI's secrets), through the one spec builder
    (:func:`duet_bench.plan.for_suite`) with the ``explicit`` settings; the baseline's side on
    both sides (the same directory, so the same version)."""
    config = load_config(Path(config_path) if config_path else None)
    root = config.path.resolve().parent
    if config.suites and not any(b.name == bench for b in config.benchmarks):
        config = _with_suites(config, root, run_as, keep_env)
    b = config.select_one(bench)  # a ConfigError naming the closest name
    (planned,) = [
        p
        for p in for_suite(
            config, baseline_dir=root, candidate_dir=root, select=b.name, explicit=explicit
        )
        if p.spec.name == b.name
    ]
    return replace(planned.spec, candidate=planned.spec.baseline)


def command_spec(name: str, side: SideSpec, explicit: settings.Given) -> BenchmarkSpec:
    """The A/A spec of a command or a python callable, ``side`` on both sides, with the
    ``explicit`` settings (:func:`duet_bench.plan.build`)."""
    return build(name, side, side, settings.resolve(explicit)).spec


def _with_suites(
    config: Config, root: Path, run_as: RunAs | None, keep_env: tuple[str, ...]
) -> Config:
    """``config`` with what its suites find in the working tree, so that the A/A measures a
    suite's benchmark as a comparison would: the adapter's command and sample, the suite's
    settings."""
    expanded, _found = expand_config(
        config, baseline_dir=root, candidate_dir=root, run_as=run_as, keep_env=keep_env
    )
    return expanded


def measure_aa(
    spec: BenchmarkSpec,
    options: SessionOptions,
    *,
    compare_designs: bool,
    max_failures: int | None,
    on_block: Callable[[int, int], None] | None = None,
) -> ResultsDocument:
    """Measure the A/A ``spec`` (with ``compare_designs``, once per design, interleaved in
    blocks: ``on_block(n, total)`` before each) into ``options.out``.

    Raises
    ------
    DuetError
        As :func:`duet_bench.session.measure`, and :func:`duet_bench.session.raise_if_broken`
        past ``max_failures``.
    """
    if compare_designs:
        doc = measure_interleaved(
            design_specs(spec),
            replace(options, machine=replace(options.machine, progress=False)),
            on_block=on_block,
        )
    else:
        doc = measure([spec], options)
    raise_if_broken(doc, max_failures)
    return doc


# --------------------------------------------------------------------------------------------
# The calibration


def calibrate_aa(doc: ResultsDocument, analysis: AnalysisSettings, out: Path) -> CalibratedAA:
    """The calibration of the A/A in ``doc`` (written to ``out``): on the metric that measures
    better and, when ``doc`` holds the designs, of the design the comparison recommends.

    Raises
    ------
    ResultsError
        ``doc`` holds no benchmark measured with the duet method.
    BenchmarkFailed
        Too few runs succeeded to calibrate (the failures are in ``out``).
    """
    main, sequential = _records(doc)
    analysed = analyze_benchmark(main, analysis)
    designs = design_records(doc, main)
    try:
        cal = calibrate_metrics(main, sequential, analysis, busy_share=analysed.busy_share)
        if len(designs) > 1:
            cal, main = with_designs(designs, cal, analysis, analysed.busy_share)
        data = aa_data(main, cal.metric)
    except ValueError as e:
        raise BenchmarkFailed(str(e), fix=f"the run failures are in {out}") from e
    return CalibratedAA(cal, main, data, analysed)


def _records(doc: ResultsDocument) -> tuple[BenchmarkRecord, BenchmarkRecord | None]:
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
        logging.getLogger(__name__).warning(
            "%s: the two sides ran different things (%s vs %s): this is not an A/A",
            main.name,
            main.versions.get("baseline"),
            main.versions.get("candidate"),
        )
    return main, seq


# --------------------------------------------------------------------------------------------
# The configuration


def config_target(config_path: str | None, bench: str | None) -> ConfigTarget | None:
    """The configuration file (``config_path``, else the one found from the working directory)
    and the table the lines belong in: ``bench``'s ``[[benchmark]]``, the ``[[suite]]`` that
    found it (``suite name/benchmark``), or the suite defaults."""
    path = Path(config_path) if config_path else find_config(Path.cwd())
    if path is None:
        return None
    form = "pyproject" if path.name == "pyproject.toml" else "duet"
    if not bench:
        return ConfigTarget(path, form)
    config = load_config(path)
    if not any(b.name == bench for b in config.benchmarks):
        for index, suite in enumerate(config.suites):
            if bench == suite.name or bench.startswith(suite.name + "/"):
                return ConfigTarget(path, form, suite=suite.name, suite_index=index)
    return ConfigTarget(path, form, benchmark=config.select_one(bench).name)


def _with_until_decided(
    cal: Calibration, recommendation: RecommendedSettings
) -> RecommendedSettings:
    """``recommendation`` with min_runs and max_runs of measuring until decided, when the
    simulation reached its target (docs/calibration.md); as it is otherwise."""
    u = cal.until_decided
    if u is None or not u.reachable:
        return recommendation
    return replace(recommendation, min_runs=u.min_runs, max_runs=u.max_runs)


def write_recommended(cal: Calibration, target: ConfigTarget | None) -> str:
    """Write the recommendation of ``cal`` into ``target`` (comments kept); what was written
    where, for the report.

    Raises
    ------
    ConfigError
        No recommendation (too little data), or no configuration file to write.
    """
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
    recommendation = _with_until_decided(cal, rec.recommendation())
    write_recommendation(
        target.path,
        benchmark=target.benchmark,
        values=recommendation.to_toml(),
        suite=target.suite_index,
    )
    if target.suite is not None:
        where = f"suite {target.suite!r}: every benchmark it finds"
    elif target.benchmark:
        where = f"benchmark {target.benchmark!r}"
    else:
        where = "the suite defaults"
    return f"{target.path} ({where})"
