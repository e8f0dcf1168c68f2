"""The move of crossover inside the barrier clients (duet_barrier.py ``Barrier.cross``,
duet_barrier.h ``duet_barrier_cross`` and ``DUET_CPUS``), in real processes through a real
barrier: each side on its own CPU of the iteration, and no side moving before both finished
(the trap of docs/accuracy.md, "The prototype": a side that moved at once landed on the CPU where
the other one still worked).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from duet_bench.harness import duet_barrier as db
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import HARNESS, ROOT, Processes
from tests.duet.test_worker import finish, read_samples, start_worker, write_spec

shm_path = shared.shm_path
processes = shared.processes

CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="crossover needs two CPUs")

# One side: crosses over `cpus`, waits `n` times; in each iteration it works `work_ms` while
# watching the other side's affinity (from the barrier file's slot pid), and prints per
# iteration its own CPU and whether the other side was ever allowed on it meanwhile.
SIDE = textwrap.dedent(
    """
    import json, os, struct, sys, time
    sys.path.insert(0, sys.argv[1])
    import duet_barrier
    path, slot, n, work_ms = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    cpus = [int(c) for c in sys.argv[6].split(",")]
    b = duet_barrier.attach(path, slot)
    b.cross(cpus)
    peer = 1 - slot
    out = []
    for k in range(n):
        b.wait(10_000_000_000)
        with open(path, "rb") as f:
            peer_pid = struct.unpack_from("<Q", f.read(), 64 * (1 + peer) + 16)[0]
        mine = os.sched_getaffinity(0)
        together = False
        until = time.monotonic() + work_ms / 1000
        while time.monotonic() < until:
            try:
                together = together or bool(os.sched_getaffinity(peer_pid) & mine)
            except ProcessLookupError:  # the peer finished its last iteration and exited
                break
        out.append({"cpu": b.cpu, "affinity": sorted(mine), "together": together})
    b.close()
    print(json.dumps(out))
    """
)


def side(processes: Processes, path: str, slot: int, n: int, work_ms: int, cpus: list[int]) -> Any:
    argv = [sys.executable, "-c", SIDE, str(HARNESS), path, str(slot), str(n), str(work_ms)]
    return processes.start([*argv, ",".join(map(str, cpus))], stdout=subprocess.PIPE)


def result(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    lines: list[dict[str, Any]] = json.loads(out)
    return lines


@needs_two
def test_python_sides_cross_and_never_share_a_cpu(processes: Processes, shm_path: str) -> None:
    """Side 0 has no work and arrives at once; side 1 works 30 ms and watches side 0's
    affinity the whole time: with the move before the first rendezvous side 0 would land on
    side 1's CPU within microseconds."""
    a, b = CPUS[0], CPUS[1]
    n = 6
    with db.create(shm_path) as orchestrator:
        fast = side(processes, shm_path, 0, n, 0, [a, b])
        slow = side(processes, shm_path, 1, n, 30, [b, a])
        fast_seen, slow_seen = result(fast), result(slow)
        # Two generations per iteration: finished, then moved.
        assert orchestrator.generations() == (2 * n, 2 * n)
    assert [s["cpu"] for s in fast_seen] == [a, b] * (n // 2)
    assert [s["cpu"] for s in slow_seen] == [b, a] * (n // 2)
    for seen in (fast_seen, slow_seen):
        assert all(s["affinity"] == [s["cpu"]] for s in seen)
    assert not any(s["together"] for s in slow_seen), slow_seen


@needs_two
def test_every_thread_moves_and_a_task_list_names_them(tmp_path: Path, shm_path: str) -> None:
    """In one process: cross() moves every thread (``/proc/self/task``), or the threads a task
    list names (the side's cgroup ``tasks``; here a file written by hand)."""
    import threading

    stop = threading.Event()
    helpers = [threading.Thread(target=stop.wait) for _ in range(2)]
    for t in helpers:
        t.start()
    try:
        with db.create(shm_path, parties=1), db.attach(shm_path, 0) as barrier:
            barrier.cross([CPUS[1], CPUS[0]])
            for k in range(3):
                barrier.wait(1_000_000_000)
                expected = {CPUS[(k + 1) % 2]}
                assert barrier.cpu in expected
                for tid in os.listdir("/proc/self/task"):
                    assert os.sched_getaffinity(int(tid)) == expected
            # A task list: only the threads it names move.
            listed = tmp_path / "tasks"
            listed.write_text(f"{helpers[0].native_id}\n")
            # The third wait left every thread on CPUS[1].
            barrier.cross([CPUS[0]], tasks=str(listed))
            assert os.sched_getaffinity(helpers[0].native_id) == {CPUS[0]}
            assert os.sched_getaffinity(helpers[1].native_id) == {CPUS[1]}
            assert os.sched_getaffinity(0) == {CPUS[1]}
    finally:
        stop.set()
        for t in helpers:
            t.join()
        os.sched_setaffinity(0, set(CPUS))


def test_a_move_that_cannot_be_made_says_why(shm_path: str) -> None:
    with db.create(shm_path, parties=1), db.attach(shm_path, 0) as barrier:
        with pytest.raises(ValueError, match="CPU numbers"):
            barrier.cross([])
        # A CPU this process may not use (not in its cpuset, or not there at all).
        outside = max(CPUS) + 1000
        with pytest.raises(db.BarrierError, match=f"cannot move the side to CPU {outside}"):
            barrier.cross([outside])
    assert os.sched_getaffinity(0) == set(CPUS)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cpus": []}, "'cpus' must be a list of CPU numbers"),
        ({"cpus": [0, -1]}, "'cpus' must be a list of CPU numbers"),
        ({"cpus": "0,1"}, "'cpus' must be a list of CPU numbers"),
        ({"tasks": "/sys/fs/cgroup/cpuset/x/tasks"}, "'tasks' must be a file path, with 'cpus'"),
        ({"cpus": [0, 1], "tasks": ""}, "'tasks' must be a file path"),
    ],
)
def test_the_worker_spec_checks_the_crossover_fields(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    spec = write_spec(tmp_path, "/dev/shm/never-used", 0, **fields)
    done = subprocess.run(
        [sys.executable, "-I", str(HARNESS / "duet_worker.py"), str(spec)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


# -- the C client --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def native_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the C client cannot be built")
    out = tmp_path_factory.mktemp("xover-c") / "native_bench"
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]  # fmt: skip
    source = ROOT / "tests" / "duet" / "c" / "native_bench.c"
    subprocess.run([gcc, *flags, f"-I{HARNESS}", str(source), "-o", str(out)], check=True)
    return out


def native_env(path: str, slot: int, samples: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "ASAN_OPTIONS": "abort_on_error=0:exitcode=99",
        "UBSAN_OPTIONS": "exitcode=99",
        "DUET_BARRIER": path,
        "DUET_SLOT": str(slot),
        "DUET_SIDE": ("baseline", "candidate")[slot],
        "DUET_WARMUP": "1",
        "DUET_ITERATIONS": "4",
        "DUET_TIMEOUT_NS": "20000000000",
        "DUET_SAMPLES": str(samples),
        **extra,
    }


def samples_of(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if "phase" in line]


@needs_two
def test_c_sides_cross_with_duet_cpus(
    native_bench: Path, processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """Two native programs, DUET_CPUS as the runner sets it: each writes the CPU of every
    iteration, the two never the same, two generations per iteration."""
    a, b = CPUS[0], CPUS[1]
    with db.create(shm_path) as orchestrator:
        sides = [
            processes.start(
                [str(native_bench), "3000"],
                env=native_env(shm_path, slot, tmp_path / f"{slot}.jsonl", DUET_CPUS=cpus),
                stderr=subprocess.PIPE,
            )
            for slot, cpus in ((0, f"{a},{b}"), (1, f"{b},{a}"))
        ]
        for s in sides:
            _, err = s.communicate(timeout=60)
            assert s.returncode == 0, err
        assert orchestrator.generations() == (10, 10)
    first, second = (samples_of(tmp_path / f"{slot}.jsonl") for slot in (0, 1))
    assert [s["cpu"] for s in first] == [a, b, a, b, a]
    assert [s["cpu"] for s in second] == [b, a, b, a, b]


@needs_two
def test_a_c_side_moves_only_after_both_finished(
    native_bench: Path, processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """The native side has almost no work; the Python side works 30 ms per iteration and
    watches the native side's affinity: it must never include the Python side's CPU."""
    a, b = CPUS[0], CPUS[1]
    n = 5  # 1 warm-up + 4, as native_env says
    with db.create(shm_path):
        native = processes.start(
            [str(native_bench), "1"],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl", DUET_CPUS=f"{a},{b}"),
            stderr=subprocess.PIPE,
        )
        slow = side(processes, shm_path, 1, n, 30, [b, a])
        slow_seen = result(slow)
        _, err = native.communicate(timeout=60)
        assert native.returncode == 0, err
    assert not any(s["together"] for s in slow_seen), slow_seen
    assert [s["cpu"] for s in samples_of(tmp_path / "0.jsonl")] == [a, b, a, b, a]


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        ({"DUET_CPUS": "0,x"}, 2, "is not a list of at most"),
        ({"DUET_CPUS": "0", "DUET_TASKS": "/nonexistent/tasks"}, 6, "cannot read the side's"),
    ],
)
def test_c_refuses_a_crossover_it_cannot_make(
    native_bench: Path,
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
    extra: dict[str, str],
    code: int,
    message: str,
) -> None:
    with db.create(shm_path):
        p = processes.start(
            [str(native_bench), "1"],
            env=native_env(shm_path, 0, tmp_path / "0.jsonl", **extra),
            stderr=subprocess.PIPE,
        )
        _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert message in (tmp_path / "0.jsonl").read_text()


@needs_two
def test_a_suite_adapters_invocation_runs_on_the_iterations_cpu(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """The ``output`` variant of the command kind (suite adapters): the benchmark tool the
    worker spawns reports its time per operation as 1000 + the CPU it ran on (field 39 of its
    own stat), so the parsed sample says where the child ran."""
    program = tmp_path / "benchmark_tool.sh"
    program.write_text(
        "#!/bin/sh\nread -r stat < /proc/self/stat; set -- $stat; shift 38\n"
        'echo "BenchmarkX-2   100   $((1000 + $1)) ns/op"\n'
    )
    program.chmod(0o755)
    a, b = CPUS[0], CPUS[1]
    with db.create(shm_path):
        workers = [
            start_worker(
                processes,
                write_spec(tmp_path, shm_path, slot, command=str(program), output="go", cpus=cpus),
            )
            for slot, cpus in ((0, [a, b]), (1, [b, a]))
        ]
        for worker in workers:
            code, _, err = finish(worker)
            assert code == 0, err
    for slot, first in ((0, a), (1, b)):
        samples = [s for s in read_samples(tmp_path / f"samples-{slot}.jsonl") if "phase" in s]
        assert len(samples) == 6  # 2 warm-up + 4
        expected = [(first, a + b - first)[k % 2] for k in range(6)]
        assert [s["cpu"] for s in samples] == expected
        assert [s["duration_ns"] - 1000 for s in samples] == expected
