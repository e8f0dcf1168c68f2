"""duet_bench.analysis.series on records built by hand: what the analysis does with readings the
kernel gives under load (the run-queue cap), checked on numbers whose answer is known."""

from __future__ import annotations

import numpy as np

from duet_bench.analysis.series import series_of
from duet_bench.results import RunRecord, SideRecord


def record(index: int, wall: tuple[int, ...], runq: tuple[int, ...]) -> RunRecord:
    def side() -> SideRecord:
        return SideRecord(
            iterations_ns=wall,
            iteration_cpu_ns=tuple(w // 2 for w in wall),
            iteration_runq_ns=runq,
        )

    return RunRecord(index=index, status="ok", baseline=side(), candidate=side())


def test_a_run_queue_reading_above_the_iterations_wall_time_is_capped_at_it() -> None:
    # Under load the kernel adds a wait that began before the iteration: 1500 ns of run-queue
    # delay in an iteration of 1000 ns.
    runs = (
        record(0, wall=(1000, 2000, 3000), runq=(1500, 100, 3000)),
        record(1, wall=(1000, 2000, 3000), runq=(0, 2500, 10)),
    )
    series = series_of(runs)
    assert series.runq is not None
    for side in series.runq:
        np.testing.assert_array_equal(side, [[1000, 100, 3000], [0, 2000, 10]])
        assert (side <= series.wall[0]).all()
    # The samples keep what was read; only the analysis caps it.
    assert runs[0].baseline.iteration_runq_ns == (1500, 100, 3000)
    # An iteration that waited its whole wall time leaves nothing of wall-runq: not analysed,
    # with the reason, rather than a zero or a negative time.
    assert series.of("wall-runq") is None
    assert series.why_missing("wall-runq") == (
        "the run-queue delay took a whole iteration (clock resolutions)"
    )


def test_wall_less_run_queue_is_the_difference_where_every_reading_is_below_the_wall() -> None:
    runs = (
        record(0, wall=(1000, 2000), runq=(100, 2600)),
        record(1, wall=(1000, 2000), runq=(0, 0)),
    )
    series = series_of(runs)
    # 2600 > 2000 is capped at 2000, which leaves 0 ns: the metric is refused.
    assert series.of("wall-runq") is None
    capped = series_of(
        (record(0, wall=(1000, 2000), runq=(100, 1999)), record(1, wall=(1000, 2000), runq=(0, 0)))
    )
    less = capped.of("wall-runq")
    assert less is not None
    np.testing.assert_array_equal(less[0], [[900, 1], [1000, 2000]])
