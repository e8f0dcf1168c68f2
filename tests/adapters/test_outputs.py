"""The harness outputs the worker reads samples from (``duet_bench/harness/duet_outputs.py``)."""

from __future__ import annotations

import json

import pytest

from duet_bench.harness import duet_outputs
from duet_bench.harness.duet_outputs import OutputError, parse


def gb(*entries: dict[str, object]) -> str:
    return json.dumps({"context": {"num_cpus": 2}, "benchmarks": list(entries)})


def entry(name: str = "BM_a", real: float = 29023.0, cpu: float = 27981.0, unit: str = "ns"):  # type: ignore[no-untyped-def]
    return {
        "name": name,
        "run_name": name,
        "run_type": "iteration",
        "iterations": 488,
        "real_time": real,
        "cpu_time": cpu,
        "time_unit": unit,
    }


def test_google_benchmark_real_and_cpu_per_operation_in_nanoseconds() -> None:
    assert parse("google-benchmark", gb(entry())) == (29023, 27981)
    assert parse("google-benchmark", gb(entry(real=1.5, cpu=1.25, unit="us"))) == (1500, 1250)
    assert parse("google-benchmark", gb(entry(real=2.0, cpu=1.0, unit="ms"))) == (
        2_000_000,
        1_000_000,
    )
    # Repetitions of one benchmark: their mean; aggregates are not results.
    two = gb(entry(real=100.0, cpu=90.0), entry(real=300.0, cpu=110.0),
             {**entry(real=200.0), "run_type": "aggregate", "name": "BM_a_mean"})  # fmt: skip
    assert parse("google-benchmark", two) == (200, 100)
    # A sub-nanosecond operation is still a positive sample.
    assert parse("google-benchmark", gb(entry(real=0.3, cpu=0.2))) == (1, 1)


def test_google_benchmark_problems_are_named() -> None:
    with pytest.raises(OutputError, match="printed no JSON"):
        parse("google-benchmark", "Segmentation fault")
    with pytest.raises(OutputError, match="got 2 \\(BM_a, BM_b\\)"):
        parse("google-benchmark", gb(entry(), entry(name="BM_b")))
    with pytest.raises(OutputError, match="got 0"):
        parse("google-benchmark", gb())
    with pytest.raises(OutputError, match="reported an error: out of data"):
        parse(
            "google-benchmark",
            gb({**entry(), "error_occurred": True, "error_message": "out of data"}),
        )
    with pytest.raises(OutputError, match="no usable real_time"):
        parse("google-benchmark", gb(entry(unit="fortnights")))


GO_OUTPUT = """goos: linux
goarch: amd64
pkg: example.com/work
cpu: AMD EPYC Processor
BenchmarkSlowed 	    1000	     43123.5 ns/op	       0 B/op	       0 allocs/op
PASS
"""


def test_go_ns_per_op() -> None:
    assert parse("go", GO_OUTPUT) == (43124, None)
    assert parse("go", "BenchmarkX-8   100   7 ns/op\n") == (7, None)
    with pytest.raises(OutputError, match="got 2 result lines"):
        parse("go", GO_OUTPUT + "BenchmarkSlowed/sub 1 2 ns/op\n")
    with pytest.raises(OutputError, match=r"no result line.*FAIL"):
        parse("go", "--- FAIL: BenchmarkSlowed\nFAIL\n")


def test_criterion_bencher_ns_per_iter() -> None:
    assert parse("criterion", "test sum_a ... bench:       27551 ns/iter (+/- 1120)\n") == (
        27551,
        None,
    )
    # libtest's bencher lines carry thousands separators.
    assert parse("criterion", "test group/x 64 ... bench:      27,551 ns/iter (+/- 1,120)\n") == (
        27551,
        None,
    )
    with pytest.raises(OutputError, match="no result line"):
        parse("criterion", "error: unexpected argument\n")


def test_unknown_format() -> None:
    assert "go" in duet_outputs.FORMATS
    with pytest.raises(OutputError, match="unknown output format 'junit'"):
        parse("junit", "")


def test_google_benchmark_aggregates_are_not_results_and_real_or_manual_time_has_no_cpu() -> None:
    rows = [entry("BM_a/repeats:3", real=r, cpu=c) for r, c in ((100.0, 90.0), (200.0, 120.0))]
    aggregates = [
        {**entry("BM_a/repeats:3", real=999.0), "name": f"BM_a/repeats:3_{a}",
         "run_type": "aggregate", "aggregate_name": a}
        for a in ("mean", "median", "stddev", "cv")
    ]  # fmt: skip
    assert parse("google-benchmark", gb(*rows, *aggregates)) == (150, 105)
    # ReportAggregatesOnly(true): the mean aggregate is the mean of the repetitions.
    assert parse("google-benchmark", gb(*aggregates)) == (999, 27981)
    # UseRealTime / UseManualTime: the figure the author chose, and no CPU time to decide on.
    assert parse("google-benchmark", gb(entry("BM_io/real_time"))) == (29023, None)
    assert parse("google-benchmark", gb(entry("BM_gpu/8/manual_time"))) == (29023, None)
    assert parse("google-benchmark", gb(entry("BM_mt/real_time/threads:2"))) == (29023, None)
    # The words elsewhere in a name are not the suffix.
    assert parse("google-benchmark", gb(entry("BM_real_time/8"))) == (29023, 27981)


def test_criterion_calls_divides_the_invocations_cpu_time_by_its_fixed_calls() -> None:
    line = "test sizes/xorshift/20000 ... bench:       32498 ns/iter (+/- 7794)\n"
    assert parse("criterion-calls/500", line, 17_000_000) == (32498, 34000)
    # Without the invocation's CPU time (an old worker): the wall sample only.
    assert parse("criterion-calls/500", line) == (32498, None)
    assert duet_outputs.known("criterion-calls/500")
    assert duet_outputs.known("criterion")
    assert duet_outputs.known("google-benchmark")
    for wrong in ("criterion-calls/0", "criterion-calls/", "criterion-calls/N", "criterion/5"):
        assert not duet_outputs.known(wrong), wrong
        with pytest.raises(OutputError, match="unknown output format"):
            parse(wrong, line, 1)


def test_go_figures_beside_the_time() -> None:
    line = (
        "BenchmarkSum64/4KB    \t   28106\t     42622 ns/op\t  96.10 MB/s\t    4096 B/op\t"
        "       2 allocs/op\t     3.500 widgets/op\n"
    )
    assert parse("go", line) == (42622, None)
    assert duet_outputs.figures("go", line) == {
        "MB/s": 96.1,
        "B/op": 4096.0,
        "allocs/op": 2.0,
        "widgets/op": 3.5,
    }
    assert duet_outputs.figures("go", GO_OUTPUT) == {"B/op": 0.0, "allocs/op": 0.0}
    assert duet_outputs.figures("go", "BenchmarkX-8   100   7 ns/op\n") == {}
    assert duet_outputs.figures("criterion", "test a ... bench: 5 ns/iter (+/- 1)\n") == {}


def test_go_problems_name_their_cause() -> None:
    # b.ReportMetric(0, "ns/op") drops the time from the line.
    with pytest.raises(OutputError, match=r'no ns/op for BenchmarkX.*ReportMetric\(0, "ns/op"\)'):
        parse("go", "BenchmarkX \t 100\t 3.000 widgets/op\n")
    with pytest.raises(OutputError, match=r"2 result lines \(BenchmarkX/a, BenchmarkX/b\)"):
        parse("go", "BenchmarkX/a \t 1\t 5 ns/op\nBenchmarkX/b \t 1\t 6 ns/op\n")
    with pytest.raises(OutputError, match=r"no result line: the benchmark was skipped \(b.Skip\)"):
        parse("go", "--- SKIP: BenchmarkX\nPASS\n")


def test_go_operation_count() -> None:
    assert duet_outputs.operations("go", GO_OUTPUT) == 1000
    assert duet_outputs.operations("go", "BenchmarkX/a \t 250\t 5 ns/op\n") == 250
    assert duet_outputs.operations("criterion", "test a ... bench: 5 ns/iter (+/- 1)\n") is None
