"""The options of each command, typed once at the CLI boundary (duet_bench/options/): built
from click's own parsing of real command lines, not from hand-made dictionaries."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from duet_bench import defaults
from duet_bench.errors import UsageError
from duet_bench.options.common import OutGiven
from duet_bench.options.measuring import RunOptions
from duet_bench.options.reading import AnalyzeOptions, ReportOptions


def _context(command: click.Command, args: list[str]) -> click.Context:
    return command.make_context(command.name or "duet", args)


def test_run_options_are_typed_from_the_command_line() -> None:
    from duet_bench.commands.run import run

    ctx = _context(
        run,
        ["--baseline", "./old", "--candidate", "./new", "--runs", "12", "--confidence", "0.9"],
    )
    o = RunOptions.from_click(ctx)
    assert o.name == "./old vs ./new"
    assert o.plan.runs == 12
    assert o.analysis.confidence == 0.9
    assert o.analysis.explicit == {"confidence"}
    assert o.analysis.settings().confidence == 0.9
    assert o.analysis.settings().metric == "auto"
    settings = o.settings()
    assert settings.values.timeout_s == defaults.DEFAULT_TIMEOUT_S
    assert set(defaults.ANALYSIS_KEYS) <= settings.names
    assert o.sides.side("candidate").command == "./new"
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to measure"),
        (["--callable", "m:f"], "needs --python-baseline"),
        (
            [
                "--python-baseline",
                "p",
                "--python-candidate",
                "p",
                "--callable",
                "m:f",
                "--baseline",
                "x",
            ],
            "not both",
        ),
    ],
)
def test_run_refuses_what_it_cannot_measure_once_at_the_boundary(
    args: list[str], message: str
) -> None:
    from duet_bench.commands.run import run

    with pytest.raises(UsageError, match=message):
        RunOptions.from_click(_context(run, args))


def test_a_python_benchmark_is_named_by_its_callable() -> None:
    from duet_bench.commands.run import run

    args = ["--python-baseline", "a/python", "--python-candidate", "b/python"]
    o = RunOptions.from_click(_context(run, [*args, "--callable", "m:f"]))
    assert o.name == "m:f"
    assert o.sides.side("baseline").interpreter == "a/python"


def test_analyze_and_report_carry_only_the_analysis_options_given() -> None:
    from duet_bench.commands.analyze import analyze
    from duet_bench.commands.report import report

    a = AnalyzeOptions.from_click(_context(analyze, ["r.json", "--metric", "cpu"]))
    assert (a.results, a.fmt, a.analysis.explicit) == ("r.json", "text", {"metric"})
    r = ReportOptions.from_click(_context(report, ["r.json", "--format", "markdown"]))
    assert (r.fmt, r.out, r.analysis.explicit) == ("markdown", None, frozenset())


def test_compare_and_bisect_build_the_library_options_once() -> None:
    from duet_bench.commands.bisect import bisect
    from duet_bench.commands.compare import compare
    from duet_bench.options.measuring import BisectCommandOptions, CompareCommandOptions

    c = CompareCommandOptions.from_click(
        _context(compare, ["main", "--runs", "7", "--metric", "cpu", "--shard", "1/2", "-q"])
    )
    assert (c.comparison.base, c.comparison.head, c.comparison.shard) == ("main", "HEAD", (1, 2))
    # Given on the command line, plus reps and seed always (the results say which were used).
    assert c.comparison.explicit.names == {"runs", "metric", "reps", "seed"}
    assert c.comparison.machine.progress is False
    assert (c.fmt, c.fail_on, c.allow_missing) == ("text", "regression", False)
    b = BisectCommandOptions.from_click(_context(bisect, ["v1", "--threshold", "0.05"]))
    assert b.search.given.record() == {
        "reps": defaults.DEFAULT_REPS,
        "seed": defaults.DEFAULT_SEED,
        "threshold": 0.05,
    }
    # bisect's --max-runs is its search's: no stopping setting is given to a step.
    stepped = BisectCommandOptions.from_click(_context(bisect, ["v1", "--max-runs", "30"]))
    assert stepped.search.max_runs == 30
    assert not stepped.search.given.names & set(defaults.STOPPING_KEYS)


def test_calibrate_options_are_typed_from_the_command_line() -> None:
    from duet_bench.commands.calibrate import calibrate
    from duet_bench.options.calibrate import CalibrateOptions

    o = CalibrateOptions.from_click(
        _context(calibrate, ["--command", "sleep  0.01", "--timeout", "5", "--metric", "cpu"])
    )
    assert (o.runs, o.iterations, o.warmup) == (20, 30, 0)
    assert (o.analysis.metric, o.analysis.threshold) == ("cpu", defaults.DEFAULT_THRESHOLD)
    assert o.source.name() == "sleep 0.01"
    assert o.source.side().kind == "command"
    # Runs, iterations and warm-up always (a calibration's own); timeout and crossover as given.
    assert o.settings().record() == {
        "runs": 20,
        "iterations": 30,
        "warmup": 0,
        "timeout_s": 5,
        "method": "duet",
    }
    crossed = CalibrateOptions.from_click(
        _context(calibrate, ["--python", "py", "--callable", "m:f", "--crossover", "run"])
    )
    assert crossed.settings().record()["crossover"] == "run"
    assert "timeout_s" not in crossed.settings().names
    assert (crossed.source.name(), crossed.source.side().interpreter) == ("m:f", "py")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.runs = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], r"give exactly one of --bench NAME.*earlier A/A\)\n"),
        (["--bench", "b", "--command", "c"], r"\(got --bench, --command\)"),
        (["--results", "r.json", "--command", "c"], "cannot be combined with --command"),
        (["--python", "py"], "--python needs --callable"),
        (["--command", "c", "--callable", "m:f"], "--callable needs --python"),
        (["--command", "c", "--threshold", "0"], "--threshold must be above 0"),
    ],
)
def test_calibrate_refuses_what_it_cannot_measure_once_at_the_boundary(
    args: list[str], message: str
) -> None:
    from duet_bench.commands.calibrate import calibrate
    from duet_bench.options.calibrate import CalibrateOptions

    with pytest.raises(UsageError, match=message):
        CalibrateOptions.from_click(_context(calibrate, args))


def test_the_machine_options_are_built_once_and_held_whole() -> None:
    from pathlib import Path

    from duet_bench.commands.run import run

    ctx = _context(
        run,
        [
            "--baseline",
            "a",
            "--candidate",
            "b",
            "--cores",
            "0,1",
            "--wait",
            "-q",
            "--plan-seed",
            "7",
        ],
    )
    o = RunOptions.from_click(ctx)
    machine = o.machine.options
    assert (machine.cores, machine.wait, machine.progress, machine.plan_seed) == (
        (0, 1),
        True,
        False,
        7,
    )
    assert o.machine.quiet
    session = o.machine.session(o.analysis.settings(), "run", Path("r.json"))
    # The session holds the one record; what it reads of it is the record's.
    assert session.machine is machine
    assert (session.cores, session.wait, session.progress, session.seed) == ((0, 1), True, False, 7)
    assert session.config["command"] == "run"
    # A later round of bisect moves the plan seed, and only it.
    from duet_bench.session import session_options

    later = session_options(
        Path("r.json"),
        machine,
        isolation="auto",
        max_failures=None,
        analysis=session.analysis,
        config={},
        seed_offset=2,
    )
    assert (later.seed, later.machine.cores, machine.plan_seed) == (9, (0, 1), 7)


FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def test_run_out_is_resolved_where_the_options_are_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out DIR`` is results.json and the reports' directory; ``--continue`` without
    ``--out`` writes where it continues, here the deprecated file form: that file alone, after
    a warning naming the directory form."""
    from duet_bench.commands.run import run

    sides = ["--baseline", "./old", "--candidate", "./new"]
    o = RunOptions.from_click(_context(run, [*sides, "--out", str(tmp_path)]))
    assert o.out == OutGiven(results=tmp_path / "results.json", reports_dir=tmp_path)
    o = RunOptions.from_click(_context(run, [*sides, "--continue", str(FIXTURE)]))
    assert o.out == OutGiven(results=FIXTURE, reports_dir=None)
    assert f"--out {FIXTURE}: a results file for --out is deprecated" in capsys.readouterr().err


def test_continuing_a_file_without_the_benchmark_names_those_it_holds(tmp_path: Path) -> None:
    """``duet run --continue`` of a measurement of other benchmarks is refused before anything
    is measured, with the names it holds."""
    from duet_bench import settings
    from duet_bench.commands.run import run
    from duet_bench.plan import build
    from duet_bench.session import continuing

    args = ["--baseline", "./old", "--candidate", "./new", "--out", str(tmp_path)]
    o = RunOptions.from_click(_context(run, [*args, "--continue", str(FIXTURE)]))
    baseline, candidate = o.sides.side("baseline"), o.sides.side("candidate")
    planned = build(o.name, baseline, candidate, settings.resolve(o.settings()))
    options = o.machine.session(planned.analysis, "run", o.out.results)
    with pytest.raises(UsageError, match=r"holds no benchmark './old vs ./new' \(it holds 'parse"):
        continuing(options, str(FIXTURE), planned.spec)
