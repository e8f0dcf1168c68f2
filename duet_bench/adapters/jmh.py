"""JMH: the benchmarks of a Maven project built into JMH's uber jar, measured in process.

Discovery, as the version's user, in the project's directory (``path``): ``mvn -B -q
-DskipTests package`` (the layout of JMH's archetype: ``target/benchmarks.jar``, option
``jar``), then duet's JVM harness (``duet_bench/harness/java/``: the barrier client and a JMH
profiler) is compiled with ``javac`` against that jar into ``.duet-adapters/jmh/classes`` of the
version's directory, and ``java -jar benchmarks.jar -lp`` lists the benchmarks with their
parameters. Every parameter combination is a duet benchmark named as JMH prints it, with the
parameters after a colon: ``bench.Parse.run:size=64,mode=fast``.

One duet run is one JMH fork, a ``native`` benchmark: both sides start JMH at once::

    java -Djmh.ignoreLock=true -cp target/benchmarks.jar:<version>/.duet-adapters/jmh/classes \\
        duet.harness.jmh.DuetJmh '^bench\\.Parse\\.run$' -p size=64 -w 100ms -r 100ms

``DuetJmh`` runs JMH with one fork, ``DUET_WARMUP`` warm-up and ``DUET_ITERATIONS``
measurement iterations (duet's), average time in ns/op, and its profiler
(``DuetJmhProfiler``) in the forked VM waits at the barrier before every iteration (JMH's
``InternalProfiler.beforeIteration``, before it releases the benchmark threads) and writes
the iteration's sample after it: JMH's score in ns/op as the wall time, and the forked JVM's CPU
time over the iteration (every thread: the benchmark's, the JIT compilers', the GC's) divided
by the operations JMH counted as the CPU time. Crossing over moves every thread of both JVMs of
the side (JMH's host VM and its fork: the side cgroup's ``cgroup.procs``) with ``taskset -a``
between two rendezvous, outside the measured time. The done line of the samples file records
the forked JVM (its path, version and the flags it runs with).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from duet_bench.adapters.base import Checkout
from duet_bench.adapters.tools import WORK_DIR, command_in, find_tool, run_tool
from duet_bench.config import BenchmarkConfig
from duet_bench.config.model import AdapterOptions, Suite, options_of
from duet_bench.config.suites import positive_seconds, word
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import call_as

MVN_FALLBACKS = ("/usr/bin/mvn", "/usr/share/maven/bin/mvn", "/opt/maven/bin/mvn")
JAVA_FALLBACKS = ("/usr/bin/java", "/usr/lib/jvm/default-java/bin/java")
JAVAC_FALLBACKS = ("/usr/bin/javac", "/usr/lib/jvm/default-java/bin/javac")

#: JMH's own iteration times when the suite does not say (JMH's default is 10 s each: a duet
#: run of 5 + 10 iterations would take minutes).
DEFAULT_WARMUP_TIME_S = 0.1
DEFAULT_MEASUREMENT_TIME_S = 0.2
DEFAULT_JAR = "target/benchmarks.jar"

#: duet's JVM classes, relative to the version's directory.
CLASSES_DIR = f"{WORK_DIR}/jmh/classes"
SOURCES_DIR = f"{WORK_DIR}/jmh/src"
MAIN_CLASS = "duet.harness.jmh.DuetJmh"

_REGEX_SPECIAL = frozenset(".^$*+?()[]{}|\\")
_PARAM_LINE = re.compile(r'^\s+param "([^"]+)" = \{(.*)\}\s*$')


def java_sources() -> dict[str, bytes]:
    """duet's JVM harness sources (package data): relative path -> bytes."""
    root = resources.files("duet_bench") / "harness" / "java"
    found: dict[str, bytes] = {}

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            name = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, name + "/")
            elif child.name.endswith(".java"):
                found[name] = child.read_bytes()

    walk(root, "")
    return found


def parse_listing(text: str) -> tuple[str, ...]:
    """Benchmark names from ``java -jar benchmarks.jar -lp``: one per parameter combination,
    ``name:key=value,key=value`` in JMH's order, plain ``name`` without parameters."""
    names: list[str] = []
    current: str | None = None
    params: list[tuple[str, list[str]]] = []

    def flush() -> None:
        if current is None:
            return
        if not params:
            names.append(current)
            return
        keys = [k for k, _ in params]
        for values in itertools.product(*(v for _, v in params)):
            names.append(
                current + ":" + ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
            )

    for line in text.splitlines():
        if not line.strip() or line.startswith("Benchmarks:"):
            continue
        match = _PARAM_LINE.match(line)
        if match:
            params.append((match.group(1), [v.strip() for v in match.group(2).split(",")]))
            continue
        if line.startswith((" ", "\t")):
            continue
        flush()
        current, params = line.strip(), []
    flush()
    return tuple(dict.fromkeys(names))


def split_name(name: str) -> tuple[str, list[tuple[str, str]]]:
    """``bench.X.run:size=64,mode=a`` -> (``bench.X.run``, [(size, 64), (mode, a)])."""
    method, _, rest = name.partition(":")
    params = [tuple(p.split("=", 1)) for p in rest.split(",")] if rest else []
    return method, [(k, v) for k, v in params]


def _millis(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


@dataclass(frozen=True, slots=True)
class JmhOptions(AdapterOptions):
    """A jmh suite's own options: the programs (``mvn``, ``java``, ``javac``), the benchmarks
    ``jar``, ``jvm_args`` appended to the forked JVM's, and JMH's ``warmup_time`` and
    ``measurement_time`` (seconds)."""

    mvn: str | None = None
    java: str | None = None
    javac: str | None = None
    jar: str | None = None
    jvm_args: str | None = None
    warmup_time: float | None = None
    measurement_time: float | None = None


class Jmh:
    name = "jmh"
    iteration = (
        "one JMH iteration (-w/-r long) in a JVM that runs the whole duet run (one JMH fork), "
        "started together on both sides by duet's profiler; the sample is JMH's score in ns/op "
        "and the forked JVM's CPU time per operation"
    )
    options: Mapping[str, Callable[[JmhOptions, str, Any], JmhOptions]] = {
        "mvn": lambda o, k, v: replace(o, mvn=word(k, v)),
        "java": lambda o, k, v: replace(o, java=word(k, v)),
        "javac": lambda o, k, v: replace(o, javac=word(k, v)),
        "jar": lambda o, k, v: replace(o, jar=word(k, v)),
        "jvm_args": lambda o, k, v: replace(o, jvm_args=word(k, v)),
        "warmup_time": lambda o, k, v: replace(o, warmup_time=positive_seconds(k, v)),
        "measurement_time": lambda o, k, v: replace(o, measurement_time=positive_seconds(k, v)),
    }
    no_options = JmhOptions()

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]:
        project = checkout.directory / suite.path
        if not (project / "pom.xml").is_file():
            raise ConfigError(
                f"suite {suite.name!r}: no pom.xml in {suite.path} ({project})",
                fix="point path at the Maven project of the JMH benchmarks (Gradle is not "
                "supported), relative to the repository root",
            )
        options = options_of(suite, JmhOptions)
        mvn = find_tool(suite, "mvn", "mvn", MVN_FALLBACKS, options.mvn)
        javac = find_tool(suite, "javac", "javac", JAVAC_FALLBACKS, options.javac)
        java = find_tool(suite, "java", "java", JAVA_FALLBACKS, options.java)
        run_tool(
            [mvn, "-B", "-q", "-DskipTests", "package"],
            suite=suite,
            checkout=checkout,
            what="build the JMH benchmarks",
            cwd=project,
        )
        jar = project / (options.jar or DEFAULT_JAR)
        if not jar.is_file():
            raise ConfigError(
                f"suite {suite.name!r}: mvn package built no {jar.relative_to(checkout.directory)}",
                fix="build JMH's uber jar as JMH's archetype does (maven-shade-plugin, "
                'finalName benchmarks), or name it: jar = "target/<name>.jar"',
            )
        sources = java_sources()
        source_root = checkout.directory / SOURCES_DIR

        def place() -> None:
            # In the version's directory, which its code can write: as its user, new files.
            for relative, data in sources.items():
                target = source_root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink() or target.exists():
                    target.unlink()
                with open(target, "xb") as f:
                    f.write(data)

        call_as(checkout.run_as, place)
        run_tool(
            [
                javac, "-nowarn", "--release", "11", "-encoding", "UTF-8",
                "-d", str(checkout.directory / CLASSES_DIR), "-cp", str(jar),
                *(str(source_root / relative) for relative in sorted(sources)),
            ],
            suite=suite,
            checkout=checkout,
            what="compile duet's JMH profiler against the benchmarks jar",
            cwd=project,
        )  # fmt: skip
        argv = [java, "-Djmh.ignoreLock=true", "-jar", str(jar), "-lp"]
        if suite.filter:
            argv.append(suite.filter)
        listed = run_tool(
            argv, suite=suite, checkout=checkout, what="list the benchmarks", cwd=project
        )
        return parse_listing(listed)

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig:
        options = options_of(suite, JmhOptions)
        method, params = split_name(name)
        jar = options.jar or DEFAULT_JAR
        # Relative to the project's directory, where both JVMs run (JMH's fork inherits the
        # host's class path and working directory).
        classes = os.path.relpath(CLASSES_DIR, os.path.normpath(suite.path))
        argv = [
            options.java or "java",
            "-Djmh.ignoreLock=true",
            "-cp",
            f"{jar}:{classes}",
            MAIN_CLASS,
            "^" + "".join("\\" + c if c in _REGEX_SPECIAL else c for c in method) + "$",
        ]
        for key, value in params:
            argv += ["-p", f"{key}={value}"]
        argv += [
            "-w",
            _millis(options.warmup_time or DEFAULT_WARMUP_TIME_S),
            "-r",
            _millis(options.measurement_time or DEFAULT_MEASUREMENT_TIME_S),
        ]
        if options.jvm_args is not None:
            argv += ["-jvmArgsAppend", options.jvm_args]
        return BenchmarkConfig(
            name=f"{suite.name}/{name}",
            kind="native",
            command=command_in(suite.path, argv),
        )


ADAPTER = Jmh()
