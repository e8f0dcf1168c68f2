"""``cargo bench`` with criterion: the benchmarks of one bench target of a crate.

Discovery builds the bench executables once per version (``cargo bench --no-run
--message-format=json --target-dir <crate>/target`` in the crate's directory, ``path``; a
``CARGO_TARGET_DIR`` shared by the versions is overridden, see below), copies the chosen target's
executable to ``.duet-adapters/cargo/<suite>`` in the version's directory (the iteration's
command is then the same relative path in both versions), and lists its benchmarks
with ``--bench --list``. One iteration is one invocation of that copy for one benchmark, in
the crate's directory as ``cargo bench`` runs it::

    .duet-adapters/cargo/parse --bench --exact parse/64 --warm-up-time 0.1 \\
        --measurement-time 0.2 --sample-size 10 --output-format bencher --discard-baseline

and the sample is criterion's ``ns/iter`` (its point estimate of the time per iteration, whole
nanoseconds): wall time only, criterion reports no CPU time. ``--discard-baseline`` keeps the
two sides from writing criterion's saved results at the same time.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from duet_bench.adapters.base import Checkout, Suite
from duet_bench.adapters.suites import positive_integer, positive_seconds, word
from duet_bench.adapters.tools import WORK_DIR, command_in, find_tool, run_tool, slug
from duet_bench.config import BenchmarkConfig
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import call_as

CARGO_FALLBACKS = ("~/.cargo/bin/cargo", "/root/.cargo/bin/cargo", "/usr/local/cargo/bin/cargo")

#: Criterion's own settings per invocation when the suite does not say: short (criterion's
#: defaults, 3 s + 5 s and 100 samples, would make one duet iteration take 8 s).
DEFAULT_WARM_UP_TIME_S = 0.1
DEFAULT_MEASUREMENT_TIME_S = 0.2
DEFAULT_SAMPLE_SIZE = 10
#: Relative to the crate's directory in each version (cargo's own default).
DEFAULT_TARGET_DIR = "target"


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


class Cargo:
    name = "cargo"
    iteration = (
        "one invocation of the bench executable (cargo bench --no-run) for one criterion "
        "benchmark (--bench --exact name, short warm-up and measurement); the sample is its "
        "ns/iter"
    )
    options: Mapping[str, Callable[[str, Any], Any]] = {
        "bench": word,
        "cargo": word,
        "target_dir": word,
        "warm_up_time": positive_seconds,
        "measurement_time": positive_seconds,
        "sample_size": positive_integer,
    }

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        cargo = find_tool(suite, "cargo", "cargo", CARGO_FALLBACKS)
        crate = checkout.directory / suite.path
        if not (crate / "Cargo.toml").is_file():
            raise ConfigError(
                f"suite {suite.name!r}: no Cargo.toml in {suite.path} ({crate})",
                fix="point path at the crate's directory, relative to the repository root",
            )
        bench = suite.options.get("bench")
        # Each version builds in its own target directory, whatever CARGO_TARGET_DIR says: with
        # one directory for both, cargo finds the second version "fresh" (its freshness check
        # follows the first version's dep-info) and hands back the first version's executable,
        # so both sides would run the same code (seen in this adapter's own test).
        target_dir = crate / str(suite.options.get("target_dir", DEFAULT_TARGET_DIR))
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
        argv = [str(copy), "--bench", "--list"]
        if suite.filter:
            argv.append(suite.filter)
        listed = run_tool(
            argv, suite=suite, checkout=checkout, what="list the benchmarks", cwd=crate
        )
        suffix = ": benchmark"
        return tuple(
            dict.fromkeys(
                line[: -len(suffix)] for line in listed.splitlines() if line.endswith(suffix)
            )
        )

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        options = suite.options
        executable = os.path.relpath(executable_path(suite), os.path.normpath(suite.path))
        program = executable if executable.startswith("../") else "./" + executable
        argv = [
            program,
            "--bench",
            "--exact",
            name,
            "--warm-up-time",
            f"{options.get('warm_up_time', DEFAULT_WARM_UP_TIME_S):g}",
            "--measurement-time",
            f"{options.get('measurement_time', DEFAULT_MEASUREMENT_TIME_S):g}",
            "--sample-size",
            str(options.get("sample_size", DEFAULT_SAMPLE_SIZE)),
            "--output-format",
            "bencher",
            "--discard-baseline",
        ]
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="command",
            command=command_in(suite.path, argv),
            output="criterion",
        )


ADAPTER = Cargo()
