"""duet_bench.config: both file forms, finding the file, validation messages (the in-place editor of
``calibrate --write``: test_config_writer.py; precedence and specs: test_settings.py).

Real files in tmp_path throughout.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duet_bench import config as config_mod
from duet_bench.config import (
    CONFIG_FILES,
    DEFAULT_PYTHON,
    BenchmarkConfig,
    Config,
    Defaults,
    find_config,
    load_config,
)
from duet_bench.defaults import DEFAULT_PIDS_MAX, UNSET
from duet_bench.errors import ConfigError
from duet_bench.plan import for_suite

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
# suite settings
runs = 12
iterations = 40
warmup = 3
confidence = 0.95
threshold = 0.01
isolation = "affinity"
memory_limit = "512M"
pids_limit = 8192
timeout = 30
method = "sequential"
max_failures = 1
build = "make"
python = "env/bin/python3"
"""

BENCHMARKS = """\
[[benchmark]]
name = "startup"
command = "./app --version"

[[benchmark]]
name = "parse"
python = "pkg.bench:parse"
setup = "pkg.bench:make_input"
runs = 20
timeout = 5.5
memory_limit = 1048576
pids_limit = "none"
env = { LC_ALL = "C" }

[[benchmark]]
name = "kernel"
native = "./build/kernel --size 4"
threshold = 0.05
confidence = 0.9
method = "duet"
iterations = 7
warmup = 0
pids_limit = 64
"""


def as_pyproject(duet_toml: str) -> str:
    """The same configuration as a pyproject.toml with another tool's tables around it."""
    text = duet_toml.replace("[[benchmark]]", "[[tool.duet.benchmark]]")
    return '[project]\nname = "x"\n\n[tool.duet]\n' + text + "\n[tool.ruff]\nline-length = 100\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def refused(text: str, name: str = "duet.toml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(Path(name), text=text)
    return info.value


# --------------------------------------------------------------------------------------------
# Loading both forms


@pytest.mark.parametrize("form", ["duet.toml", "pyproject.toml"])
def test_both_forms_load_the_same_configuration(tmp_path: Path, form: str) -> None:
    text = SUITE + "\n" + BENCHMARKS
    path = write(tmp_path / form, text if form == "duet.toml" else as_pyproject(text))
    c = load_config(path)
    assert c.path == path
    assert c.defaults == Defaults(
        runs=12,
        iterations=40,
        warmup=3,
        confidence=0.95,
        threshold=0.01,
        isolation="affinity",
        memory_limit_bytes=512 << 20,
        pids_max=8192,
        timeout_s=30.0,
        method="sequential",
        max_failures=1,
    )
    assert isinstance(c.defaults.timeout_s, float)
    assert c.build == "make"
    assert c.python == "env/bin/python3"
    assert [b.name for b in c.benchmarks] == ["startup", "parse", "kernel"]
    startup, parse, kernel = c.benchmarks
    assert startup == BenchmarkConfig(name="startup", kind="command", command="./app --version")
    assert startup.pids_max is UNSET  # the suite's applies
    assert parse == BenchmarkConfig(
        name="parse",
        kind="python",
        callable="pkg.bench:parse",
        setup="pkg.bench:make_input",
        runs=20,
        timeout_s=5.5,
        memory_limit_bytes=1 << 20,
        pids_max=None,  # "none": no limit
        env={"LC_ALL": "C"},
    )
    assert kernel.kind == "native"
    assert kernel.command == "./build/kernel --size 4"
    assert (kernel.threshold, kernel.confidence, kernel.method) == (0.05, 0.9, "duet")
    assert (kernel.iterations, kernel.warmup, kernel.pids_max) == (7, 0, 64)
    # raw is the duet table itself, JSON-ready, for the results file.
    assert json.loads(json.dumps(c.raw)) == tomllib.loads(SUITE + BENCHMARKS)
    assert "project" not in c.raw


def test_defaults_when_keys_are_absent() -> None:
    c = load_config(Path("duet.toml"), text='[[benchmark]]\nname = "a"\ncommand = "true"\n')
    assert c.defaults == Defaults()
    assert c.defaults.runs == 10
    assert c.build is None
    assert c.python is None  # no python benchmark: no interpreter to name
    assert c.benchmarks[0].env == {}
    assert (c.defaults.pids_max, c.benchmarks[0].pids_max) == (DEFAULT_PIDS_MAX, UNSET)


def test_pids_limit_none_lifts_the_limit_in_either_table() -> None:
    # "none" is a value here (no limit), where a table without the key leaves it UNSET.
    c = load_config(Path("duet.toml"), text='pids_limit = "none"\n' + BENCH)
    assert (c.defaults.pids_max, c.benchmarks[0].pids_max) == (None, UNSET)
    assert "pids_max" in c.given
    c = load_config(Path("duet.toml"), text="pids_limit = 100\n" + BENCH + "pids_limit = 'None'\n")
    assert (c.defaults.pids_max, c.benchmarks[0].pids_max) == (100, None)
    # Built in code, a record is held to the file's rules.
    with pytest.raises(ValueError, match="pids_max must be at least 16"):
        BenchmarkConfig(name="a", kind="command", command="x", pids_max=4)
    with pytest.raises(ValueError, match="pids_max must be at most 4,194,304"):
        Defaults(pids_max=1 << 23)


def test_python_interpreter_defaults_only_with_a_python_benchmark() -> None:
    c = load_config(Path("duet.toml"), text='[[benchmark]]\nname = "a"\npython = "m:f"\n')
    assert c.python == DEFAULT_PYTHON == ".venv/bin/python"
    c = load_config(
        Path("duet.toml"), text='python = "py/bin/python"\n[[benchmark]]\nname = "a"\ncommand = "x"'
    )
    assert c.python == "py/bin/python"


def test_text_parsing_names_the_given_path(tmp_path: Path) -> None:
    text = as_pyproject('[[benchmark]]\nname = "a"\ncommand = "x"\n')
    c = load_config(Path("sub/pyproject.toml"), text=text)
    assert c.path == Path("sub/pyproject.toml")
    assert c.benchmarks[0].name == "a"
    # Only the name decides the form: nothing is read from disk.
    assert not (tmp_path / "sub").exists()
    e = refused("runs = 1\n", name="ci/duet-ci.toml")
    assert str(e).startswith("ci/duet-ci.toml:1: runs")
    # Without a path the text is named duet.toml.
    with pytest.raises(ConfigError, match=r"^duet\.toml:1: runs"):
        load_config(text="runs = 1\n")


def test_other_file_names_are_read_at_top_level(tmp_path: Path) -> None:
    path = write(tmp_path / "bench.toml", 'runs = 7\n[[benchmark]]\nname = "a"\ncommand = "x"\n')
    assert load_config(path).defaults.runs == 7


# --------------------------------------------------------------------------------------------
# Finding the file


def test_find_config_walks_up_to_the_nearest_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_config(deep) is None
    write(tmp_path / "duet.toml", "")
    assert find_config(deep) == tmp_path / "duet.toml"
    # A pyproject.toml without [tool.duet] on the way is not a configuration.
    write(tmp_path / "a" / "pyproject.toml", '[project]\nname = "x"\n')
    assert find_config(deep) == tmp_path / "duet.toml"
    # One with [tool.duet] is, and the nearer directory wins over duet.toml further up.
    write(tmp_path / "a" / "b" / "pyproject.toml", "[tool.duet]\nruns = 3\n")
    assert find_config(deep) == tmp_path / "a" / "b" / "pyproject.toml"
    # In one directory duet.toml comes first.
    write(tmp_path / "a" / "b" / "duet.toml", "")
    assert find_config(deep) == tmp_path / "a" / "b" / "duet.toml"
    # A file as start means its directory.
    assert find_config(deep / "x.py") == tmp_path / "a" / "b" / "duet.toml"


def test_choose_config_is_the_one_rule_on_disk_and_at_a_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # What duet compare reads at a commit: name -> text, None when the commit has no such file.
    inline = (
        '[project]\nname = "x"\n[tool]\nduet = { benchmark = [{ name = "a", command = "x" }] }\n'
    )
    files = {"pyproject.toml": inline}
    assert config_mod.choose_config(files.get) == ("pyproject.toml", inline)
    # The inline form is a [tool.duet] table too: found on disk as at a commit (the text
    # search duet compare did before refused it).
    (tmp_path / ".git").mkdir()
    write(tmp_path / "pyproject.toml", inline)
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    # Mentioning the table in a comment does not make one.
    files["pyproject.toml"] = '[project]\nname = "x"\n# see [tool.duet] later\n'
    assert config_mod.choose_config(files.get) is None
    # duet.toml comes first; the other is named in a warning.
    files = {"duet.toml": "runs = 3\n", "pyproject.toml": inline}
    with caplog.at_level("WARNING", logger="duet_bench.config"):
        assert config_mod.choose_config(files.get) == ("duet.toml", "runs = 3\n")
    assert "[tool.duet] in pyproject.toml is ignored" in caplog.text


def test_find_config_stops_at_the_git_root(tmp_path: Path) -> None:
    write(tmp_path / "duet.toml", "")  # above the checkout: not this project's
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: elsewhere\n")  # a worktree has a .git file
    assert find_config(repo / "src") is None
    write(repo / "duet.toml", "")
    assert find_config(repo / "src") == repo / "duet.toml"


def test_find_config_claims_a_broken_pyproject_that_mentions_tool_duet(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "pyproject.toml", "[tool.duet]\nruns = \n")
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    # ... so that loading reports the syntax error rather than "no configuration".
    with pytest.raises(ConfigError, match=r"pyproject\.toml:2:8: not valid TOML"):
        load_config(start=tmp_path)
    write(tmp_path / "pyproject.toml", "[project]\nname = \n")
    assert find_config(tmp_path) is None


def test_load_config_finds_the_file_from_start(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "pyproject.toml", as_pyproject('[[benchmark]]\nname = "a"\ncommand = "x"'))
    (tmp_path / "pkg").mkdir()
    c = load_config(start=tmp_path / "pkg")
    assert c.path == tmp_path / "pyproject.toml"
    assert c.benchmarks[0].name == "a"


def test_no_configuration_found_shows_how_to_create_one(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with pytest.raises(ConfigError) as info:
        load_config(start=tmp_path)
    e = info.value
    assert str(tmp_path) in e.message
    assert "duet.toml" in e.message
    assert "[tool.duet]" in e.message
    assert e.fix is not None
    assert "create duet.toml" in e.fix
    assert "[[benchmark]]" in e.fix
    assert 'command = "./app --version"' in e.fix
    assert e.exit_code == 2


def test_missing_unreadable_and_wrong_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file") as info:
        load_config(tmp_path / "duet.toml")
    assert info.value.fix is not None
    assert "[[benchmark]]" in info.value.fix
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[[benchmark]]\nname = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"latin1\.toml:2: not UTF-8"):
        load_config(path)
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"has no \[tool\.duet\] table") as info:
        load_config(tmp_path / "pyproject.toml")
    assert info.value.fix is not None
    assert "duet.toml" in info.value.fix
    e = refused("[tool]\nduet = 3\n", name="pyproject.toml")
    assert "tool.duet must be a table, got an integer" in e.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path / "duet.toml", "")
    path.chmod(0)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(path)


# --------------------------------------------------------------------------------------------
# Refusals: every message names the file, the table and the key, and says the fix


BENCH = '[[benchmark]]\nname = "parse"\ncommand = "x"\n'


@pytest.mark.parametrize(
    ("text", "message", "fix"),
    [
        # Unknown keys, with the closest known one.
        ("iteratons = 5\n" + BENCH, "duet.toml:1: iteratons is not a known key", "'iterations'"),
        (
            BENCH + "iteration = 5\n",
            "duet.toml:4: benchmark[1] 'parse': iteration is not",
            "'iterations'",
        ),
        (
            "frobnicate = 1\n" + BENCH,
            "frobnicate is not a known key",
            "remove it; the keys here are",
        ),
        ("[[benchmarks]]\nname = 'a'\n", "benchmarks is not a known key", "'benchmark'"),
        ("memory-limit = '1G'\n" + BENCH, "memory-limit is not a known key", "'memory_limit'"),
        # Keys in the wrong table.
        (
            BENCH + "build = 'make'\n",
            "benchmark[1] 'parse': build is not a key of this table",
            "move it above the first [[benchmark]]",
        ),
        (BENCH + "isolation = 'auto'\n", "isolation is not a key of this table", "whole suite"),
        (BENCH + "max_failures = 3\n", "max_failures is not a key", "whole suite"),
        (
            "command = 'x'\n" + BENCH,
            "duet.toml:1: command is not a key of this table",
            "belongs in a [[benchmark]] table",
        ),
        ("setup = 'm:f'\n" + BENCH, "setup is not a key of this table", "[[benchmark]]"),
        # Types.
        (
            'runs = "10"\n' + BENCH,
            'duet.toml:1: runs must be an integer, got "10" (a string)',
            "runs = 10 (without quotes)",
        ),
        (
            "runs = 10.0\n" + BENCH,
            "runs must be an integer, got 10.0 (a float)",
            "runs = 10 (an integer",
        ),
        ("runs = true\n" + BENCH, "runs must be an integer, got true (a boolean)", "runs = 10"),
        # Digits int() refuses: a superscript, and more digits than it converts (a traceback once).
        (
            "runs = '\u00b2'\n" + BENCH,
            'runs must be an integer, got "\u00b2" (a string)',
            "runs = 10",
        ),
        ("runs = '" + "9" * 5000 + "'\n" + BENCH, 'runs must be an integer, got "999', "runs = 10"),
        ("iterations = 1.5\n" + BENCH, "iterations must be an integer", "iterations = 30"),
        ("warmup = [1]\n" + BENCH, "warmup must be an integer, got [1] (an array)", "warmup = 2"),
        (
            "confidence = '0.9'\n" + BENCH,
            "confidence must be a number",
            "confidence = 0.9 (without quotes)",
        ),
        (
            "threshold = false\n" + BENCH,
            "threshold must be a number, got false (a boolean)",
            "threshold = 0.02",
        ),
        (
            "timeout = 1979-05-27\n" + BENCH,
            "timeout must be a number, got 1979-05-27 (a date)",
            "timeout = 60",
        ),
        ("timeout = 1" + "0" * 400 + "\n" + BENCH, "timeout is too large", "timeout = 60"),
        ("build = 3\n" + BENCH, "build must be a string, got 3 (an integer)", 'build = "make"'),
        ("build = ''\n" + BENCH, "build must not be empty", 'build = "make"'),
        ("python = ['x']\n" + BENCH, "python must be a string", ".venv/bin/python"),
        ("isolation = 1\n" + BENCH, "isolation must be a string", 'isolation = "auto"'),
        (
            "benchmark = 'x'\n",
            "benchmark must be an array of tables ([[benchmark]]), got a string",
            "double brackets",
        ),
        (
            "[benchmark]\nname = 'a'\ncommand = 'x'\n",
            "duet.toml:1: benchmark must be an array of tables",
            "[[benchmark]] (double brackets)",
        ),
        (
            "benchmark = [1]\n",
            "duet.toml:1: benchmark[1]: must be a table, got 1 (an integer)",
            "[[benchmark]]",
        ),
        (
            BENCH + "env = 'A=1'\n",
            "env must be a table of variable names to strings",
            'env = { LC_ALL = "C" }',
        ),
        (
            BENCH + "env = { A = 1 }\n",
            "env A must be a string, got 1 (an integer)",
            'A = "1" (environment values are strings',
        ),
        (BENCH + "env = { A = true }\n", "env A must be a string, got true", 'A = "1"'),
        (BENCH + 'env = { A = "x\\u0000" }\n', "env A must not contain a NUL character", "remove"),
        (
            "[tool.duet]\nruns = 3\n",
            "duet.toml:1: tool is not a known key",
            "drop the 'tool.duet.' prefix",
        ),
        (
            BENCH + "env = { DUET_SIDE = 'x' }\n",
            "names starting with DUET_ are set by duet",
            "rename",
        ),
        (BENCH + "env = { 'A=B' = 'x' }\n", "invalid variable name 'A=B'", "remove it"),
        (BENCH + "command2 = 'x'\n", "command2 is not a known key", "'command'"),
        # Ranges.
        ("runs = 1\n" + BENCH, "duet.toml:1: runs must be at least 2, got 1", "runs = 10"),
        ("iterations = 0\n" + BENCH, "iterations must be at least 1, got 0", "iterations = 30"),
        ("warmup = -1\n" + BENCH, "warmup must be 0 or more, got -1", "warmup = 2"),
        ("max_failures = -1\n" + BENCH, "max_failures must be 0 or more", "max_failures = 2"),
        (
            "confidence = 1\n" + BENCH,
            "confidence must be strictly between 0 and 1, got 1.0",
            "0.99",
        ),
        ("confidence = 0\n" + BENCH, "confidence must be strictly between 0 and 1", "0.99"),
        (
            "confidence = nan\n" + BENCH,
            "confidence must be strictly between 0 and 1, got nan",
            "0.99",
        ),
        ("threshold = -0.01\n" + BENCH, "threshold must be a finite number, 0 or more", "0.02"),
        ("threshold = inf\n" + BENCH, "threshold must be a finite number", "0.02"),
        (
            "timeout = 0\n" + BENCH,
            "timeout must be a positive, finite number of seconds, got 0.0",
            "timeout = 60",
        ),
        ("timeout = inf\n" + BENCH, "timeout must be a positive, finite number", "timeout = 60"),
        (
            BENCH + "runs = 1\n",
            "duet.toml:4: benchmark[1] 'parse': runs must be at least 2",
            "runs = 10",
        ),
        # Choices.
        (
            "isolation = 'cgroups'\n" + BENCH,
            "isolation must be one of 'auto', 'cgroup', 'affinity', got \"cgroups\"",
            'isolation = "cgroup"',
        ),
        (
            "method = 'dual'\n" + BENCH,
            "method must be one of 'duet', 'sequential'",
            'method = "duet"',
        ),
        (
            BENCH + "method = 'seq'\n",
            "benchmark[1] 'parse': method must be one of",
            'method = "sequential"',
        ),
        # Sizes.
        (
            "memory_limit = '2 gigs'\n" + BENCH,
            'memory_limit "2 gigs" is not a size',
            '"2G", "512MiB"',
        ),
        ("memory_limit = 0\n" + BENCH, "memory_limit must be a positive size, got 0", '"2G"'),
        ("memory_limit = -5\n" + BENCH, "memory_limit must be a positive size", '"2G"'),
        ("memory_limit = '0'\n" + BENCH, 'memory_limit "0" is not a size', '"2G"'),
        (
            "memory_limit = 2.5\n" + BENCH,
            'memory_limit must be a size such as "2G" or a number of bytes, got 2.5',
            'memory_limit = "2G"',
        ),
        ("memory_limit = '1e300T'\n" + BENCH, "is not a size", '"2G"'),
        # Limits of processes.
        (
            "pids_limit = 8\n" + BENCH,
            'pids_limit must be at least 16 ("none": no limit), got 8: duet\'s own processes',
            "pids_limit = 4096",
        ),
        (
            BENCH + "pids_limit = 0\n",
            "benchmark[1] 'parse': pids_limit must be at least 16",
            "4096",
        ),
        (
            "pids_limit = 5000000\n" + BENCH,
            'pids_limit must be at most 4,194,304, the kernel\'s largest pid ("none": no limit), '
            "got 5000000",
            "pids_limit = 4096",
        ),
        (
            "pids_limit = '8192'\n" + BENCH,
            'pids_limit must be a number of processes or "none", got "8192" (a string)',
            "write pids_limit = 8192 (without quotes)",
        ),
        (
            "pids_limit = 'unlimited'\n" + BENCH,
            'pids_limit must be a number of processes or "none"',
            'pids_limit = "none" for no limit',
        ),
        ("pids_limit = 1e4\n" + BENCH, "got 10000.0 (a float)", "pids_limit = 10000 (a number"),
        ("pids_limit = true\n" + BENCH, "got true (a boolean)", "pids_limit = 16384"),
        ("pids-limit = 100\n" + BENCH, "pids-limit is not a known key", "'pids_limit'"),
        # Kinds, names, setup.
        (
            "[[benchmark]]\nname = 'a'\n",
            "duet.toml:1: benchmark[1] 'a': says neither command, python nor native",
            "keep exactly one",
        ),
        (
            "[[benchmark]]\nname = 'a'\ncommand = 'x'\nnative = 'y'\n",
            "benchmark[1] 'a': has both command and native",
            "keep exactly one",
        ),
        (
            "[[benchmark]]\nname = 'a'\ncommand = 'x'\npython = 'm:f'\nnative = 'y'\n",
            "has both command and python and native",
            "keep exactly one",
        ),
        (
            "[[benchmark]]\ncommand = 'x'\n",
            "duet.toml:1: benchmark[1]: has no name",
            'name = "parse"',
        ),
        ("[[benchmark]]\nname = ''\ncommand = 'x'\n", "name must not be empty", 'name = "parse"'),
        (
            "[[benchmark]]\nname = 3\ncommand = 'x'\n",
            "benchmark[1]: name must be a string, got 3",
            'name = "parse"',
        ),
        (
            "[[benchmark]]\nname = \"a\\nb\"\ncommand = 'x'\n",
            "name must be one line without control characters",
            'name = "parse"',
        ),
        ("[[benchmark]]\nname = ' a'\ncommand = 'x'\n", "surrounding spaces", 'name = "parse"'),
        (
            BENCH + BENCH,
            "duet.toml:5: benchmark[2] 'parse': name \"parse\" is already the name of benchmark[1]",
            "its own name",
        ),
        (
            "[[benchmark]]\nname = 'a'\ncommand = 'x'\nsetup = 'm:f'\n",
            "setup is only for python benchmarks, and this is a command benchmark",
            "remove setup",
        ),
        (
            "[[benchmark]]\nname = 'a'\nnative = 'x'\nsetup = 'm:f'\n",
            "this is a native benchmark",
            "remove setup",
        ),
        (
            "[[benchmark]]\nname = 'a'\npython = 'mod.func'\n",
            'python must name a function as module:function, got "mod.func"',
            'python = "mypkg.bench:parse"',
        ),
        ("[[benchmark]]\nname = 'a'\npython = 'a:b:c'\n", "module:function", "mypkg.bench:parse"),
        ("[[benchmark]]\nname = 'a'\npython = '1m:f'\n", "module:function", "mypkg.bench:parse"),
        (
            "[[benchmark]]\nname = 'a'\npython = 3\n",
            "python must be a string, got 3",
            'python = "mypkg.bench:parse"',
        ),
        (
            "[[benchmark]]\nname = 'a'\npython = 'm:f'\nsetup = 'prepare'\n",
            "setup must name a function as module:function",
            'setup = "mypkg.bench:make_input"',
        ),
        ("[[benchmark]]\nname = 'a'\ncommand = ' '\n", "command must not be empty", "command = "),
        (
            "[[benchmark]]\nname = 'a'\ncommand = \"a\\u0000b\"\n",
            "command must not contain a NUL",
            "\\u0000",
        ),
        # The suite itself.
        ("runs = 5\n", "duet.toml: defines no benchmark", "[[benchmark]]"),
        ("benchmark = []\n", "duet.toml:1: benchmark is empty", "add a benchmark"),
        # TOML syntax, with line and column and the line shown.
        (
            "runs = 5\nwarmup = two\n",
            "duet.toml:2:10: not valid TOML: Invalid value\n    warmup = two\n             ^",
            "strings need quotes",
        ),
        ("[[benchmark]\n", "duet.toml:1:", "[[benchmark]]"),
        ("runs = 5\nruns = 6\n", "duet.toml:2:", "correct the syntax"),
        ('name = "open', "not valid TOML", "correct the syntax"),
        ("a = 1 2", "duet.toml:1:7: not valid TOML", "correct the syntax"),
    ],
)
def test_refusals_name_the_file_table_key_and_fix(text: str, message: str, fix: str) -> None:
    e = refused(text)
    assert message in e.message, e.message
    assert e.fix is not None
    assert fix in e.fix, e.fix
    assert e.exit_code == 2


@pytest.mark.parametrize(
    ("text", "message", "fix"),
    [
        (
            "iteratons = 5\n" + BENCH,
            "pyproject.toml:5: [tool.duet]: iteratons is not a known key",
            "'iterations'",
        ),
        (
            BENCH + "runs = 1\n",
            "pyproject.toml:8: tool.duet.benchmark[1] 'parse': runs must be at least 2",
            "runs = 10",
        ),
        (
            BENCH + "build = 'make'\n",
            "tool.duet.benchmark[1] 'parse': build is not a key of this table",
            "move it into [tool.duet]",
        ),
        (
            "command = 'x'\n" + BENCH,
            "[tool.duet]: command is not a key",
            "belongs in a [[tool.duet.benchmark]] table",
        ),
        (
            "runs = 5\n",
            "pyproject.toml:4: [tool.duet]: defines no benchmark",
            "[[tool.duet.benchmark]]",
        ),
    ],
)
def test_refusals_in_pyproject_name_the_tool_duet_tables(text: str, message: str, fix: str) -> None:
    e = refused(as_pyproject(text), name="pyproject.toml")
    assert message in e.message, e.message
    assert e.fix is not None
    assert fix in e.fix, e.fix


def test_unknown_key_fix_lists_the_known_keys() -> None:
    e = refused(BENCH + "iteration = 5\n")
    assert e.fix is not None
    for key in ("name", "command", "python", "native", "setup", "runs", "iterations", "env"):
        assert key in e.fix
    assert "docs/configuration.md" in e.fix
    assert str(e) == f"{e.message}\n  fix: {e.fix}"


def test_errors_in_inline_benchmarks_point_at_the_benchmark_key() -> None:
    text = (
        "runs = 3\nbenchmark = [\n"
        "  { name = 'a', command = 'x' },\n"
        "  { name = 'b', command = 'x', runs = 0 },\n"
        "]\n"
    )
    e = refused(text)
    assert e.message.startswith("duet.toml:2: benchmark[2] 'b': runs must be at least 2")


def test_line_numbers_survive_multiline_strings_and_env_tables() -> None:
    text = (
        'build = """\nmake\n[[benchmark]]\nruns = 0\n"""\n'
        "[[benchmark]]\nname = 'a'\ncommand = '''x\ny'''\n"
        "[benchmark.env]\nA = 'x'\n"
        "[[benchmark]]\nname = 'b'  # second\n  iterations = 0 # indented\ncommand = 'x'\n"
    )
    e = refused(text)
    assert e.message.startswith("duet.toml:14: benchmark[2] 'b': iterations must be at least 1")
    c = load_config(Path("duet.toml"), text=text.replace("iterations = 0", "iterations = 1"))
    assert c.build == "make\n[[benchmark]]\nruns = 0\n"
    assert c.benchmarks[0].env == {"A": "x"}


# --------------------------------------------------------------------------------------------
# Records and selection


def test_records_check_their_values_on_construction() -> None:
    with pytest.raises(ValueError, match=r"Defaults\.runs must be at least 2"):
        Defaults(runs=1)
    with pytest.raises(ValueError, match="isolation must be one of"):
        Defaults(isolation="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a command"):
        BenchmarkConfig(name="a", kind="native")
    with pytest.raises(ValueError, match="needs a callable"):
        BenchmarkConfig(name="a", kind="python")
    with pytest.raises(ValueError, match=r"BenchmarkConfig\.confidence"):
        BenchmarkConfig(name="a", kind="command", command="x", confidence=1.5)


def load(text: str) -> Config:
    return load_config(Path("duet.toml"), text=text)


def test_select_patterns() -> None:
    text = "".join(
        f'[[benchmark]]\nname = "{n}"\ncommand = "x"\n'
        for n in ("parse-small", "parse-large", "render", "io[fast]")
    )
    c = load(text)
    assert c.select(None) == c.benchmarks
    assert [b.name for b in c.select("parse-*")] == ["parse-small", "parse-large"]
    assert [b.name for b in c.select("*e")] == ["parse-large"]
    assert [b.name for b in c.select("render")] == ["render"]
    assert [b.name for b in c.select("?ender")] == ["render"]
    assert [b.name for b in c.select("io[fast]")] == ["io[fast]"]  # the exact name, not a glob
    assert [b.name for b in c.select("*")] == [b.name for b in c.benchmarks]
    with pytest.raises(ConfigError) as info:
        c.select("PARSE-*")  # names are matched case-sensitively, as they are reported
    assert "no benchmark matches 'PARSE-*'" in info.value.message
    assert "parse-small, parse-large, render, io[fast]" in info.value.message
    assert info.value.fix is not None
    assert "glob" in info.value.fix


def test_select_one_is_a_name_or_a_glob_of_one_name() -> None:
    """``--bench`` of bisect and calibrate, which follow one benchmark."""
    text = "".join(
        f'[[benchmark]]\nname = "{n}"\ncommand = "x"\n'
        for n in ("parse-small", "parse-large", "render", "io[fast]")
    )
    c = load(text)
    assert c.select_one("render").name == "render"
    assert c.select_one("?ender").name == "render"
    assert c.select_one("*small").name == "parse-small"
    assert c.select_one("io[fast]").name == "io[fast]"  # the exact name, not a glob
    with pytest.raises(ConfigError) as info:
        c.select_one("parse-*")
    assert "'parse-*' matches 2 benchmarks (parse-small, parse-large)" in info.value.message
    with pytest.raises(ConfigError) as info:
        c.select_one("rendr")  # a plain name: the closest one
    assert info.value.fix == "did you mean 'render'?"


def test_benchmark_by_name() -> None:
    c = load(SUITE + BENCHMARKS)
    assert c.benchmark("parse").kind == "python"
    with pytest.raises(ConfigError, match="no benchmark named 'prase'") as info:
        c.benchmark("prase")
    assert info.value.fix == "did you mean 'parse'?"


# --------------------------------------------------------------------------------------------
# The documentation


def test_every_key_is_documented_and_every_example_loads(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    for key in [*config_mod.SUITE_KEY_PARSERS, *config_mod.BENCHMARK_KEY_PARSERS]:
        assert re.search(rf"^\| `{key}` \|", doc, re.MULTILINE), f"{key} is not in the tables"
    blocks = re.findall(r"```toml\n(.*?)```", doc, re.DOTALL)
    assert len(blocks) == 3
    for i, block in enumerate(blocks):
        name = "pyproject.toml" if "[tool.duet]" in block else "duet.toml"
        c = load_config(write(tmp_path / str(i) / name, block))
        assert c.benchmarks
    assert CONFIG_FILES == ("duet.toml", "pyproject.toml")


# --------------------------------------------------------------------------------------------
# Fuzz: whatever the input, a Config or a ConfigError and nothing else


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return (
            "nan"
            if math.isnan(v)
            else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
        )
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    return str(v.isoformat())


KEYS = sorted({*config_mod.SUITE_KEY_PARSERS, *config_mod.BENCHMARK_KEY_PARSERS})
SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(
        ["2G", "512MiB", "m:f", "a.b:c.d", "auto", "duet", "sequential", "1e309T", "0", "none"]
    )
    | st.dates()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TABLE_KEYS = st.sampled_from(KEYS) | st.text(max_size=10)
BENCHMARK_TABLES = st.dictionaries(TABLE_KEYS, VALUES, max_size=6) | st.sampled_from(
    ["command", "python", "native"]
).flatmap(
    lambda kind: st.fixed_dictionaries(
        {"name": st.text(max_size=5), kind: st.text(max_size=8) | st.just("m:f")},
        optional=dict.fromkeys(
            ("setup", "runs", "env", "memory_limit", "pids_limit", "timeout", "method"), VALUES
        ),
    )
)
SUITES = st.dictionaries(TABLE_KEYS, VALUES, max_size=6).flatmap(
    lambda d: (
        st.lists(BENCHMARK_TABLES, max_size=3).map(lambda bs: {**d, "benchmark": bs} if bs else d)
        | st.just(d)
    )
)


def loads_or_refuses(text: str, name: str) -> None:
    try:
        c = load_config(Path(name), text=text)
    except ConfigError:
        return
    json.dumps(c.raw, allow_nan=False)  # recorded in results: JSON-ready
    for_suite(c, baseline_dir=Path("/b"), candidate_dir=Path("/c"))


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(FUZZ, max_examples=120)  # recursive values: the slowest strategy to draw
@given(SUITES)
def test_fuzz_random_tables(suite: dict[str, Any]) -> None:
    text = "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in suite.items())
    loads_or_refuses(text, "duet.toml")
    loads_or_refuses(f"[tool]\nduet = {toml_value(suite)}\n", "pyproject.toml")


TOMLISH = st.text(
    alphabet=st.sampled_from(list("[]{}=\"'#.,:\n\r\\ tabrunsmem_0123456789-+eifnTGZ\t\x00é")),
    max_size=80,
)


@FUZZ
@given(TOMLISH)
def test_fuzz_random_text(text: str) -> None:
    loads_or_refuses(text, "duet.toml")
    loads_or_refuses(text, "pyproject.toml")


@pytest.mark.parametrize(
    "text",
    ["x = " + "[" * 100_000, "x = " + "{a = " * 50_000, "x = " + "1" * 5000],
    ids=["deep-arrays", "deep-tables", "huge-integer"],
)
@pytest.mark.parametrize("name", ["duet.toml", "pyproject.toml"])
def test_toml_that_python_refuses_to_build_is_a_config_error(text: str, name: str) -> None:
    # tomllib raises RecursionError and ValueError here, not TOMLDecodeError.
    with pytest.raises(ConfigError, match="not a usable configuration"):
        load_config(Path(name), text=text)
