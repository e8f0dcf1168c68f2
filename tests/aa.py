"""A/A checks whose chance of failing is known whatever the noise of the machine.

A bootstrap interval over R runs cannot carry the claim "fails by chance in 1 CI run of N"
for large N: it lies inside ``[min, max]`` of the run ratios, so with 5 runs all of them fall on
one side of 1 in 1 A/A of 16, and at 99.99% the replicates cannot reach the tail the level asks
for (simulated: with 16 normal runs and 2,000 replicates, the ``expanded`` 99.99% interval
excluded 1 from below in 0.4% of A/A data sets, not 0.005%; ``docs/statistics.md``, "Five runs
cannot give a 99% bootstrap interval"). These checks test the property that an A/A comparison
is about, that duet treats its two sides alike, with tests whose false-alarm rate is exact or
measured:

- :func:`sign_test_p`: exact. If the sides are exchangeable (the same program on both, and
  duet favours neither) each run's ratio is above 1 or below it with probability 1/2
  independently of the noise's size or shape, so the count above 1 is Binomial(R, 1/2).
- :func:`t_lower_bound`: Student's t on the runs' log ratios. Its level holds when the run log
  ratios are near normal; measured at 99% over hundreds of A/A data sets with 5-30 runs it covered
  98-100% (``docs/statistics.md``, the ``t`` rows), so its false-alarm rate is at most about
  twice the nominal one. It is for tests with too few runs for the sign test to ever fail.

Each run's log ratio weighs the two CPU assignments equally (crossover), as the analysis does:
the plain mean of an odd number of crossed iterations carries part of the cores' difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from duet_bench.metrics import known

#: The false-alarm rate of each A/A check: with at most about ten such checks in the suite,
#: they fail CI by chance in under 1 run of 1,000 together (tests/README.md keeps the sum).
AA_ALPHA = 1e-4


def run_log_ratios(benchmark: Mapping[str, Any], metric: str | None = None) -> list[float]:
    """Each good run's log ratio (candidate over baseline) of one benchmark of a results
    document, in the analysed ``metric`` (the analysis's choice when None)."""
    from duet_bench.analysis.estimate import run_log_ratios
    from duet_bench.analysis.series import series_of
    from duet_bench.results import from_dict

    doc = from_dict({"schema": "duet-results/3", "benchmarks": [dict(benchmark)]})
    record = doc.benchmarks[0]
    series = series_of(record.ok_runs())
    chosen = metric or known(benchmark.get("analysis", {}).get("metric"))
    pair = series.of(chosen)
    assert pair is not None, f"{record.name}: no {chosen} data: {series.why_missing(chosen)}"
    return run_log_ratios(*pair, series.assignment)


def sign_test_p(log_ratios: list[float]) -> float:
    """The exact two-sided sign test of "the median run ratio is 1": the chance, for
    exchangeable sides, of a count above 1 at least this far from R/2. Runs at exactly 1 are
    left out (the test stays exact given the others)."""
    above = sum(1 for x in log_ratios if x > 0)
    below = sum(1 for x in log_ratios if x < 0)
    n, k = above + below, max(above, below)
    tail = sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n
    return float(min(1.0, 2.0 * tail))


def t_lower_bound(log_ratios: list[float], alpha: float) -> float:
    """The one-sided Student's t lower confidence bound, at ``1 - alpha``, of the mean run log
    ratio."""
    import scipy.stats

    values = np.asarray(log_ratios, dtype=np.float64)
    n = values.size
    se = float(values.std(ddof=1)) / math.sqrt(n)
    return float(values.mean()) - float(scipy.stats.t.ppf(1.0 - alpha, n - 1)) * se


def assert_neither_side_favoured(benchmark: Mapping[str, Any], *, min_runs: int = 20) -> None:
    """An A/A benchmark (the same work on both sides) whose runs favour neither side: the sign
    test at ``AA_ALPHA``. With 20 runs it fails when 19 or 20 of them lean one way (chance
    4.0e-5 for a fair duet: 1 CI run in 25,000); a duet that gave one side a head start of
    twice the runs' standard deviation fails it 92 times in 100, of five times always."""
    logs = run_log_ratios(benchmark)
    assert len(logs) >= min_runs, f"{len(logs)} good runs; the sign test needs {min_runs}"
    p = sign_test_p(logs)
    assert p > AA_ALPHA, (
        f"the runs favour one side: {sum(x > 0 for x in logs)} of {len(logs)} ratios above 1 "
        f"(sign test p = {p:.2g}); run ratios {[round(math.exp(x), 4) for x in logs]}"
    )


#: How much slower an unchanged benchmark may measure before :func:`assert_not_slowed` fails:
#: above what code layout moves a benchmark whose neighbours changed (a few %), below the 30% of
#: the adapters' slowed benchmark.
SAME_WORK_BOUND = 1.10


def assert_not_slowed(benchmark: Mapping[str, Any]) -> None:
    """A benchmark whose code is the same on both sides was not measured slower than
    ``SAME_WORK_BOUND``: the one-sided t lower bound at ``1 - AA_ALPHA`` of its ratio lies below
    it. It fails by chance only when the t bound misses (``AA_ALPHA``, about twice that measured:
    1 call in 5,000, see the module's docstring); it does not ask that the two builds be equally
    fast, which code layout can upset by a few %. A side that measured the slowed benchmark's
    work (30%) fails it when its runs spread by less than 3% (5 runs), 10% (10) or 16% (20)."""
    logs = run_log_ratios(benchmark)
    low = math.exp(t_lower_bound(logs, AA_ALPHA))
    assert low <= SAME_WORK_BOUND, (
        f"{benchmark.get('name')}: measured slower than {SAME_WORK_BOUND} (t lower bound "
        f"{low:.4f}); run ratios {[round(math.exp(x), 4) for x in logs]}"
    )
