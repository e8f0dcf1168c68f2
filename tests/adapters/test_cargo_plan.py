"""The cargo adapter's choice of calls per iteration (``duet_bench/adapters/cargo.py``): what
criterion's ``--verbose`` output of the discovery invocation says, and the plan made of it.
Pure functions on criterion 0.5.1's real output (``tests/fixtures/adapters/groups.rs``)."""

from __future__ import annotations

import pytest

from duet_bench.adapters.cargo import MAX_CALLS, Plan, Probe, medians, plan, probes

#: criterion 0.5.1, ``--bench --warm-up-time 1e-9 --measurement-time 1e-9 --sample-size 13
#: --nresamples 1 --noplot --discard-baseline --color never --verbose``, stderr into stdout.
VERBOSE = """Benchmarking sizes/xorshift/10000
Benchmarking sizes/xorshift/10000: Warming up for 1.0000 ns

Warning: Unable to complete 13 samples in 1.0ns. You may wish to increase target time to 530.7\u00b5s, or reduce sample count to 10.
Benchmarking sizes/xorshift/10000: Collecting 13 samples in estimated 530.67 \u00b5s (13 iterations)
Benchmarking sizes/xorshift/10000: Analyzing
sizes/xorshift/10000    time:   [16.976 \u00b5s 16.606 \u00b5s 16.976 \u00b5s]
                        thrpt:  [589.05 Melem/s 602.20 Melem/s 589.05 Melem/s]
Found 1 outliers among 13 measurements (7.69%)
  1 (7.69%) high severe
mean   [16.976 \u00b5s 16.976 \u00b5s] std. dev.      [1.1604 \u00b5s 1.1604 \u00b5s]
median [16.255 \u00b5s 16.255 \u00b5s] med. abs. dev. [1.4826 ns 1.4826 ns]
Benchmarking a/very/long/benchmark/id/of/a/group
Benchmarking a/very/long/benchmark/id/of/a/group: Warming up for 1.0000 ns
Warning: Unable to complete 13 samples in 1.0ns. You may wish to increase target time to 3.3\u00b5s, enable flat sampling, or reduce sample count to 10.
Benchmarking a/very/long/benchmark/id/of/a/group: Collecting 13 samples in estimated 3.3 \u00b5s (91 iterations)
Benchmarking a/very/long/benchmark/id/of/a/group: Analyzing
a/very/long/benchmark/id/of/a/group
                        time:   [36.1 ns 36.4 ns 36.9 ns]
                        change: [-1.2% +0.3% +1.0%] (p = 0.62 > 0.05)
Benchmarking own/steady: Warming up for 1.0000 ns
Warning: Unable to complete 500 samples in 1.0ns. You may wish to increase target time to 16.3ms, or reduce sample count to 10.
Benchmarking own/steady: Collecting 500 samples in estimated 16.289 ms (500 iterations)
own/steady              time:   [32.1 \u00b5s 32.3 \u00b5s 32.6 \u00b5s]
Benchmarking timed/steady: Warming up for 20.000 ms
Warning: Unable to complete 13 samples in 50.0ms. You may wish to increase target time to 54.6ms, enable flat sampling, or reduce sample count to 10.
Benchmarking timed/steady: Collecting 13 samples in estimated 54.613 ms (91 iterations)
timed/steady            time:   [32.1 \u00b5s 153.29 \u00b5s 32.6 \u00b5s]
Benchmarking slow/timed: Warming up for 1.0000 ns
Benchmarking slow/timed: Collecting 13 samples in estimated 5.0 s (1547 iterations)
slow/timed              time:   [3.1 ms 3.2 ms 3.3 ms]
"""  # noqa: E501


def test_probes_read_every_benchmarks_samples_calls_and_time_per_call() -> None:
    seen = probes(VERBOSE)
    assert seen["sizes/xorshift/10000"] == Probe(samples=13, calls=13, call_ns=16606.0)
    # An id longer than criterion's column is printed on its own line before the time.
    assert seen["a/very/long/benchmark/id/of/a/group"] == Probe(13, 91, 36.4)
    assert seen["own/steady"] == Probe(500, 500, pytest.approx(32300.0))
    # The group's own times, printed where ours would be: a count that looks fixed under load
    # (the warm-up's time per call inflated by preemption) is still criterion's timing.
    assert seen["timed/steady"] == Probe(13, 91, pytest.approx(153290.0), our_times=False)
    # No "Unable to complete" warning: more than one call per sample.
    assert seen["slow/timed"] == Probe(13, 1547, pytest.approx(3.2e6), our_times=False)
    assert set(seen) == {
        "sizes/xorshift/10000", "a/very/long/benchmark/id/of/a/group", "own/steady",
        "timed/steady", "slow/timed",
    }  # fmt: skip


def test_the_time_per_call_is_the_median_of_the_bencher_invocation() -> None:
    """The verbose output's time is the mean of 13 calls: one preempted call (2 ms beside 16
    µs) would make the count a tenth of what fills the iteration time."""
    bencher = (
        "test sizes/xorshift/10000 ... bench:       16255 ns/iter (+/- 1160)\n"
        "test own/steady ... bench:      32,498 ns/iter (+/- 1,120)\n"
    )
    assert medians(bencher) == {"sizes/xorshift/10000": 16255.0, "own/steady": 32498.0}
    seen = probes(VERBOSE, medians(bencher))
    assert seen["sizes/xorshift/10000"] == Probe(13, 13, 16255.0)
    assert seen["own/steady"] == Probe(500, 500, 32498.0)
    # An id the bencher invocation did not print keeps the verbose output's figure.
    assert seen["timed/steady"].call_ns == pytest.approx(153290.0)
    assert plan(seen["timed/steady"], 0.1) is None


def test_plan_fixes_the_calls_that_fill_the_iteration_time() -> None:
    # Flat, one call per sample: the sample size is the count.
    assert plan(Probe(13, 13, 20_000.0), 0.1) == Plan(sample_size=5000, calls=5000)
    assert plan(Probe(13, 13, 1.0), 0.1) == Plan(MAX_CALLS, MAX_CALLS)
    assert plan(Probe(13, 13, 1e9), 0.1) == Plan(10, 10)
    # Linear sampling set in code: K samples make K(K+1)/2 calls.
    linear = plan(Probe(13, 91, 20_000.0), 0.1)
    assert linear == Plan(sample_size=100, calls=5050)
    # The group's own sample size: its count, when it fills half the iteration time or more;
    # criterion's least, 10, set by a group of slow benchmarks, is the group's too.
    assert plan(Probe(500, 500, 200_000.0), 0.1) == Plan(500, 500)
    assert plan(Probe(10, 10, 20_000_000.0), 0.1) == Plan(10, 10)
    assert plan(Probe(10, 10, 20_000.0), 0.1) is None
    assert plan(Probe(20, 20, 30_000.0), 0.1) is None
    # The group's own times: the count follows the speed; criterion's timing. No probe: too.
    assert plan(Probe(13, 385, 153_290.0), 0.1) is None
    assert plan(Probe(13, 91, 32_000.0, our_times=False), 0.1) is None
    assert plan(None, 0.1) is None
