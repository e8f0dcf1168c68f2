"""``go test -bench``: the benchmarks of one Go package.

Discovery builds the package's test binary once per version (``go test -c -o
.duet-adapters/go/<suite>.test PATH``, in the version's directory, after its build) and lists
its benchmarks with ``-test.list`` (top-level ``Benchmark*`` functions; the suite's filter is
a Go regular expression on their names). One iteration is one invocation of that binary for
one benchmark, in the package's directory as ``go test`` runs it::

    .duet-adapters/go/parse.test -test.run '^$' -test.bench '^BenchmarkParse$' \\
        -test.benchtime 100ms -test.cpu 1

and the sample is its ``ns/op``: wall time per operation. Go reports no CPU time per
operation, so these benchmarks have no CPU series (``metric = "auto"`` decides on wall time).
A benchmark with sub-benchmarks (``b.Run``) prints several results and is refused at its
first iteration: select the sub-benchmarks' parent out with the filter.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from duet_bench.adapters.base import Checkout, Suite
from duet_bench.adapters.suites import word
from duet_bench.adapters.tools import WORK_DIR, command_in, find_tool, run_tool, slug
from duet_bench.config import BenchmarkConfig
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import call_as

#: ``-test.benchtime`` when the suite does not say (Go's syntax: ``100ms``, ``1000x``).
DEFAULT_BENCHTIME = "100ms"

GO_FALLBACKS = ("/usr/local/go/bin/go", "~/go/bin/go", "/usr/lib/go/bin/go")


def binary_path(suite: Suite) -> str:
    """The test binary, relative to the version's directory."""
    return f"{WORK_DIR}/go/{slug(suite.name)}.test"


class Go:
    name = "go"
    iteration = (
        "one invocation of the package's test binary (go test -c) for one benchmark "
        "(-test.bench ^Name$); the sample is its ns/op"
    )
    options: Mapping[str, Callable[[str, Any], Any]] = {"benchtime": word, "go": word}

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        go = find_tool(suite, "go", "go", GO_FALLBACKS)
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
        out = run_tool(
            [str(binary), "-test.list", suite.filter or "^Benchmark"],
            suite=suite,
            checkout=checkout,
            what="list the benchmarks",
            cwd=checkout.directory / suite.path,
        )
        return tuple(
            dict.fromkeys(
                line.strip() for line in out.splitlines() if line.strip().startswith("Benchmark")
            )
        )

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        benchtime = suite.options.get("benchtime", DEFAULT_BENCHTIME)
        binary = os.path.relpath(binary_path(suite), os.path.normpath(suite.path))
        program = binary if binary.startswith("../") else "./" + binary
        argv = [
            program,
            "-test.run",
            "^$",
            "-test.bench",
            f"^{name}$",
            "-test.benchtime",
            str(benchtime),
            "-test.cpu",
            "1",
        ]
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="command",
            command=command_in(suite.path, argv),
            output="go",
        )


ADAPTER = Go()
