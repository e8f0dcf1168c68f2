"""Every command's --help: options in named groups, readable metavars, the exit codes; and the
messages of the options that a newcomer gets wrong (--confidence 99)."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from duet_bench import settings
from duet_bench.cli import main
from duet_bench.errors import EXIT_CODES

ROOT_CTX = click.Context(main, info_name="duet")
COMMANDS = main.list_commands(ROOT_CTX)


def _help(name: str) -> str:
    done = CliRunner().invoke(main, [name, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_in_a_named_group(name: str) -> None:
    text = _help(name)
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
    assert f"{settings.MIN_RUNS} to {settings.INTERVAL_RUNS - 1} give a ratio" in text
    assert f"{settings.MIN_RUNS}<=x<=" in text
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
