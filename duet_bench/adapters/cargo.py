"""``cargo bench`` with criterion: the benchmarks of one bench target of a crate.

Discovery builds the bench executables once per version (``cargo bench --no-run
--message-format=json --target-dir <crate>/target`` in the crate's directory, ``path``; a
``CARGO_TARGET_DIR`` shared by the versions is overridden, see below), copies the chosen target's
executable to ``.duet-adapters/cargo/<suite>`` in the version's directory (the iteration's
command is then the same relative path in both versions), and lists its benchmarks
with ``--bench --list``: criterion's full ids, ``function``, ``group/function`` and
``group/function/parameter`` (``BenchmarkId``), every ``criterion_group!`` of the target.

One iteration is one invocation of that copy for one benchmark, in the crate's directory as
``cargo bench`` runs it, that calls the benchmark's routine a **fixed number of times**, the
same on both sides, so that the invocation's CPU time (``wait4``) measures the same work::

    .duet-adapters/cargo/parse --bench --exact parse/64 --warm-up-time 1e-9 \\
        --measurement-time 1e-9 --sample-size 500 --nresamples 1 --noplot \\
        --output-format bencher --discard-baseline

criterion cannot be told an iteration count, but with a measurement time of a nanosecond it
takes one call per sample (flat sampling, ``iteration_counts`` in criterion's ``lib.rs``): the
sample size is the number of calls, and the warm-up is one call. The sample size is chosen once
per benchmark at discovery, from two short invocations of every benchmark (``--sample-size
13``: ``--verbose`` for the counts, bencher output for the median time per call), so that one
iteration runs about ``iteration_time`` (0.1 s) of the routine; a group that sets its own
``sample_size`` or ``sampling_mode`` in code keeps its count, which the verbose invocation
reads (criterion prints ``Collecting K samples ... (M iterations)``). The sample
is criterion's ``ns/iter`` (the median of the calls' wall times) as the wall time and the
invocation's CPU time divided by its calls as the CPU time (``criterion-calls/N``,
``duet_bench/harness/duet_outputs.py``); ``metric = "auto"`` and crossover then decide on CPU
time. ``--nresamples 1`` keeps criterion's bootstrap (100,000 resamples by default, tens of
milliseconds) out of that CPU time; ``--discard-baseline`` keeps the two sides from writing
criterion's saved results at the same time.

A group that sets its own ``measurement_time`` in code keeps criterion's timing (its call
count follows the speed of the code), and a suite that sets ``warm_up_time``,
``measurement_time`` or ``sample_size`` asks for criterion's timing for all its benchmarks:
those are measured as before, with ``--output-format bencher`` and no CPU time (wall time
decides).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.tools import WORK_DIR, command_in, find_tool, run_tool
from duet_bench.config import BenchmarkConfig
from duet_bench.config.model import AdapterOptions, Suite, options_of
from duet_bench.config.suites import positive_integer, positive_seconds, slug, word
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import call_as

CARGO_FALLBACKS = ("~/.cargo/bin/cargo", "/root/.cargo/bin/cargo", "/usr/local/cargo/bin/cargo")

#: The CPU-time route (the default): about this much of the routine per duet iteration.
DEFAULT_ITERATION_TIME_S = 0.1
#: criterion's least sample size, and a bound that keeps criterion's per-sample bookkeeping
#: (one f64 per call, sorted at the analysis) small beside the routine.
MIN_CALLS = 10
MAX_CALLS = 100_000
#: criterion's settings that make every sample one call (and the warm-up one call).
ONE_CALL_PER_SAMPLE = ("--warm-up-time", "1e-9", "--measurement-time", "1e-9")
#: The sample size of the invocations that time every benchmark at discovery (not criterion's
#: least, 10, which a group of slow benchmarks often sets itself: a group's own count must show
#: as a different count), and what makes criterion print the counts it makes.
PROBE_SAMPLE_SIZE = 13
VERBOSE = ("--color", "never", "--verbose")

#: criterion's own timing, per invocation, when the suite asks for it (by setting one of
#: these options) or a group keeps its own: short (criterion's defaults, 3 s + 5 s and 100
#: samples, would make one duet iteration take 8 s).
DEFAULT_WARM_UP_TIME_S = 0.1
DEFAULT_MEASUREMENT_TIME_S = 0.2
DEFAULT_SAMPLE_SIZE = 10
TIMED_OPTIONS = ("warm_up_time", "measurement_time", "sample_size")
#: Relative to the crate's directory in each version (cargo's own default).
DEFAULT_TARGET_DIR = "target"

#: ``Benchmarking ID: Collecting K samples in estimated T (M iterations)`` (criterion's
#: ``--verbose`` progress line, on stderr), and the ``time:   [low est high]`` line that follows.
_COLLECTING = re.compile(
    r"^Benchmarking (.+): Collecting (\d+) samples in estimated .*\((\d+) iterations\)\s*$"
)
_TIME = re.compile(r"time:\s+\[\S+ \S+ ([0-9.]+) (\S+) \S+ \S+\]")
#: ``Benchmarking ID: Warming up for T`` and ``Warning: Unable to complete K samples in T.``
#: (criterion's warning when every sample is one call): T is ours (``1.0000 ns``, ``1.0ns``)
#: unless the group set its own warm-up or measurement time in code.
_WARMING = re.compile(r"^Benchmarking (.+): Warming up for (.+?)\s*$")
_UNABLE = re.compile(r"^Warning: Unable to complete \d+ samples in (\S+?)\.(?:\s|$)")
_UNIT_NS = {"ps": 1e-3, "ns": 1.0, "\u00b5s": 1e3, "\u03bcs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True, slots=True)
class Plan:
    """How one benchmark's iteration runs on the CPU-time route: the ``--sample-size`` given,
    and the calls of the routine that makes."""

    sample_size: int
    calls: int


@dataclass(frozen=True, slots=True)
class Probe:
    """One benchmark as the discovery invocation saw it: the sample count and calls criterion
    made (``Collecting K samples ... (M iterations)``), its time per call, and whether it ran
    with our warm-up and measurement times (one call per sample; a group that sets its own
    times in code does not)."""

    samples: int
    calls: int
    call_ns: float
    our_times: bool = True


#: ``test ID ... bench:  X ns/iter (+/- D)`` (``--output-format bencher``: X is the median).
_BENCHER = re.compile(r"^test (.+?) \.\.\. bench:\s+([0-9,._]+) ns/iter\b", re.M)


def medians(text: str) -> dict[str, float]:
    """Benchmark id -> its median time per call (ns), from criterion's bencher output."""
    return {m[1]: float(m[2].replace(",", "").replace("_", "")) for m in _BENCHER.finditer(text)}


def probes(text: str, median_ns: Mapping[str, float] | None = None) -> dict[str, Probe]:
    """Benchmark id -> :class:`Probe`, from criterion's ``--verbose`` output (stdout and stderr
    together); the time per call is the id's ``median_ns`` when given (the verbose output's
    figure is the mean of the calls, which one preempted call can multiply)."""
    found: dict[str, Probe] = {}
    current: tuple[str, int, int, bool] | None = None
    warming: tuple[str, bool] = ("", False)
    one_call = False
    for line in text.splitlines():
        warm = _WARMING.match(line)
        if warm is not None:
            warming, one_call = (warm[1], warm[2] == "1.0000 ns"), False
            continue
        unable = _UNABLE.match(line)
        if unable is not None:
            one_call = unable[1] == "1.0ns"
            continue
        collecting = _COLLECTING.match(line)
        if collecting is not None:
            name = collecting[1]
            ours = warming == (name, True) and one_call
            current = (name, int(collecting[2]), int(collecting[3]), ours)
            continue
        time = _TIME.search(line)
        if time is not None and current is not None:
            scale = _UNIT_NS.get(time[2])
            if scale is not None:
                name, samples, calls, ours = current
                call_ns = (median_ns or {}).get(name) or float(time[1]) * scale
                found[name] = Probe(samples, calls, call_ns, ours)
            current = None
    return found


def plan(probe: Probe | None, iteration_time_s: float) -> Plan | None:
    """The sample size and calls that make one iteration about ``iteration_time_s`` of the
    routine, from the discovery probe (``--sample-size 13``, one call per sample); None when
    the benchmark keeps criterion's own timing."""
    if probe is None or probe.call_ns <= 0 or not probe.our_times:
        return None
    wanted = iteration_time_s * 1e9 / probe.call_ns
    k = PROBE_SAMPLE_SIZE
    if probe.samples == k and probe.calls == k:  # flat: the sample size is the calls
        n = min(MAX_CALLS, max(MIN_CALLS, round(wanted)))
        return Plan(sample_size=n, calls=n)
    if probe.samples == k and probe.calls == k * (k + 1) // 2:  # the group's linear sampling
        n = max(MIN_CALLS, math.ceil((math.sqrt(1 + 8 * min(wanted, MAX_CALLS)) - 1) / 2))
        return Plan(sample_size=n, calls=n * (n + 1) // 2)
    # The group sets its own sample size: its count holds whatever we pass, and is used when it
    # is still a fixed count (one call per sample) long enough for the routine's CPU time to
    # outweigh the process's start-up and criterion's analysis (about 2 ms here).
    fixed = probe.calls in (probe.samples, probe.samples * (probe.samples + 1) // 2)
    if fixed and probe.calls * probe.call_ns >= iteration_time_s * 1e9 / 2:
        return Plan(sample_size=probe.samples, calls=probe.calls)
    return None


def executable_path(suite: Suite) -> str:
    """The copy of the bench executable, relative to the version's directory."""
    return f"{WORK_DIR}/cargo/{slug(suite.name)}"


def bench_executables(messages: str) -> dict[str, str]:
    """Bench target name -> executable, from ``cargo --message-format=json`` output."""
    found: dict[str, str] = {}
    for line in messages.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or message.get("reason") != "compiler-artifact":
            continue
        target = message.get("target") or {}
        executable = message.get("executable")
        if "bench" in (target.get("kind") or []) and isinstance(executable, str):
            found[str(target.get("name"))] = executable
    return found


@dataclass(frozen=True, slots=True)
class CargoOptions(AdapterOptions):
    """A cargo suite's own options: the ``bench`` target, the ``cargo`` program, the
    ``target_dir``, the ``iteration_time`` duet plans calls for, and criterion's own timing
    (``warm_up_time``, ``measurement_time``, ``sample_size``: :data:`TIMED_OPTIONS`)."""

    bench: str | None = None
    cargo: str | None = None
    target_dir: str | None = None
    iteration_time: float | None = None
    warm_up_time: float | None = None
    measurement_time: float | None = None
    sample_size: int | None = None

    @property
    def timed(self) -> bool:
        """Whether the entry gives criterion's own timing (then duet plans no calls)."""
        return any(
            v is not None for v in (self.warm_up_time, self.measurement_time, self.sample_size)
        )


class Cargo:
    name = "cargo"
    iteration = (
        "one invocation of the bench executable (cargo bench --no-run) for one criterion "
        "benchmark (--bench --exact id) that calls its routine a fixed number of times, the "
        "same on both sides; the sample is criterion's ns/iter and the invocation's CPU time "
        "per call"
    )
    options: Mapping[str, Callable[[CargoOptions, str, Any], CargoOptions]] = {
        "bench": lambda o, k, v: replace(o, bench=word(k, v)),
        "cargo": lambda o, k, v: replace(o, cargo=word(k, v)),
        "target_dir": lambda o, k, v: replace(o, target_dir=word(k, v)),
        "iteration_time": lambda o, k, v: replace(o, iteration_time=positive_seconds(k, v)),
        "warm_up_time": lambda o, k, v: replace(o, warm_up_time=positive_seconds(k, v)),
        "measurement_time": lambda o, k, v: replace(o, measurement_time=positive_seconds(k, v)),
        "sample_size": lambda o, k, v: replace(o, sample_size=positive_integer(k, v)),
    }
    no_options = CargoOptions()

    def __init__(self) -> None:
        #: (suite, benchmark) -> its plan, from the latest discovery of the suite (both
        #: versions' iterations run the one command :meth:`benchmark` makes of it).
        self._plans: dict[tuple[str, str], Plan | None] = {}

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        options = options_of(suite, CargoOptions)
        cargo = find_tool(suite, "cargo", "cargo", CARGO_FALLBACKS, options.cargo)
        crate = checkout.directory / suite.path
        if not (crate / "Cargo.toml").is_file():
            raise ConfigError(
                f"suite {suite.name!r}: no Cargo.toml in {suite.path} ({crate})",
                fix="point path at the crate's directory, relative to the repository root",
            )
        bench = options.bench
        # Each version builds in its own target directory, whatever CARGO_TARGET_DIR says: with
        # one directory for both, cargo finds the second version "fresh" (its freshness check
        # follows the first version's dep-info) and hands back the first version's executable,
        # so both sides would run the same code (seen in this adapter's own test).
        target_dir = crate / (options.target_dir or DEFAULT_TARGET_DIR)
        argv = [
            cargo,
            "bench",
            "--no-run",
            "--message-format=json",
            "--target-dir",
            str(target_dir),
        ]
        argv += ["--bench", str(bench)] if bench else ["--benches"]
        out = run_tool(
            argv, suite=suite, checkout=checkout, what="build the bench executables", cwd=crate
        )
        executables = bench_executables(out)
        if bench:
            chosen = executables.get(str(bench))
        elif len(executables) == 1:
            chosen = next(iter(executables.values()))
        else:
            names = ", ".join(sorted(executables)) or "none"
            raise ConfigError(
                f"suite {suite.name!r}: the crate in {suite.path} has {len(executables)} bench "
                f"targets ({names})",
                fix='say which one: bench = "<target>" in the suite entry (one suite per target)',
            )
        if chosen is None:
            raise ConfigError(
                f"suite {suite.name!r}: cargo built no bench executable for {bench!r} "
                f"(built: {', '.join(sorted(executables)) or 'none'})",
                fix="check the [[bench]] name in Cargo.toml",
            )

        copy = checkout.directory / executable_path(suite)

        def place() -> None:
            # In the version's directory, which the version's code can write: as its user
            # (root copying there would follow a link the build left in place of the copy).
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(chosen, copy)
            os.chmod(copy, 0o755)

        call_as(checkout.run_as, place)
        filtered = [suite.filter] if suite.filter else []
        listed = run_tool(
            [str(copy), "--bench", "--list", *filtered],
            suite=suite,
            checkout=checkout,
            what="list the benchmarks",
            cwd=crate,
        )
        suffix = ": benchmark"
        found = tuple(
            dict.fromkeys(
                line[: -len(suffix)] for line in listed.splitlines() if line.endswith(suffix)
            )
        )
        if found and not options.timed:
            self._probe(suite, checkout, str(copy), found)
        return found

    def _probe(self, suite: Suite, checkout: Checkout, copy: str, names: Iterable[str]) -> None:
        """Time every benchmark (``--sample-size 13``, one call per sample) and plan its
        iterations: one invocation of the target with ``--verbose`` says what counts criterion
        makes (its progress, on stderr: the invocation runs through ``sh`` to read both), one
        with ``--output-format bencher`` the median time per call. Both as the version's user,
        as every discovery step."""
        common = [
            "--bench",
            *ONE_CALL_PER_SAMPLE,
            "--sample-size",
            str(PROBE_SAMPLE_SIZE),
            "--nresamples",
            "1",
            "--noplot",
            "--discard-baseline",
        ]
        filtered = [suite.filter] if suite.filter else []
        cwd = checkout.directory / suite.path
        what = "time every benchmark to choose its calls per iteration"
        verbose = run_tool(
            ["/bin/sh", "-c", 'exec "$0" "$@" 2>&1', copy, *common, *VERBOSE, *filtered],
            suite=suite,
            checkout=checkout,
            what=what,
            cwd=cwd,
        )
        bencher = run_tool(
            [copy, *common, "--output-format", "bencher", *filtered],
            suite=suite,
            checkout=checkout,
            what=what,
            cwd=cwd,
        )
        seen = probes(verbose, medians(bencher))
        time_s = options_of(suite, CargoOptions).iteration_time or DEFAULT_ITERATION_TIME_S
        for name in names:
            self._plans[(suite.name, name)] = plan(seen.get(name), time_s)

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        options = options_of(suite, CargoOptions)
        executable = os.path.relpath(executable_path(suite), os.path.normpath(suite.path))
        program = executable if executable.startswith("../") else "./" + executable
        chosen = self._plans.get((suite.name, name))
        if chosen is not None and not options.timed:
            argv = [
                program,
                "--bench",
                "--exact",
                name,
                *ONE_CALL_PER_SAMPLE,
                "--sample-size",
                str(chosen.sample_size),
                "--nresamples",
                "1",
                "--noplot",
                "--output-format",
                "bencher",
                "--discard-baseline",
            ]
            output = f"criterion-calls/{chosen.calls}"
        else:
            argv = [
                program,
                "--bench",
                "--exact",
                name,
                "--warm-up-time",
                f"{options.warm_up_time or DEFAULT_WARM_UP_TIME_S:g}",
                "--measurement-time",
                f"{options.measurement_time or DEFAULT_MEASUREMENT_TIME_S:g}",
                "--sample-size",
                str(options.sample_size or DEFAULT_SAMPLE_SIZE),
                "--output-format",
                "bencher",
                "--discard-baseline",
            ]
            output = "criterion"
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="command",
            command=command_in(suite.path, argv),
            output=output,
        )


ADAPTER = Cargo()
