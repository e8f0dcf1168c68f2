"""The demo's conclusion table: what counts as finding the known 5%, and what a miss says."""

from __future__ import annotations

from typing import Any

from duet_bench.demo import CONDITIONS, expected_against_measured
from duet_bench.results.analysis import AnalysisBlock
from duet_bench.results.model import BenchmarkRecord, ResultsDocument, RunRecord, SideRecord


def _doc(ratio: float, lo: float, hi: float, verdict: str, runs: int = 16) -> ResultsDocument:
    side = SideRecord(iterations_ns=(1,))
    metric: dict[str, Any] = {"ratio": ratio, "ci_low": lo, "ci_high": hi, "verdict": verdict}
    analysis = {"metric": "cpu", **metric, "metrics": {"cpu": metric, "wall": metric}}
    record = BenchmarkRecord(
        name="demo-xorshift",
        runs=tuple(
            RunRecord(index=i, status="ok", baseline=side, candidate=side) for i in range(runs)
        ),
        analysis=AnalysisBlock.from_dict(analysis),
    )
    return ResultsDocument(benchmarks=(record,))


def _row(text: str, condition: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(condition))


def test_a_regression_whose_interval_holds_1_05_is_found_wherever_its_point_lies() -> None:
    # 1.0657 [1.043, 1.083] was called MISSED when only a point within 0.01 of 1.05 counted.
    quiet, busy = CONDITIONS
    text = expected_against_measured(
        [
            (quiet, _doc(1.0657, 1.043, 1.083, "regression")),
            (busy, _doc(1.039, 1.02, 1.06, "regression")),
        ]
    )
    assert "detected" in _row(text, quiet.name)
    assert "detected" in _row(text, busy.name)
    assert "(not deciding)" in text  # wall time is shown beside the deciding CPU time
    assert "MISSED" not in text


def test_a_regression_whose_interval_misses_1_05_is_a_miss_that_says_so() -> None:
    quiet, _ = CONDITIONS
    text = expected_against_measured([(quiet, _doc(1.10, 1.08, 1.12, "regression"))])
    assert "MISSED" in _row(text, quiet.name)
    assert "does not hold 1.05" in text
    assert "[1.08, 1.12]" in text


def test_an_inconclusive_miss_names_the_runs_it_had() -> None:
    quiet, _ = CONDITIONS
    text = expected_against_measured([(quiet, _doc(1.02, 0.997, 1.04, "inconclusive", runs=6))])
    assert "MISSED" in _row(text, quiet.name)
    assert "the demo's 6 runs" in text
    assert "more --runs" in text
