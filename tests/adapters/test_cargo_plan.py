"""The cargo adapter's choice of calls per iteration (``duet_bench/adapters/cargo.py``): what
criterion's ``--verbose`` output of the discovery invocation says, and the plan made of it.
Pure functions on criterion 0.5.1's real output (``tests/fixtures/adapters/groups.rs``)."""

from __future__ import annotations

import pytest

from duet_bench.adapters.cargo import MAX_CALLS, Plan, Probe, medians, plan, probes

#: criterion 0.5.1, ``--bench --warm-up-time 1e-9 --measurement-time 1e-9 --sample-size 10
#: --nresamples 1 --noplot --discard-baseline --color never --verbose``, stderr into stdout.
VERBOSE = """Benchmarking sizes/xorshift/10000
Benchmarking sizes/xorshift/10000: Warming up for 1.0000 ns

Warning: Unable to complete 10 samples in 1.0ns. You may wish to increase target time to 168.8\u00b5s.
Benchmarking sizes/xorshift/10000: Collecting 10 samples in estimated 168.85 \u00b5s (10 iterations)
Benchmarking sizes/xorshift/10000: Analyzing
sizes/xorshift/10000    time:   [16.976 \u00b5s 16.606 \u00b5s 16.976 \u00b5s]
                        thrpt:  [589.05 Melem/s 602.20 Melem/s 589.05 Melem/s]
Found 1 outliers among 10 measurements (10.00%)
  1 (10.00%) high severe
mean   [16.976 \u00b5s 16.976 \u00b5s] std. dev.      [1.1604 \u00b5s 1.1604 \u00b5s]
median [16.255 \u00b5s 16.255 \u00b5s] med. abs. dev. [1.4826 ns 1.4826 ns]
Benchmarking a/very/long/benchmark/id/of/a/group
Benchmarking a/very/long/benchmark/id/of/a/group: Collecting 10 samples in estimated 2.0 ms (55 iterations)
Benchmarking a/very/long/benchmark/id/of/a/group: Analyzing
a/very/long/benchmark/id/of/a/group
                        time:   [36.1 ns 36.4 ns 36.9 ns]
                        change: [-1.2% +0.3% +1.0%] (p = 0.62 > 0.05)
Benchmarking own/steady: Collecting 500 samples in estimated 16.1 ms (500 iterations)
own/steady              time:   [32.1 \u00b5s 32.3 \u00b5s 32.6 \u00b5s]
Benchmarking timed/steady: Collecting 10 samples in estimated 50.4 ms (385 iterations)
timed/steady            time:   [32.1 \u00b5s 153.29 \u00b5s 32.6 \u00b5s]
"""  # noqa: E501


def test_probes_read_every_benchmarks_samples_calls_and_time_per_call() -> None:
    seen = probes(VERBOSE)
    assert seen["sizes/xorshift/10000"] == Probe(samples=10, calls=10, call_ns=16606.0)
    # An id longer than criterion's column is printed on its own line before the time.
    assert seen["a/very/long/benchmark/id/of/a/group"] == Probe(10, 55, 36.4)
    assert seen["own/steady"] == Probe(500, 500, pytest.approx(32300.0))
    assert seen["timed/steady"] == Probe(10, 385, pytest.approx(153290.0))
    assert set(seen) == {
        "sizes/xorshift/10000", "a/very/long/benchmark/id/of/a/group", "own/steady",
        "timed/steady",
    }  # fmt: skip


def test_the_time_per_call_is_the_median_of_the_bencher_invocation() -> None:
    """The verbose output's time is the mean of ten calls: one preempted call (2 ms beside 16
    µs) would make the count a tenth of what fills the iteration time."""
    bencher = (
        "test sizes/xorshift/10000 ... bench:       16255 ns/iter (+/- 1160)\n"
        "test own/steady ... bench:      32,498 ns/iter (+/- 1,120)\n"
    )
    assert medians(bencher) == {"sizes/xorshift/10000": 16255.0, "own/steady": 32498.0}
    seen = probes(VERBOSE, medians(bencher))
    assert seen["sizes/xorshift/10000"] == Probe(10, 10, 16255.0)
    assert seen["own/steady"] == Probe(500, 500, 32498.0)
    # An id the bencher invocation did not print keeps the verbose output's figure.
    assert seen["timed/steady"].call_ns == pytest.approx(153290.0)


def test_plan_fixes_the_calls_that_fill_the_iteration_time() -> None:
    # Flat, one call per sample: the sample size is the count.
    assert plan(Probe(10, 10, 20_000.0), 0.1) == Plan(sample_size=5000, calls=5000)
    assert plan(Probe(10, 10, 1.0), 0.1) == Plan(MAX_CALLS, MAX_CALLS)
    assert plan(Probe(10, 10, 1e9), 0.1) == Plan(10, 10)
    # Linear sampling set in code: K samples make K(K+1)/2 calls.
    linear = plan(Probe(10, 55, 20_000.0), 0.1)
    assert linear == Plan(sample_size=100, calls=5050)
    # The group's own sample size: its count, when it fills half the iteration time or more.
    assert plan(Probe(500, 500, 200_000.0), 0.1) == Plan(500, 500)
    assert plan(Probe(20, 20, 30_000.0), 0.1) is None
    # The group's own times: the count follows the speed; criterion's timing. No probe: too.
    assert plan(Probe(10, 385, 153_290.0), 0.1) is None
    assert plan(None, 0.1) is None
