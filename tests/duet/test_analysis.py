"""The verdict (docs/statistics.md, method 2) and the analysis of a benchmark from raw samples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duet_bench import results
from duet_bench.analysis import (
    AnalysisSettings,
    analyze_benchmark,
    analyze_document,
    fails,
    verdict,
)

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
        (1 / 1.02, 0.96, 0.999, "improvement"),  # exactly at the lower band edge counts too
        (1.025, 0.999, 1.05, "inconclusive"),  # contains 1
        (1.05, 1.0, 1.07, "inconclusive"),  # touches 1: not wholly above it
        (0.95, 0.93, 1.0, "inconclusive"),  # touches 1: not wholly below it
    ],
)
def test_verdict_table(ratio: float, lo: float, hi: float, expected: str) -> None:
    assert verdict(ratio=ratio, ci_low=lo, ci_high=hi, threshold=0.02) == expected


def test_improvement_band_is_reciprocal() -> None:
    # 1/(1.02) = 0.98039...: a ratio of 0.981 is not an improvement at t = 2 %.
    assert verdict(ratio=0.981, ci_low=0.97, ci_high=0.99, threshold=0.02) == "inconclusive"
    assert verdict(ratio=0.980, ci_low=0.97, ci_high=0.99, threshold=0.02) == "improvement"


def test_the_band_edges_are_exactly_reciprocal() -> None:
    """Just inside and just outside 1/(1 + t), not 1 - t (0.98 at t = 2%, where 1/1.02 =
    0.98039): the improvement needs the ratio below the edge and the no-change band ends at it."""
    edge = 1.0 / 1.02
    above, below = edge * (1 + 1e-9), edge * (1 - 1e-9)
    assert verdict(ratio=below, ci_low=0.97, ci_high=0.99, threshold=0.02) == "improvement"
    assert verdict(ratio=above, ci_low=0.97, ci_high=0.99, threshold=0.02) == "inconclusive"
    assert verdict(ratio=0.99, ci_low=above, ci_high=1.0, threshold=0.02) == "no change"
    assert verdict(ratio=0.99, ci_low=0.9802, ci_high=1.0, threshold=0.02) == "inconclusive"
    # An interval that ends exactly on the band's edges is inside the band.
    assert verdict(ratio=1.0, ci_low=1 / 1.02, ci_high=1.02, threshold=0.02) == "no change"


def test_fail_on() -> None:
    assert fails(["no change", "regression"], "regression")
    assert not fails(["improvement", None], "regression")
    assert fails(["improvement"], "any")
    assert not fails(["inconclusive"], "any")
    assert not fails(["regression"], "never")
    assert fails(["no change", "inconclusive"], "inconclusive")
    assert fails(["regression"], "inconclusive")
    assert not fails(["improvement", "no change", None], "inconclusive")


def test_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="confidence"):
        AnalysisSettings(confidence=1.0)
    with pytest.raises(ValueError, match="threshold"):
        AnalysisSettings(threshold=float("nan"))


def _stored(b: results.BenchmarkRecord) -> dict[str, Any]:
    """The benchmark's analysis as results.json stores it."""
    assert b.analysis is not None
    return b.analysis.to_dict()


def test_fixture_verdicts_and_fields() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings())
    by_name = {b.name: _stored(b) for b in doc.benchmarks}
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
    noisy = _stored(doc.benchmark("noisy-io"))
    assert noisy["verdict"] == "inconclusive"
    assert noisy["runs_needed"] > noisy["runs_used"]
    assert "would decide" in noisy["note"]


@pytest.mark.parametrize("ratio", [1.01, 0.995, 1.03, 0.97])
def test_runs_needed_shrinks_the_interval_to_the_deciding_edge(ratio: float) -> None:
    """Inside the band the interval must shrink to the distance from log G to the band edge
    (then it fits inside the band: "no change"); outside it, to the distance from log G to 0
    (then it excludes 1). At the advised number of runs the planned half-width reaches that
    distance, and one run fewer does not."""
    from duet_bench.analysis.runs_needed import runs_needed
    from duet_stats.planning import ci_half_width, variance_components

    log_ratios = np.random.default_rng(7).normal(math.log(ratio), 0.3, size=(5, 20))
    settings = AnalysisSettings(threshold=0.02)
    needed = runs_needed(log_ratios, ratio=ratio, settings=settings)
    assert needed is not None
    band, distance = math.log1p(0.02), abs(math.log(ratio))
    target = band - distance if distance < band else distance
    comps = variance_components(log_ratios)

    def half(k: int) -> float:
        return ci_half_width(comps, runs=k, iterations=20, confidence=settings.confidence)

    assert needed > 2
    assert half(needed) <= target < half(needed - 1), (needed, target)


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


# -- the metric: wall time or CPU time ------------------------------------------------------------


def _two_metric_benchmark(
    *,
    work_ns: float,
    slower: float,
    runs: int = 10,
    iterations: int = 20,
    busy: float = 1.0,
    preempted: float = 0.0,
    wall_slower: float | None = None,
    seed: int = 3,
) -> results.BenchmarkRecord:
    """Synthetic runs of a benchmark whose code needs ``work_ns`` of CPU per iteration (the
    candidate ``slower`` times that, within 0.3% noise). Each side's iteration lasts
    ``work / busy`` on its own (``busy`` < 1: it sleeps for the rest); with probability
    ``preempted`` another process takes the CPU for 0-100% of the iteration on one side (it
    waits on the run queue: wall time grows, CPU time does not)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(runs):
        sides = {}
        for name, factor in (("baseline", 1.0), ("candidate", slower)):
            cpu = work_ns * factor * rng.lognormal(0, 0.003, iterations)
            sleep = cpu * (1 / busy - 1)
            if name == "candidate" and wall_slower is not None:
                sleep = sleep + work_ns * (wall_slower - slower) / busy
            hit = rng.random(iterations) < preempted
            runq = np.where(hit, cpu * rng.uniform(0, 1.0, iterations), 0.0)
            wall = cpu + sleep + runq
            sides[name] = {
                "iterations_ns": [int(x) for x in wall],
                "iteration_cpu_ns": [int(x) for x in cpu],
                "iteration_runq_ns": [int(x) for x in runq],
                "iteration_nivcsw": [int(h) for h in hit],
            }
        out.append({"index": r, "status": "ok", **sides})
    doc = results.from_dict(
        {"schema": "duet-results/2", "benchmarks": [{"name": "b", "runs": out}]}
    )
    return doc.benchmarks[0]


def test_a_file_of_schema_1_is_analysed_on_wall_time_and_says_cpu_is_missing() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings(reps=500))
    a = _stored(doc.benchmark("parse-json"))
    assert a["metric"] == "wall"
    assert "no per-iteration CPU time recorded" in a["metric_reason"]
    assert a["metrics"]["cpu"] == {"missing": a["metric_reason"].removeprefix("wall time: ")}
    assert a["interference"] is None
    # Asking for CPU time explicitly still analyses wall time, and says why.
    cpu = analyze_benchmark(doc.benchmark("parse-json"), AnalysisSettings(metric="cpu", reps=500))
    assert cpu.metric == "wall"
    assert cpu.metric_reason is not None
    assert cpu.metric_reason.startswith("wall time: CPU time was asked for, but")


def test_auto_takes_cpu_time_when_another_process_preempts_cpu_bound_sides() -> None:
    record = _two_metric_benchmark(work_ns=20e6, slower=1.02, preempted=0.6)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert a.metric == "cpu"
    assert a.metric_reason is not None
    assert a.metric_reason.startswith("CPU time: both sides CPU-bound")
    # CPU time sees the 2% through the preemptions; wall time cannot tell.
    assert a.verdict == "regression"
    assert a.ci_low is not None
    assert a.ci_high is not None
    assert 1.01 < a.ci_low < 1.02 < a.ci_high < 1.03
    wall = a.metrics["wall"]
    assert wall.verdict == "inconclusive"
    # About 60% of iterations were hit on each side: nearly 84% had either side waiting.
    assert a.interference is not None
    assert 0.7 < a.interference.share < 0.95
    assert a.interference.runq_ns > 0
    # The side columns are the geometric means of the deciding metric: they divide to the ratio.
    assert a.baseline is not None
    assert a.candidate is not None
    assert a.candidate.geomean_ns / a.baseline.geomean_ns == pytest.approx(a.ratio, rel=2e-3)
    stored = a.to_dict()
    assert stored["metrics"]["wall"]["verdict"] == "inconclusive"
    assert stored["interference"]["share"] == a.interference.share
    assert stored["disagreement"] is None  # inconclusive against a change: no contradiction


def test_the_interference_block_sums_every_iteration_of_both_sides() -> None:
    from duet_bench.analysis.interference import INTERFERED_RUNQ_SHARE

    record = _two_metric_benchmark(work_ns=20e6, slower=1.02, preempted=0.3, runs=4, iterations=6)
    a = analyze_benchmark(record, AnalysisSettings(reps=200))
    assert a.interference is not None
    wall = np.array(
        [[r.side(s).iterations_ns for s in ("baseline", "candidate")] for r in record.runs]
    )
    runq = np.array(
        [[r.side(s).iteration_runq_ns for s in ("baseline", "candidate")] for r in record.runs]
    )
    assert a.interference.iterations == 4 * 6
    assert a.interference.wall_ns == int(wall.sum())
    assert a.interference.runq_ns == int(np.minimum(runq, wall).sum())
    hit = (runq > INTERFERED_RUNQ_SHARE * wall).any(axis=1)
    assert a.interference.interfered == int(hit.sum()) > 0


def test_auto_keeps_wall_time_for_code_that_sleeps() -> None:
    record = _two_metric_benchmark(work_ns=2e6, slower=1.0, busy=0.3, wall_slower=1.10)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert a.metric == "wall"
    assert a.metric_reason is not None
    assert "on a CPU or waiting for one" in a.metric_reason
    # The candidate sleeps 10% more: only wall time sees it, and it decides.
    assert a.verdict == "regression"
    assert a.metrics["cpu"].verdict == "no change"
    assert a.disagreement is not None
    assert a.disagreement.startswith("CPU time says no change")
    assert "time off the CPU" in a.disagreement
    assert a.busy_share["baseline"] == pytest.approx(0.3, abs=0.01)


def test_a_forced_metric_decides_and_the_other_is_still_shown() -> None:
    record = _two_metric_benchmark(work_ns=2e6, slower=1.0, busy=0.3, wall_slower=1.10)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000, metric="cpu"))
    assert a.metric == "cpu"
    assert a.metric_reason == "CPU time, as configured"
    assert a.verdict == "no change"
    assert a.disagreement is not None
    assert a.disagreement.startswith("wall time says regression (+10.0%) but CPU time says")


def test_analyze_keeps_the_recorded_metric_unless_told(tmp_path: Path) -> None:
    import dataclasses
    import subprocess
    import sys

    record = _two_metric_benchmark(work_ns=2e6, slower=1.0, busy=0.3, wall_slower=1.10)
    analysed = dataclasses.replace(
        record, analysis=analyze_benchmark(record, AnalysisSettings(metric="cpu")).to_block()
    )
    path = tmp_path / "r.json"
    results.save(results.ResultsDocument(benchmarks=(analysed,)), path)

    def metric(*extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "duet_bench", "analyze", str(path), "--format", "json", *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        return str(json.loads(done.stdout)["benchmarks"][0]["analysis"]["metric"])

    assert metric() == "cpu"
    assert metric("--metric", "auto") == "wall"


def test_auto_takes_wall_less_run_queue_delay_for_sleeping_code_another_process_delays() -> None:
    record = _two_metric_benchmark(
        work_ns=2e6, slower=1.0, busy=0.5, wall_slower=1.05, preempted=0.6
    )
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert a.metric == "wall-runq"
    assert a.metric_reason is not None
    assert a.metric_reason.startswith("wall time less run-queue delay: the baseline and the")
    assert "another process delayed a side in" in a.metric_reason
    # The 5% more sleeping is found; the preemptions make wall time itself much wider.
    assert a.verdict == "regression"
    assert a.ci_low is not None
    assert a.ci_high is not None
    wall = a.metrics["wall"]
    assert wall.ci_low is not None
    assert wall.ci_high is not None
    assert (a.ci_high - a.ci_low) * 3 < wall.ci_high - wall.ci_low
    assert a.to_dict()["metrics"]["wall-runq"]["verdict"] == "regression"


def test_without_run_queue_figures_wall_less_runq_is_missing_and_says_why() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings(reps=500))
    a = _stored(doc.benchmark("parse-json"))
    assert a["metrics"]["wall-runq"] == {"missing": "no per-iteration run-queue delay recorded"}
    forced = analyze_benchmark(
        doc.benchmark("parse-json"), AnalysisSettings(metric="wall-runq", reps=500)
    )
    assert forced.metric == "wall"
    assert forced.metric_reason == (
        "wall time: wall time less run-queue delay was asked for, but no per-iteration "
        "run-queue delay recorded"
    )


def test_cores_that_differ_are_noticed_in_the_benchmarks_own_runs() -> None:
    """The report of a per-run plot with two groups (baseline on CPU 1 at 1.34-1.41, on CPU 0
    at 1.10-1.13): run and compare say it, not only calibrate."""
    rng = np.random.default_rng(9)
    runs = []
    for r in range(10):
        on_first = r % 2 == 0
        core = 1.12 if on_first else 0.95  # candidate relatively slower when the baseline is on 0
        a = rng.lognormal(np.log(10e6), 0.005, 20)
        b = a * 1.15 * core * rng.lognormal(0, 0.005, 20)
        runs.append(
            {
                "index": r,
                "status": "ok",
                "baseline": {"iterations_ns": [int(x) for x in a], "cores": [0 if on_first else 1]},
                "candidate": {
                    "iterations_ns": [int(x) for x in b],
                    "cores": [1 if on_first else 0],
                },
            }
        )
    doc = results.from_dict(
        {"schema": "duet-results/2", "benchmarks": [{"name": "c", "runs": runs}]}
    )
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=2000))
    assert a.side_asymmetry is not None
    assert (a.side_asymmetry.cpu_a, a.side_asymmetry.cpu_b) == (0, 1)
    assert a.side_asymmetry.estimate.ratio == pytest.approx(math.sqrt(1.12 / 0.95), rel=0.01)
    # results.json stores the figures, not calibrate's judgement of them.
    stored = a.to_dict()["side_asymmetry"]
    assert set(stored) == {"cpu_a", "cpu_b", "ratio", "ci_low", "ci_high", "runs_a", "runs_b"}
    assert stored["ratio"] == a.side_asymmetry.estimate.ratio
    assert a.note is not None
    assert "the cores differ: runs with the baseline on CPU 0 gave 1.29, on CPU 1 1.09;" in a.note
    assert "on CPU 1 against CPU 0" in a.note
    # Balanced alternation: the ratio itself is the geometric mean of the two groups.
    assert a.ratio == pytest.approx(1.15 * math.sqrt(1.12 * 0.95), rel=0.01)


def test_equal_cores_give_no_note() -> None:
    record = _two_metric_benchmark(work_ns=20e6, slower=1.02)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert a.note is None or "cores differ" not in a.note


# -- winsorization skipped in short runs ----------------------------------------------------------


def _runs_with_an_outlier(iterations: int) -> results.BenchmarkRecord:
    """10 runs, each with one candidate iteration 3x as long: what the 20% rule replaces."""
    rng = np.random.default_rng(5)
    runs = []
    for r in range(10):
        a = rng.lognormal(np.log(1e6), 0.01, iterations)
        b = a * rng.lognormal(0, 0.01, iterations)
        b[r % iterations] *= 3
        runs.append(
            {
                "index": r,
                "status": "ok",
                "baseline": {"iterations_ns": [int(x) for x in a]},
                "candidate": {"iterations_ns": [int(x) for x in b]},
            }
        )
    doc = results.from_dict(
        {"schema": "duet-results/1", "benchmarks": [{"name": "o", "runs": runs}]}
    )
    return doc.benchmarks[0]


def test_short_runs_say_that_they_were_not_winsorized() -> None:
    """``winsorized: 0`` below MIN_ITERATIONS is the guard, not a finding: the note says so."""
    from duet_stats.winsor import MIN_ITERATIONS

    short = analyze_benchmark(_runs_with_an_outlier(MIN_ITERATIONS - 1), AnalysisSettings())
    assert short.winsorized == 0
    assert short.note is not None
    assert f"outliers left in: runs of {MIN_ITERATIONS - 1} iterations are too short" in short.note
    long = analyze_benchmark(_runs_with_an_outlier(MIN_ITERATIONS), AnalysisSettings())
    assert long.winsorized == 10
    assert long.note is None or "outliers" not in long.note
    # Asked not to winsorize: nothing was skipped, nothing to say.
    off = analyze_benchmark(
        _runs_with_an_outlier(MIN_ITERATIONS - 1), AnalysisSettings(winsorize=False)
    )
    assert off.note is None or "outliers" not in off.note


def _estimate(metric: str, ratio: float, verdict_: str) -> Any:
    from duet_bench.analysis.model import MetricEstimate, SideSummary

    side = SideSummary(geomean_ns=1e6, median_ns=1e6, mean_ns=1e6)
    return MetricEstimate(
        metric=metric,  # type: ignore[arg-type]
        ratio=ratio,
        ci_low=ratio * 0.99,
        ci_high=ratio * 1.01,
        verdict=verdict_,  # type: ignore[arg-type]
        winsorized=0,
        baseline=side,
        candidate=side,
        log_ratios=np.zeros((2, 2)),
    )


@pytest.mark.parametrize(
    ("wall", "cpu", "explained"),
    [
        ("regression", "no change", True),  # a change only wall time shows: time off the CPU
        ("no change", "regression", False),  # CPU time higher, wall not: not time off the CPU
        ("improvement", "regression", False),  # opposite changes: no such explanation either
    ],
)
def test_a_disagreement_is_put_down_to_time_off_the_cpu_only_when_wall_alone_changed(
    wall: str, cpu: str, explained: bool
) -> None:
    from duet_bench.analysis.choice import disagreement

    ratios = {"regression": 1.1, "improvement": 0.9, "no change": 1.0}
    estimates = {
        "wall": _estimate("wall", ratios[wall], wall),
        "cpu": _estimate("cpu", ratios[cpu], cpu),
    }
    for chosen in ("cpu", "wall"):
        text = disagreement(estimates, chosen)  # type: ignore[arg-type]
        assert text is not None
        assert "which decided" in text, text
        assert ("time off the CPU" in text) is explained, (chosen, text)


def test_the_runs_needed_note_at_the_practical_limit_still_gives_the_number() -> None:
    from duet_bench.analysis.runs_needed import PRACTICAL_RUNS, runs_needed_note

    at = runs_needed_note(PRACTICAL_RUNS, runs_used=10, threshold=0.02)
    assert at is not None
    assert at.startswith(f"about {PRACTICAL_RUNS} runs in all"), at
    above = runs_needed_note(1001, runs_used=10, threshold=0.02)  # docs: above 1,000 runs
    assert above is not None
    assert "practical number of runs" in above, above


def test_runs_needed_works_from_two_runs_and_two_iterations() -> None:
    from duet_bench.analysis.runs_needed import runs_needed

    rng = np.random.default_rng(7)
    log_ratios = rng.normal(0.01, 0.02, size=(6, 2))
    needed = runs_needed(log_ratios, ratio=1.01, settings=AnalysisSettings())
    assert needed is not None
    assert needed > 0
    assert runs_needed(log_ratios[:, :1], ratio=1.01, settings=AnalysisSettings()) is None
    two_runs = rng.normal(0.01, 0.02, size=(2, 5))
    assert runs_needed(two_runs, ratio=1.01, settings=AnalysisSettings()) is not None
    assert runs_needed(two_runs[:1], ratio=1.01, settings=AnalysisSettings()) is None
