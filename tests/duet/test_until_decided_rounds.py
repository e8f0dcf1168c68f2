"""The machine time a suite measured until decided shares, round by round (docs/statistics.md,
method 2b, "A suite, round by round"): which budget the suite has, and which run still fits.
The rounds themselves run real benchmarks: tests/integration/test_until_decided_suite.py."""

from __future__ import annotations

from pathlib import Path

from duet_bench.config.read import load_config
from duet_bench.plan import BenchmarkSpec, for_suite
from duet_bench.session.until_decided import Budget


def specs(tmp_path: Path, text: str) -> list[BenchmarkSpec]:
    (tmp_path / "duet.toml").write_text(text)
    config = load_config(tmp_path / "duet.toml")
    return [b.spec for b in for_suite(config, baseline_dir=tmp_path, candidate_dir=tmp_path)]


def test_the_suite_shares_the_largest_budget_of_its_benchmarks(tmp_path: Path) -> None:
    got = specs(
        tmp_path,
        'max_runs = 20\n\n[[benchmark]]\nname = "a"\ncommand = "true"\nbudget = "1m"\n\n'
        '[[benchmark]]\nname = "b"\ncommand = "true"\nbudget = "90s"\n\n'
        '[[benchmark]]\nname = "c"\ncommand = "true"\n',
    )
    budget = Budget.of(got)
    assert budget is not None
    assert budget.total_s == 90.0
    # Measured until decided with a maximum and without a budget, or a fixed design: no budget.
    assert Budget.of(got[2:]) is None
    fixed = 'runs = 10\n\n[[benchmark]]\nname = "a"\ncommand = "true"\n'
    assert Budget.of(specs(tmp_path, fixed)) is None
    # Nothing set: the default design, whose budget is 10 min.
    default = Budget.of(specs(tmp_path, '[[benchmark]]\nname = "a"\ncommand = "true"\n'))
    assert default is not None
    assert default.total_s == 600.0


def test_a_run_starts_only_when_it_would_end_within_the_budget() -> None:
    now = [100.0]
    budget = Budget(10.0, clock=lambda: now[0])
    assert budget.spent_s() == 0.0
    # A benchmark's first run (its time not known yet) starts while anything is left.
    assert budget.fits(None)
    now[0] = 107.0
    assert budget.fits(None)
    assert budget.fits(3.0)  # ends at 10.0: within
    assert not budget.fits(3.5)
    now[0] = 110.0
    assert not budget.fits(None)
