"""The runner: measure the runs of a benchmark (two containers, the barrier, two workers).

For a duet run both sides start together, each in a fresh container pinned to its CPU, and
meet at a two-party barrier before every iteration; for a sequential run each side runs alone,
one after the other. One module per concern, in the order a run needs them:

- :mod:`~duet_bench.runner.context`: what every run of an invocation shares, a side's state
- :mod:`~duet_bench.runner.paths`: the /tmp and run-as policy, the worker's interpreter
- :mod:`~duet_bench.runner.worker_spec`: the worker spec, argv, environment; installing the harness
- :mod:`~duet_bench.runner.inner_loops`: how many calls make one iteration of a python benchmark
- :mod:`~duet_bench.runner.supervise`: waiting on the sides, the watchdog, abort, kill and reap
- :mod:`~duet_bench.runner.samples`: reading a side's samples file and the end of its stderr
- :mod:`~duet_bench.runner.outcome`: the side and run records, failures named by their cause
- :mod:`~duet_bench.runner.run`: one run with its clean-up, and every run of a benchmark
"""

from __future__ import annotations

from duet_bench.runner.context import RunnerContext
from duet_bench.runner.inner_loops import calibrate_inner_loops
from duet_bench.runner.paths import (
    WORKER,
    accessible_by,
    under_host_tmp,
    uses_host_tmp,
    worker_python_for,
)
from duet_bench.runner.run import RunCallback, measure_benchmark, measure_run
from duet_bench.runner.samples import Samples, read_samples
from duet_bench.runner.worker_spec import install_harness, worker_spec

__all__ = [
    "WORKER",
    "RunCallback",
    "RunnerContext",
    "Samples",
    "accessible_by",
    "calibrate_inner_loops",
    "install_harness",
    "measure_benchmark",
    "measure_run",
    "read_samples",
    "under_host_tmp",
    "uses_host_tmp",
    "worker_python_for",
    "worker_spec",
]
