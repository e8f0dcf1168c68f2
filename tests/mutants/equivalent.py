"""Generated mutants that no test can kill: they change no behaviour. Keyed by the hash that
ends a generated mutant's name (``tests.mutants.generate``; it does not change when lines move),
each with where it is and why it is equivalent. They are left out of the run and the score."""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {
    "014252ee90": (
        "duet_stats/crossover.py, core_contrast: values.shape[1] > 1 -> >= 1. Unreachable with "
        "one iteration per run: such a run never has both assignments, and core_contrast has "
        "returned None before this line"
    ),
    "01631d8c55": (
        "duet_stats/intervals.py, _bca_log_interval: max(1, BLOCK_ELEMENTS // n) -> max(2, ...). "
        "Differs only above 16,384 runs, and then only in scipy's batch size, not the draws"
    ),
    "01e809f082": (
        "duet_bench/analysis/benchmark.py, _count: abs(x) < 1e15 -> < 2e15. An integer count "
        "between 1e15 and 2e15 prints the same either way: units.sig writes it whole too "
        "('1500000000000000'), as str(int(x)) does"
    ),
    "2799fe5c21": (
        "duet_bench/plan/runs.py, plan_runs: pair[(index + 1) % 2] -> pair[(index - 1) % 2]. "
        "Python's % of a positive modulus is never negative: (i + 1) % 2 == (i - 1) % 2"
    ),
}


def is_equivalent(name: str) -> bool:
    return name.rsplit(":", 1)[-1] in EQUIVALENT
