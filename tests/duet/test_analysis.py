"""The verdict (method.md section 2) and the analysis of a benchmark from raw samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duet import results
from duet.analysis import AnalysisSettings, analyze_benchmark, analyze_document, fails, verdict

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


@pytest.mark.parametrize(
    ("ratio", "lo", "hi", "expected"),
    [
        (1.05, 1.03, 1.07, "regression"),
        (1.015, 1.01, 1.02, "no change"),  # significant but smaller than t, inside the band
        (1.019, 1.005, 1.03, "inconclusive"),  # significant, below t, leaves the band
        (0.95, 0.93, 0.97, "improvement"),
        (0.99, 0.985, 0.995, "no change"),
        (1.0, 0.95, 1.05, "inconclusive"),  # a wide interval is never "no change"
        (1.02, 1.001, 1.04, "regression"),  # exactly at the threshold counts
        (1.025, 0.999, 1.05, "inconclusive"),  # contains 1
    ],
)
def test_verdict_table(ratio: float, lo: float, hi: float, expected: str) -> None:
    assert verdict(ratio=ratio, ci_low=lo, ci_high=hi, threshold=0.02) == expected


def test_improvement_band_is_reciprocal() -> None:
    # 1/(1.02) = 0.98039...: a ratio of 0.981 is not an improvement at t = 2 %.
    assert verdict(ratio=0.981, ci_low=0.97, ci_high=0.99, threshold=0.02) == "inconclusive"
    assert verdict(ratio=0.980, ci_low=0.97, ci_high=0.99, threshold=0.02) == "improvement"


def test_fail_on() -> None:
    assert fails(["no change", "regression"], "regression")
    assert not fails(["improvement", None], "regression")
    assert fails(["improvement"], "any")
    assert not fails(["inconclusive"], "any")
    assert not fails(["regression"], "never")


def test_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="confidence"):
        AnalysisSettings(confidence=1.0)
    with pytest.raises(ValueError, match="threshold"):
        AnalysisSettings(threshold=float("nan"))


def test_fixture_verdicts_and_fields() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings())
    by_name = {b.name: b.analysis for b in doc.benchmarks}
    assert by_name["parse-json"]["verdict"] == "regression"
    assert by_name["render-page"]["verdict"] == "no change"
    assert by_name["sort-1M"]["verdict"] == "improvement"
    tiny = by_name["tiny"]
    assert tiny["verdict"] is None
    assert tiny["ci_low"] is None
    assert "point estimate only" in tiny["note"]
    failed = by_name["with-a-failure"]
    assert failed["runs_used"] == 11
    assert failed["runs_failed"] == 1
    assert "timeout" in failed["failures"][0]
    for a in by_name.values():
        for key in (
            "ratio",
            "ci_low",
            "ci_high",
            "confidence",
            "threshold",
            "verdict",
            "runs_used",
            "winsorized",
            "impact_factor",
        ):
            assert key in a
    assert set(by_name["parse-json"]["impact_factor"]) == {"baseline", "candidate"}
    # The run factor is shared and large: the process start matters more than the iteration.
    assert by_name["parse-json"]["impact_factor"]["baseline"]["plain"] > 2
    assert 0.5 < by_name["parse-json"]["impact_factor"]["baseline"]["transformed"] < 2


def test_inconclusive_says_how_many_runs_would_decide() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings())
    noisy = doc.benchmark("noisy-io").analysis
    assert noisy is not None
    assert noisy["verdict"] == "inconclusive"
    assert noisy["runs_needed"] > noisy["runs_used"]
    assert "would decide" in noisy["note"]


def test_reanalysis_is_reproducible_and_seed_dependent() -> None:
    doc = results.load(FIXTURE)
    one = analyze_document(doc, AnalysisSettings(reps=2000))
    two = analyze_document(doc, AnalysisSettings(reps=2000))
    other = analyze_document(doc, AnalysisSettings(reps=2000, seed=7))
    assert results.dumps(one) == results.dumps(two)
    assert one.benchmark("parse-json").analysis != other.benchmark("parse-json").analysis


def test_identical_sides_give_exactly_one() -> None:
    rng = np.random.default_rng(1)
    runs = []
    for i in range(8):
        xs = [int(x) for x in rng.integers(1_000_000, 2_000_000, size=20)]
        runs.append(
            {
                "index": i,
                "status": "ok",
                "baseline": {"iterations_ns": xs},
                "candidate": {"iterations_ns": xs},
            }
        )
    doc = results.from_dict(
        {"schema": "duet-results/1", "benchmarks": [{"name": "aa", "runs": runs}]}
    )
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings())
    assert (a.ratio, a.ci_low, a.ci_high, a.verdict) == (1.0, 1.0, 1.0, "no change")


def test_no_successful_run() -> None:
    data = json.loads(FIXTURE.read_text())
    bench = data["benchmarks"][0]
    for r in bench["runs"]:
        r["status"] = "failed"
        r["reason"] = "exit code 1"
    doc = results.from_dict({"schema": "duet-results/1", "benchmarks": [bench]})
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings())
    assert a.ratio is None
    assert a.verdict is None
    assert a.runs_failed == len(bench["runs"])
