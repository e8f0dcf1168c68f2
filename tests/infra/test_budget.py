"""The false-failure budget (tests/budget.py, tests/budget.toml, scripts/test_budget.py): the
table is whole and true to the tests, its sum is below 1/200 per CI run and is what
tests/README.md shows, its model agrees with duet's own analysis, and a measuring test that
asserts a measured quantity without a figure fails (a real pytest session, pytester)."""

from __future__ import annotations

import ast
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duet_bench.analysis.verdict import verdict
from duet_stats.intervals import bootstrap_ci
from tests import budget

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent.parent


def test_every_entry_names_a_test_that_exists() -> None:
    figures, exempt = budget.load()
    ids = [f.test_id for f in figures] + [e.test_id for e in exempt]
    assert len(ids) == len(set(ids)), "a test is listed twice"
    for test_id in ids:
        file, _, name = test_id.partition("::")
        path = REPO / file
        assert path.is_file(), f"{test_id}: no file {file}"
        functions = {
            node.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        assert name.split("[")[0] in functions, f"{test_id}: no such test in {file}"


def test_the_sum_is_below_the_target_and_the_readme_shows_it() -> None:
    figures, _ = budget.load()
    assert budget.per_ci_run(figures) < budget.TARGET
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "test_budget.py"), "--readme"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in (REPO / "tests" / "README.md").read_text(), (
        "tests/README.md does not show the current budget: run "
        "python scripts/test_budget.py --write-readme"
    )


def simulated_miss(ratio: float, runs: int, sigma: float, trials: int = 400) -> float:
    """How often duet's own interval (expanded percentile, 99%) and verdict miss a regression
    of ``ratio`` on normal run log ratios (seeded: the same answer every time)."""
    rng = np.random.default_rng(20261129)
    missed = 0
    for _ in range(trials):
        logs = rng.normal(math.log(ratio), sigma, runs)
        ci = bootstrap_ci(np.exp(logs), method="expanded", reps=2000, rng=rng)
        g = math.exp(float(np.mean(logs)))
        missed += verdict(ratio=g, ci_low=ci.low, ci_high=ci.high, threshold=0.02) != "regression"
    return missed / trials


@pytest.mark.parametrize(
    ("ratio", "runs", "sigma"), [(1.3, 10, 0.2), (1.3, 20, 0.3), (1.27, 10, 0.132)]
)
def test_the_detection_model_agrees_with_duets_analysis(
    ratio: float, runs: int, sigma: float
) -> None:
    """From 10 runs the t model and duet's bootstrap agree (measured: 0.214 / 0.173, 0.162 /
    0.155, 0.022 / 0.020); the binomial noise of 400 trials is at most 0.025."""
    model = budget.detection_miss(ratio=ratio, runs=runs, sigma=sigma, threshold=0.02)
    assert abs(simulated_miss(ratio, runs, sigma) - model) < 0.08, model


def test_the_detection_model_is_conservative_at_five_runs() -> None:
    """At 5 runs the expanded interval is narrower than the t interval (docs/statistics.md,
    "Five runs cannot give a 99% bootstrap interval"): the model overstates the misses (0.37
    against 0.06), so a 5-run figure in the table is an upper bound."""
    model = budget.detection_miss(ratio=1.3, runs=5, sigma=0.12, threshold=0.02)
    assert simulated_miss(1.3, 5, 0.12) < model


def test_the_model_figures() -> None:
    # A sure thing and a coin toss.
    assert budget.detection_miss(ratio=2.0, runs=10, sigma=0.01, threshold=0.02) < 1e-12
    assert 0.3 < budget.window_miss(ratio=1.0, runs=4, sigma=0.1, low=1.0, high=10.0) < 0.7
    exact = budget.figure_of("t", {"how": "binomial", "n": 3, "k": 3, "q": 0.5, "basis": "b"})
    assert exact.p == pytest.approx(1 / 8)
    with pytest.raises(ValueError, match="no basis"):
        budget.figure_of("t", {"how": "exact", "p": 0.1})
    with pytest.raises(ValueError, match="needs the command"):
        budget.figure_of("t", {"how": "measured", "p": 0.1, "basis": "b"})


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('assert b["analysis"]["verdict"] == "regression"', True),
        ('assert 1.2 < b["analysis"]["ratio"] < 2.1', True),
        ("assert skews[n // 10] < 200_000", True),
        ('assert s["runq_ns"] > 0.2 * s["duration_ns"]', True),
        ("assert 1.2 < sorted(b)[5] / sorted(c)[5] < 5.0", True),
        ("assert n / 2 > 1", False),
        ('assert (c / f"{n}.png").stat().st_size > 1000', False),
        ('assert s["cpu_ns"] > 0', False),
        ('assert len(s["iterations_ns"]) >= 1', False),
        ('assert c["ci_low"] <= c["ratio"] <= c["ci_high"]', False),
        ('assert c["iterations"] >= 3', False),
        ("assert_neither_side_favoured(doc)", True),
    ],
)
def test_what_counts_as_a_measured_assertion(tmp_path: Path, source: str, found: bool) -> None:
    module = tmp_path / "synthetic_test.py"
    module.write_text(
        "def assert_neither_side_favoured(doc):\n    pass\n\n"
        f"def test_it(b=None, s=None, c=None, doc=None, n=0, skews=()):\n    {source}\n"
    )
    spec = importlib.util.spec_from_file_location("synthetic_test", module)
    assert spec is not None
    assert spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    assert bool(list(budget.measured_assertions(loaded.test_it))) == found


CONFTEST = (
    "from tests.conftest import (  # noqa: F401\n"
    "    no_leftovers, pytest_collection_modifyitems, pytest_runtest_setup,\n"
    ")\n"
)
MEASURING = """
import pytest

@pytest.mark.measures
def test_measured():
    ratio = 2.0
    assert 1.5 < ratio < 2.5

def test_not_measuring():
    ratio = 2.0
    assert 1.5 < ratio < 2.5
"""


def test_a_measuring_test_without_a_figure_fails_and_with_one_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    measures: m\n")
    pytester.makepyfile(test_m=MEASURING)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_measured asserts a measured quantity*tests/budget.toml*"]
    )
    table = pytester.path / "budget.toml"
    table.write_text(
        '[test."test_m.py::test_measured"]\nhow = "window"\nratio = 2.0\nruns = 10\n'
        'sigma = 0.05\nwindow = [1.5, 2.5]\nbasis = "a stand-in"\n'
    )
    monkeypatch.setattr(budget, "BUDGET", table)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
