"""The google-benchmark adapter end to end: a C++ suite built with Debian's libbenchmark-dev."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.adapters.suites import (
    NO_VERDICT,
    STEPS_BASE,
    STEPS_HEAD,
    check_both_sides_measured,
    check_regression_found,
    compare,
    project,
    settings,
    source,
)

# A build per version, then a compare whose subprocess may take its 1800 s.
pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.slow,
    pytest.mark.timeout(2000),
]

BUILD = "g++ -O2 -o bench bench.cc -lbenchmark -lpthread"


def _toolchain_missing() -> str | None:
    if shutil.which("g++") is None:
        return "g++ is not installed"
    probe = subprocess.run(
        ["g++", "-x", "c++", "-", "-o", "/dev/null", "-lbenchmark", "-lpthread"],
        input="#include <benchmark/benchmark.h>\nBENCHMARK_MAIN();\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return (
            "Google Benchmark is not installed (apt-get install libbenchmark-dev; "
            f"scripts/bootstrap.sh dev does it as root): {probe.stderr.strip()[:200]}"
        )
    return None


MISSING = _toolchain_missing()
needs_toolchain = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

CONFIG = (
    f'build = "{BUILD}"\n'
    + settings("cpu")
    + ('\n[[suite]]\nadapter = "google-benchmark"\npath = "bench"\nname = "gb"\nmin_time = 0.02\n')
)


def _project(tmp_path: Path):  # type: ignore[no-untyped-def]
    base = {
        "bench.cc": source("bench.cc", slowed=STEPS_BASE, extra="BM_removed"),
        "duet.toml": CONFIG,
    }
    head = {"bench.cc": source("bench.cc", slowed=STEPS_HEAD, extra="BM_added")}
    return project(tmp_path, base, head)


@needs_toolchain
def test_the_slowed_benchmark_is_a_regression_and_new_and_missing_are_reported(
    tmp_path: Path,
) -> None:
    repo = _project(tmp_path)
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    names = {
        "steady": "BM_steady",
        "slowed": "BM_slowed",
        "added": "BM_added",
        "removed": "BM_removed",
    }
    check_regression_found(done, doc, "gb", names)
    slowed = next(b for b in doc["benchmarks"] if b["name"] == "gb/BM_slowed")
    # The sample is the library's time per operation (tens of microseconds), not the process
    # wall time (milliseconds: start-up and the library's own calibration).
    run = slowed["runs"][0]
    assert all(ns < 2_000_000 for ns in run["baseline"]["iterations_ns"]), run["baseline"]
    assert slowed["analysis"]["metric"] == "cpu"


@needs_toolchain
def test_head_against_itself_measures_every_benchmark_on_both_sides(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    done, doc = compare(repo, "HEAD", "HEAD", tmp_path / "out", None, *NO_VERDICT)
    check_both_sides_measured(done, doc)
    assert {b["name"] for b in doc["benchmarks"]} == {"gb/BM_steady", "gb/BM_slowed", "gb/BM_added"}
