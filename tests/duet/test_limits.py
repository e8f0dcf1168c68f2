"""Huge numbers are refused where they are read (issue 25 item 9): the options, the
configuration and results files, with the limit in the message and exit 2 (3 for a results
file), never a traceback with exit 1. The real CLI in a subprocess, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from duet_bench.config.read import load_config
from duet_bench.errors import ConfigError
from duet_bench.limits import LIMITS, MAX_RESULTS_BYTES

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def duet(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("option", "value", "shown"),
    [
        ("--runs", "99999999999999999999", "2<=x<=10000"),
        ("--runs", "1000000000", "2<=x<=10000"),
        ("--timeout", "1e308", "0<x<=86400"),
        ("--timeout", "nan", "0<x<=86400"),
        ("--timeout", "inf", "0<x<=86400"),
        ("--iterations", "99999999999", "1<=x<=1000000"),
        ("--warmup", "99999999999999999999", "0<=x<=100000"),
        ("--threshold", "1e308", "0<=x<=10"),
        ("--max-failures", "99999999999999999999", "0<=x<=10000"),
        ("--reps", "99999999999999999999", "100<=x<=1000000"),
    ],
)
def test_a_huge_option_is_a_usage_error_with_its_limit(
    tmp_path: Path, option: str, value: str, shown: str
) -> None:
    done = duet(
        "run", "--baseline", "true", "--candidate", "true", option, value,
        "--out", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert shown in done.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("runs = 99999999999999999999", "runs must be from 2 to 10,000"),
        ("timeout = 1e308", "timeout must be more than 0 and up to 86400"),
        ("iterations = 1000000000", "iterations must be from 1 to 1,000,000"),
        ("warmup = 99999999999999999999", "warmup must be from 0 to 100,000"),
        ("threshold = 1e300", "threshold must be from 0 to 10"),
    ],
)
def test_a_huge_configuration_value_is_refused_with_its_limit(
    tmp_path: Path, line: str, shown: str
) -> None:
    path = tmp_path / "duet.toml"
    path.write_text(f'{line}\n[[benchmark]]\nname = "t"\ncommand = "true"\n')
    with pytest.raises(ConfigError, match=shown) as caught:
        load_config(path)
    assert caught.value.exit_code == 2


def test_options_and_configuration_share_one_table() -> None:
    assert LIMITS["runs"].high == 10_000
    from duet_bench.config.model import range_problem

    for name, limit in LIMITS.items():
        over = limit.high * 2 if limit.number else int(limit.high) + 1
        assert range_problem(name, over) is not None, name


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("iterations_ns", 10**30, "over the largest value duet reads here (10^15 ns"),
        ("cpu_ns", 10**30, "beyond a 64-bit integer"),
    ],
)
def test_a_huge_number_in_a_results_file_is_refused(
    tmp_path: Path, field: str, value: int, shown: str
) -> None:
    data = json.loads(FIXTURE.read_text())
    side = data["benchmarks"][0]["runs"][0]["baseline"]
    if field == "iterations_ns":
        side[field][0] = value
    else:
        side[field] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    done = duet("analyze", str(path))
    assert done.returncode == 3, done.stderr
    assert shown in done.stderr
    assert "Traceback" not in done.stderr


def test_a_results_file_over_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("w") as f:  # sparse: no disk space used
        f.write('{"schema": "duet-results/2", "benchmarks": [], "x": "')
        f.seek(MAX_RESULTS_BYTES + 1)
        f.write('"}')
    done = duet("report", str(path))
    assert done.returncode == 3, done.stderr
    assert "over the 256 MiB that duet reads in a results file" in done.stderr
    assert "fix: " in done.stderr
