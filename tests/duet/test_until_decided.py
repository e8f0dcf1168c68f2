"""Measuring until decided (docs/statistics.md, method 2b) on the duet side: the verdict at every
look, the record of the looks, and the sequential method's note (issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duet_bench import results, units
from duet_bench.analysis import AnalysisSettings, analyze_benchmark
from duet_bench.analysis.stopping import UntilDecided, until_decided
from duet_bench.config.read import load_config
from duet_bench.errors import UsageError
from duet_bench.plan import for_suite
from duet_bench.results import RecordedDesign, RecordedPlan
from duet_bench.results import analysis as stored
from duet_bench.settings import Given, resolve


def _document(
    *,
    runs: int,
    ratio: float,
    method: str = "duet",
    settings: dict[str, Any] | None = None,
    same_cpu: bool = False,
    clash: bool = False,
    noise: float = 0.003,
    seed: int = 30,
) -> dict[str, Any]:
    """Runs of 20 iterations, CPU time = wall time; the sides change CPUs 2 and 5 at every
    iteration, or (``same_cpu``) both sides are recorded on CPU 2 as the sequential method
    records them, or (``clash``) the candidate is recorded on the baseline's CPU: a failed
    move."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(runs):
        shared = rng.lognormal(np.log(10e6), 0.05, 20)
        a = shared * rng.lognormal(0, noise, 20)
        b = shared * ratio * rng.lognormal(0, noise, 20)
        base_cpus = [2] * 20 if same_cpu else [(2, 5)[(r + i) % 2] for i in range(20)]
        cand_cpus = base_cpus if same_cpu or clash else [(5, 2)[(r + i) % 2] for i in range(20)]

        def side(x: np.ndarray, where: list[int]) -> dict[str, Any]:
            ns = [int(v) for v in x]
            return {"iterations_ns": ns, "iteration_cpu_ns": ns, "iteration_cpus": where}

        out.append(
            {
                "index": r,
                "status": "ok",
                "baseline": side(a, base_cpus),
                "candidate": side(b, cand_cpus),
            }
        )
    return {
        "schema": "duet-results/2",
        "benchmarks": [
            {
                "name": "x",
                "method": method,
                "runs": out,
                "settings": {"crossover": "iteration", **(settings or {})},
            }
        ],
    }


def test_the_sequential_method_has_no_crossover_note() -> None:
    """Issue 30: one side after the other on one CPU is the design, not a failed move."""
    doc = results.from_dict(_document(runs=6, ratio=1.0, method="sequential", same_cpu=True))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert "same CPU" not in (a.note or "")
    assert "crossover at every iteration was asked for" not in (a.note or "")
    # The duet method on one CPU still says so: there the move did fail.
    doc = results.from_dict(_document(runs=6, ratio=1.0, clash=True))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert "both versions ran on one CPU at the same time" in (a.note or "")


UNTIL = {"until_decided": {"min_runs": 5, "max_runs": 40, "budget_s": None, "shape": "pocock"}}


def test_a_clear_regression_is_decided_at_the_first_look() -> None:
    """5% slower with per-run noise about 0.1%: the repeated interval at 5 runs (c = 5.12) is
    about +-0.3% wide; that it fails to clear 1.02 is beyond chance (20 standard deviations)."""
    doc = results.from_dict(_document(runs=5, ratio=1.05, settings=UNTIL))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert a.verdict == "regression"
    assert a.stopping is not None
    assert a.stopping.decided_after == 5
    assert [look.runs for look in a.stopping.looks] == [5]
    assert a.ci_low == a.stopping.looks[-1].ci_low
    assert a.stopping.sentence().startswith("decided after 5 of up to 40 runs")
    block = a.to_dict()
    assert block["stopping"]["decided_after"] == 5
    assert block["stopping"]["looks"][0]["verdict"] == "regression"
    # The stored block reads back to the same dictionary.
    assert stored.AnalysisBlock.from_dict(block).to_dict() == block


def test_every_look_is_recorded_and_a_a_is_no_change() -> None:
    doc = results.from_dict(_document(runs=7, ratio=1.0, settings=UNTIL))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert a.stopping is not None
    assert [look.runs for look in a.stopping.looks] == [5, 6, 7]
    assert a.verdict == "no change"
    assert a.stopping.decided_after == 7


def test_fewer_runs_than_the_first_look_give_no_verdict() -> None:
    doc = results.from_dict(_document(runs=4, ratio=1.05, settings=UNTIL))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert a.verdict is None
    assert a.ci_low is None
    assert a.stopping is not None
    assert a.stopping.looks == ()
    assert a.stopping.sentence().startswith("not decided after 0 of up to 40 runs")


def test_a_fixed_design_stores_no_stopping_key() -> None:
    doc = results.from_dict(_document(runs=6, ratio=1.05))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert a.stopping is None
    assert "stopping" not in a.to_dict()


def test_the_design_from_the_settings_and_their_origins() -> None:
    assert until_decided(None, None, None, {"runs": "--runs"}) is None
    assert until_decided(None, None, None, {"runs": "duet.toml: runs"}) is None
    # Nothing of runs, max_runs, budget set: the default design, until decided.
    default = UntilDecided(min_runs=5, max_runs=80, budget_s=600.0)
    assert until_decided(None, None, None, {"runs": "the built-in default"}) == default
    assert until_decided(None, None, None, {}) == default
    got = until_decided(8, None, None, {"min_runs": "--min-runs"})
    assert got == UntilDecided(min_runs=8, max_runs=80, budget_s=600.0)
    got = until_decided(None, None, 300.0, {"budget_s": "--budget"})
    assert got == UntilDecided(min_runs=5, max_runs=80, budget_s=300.0)
    got = until_decided(None, 20, None, {"max_runs": "duet.toml: max_runs"})
    assert got == UntilDecided(max_runs=20)
    # --runs on the command line keeps its meaning over the configuration's stopping keys.
    assert until_decided(None, 20, None, {"runs": "--runs"}) is None
    with pytest.raises(UsageError, match="give one or the other"):
        until_decided(None, 20, None, {"runs": "--runs", "max_runs": "--max-runs"})
    with pytest.raises(UsageError, match="--min-runs needs --max-runs or --budget"):
        until_decided(8, None, None, {"runs": "--runs", "min_runs": "--min-runs"})
    with pytest.raises(UsageError, match=r"runs \(from duet.toml: runs\) asks for a fixed"):
        until_decided(8, None, None, {"runs": "duet.toml: runs", "min_runs": "--min-runs"})
    with pytest.raises(UsageError, match="below --min-runs") as below:
        UntilDecided(min_runs=10, max_runs=6)
    # Any maximum from the first look up will do: the fix says so, and the default.
    assert (
        below.value.fix == "give --max-runs 10 or more (the default is 80), or a lower --min-runs"
    )
    recorded = RecordedPlan(until_decided=UntilDecided(7, 9, 60.0).to_record())
    assert UntilDecided.from_plan(recorded) == UntilDecided(7, 9, 60.0)
    assert UntilDecided.from_plan(RecordedPlan()) is None
    # A design the file records out of order is read as a fixed design.
    assert UntilDecided.from_plan(RecordedPlan(until_decided=RecordedDesign(9, 7))) is None


def test_durations_and_clock_times() -> None:
    assert units.parse_duration("10m") == 600.0
    assert units.parse_duration("90s") == 90.0
    assert units.parse_duration("1.5h") == 5400.0
    assert units.parse_duration("45") == 45.0
    with pytest.raises(ValueError, match="is not a duration"):
        units.parse_duration("ten minutes")
    assert units.clock(72e9) == "1 min 12 s"
    assert units.clock(12.34e9) == "12.3 s"


def test_a_suite_measured_until_decided_by_the_configuration_and_the_options(
    tmp_path: Path,
) -> None:
    """``duet compare`` builds its benchmarks with :func:`duet_bench.plan.for_suite`: the
    configuration's keys and the options given explicitly decide the design."""
    (tmp_path / "duet.toml").write_text(
        'max_runs = 30\nbudget = "10m"\n\n[[benchmark]]\nname = "a"\ncommand = "true"\n\n'
        '[[benchmark]]\nname = "b"\ncommand = "true"\nmin_runs = 6\n'
    )
    config = load_config(tmp_path / "duet.toml")
    built = for_suite(config, baseline_dir=tmp_path, candidate_dir=tmp_path)
    assert [b.spec.until_decided for b in built] == [
        UntilDecided(min_runs=5, max_runs=30, budget_s=600.0),
        UntilDecided(min_runs=6, max_runs=30, budget_s=600.0),
    ]
    assert [b.spec.runs for b in built] == [30, 30]
    assert built[0].spec.recorded().to_dict()["until_decided"] == {
        "min_runs": 5,
        "max_runs": 30,
        "budget_s": 600.0,
        "shape": "pocock",
    }
    # --runs on the command line: a fixed design, whatever the configuration says.
    fixed = for_suite(
        config, baseline_dir=tmp_path, candidate_dir=tmp_path, explicit=Given.of(runs=12)
    )
    assert [(b.spec.until_decided, b.spec.runs) for b in fixed] == [(None, 12), (None, 12)]
    # --max-runs on the command line wins over the configuration's.
    more = for_suite(
        config, baseline_dir=tmp_path, candidate_dir=tmp_path, explicit=Given.of(max_runs=50)
    )
    assert [b.spec.runs for b in more] == [50, 50]


def test_the_default_design_is_until_decided_and_runs_keeps_a_fixed_one(tmp_path: Path) -> None:
    """Nothing of ``runs``, ``max_runs``, ``budget`` set: measured until decided with the
    default first look, maximum and budget (docs/statistics.md, method 2b, "The default
    design"). ``runs = 10`` in the configuration, ``runs`` of a benchmark, or ``--runs 10`` on
    the command line: a fixed design of 10 runs, as before."""
    default = UntilDecided(min_runs=5, max_runs=80, budget_s=600.0)
    (tmp_path / "duet.toml").write_text('[[benchmark]]\nname = "a"\ncommand = "true"\n')
    config = load_config(tmp_path / "duet.toml")
    [built] = for_suite(config, baseline_dir=tmp_path, candidate_dir=tmp_path)
    assert (built.spec.until_decided, built.spec.runs) == (default, 80)
    assert built.spec.recorded().to_dict()["until_decided"] == {
        "min_runs": 5,
        "max_runs": 80,
        "budget_s": 600.0,
        "shape": "pocock",
    }
    # Without a configuration (duet run, whose options give None where not given): the same.
    r = resolve(Given.of(runs=None, min_runs=None, max_runs=None, budget_s=None))
    v = r.values
    assert until_decided(v.min_runs, v.max_runs, v.budget_s, r.origins) == default
    # A maximum out of bounds in the configuration: where it came from, and the default.
    bad = tmp_path / "bad.toml"
    bad.write_text('max_runs = 100000\n[[benchmark]]\nname = "a"\ncommand = "true"\n')
    with pytest.raises(UsageError, match=r"a: max runs must be from 2 to 10,000, got 100000") as e:
        for_suite(load_config(bad), baseline_dir=tmp_path, candidate_dir=tmp_path)
    assert (
        e.value.fix == f"set max runs as said ({bad}: max_runs), or leave it out: the default is 80"
    )
    # --min-runs alone moves the first look of the default design.
    [later] = for_suite(
        config, baseline_dir=tmp_path, candidate_dir=tmp_path, explicit=Given.of(min_runs=7)
    )
    assert later.spec.until_decided == UntilDecided(min_runs=7, max_runs=80, budget_s=600.0)
    # --runs 10: fixed.
    [fixed] = for_suite(
        config, baseline_dir=tmp_path, candidate_dir=tmp_path, explicit=Given.of(runs=10)
    )
    assert (fixed.spec.until_decided, fixed.spec.runs) == (None, 10)
    assert fixed.spec.recorded().to_dict().get("until_decided") is None
    # runs = 10 in the configuration (the built-in number itself): fixed, suite-wide or own.
    for text in (
        'runs = 10\n\n[[benchmark]]\nname = "a"\ncommand = "true"\n',
        '[[benchmark]]\nname = "a"\ncommand = "true"\nruns = 10\n',
    ):
        (tmp_path / "duet.toml").write_text(text)
        [b] = for_suite(
            load_config(tmp_path / "duet.toml"), baseline_dir=tmp_path, candidate_dir=tmp_path
        )
        assert (b.spec.until_decided, b.spec.runs) == (None, 10), text
        # There --min-runs alone has no first look to move: refused, naming the file's runs.
        with pytest.raises(UsageError, match=r"--min-runs needs --max-runs or --budget here"):
            for_suite(
                load_config(tmp_path / "duet.toml"),
                baseline_dir=tmp_path,
                candidate_dir=tmp_path,
                explicit=Given.of(min_runs=7),
            )
