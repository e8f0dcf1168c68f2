"""The calibrator on synthetic A/A data whose components are known: it must recover them, and
its plans must deliver the interval widths they promise.

The generative model is Kalibera's additive model on the log scale, per side and run:
``log t[r, i] = mu + A[r] + S[r, i] + X[r, i]`` where ``A`` is the run effect (drawn when the
process starts), ``X`` the iteration noise of that side and ``S`` noise *shared* by both sides
of an iteration (a noisy neighbour hitting the whole machine). The log ratio of an A/A duet then
has within-run variance ``2 var X`` and run-effect variance ``2 var A``; ``S`` cancels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from duet_bench import metrics
from duet_bench.analysis import AnalysisSettings
from duet_bench.calibrate import (
    ADDITIVE_LIMIT,
    MIN_ITERATIONS,
    MIN_RUNS,
    AAData,
    Components,
    SideAsymmetry,
    aa_data,
    calibrate,
    calibrate_metrics,
    detect_warmup,
    recommend,
    width_for_runs,
)
from duet_bench.results import from_dict
from duet_stats.asymmetry import side_asymmetry

MU = math.log(2e6)  # 2 ms iterations
START_NS = 40e6  # 40 ms of process start-up per run


@dataclass
class Model:
    runs: int = 40
    iterations: int = 30
    sd_run: float = 0.01  # A
    sd_iter: float = 0.02  # X, per side
    sd_shared: float = 0.0  # S, both sides
    anti: float = 0.0  # noise that hits the sides in opposite directions
    slow_cpu1: float = 1.0  # CPU 1 is this much slower
    warmup_iterations: int = 0  # the first iterations of every run are slower ...
    warmup_slowdown: float = 1.0  # ... by this factor
    recorded_warmup: int = 0  # of which this many are recorded as warm-up
    candidate_factor: float = 1.0  # != 1: not an A/A
    seed: int = 0

    def data(self, name: str = "synthetic") -> AAData:
        rng = np.random.default_rng(self.seed)
        n = self.recorded_warmup + self.iterations
        shape = (self.runs, n)
        shared = rng.normal(0, self.sd_shared, shape)
        anti = rng.normal(0, self.anti, shape)
        cpus = tuple(0 if r % 2 == 0 else 1 for r in range(self.runs))
        warm = np.ones(n)
        warm[: self.warmup_iterations] = self.warmup_slowdown

        def side(sign: float, on_cpu: list[int]) -> np.ndarray:
            log_t = (
                MU
                + rng.normal(0, self.sd_run, (self.runs, 1))
                + shared
                + sign * anti
                + rng.normal(0, self.sd_iter, shape)
            )
            t = np.exp(log_t) * warm
            t *= np.where(np.array(on_cpu)[:, None] == 1, self.slow_cpu1, 1.0)
            return t

        base = side(1.0, list(cpus))
        cand = side(-1.0, [1 - c for c in cpus]) * self.candidate_factor
        w = self.recorded_warmup
        wall = np.stack([base.sum(axis=1), cand.sum(axis=1)], axis=1) + START_NS
        return AAData(
            name=name,
            method="duet",
            baseline_ns=base[:, w:],
            candidate_ns=cand[:, w:],
            baseline_warmup_ns=base[:, :w],
            candidate_warmup_ns=cand[:, :w],
            baseline_cpus=cpus,
            wall_ns=wall,
        )


# --------------------------------------------------------------------------------------------
# Recovering the components


def test_variance_components_are_recovered() -> None:
    m = Model(runs=300, iterations=40, sd_run=0.01, sd_iter=0.02, sd_shared=0.05)
    c = calibrate(m.data(), AnalysisSettings(reps=1000, winsorize=False))
    assert c.components is not None
    # log ratio: 2 var X within runs, 2 var A between runs (the shared noise cancels)
    assert c.components.within_run_var == pytest.approx(2 * 0.02**2, rel=0.05)
    assert c.components.run_effect_var == pytest.approx(2 * 0.01**2, rel=0.25)
    # The method's S_A^2 (docs/statistics.md, method 5; [KBT] formula 4) still holds var X / n
    expected_sa = 2 * 0.01**2 + 2 * 0.02**2 / 40
    assert c.components.between_run_var == pytest.approx(expected_sa, rel=0.25)
    assert c.components.between_run_var > c.components.run_effect_var
    # each side alone: its own run effect and iteration noise, plus the shared noise
    assert c.side_components is not None
    assert c.side_components.within_run_var == pytest.approx(2 * (0.02**2 + 0.05**2), rel=0.05)


def test_impact_factor_and_the_additive_model() -> None:
    # A strong run effect: runs matter much more than iterations (Kalibera's FFT case).
    c = calibrate(Model(sd_run=0.05, sd_iter=0.01).data(), AnalysisSettings(reps=1000))
    ratio = c.impact_factor["log_ratio"]
    assert ratio.plain is not None
    assert ratio.plain > 3
    assert ratio.transformed == pytest.approx(1.0, abs=0.15)
    assert ratio.additive is True
    # No run effect: runs are like iterations.
    flat = calibrate(Model(sd_run=0.0, sd_iter=0.02).data(), AnalysisSettings(reps=1000))
    assert flat.impact_factor["baseline"].plain == pytest.approx(1.0, abs=0.15)
    # Not additive: the runs differ in spread, not by a shift.
    rng = np.random.default_rng(5)
    scales = rng.choice([0.002, 0.08], size=(30, 1))
    base = np.exp(MU + rng.normal(0, 1, (30, 40)) * scales)
    cand = np.exp(MU + rng.normal(0, 1, (30, 40)) * scales)
    odd = AAData("spread", "duet", base, cand, np.zeros((30, 0)), np.zeros((30, 0)), (0, 1) * 15)
    bad = calibrate(odd, AnalysisSettings(reps=1000))
    assert bad.impact_factor["log_ratio"].transformed is not None
    assert bad.impact_factor["log_ratio"].transformed > ADDITIVE_LIMIT
    assert bad.impact_factor["log_ratio"].additive is False
    assert any("additive model does not fit" in w for w in bad.warnings)


def test_more_runs_than_iterations_use_a_subset_of_runs() -> None:
    # c = floor(0.75 * 40) = 30 distinct samples of one run need more than 30 iterations:
    # the impact factor is computed on the largest random subset of runs that allows it.
    c = calibrate(
        Model(runs=40, iterations=12, sd_run=0.05, sd_iter=0.01).data(), AnalysisSettings(reps=1000)
    )
    entry = c.impact_factor["log_ratio"]
    assert entry.runs_used == 15  # floor(0.75 * 15) = 11 < 12
    assert entry.plain is not None
    assert entry.plain > 3


def test_too_few_iterations_for_the_impact_factor_is_reported_not_raised() -> None:
    c = calibrate(Model(runs=10, iterations=2).data(), AnalysisSettings(reps=1000))
    entry = c.impact_factor["baseline"]
    assert entry.plain is None
    assert entry.missing is not None
    assert "iterations" in entry.missing


# --------------------------------------------------------------------------------------------
# The A/A interval, sync gain and which method pays


def test_shared_noise_is_what_synchronisation_buys() -> None:
    c = calibrate(
        Model(sd_shared=0.05, sd_iter=0.005, sd_run=0.002).data(), AnalysisSettings(reps=2000)
    )
    assert c.contains_one is True
    assert c.aa_verdict == "no change"
    assert c.sync_gain is not None
    assert c.sync_gain > 2
    assert c.method_pays == "duet"
    assert c.recommended is not None
    assert c.recommended.method == "duet"
    assert "narrows the interval" in c.method_reason


def test_when_sides_disturb_each_other_sequential_pays() -> None:
    # Noise that hits the sides in opposite directions (two copies competing for memory
    # bandwidth): pairing the sides that ran together makes the ratio worse, not better.
    c = calibrate(Model(anti=0.03, sd_iter=0.005, sd_run=0.002).data(), AnalysisSettings(reps=2000))
    assert c.sync_gain is not None
    assert c.sync_gain < 1
    assert c.method_pays == "sequential"
    assert "simultaneous runs measure worse than sequential ones" in c.method_reason
    assert "--method sequential" in c.method_reason
    assert c.recommended is not None
    assert c.recommended.method == "sequential"
    assert c.recommended.recommendation().method == "sequential"


def test_accuracy_gain_against_a_measured_sequential_aa() -> None:
    duet = Model(sd_shared=0.05, sd_iter=0.005, sd_run=0.001, seed=1).data()
    # Sequential runs do not share noise between the sides: the shared part becomes noise.
    seq_model = Model(sd_shared=0.0, sd_iter=math.hypot(0.05, 0.005), sd_run=0.001, seed=2)
    seq = seq_model.data()
    seq = AAData(
        seq.name, "sequential", seq.baseline_ns, seq.candidate_ns, seq.baseline_warmup_ns,
        seq.candidate_warmup_ns, seq.baseline_cpus, None, seq.wall_ns,
    )  # fmt: skip
    c = calibrate(duet, AnalysisSettings(reps=2000), sequential=seq)
    assert c.sequential is not None
    assert c.sequential.accuracy_gain is not None
    assert c.sequential.accuracy_gain > 2
    assert c.method_pays == "duet"
    assert "accuracy gain" in c.method_reason
    # Reversed: a quiet sequential measurement against a duet whose sides fight.
    fighting = Model(anti=0.04, sd_iter=0.005, seed=3).data()
    quiet = Model(sd_iter=0.002, seed=4).data()
    quiet = AAData(
        quiet.name, "sequential", quiet.baseline_ns, quiet.candidate_ns,
        quiet.baseline_warmup_ns, quiet.candidate_warmup_ns, quiet.baseline_cpus, None,
        quiet.wall_ns,
    )  # fmt: skip
    c = calibrate(fighting, AnalysisSettings(reps=2000), sequential=quiet)
    assert c.sequential is not None
    assert c.sequential.accuracy_gain is not None
    assert c.sequential.accuracy_gain < 1
    assert c.method_pays == "sequential"
    assert c.recommended is not None
    assert c.recommended.method == "sequential"
    # The plan for the sequential method uses the sequential measurement's components, and
    # its machine time counts both sides one after the other.
    assert c.plan_components is not None
    assert c.plan_components.within_run_var == pytest.approx(2 * 0.002**2, rel=0.2)


def test_the_report_of_a_written_sequential_plan_does_not_say_method_was_left_out() -> None:
    # --write writes method (config.RECOMMENDATION_KEYS); the report used to add that
    # method = "sequential" was not written and had to be added by hand.
    from duet_bench.report.calibration import render_text

    c = calibrate(Model(anti=0.03, sd_iter=0.005, sd_run=0.002).data(), AnalysisSettings(reps=1000))
    assert c.recommended is not None
    assert c.recommended.method == "sequential"
    text = render_text(c, {}, written="duet.toml (the suite defaults)")
    assert "Written to duet.toml (the suite defaults):\n  runs = " in text
    assert '  method = "sequential"\n' in text
    assert "not written" not in text


def test_an_interval_without_1_says_so_loudly() -> None:
    c = calibrate(Model(candidate_factor=1.03, sd_iter=0.01).data(), AnalysisSettings(reps=2000))
    assert c.contains_one is False
    assert c.aa_verdict == "regression"
    assert any("EXCLUDES 1" in w and "not equivalent" in w for w in c.warnings)


# --------------------------------------------------------------------------------------------
# Side asymmetry, start-up, warm-up, skew


def test_side_asymmetry_is_measured_and_cancels_when_balanced() -> None:
    c = calibrate(
        Model(slow_cpu1=1.02, sd_iter=0.01, sd_run=0.003).data(), AnalysisSettings(reps=2000)
    )
    assert c.side_asymmetry is not None
    assert (c.side_asymmetry.cpu_a, c.side_asymmetry.cpu_b) == (0, 1)
    a = c.side_asymmetry.estimate
    assert a.ratio == pytest.approx(1.02, abs=0.004)
    assert a.ci_low is not None
    assert a.ci_high is not None
    assert a.ci_low > 1.0
    assert a.significant is True
    assert (a.runs_a, a.runs_b) == (20, 20)
    assert a.residual_bias == pytest.approx(1.0)
    assert a.share_of_run_variance is not None
    assert a.share_of_run_variance > 0.5  # most of the run-to-run variance is the core
    # balanced alternation: the A/A ratio is still 1
    assert c.ratio == pytest.approx(1.0, abs=0.003)
    assert c.contains_one is True
    assert any("CPU 1 is 2" in w and "slower than CPU 0" in w for w in c.warnings)


def test_side_asymmetry_needs_exactly_two_known_cpus_and_puts_their_numbers_back() -> None:
    log_g = np.log([1.02, 1 / 1.02, 1.02, 1 / 1.02])

    def of(cpus: tuple[int | None, ...]) -> SideAsymmetry | None:
        return SideAsymmetry.of_runs(
            log_g, cpus, confidence=0.9, reps=200, rng=np.random.default_rng(0)
        )

    assert of((3, None, 3, 7)) is None  # a run without its CPU
    assert of((3, 5, 3, 7)) is None  # three CPUs
    assert of((3, 3, 3, 3)) is None  # one CPU: nothing to compare
    a = of((7, 3, 7, 3))
    assert a is not None
    assert (a.cpu_a, a.cpu_b) == (3, 7)  # sorted: the ratio is T(CPU 7) / T(CPU 3)
    assert a.estimate == side_asymmetry(
        log_g, [False, True, False, True], confidence=0.9, reps=200, rng=np.random.default_rng(0)
    )
    assert a.estimate.ratio == pytest.approx(1 / 1.02)
    assert a.to_dict()["cpu_b"] == 7
    assert a.to_dict()["significant"] is a.estimate.significant


def test_an_unbalanced_assignment_leaves_a_residual_bias() -> None:
    data = Model(runs=10, slow_cpu1=1.02, sd_iter=0.005, sd_run=0.001).data()
    cpus = (0, 0, 0, 0, 0, 0, 0, 1, 1, 1)  # 7 runs with the baseline on CPU 0
    slow = np.where(np.array(cpus) == 1, 1.02, 1.0)[:, None]
    base = data.baseline_ns / np.where(np.array(data.baseline_cpus) == 1, 1.02, 1.0)[:, None]
    cand = data.candidate_ns / np.where(np.array(data.baseline_cpus) == 0, 1.02, 1.0)[:, None]
    lopsided = AAData(
        "lopsided", "duet", base * slow, cand * (1.02 / slow), data.baseline_warmup_ns,
        data.candidate_warmup_ns, cpus,
    )  # fmt: skip
    side = calibrate(lopsided, AnalysisSettings(reps=2000)).side_asymmetry
    assert side is not None
    assert side.estimate.residual_bias == pytest.approx(1.02 ** (4 / 10), abs=0.003)


def test_startup_cost_and_formula_8() -> None:
    c = calibrate(
        Model(sd_run=0.01, sd_iter=0.03, sd_shared=0.1).data(), AnalysisSettings(reps=1000)
    )
    assert c.method_pays == "duet"
    assert c.startup_ns == pytest.approx(START_NS, rel=1e-6)
    assert c.startup_iterations == pytest.approx(START_NS / c.mean_iteration_ns)
    assert c.mean_iteration_ns == pytest.approx(2e6, rel=0.1)
    rec = c.recommended
    assert rec is not None
    assert c.components is not None
    assert c.startup_iterations is not None
    w = c.startup_iterations + rec.warmup
    n_star = math.ceil(math.sqrt(w * c.components.within_run_var / c.components.run_effect_var))
    assert rec.optimal_iterations == n_star
    assert rec.iterations == max(n_star, MIN_ITERATIONS)
    assert rec.run_cost_iterations == pytest.approx(w)
    assert rec.machine_time_ns == pytest.approx(
        rec.runs * (START_NS + (rec.warmup + rec.iterations) * c.mean_iteration_ns), rel=1e-9
    )


@pytest.mark.parametrize(("true_w", "slowdown"), [(0, 1.0), (1, 1.3), (4, 1.15), (7, 1.5)])
def test_warmup_is_found(true_w: int, slowdown: float) -> None:
    for seed in range(5):
        data = Model(warmup_iterations=true_w, warmup_slowdown=slowdown, seed=seed).data()
        series = np.vstack([data.baseline_ns, data.candidate_ns])
        found = detect_warmup(series, tolerance=math.log1p(0.02) / 4)
        assert found.iterations == true_w, f"seed {seed}"
        assert not found.trending
        if true_w:
            assert found.slowdown == pytest.approx(slowdown, rel=0.02)


def test_recorded_warmup_counts_and_the_rest_is_left_out_of_the_analysis() -> None:
    m = Model(warmup_iterations=5, warmup_slowdown=1.3, recorded_warmup=2, iterations=30)
    c = calibrate(m.data(), AnalysisSettings(reps=1000))
    assert c.warmup is not None
    assert c.warmup.iterations == 5  # from the start of the run, recorded warm-up included
    assert c.analysed_from == 3  # 3 of the measured iterations were still warming up
    assert c.iterations == 27
    assert c.recommended is not None
    assert c.recommended.warmup == 5


def test_a_series_that_never_settles_is_flagged() -> None:
    rng = np.random.default_rng(0)
    drift = np.exp(np.linspace(0.3, 0.0, 30))
    series = 2e6 * drift * np.exp(rng.normal(0, 0.01, (20, 30)))
    assert detect_warmup(series, tolerance=0.005).trending
    data = AAData("drift", "duet", series[:10], series[10:], np.zeros((10, 0)),
                  np.zeros((10, 0)), (0, 1) * 5)  # fmt: skip
    c = calibrate(data, AnalysisSettings(reps=1000))
    assert any("still trending" in w for w in c.warnings)


def record(runs: list[dict[str, object]], method: str = "duet") -> object:
    return from_dict(
        {"schema": "duet-results/1", "benchmarks": [{"name": "b", "method": method, "runs": runs}]}
    ).benchmarks[0]


def side(times: list[int], starts: list[int] | None, cpu: int, wall: int) -> dict[str, object]:
    out: dict[str, object] = {
        "iterations_ns": times,
        "warmup_ns": [3000],
        "cores": [cpu],
        "wall_ns": wall,
    }
    if starts is not None:
        out["iteration_start_ns"] = starts
    return out


def test_aa_data_from_a_record_start_skew_and_failed_runs() -> None:
    runs: list[dict[str, object]] = []
    for r in range(6):
        cpu = r % 2
        starts = [1_000_000 * i for i in range(1, 5)]
        skewed = [s + 1000 * (i + 1) for i, s in enumerate(starts)]  # 1, 2, 3, 4 µs late
        runs.append(
            {
                "index": r,
                "status": "ok",
                "baseline": side([1000, 1100, 1050, 990], starts, cpu, 60_000),
                "candidate": side([1010, 1090, 1040, 1000], skewed, 1 - cpu, 61_000),
            }
        )
    runs.append(
        {
            "index": 6,
            "status": "failed",
            "reason": "baseline: exit code 1",
            "baseline": {"iterations_ns": [], "status": "failed"},
            "candidate": {"iterations_ns": [], "status": "failed"},
        }
    )
    data = aa_data(record(runs))  # type: ignore[arg-type]
    assert data.runs == 6
    assert data.iterations == 4
    assert data.warmup == 1
    assert data.failed_runs == 1
    assert data.baseline_cpus == (0, 1, 0, 1, 0, 1)
    assert data.start_skew_ns is not None
    assert data.start_skew_ns[0].tolist() == [1000, 2000, 3000, 4000]
    assert data.wall_ns is not None
    assert data.wall_ns[0].tolist() == [60_000, 61_000]
    c = calibrate(data, AnalysisSettings(reps=1000))
    assert c.start_skew_ns is not None
    assert c.start_skew_ns.median == pytest.approx(2500)
    assert c.start_skew_ns.max == 4000
    assert c.start_skew_ns.count == 24
    assert any("1 run(s) failed" in w for w in c.warnings)
    # Without start timestamps (an older file, or a sequential record) there is no skew.
    for run in runs[:6]:
        for s in ("baseline", "candidate"):
            del run[s]["iteration_start_ns"]  # type: ignore[attr-defined]
    assert aa_data(record(runs[:6])).start_skew_ns is None  # type: ignore[arg-type]
    seq = aa_data(record(runs[:6], method="sequential"))  # type: ignore[arg-type]
    assert seq.method == "sequential"
    with pytest.raises(ValueError, match="duet method"):
        calibrate(seq)
    with pytest.raises(ValueError, match="at least 2"):
        aa_data(record(runs[6:]))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Planning


def test_recommend_reaches_the_target_with_the_fewest_runs() -> None:
    comps = Components(
        within_run_var=8e-4, between_run_var=2.2e-4, run_effect_var=2e-4, runs=40, iterations=40
    )
    rec = recommend(
        comps, threshold=0.02, confidence=0.99, startup_iterations=20.0, warmup=2,
        startup_ns=40e6, iteration_ns=2e6,
    )  # fmt: skip
    # formula 8: n* = ceil(sqrt(w S_X^2 / var A)) with w = 20 + 2
    assert rec.optimal_iterations == math.ceil(math.sqrt(22 * 8e-4 / 2e-4))
    assert rec.iterations == rec.optimal_iterations
    target = math.log1p(0.02) / 2
    assert rec.target_half_width == pytest.approx(target)
    z = 2.5758293035489004

    def half(k: int) -> float:
        return z * math.sqrt((rec.iterations * 2e-4 + 8e-4) / (k * rec.iterations))

    assert half(rec.runs) <= target < half(rec.runs - 1)
    assert rec.expected_ci_width == pytest.approx(
        math.exp(half(rec.runs)) - math.exp(-half(rec.runs)), rel=1e-6
    )
    assert rec.machine_time_ns == pytest.approx(rec.runs * (40e6 + (2 + rec.iterations) * 2e6))
    assert rec.reachable
    assert rec.machine_time_ns is not None
    seq = recommend(
        comps, threshold=0.02, confidence=0.99, method="sequential", startup_iterations=20.0,
        warmup=2, startup_ns=40e6, iteration_ns=2e6,
    )  # fmt: skip
    assert seq.machine_time_ns == pytest.approx(2 * rec.machine_time_ns)


def test_recommend_bounds() -> None:
    tiny = Components(1e-8, 1e-9, 0.0, 20, 30)
    rec = recommend(tiny, threshold=0.05, confidence=0.95, startup_iterations=5.0)
    assert rec.runs == MIN_RUNS  # a quiet benchmark still gets enough runs for a bootstrap
    assert rec.iterations == 1000  # no run effect: as many iterations as allowed
    rec = recommend(Components(1e-6, 0.1, 0.1, 20, 30), threshold=0.02, confidence=0.99)
    assert rec.iterations == MIN_ITERATIONS
    hopeless = recommend(Components(1.0, 1.0, 1.0, 20, 30), threshold=0.001, confidence=0.99)
    assert not hopeless.reachable
    with pytest.raises(ValueError, match="threshold"):
        recommend(tiny, threshold=0.0, confidence=0.99)
    with pytest.raises(ValueError, match="confidence"):
        recommend(tiny, threshold=0.02, confidence=1.0)


def test_the_plan_delivers_the_width_it_promises() -> None:
    """Calibrate on one experiment, then run the recommended experiment many times from the
    same model: the widths it gets are the widths formula 5 predicted."""
    from duet_stats.ratio import duet_ratio

    m = Model(runs=40, iterations=30, sd_run=0.006, sd_iter=0.03, sd_shared=0.02, seed=11)
    c = calibrate(m.data(), AnalysisSettings(reps=2000, threshold=0.02))
    rec = c.recommended
    assert rec is not None
    assert rec.method == "duet"  # the shared noise makes synchronisation pay
    widths = []
    for seed in range(40):
        plan = Model(
            runs=rec.runs, iterations=rec.iterations, sd_run=0.006, sd_iter=0.03,
            sd_shared=0.02, seed=1000 + seed,
        ).data()  # fmt: skip
        est = duet_ratio(
            plan.baseline_ns, plan.candidate_ns, reps=2000, rng=np.random.default_rng(seed)
        )
        assert est.width is not None
        widths.append(est.width)
    assert float(np.median(widths)) == pytest.approx(rec.expected_ci_width, rel=0.25)
    assert c.components is not None
    predicted = width_for_runs(
        c.components, iterations=rec.iterations, runs=[rec.runs], confidence=0.99
    )
    assert predicted[rec.runs] == pytest.approx(rec.expected_ci_width)


def test_to_dict_has_every_field_the_issue_asks_for() -> None:
    c = calibrate(Model().data(), AnalysisSettings(reps=1000))
    d = c.to_dict()
    for key in (
        "ratio", "ci_low", "ci_high", "ci_width", "sync_gain", "impact_factor",
        "variance_components", "optimal_iterations", "recommended", "side_asymmetry",
        "start_skew_ns", "accuracy_gain", "warmup", "method",
    ):  # fmt: skip
        assert key in d
    assert set(d["impact_factor"]) == {"baseline", "candidate", "log_ratio"}
    assert set(d["impact_factor"]["log_ratio"]) >= {"plain", "transformed", "additive_model_fits"}
    assert set(d["recommended"]) >= {"runs", "iterations", "warmup", "method", "machine_time_ns"}
    import json

    json.dumps(d)


def test_formula_8_is_not_extrapolated_beyond_ten_times_the_measured_runs() -> None:
    # No run effect at all: formula 8 asks for unbounded iterations per run.
    c = calibrate(
        Model(sd_run=0.0, sd_iter=0.02, sd_shared=0.05, iterations=30).data(),
        AnalysisSettings(reps=1000),
    )
    rec = c.recommended
    assert rec is not None
    assert rec.max_iterations == 300
    assert rec.iterations <= 300


def _aa_record(*, busy: float, preempted: float, runs: int = 12, iterations: int = 15) -> Any:
    """An A/A of code that needs 20 ms of CPU per iteration (0.3% noise), runs ``busy`` of
    its wall time on a CPU (it sleeps for the rest), and is preempted by another process for
    0-100% of the iteration with probability ``preempted`` (wall time only)."""
    rng = np.random.default_rng(11)
    out = []
    for r in range(runs):
        sides: dict[str, Any] = {}
        for name in ("baseline", "candidate"):
            cpu = 20e6 * rng.lognormal(0, 0.003, iterations)
            runq = np.where(
                rng.random(iterations) < preempted, cpu * rng.uniform(0, 1, iterations), 0
            )
            wall = cpu / busy + runq
            sides[name] = {
                "iterations_ns": [int(x) for x in wall],
                "warmup_ns": [int(wall[0])],
                "iteration_cpu_ns": [int(x) for x in cpu],
                "iteration_runq_ns": [int(x) for x in runq],
                "cores": [r % 2 if name == "baseline" else 1 - r % 2],
            }
        out.append({"index": r, "status": "ok", **sides})
    doc = from_dict({"schema": "duet-results/2", "benchmarks": [{"name": "aa", "runs": out}]})
    return doc.benchmarks[0]


def test_cpu_time_is_chosen_for_cpu_bound_code_that_another_process_preempts() -> None:
    record = _aa_record(busy=1.0, preempted=0.5)
    cal = calibrate_metrics(
        record,
        busy_share={"baseline": 0.99, "candidate": 0.99},
        settings=AnalysisSettings(reps=2000),
    )
    assert cal.metric == "cpu"
    assert cal.metric_reason is not None
    assert cal.metric_reason.startswith("CPU time: both sides CPU-bound")
    widths = cal.widths_by_metric
    assert widths["cpu"]["duet"] is not None
    assert widths["wall"]["duet"] is not None
    assert widths["cpu"]["duet"] * 5 < widths["wall"]["duet"]
    assert cal.recommended is not None
    assert cal.recommended.metric == "cpu"
    assert cal.recommended.recommendation().metric == "cpu"
    assert cal.to_dict()["metric"]["chosen"] == "cpu"


def test_wall_time_is_kept_for_code_that_sleeps_whatever_the_widths() -> None:
    record = _aa_record(busy=0.3, preempted=0.0)
    cal = calibrate_metrics(
        record, busy_share={"baseline": 0.3, "candidate": 0.3}, settings=AnalysisSettings(reps=2000)
    )
    assert cal.metric == "wall"
    assert cal.metric_reason is not None
    assert "not CPU-bound" in cal.metric_reason
    assert cal.recommended is not None
    assert cal.recommended.metric == "wall"


def test_a_metric_asked_for_is_used_and_one_not_recorded_falls_back_to_wall() -> None:
    record = _aa_record(busy=1.0, preempted=0.5)
    forced = calibrate_metrics(
        record, busy_share={"baseline": 1, "candidate": 1}, settings=AnalysisSettings(metric="wall")
    )
    assert forced.metric == "wall"
    assert forced.metric_reason == "wall time, as asked (--metric wall)"
    old = aa_record_without_cpu()
    cal = calibrate_metrics(old, busy_share={}, settings=AnalysisSettings(metric="cpu"))
    assert cal.metric == "wall"
    assert set(cal.widths_by_metric) == {"wall"}


def test_wall_time_less_run_queue_delay_can_be_asked_for() -> None:
    # It used to be refused ("not calibrated"); it is calibrated like the other two.
    record = _aa_record(busy=1.0, preempted=0.5)
    cal = calibrate_metrics(
        record,
        busy_share={"baseline": 1, "candidate": 1},
        settings=AnalysisSettings(metric="wall-runq", reps=2000),
    )
    assert cal.metric == "wall-runq"
    assert cal.metric_reason == "wall time less run-queue delay, as asked (--metric wall-runq)"
    assert cal.recommended is not None
    assert cal.recommended.recommendation().metric == "wall-runq"
    # Every registered metric is calibrated (the record has CPU time and run-queue delay).
    assert set(cal.widths_by_metric) == set(metrics.names())


def test_code_that_sleeps_and_is_preempted_gets_wall_time_less_run_queue_delay() -> None:
    # 30% on a CPU, preempted in half the iterations: CPU time would miss the sleeping, wall
    # time carries the other process's doing, wall time less run-queue delay keeps the one and
    # drops the other.
    record = _aa_record(busy=0.3, preempted=0.5)
    cal = calibrate_metrics(
        record, busy_share={"baseline": 0.3, "candidate": 0.3}, settings=AnalysisSettings(reps=2000)
    )
    assert cal.metric == "wall-runq"
    assert cal.metric_reason is not None
    assert cal.metric_reason.startswith("wall time less run-queue delay: the benchmark is not CPU")
    assert "is narrower than wall time's" in cal.metric_reason
    widths = cal.widths_by_metric
    assert widths["wall-runq"]["duet"] is not None
    assert widths["wall"]["duet"] is not None
    assert widths["wall-runq"]["duet"] * 3 < widths["wall"]["duet"]
    assert cal.recommended is not None
    assert cal.recommended.recommendation().metric == "wall-runq"


def aa_record_without_cpu() -> Any:
    rng = np.random.default_rng(5)
    runs = [
        {
            "index": r,
            "status": "ok",
            "baseline": {
                "iterations_ns": [int(x) for x in rng.integers(9_000_000, 11_000_000, 10)]
            },
            "candidate": {
                "iterations_ns": [int(x) for x in rng.integers(9_000_000, 11_000_000, 10)]
            },
        }
        for r in range(8)
    ]
    return from_dict(
        {"schema": "duet-results/1", "benchmarks": [{"name": "b", "runs": runs}]}
    ).benchmarks[0]
