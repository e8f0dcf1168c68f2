"""The go adapter end to end: a ``go test -bench`` suite of one package, standard library only
(nothing to fetch from the module proxy)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.go import (
    ADAPTER,
    GO_FALLBACKS,
    GoOptions,
    bench_pattern,
    result_names,
)
from duet_bench.analysis.benchmark import allocation_note
from duet_bench.analysis.document import analyze_document
from duet_bench.analysis.model import AnalysisSettings
from duet_bench.config.model import Suite
from duet_bench.report import render, report_of
from duet_bench.results import (
    BenchmarkRecord,
    ResultsDocument,
    RunRecord,
    SideRecord,
    dumps,
    from_dict,
)
from duet_bench.runner.samples import read_samples
from tests.aa import assert_not_slowed
from tests.adapters.suites import (
    FIXTURES,
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

# The end-to-end tests: a build per version, then a compare whose subprocess may take its
# 1800 s (pytest.mark.slow, timeout 2000).


GO = tool("go", GO_FALLBACKS)
needs_go = pytest.mark.skipif(GO is None, reason=f"go is not on PATH nor in {GO_FALLBACKS}")

# go = "..." names the toolchain explicitly, as a user whose PATH lacks it would.
# metric "auto": the adapter fixes the operation count, so the process's CPU time per operation
# is a CPU sample and decides, with crossover, as for every other kind.
CONFIG = settings("auto", runs=10) + (
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
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.slow
@pytest.mark.timeout(2000)
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
    # The count of operations is fixed (benchtime = "1000x"), the same on both sides: the
    # process's CPU time per operation decides.
    assert slowed["analysis"]["metric"] == "cpu", slowed["analysis"]["metric_reason"]
    assert "-test.benchtime 1000x" in slowed["versions"]["baseline"]["command"]
    candidate = slowed["runs"][0]["candidate"]
    assert len(candidate["iteration_cpu_ns"]) == len(candidate["iterations_ns"])
    # -benchmem: the allocations of the loop (none), recorded beside the time.
    assert candidate["figures"] == {"B/op": 0.0, "allocs/op": 0.0}


@needs_go
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.slow
@pytest.mark.timeout(2000)
def test_head_against_itself_measures_every_benchmark_on_both_sides(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    done, doc = compare(repo, "HEAD", "HEAD", tmp_path / "out", None, *NO_VERDICT)
    check_both_sides_measured(done, doc)
    assert len(doc["benchmarks"]) == 3


# A table of sub-benchmarks (tests/fixtures/adapters/table_test.go): two levels, a name with a
# space and a duplicate; HEAD slows "fast path" and the second "plain" by 30%.
# benchtime a duration: the operation count is Go's own for it, in the baseline.
TABLE_CONFIG = settings("auto", runs=10) + (
    f'\n[[suite]]\nadapter = "go"\npath = "table"\nbenchtime = "30ms"\ngo = "{GO}"\n'
)
TABLE = "go-table/BenchmarkTable/size=small"


def _table_project(tmp_path: Path) -> GitRepo:
    base = {
        "go.mod": GO_MOD,
        "table/table_test.go": source("table_test.go", slowed=STEPS_BASE, extra=""),
        "duet.toml": TABLE_CONFIG,
    }
    head = {"table/table_test.go": source("table_test.go", slowed=STEPS_HEAD, extra="")}
    return project(tmp_path, base, head)


@needs_go
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.slow
@pytest.mark.timeout(2000)
def test_every_sub_benchmark_of_a_table_is_measured_with_its_own_verdict(tmp_path: Path) -> None:
    """The 30% slowdown of two leaves is found (a regression verdict at 99% on a 30% effect,
    about 25% in the CPU sample with the start-up in it, fails by chance far less than 1 in
    1,000 at 10 runs of CPU time with crossover: the A/B tests of every adapter); the
    two unchanged leaves are not measured slower (``assert_not_slowed``: 1 call in 5,000 each).
    The duplicate ``plain#01`` and ``fast_path`` being slowed while ``plain`` is not shows each
    leaf's pattern selects that leaf alone."""
    repo = _table_project(tmp_path)
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    assert set(by_name) == {
        "go-table/BenchmarkFlat",
        f"{TABLE}/plain",
        f"{TABLE}/fast_path",
        f"{TABLE}/plain#01",
    }, sorted(by_name)
    for slowed in (f"{TABLE}/fast_path", f"{TABLE}/plain#01"):
        analysis = by_name[slowed]["analysis"]
        assert analysis["verdict"] == "regression", (slowed, analysis)
        assert 1.1 < analysis["ratio"] < 1.6, (slowed, analysis)
    for steady in ("go-table/BenchmarkFlat", f"{TABLE}/plain"):
        assert_not_slowed(by_name[steady])
    for b in by_name.values():
        assert b["analysis"]["metric"] == "cpu", (b["name"], b["analysis"]["metric_reason"])
        # The count Go chose for 30 ms in the baseline, the same on both sides.
        command = b["versions"]["baseline"]["command"]
        assert re.search(r"-test\.benchtime [0-9]+x ", command), command
        assert command == b["versions"]["candidate"]["command"]
    assert "Traceback" not in done.stderr


def test_a_pattern_quotes_and_anchors_every_level() -> None:
    assert bench_pattern("BenchmarkFlat") == "^BenchmarkFlat$"
    assert bench_pattern("BenchmarkX/size=4KB/alg=fast") == "^BenchmarkX$/^size=4KB$/^alg=fast$"
    assert bench_pattern("BenchmarkX/a|b/x(1)") == r"^BenchmarkX$/^a\|b$/^x\(1\)$"
    assert bench_pattern("BenchmarkX/[y].*+?{2}^$") == r"^BenchmarkX$/^\[y\]\.\*\+\?\{2\}\^\$$"
    assert bench_pattern("BenchmarkX/back\\slash") == r"^BenchmarkX$/^back\\slash$"
    # What Go prints for a non-printable is kept as printed, its backslash quoted.
    assert bench_pattern("BenchmarkX/ctl\\x01") == r"^BenchmarkX$/^ctl\\x01$"
    assert bench_pattern("BenchmarkX/dup#01") == "^BenchmarkX$/^dup#01$"


@needs_go
@pytest.mark.timeout(600)
def test_every_name_go_prints_selects_itself_and_nothing_else(tmp_path: Path) -> None:
    """tests/fixtures/adapters/names_test.go: names Go rewrites (spaces, non-printables,
    duplicates, empty names) and names that are regular-expression syntax, against the real
    test binary: discovered, then each run alone through its pattern."""
    package = tmp_path / "names"
    package.mkdir()
    (package / "go.mod").write_text("module example.com/names\n\ngo 1.21\n")
    (package / "names_test.go").write_text((FIXTURES / "names_test.go").read_text())
    assert GO is not None
    # The build cache duet's own go builds use (they get HOME, not this session's
    # XDG_CACHE_HOME, tests/conftest.py): a cold one costs this build about 20 s, and warming it
    # here saves the measuring tests' first build as much.
    cache = os.environ.get("GOCACHE") or str(Path.home() / ".cache" / "go-build")
    env = {**os.environ, "GOCACHE": cache}
    subprocess.run(
        [GO, "test", "-c", "-o", "n.test", "."], cwd=package, env=env, check=True, timeout=600
    )

    def run(pattern: str) -> tuple[str, ...]:
        argv = ["./n.test", "-test.run", "^$", "-test.bench", pattern]
        argv += ["-test.benchtime", "1x", "-test.cpu", "1"]
        done = subprocess.run(argv, cwd=package, capture_output=True, text=True, check=True)
        return result_names(done.stdout)

    names = run(".")
    assert len(names) == 27, names
    assert {"BenchmarkNames/tab_here", "BenchmarkNames/nbsp_here", "BenchmarkNames/ctl\\x01"} < set(
        names
    )
    assert {"BenchmarkNames/dup", "BenchmarkNames/dup#01", "BenchmarkNames/dup#01#01"} < set(names)
    assert "BenchmarkNamesX" in names
    for name in names:
        assert run(bench_pattern(name)) == (name,), (name, bench_pattern(name))


def test_the_tools_figures_are_the_median_of_the_measured_iterations(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    lines = [
        {"phase": "warmup", "index": 0, "start_ns": 1, "duration_ns": 9, "figures": {"B/op": 1}},
        *(
            {"phase": "measure", "index": i, "start_ns": 1, "duration_ns": 5, "figures": f}
            for i, f in enumerate(
                [
                    {"B/op": 48, "allocs/op": 1, "MB/s": 10.0},
                    {"B/op": 64, "allocs/op": 1},
                    {"B/op": 48, "allocs/op": 2},
                ]
            )
        ),
        {"done": True},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # MB/s is not on every measured line: left out, as a series missing from one line is.
    assert read_samples(path).figures == {"B/op": 48.0, "allocs/op": 1.0}


def _run(index: int, base: dict[str, float] | None, head: dict[str, float] | None) -> RunRecord:
    return RunRecord(
        index=index,
        status="ok",
        baseline=SideRecord(iterations_ns=(5, 6), figures=base),
        candidate=SideRecord(iterations_ns=(5, 6), figures=head),
    )


def test_a_changed_allocation_count_is_one_note_and_the_figures_are_kept() -> None:
    same = {"B/op": 48.0, "allocs/op": 1.0, "MB/s": 10.0}
    more = {"B/op": 96.0, "allocs/op": 2.0, "MB/s": 8.0}
    runs = tuple(_run(i, same, more) for i in range(3))
    assert allocation_note(runs) == (
        "allocations per operation changed: 1 -> 2 allocs/op, 48 -> 96 B/op (the tool's own count)"
    )
    assert allocation_note(tuple(_run(i, same, same) for i in range(3))) is None
    # A run without the figures (an older file, another tool): no note rather than a guess.
    assert allocation_note((*runs, _run(3, None, None))) is None
    doc = ResultsDocument(benchmarks=(BenchmarkRecord(name="go/BenchmarkX", runs=runs),))
    again = from_dict(json.loads(dumps(doc)))
    assert again.benchmarks[0].runs[0].candidate.figures == more
    assert again.benchmarks[0].runs[0].baseline.figures == same
    # A results file written before figures existed is read as before.
    older = json.loads(dumps(doc))
    for run in older["benchmarks"][0]["runs"]:
        del run["baseline"]["figures"], run["candidate"]["figures"]
    assert from_dict(older).benchmarks[0].runs[0].baseline.figures is None


def _broken(name: str) -> BenchmarkRecord:
    """A benchmark whose one run failed before its first iteration (stopped after it)."""
    run = RunRecord(
        index=0,
        status="failed",
        reason="candidate: the command exited with status 1",
        baseline=SideRecord(iterations_ns=(), status="failed", exit_code=1),
        candidate=SideRecord(iterations_ns=(), status="failed", exit_code=1),
    )
    return BenchmarkRecord(name=name, runs=(run,), kind="command")


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_a_summary_never_says_no_change_when_every_benchmark_failed(fmt: str) -> None:
    doc = ResultsDocument(benchmarks=tuple(_broken(f"go/BenchmarkSum{n}/4KB") for n in range(4)))
    text = render(report_of(analyze_document(doc, AnalysisSettings(reps=200))), fmt)  # type: ignore[arg-type]
    assert "4 of 4 benchmarks failed; none was measured" in text
    assert "changed beyond the threshold" not in text
    assert "no change" not in text.lower()


def test_junit_counts_every_failed_benchmark_as_an_error() -> None:
    doc = ResultsDocument(benchmarks=tuple(_broken(f"go/BenchmarkSum{n}/4KB") for n in range(4)))
    text = render(report_of(analyze_document(doc, AnalysisSettings(reps=200))), "junit")
    assert 'errors="4"' in text
    assert 'failures="0"' in text


@needs_go
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.slow
@pytest.mark.timeout(2000)
def test_a_suite_whose_benchmarks_all_fail_exits_3_saying_so(tmp_path: Path) -> None:
    config = settings("wall", runs=2) + (
        f'\n[[suite]]\nadapter = "go"\npath = "failing"\nbenchtime = "100x"\ngo = "{GO}"\n'
    )
    files = {
        "go.mod": GO_MOD,
        "failing/failing_test.go": (FIXTURES / "failing_test.go").read_text(),
        "duet.toml": config,
    }
    repo = project(tmp_path, files, {"failing/README": "the same benchmarks\n"})
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "4 of 4 benchmarks failed; none was measured" in done.stdout, done.stdout
    assert "changed beyond the threshold" not in done.stdout
    assert "refusing 100 operations" in done.stdout + done.stderr
    assert "fix the benchmark" not in done.stderr
    assert len(doc["benchmarks"]) == 4


@needs_go
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.timeout(600)
def test_the_filter_is_gos_bench_pattern_and_a_time_gives_each_leaf_its_count(
    tmp_path: Path,
) -> None:
    """Discovery and the operation count through the adapter itself, on the real toolchain."""
    package = tmp_path / "names"
    package.mkdir()
    (tmp_path / "go.mod").write_text("module example.com/names\n\ngo 1.21\n")
    (package / "names_test.go").write_text((FIXTURES / "names_test.go").read_text())
    where = Checkout(directory=tmp_path)
    suite = Suite(adapter="go", name="n", path="names", filter="Na$/deep", options=GoOptions(go=GO))
    found = ADAPTER.discover(suite, where)
    assert found == ("BenchmarkNa/deep/er", "BenchmarkNa/deep/e")
    timed = replace(suite, options=GoOptions(go=GO, benchtime="20ms"))
    counts = ADAPTER.operations(timed, where, found)
    # Go's own count for 20 ms of an empty loop: far more than one.
    assert set(counts) == set(found)
    assert all(n > 1000 for n in counts.values()), counts
    fixed = replace(suite, options=GoOptions(go=GO, benchtime="250x"))
    assert ADAPTER.operations(fixed, where, found) == dict.fromkeys(found, 250)
    command = ADAPTER.benchmark(timed, found[1], counts[found[1]]).command
    assert f"-test.benchtime {counts[found[1]]}x" in command
    assert "'^BenchmarkNa$/^deep$/^e$'" in command
