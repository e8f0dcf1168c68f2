"""The analysis of crossover runs: the CPU assignment from ``iteration_cpus``, the balanced run
ratios for every metric, the core difference from inside the runs, and old files unchanged."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duet_bench import results
from duet_bench.analysis import AnalysisSettings, analyze_benchmark, analyze_document, rng_for
from duet_bench.analysis.sides import CoreDifference
from duet_stats.crossover import core_contrast, crossover_runs
from duet_stats.ratio import duet_ratio

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def _record(
    *,
    runs: int = 10,
    iterations: int = 21,
    ratio: float = 1.05,
    core: float = 1.2,
    crossover: str | None = "iteration",
    cpus: bool = True,
    seed: int = 9,
) -> results.BenchmarkRecord:
    """Duet runs on CPUs 2 and 5, CPU 5 ``core`` times slower, the sides changing CPUs at every
    iteration (baseline on ``pair[(r + i) % 2]``); wall and CPU time alike."""
    rng = np.random.default_rng(seed)
    pair = (2, 5)
    out: list[dict[str, Any]] = []
    for r in range(runs):
        base_cpus = [pair[(r + i) % 2] for i in range(iterations)]
        cand_cpus = [pair[1 - (r + i) % 2] for i in range(iterations)]
        shared = rng.lognormal(np.log(10e6), 0.05, iterations)
        a = shared * rng.lognormal(0, 0.005, iterations)
        b = shared * ratio * rng.lognormal(0, 0.005, iterations)
        a = np.where(np.array(base_cpus) == 5, a * core, a)
        b = np.where(np.array(cand_cpus) == 5, b * core, b)

        def side(x: np.ndarray, where: list[int]) -> dict[str, Any]:
            ns = [int(v) for v in x]
            extra: dict[str, Any] = {"iteration_cpus": where} if cpus else {}
            return {"iterations_ns": ns, "iteration_cpu_ns": ns, "cores": [where[0]], **extra}

        out.append(
            {
                "index": r,
                "status": "ok",
                "baseline": side(a, base_cpus),
                "candidate": side(b, cand_cpus),
            }
        )
    settings = {} if crossover is None else {"crossover": crossover}
    doc = results.from_dict(
        {
            "schema": "duet-results/2",
            "benchmarks": [{"name": "x", "runs": out, "settings": settings}],
        }
    )
    return doc.benchmarks[0]


def test_crossover_runs_are_balanced_in_every_metric_and_name_the_core_difference() -> None:
    record = _record()
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    # 21 iterations: one assignment has 11, the other 10; equal weighting cancels the 20%.
    assert a.ratio == pytest.approx(1.05, rel=0.003)
    assert a.ci_low is not None
    assert a.ci_high is not None
    assert a.ci_low < 1.05 < a.ci_high
    assert a.ci_high - a.ci_low < 0.01  # the core difference did not widen it
    assert set(a.metrics) == {"wall", "cpu"}
    for m in a.metrics.values():
        assert m.ratio == pytest.approx(1.05, rel=0.003)
        assert m.assignment is not None
    assert isinstance(a.side_asymmetry, CoreDifference)
    assert (a.side_asymmetry.cpu_a, a.side_asymmetry.cpu_b) == (2, 5)
    assert a.side_asymmetry.contrast.ratio == pytest.approx(1.2, rel=0.003)
    stored = a.to_dict()
    assert stored["design"] == {
        "crossover": "iteration",
        "estimate": "assignment-balanced",
        "single_assignment_runs": 0,
        "clashes": 0,
    }
    assert stored["side_asymmetry"]["estimate"] == "within-run"
    assert stored["side_asymmetry"]["runs"] == 10
    assert a.note is not None
    assert "the cores differ: the same code runs 20.0% slower on CPU 5 than on CPU 2" in a.note


def test_the_estimate_is_the_mean_of_the_balanced_run_ratios() -> None:
    """By hand: the analysis's wall ratio is exp(mean over runs of (m0 + m1) / 2)."""
    record = _record(runs=6, iterations=5)
    ok = record.ok_runs()
    a = np.array([r.baseline.iterations_ns for r in ok], dtype=np.float64)
    b = np.array([r.candidate.iterations_ns for r in ok], dtype=np.float64)
    assignment = np.array([[c == 5 for c in r.baseline.iteration_cpus or ()] for r in ok])
    log_s = np.log(b / a)
    by_hand = []
    for row, on_b in zip(log_s, assignment, strict=True):
        by_hand.append((row[~on_b].mean() + row[on_b].mean()) / 2)
    analysis = analyze_benchmark(record, AnalysisSettings(reps=500))
    assert analysis.ratio == pytest.approx(math.exp(float(np.mean(by_hand))), rel=1e-12)
    # A plain mean keeps a fifth of the core difference in every run (3 iterations under one
    # assignment, 2 under the other), alternately up and down: it spreads the runs.
    plain = log_s.mean(axis=1)
    assert np.std(plain) > 5 * np.std(by_hand)


def test_a_file_without_iteration_cpus_analyses_exactly_as_before() -> None:
    """The same runs without the per-iteration CPUs (an old file): the plain duet estimate,
    the between-run asymmetry, and no ``design`` key in the stored analysis."""
    record = _record(cpus=False, crossover=None)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    ok = record.ok_runs()
    base = np.array([r.baseline.iterations_ns for r in ok], dtype=np.float64)
    cand = np.array([r.candidate.iterations_ns for r in ok], dtype=np.float64)
    settings = AnalysisSettings(reps=2000)
    today = duet_ratio(
        base,
        cand,
        confidence=settings.confidence,
        reps=settings.reps,
        method=settings.interval,
        winsorize=settings.winsorize,
        rng=rng_for("x", settings.seed),
    )
    assert a.metrics["wall"].ratio == today.ratio
    assert (a.metrics["wall"].ci_low, a.metrics["wall"].ci_high) == (today.ci_low, today.ci_high)
    assert a.metrics["wall"].assignment is None
    assert "design" not in a.to_dict()
    assert not isinstance(a.side_asymmetry, CoreDifference)


def test_the_committed_fixture_keeps_its_keys() -> None:
    doc = analyze_document(results.load(FIXTURE), AnalysisSettings(reps=500))
    for b in doc.benchmarks:
        assert b.analysis is not None
        stored = b.analysis.to_dict()
        assert "design" not in stored
        asym = stored["side_asymmetry"]
        if asym is not None:
            assert set(asym) == {"cpu_a", "cpu_b", "ratio", "ci_low", "ci_high", "runs_a", "runs_b"}


def test_a_side_that_shared_the_other_sides_cpu_is_noted() -> None:
    record = _record(runs=6, iterations=20)
    runs = list(record.runs)
    first = runs[0]
    cand = list(first.candidate.iteration_cpus or ())
    cand[3] = (first.baseline.iteration_cpus or ())[3]
    runs[0] = replace(first, candidate=replace(first.candidate, iteration_cpus=tuple(cand)))
    a = analyze_benchmark(replace(record, runs=tuple(runs)), AnalysisSettings(reps=500))
    assert a.note is not None
    # In plain words: which side left the CPU it was moved to (issue 33, finding 3).
    assert "the candidate pinned itself to CPU" in a.note
    assert "In 1 iteration(s) both versions ran on one CPU at the same time" in a.note
    assert a.to_dict()["design"]["clashes"] == 1


def test_a_run_without_cpus_falls_back_to_plain_means_and_says_so() -> None:
    record = _record(runs=6, iterations=20)
    runs = list(record.runs)
    runs[2] = replace(runs[2], candidate=replace(runs[2].candidate, iteration_cpus=None))
    a = analyze_benchmark(replace(record, runs=tuple(runs)), AnalysisSettings(reps=500))
    assert a.note is not None
    assert "run 2 did not record the CPU of every iteration on both sides" in a.note
    assert a.to_dict()["design"]["estimate"] == "run-mean"
    assert a.metrics["wall"].assignment is None


def test_the_per_run_design_with_cpus_recorded_is_todays_estimate() -> None:
    """CPUs recorded but fixed for each run (``crossover = "run"``): every run falls back to its
    plain mean, the asymmetry comes from between the runs, and the design says so."""
    record = _record(runs=8, iterations=20, crossover="run")
    runs = []
    for r in record.runs:
        base = r.baseline.iteration_cpus or ()
        cand = r.candidate.iteration_cpus or ()
        runs.append(
            replace(
                r,
                baseline=replace(r.baseline, iteration_cpus=(base[0],) * len(base)),
                candidate=replace(r.candidate, iteration_cpus=(cand[0],) * len(cand)),
            )
        )
    per_run = replace(record, runs=tuple(runs))
    a = analyze_benchmark(per_run, AnalysisSettings(reps=500))
    plain = analyze_benchmark(
        replace(
            per_run,
            runs=tuple(
                replace(
                    r,
                    baseline=replace(r.baseline, iteration_cpus=None),
                    candidate=replace(r.candidate, iteration_cpus=None),
                )
                for r in per_run.runs
            ),
        ),
        AnalysisSettings(reps=500),
    )
    assert a.ratio == plain.ratio
    assert (a.ci_low, a.ci_high) == (plain.ci_low, plain.ci_high)
    assert a.to_dict()["design"] == {
        "crossover": "run",
        "estimate": "assignment-balanced",
        "single_assignment_runs": 8,
        "clashes": 0,
    }
    assert not isinstance(a.side_asymmetry, CoreDifference)


def test_balanced_runs_match_the_stats_function() -> None:
    record = _record(runs=5, iterations=7)
    a = analyze_benchmark(record, AnalysisSettings(reps=500, winsorize=False))
    m = a.metrics["wall"]
    assert m.assignment is not None
    expected = crossover_runs(m.log_ratios, m.assignment, winsorize="off").log_run_ratios
    assert m.ratio == pytest.approx(math.exp(float(expected.mean())), rel=1e-12)


def test_the_running_estimate_weighs_the_assignments_equally() -> None:
    from duet_bench.analysis import running_estimate

    # 3 runs of 5 iterations: a plain mean would keep a fifth of the 20% in each run, and with
    # runs 0 and 2 starting on the same CPU it would not cancel (1.05 * 1.2 ** (1/15) = 1.063).
    record = _record(runs=3, iterations=5)
    assert running_estimate(record, "wall") == "ratio 1.05 so far (wall time)"


def test_runs_needed_does_not_count_the_swing_between_the_cpus() -> None:
    """A 3% change near the 2% threshold on CPUs 20% apart: planned from the raw log ratios the
    +-D swing would count as iteration noise (S_X^2 about 0.033 against about 1e-4 left by the
    design) and ask for several times the runs the balanced estimator needs."""
    from duet_bench.analysis.runs_needed import runs_needed_of

    settings = AnalysisSettings(reps=500)
    chosen = analyze_benchmark(_record(ratio=1.03), settings).metrics["wall"]
    undecided = replace(chosen, verdict="inconclusive")
    centred = runs_needed_of(undecided, settings)
    raw = runs_needed_of(replace(undecided, assignment=None), settings)
    assert centred is not None
    assert raw is not None
    assert centred * 3 < raw, (centred, raw)


def test_the_per_run_plot_weighs_the_two_assignments_as_the_estimate_does() -> None:
    """A/A on a pair whose second CPU is 50% slower, 21 iterations per run: one assignment has 11
    iterations, the other 10, so a run's plain mean leans 1.5^(±1/21) (about 1.9%) one way. The
    runs plot draws each run as the analysis weighs it, at 1 within the side noise (about 0.3%;
    the data are seeded, so the test is deterministic)."""
    from duet_bench.report.plot_benchmark import runs_figure

    record = _record(runs=4, ratio=1.0, core=1.5)
    analysed = analyze_document(
        results.ResultsDocument(benchmarks=(record,)), AnalysisSettings(reps=200)
    ).benchmarks[0]
    figure = runs_figure(analysed)
    points = [
        float(y)
        for line in figure.axes[0].get_lines()
        if line.get_marker() not in ("None", "", None)
        for y in line.get_ydata()
    ]
    assert len(points) == 4
    assert all(abs(y - 1.0) < 0.004 for y in points), points
    a, b = (
        np.array([r.baseline.iterations_ns for r in record.runs]),
        np.array([r.candidate.iterations_ns for r in record.runs]),
    )
    plain = np.exp(np.mean(np.log(b / a), axis=1))
    assert all(abs(y - 1.0) > 0.012 for y in plain), f"the test needs biased plain means: {plain}"


#: A seed of :func:`_processes` with 5 runs where the bootstrap over runs alone is fooled.
SEED_FOOLED = 14

#: Per-process times of a layout-sensitive benchmark (issue 29's sort, in µs): each process lands
#: in one of these modes at random, whatever the CPU.
_MODES_US = np.array([50, 57, 65, 75, 100, 110, 135], dtype=np.float64)


def _processes(
    *, runs: int, iterations: int = 30, core: float = 1.0, kind: str = "command", seed: int
) -> results.BenchmarkRecord:
    """An A/A of a benchmark run as a process per iteration: both sides draw each process's mode
    from :data:`_MODES_US` independently (1% noise on top), crossover on CPUs 0 and 1, and CPU 1
    ``core`` times slower."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for r in range(runs):
        base_cpus = [(r + i) % 2 for i in range(iterations)]
        cand_cpus = [1 - c for c in base_cpus]

        def side(where: list[int]) -> dict[str, Any]:
            t = rng.choice(_MODES_US, iterations) * 1e3 * rng.lognormal(0, 0.01, iterations)
            t = np.where(np.array(where) == 1, t * core, t)
            ns = [int(v) for v in t]
            return {
                "iterations_ns": ns,
                "iteration_cpu_ns": ns,
                "cores": [where[0]],
                "iteration_cpus": where,
            }

        out.append(
            {"index": r, "status": "ok", "baseline": side(base_cpus), "candidate": side(cand_cpus)}
        )
    doc = results.from_dict(
        {
            "schema": "duet-results/2",
            "benchmarks": [
                {"name": "sort", "kind": kind, "runs": out, "settings": {"crossover": "iteration"}}
            ],
        }
    )
    return doc.benchmarks[0]


def test_a_contrast_within_the_noise_between_processes_is_not_a_core_difference() -> None:
    """200 A/A data sets of 3 runs x 30 processes whose times jump between 50 and 135 µs, equal
    cores: the known answer is "no core difference" in every one.

    The 99% bootstrap interval over 3 runs alone excludes 1 in 39 of them (20%); with the test
    against the noise within each assignment at the same 1% level, 4 do, and the test allows
    10 (5%). The data come from fixed seeds, so the count is exact (no chance failure); with
    fresh seeds the test's own level (1.4% measured over 1,000 such data sets) would put 10 or
    more of 200 at a probability below 0.1%."""
    alarms = 0
    for seed in range(200):
        record = _processes(runs=3, seed=seed)
        ok = record.ok_runs()
        base = np.array([r.baseline.iterations_ns for r in ok], dtype=np.float64)
        cand = np.array([r.candidate.iterations_ns for r in ok], dtype=np.float64)
        assignment = np.array([r.baseline.iteration_cpus or () for r in ok])
        c = core_contrast(
            np.log(cand / base), assignment, confidence=0.99, reps=500, rng=rng_for("x", seed)
        )
        assert c is not None
        alarms += bool(c.significant)
    assert alarms <= 10


def test_the_per_process_variation_is_named_in_plain_words_and_not_blamed_on_the_cores() -> None:
    """5 runs (the fewest with an interval), seed 14: the bootstrap over runs puts the contrast
    at +4.88% with a 99% interval of 1.02-1.10, which excludes 1 (the note said "the cores
    differ: ... 4.88% slower on CPU 1"); against the noise between processes p = 0.22. The cores
    are equal by construction, and the processes differ up to 2.7x (135 / 50 µs)."""
    record = _processes(runs=5, seed=SEED_FOOLED)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert isinstance(a.side_asymmetry, CoreDifference)
    c = a.side_asymmetry.contrast
    assert c.ci_low is not None
    assert c.ci_high is not None
    assert c.ci_low > 1.0 or c.ci_high < 1.0  # the bootstrap alone is fooled
    assert c.beyond_noise is False
    assert a.note is not None
    assert "cores differ" not in a.note
    assert "this benchmark's time changes up to 2.7" in a.note
    assert "from one process to the next" in a.note
    assert "more iterations per run narrow it" in a.note


def test_in_process_iterations_get_no_per_process_note() -> None:
    record = _processes(runs=5, seed=SEED_FOOLED, kind="python")
    a = analyze_benchmark(record, AnalysisSettings(reps=500))
    assert a.note is None or "from one process to the next" not in a.note


def test_a_real_core_difference_stands_out_of_the_noise_between_processes() -> None:
    """CPU 1 30% slower under the same per-process noise, 10 runs: the contrast's test against
    the noise gives p < 1e-6 (|t| about 10), so the note names the cores; at this effect a miss
    has a probability below 1e-6 for any seed."""
    record = _processes(runs=10, core=1.3, seed=4)
    a = analyze_benchmark(record, AnalysisSettings(reps=2000))
    assert isinstance(a.side_asymmetry, CoreDifference)
    assert a.side_asymmetry.contrast.beyond_noise is True
    assert a.note is not None
    assert "the cores differ: the same code runs" in a.note
    assert "slower on CPU 1 than on CPU 0" in a.note


def test_the_per_process_note_when_processes_make_up_half_the_run_spread() -> None:
    """150 runs x 10 processes whose log ratios vary 10% from one process to the next, with a
    run effect of 2% on top: the processes make up about 60% of the run ratios' variance
    (``PROCESS_SHARE`` is 50%), although the runs do stand out of that noise (F test). The
    note names the processes; fixed seed, an exact answer."""
    rng = np.random.default_rng(7)
    runs, n = 150, 10
    out: list[dict[str, Any]] = []
    for r in range(runs):
        base_cpus = [(r + i) % 2 for i in range(n)]
        base = np.full(n, 1e6)
        cand = base * np.exp(rng.normal(0.0, 0.02) + rng.normal(0.0, 0.1, n))
        out.append(
            {
                "index": r,
                "status": "ok",
                "baseline": {"iterations_ns": [int(v) for v in base], "iteration_cpus": base_cpus},
                "candidate": {
                    "iterations_ns": [int(v) for v in cand],
                    "iteration_cpus": [1 - c for c in base_cpus],
                },
            }
        )
    doc = results.from_dict(
        {
            "schema": "duet-results/2",
            "benchmarks": [
                {
                    "name": "p",
                    "kind": "command",
                    "runs": out,
                    "settings": {"crossover": "iteration"},
                }
            ],
        }
    )
    record = doc.benchmarks[0]
    a = analyze_benchmark(record, AnalysisSettings(reps=500, threshold=0.005, winsorize=False))
    assert a.note is not None
    assert "from one process to the next" in a.note
