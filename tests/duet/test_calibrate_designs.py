"""Comparing the core designs (``duet calibrate --compare-designs``): the figures of each design
on synthetic A/A data whose cores are known, the choice at equal machine time on tables of
figures, and the ``crossover`` key written into a configuration and read back."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from duet_bench.analysis import AnalysisSettings
from duet_bench.calibrate import AAData, calibrate
from duet_bench.calibrate.designs import (
    DESIGNS,
    NOMINAL_COST,
    Design,
    DesignFigures,
    choose_design,
    design_figures,
    equal_time_widths,
)
from duet_bench.calibrate.experiment import Components, recommend
from duet_bench.calibrate.interleave import blocks, design_of, design_specs
from duet_bench.config import load_config
from duet_bench.config.writer import write_recommendation
from duet_bench.plan import BenchmarkSpec, SideSpec
from duet_bench.results import BenchmarkRecord, RecordedPlan

SETTINGS = AnalysisSettings(reps=2000, threshold=0.02)


def aa(
    design: Design,
    *,
    runs: int = 24,
    iterations: int = 20,
    slow_cpu1: float = 1.0,
    drift: float = 0.0,
    sd_iter: float = 0.01,
    seed: int = 1,
) -> AAData:
    """A synthetic A/A of one design. CPU 1 runs ``slow_cpu1`` times slower, and that factor
    drifts from run to run with a log-sd of ``drift`` (a core difference that changes over
    seconds, as on the VMs of docs/accuracy.md, "The prototype")."""
    rng = np.random.default_rng(seed)
    shape = (runs, iterations)
    slow = np.log(slow_cpu1) + rng.normal(0, drift, (runs, 1))
    if design == "iteration":
        on_1 = (np.arange(runs)[:, None] + np.arange(iterations)[None, :]) % 2
    else:
        on_1 = np.repeat((np.arange(runs) % 2)[:, None], iterations, axis=1)
    sequential = design == "sequential"

    def side(on_cpu1: np.ndarray) -> np.ndarray:
        log_t = math.log(2e6) + rng.normal(0, 0.01, (runs, 1)) + rng.normal(0, sd_iter, shape)
        return np.exp(log_t + np.where(on_cpu1 == 1, slow, 0.0))

    base = side(on_1)
    cand = side(on_1 if sequential else 1 - on_1)
    wall = np.stack([base.sum(axis=1), cand.sum(axis=1)], axis=1) + 40e6
    empty = np.zeros((runs, 0))
    return AAData(
        name=f"synthetic {design}",
        method="sequential" if sequential else "duet",
        baseline_ns=base,
        candidate_ns=cand,
        baseline_warmup_ns=empty,
        candidate_warmup_ns=empty,
        baseline_cpus=tuple(int(on_1[r, 0]) for r in range(runs)),
        wall_ns=wall,
        assignment=on_1.astype(np.float64) if design == "iteration" else None,
    )


# --------------------------------------------------------------------------------------------
# Figures per design


@pytest.mark.parametrize("design", DESIGNS)
def test_every_design_gets_the_figures_a_calibration_reports(design: Design) -> None:
    f = design_figures(design, aa(design, slow_cpu1=1.03), SETTINGS)
    assert f.design == design
    assert (f.runs, f.iterations) == (24, 20)
    assert f.width is not None
    assert 0 < f.width < 0.2
    assert f.ratio == pytest.approx(1.0, abs=0.03)
    assert f.impact_factor is not None
    assert f.impact_factor > 0
    assert f.runs_needed is not None
    assert f.runs_needed >= 10
    assert f.iterations_needed is not None
    assert f.iterations_needed >= 5
    assert f.run_ns is not None
    assert f.run_ns > 40e6
    if design == "sequential":
        assert f.core_ratio is None  # both sides on one CPU in turn: nothing to contrast
    else:
        # The within-run contrast (crossover) or the side asymmetry (per run) sees CPU 1.
        assert f.core_ratio is not None
        assert f.core_ci_low is not None
        assert f.core_ci_low > 1.0
        assert f.core_ratio == pytest.approx(1.03, abs=0.01)


def test_a_design_is_refused_data_of_another_method() -> None:
    with pytest.raises(ValueError, match="the sequential design needs an A/A measured with"):
        design_figures("sequential", aa("iteration"), SETTINGS)
    with pytest.raises(ValueError, match="the run design needs an A/A measured with the duet"):
        design_figures("run", aa("sequential"), SETTINGS)


def test_crossover_cancels_a_drifting_core_difference_that_widens_the_per_run_design() -> None:
    # Same noise, same cores: the per-run swap carries the drifting difference into the
    # run-to-run variance; crossing over at every iteration cancels it inside each run.
    figures = [
        design_figures(d, aa(d, slow_cpu1=1.02, drift=0.02, seed=7), SETTINGS)
        for d in ("iteration", "run")
    ]
    it, run = figures
    assert it.width is not None
    assert run.width is not None
    assert it.width < run.width / 2
    assert choose_design(figures).design == "iteration"


def test_the_calibration_of_a_crossover_aa_weighs_the_assignments_and_reports_the_contrast() -> (
    None
):
    cal = calibrate(aa("iteration", slow_cpu1=1.05, iterations=21), SETTINGS)
    assert cal.core_contrast is not None
    assert cal.core_contrast.ratio == pytest.approx(1.05, abs=0.01)
    # 21 iterations: one assignment has one more, and equal weights keep the ratio at 1.
    assert cal.ratio == pytest.approx(1.0, abs=0.01)
    assert cal.to_dict()["core_contrast"]["significant"] is True
    assert any("second CPU of the pair" in w for w in cal.warnings)
    # The +-5% swing between the CPUs is not iteration noise for the planning.
    assert cal.components is not None
    assert cal.components.within_run_var < (2 * 0.01**2) * 1.5


# --------------------------------------------------------------------------------------------
# The choice at equal machine time


def figs(
    widths: dict[Design, float | None], run_ns: dict[Design, float] | None = None, runs: int = 40
) -> list[DesignFigures]:
    return [
        DesignFigures(
            design=d,
            runs=runs,
            iterations=20,
            ratio=1.0,
            width=w,
            run_ns=(run_ns or {}).get(d),
        )
        for d, w in widths.items()
    ]


CASES: list[tuple[str, dict[Design, float | None], dict[Design, float] | None, Design]] = [
    ("crossover narrowest", {"iteration": 0.01, "run": 0.02, "sequential": 0.012}, None,
     "iteration"),
    ("per-run narrowest", {"iteration": 0.02, "run": 0.015, "sequential": 0.03}, None, "run"),
    ("sequential narrowest even at twice the time",
     {"iteration": 0.03, "run": 0.03, "sequential": 0.015}, None, "sequential"),
    # Narrower per run, but it takes twice the time: sqrt(2) x 0.022 = 0.031 > 0.03.
    ("sequential narrower per run only", {"iteration": 0.03, "run": 0.04, "sequential": 0.022},
     None, "iteration"),
    ("a tie goes to the default", {"iteration": 0.02, "run": 0.02, "sequential": None}, None,
     "iteration"),
    ("a design without an interval is left out", {"iteration": None, "run": 0.03}, None, "run"),
    # Measured costs: a sequential run as long as a duet run (start-up dominated, the duet's
    # two start-ups slow each other) is not penalised.
    ("measured cost 1", {"iteration": 0.03, "sequential": 0.025},
     {"iteration": 1e9, "sequential": 1e9}, "sequential"),
    ("measured cost 3", {"iteration": 0.02, "sequential": 0.015},
     {"iteration": 1e9, "sequential": 3e9}, "iteration"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("widths", "run_ns", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_narrowest_at_equal_machine_time_is_chosen(
    widths: dict[Design, float | None], run_ns: dict[Design, float] | None, expected: Design
) -> None:
    choice = choose_design(figs(widths, run_ns))
    assert choice.design == expected
    assert choice.method == ("sequential" if expected == "sequential" else "duet")
    assert choice.crossover == (None if expected == "sequential" else expected)
    # The chosen one is the narrowest of the normalised widths it reports.
    assert choice.equal_time_widths[expected] == min(choice.equal_time_widths.values())


def test_the_normalisation_is_the_square_root_of_the_cost() -> None:
    widths, costs = equal_time_widths(figs({"iteration": 0.02, "run": 0.03, "sequential": 0.01}))
    assert costs == dict(NOMINAL_COST)
    assert widths["sequential"] == pytest.approx(0.01 * math.sqrt(2))
    assert widths["run"] == 0.03
    measured = figs(
        {"iteration": 0.02, "run": 0.03, "sequential": 0.01},
        {"iteration": 1e9, "run": 1.2e9, "sequential": 2.75e9},
    )
    widths, costs = equal_time_widths(measured)
    # The duet designs cost the same; sequential against their mean run.
    assert costs == {"iteration": 1.0, "run": 1.0, "sequential": pytest.approx(2.5)}
    assert widths["sequential"] == pytest.approx(0.01 * math.sqrt(2.5))


def test_when_sequential_wins_the_reason_says_so_in_plain_words() -> None:
    choice = choose_design(figs({"iteration": 0.05, "run": 0.06, "sequential": 0.01}))
    assert choice.design == "sequential"
    assert "measures worse than running them one after the other" in choice.reason
    assert 'use method = "sequential"' in choice.reason
    assert "1.41%" in choice.reason  # 0.01 x sqrt(2), the width it is chosen by
    assert "confirm" not in choice.reason  # 3.5x apart: not close


def test_a_close_call_at_few_runs_asks_for_a_second_calibration() -> None:
    close = figs({"iteration": 0.020, "run": 0.022}, runs=20)
    assert "confirm with a second calibration" in choose_design(close).reason
    many = figs({"iteration": 0.020, "run": 0.022}, runs=40)
    assert "confirm" not in choose_design(many).reason


def test_no_interval_anywhere_keeps_the_default_and_says_why() -> None:
    choice = choose_design(figs({"iteration": None, "run": None, "sequential": None}))
    assert choice.design == "iteration"
    assert "too few runs" in choice.reason
    with pytest.raises(ValueError, match="each design once"):
        choose_design(figs({"iteration": 0.01}) * 2)


# --------------------------------------------------------------------------------------------
# Measuring in blocks, and the designs of a results file


def test_blocks_keep_two_runs_per_design_and_an_odd_run_joins_the_last() -> None:
    assert blocks(2) == [2]
    assert blocks(3) == [3]
    assert blocks(6) == [2, 2, 2]
    assert blocks(7) == [2, 2, 3]
    assert all(sum(blocks(r)) == r and min(blocks(r)) >= 2 for r in range(2, 50))


def test_design_specs_and_the_design_of_a_record() -> None:
    side = SideSpec(kind="command", command="true")
    spec = BenchmarkSpec(name="noop", baseline=side, candidate=side, runs=4, crossover="run")
    specs = design_specs(spec)
    assert [s.name for s in specs] == ["noop", "noop [per-run]", "noop [sequential]"]
    assert [(s.method, s.crossover) for s in specs][:2] == [("duet", "iteration"), ("duet", "run")]
    assert specs[2].method == "sequential"
    iteration, run = RecordedPlan(crossover="iteration"), RecordedPlan(crossover="run")
    assert design_of(BenchmarkRecord("a", (), settings=iteration)) == "iteration"
    assert design_of(BenchmarkRecord("a", (), settings=run)) == "run"
    assert design_of(BenchmarkRecord("a", ())) == "run"  # a file from before crossover
    assert design_of(BenchmarkRecord("a", (), method="sequential")) == "sequential"


# --------------------------------------------------------------------------------------------
# --write: the crossover key, read back by the configuration loader


CONFIG = """\
runs = 10

[[benchmark]]
name = "parse"
command = "true"
crossover = "iteration"  # calibrate decides
"""


@pytest.mark.parametrize(
    ("crossover", "method"), [("run", "duet"), ("iteration", "duet"), (None, "sequential")]
)
def test_the_recommendation_writes_crossover_and_the_loader_reads_it(
    tmp_path: Path, crossover: str | None, method: str
) -> None:
    path = tmp_path / "duet.toml"
    path.write_text(CONFIG)
    comps = Components(1e-4, 2e-5, 1e-5, runs=20, iterations=20)
    rec = recommend(comps, threshold=0.02, confidence=0.99, method=method)  # type: ignore[arg-type]
    from dataclasses import replace

    rec = replace(rec, crossover=crossover)  # type: ignore[arg-type]
    values = rec.recommendation().to_toml()
    assert ("crossover" in values) == (crossover is not None)
    write_recommendation(path, benchmark="parse", values=values)
    bench = load_config(path).benchmark("parse")
    assert bench.method == method
    assert bench.runs == rec.runs
    # Left as it was when the sequential method won (it ignores the setting).
    assert bench.crossover == (crossover or "iteration")
    assert "# calibrate decides" in path.read_text()
