"""Google Benchmark: a C++ benchmark binary built by the configuration's ``build`` command.

Discovery runs ``BINARY --benchmark_list_tests`` (with ``--benchmark_filter=FILTER`` when the
suite has a filter) in the version's directory: every benchmark instance under the name the
library gives it, which is the name it prints in its own output: ``BM_Sort/4096`` (``Arg``,
``Args``, ``Range``, ``Ranges``, ``DenseRange``), ``BM_Tmpl<int>/8`` (``BENCHMARK_TEMPLATE``),
``BM_Io/real_time`` (``UseRealTime``), ``BM_Gpu/manual_time`` (``UseManualTime``),
``BM_Sort/repeats:3`` (``Repetitions``), ``BM_Mt/threads:2``, ``BM_X/n:8`` (``ArgName``), a
``Name(...)`` as written. The aggregates a benchmark with repetitions prints (``_mean``,
``_median``, ``_stddev``, ``_cv``, its own ``ComputeStatistics``) are not listed and are not
benchmarks. One iteration is one invocation of the binary for one benchmark::

    ./build/bench --benchmark_filter='^BM_Parse/64$' --benchmark_format=json \\
        --benchmark_min_time=0.05

the filter being the benchmark's name with every regular-expression character escaped and
anchored (:func:`filter_for`: it selects exactly that instance, ``BM_Tmpl<int>/8`` and
``custom name(x)/threads:2`` included). The sample is what the library reports for it
(``duet_bench/harness/duet_outputs.py``): ``real_time`` per operation as the wall time and
``cpu_time`` per operation as the CPU time, so ``metric = "auto"`` decides on the library's
own CPU figure, per operation of the loop the library timed. With repetitions it is the mean of
the repetitions' rows (or the ``_mean`` aggregate under ``ReportAggregatesOnly``). A
``/real_time`` or ``/manual_time`` benchmark has the real (manual) time only, no CPU time: its
author declared that figure the measure (threads, waits, a device), so ``auto`` decides on it.

The library chooses its iteration count to fill ``min_time``; no fixed count is passed: the
figure is already per operation and the CPU time the library's own over the timed loop, so
both sides' figures measure the same work per operation whatever the counts. (A fixed count,
``--benchmark_min_time=100x``, exists from 1.8 only; Debian 12's 1.7.1 refuses it.)
``min_time`` is written as a plain number of seconds: the only form Google Benchmark 1.7
(Debian 12) accepts, and still accepted by 1.8 and later (which also take ``0.05s``/``100x``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.tools import program_path, run_tool
from duet_bench.config import BenchmarkConfig
from duet_bench.config.model import AdapterOptions, Suite, options_of
from duet_bench.config.suites import positive_seconds
from duet_bench.errors import ConfigError

#: Seconds the library runs one benchmark for in one invocation (its own iteration count is
#: chosen to fill it), when the suite does not say: long enough for a stable mean per
#: operation, short enough that a run of 30 invocations stays in seconds.
DEFAULT_MIN_TIME_S = 0.05

#: Characters with a meaning in the library's filter regular expressions.
_REGEX_SPECIAL = frozenset(".^$*+?()[]{}|\\")


def filter_for(name: str) -> str:
    """The ``--benchmark_filter`` that selects exactly ``name``."""
    return "^" + "".join("\\" + c if c in _REGEX_SPECIAL else c for c in name) + "$"


@dataclass(frozen=True, slots=True)
class GoogleBenchmarkOptions(AdapterOptions):
    """A google-benchmark suite's own option: ``min_time`` (seconds)."""

    min_time: float | None = None


class GoogleBenchmark:
    name = "google-benchmark"
    iteration = (
        "one invocation of the benchmark binary for one benchmark "
        "(--benchmark_filter=^name$, JSON output); the sample is the library's real and CPU "
        "time per operation (real or manual time only for /real_time and /manual_time)"
    )
    options: Mapping[str, Callable[[GoogleBenchmarkOptions, str, Any], GoogleBenchmarkOptions]] = {
        "min_time": lambda o, k, v: replace(o, min_time=positive_seconds(k, v))
    }
    no_options = GoogleBenchmarkOptions()

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        binary = checkout.directory / suite.path
        if not binary.is_file():
            raise ConfigError(
                f"suite {suite.name!r}: no benchmark binary at {suite.path} in "
                f"{checkout.directory} (after the build)",
                fix="the configuration's build command must build it, at that path relative "
                "to the repository root",
            )
        argv = [str(binary), "--benchmark_list_tests=true"]
        if suite.filter:
            argv.append(f"--benchmark_filter={suite.filter}")
        out = run_tool(argv, suite=suite, checkout=checkout, what="list the benchmarks")
        return tuple(dict.fromkeys(line.strip() for line in out.splitlines() if line.strip()))

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        given = options_of(suite, GoogleBenchmarkOptions).min_time
        min_time = DEFAULT_MIN_TIME_S if given is None else given
        argv = [
            program_path(suite.path),
            f"--benchmark_filter={filter_for(name)}",
            "--benchmark_format=json",
            f"--benchmark_min_time={min_time:g}",
        ]
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="command",
            command=shlex.join(argv),
            output="google-benchmark",
        )


ADAPTER = GoogleBenchmark()
