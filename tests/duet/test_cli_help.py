"""Every command's --help: options in named groups, readable metavars, the exit codes; and the
messages of the options that a newcomer gets wrong (--confidence 99)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from duet_bench import defaults
from duet_bench.cli import main
from duet_bench.errors import EXIT_CODES

ROOT_CTX = click.Context(main, info_name="duet")
COMMANDS = main.list_commands(ROOT_CTX)
BASIC = Path(__file__).parents[1] / "fixtures" / "results-basic.json"


def _help(name: str) -> str:
    done = CliRunner().invoke(main, [name, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_in_a_named_group(name: str) -> None:
    text = _help(name)
    if "Other options:" not in text:  # a command whose only option is --help (duet schema)
        other = text.split("Options:")[1].split("Exit codes:")[0]
    else:
        other = text.split("Other options:")[1].split("Exit codes:")[0]
    assert re.findall(r"^\s+(-\S+)", other, re.M) == ["-h,"], other


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_says_its_exit_codes(name: str) -> None:
    epilog = _help(name).split("Exit codes:")[1]
    codes = re.findall(r"^  (\d+)\s", epilog, re.M)
    assert {"0", "2", "3"} <= set(codes), epilog


@pytest.mark.parametrize("name", COMMANDS)
def test_no_type_names_for_metavars(name: str) -> None:
    text = _help(name)
    for raw in ("FLOAT RANGE", "INTEGER RANGE", "DIRECTORY", " FLOAT", " INTEGER"):
        assert raw not in text, f"duet {name} --help shows {raw!r}"


def test_the_group_shows_the_shared_table() -> None:
    text = CliRunner().invoke(main, ["--help"]).output
    for code, meaning in EXIT_CODES.items():
        assert f"{code}" in text
        assert meaning.split(":")[0] in text


def test_runs_help_agrees_with_the_bound() -> None:
    text = " ".join(_help("run").split())
    assert f"{defaults.MIN_RUNS} to {defaults.INTERVAL_RUNS - 1} give a ratio" in text
    assert f"{defaults.MIN_RUNS}<=x<=" in text
    refused = CliRunner().invoke(
        main, ["run", "--runs", "1", "--baseline", "a", "--candidate", "b"]
    )
    assert refused.exit_code == 2
    assert "1 is not in the range" in refused.output


@pytest.mark.parametrize(("given", "meant"), [("99", "0.99"), ("95", "0.95"), ("99.9", "0.999")])
@pytest.mark.parametrize("command", ["run", "analyze", "compare"])
def test_a_percentage_confidence_gets_did_you_mean(command: str, given: str, meant: str) -> None:
    done = CliRunner().invoke(main, [command, "--confidence", given, "x"])
    assert done.exit_code == 2
    assert f"did you mean {meant}?" in done.output, done.output


def test_a_confidence_that_is_no_percentage_gets_the_range_only() -> None:
    done = CliRunner().invoke(main, ["analyze", "--confidence", "1000", "x"])
    assert done.exit_code == 2
    assert "did you mean" not in done.output


@pytest.mark.parametrize("name", ["run", "compare", "bisect", "calibrate", "merge", "analyze"])
def test_every_format_name_is_known_and_a_missing_one_says_where_it_is(name: str) -> None:
    from duet_bench.defaults import FORMATS

    assert f"--format [{'|'.join(FORMATS)}]" in _help(name)
    done = CliRunner().invoke(main, [name, "--format", "html", "x"])
    assert done.exit_code == 2
    assert f"duet {name} writes text" in done.output
    assert "not html; for html: duet report" in done.output


def test_report_out_is_a_directory_and_output_a_deprecated_file(tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["report", str(BASIC), "--format", "junit", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "junit.xml").read_text().startswith("<?xml")
    old = tmp_path / "old.md"
    done = runner.invoke(main, ["report", str(BASIC), "--format", "markdown", "-o", str(old)])
    assert done.exit_code == 0, done.output
    assert old.is_file()
    assert f"use --out {tmp_path} (it writes report.md there)" in done.output
    assert "--output" not in _help("report")


def test_bench_is_the_one_name_and_benchmark_a_hidden_alias() -> None:
    for name in ("compare", "bisect", "calibrate"):
        text = _help(name)
        assert "--bench PATTERN" in text
        assert "--benchmark" not in text
    done = CliRunner().invoke(main, ["calibrate", "--benchmark", "x", "--command", "true"])
    assert done.exit_code == 2
    assert "(got --bench, --command)" in done.output
