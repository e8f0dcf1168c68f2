"""duet_bench.settings: precedence with origins, the one spec builder, the runs rule, and the
settings recorded with the results and used again by analyze and report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from duet_bench import defaults, results, settings
from duet_bench.analysis import AnalysisSettings, analyze_benchmark
from duet_bench.analysis.stopping import UntilDecided
from duet_bench.cli import main
from duet_bench.config import DEFAULT_PYTHON
from duet_bench.errors import ResultsError, UsageError
from duet_bench.plan import SideSpec, build, for_suite
from tests.duet.test_config import BENCHMARKS, SUITE, load

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "results-basic.json"


def test_precedence_option_then_benchmark_then_suite_then_default() -> None:
    c = load(SUITE + BENCHMARKS)
    startup, parse, kernel = c.benchmarks
    r = settings.resolve(config=c, benchmark=startup)
    assert [getattr(r.values, k) for k in ("runs", "iterations", "warmup", "timeout_s")] == [
        12,
        40,
        3,
        30.0,
    ]
    assert [
        getattr(r.values, k) for k in ("memory_limit_bytes", "threshold", "confidence", "method")
    ] == [
        512 << 20,
        0.01,
        0.95,
        "sequential",
    ]
    assert (r.values.max_failures, r.values.isolation) == (1, "affinity")
    r = settings.resolve(config=c, benchmark=parse)
    assert [
        getattr(r.values, k) for k in ("runs", "iterations", "timeout_s", "memory_limit_bytes")
    ] == [
        20,
        40,
        5.5,
        1 << 20,
    ]
    r = settings.resolve(config=c, benchmark=kernel)
    assert [
        getattr(r.values, k) for k in ("iterations", "warmup", "threshold", "confidence", "method")
    ] == [
        7,
        0,
        0.05,
        0.9,
        "duet",
    ]
    # Options given on the command line win over both.
    r = settings.resolve(
        settings.Given.of(runs=30, timeout_s=1.0, method="duet", max_failures=0),
        config=c,
        benchmark=parse,
    )
    assert [getattr(r.values, k) for k in ("runs", "timeout_s", "method", "max_failures")] == [
        30,
        1.0,
        "duet",
        0,
    ]
    assert r.values.iterations == 40
    # A present option wins even when it is None: --memory-limit none lifts the limit.
    assert (
        settings.resolve(
            settings.Given.of(memory_limit_bytes=None), config=c, benchmark=parse
        ).values.memory_limit_bytes
        is None
    )
    # So does --pids-limit none; a benchmark's pids_limit = "none" lifts the suite's 8192, a
    # benchmark without the key keeps it.
    assert (
        settings.resolve(
            settings.Given.of(pids_max=None), config=c, benchmark=startup
        ).values.pids_max
        is None
    )
    assert [settings.resolve(config=c, benchmark=b).values.pids_max for b in c.benchmarks] == [
        8192,
        None,
        64,
    ]
    assert (
        settings.resolve(settings.Given.of(pids_max=300), config=c, benchmark=parse).values.pids_max
        == 300
    )
    assert settings.resolve().values.pids_max == defaults.DEFAULT_PIDS_MAX == 4096
    # For the others None cannot be a value: it means "not given".
    assert settings.resolve(
        settings.Given.of(runs=None), config=c, benchmark=parse
    ) == settings.resolve(config=c, benchmark=parse)
    with pytest.raises(ValueError, match="unknown setting"):
        settings.resolve(settings.Given.of(timeout=3))


def test_every_value_says_where_it_came_from() -> None:
    c = load("runs = 7\n" + BENCHMARKS)
    parse = c.benchmark("parse")
    r = settings.resolve(
        settings.Given.of(warmup=4, memory_limit_bytes=None), config=c, benchmark=parse
    )
    assert r.origins["warmup"] == "--warmup"
    assert r.origins["memory_limit_bytes"] == "--memory-limit"
    # A benchmark's pids_limit = "none" is its own value, not the suite's.
    assert r.origins["pids_max"] == "duet.toml: benchmark 'parse', pids_limit"
    assert settings.resolve(config=c, benchmark=c.benchmark("startup")).origins["pids_max"] == (
        "the built-in default"
    )
    lifted = settings.resolve(settings.Given.of(pids_max=None), config=c, benchmark=parse)
    assert lifted.origins["pids_max"] == "--pids-limit"
    assert r.origins["runs"] == "duet.toml: benchmark 'parse', runs"
    assert r.origins["timeout_s"] == "duet.toml: benchmark 'parse', timeout"
    assert settings.resolve(config=c, benchmark=c.benchmark("startup")).origins["runs"] == (
        "duet.toml: runs"
    )
    assert r.origins["iterations"] == "the built-in default"
    assert r.values.iterations == defaults.DEFAULT_ITERATIONS
    # The suite's "none" is the file's too.
    c = load('pids_limit = "none"\n' + BENCHMARKS)
    r = settings.resolve(config=c, benchmark=c.benchmark("startup"))
    assert (r.values.pids_max, r.origins["pids_max"]) == (None, "duet.toml: pids_limit")
    r = settings.resolve(config=c, benchmark=c.benchmark("kernel"))
    assert (r.values.pids_max, r.origins["pids_max"]) == (
        64,
        "duet.toml: benchmark 'kernel', pids_limit",
    )


def test_the_built_in_defaults_are_the_ones_of_every_record() -> None:
    # One home: the records take their defaults from duet_bench.settings, and so do the options.
    from duet_bench.config import Defaults
    from duet_bench.plan import BenchmarkSpec

    side = SideSpec(kind="command", command="true")
    # Nothing given: the default design, measured until decided (docs/statistics.md, 2b).
    default = UntilDecided(
        min_runs=defaults.DEFAULT_MIN_RUNS,
        max_runs=defaults.DEFAULT_MAX_RUNS,
        budget_s=defaults.DEFAULT_BUDGET_S,
    )
    spec = BenchmarkSpec(
        name="a", baseline=side, candidate=side, runs=default.max_runs, until_decided=default
    )
    built = build("a", side, side, settings.resolve())
    assert built.spec == spec
    assert built.analysis == AnalysisSettings()
    d = Defaults()
    assert {k: getattr(d, k) for k in settings.BUILTIN if hasattr(d, k)} == {
        k: v for k, v in settings.BUILTIN.items() if hasattr(d, k)
    }
    # The options of duet run and duet compare default to the same values.
    from duet_bench.commands.compare import compare
    from duet_bench.commands.run import run

    for command in (run, compare):
        given = {p.name: p.default for p in command.params}
        for name, value in settings.BUILTIN.items():
            if value is not None:  # no default: click's own marker
                assert given[defaults.FILE_KEYS.get(name, name)] == value, (command.name, name)


def test_a_config_built_in_code_is_resolved_like_a_file() -> None:
    from duet_bench.config import BenchmarkConfig, Config, Defaults

    b = BenchmarkConfig(name="a", kind="command", command="true")
    c = Config(
        path=Path("suite.toml"),
        defaults=Defaults(runs=5, threshold=0.1),
        build=None,
        python=None,
        benchmarks=(b,),
        raw={},
    )
    r = settings.resolve(config=c, benchmark=b)
    assert (r.values.runs, r.values.threshold, r.values.iterations) == (
        5,
        0.1,
        defaults.DEFAULT_ITERATIONS,
    )
    assert r.origins["runs"] == "suite.toml: runs"
    assert r.origins["iterations"] == "the built-in default"


def test_the_runs_rule_names_where_the_value_came_from() -> None:
    side = SideSpec(kind="command", command="true")
    with pytest.raises(UsageError) as info:
        build("a", side, side, settings.resolve(settings.Given.of(runs=1)))
    assert info.value.message == (
        "a: runs must be at least 2, got 1 (5 or more give an interval) (from --runs)"
    )
    # A value from the file is refused when the file is read, with its line.
    with pytest.raises(Exception, match=r"duet\.toml:1: runs must be at least 2, got 1"):
        load("runs = 1\n" + BENCHMARKS)


def test_for_suite_resolves_each_kind_in_each_version_directory(tmp_path: Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    c = load(SUITE + BENCHMARKS)
    planned = for_suite(c, baseline_dir=base, candidate_dir=head)
    specs = [p.spec for p in planned]
    assert [s.name for s in specs] == ["startup", "parse", "kernel"]
    startup, parse, kernel = specs
    for spec in specs:
        assert spec.baseline.cwd == str(base.resolve())
        assert spec.candidate.cwd == str(head.resolve())
    assert startup.kind == "command"
    assert startup.baseline.command == startup.candidate.command == "./app --version"
    assert parse.kind == "python"
    assert parse.baseline.interpreter == str(base.resolve() / "env/bin/python3")
    assert parse.candidate.interpreter == str(head.resolve() / "env/bin/python3")
    assert parse.baseline.sys_path == (str(base.resolve()),)
    assert parse.candidate.sys_path == (str(head.resolve()),)
    assert (parse.candidate.callable, parse.candidate.setup) == (
        "pkg.bench:parse",
        "pkg.bench:make_input",
    )
    assert dict(parse.baseline.env) == {"LC_ALL": "C"}
    assert kernel.kind == "native"
    assert kernel.candidate.command == "./build/kernel --size 4"
    # Settings: the merged values, the spec's and the analysis'.
    assert (startup.runs, startup.iterations, startup.warmup) == (12, 40, 3)
    assert (startup.timeout_s, startup.memory_limit_bytes, startup.method) == (
        30.0,
        512 << 20,
        "sequential",
    )
    assert (parse.runs, parse.timeout_s, parse.memory_limit_bytes) == (20, 5.5, 1 << 20)
    assert (startup.pids_max, parse.pids_max, kernel.pids_max) == (8192, None, 64)
    assert (startup.recorded().pids_max, parse.recorded().pids_max) == (8192, None)
    assert (kernel.iterations, kernel.warmup, kernel.method) == (7, 0, "duet")
    assert (planned[0].analysis.threshold, planned[0].analysis.confidence) == (0.01, 0.95)
    assert (planned[2].analysis.threshold, planned[2].analysis.confidence) == (0.05, 0.9)


def test_for_suite_relative_dirs_become_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    c = load('[[benchmark]]\nname = "p"\npython = "m:f"\n')
    (p,) = for_suite(c, baseline_dir=Path("a"), candidate_dir=Path("b"))
    assert p.spec.baseline.interpreter == str(tmp_path / "a" / DEFAULT_PYTHON)
    assert p.spec.candidate.cwd == str(tmp_path / "b")
    # An absolute interpreter is used as is by both versions.
    c = load('python = "/usr/bin/python3"\n[[benchmark]]\nname = "p"\npython = "m:f"\n')
    (p,) = for_suite(c, baseline_dir=Path("a"), candidate_dir=Path("b"))
    assert p.spec.baseline.interpreter == p.spec.candidate.interpreter == "/usr/bin/python3"


def test_for_suite_applies_options_and_selection(tmp_path: Path) -> None:
    c = load(SUITE + BENCHMARKS)
    planned = for_suite(
        c,
        baseline_dir=tmp_path,
        candidate_dir=tmp_path,
        select="p*",
        explicit=settings.Given.of(
            runs=4, warmup=1, memory_limit_bytes=None, pids_max=1000, threshold=0.3
        ),
    )
    assert [
        (
            p.spec.name,
            p.spec.runs,
            p.spec.warmup,
            p.spec.memory_limit_bytes,
            p.spec.pids_max,
            p.analysis.threshold,
        )
        for p in planned
    ] == [("parse", 4, 1, None, 1000, 0.3)]


# --------------------------------------------------------------------------------------------
# Recorded with the results, used again


def _record_with(analysis: AnalysisSettings) -> results.BenchmarkRecord:
    b = results.load(FIXTURE).benchmarks[0]
    return replace(
        b,
        settings=replace(b.settings, analysis=analysis.to_record()),
        analysis=analyze_benchmark(b, analysis).to_block(),
    )


def test_for_record_uses_the_recorded_settings_unless_given() -> None:
    recorded = AnalysisSettings(threshold=0.5, confidence=0.9, reps=500, metric="wall")
    b = _record_with(recorded)
    assert AnalysisSettings.from_record(b) == recorded
    assert AnalysisSettings.from_record(b, AnalysisSettings(reps=2000), {"reps"}) == replace(
        recorded, reps=2000
    )
    assert (
        AnalysisSettings.from_record(b, AnalysisSettings(threshold=0.01), {"threshold"}).threshold
        == 0.01
    )
    # A file written before the settings were recorded: the metric its analysis asked for.
    old = replace(b, settings=results.RecordedPlan())
    assert AnalysisSettings.from_record(old) == AnalysisSettings(metric="wall")
    # A file edited by hand into nonsense is refused with the way out: a value out of range
    # when analysed, a value of the wrong type when read.
    broken = replace(
        b, settings=results.RecordedPlan(analysis=replace(recorded.to_record(), threshold=-1))
    )
    with pytest.raises(ResultsError, match=r"settings\.analysis\) are not valid: threshold"):
        AnalysisSettings.from_record(broken)
    unknown = replace(
        b, settings=results.RecordedPlan(analysis=replace(recorded.to_record(), interval="x"))
    )
    with pytest.raises(ResultsError, match=r"settings\.analysis\) are not valid: interval"):
        AnalysisSettings.from_record(unknown)
    data = results.to_dict(results.ResultsDocument(benchmarks=(b,)))
    data["benchmarks"][0]["settings"]["analysis"]["threshold"] = "x"
    with pytest.raises(
        ResultsError, match=r"settings\.analysis\.threshold: expected a finite number"
    ):
        results.from_dict(data)


def test_analyze_and_report_keep_a_recorded_threshold(tmp_path: Path) -> None:
    """The bug of issue 14: analyze and report --reps re-analysed with the defaults."""
    b = _record_with(AnalysisSettings(threshold=10.0, reps=500))
    assert b.analysis is not None
    assert b.analysis.verdict == "no change"
    doc = results.load(FIXTURE)
    doc = replace(doc, benchmarks=(b,))
    path = tmp_path / "r.json"
    results.save(doc, path)
    done = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    assert done.exit_code == 0, done.output
    analysis = json.loads(done.output)["benchmarks"][0]["analysis"]
    assert (analysis["threshold"], analysis["reps"], analysis["verdict"]) == (
        10.0,
        500,
        "no change",
    )
    done = CliRunner().invoke(main, ["report", str(path), "--format", "json", "--reps", "200"])
    assert done.exit_code == 0, done.output
    analysis = json.loads(done.output)["benchmarks"][0]["analysis"]
    assert (analysis["threshold"], analysis["reps"]) == (10.0, 200)
    done = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--threshold", "0"])
    assert json.loads(done.output)["benchmarks"][0]["analysis"]["threshold"] == 0.0


def test_without_a_configuration_only_options_and_defaults_count() -> None:
    r = settings.resolve(settings.Given.of(threshold=0.1))
    assert r.values.analysis() == AnalysisSettings(threshold=0.1)
    assert set(r.origins.values()) == {"--threshold", "the built-in default"}


def test_the_settings_given_are_typed_and_recorded_in_the_order_of_builtin() -> None:
    given = settings.Given.of(threshold=0.1, runs=12)
    assert given.names == {"threshold", "runs"}
    assert (given.values.runs, given.values.threshold) == (12, 0.1)
    # Not given: the built-in default, and no choice.
    assert given.values.iterations == defaults.DEFAULT_ITERATIONS
    assert list(given.record()) == ["runs", "threshold"]
    more = given.adding(timeout_s=5.0)
    assert more.record() == {"runs": 12, "timeout_s": 5.0, "threshold": 0.1}
    assert given.names == {"threshold", "runs"}  # frozen: adding makes another
    r = settings.resolve(more)
    assert (r.values.timeout_s, r.origins["timeout_s"]) == (5.0, "--timeout")
    assert r.origins["iterations"] == "the built-in default"
    assert r.values.analysis() == AnalysisSettings(threshold=0.1)
    with pytest.raises(ValueError, match="unknown setting"):
        settings.Given(names=frozenset({"timeout"}))
