"""The worker's output mode (suite adapters) in real processes through a real barrier: the
sample is what the benchmark tool printed, not the process's time."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from duet_bench.harness import duet_barrier as db
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import Processes, two_cpus
from tests.duet.test_worker import finish, read_samples, run_pair, start_worker, write_spec

#: Real barriers and worker processes timed against each other: serial, checked for leftovers.
pytestmark = pytest.mark.measures

shm_path = shared.shm_path
processes = shared.processes


def benchmark_tool(tmp_path: Path, body: str) -> str:
    """A stand-in benchmark tool: a real program printing what such a tool prints."""
    path = tmp_path / "benchmark_tool.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_the_sample_is_the_benchmark_tool_time_per_operation(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    # 50 ms of sleep per invocation, 1234 ns/op reported: the sample is the report.
    program = benchmark_tool(tmp_path, "sleep 0.05\necho 'BenchmarkX-2   100   1234.4 ns/op'\n")
    with db.create(shm_path):
        results = run_pair(processes, tmp_path, shm_path, command=program, output="go")
    for slot, (code, _, err) in enumerate(results):
        assert code == 0, err
        lines = read_samples(tmp_path / f"samples-{slot}.jsonl")
        # No cpu.pressure file in this spec: the run-queue delay is the process's own.
        assert lines[-1] == {"done": True, "inner_loops": 1, "spawn": "direct", "runq": "task"}
        samples = lines[1:-1]
        assert len(samples) == 6
        for s in samples:
            # go's count of operations (100) makes the process's CPU time and run-queue delay
            # per operation the CPU sample and its runq_ns; no nivcsw.
            # "cpu" only when the worker was pinned to one CPU before it looked.
            keys = {"phase", "index", "start_ns", "duration_ns", "cpu_ns", "runq_ns"}
            assert set(s) - {"cpu"} == keys
            assert s["duration_ns"] == 1234
            # The shell's and sleep's CPU time (a few ms at most) over 100 operations.
            assert 1 <= s["cpu_ns"] < 1_000_000
    # The stdout file of the iterations is removed.
    assert not os.path.exists(tmp_path / "samples-0.jsonl.out")


def test_cpu_time_is_kept_when_the_benchmark_tool_reports_it(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    json_out = (
        '{"benchmarks": [{"name": "BM_a", "run_type": "iteration", "real_time": 2.5, '
        '"cpu_time": 2.0, "time_unit": "us"}]}'
    )
    program = benchmark_tool(tmp_path, f"echo '{json_out}'\n")
    with db.create(shm_path, parties=1):
        worker = start_worker(
            processes, write_spec(tmp_path, shm_path, 0, command=program, output="google-benchmark")
        )
        code, _, err = finish(worker)
    assert code == 0, err
    lines = read_samples(tmp_path / "samples-0.jsonl")
    samples = lines[1:-1]
    assert {(s["duration_ns"], s["cpu_ns"]) for s in samples} == {(2500, 2000)}
    # The invocation's run-queue delay, as a share of its wall time, applied to the tool's
    # real time per operation: at most the operation's time off the CPU (500 ns) by design.
    assert lines[-1]["runq"] == "task"
    assert all(0 <= s["runq_ns"] <= 500 for s in samples), samples


def _spinning_tool_beside_a_hog(
    processes: Processes, shm_path: str, tmp_path: Path, real_us: float, cpu_us: float
) -> list[dict[str, Any]]:
    """The measured samples of a CPU-bound stand-in of google-benchmark (50 ms of CPU time,
    then a report of ``real_us`` and ``cpu_us`` per operation) with a busy process pinned to
    its CPU. The tool is the process duet spawns (as a google-benchmark binary is): its own
    run-queue delay is the invocation's."""
    cpu = two_cpus()[0]
    hog = processes.start([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {cpu})
    json_out = (
        '{"benchmarks": [{"name": "BM_a", "run_type": "iteration", '
        f'"real_time": {real_us}, "cpu_time": {cpu_us}, "time_unit": "us"}}]}}'
    )
    tool = tmp_path / "spinning_tool.py"
    tool.write_text(
        f"#!{sys.executable}\nimport time\nt = time.process_time() + 0.05\n"
        f"while time.process_time() < t: pass\nprint({json_out!r})\n"
    )
    tool.chmod(0o755)
    try:
        with db.create(shm_path, parties=1):
            spec = write_spec(tmp_path, shm_path, 0, command=str(tool), output="google-benchmark")
            code, _, err = finish(start_worker(processes, spec, cpu=cpu), timeout_s=60)
    finally:
        hog.kill()
        hog.wait()
    assert code == 0, err
    return read_samples(tmp_path / "samples-0.jsonl")[1:-1]


def test_a_tool_with_its_own_cpu_time_delayed_by_another_process_is_seen_waiting(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """A busy process pinned to the side's CPU while a CPU-bound stand-in of google-benchmark
    spins and reports (as it would) a real time per operation twice its CPU time: the
    run-queue delay per operation, estimated from the invocation's own wait, is what lets
    ``auto`` call it CPU-bound (it waits for the CPU, it does not sleep)."""
    measured = _spinning_tool_beside_a_hog(processes, shm_path, tmp_path, 2.0, 1.0)
    # Two runnable tasks on one CPU: the invocation waits about as long as it runs, so the
    # estimate is about half the real time, capped at real - cpu (1,000 ns).
    for s in measured:
        assert 200 < s["runq_ns"] <= 1000, s


def test_the_estimated_wait_never_exceeds_the_operations_time_off_the_cpu(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """The same stand-in reporting 1.9 us of CPU time in 2.0 us: the invocation waited about
    half its wall time (about 1,000 ns of the 2,000 reported), more than the 100 ns the
    operation spent off the CPU, so the cap decides: exactly 100 ns."""
    measured = _spinning_tool_beside_a_hog(processes, shm_path, tmp_path, 2.0, 1.9)
    assert {s["runq_ns"] for s in measured} == {100}, measured


@pytest.mark.parametrize(
    ("output", "has_cpu"), [("criterion-calls/1000", True), ("criterion", False)]
)
def test_a_fixed_count_of_criterion_calls_has_the_invocations_cpu_time_per_call(
    processes: Processes, shm_path: str, tmp_path: Path, output: str, has_cpu: bool
) -> None:
    """``criterion-calls/N``: the CPU time is the process's (``wait4``) divided by N, the wall
    time what the tool printed. The stand-in spins for a fixed count of shell loop steps, so
    its CPU time per call is positive and far below a millisecond at N = 1000 (it is a few
    milliseconds in all); criterion's own format has none."""
    line = "test group/f/64 ... bench:       32498 ns/iter (+/- 1120)"
    body = f"i=0\nwhile [ $i -lt 20000 ]; do i=$((i+1)); done\necho '{line}'\n"
    program = benchmark_tool(tmp_path, body)
    with db.create(shm_path, parties=1):
        spec = write_spec(tmp_path, shm_path, 0, command=program, output=output)
        code, _, err = finish(start_worker(processes, spec))
    assert code == 0, err
    samples = read_samples(tmp_path / "samples-0.jsonl")[1:-1]
    assert {s["duration_ns"] for s in samples} == {32498}
    if has_cpu:
        assert all(1 <= s["cpu_ns"] < 1_000_000 for s in samples), samples
    else:
        assert not any("cpu_ns" in s for s in samples), samples


def test_output_without_a_result_fails_quoting_it(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    program = benchmark_tool(tmp_path, "echo 'panic: index out of range'\n")
    with db.create(shm_path, parties=1):
        worker = start_worker(
            processes, write_spec(tmp_path, shm_path, 0, command=program, output="go")
        )
        code, _, err = finish(worker)
    assert code == 3, err
    assert "iteration 0 (warmup)" in err
    assert "panic: index out of range" in err
    assert read_samples(tmp_path / "samples-0.jsonl")[-1]["error"].startswith("BenchmarkFailed")


def test_a_failing_benchmark_tool_fails_with_its_output(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    program = benchmark_tool(tmp_path, "echo 'error: no such benchmark'\nexit 2\n")
    with db.create(shm_path, parties=1):
        worker = start_worker(
            processes, write_spec(tmp_path, shm_path, 0, command=program, output="criterion")
        )
        code, _, err = finish(worker)
    assert code == 3, err
    assert "exited with status 2 in iteration 0 (warmup)" in err
    assert "error: no such benchmark" in err


def test_output_is_refused_for_python_sides_and_unknown_formats(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    for fields, message in (
        ({"kind": "python", "callable": "m:f", "output": "go"}, "command sides only"),
        ({"output": "junit"}, "'output' must be one of google-benchmark, go, criterion"),
    ):
        worker = start_worker(processes, write_spec(tmp_path, shm_path, 0, **fields))
        code, _, err = finish(worker)
        assert code == 2, err
        assert message in err
