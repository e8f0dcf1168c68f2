"""The JVM in process: the Java barrier client (duet_bench/harness/java/duet/harness/), replayed
against the shared vectors and paired with a Python peer in a real two-process barrier; its
native-benchmark contract (DuetNative); and the JMH adapter (duet_bench/adapters/jmh.py).

The drivers in tests/adapters/java/ are compiled with javac into a temporary directory
(``-Xlint:all -Werror``); without a JDK the tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duet_bench.adapters.jmh import ADAPTER, MVN_FALLBACKS, JmhOptions, parse_listing
from duet_bench.config.model import Suite
from duet_bench.harness import duet_barrier as db
from duet_bench.metrics import CPU_BOUND_SHARE
from tests.adapters.suites import ISOLATION, compare, tool
from tests.build_cache import cached_build
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import (
    DriverActor,
    Processes,
    load_vectors,
    peer_result,
    python_peer,
    run_sequence,
    two_cpus,
    vector_id,
)
from tests.integration.gitrepo import GitRepo, make_repo

shm_path = shared.shm_path
processes = shared.processes

ROOT = Path(__file__).resolve().parents[2]
JAVA_HARNESS = ROOT / "duet_bench" / "harness" / "java"
DRIVERS = Path(__file__).resolve().parent / "java"
JAVAC = shutil.which("javac")
JAVA = shutil.which("java")

needs_jdk = pytest.mark.skipif(
    JAVAC is None or JAVA is None, reason="no JDK (javac, java): the Java client cannot be built"
)


def client_sources() -> list[str]:
    """The client without the JMH classes (those need jmh-core on the class path)."""
    return sorted(str(p) for p in (JAVA_HARNESS / "duet" / "harness").glob("*.java"))


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert JAVAC is not None
    out = tmp_path_factory.mktemp("duet-java")
    sources = [
        *client_sources(),
        str(DRIVERS / "BarrierDriver.java"),
        str(DRIVERS / "NativeBench.java"),
    ]
    result = subprocess.run(
        [JAVAC, "-Xlint:all", "-Werror", "--release", "11", "-d", str(out), *sources],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"javac:\n{result.stderr}"
    return out


def java_argv(classes: Path, main: str) -> list[str]:
    assert JAVA is not None
    # A small heap and one GC thread: the driver is a barrier party, not a workload.
    return [
        JAVA,
        "-Xmx64m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-cp",
        str(classes),
        main,
    ]


class JavaActor(DriverActor):
    """The Java client in a driver process (the JVM's start: a minute for its first answer)."""

    language = "Java"

    def __init__(self, processes: Processes, classes: Path, path: str) -> None:
        super().__init__(processes, java_argv(classes, "BarrierDriver"), path, start_timeout_s=60)


@pytest.fixture
def java_actor(classes: Path, processes: Processes, shm_path: str) -> Iterator[JavaActor]:
    actor = JavaActor(processes, classes, shm_path)
    yield actor
    actor.quit()


# -- the vectors -------------------------------------------------------------------------------


@needs_jdk
@pytest.mark.parametrize("vector", load_vectors("sequence"), ids=vector_id)
def test_sequence_vector_java(vector: dict[str, Any], java_actor: JavaActor, shm_path: str) -> None:
    Path(shm_path).write_bytes(bytes.fromhex(vector["file"]["hex"]))
    run_sequence(vector, java_actor, shm_path)


@needs_jdk
def test_java_refusals_say_what_is_wrong(java_actor: JavaActor, shm_path: str) -> None:
    with db.create(shm_path) as orchestrator:
        orchestrator._words[db.W_VERSION] = 2
        answer = java_actor.command(f"attach {shm_path} 0")
    assert answer.startswith("refused bad_version ")
    assert f"{shm_path} uses barrier protocol version 2, this client speaks version 1" in answer


# -- with a Python peer ------------------------------------------------------------------------


def read_starts(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


@needs_jdk
@pytest.mark.measures
def test_java_and_python_meet_every_iteration(
    java_actor: JavaActor, processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """3000 rendezvous: the Java side never starts before the Python side arrived, both
    generations end at n, and the release times (System.nanoTime against time.monotonic_ns)
    are the same clock: the 10th percentile of the start skew is under 200 µs, a bound that
    two spinning parties on their own CPUs meet by three orders of magnitude (the C client's
    test uses the same one)."""
    n = 3000
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        peer = python_peer(processes, shm_path, 1, n, cpu=cpus[1])
        assert java_actor.attach(0) == "ok"
        if cpus[0] >= 0:
            subprocess.run(["taskset", "-a", "-p", "-c", str(cpus[0]), str(java_actor.pid)],
                           check=True, capture_output=True)  # fmt: skip
        answer = java_actor.command(f"rounds 0 {n} 10000000000 {tmp_path / 'j.txt'}", 120)
        assert answer == "done"
        result = peer_result(peer, timeout_s=120)
        assert result["outcome"] == "done"
        assert orchestrator.generations() == (n, n)
    starts = read_starts(tmp_path / "j.txt")
    for i in range(n):
        assert starts[i] >= result["arrivals"][i]
    skews = sorted(abs(a - b) for a, b in zip(starts, result["starts"], strict=True))
    assert skews[n // 10] < 200_000, "10th percentile of start skew above 200 µs"


@needs_jdk
@pytest.mark.measures
def test_python_abort_stops_a_waiting_java_party(java_actor: JavaActor, shm_path: str) -> None:
    """A Java party far into its poll-with-sleeps phase sees the abort within a sleep (1 ms);
    2 s are allowed here for the answer's round trip through two processes on a loaded machine
    (0.56 s was seen at a load average of 15)."""
    with db.create(shm_path) as orchestrator:
        assert java_actor.attach(0) == "ok"
        assert java_actor.command("spin 0 0 0") == "ok"
        java_actor.send("wait 0 30000000000")
        time.sleep(0.3)
        begin = time.monotonic()
        orchestrator.abort(db.REASON_WATCHDOG)
        answer = java_actor.answer()
        took = time.monotonic() - begin
    assert answer == f"aborted {db.REASON_WATCHDOG} {os.getpid()}"
    assert took < 2.0


@needs_jdk
def test_java_timeout(java_actor: JavaActor, shm_path: str) -> None:
    with db.create(shm_path):
        assert java_actor.attach(0) == "ok"
        assert java_actor.command("spin 0 5000000 5000000") == "ok"
        begin = time.monotonic()
        assert java_actor.command("wait 0 60000000") == "timeout"
        took = time.monotonic() - begin
        assert java_actor.command("wait 0 60000000") == "broken"
    assert 0.06 <= took < 2.0


# -- the native contract -----------------------------------------------------------------------


def native_env(shm_path: str, slot: int, samples: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DUET_BARRIER": shm_path,
        "DUET_SLOT": str(slot),
        "DUET_SIDE": ("baseline", "candidate")[slot],
        "DUET_WARMUP": "2",
        "DUET_ITERATIONS": "5",
        "DUET_TIMEOUT_NS": "30000000000",
        "DUET_SAMPLES": str(samples),
        **extra,
    }


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@needs_jdk
@pytest.mark.measures
def test_java_native_programs_cross_over_and_write_the_samples_file(
    classes: Path, processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """Two JVMs crossing over two CPUs at every iteration, as duet runs them: each line records
    the CPU the whole JVM was moved to, alternating, the two sides always on different CPUs."""
    cpus = two_cpus()
    if cpus[0] < 0:
        pytest.skip("one CPU: nothing to cross over")
    lists = (f"{cpus[0]},{cpus[1]}", f"{cpus[1]},{cpus[0]}")
    with db.create(shm_path) as orchestrator:
        sides = [
            processes.start(
                java_argv(classes, "NativeBench"),
                env=native_env(shm_path, slot, tmp_path / f"{slot}.jsonl", DUET_CPUS=lists[slot]),
                stderr=subprocess.PIPE,
            )
            for slot in (0, 1)
        ]
        for side in sides:
            _, err = side.communicate(timeout=120)
            assert side.returncode == 0, err
        # Two rendezvous per iteration when crossing over.
        assert orchestrator.generations() == (14, 14)
    lines = [read_lines(tmp_path / f"{slot}.jsonl") for slot in (0, 1)]
    for slot, side_lines in enumerate(lines):
        assert side_lines[0] == {
            "duet_samples": 1,
            "side": ("baseline", "candidate")[slot],
            "pid": sides[slot].pid,
        }
        assert side_lines[-1] == {"done": True, "inner_loops": 1}
        samples = side_lines[1:-1]
        assert [(s["phase"], s["index"]) for s in samples] == [("warmup", 0), ("warmup", 1)] + [
            ("measure", i) for i in range(5)
        ]
        order = [int(c) for c in lists[slot].split(",")]
        assert [s["cpu"] for s in samples] == [order[k % 2] for k in range(7)]
        for sample in samples:
            assert set(sample) == {
                "phase", "index", "start_ns", "duration_ns", "cpu_ns", "runq_ns", "cpu"
            }  # fmt: skip
            assert 2_000_000 <= sample["duration_ns"] < 10_000_000_000
            assert sample["cpu_ns"] > 0
            assert sample["runq_ns"] >= 0  # every thread's wait for a CPU over the iteration
    for first, second in zip(lines[0][1:-1], lines[1][1:-1], strict=True):
        assert first["cpu"] != second["cpu"]


@needs_jdk
@pytest.mark.measures
def test_java_native_failure_aborts_the_other_side(
    classes: Path, processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path) as orchestrator:
        failing = processes.start(
            java_argv(classes, "NativeBench"),
            env=native_env(shm_path, 0, tmp_path / "0.jsonl", NATIVE_FAIL_AT="3"),
            stderr=subprocess.PIPE,
        )
        other = processes.start(
            java_argv(classes, "NativeBench"),
            env=native_env(shm_path, 1, tmp_path / "1.jsonl"),
            stderr=subprocess.PIPE,
        )
        _, failing_err = failing.communicate(timeout=120)
        _, other_err = other.communicate(timeout=120)
        assert orchestrator.abort_reason() == db.REASON_PARTY_FAILED
    assert failing.returncode == 3, failing_err
    assert other.returncode == 5, other_err
    assert read_lines(tmp_path / "0.jsonl")[-1] == {
        "error": "BenchmarkFailed: told to fail in iteration 3",
        "exit_code": 3,
    }
    assert read_lines(tmp_path / "1.jsonl")[-1]["error"].startswith("BarrierAborted: ")


@needs_jdk
def test_java_native_without_duet_says_so(classes: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    done = subprocess.run(
        java_argv(classes, "NativeBench"), env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "DUET_SAMPLES is not set: this program must be started by duet" in done.stderr


# -- the JMH adapter ---------------------------------------------------------------------------

JMH_FIXTURE = ROOT / "tests" / "fixtures" / "adapters" / "jmh"
MVN = tool("mvn", MVN_FALLBACKS)
needs_maven = pytest.mark.skipif(
    MVN is None or JAVAC is None or JAVA is None,
    reason=f"no Maven (mvn on PATH or in {MVN_FALLBACKS}) or no JDK: JMH projects cannot be built",
)


def test_listing_gives_one_benchmark_per_parameter_combination() -> None:
    listing = (
        "Benchmarks: \n"
        "bench.A.plain\n"
        "bench.B.run\n"
        '  param "size" = {64, 1024}\n'
        '  param "mode" = {fast, slow}\n'
    )
    assert parse_listing(listing) == (
        "bench.A.plain",
        "bench.B.run:size=64,mode=fast",
        "bench.B.run:size=64,mode=slow",
        "bench.B.run:size=1024,mode=fast",
        "bench.B.run:size=1024,mode=slow",
    )


def test_one_duet_run_is_one_jmh_fork_of_that_combination() -> None:
    suite = Suite(
        adapter="jmh",
        name="jvm",
        path="bench",
        options=JmhOptions(warmup_time=0.05, measurement_time=0.25, jvm_args="-Xmx1g -XX:+UseG1GC"),
    )
    config = ADAPTER.benchmark(suite, "bench.B.run:size=64,mode=fast")
    assert config.name == "jvm/bench.B.run:size=64,mode=fast"
    assert config.kind == "native"
    assert config.command == (
        "cd bench && exec java -Djmh.ignoreLock=true -cp "
        "target/benchmarks.jar:../.duet-adapters/jmh/classes duet.harness.jmh.DuetJmh "
        "'^bench\\.B\\.run$' -p size=64 -p mode=fast -w 50ms -r 250ms "
        "-jvmArgsAppend '-Xmx1g -XX:+UseG1GC'"
    )


def jmh_project(tmp_path: Path, runs: int, suite_filter: str | None = None) -> GitRepo:
    """The fixture JMH project in a git history: HEAD doubles Work.ROUNDS (bench.WorkBenchmark.mix
    takes twice as long), bench.SteadyBenchmark.steady does not change."""
    files = {
        str(p.relative_to(JMH_FIXTURE)): p.read_text()
        for p in sorted(JMH_FIXTURE.rglob("*"))
        if p.is_file()
    }
    config = (
        f'runs = {runs}\niterations = 5\nwarmup = 2\nisolation = "{ISOLATION}"\n'
        'metric = "wall"\n'
        f'\n[[suite]]\nadapter = "jmh"\npath = "."\nname = "jvm"\nmvn = "{MVN}"\n'
        "warmup_time = 0.1\nmeasurement_time = 0.1\n"
        + (f'filter = "{suite_filter}"\n' if suite_filter else "")
    )
    repo = make_repo(tmp_path / "project", [{**files, "duet.toml": config}])
    repo.tag("base", "HEAD")
    work = "src/main/java/bench/Work.java"
    doubled = files[work].replace("ROUNDS = 2000;", "ROUNDS = 4000;")
    assert doubled != files[work]
    repo.commit({work: doubled}, "Work.mix: twice the rounds")
    return repo


@needs_maven
@pytest.mark.measures
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_jmh_suite_finds_a_2x_regression(tmp_path: Path) -> None:
    """duet compare base HEAD on a real JMH project (Maven, jmh-core 1.37; the first build
    downloads JMH and the Maven plugins into ~/.m2 once), its WorkBenchmark only (the suite's
    filter): HEAD doubles its work. The verdict must be a regression with a ratio between 1.6
    and 2.5: five runs (the fewest with an interval) of five 100 ms iterations. At a load
    average of 16 to 31 on this 2-CPU machine the A/A interval of this suite was [0.966, 1.15]
    with ten runs (benchmarks/results/jmh/loaded), about +-10%, so +-15% with five: a 2x is
    four such half-widths away from the 5% threshold, and the chance that its interval reaches
    down to 1.05 is far below the 1% the 99% interval allows. A first try with four runs read
    1.99; the test took 150 s here, the Maven builds included; the bounds are +-25%."""
    repo = jmh_project(tmp_path, runs=5, suite_filter="WorkBenchmark")
    done, doc = compare(repo, "base", "HEAD", tmp_path / "out")
    assert "Traceback" not in done.stderr, done.stderr
    by_name = {b["name"]: b for b in doc.get("benchmarks", [])}
    mix = "jvm/bench.WorkBenchmark.mix:seed=7"
    assert set(by_name) == {mix}, done.stdout + done.stderr
    for run in by_name[mix]["runs"]:
        assert run["status"] == "ok", run
        for side in ("baseline", "candidate"):
            # JMH's ns/op of a 2000-round loop (microseconds), not the iteration's 100 ms.
            assert all(0 < ns < 10_000_000 for ns in run[side]["iterations_ns"]), run
            assert len(run[side]["iterations_ns"]) == 5
            # The forked JVM, as the profiler describes it, reaches the results file.
            jvm = run[side]["runtime"]["jvm"]
            assert (jvm["jmh_version"], jvm["mode"]) == ("1.37", "avgt"), jvm
            assert any(flag.startswith("-Xm") or flag.startswith("-D") for flag in jvm["flags"])
    analysis = by_name[mix]["analysis"]
    assert analysis["verdict"] == "regression", analysis
    assert 1.6 < analysis["ratio"] < 2.5, analysis
    assert done.returncode == 1, done.stdout + done.stderr


@pytest.fixture(scope="module")
def fixture_jar(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """The fixture project built once (mvn package) and duet's JVM classes compiled against
    it: (benchmarks.jar, classes directory). Kept for the later pytest invocations of the same
    checkout (tests/build_cache.py), keyed by the project, the harness sources and the tools'
    versions."""
    assert MVN is not None
    assert JAVAC is not None
    mvn, javac = MVN, JAVAC
    sources = sorted(JAVA_HARNESS.rglob("*.java"))

    def build(where: Path) -> None:
        shutil.copytree(JMH_FIXTURE, where / "project")
        subprocess.run(
            [mvn, "-B", "-q", "-DskipTests", "package"],
            cwd=where / "project",
            check=True,
            capture_output=True,
        )
        jar = where / "project" / "target" / "benchmarks.jar"
        result = subprocess.run(
            [javac, "-Xlint:all", "-Werror", "--release", "11", "-d", str(where / "classes"),
             "-cp", str(jar), *map(str, sources)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"javac:\n{result.stderr}"

    versions = [
        subprocess.run([tool, "-version"], capture_output=True, text=True, check=False)
        for tool in (mvn, javac)
    ]
    inputs: list[Path | str] = [JMH_FIXTURE, JAVA_HARNESS, *(v.stdout + v.stderr for v in versions)]
    where = cached_build(request, "jmh-fixture", inputs, build)
    return where / "project" / "target" / "benchmarks.jar", where / "classes"


def duet_jmh(jar: Path, classes: Path) -> list[str]:
    assert JAVA is not None
    return [
        JAVA, "-Djmh.ignoreLock=true", "-cp", f"{jar}:{classes}", "duet.harness.jmh.DuetJmh",
        "^bench.WorkBenchmark.mix$", "-p", "seed=7", "-w", "50ms", "-r", "50ms",
    ]  # fmt: skip


@needs_maven
@pytest.mark.measures
def test_a_jmh_side_sharing_its_cpu_with_a_busy_process_is_seen_waiting_not_sleeping(
    fixture_jar: tuple[Path, Path], processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """One JMH side pinned to a CPU with a busy process pinned there too: the JVM runs about
    half the time and waits for the CPU the other half. Its CPU time per operation alone is
    about half of JMH's time per operation, which ``metric = "auto"`` would take for a side that
    sleeps; with the run-queue delay (every JVM thread's ``run_delay``, per operation) the two
    cover the operation's time, and ``auto``'s rule (``CPU_BOUND_SHARE``) calls it CPU-bound."""
    cpu = two_cpus()[0]
    if cpu < 0:
        pytest.skip("one CPU: nothing to pin the side and the busy process to together")
    hog = processes.start([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {cpu})
    with db.create(shm_path, parties=1):
        side = processes.start(
            ["taskset", "-c", str(cpu), *duet_jmh(*fixture_jar)],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = side.communicate(timeout=300)
    hog.kill()
    hog.wait()
    assert side.returncode == 0, out
    measured = [s for s in read_lines(tmp_path / "0.jsonl")[1:-1] if s["phase"] == "measure"]
    waited = sorted(s["runq_ns"] / s["duration_ns"] for s in measured)
    busy = sorted((s["cpu_ns"] + s["runq_ns"]) / s["duration_ns"] for s in measured)
    # Two runnable tasks on one CPU: about half of the time waiting (bound: a fifth).
    assert waited[len(waited) // 2] > 0.2, measured
    assert busy[len(busy) // 2] >= CPU_BOUND_SHARE, measured


@needs_maven
@pytest.mark.measures
def test_two_jmh_sides_meet_at_every_iteration_and_record_the_jvm(
    fixture_jar: tuple[Path, Path], processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """Two JMH runs (host VM + fork each) crossing over two CPUs: every JMH iteration, warm-up
    included, is one barrier wait of each fork; the sample is JMH's ns/op, not the 50 ms of
    the iteration; the done line names the JVM and its flags."""
    cpus = two_cpus()
    lists = (f"{cpus[0]},{cpus[1]}", f"{cpus[1]},{cpus[0]}") if cpus[0] >= 0 else ("", "")
    with db.create(shm_path) as orchestrator:
        sides = [
            processes.start(
                duet_jmh(*fixture_jar),
                env=native_env(shm_path, slot, tmp_path / f"{slot}.jsonl", DUET_CPUS=lists[slot]),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for slot in (0, 1)
        ]
        for side in sides:
            out, _ = side.communicate(timeout=300)
            assert side.returncode == 0, out
        per_wait = 2 if cpus[0] >= 0 else 1
        assert orchestrator.generations() == (7 * per_wait, 7 * per_wait)
    for slot in (0, 1):
        lines = read_lines(tmp_path / f"{slot}.jsonl")
        samples = lines[1:-1]
        assert [(s["phase"], s["index"]) for s in samples] == [("warmup", 0), ("warmup", 1)] + [
            ("measure", i) for i in range(5)
        ]
        for sample in samples:
            # JMH's ns/op (microseconds once compiled; the first warm-up iteration, interpreted
            # on a loaded machine, measured 2.2 ms), not the 50 ms iteration: at least two
            # operations per iteration.
            assert 0 < sample["duration_ns"] < 25_000_000, sample
            assert 0 < sample["cpu_ns"] < 10_000_000, sample
            # The run-queue delay per operation as the CPU time is (every thread's, over the
            # iteration, divided by JMH's operations): recorded, so that `auto` tells waiting
            # for a CPU from sleeping.
            assert 0 <= sample["runq_ns"] < 25_000_000, sample
        done = lines[-1]
        assert done["done"] is True
        jvm = done["jvm"]
        assert jvm["jmh_version"] == "1.37"
        assert jvm["mode"] == "avgt"
        assert "-Djmh.ignoreLock=true" in jvm["flags"]
        if cpus[0] >= 0:
            order = [int(c) for c in lists[slot].split(",")]
            assert [s["cpu"] for s in samples] == [order[k % 2] for k in range(7)]


@needs_maven
@pytest.mark.measures
def test_an_aborted_jmh_side_exits_5_and_says_why(
    fixture_jar: tuple[Path, Path], processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path) as orchestrator:
        side = processes.start(
            duet_jmh(*fixture_jar),
            env=native_env(shm_path, 0, tmp_path / "0.jsonl"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while orchestrator.generations()[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        orchestrator.abort(db.REASON_ORCHESTRATOR)
        out, _ = side.communicate(timeout=120)
    assert side.returncode == 5, out
    assert read_lines(tmp_path / "0.jsonl")[-1] == {
        "error": f"BarrierAborted: barrier aborted by pid {os.getpid()}: cancelled by the "
        "orchestrator (reason 1)",
        "exit_code": 5,
    }


@needs_maven
def test_duet_jmh_without_duet_says_so(fixture_jar: tuple[Path, Path]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    done = subprocess.run(
        duet_jmh(*fixture_jar), env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "DUET_SAMPLES is not set: this program must be started by duet" in done.stderr


@needs_jdk
def test_java_native_bad_variable_is_a_usage_error_in_the_samples_file(
    classes: Path, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path):
        env = native_env(shm_path, 0, tmp_path / "0.jsonl", DUET_ITERATIONS="ten")
        done = subprocess.run(
            java_argv(classes, "NativeBench"), env=env, capture_output=True, text=True, check=False
        )
    assert done.returncode == 2
    assert read_lines(tmp_path / "0.jsonl") == [
        {"error": 'UsageError: DUET_ITERATIONS="ten" is not a non-negative integer', "exit_code": 2}
    ]
