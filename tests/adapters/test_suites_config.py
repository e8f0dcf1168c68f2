"""``[[suite]]`` entries: validated like benchmarks (file, line, suite, key, closest key)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.google_benchmark import ADAPTER as GOOGLE_BENCHMARK
from duet_bench.adapters.google_benchmark import GoogleBenchmarkOptions, filter_for
from duet_bench.adapters.pytest_benchmark import PytestOptions
from duet_bench.adapters.registry import get_adapter
from duet_bench.config import load_config
from duet_bench.errors import ConfigError


def load(tmp_path: Path, text: str, name: str = "duet.toml"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def test_a_suite_alone_is_a_configuration_and_its_settings_are_parsed(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
        build = "make"
        [[suite]]
        adapter = "google-benchmark"
        path = "build/bench_parse"
        filter = "BM_Parse"
        min_time = 0.1
        runs = 7
        timeout = 30
        memory_limit = "1G"
        env = { LANG = "C" }
        """,
    )
    assert config.benchmarks == ()
    (suite,) = config.suites
    assert suite.name == "google-benchmark-bench_parse"
    assert suite.filter == "BM_Parse"
    assert suite.options == GoogleBenchmarkOptions(min_time=0.1)
    assert suite.settings == {"runs": 7, "timeout_s": 30.0, "memory_limit_bytes": 1 << 30}
    assert suite.env == {"LANG": "C"}
    b = GOOGLE_BENCHMARK.benchmark(suite, "BM_Parse/64")
    assert b.name == "google-benchmark-bench_parse/BM_Parse/64"
    assert b.output == "google-benchmark"
    assert b.command == (
        "./build/bench_parse '--benchmark_filter=^BM_Parse/64$' --benchmark_format=json "
        "--benchmark_min_time=0.1"
    )


def test_pyproject_form(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
        [tool.duet]
        [[tool.duet.suite]]
        adapter = "go"
        path = "."
        """,
        name="pyproject.toml",
    )
    assert config.suites[0].name == "go"


def test_an_unknown_key_names_the_line_and_the_closest_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(
            tmp_path,
            """
            [[benchmark]]
            name = "x"
            command = "true"

            [[suite]]
            adapter = "google-benchmark"
            name = "parse"
            path = "bench"
            min_tme = 0.1
            """,
        )
    assert "duet.toml:10: suite[1] 'parse': min_tme is not a key of a google-benchmark suite" in (
        e.value.message
    )
    assert "did you mean 'min_time'?" in (e.value.fix or "")


def test_an_adapter_parses_its_own_options_into_its_record(tmp_path: Path) -> None:
    """pytest-benchmark's one option, ``args``, as a list or as shell words; any other key of
    the entry is refused, naming the keys of that adapter."""
    entry = '[[suite]]\nadapter = "pytest-benchmark"\npath = "benchmarks"\n'
    listed = load(tmp_path, entry + 'args = ["-p", "myplugin"]\n')
    assert listed.suites[0].options == PytestOptions(args=("-p", "myplugin"))
    words = load(tmp_path, entry + 'args = "-p myplugin"\n')
    assert words.suites[0].options == PytestOptions(args="-p myplugin")
    with pytest.raises(ConfigError, match="args must be a list of strings"):
        load(tmp_path, entry + "args = [1]\n")
    with pytest.raises(ConfigError, match="args 'a \"b' is not valid shell words"):
        load(tmp_path, entry + "args = 'a \"b'\n")
    with pytest.raises(ConfigError, match="workers is not a key of a pytest-benchmark suite"):
        load(tmp_path, entry + "workers = 2\n")


def test_an_unknown_adapter_names_the_closest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, '[[suite]]\nadapter = "gogle-benchmark"\npath = "b"\n')
    assert "duet.toml:2: suite[1]: adapter is not known" in e.value.message
    assert "did you mean 'google-benchmark'?" in (e.value.fix or "")


def test_a_wrong_setting_is_refused_as_for_a_benchmark(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, '[[suite]]\nadapter = "go"\npath = "."\nruns = "5"\n')
    assert "duet.toml:4: suite[1]: runs must be an integer" in e.value.message
    assert "runs = 5" in (e.value.fix or "")


def test_missing_path_and_duplicate_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no path"):
        load(tmp_path, '[[suite]]\nadapter = "go"\n')
    with pytest.raises(ConfigError, match="'go' is already the name of suite\\[1\\]"):
        load(
            tmp_path,
            '[[suite]]\nadapter = "go"\npath = "."\n[[suite]]\nadapter = "go"\npath = "./"\n',
        )


def test_an_adapter_not_in_this_build_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A build without the module, as a reduced build ships it: its import fails by that name.
    monkeypatch.setitem(sys.modules, "duet_bench.adapters.pytest_benchmark", None)
    with pytest.raises(ConfigError, match="not part of this duet build") as e:
        get_adapter("pytest-benchmark")
    assert "duet_bench.adapters.pytest_benchmark is missing" in e.value.message
    assert e.value.fix


def test_filter_escapes_regular_expression_characters() -> None:
    assert filter_for("BM_x<int>/8") == "^BM_x<int>/8$"
    assert filter_for("BM_a.b(c)") == "^BM_a\\.b\\(c\\)$"


def test_discovery_failure_says_what_the_benchmark_tool_printed(tmp_path: Path) -> None:
    config = load(tmp_path, '[[suite]]\nadapter = "google-benchmark"\npath = "bench"\n')
    binary = tmp_path / "bench"
    binary.write_text("#!/bin/sh\necho 'cannot open data/input.json' >&2\nexit 4\n")
    binary.chmod(0o755)
    with pytest.raises(ConfigError) as e:
        GOOGLE_BENCHMARK.discover(config.suites[0], Checkout(directory=tmp_path))
    assert "list the benchmarks failed (exit status 4)" in e.value.message
    assert "cannot open data/input.json" in e.value.message
    binary.unlink()
    with pytest.raises(ConfigError, match="no benchmark binary at bench"):
        GOOGLE_BENCHMARK.discover(config.suites[0], Checkout(directory=tmp_path))


def test_discovery_lists_what_the_binary_lists(tmp_path: Path) -> None:
    config = load(
        tmp_path, '[[suite]]\nadapter = "google-benchmark"\npath = "bench"\nfilter = "B"\n'
    )
    binary = tmp_path / "bench"
    # A stand-in that answers --benchmark_list_tests as the library does, echoing the filter.
    binary.write_text('#!/bin/sh\necho BM_a\necho "BM_b/8"\necho "$2"\n')
    binary.chmod(0o755)
    found = GOOGLE_BENCHMARK.discover(config.suites[0], Checkout(directory=tmp_path))
    assert found == ("BM_a", "BM_b/8", "--benchmark_filter=B")
