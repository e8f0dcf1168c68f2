"""The go adapter end to end: a ``go test -bench`` suite of one package, standard library only
(nothing to fetch from the module proxy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from duet_bench.adapters.go import GO_FALLBACKS
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
    tool,
)
from tests.integration.gitrepo import GitRepo

# A build per version, then a compare whose subprocess may take its 1800 s.
pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.slow,
    pytest.mark.timeout(2000),
]


GO = tool("go", GO_FALLBACKS)
needs_go = pytest.mark.skipif(GO is None, reason=f"go is not on PATH nor in {GO_FALLBACKS}")

# go = "..." names the toolchain explicitly, as a user whose PATH lacks it would.
CONFIG = settings("wall", runs=20) + (
    f'\n[[suite]]\nadapter = "go"\npath = "work"\nbenchtime = "1000x"\ngo = "{GO}"\n'
)
GO_MOD = "module example.com/work\n\ngo 1.21\n"


def _project(tmp_path: Path) -> GitRepo:
    base = {
        "go.mod": GO_MOD,
        "work/work_test.go": source("work_test.go", slowed=STEPS_BASE, extra="BenchmarkRemoved"),
        "duet.toml": CONFIG,
    }
    head = {"work/work_test.go": source("work_test.go", slowed=STEPS_HEAD, extra="BenchmarkAdded")}
    return project(tmp_path, base, head)


@needs_go
def test_the_slowed_benchmark_is_a_regression_and_new_and_missing_are_reported(
    tmp_path: Path,
) -> None:
    repo = _project(tmp_path)
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    names = {
        "steady": "BenchmarkSteady",
        "slowed": "BenchmarkSlowed",
        "added": "BenchmarkAdded",
        "removed": "BenchmarkRemoved",
    }
    check_regression_found(done, doc, "go-work", names)
    slowed = next(b for b in doc["benchmarks"] if b["name"] == "go-work/BenchmarkSlowed")
    # ns/op of a loop of tens of microseconds, not the process's milliseconds.
    assert all(ns < 2_000_000 for ns in slowed["runs"][0]["candidate"]["iterations_ns"])
    # Go reports no CPU time per operation: the verdict rests on wall time.
    assert slowed["analysis"]["metric"] == "wall"


@needs_go
def test_head_against_itself_measures_every_benchmark_on_both_sides(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    done, doc = compare(repo, "HEAD", "HEAD", tmp_path / "out", None, *NO_VERDICT)
    check_both_sides_measured(done, doc)
    assert len(doc["benchmarks"]) == 3
