"""``go test -bench``: the benchmarks of one Go package, sub-benchmarks included.

Discovery builds the package's test binary once per version (``go test -c -o
.duet-adapters/go/<suite>.test PATH``, in the version's directory, after its build) and runs
every selected benchmark once (``-test.benchtime 1x``, as the version's user): the names Go
prints on its result lines are the benchmarks, so a ``b.Run`` table at any depth gives one
benchmark per leaf (``BenchmarkSum64/4KB``, ``BenchmarkX/size=4KB/alg=fast``), named exactly as
``go test -bench`` names them (spaces made ``_``, duplicates ``#01``, non-printables escaped:
Go's ``testing/match.go``). A benchmark without sub-benchmarks is its own leaf. The suite's
filter is Go's ``-bench`` pattern (levels split on ``/``), default every benchmark.

One iteration is one invocation of that binary for one leaf, in the package's directory as
``go test`` runs it, the pattern quoting and anchoring each level of the name
(:func:`bench_pattern`), so it selects that leaf and nothing else::

    .duet-adapters/go/parse.test -test.run '^$' -test.bench '^BenchmarkParse$/^4KB$' \\
        -test.benchtime 4213x -test.cpu 1 -test.benchmem

and the sample is its ``ns/op``: wall time per operation. The operation count N is fixed per
benchmark, the same on both sides (:meth:`Go.operations`: the suite's ``benchtime`` when it is
a count, else the count Go chooses for that time in the baseline), so the process's CPU time
over N operations is a CPU sample (the worker divides the ``wait4`` CPU time by the count on
the result line) and ``metric = "auto"`` decides on it. ``-test.benchmem`` adds ``B/op`` and
``allocs/op`` to the result line; they and ``b.ReportMetric``'s units are recorded beside the
time (the side's ``figures``), and a change of the allocations between the versions is a note.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.tools import WORK_DIR, command_in, find_tool, run_tool
from duet_bench.config import BenchmarkConfig
from duet_bench.config.model import AdapterOptions, Suite, options_of
from duet_bench.config.suites import slug, word
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import call_as

#: ``-test.benchtime`` when the suite does not say (Go's syntax: ``100ms``, ``1000x``).
DEFAULT_BENCHTIME = "100ms"

GO_FALLBACKS = ("/usr/local/go/bin/go", "~/go/bin/go", "/usr/lib/go/bin/go")

#: The characters ``regexp.QuoteMeta`` escapes (Go's ``regexp/regexp.go``, ``special``).
_GO_SPECIAL = frozenset("\\.+*?()|[]{}^$")

#: A result line of ``go test -bench``: the name (Go rewrote every space of it), padding, the
#: operation count, the first figure (``BenchmarkResult.String``).
_RESULT_NAME = re.compile(r"^(Benchmark\S*)[ \t]+(\d+)[ \t]+[0-9.eE+-]+ \S", re.M)


def binary_path(suite: Suite) -> str:
    """The test binary, relative to the version's directory."""
    return f"{WORK_DIR}/go/{slug(suite.name)}.test"


def quote_meta(text: str) -> str:
    """``text`` as a Go regular expression matching exactly it (``regexp.QuoteMeta``)."""
    return "".join("\\" + c if c in _GO_SPECIAL else c for c in text)


def bench_pattern(name: str) -> str:
    """The ``-test.bench`` pattern selecting the benchmark ``name`` and nothing else.

    Go splits the pattern on ``/`` outside brackets and parentheses and matches each level of
    a benchmark's name with its own element (``testing/match.go``, ``splitRegexp``): each level
    of ``name`` is quoted and anchored (``^BenchmarkX$/^size=4KB$``), so ``4KB`` does not also
    select ``14KB``, and ``case`` not ``case#01``. A name is as Go printed it (no spaces, no
    non-printables), so Go's rewriting of the pattern leaves it unchanged."""
    return "/".join(f"^{quote_meta(level)}$" for level in name.split("/"))


def result_names(text: str) -> tuple[str, ...]:
    """The benchmarks on the result lines of ``go test -bench`` output, in order, once each."""
    return tuple(dict.fromkeys(name for name, _ in _RESULT_NAME.findall(text)))


def result_counts(text: str) -> dict[str, int]:
    """The operation count of each benchmark on the result lines (the last line of a name)."""
    return {name: int(count) for name, count in _RESULT_NAME.findall(text)}


@dataclass(frozen=True, slots=True)
class GoOptions(AdapterOptions):
    """A go suite's own options: ``benchtime`` (a duration or a count ``1000x``), ``go`` (the
    go program)."""

    benchtime: str | None = None
    go: str | None = None


class Go:
    name = "go"
    iteration = (
        "one invocation of the package's test binary (go test -c) for one benchmark or "
        "sub-benchmark (-test.bench ^Name$/^Sub$), a fixed count of operations (-test.benchtime "
        "Nx); the sample is its ns/op, the CPU sample the process's CPU time over N"
    )
    options: Mapping[str, Callable[[GoOptions, str, Any], GoOptions]] = {
        "benchtime": lambda o, k, v: replace(o, benchtime=word(k, v)),
        "go": lambda o, k, v: replace(o, go=word(k, v)),
    }
    no_options = GoOptions()

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        go = find_tool(suite, "go", "go", GO_FALLBACKS, options_of(suite, GoOptions).go)
        binary = checkout.directory / binary_path(suite)

        def make_room() -> None:
            # In the version's directory: as its user, as go builds there (docs/isolation.md).
            binary.parent.mkdir(parents=True, exist_ok=True)
            binary.unlink(missing_ok=True)

        call_as(checkout.run_as, make_room)
        package = suite.path if suite.path.startswith((".", "/")) else "./" + suite.path
        run_tool(
            [go, "test", "-c", "-o", str(binary), package],
            suite=suite,
            checkout=checkout,
            what="build the test binary",
        )
        if not binary.is_file():
            raise ConfigError(
                f"suite {suite.name!r}: go test -c built no test binary for {suite.path} in "
                f"{checkout.directory}: the package has no test files",
                fix="point path at the package holding the *_test.go files with the benchmarks",
            )
        # Sub-benchmarks exist only once their parent runs: every selected benchmark runs
        # once (b.N = 1), as the version's user, and prints a result line per leaf.
        out = run_tool(
            [
                str(binary),
                "-test.run",
                "^$",
                "-test.bench",
                suite.filter or ".",
                "-test.benchtime",
                "1x",
                "-test.cpu",
                "1",
            ],
            suite=suite,
            checkout=checkout,
            what="run every benchmark once (-test.benchtime 1x) to list it and its sub-benchmarks",
            cwd=checkout.directory / suite.path,
        )
        return result_names(out)

    def operations(self, suite: Suite, checkout: Checkout, names: Sequence[str]) -> dict[str, int]:
        """The operation count of every iteration of each of ``names``: the suite's
        ``benchtime`` when it is a count (``1000x``), else the count Go itself chooses for that
        time in the baseline (one run of every selected benchmark with ``-test.benchtime`` that
        time, as the version's user: its result line's count)."""
        benchtime = options_of(suite, GoOptions).benchtime or DEFAULT_BENCHTIME
        if fixed := re.fullmatch(r"([0-9]+)x", benchtime):
            return {name: max(1, int(fixed[1])) for name in names}
        if not names:
            return {}
        out = run_tool(
            [
                str(checkout.directory / binary_path(suite)),
                "-test.run",
                "^$",
                "-test.bench",
                suite.filter or ".",
                "-test.benchtime",
                benchtime,
                "-test.cpu",
                "1",
            ],
            suite=suite,
            checkout=checkout,
            what=f"run every benchmark for {benchtime} to choose its operation count",
            cwd=checkout.directory / suite.path,
        )
        counts = result_counts(out)
        lost = [name for name in names if name not in counts]
        if lost:
            raise ConfigError(
                f"suite {suite.name!r}: {', '.join(lost)} printed no result when run for "
                f"{benchtime} in {checkout.directory} (it did when run once): it fails or skips "
                "when run longer",
                fix="run the suite's benchmarks by hand with -benchtime "
                f"{benchtime} in the baseline and fix what it prints, or set benchtime to an "
                'operation count (benchtime = "1000x")',
            )
        return {name: counts[name] for name in names}

    def benchmark(self, suite: Suite, name: str, operations: int | None = None) -> BenchmarkConfig:
        benchtime = options_of(suite, GoOptions).benchtime or DEFAULT_BENCHTIME
        if operations is not None:
            benchtime = f"{operations}x"
        binary = os.path.relpath(binary_path(suite), os.path.normpath(suite.path))
        program = binary if binary.startswith("../") else "./" + binary
        argv = [
            program,
            "-test.run",
            "^$",
            "-test.bench",
            bench_pattern(name),
            "-test.benchtime",
            str(benchtime),
            "-test.cpu",
            "1",
            "-test.benchmem",
        ]
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="command",
            command=command_in(suite.path, argv),
            output="go",
        )


ADAPTER = Go()
