"""``duet calibrate`` recommends min_runs and max_runs for measuring until decided
(:mod:`duet_bench.calibrate.until_decided`): checked against the rule itself (the analysis's
looks, :func:`duet_bench.analysis.stopping.looks_of`) on fresh A/A sequences. Every draw has a
fixed seed, so these tests are exact: they pass or fail the same way on every run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duet_bench.analysis import AnalysisSettings
from duet_bench.analysis.stopping import UntilDecided, looks_of
from duet_bench.calibrate import calibrate
from duet_bench.calibrate.until_decided import (
    MAX_RUNS_CANDIDATES,
    UNDECIDED_SHARE,
    _decided_at,
    per_run_sd,
    until_decided_advice,
)
from duet_stats.stopping import stopping_bounds
from tests.duet.test_calibrate import Model

THRESHOLD = 0.02
CONFIDENCE = 0.99


def test_the_recommended_maximum_decides_an_unchanged_benchmark_under_the_rule() -> None:
    """A per-run spread of 1% at a 2% threshold: the advice's maximum leaves at most 5% of
    A/A measurements undecided when they are judged by the analysis itself (400 fresh
    sequences: the share's standard error is 1.1%, so 5% + 3 standard errors is the bound), and
    the candidate below it would leave more than 5% (it is the smallest that does)."""
    pool = np.random.default_rng(7).normal(0.0, 0.01, 30)
    found = per_run_sd(pool)
    assert found is not None
    sd, source = found
    assert source == "runs"
    advice = until_decided_advice(
        sd, iterations=30, threshold=THRESHOLD, confidence=CONFIDENCE, seed=1
    )
    assert advice is not None
    assert advice.reachable
    assert advice.min_runs == 5
    assert advice.max_runs in MAX_RUNS_CANDIDATES
    assert advice.undecided <= UNDECIDED_SHARE
    assert advice.median_runs is not None
    assert 5 <= advice.median_runs <= advice.max_runs

    design = UntilDecided(min_runs=advice.min_runs, max_runs=advice.max_runs)
    settings = AnalysisSettings(threshold=THRESHOLD, confidence=CONFIDENCE)
    rng = np.random.default_rng(11)
    stopped = []
    for _ in range(400):
        x = rng.normal(0.0, advice.per_run_sd, advice.max_runs)
        decided = [
            look.runs
            for look in looks_of(
                x, design, confidence=settings.confidence, threshold=settings.threshold
            )
            if look.verdict != "inconclusive"
        ]
        stopped.append(decided[0] if decided else 0)
    runs = np.array(stopped)
    assert np.mean(runs == 0) <= UNDECIDED_SHARE + 3 * np.sqrt(0.05 * 0.95 / 400)
    assert abs(float(np.median(runs[runs > 0])) - advice.median_runs) <= 2

    below = MAX_RUNS_CANDIDATES[MAX_RUNS_CANDIDATES.index(advice.max_runs) - 1]
    bounds = stopping_bounds(min_runs=5, max_runs=below, confidence=CONFIDENCE)
    draws = np.random.default_rng(1).standard_normal((4000, below)) * advice.per_run_sd
    assert np.mean(_decided_at(draws, bounds.critical, 5, THRESHOLD) == 0) > UNDECIDED_SHARE


def test_a_spread_too_large_for_the_threshold_is_said() -> None:
    advice = until_decided_advice(0.08, iterations=30, threshold=THRESHOLD, confidence=CONFIDENCE)
    assert advice is not None
    assert not advice.reachable
    assert advice.max_runs == MAX_RUNS_CANDIDATES[-1]
    assert per_run_sd(np.zeros(4)) is None


def test_the_spread_at_the_recommended_iterations_comes_from_the_components() -> None:
    """var A + var X / n: 0.01^2 + 0.03^2 / 9 = 0.0002, a spread of 1.41%."""
    found = per_run_sd(np.zeros(0), run_effect_var=1e-4, within_run_var=9e-4, iterations=9)
    assert found is not None
    assert abs(found[0] - 0.0141421356) < 1e-9
    assert found[1] == "components"


def test_calibrate_reports_the_bounds() -> None:
    from duet_bench.report.calibration import render_text

    c = calibrate(Model().data(), AnalysisSettings(reps=1000, threshold=0.05))
    assert c.until_decided is not None
    d = c.to_dict()["until_decided"]
    assert set(d) >= {"min_runs", "max_runs", "per_run_sd", "median_runs", "undecided"}
    assert d["source"] == "components"
    assert d["iterations"] == c.to_dict()["recommended"]["iterations"]
    text = " ".join(render_text(c, {}).split())
    assert f"--min-runs {d['min_runs']} --max-runs {d['max_runs']}" in text


def test_write_stores_min_runs_and_max_runs_and_the_suite_then_measures_until_decided(
    tmp_path: Path,
) -> None:
    from duet_bench.analysis.stopping import until_decided
    from duet_bench.calibrate.aa import write_recommended
    from duet_bench.calibrate.model import ConfigTarget
    from duet_bench.config import load_config
    from duet_bench.settings import Given, resolve

    path = tmp_path / "duet.toml"
    path.write_text('runs = 10\n\n[[benchmark]]\nname = "x"\ncommand = "true"\n')
    c = calibrate(Model().data(), AnalysisSettings(reps=1000, threshold=0.05))
    u = c.until_decided
    assert u is not None
    assert u.reachable
    write_recommended(c, ConfigTarget(path, "duet"))
    config = load_config(path)
    resolved = resolve(Given(), config=config, benchmark=config.benchmarks[0])
    v = resolved.values
    assert until_decided(v.min_runs, v.max_runs, v.budget_s, resolved.origins) == UntilDecided(
        min_runs=u.min_runs, max_runs=u.max_runs
    )
    # --runs on the command line still asks for a fixed design.
    given = resolve(Given.of(runs=12), config=config, benchmark=config.benchmarks[0])
    v = given.values
    assert until_decided(v.min_runs, v.max_runs, v.budget_s, given.origins) is None
