"""The header-only C client (duet_bench/harness/duet_barrier.h): the shared vectors, a Python peer
in another process, the futex path, and the native-benchmark contract.

The drivers in tests/duet/c/ are compiled with gcc into a temporary directory, warning-free
(-std=c11 -Wall -Wextra -Werror) and with AddressSanitizer and UBSan; without gcc the tests are
skipped with the reason.
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

from duet_bench.harness import duet_barrier as db
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import (
    HARNESS,
    ROOT,
    DriverActor,
    Processes,
    load_vectors,
    peer_result,
    python_peer,
    run_sequence,
    two_cpus,
    vector_id,
)
from tests.duet.test_worker import assert_runq_within_its_iteration

# The fixtures of test_barrier.py: a barrier path in /dev/shm and child processes, both checked
# for leftovers.
shm_path = shared.shm_path
processes = shared.processes

C_SOURCES = ROOT / "tests" / "duet" / "c"
GCC = shutil.which("gcc")
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"]
SANITIZE = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined"]  # fmt: skip
# Sanitizer reports make the process fail, never pass quietly.
SANITIZER_ENV = {"ASAN_OPTIONS": "abort_on_error=0:exitcode=99", "UBSAN_OPTIONS": "exitcode=99"}

pytestmark = [
    pytest.mark.skipif(GCC is None, reason="gcc is not installed: the C client cannot be built"),
    # Real barriers and worker processes timed against each other: serial, leftovers checked.
    pytest.mark.measures,
]


def compile_c(source: Path, output: Path, flags: list[str]) -> None:
    assert GCC is not None
    result = subprocess.run(
        [GCC, *flags, f"-I{HARNESS}", str(source), "-o", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"gcc {' '.join(flags)} {source.name}:\n{result.stderr}"


@pytest.fixture(scope="module")
def binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("duet-c")
    built = {}
    for name in ("barrier_driver", "native_bench"):
        compile_c(C_SOURCES / f"{name}.c", out / name, STRICT)
        compile_c(C_SOURCES / f"{name}.c", out / f"{name}_san", SANITIZE)
        built[name] = out / name
        built[f"{name}_san"] = out / f"{name}_san"
    return built


def sanitized_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **SANITIZER_ENV, **extra}


class CActor(DriverActor):
    """The C client in a driver process (built with the sanitizers, or without)."""

    language = "C"
    answer_timeout_s = 20.0
    quit_timeout_s = 10.0
    quit_hint = " (sanitizer report on stderr?)"

    def __init__(self, processes: Processes, driver: Path, path: str) -> None:
        super().__init__(processes, [str(driver)], path, env=sanitized_env())


@pytest.fixture
def c_actor(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
) -> Iterator[CActor]:
    actor = CActor(processes, binaries["barrier_driver_san"], shm_path)
    yield actor
    actor.quit()


# -- build -------------------------------------------------------------------------------------


def test_header_needs_to_come_first_or_gnu_source(tmp_path: Path) -> None:
    """With -std=c11 and a system header included first, the header says what to do."""
    source = tmp_path / "late.c"
    source.write_text(
        '#include <stdio.h>\n#include "duet_barrier.h"\nint main(void) { return 0; }\n'
    )
    assert GCC is not None
    result = subprocess.run(
        [GCC, *STRICT, f"-I{HARNESS}", "-c", str(source), "-o", str(tmp_path / "late.o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "include it before any system header, or compile with -D_GNU_SOURCE" in result.stderr
    compile_c(source, tmp_path / "late", [*STRICT, "-D_GNU_SOURCE"])


# -- the vectors -------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", load_vectors("layout"), ids=vector_id)
def test_layout_vector_c(vector: dict[str, Any], c_actor: CActor, shm_path: str) -> None:
    create = vector["create"]
    answer = c_actor.command(
        f"create {shm_path} {create['parties']} {create['created_ns']} {create['creator_pid']}"
    )
    assert answer == "ok"
    assert Path(shm_path).read_bytes().hex() == vector["hex"]
    assert c_actor.command("close observer") == "ok"


@pytest.mark.parametrize("vector", load_vectors("sequence"), ids=vector_id)
def test_sequence_vector_c(vector: dict[str, Any], c_actor: CActor, shm_path: str) -> None:
    Path(shm_path).write_bytes(bytes.fromhex(vector["file"]["hex"]))
    run_sequence(vector, c_actor, shm_path)


def test_c_refusals_say_what_is_wrong(c_actor: CActor, shm_path: str) -> None:
    with db.create(shm_path) as orchestrator:
        orchestrator._words[db.W_VERSION] = 2
        answer = c_actor.command(f"attach {shm_path} 0")
    assert answer.startswith("refused bad_version ")
    assert f"{shm_path} uses barrier protocol version 2, this client speaks version 1" in answer


# -- with a Python peer, and with itself -------------------------------------------------------


def read_starts(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def test_c_and_python_meet_every_iteration(
    c_actor: CActor,
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    n = 3000
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        peer = python_peer(processes, shm_path, 1, n, cpu=cpus[1])
        assert c_actor.attach(0) == "ok"
        if cpus[0] >= 0:
            os.sched_setaffinity(c_actor.process.pid, {cpus[0]})
        assert c_actor.command(f"rounds 0 {n} 10000000000 {tmp_path / 'c.txt'}") == "done"
        result = peer_result(peer)
        assert result["outcome"] == "done"
        assert orchestrator.generations() == (n, n)
    c_starts = read_starts(tmp_path / "c.txt")
    for i in range(n):
        assert c_starts[i] >= result["arrivals"][i]
    skews = sorted(abs(a - b) for a, b in zip(c_starts, result["starts"], strict=True))
    # As in test_barrier.py: a bound a busy machine cannot break.
    assert skews[n // 10] < 200_000, "10th percentile of start skew above 200 µs: not spinning?"


def test_two_c_parties(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    n = 20000
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        actors = [CActor(processes, binaries["barrier_driver"], shm_path) for _ in range(2)]
        for slot, actor in enumerate(actors):
            assert actor.attach(slot) == "ok"
            if cpus[slot] >= 0:
                os.sched_setaffinity(actor.process.pid, {cpus[slot]})
        for slot, actor in enumerate(actors):
            actor.send(f"rounds {slot} {n} 10000000000 {tmp_path / str(slot)}")
        for actor in actors:
            assert actor.answer() == "done"
            actor.quit()
        assert orchestrator.generations() == (n, n)
    starts = [read_starts(tmp_path / str(slot)) for slot in (0, 1)]
    skews = sorted(abs(a - b) for a, b in zip(*starts, strict=True))
    assert skews[n // 10] < 100_000, "10th percentile of C-C start skew above 100 µs"


def test_sleeping_c_party_is_woken_by_a_python_peer(
    c_actor: CActor,
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    """With no spin and no yield the C party sleeps in FUTEX_WAIT at once; the Python peer
    sees SLEEPING and wakes it, well before the 10 ms sleep slice would."""
    n = 15
    with db.create(shm_path):
        assert c_actor.attach(0) == "ok"
        assert c_actor.command("spin 0 0 0") == "ok"
        peer = python_peer(processes, shm_path, 1, n, delay_ns=35_000_000, spin_ns=0)
        assert c_actor.command(f"rounds 0 {n} 10000000000 {tmp_path / 'c.txt'}") == "done"
        result = peer_result(peer)
    lags = sorted(
        c - p for c, p in zip(read_starts(tmp_path / "c.txt"), result["arrivals"], strict=True)
    )
    assert lags[n // 2] < 3_000_000, f"woken {lags} ns after the peer arrived: no FUTEX_WAKE?"


def test_abort_wakes_a_sleeping_c_party(
    c_actor: CActor,
    shm_path: str,
) -> None:
    with db.create(shm_path) as orchestrator:
        assert c_actor.attach(0) == "ok"
        assert c_actor.command("spin 0 0 0") == "ok"
        c_actor.send("wait 0 30000000000")
        deadline = time.monotonic() + 10
        while orchestrator.states()[0] != db.STATE_SLEEPING and time.monotonic() < deadline:
            time.sleep(0.001)
        assert orchestrator.states()[0] == db.STATE_SLEEPING
        begin = time.monotonic()
        orchestrator.abort(db.REASON_WATCHDOG)
        answer = c_actor.answer()
        took = time.monotonic() - begin
    assert answer == f"aborted {db.REASON_WATCHDOG} {os.getpid()}"
    assert took < 0.5


def test_c_timeout_in_the_sleep_phase(c_actor: CActor, shm_path: str) -> None:
    with db.create(shm_path):
        assert c_actor.attach(0) == "ok"
        assert c_actor.command("spin 0 5000000 5000000") == "ok"
        begin = time.monotonic()
        assert c_actor.command("wait 0 60000000") == "timeout"
        took = time.monotonic() - begin
    assert 0.06 <= took < 1.0


# -- the native contract -----------------------------------------------------------------------


def native_env(shm_path: str, slot: int, samples: Path, **extra: str) -> dict[str, str]:
    env = {
        "DUET_BARRIER": shm_path,
        "DUET_SLOT": str(slot),
        "DUET_SIDE": ("baseline", "candidate")[slot],
        "DUET_WARMUP": "2",
        "DUET_ITERATIONS": "5",
        "DUET_TIMEOUT_NS": "20000000000",
        "DUET_SAMPLES": str(samples),
    }
    env.update(extra)
    return sanitized_env(**env)


def read_samples(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("mode", ["loop", "run"])
def test_native_programs_write_the_samples_file(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
    mode: str,
) -> None:
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        sides = [
            processes.start(
                [str(binaries["native_bench_san"]), "2000", "-1", mode],
                env=native_env(shm_path, slot, tmp_path / f"{slot}.jsonl"),
                stderr=subprocess.PIPE,
            )
            for slot in (0, 1)
        ]
        for side, cpu in zip(sides, cpus, strict=True):
            if cpu >= 0:
                os.sched_setaffinity(side.pid, {cpu})
        for side in sides:
            _, err = side.communicate(timeout=30)
            assert side.returncode == 0, err
        assert orchestrator.generations() == (7, 7)
    lines = [read_samples(tmp_path / f"{slot}.jsonl") for slot in (0, 1)]
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
        for sample in samples:
            # "cpu" only when the program was pinned to one CPU before it looked (pinned here
            # after it started).
            assert set(sample) - {"cpu"} == {
                "phase",
                "index",
                "start_ns",
                "duration_ns",
                "cpu_ns",
                "runq_ns",
                "nivcsw",
            }
            assert 2_000_000 <= sample["duration_ns"] < 1_000_000_000
            assert 0 < sample["cpu_ns"] <= sample["duration_ns"] + 1_000_000
            # Raw as the kernel reports it: a wait is added when the task next gets a CPU, so
            # under heavy load a reading can exceed the iteration (the analysis caps it).
            assert sample["runq_ns"] >= 0
            assert sample["nivcsw"] >= 0
        # Never more than the time to the side's next iteration: see the helper's docstring.
        assert_runq_within_its_iteration(samples)
    # Both sides started the iterations together (the best one: a busy machine may preempt).
    skews = sorted(
        abs(first["start_ns"] - second["start_ns"])
        for first, second in zip(lines[0][1:-1], lines[1][1:-1], strict=True)
    )
    assert skews[0] < 200_000, skews


def test_native_failure_aborts_the_other_side(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    with db.create(shm_path) as orchestrator:
        failing = processes.start(
            [str(binaries["native_bench_san"]), "1000", "3", "run"],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl"),
            stderr=subprocess.PIPE,
        )
        other = processes.start(
            [str(binaries["native_bench_san"]), "1000"],
            env=native_env(shm_path, 1, tmp_path / "1.jsonl"),
            stderr=subprocess.PIPE,
        )
        _, failing_err = failing.communicate(timeout=30)
        _, other_err = other.communicate(timeout=30)
        assert orchestrator.abort_reason() == db.REASON_PARTY_FAILED
    assert failing.returncode == 3, failing_err
    assert other.returncode == 5, other_err
    failing_lines = read_samples(tmp_path / "0.jsonl")
    assert failing_lines[-1]["error"].startswith(
        "BenchmarkFailed: the benchmark function returned 7"
    )
    assert len(failing_lines) == 1 + 3 + 1
    other_last = read_samples(tmp_path / "1.jsonl")[-1]
    assert other_last["error"].startswith("BarrierAborted: barrier aborted by pid ")
    assert "a party's benchmark failed (reason 3)" in other_last["error"]


def test_native_timeout_and_missing_environment(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    with db.create(shm_path) as orchestrator:
        alone = processes.start(
            [str(binaries["native_bench_san"]), "0"],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl", DUET_TIMEOUT_NS="50000000"),
            stderr=subprocess.PIPE,
        )
        _, err = alone.communicate(timeout=30)
        assert alone.returncode == 4, err
        assert orchestrator.abort_reason() == db.REASON_PARTY_TIMEOUT
    assert read_samples(tmp_path / "0.jsonl")[-1]["error"].startswith("BarrierTimeout: ")

    env = native_env(shm_path, 1, tmp_path / "1.jsonl")
    del env["DUET_BARRIER"]
    lost = processes.start(
        [str(binaries["native_bench_san"]), "0"], env=env, stderr=subprocess.PIPE
    )
    _, err = lost.communicate(timeout=30)
    assert lost.returncode == 2
    assert "DUET_BARRIER is not set: this program must be started by duet" in err
    assert "DUET_BARRIER is not set" in read_samples(tmp_path / "1.jsonl")[-1]["error"]


def test_native_side_with_a_python_worker(
    binaries: dict[str, Path],
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
) -> None:
    """The two clients in one run: a native program on slot 0, the Python worker on slot 1."""
    spec = {
        "protocol": 1, "kind": "command", "side": "candidate", "slot": 1, "barrier": shm_path,
        "warmup": 2, "iterations": 5, "timeout_ns": 20_000_000_000,
        "samples": str(tmp_path / "1.jsonl"), "command": "true", "shell": "/bin/sh",
    }  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    with db.create(shm_path) as orchestrator:
        native = processes.start(
            [str(binaries["native_bench"]), "500"],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl"),
        )
        worker = processes.start(
            [sys.executable, str(HARNESS / "duet_worker.py"), str(tmp_path / "spec.json")]
        )
        assert native.wait(30) == 0
        assert worker.wait(30) == 0
        assert orchestrator.generations() == (7, 7)
    assert read_samples(tmp_path / "0.jsonl")[-1] == {"done": True, "inner_loops": 1}
    # `true` is a program on PATH: the worker spawns it without a shell.
    assert read_samples(tmp_path / "1.jsonl")[-1] == {
        "done": True,
        "inner_loops": 1,
        "spawn": "direct",
        "runq": "task",
    }
