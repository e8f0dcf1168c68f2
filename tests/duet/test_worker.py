"""duet_worker.py in real processes, through a real barrier: the two kinds of benchmark, the
failures and their exit codes, the samples file, calibration."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from duet_bench.harness import duet_barrier as db
from tests.duet import test_barrier as shared
from tests.duet.test_barrier import HARNESS, Processes, old_pythons, two_cpus

#: Real barriers and worker processes timed against each other: serial, checked for leftovers.
pytestmark = pytest.mark.measures

shm_path = shared.shm_path
processes = shared.processes

WORKER = HARNESS / "duet_worker.py"

USER_MODULE = textwrap.dedent(
    """
    import json, os, sys

    def setup():
        with open(os.environ["DUET_TEST_PATH_LOG"], "w") as f:
            json.dump(sys.path, f)
        return open(os.environ["DUET_TEST_CALL_LOG"], "a")

    def record(log):
        log.write("x")
        log.flush()

    def work():
        return sum(range(200))

    def fails():
        raise ValueError("boom in the benchmark")

    class Holder:
        @staticmethod
        def nested():
            return 1
    """
)


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "user code"
    directory.mkdir()
    (directory / "userbench.py").write_text(USER_MODULE)
    return directory


def write_spec(tmp_path: Path, barrier: str, slot: int, **fields: Any) -> Path:
    spec: dict[str, Any] = {
        "protocol": 1,
        "kind": "command",
        "side": ("baseline", "candidate")[slot],
        "slot": slot,
        "barrier": barrier,
        "warmup": 2,
        "iterations": 4,
        "timeout_ns": 20_000_000_000,
        "samples": str(tmp_path / f"samples-{slot}.jsonl"),
        "command": "true",
        "shell": "/bin/sh",
        "callable": None,
        "setup": None,
        "sys_path": [],
        "inner_loops": 1,
    }
    spec.update(fields)
    path = tmp_path / f"spec-{slot}.json"
    path.write_text(json.dumps(spec))
    return path


def start_worker(
    processes: Processes,
    spec: Path,
    *args: str,
    python: str = sys.executable,
    cpu: int = -1,
    env: dict[str, str] | None = None,
    isolated: bool = True,
) -> subprocess.Popen[str]:
    # -I: no site-packages, no user site, no PYTHON* variables: the worker needs nothing but the
    # standard library and its own directory (the runner does not isolate it: PYTHONPATH counts).
    process = processes.start(
        [python, *(["-I"] if isolated else []), str(WORKER), *args, str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else {**os.environ, **env},
    )
    if cpu >= 0:
        os.sched_setaffinity(process.pid, {cpu})
    return process


def finish(process: subprocess.Popen[str], timeout_s: float = 30) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout_s)
    return process.returncode, out, err


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    text = Path(path).read_text()
    assert text.endswith("\n"), "every line is complete"
    return [json.loads(line) for line in text.splitlines()]


def check_complete_samples(
    lines: list[dict[str, Any]],
    side: str,
    pid: int,
    warmup: int,
    iterations: int,
    inner: int,
    spawn: str | None = None,
) -> list[dict[str, Any]]:
    assert lines[0] == {"duet_samples": 1, "side": side, "pid": pid}
    done = {"done": True, "inner_loops": inner}
    # A command's done line says how it was spawned and where its run-queue delay came from
    # (no pressure file in these specs: the spawned process's own schedstat, "task").
    assert lines[-1] == (done if spawn is None else {**done, "spawn": spawn, "runq": "task"})
    samples = lines[1:-1]
    assert [(s["phase"], s["index"]) for s in samples] == [("warmup", i) for i in range(warmup)] + [
        ("measure", i) for i in range(iterations)
    ]
    keys = ("start_ns", "duration_ns", "cpu_ns", "runq_ns", "nivcsw")
    for sample in samples:
        # This machine's kernel has /proc/<pid>/schedstat: run-queue delay is always there.
        # "cpu" only when the worker was pinned to one CPU before it looked (these tests pin it
        # after it started).
        assert set(sample) - {"cpu"} == {"phase", "index", *keys}
        assert isinstance(sample.get("cpu", 0), int)
        assert all(isinstance(sample[k], int) for k in keys)
        assert sample["duration_ns"] > 0
        assert sample["cpu_ns"] >= 0
        assert sample["runq_ns"] >= 0
        assert sample["nivcsw"] >= 0
    starts = [s["start_ns"] for s in samples]
    assert starts == sorted(starts)
    assert_runq_within_its_iteration(samples)
    return samples


def assert_runq_within_its_iteration(samples: list[dict[str, Any]]) -> None:
    """The run-queue delay of an iteration is read after it began and before the next one did
    (the first reading after the barrier, the last before waiting at it again; for a command,
    the child forked after the start and read before it is reaped): every wait it counts lies
    between two starts. It may exceed the iteration's own wall time (a preemption between the
    end's clock and schedstat reads), never the distance to the next start."""
    for sample, following in itertools.pairwise(samples):
        assert sample["runq_ns"] <= following["start_ns"] - sample["start_ns"], (sample, following)


def run_pair(
    processes: Processes,
    tmp_path: Path,
    barrier: str,
    env: dict[str, str] | None = None,
    **fields: Any,
) -> list[tuple[int, str, str]]:
    cpus = two_cpus()
    workers = [
        start_worker(
            processes, write_spec(tmp_path, barrier, slot, **fields), cpu=cpus[slot], env=env
        )
        for slot in (0, 1)
    ]
    return [finish(worker) for worker in workers]


# -- the two kinds -----------------------------------------------------------------------------


def test_command_benchmark_on_both_sides(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    # CPU-bound in the shell itself, so the child's CPU time (wait4) is close to the wall time;
    # stdout must vanish, stderr must reach the runner, stdin is /dev/null (cat ends at once).
    command = (
        "cat; echo to-stdout; echo to-stderr >&2; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done"
    )
    with db.create(shm_path) as orchestrator:
        results = run_pair(processes, tmp_path, shm_path, command=command)
        assert orchestrator.generations() == (6, 6)
    per_side = []
    for slot, (code, out, err) in enumerate(results):
        assert code == 0, err
        assert out == ""
        assert err.count("to-stderr") == 6
        pid = read_samples(tmp_path / f"samples-{slot}.jsonl")[0]["pid"]
        samples = check_complete_samples(
            read_samples(tmp_path / f"samples-{slot}.jsonl"),
            ("baseline", "candidate")[slot],
            pid,
            2,
            4,
            1,
            spawn="shell",
        )
        # The child's CPU time (wait4), not the worker's, which sleeps in wait4: the shell's
        # busy loop is on a CPU or waiting for one (a busy machine preempts it) for most of
        # the wall time.
        ratios = [s["cpu_ns"] / s["duration_ns"] for s in samples]
        assert all(0 < ratio < 1.5 for ratio in ratios), ratios
        busy = [(s["cpu_ns"] + s["runq_ns"]) / s["duration_ns"] for s in samples]
        assert max(busy) > 0.3, (ratios, busy)
        per_side.append(samples)
    # Both sides started the iterations together (the best one: a busy machine may preempt).
    skews = sorted(abs(a["start_ns"] - b["start_ns"]) for a, b in zip(*per_side, strict=True))
    assert skews[0] < 1_000_000, skews


def test_python_benchmark_on_both_sides(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path
) -> None:
    env = {
        "DUET_TEST_PATH_LOG": str(tmp_path / "path.json"),
        "DUET_TEST_CALL_LOG": str(tmp_path / "calls.txt"),
    }
    fields = {
        "kind": "python",
        "callable": "userbench:record",
        "setup": "userbench:setup",
        "sys_path": [str(user_dir)],
        "inner_loops": 5,
    }
    with db.create(shm_path) as orchestrator:
        results = run_pair(processes, tmp_path, shm_path, env=env, **fields)
        assert orchestrator.generations() == (6, 6)
    for slot, (code, _, err) in enumerate(results):
        assert code == 0, err
        lines = read_samples(tmp_path / f"samples-{slot}.jsonl")
        check_complete_samples(lines, ("baseline", "candidate")[slot], lines[0]["pid"], 2, 4, 5)
    # setup ran once per side and its value was passed to every call: 2 sides x 6 x 5 calls.
    assert (tmp_path / "calls.txt").read_text() == "x" * 60
    # The user's directories come first, the harness's own directory last.
    path = json.loads((tmp_path / "path.json").read_text())
    assert path[0] == str(user_dir)
    assert path[-1] == str(HARNESS)
    assert path.count(str(HARNESS)) == 1


def test_python_benchmark_without_setup_and_nested_name(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path
) -> None:
    fields = {"kind": "python", "callable": "userbench:Holder.nested", "sys_path": [str(user_dir)]}
    with db.create(shm_path):
        results = run_pair(processes, tmp_path, shm_path, **fields)
    assert [code for code, _, _ in results] == [0, 0], results


def test_python_3_8_worker_against_the_current_one(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path
) -> None:
    pythons = old_pythons()
    if not pythons:
        pytest.skip("no Python 3.8 interpreter on this machine (looked in ~/.pyenv and /usr)")
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        old = start_worker(
            processes,
            write_spec(
                tmp_path,
                shm_path,
                0,
                kind="python",
                callable="userbench:work",
                sys_path=[str(user_dir)],
            ),
            python=pythons[0],
            cpu=cpus[0],
        )
        new = start_worker(
            processes, write_spec(tmp_path, shm_path, 1, command="true"), cpu=cpus[1]
        )
        assert finish(old)[0] == 0, finish(old)
        assert finish(new)[0] == 0
        assert orchestrator.generations() == (6, 6)
    assert read_samples(tmp_path / "samples-0.jsonl")[-1] == {"done": True, "inner_loops": 1}
    assert read_samples(tmp_path / "samples-1.jsonl")[-1]["spawn"] == "direct"


@pytest.mark.parametrize(
    "name", ["duet_spec.py", "duet_samples.py", "duet_command.py", "duet_python.py"]
)
def test_the_worker_files_parse_as_python_3_8(name: str) -> None:
    # duet_worker.py itself, the barrier and the output parsers: tests/duet/test_barrier.py.
    shared.test_harness_files_parse_as_python_3_8(name)


def test_every_harness_file_is_installed_for_the_sides(tmp_path: Path) -> None:
    from duet_bench.runner import install_harness

    worker = install_harness(tmp_path)
    assert worker == tmp_path / "harness" / "duet_worker.py"
    installed = sorted(p.name for p in worker.parent.iterdir())
    assert installed == sorted(p.name for p in HARNESS.glob("duet_*.py"))


SHADOWED = textwrap.dedent(
    """
    raise ImportError("the worker imported {name} from PYTHONPATH instead of its own")
    """
)

WHOSE = textwrap.dedent(
    """
    import importlib, json, os

    def setup():
        names = os.environ["DUET_TEST_NAMES"].split()
        found = {name: importlib.import_module(name).WHOSE for name in names}
        with open(os.environ["DUET_TEST_PATH_LOG"], "w") as f:
            json.dump(found, f)

    def work():
        return 1
    """
)


def test_harness_modules_and_the_users_modules_of_the_same_names_do_not_shadow_each_other(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path
) -> None:
    """The worker imports its own files even when PYTHONPATH has modules of their names; the
    benchmarked code imports its own modules of those names, not the worker's."""
    names = sorted(p.stem for p in HARNESS.glob("duet_*.py"))
    shadows = tmp_path / "on pythonpath"
    shadows.mkdir()
    for name in names:
        (shadows / f"{name}.py").write_text(SHADOWED.format(name=name))
        (user_dir / f"{name}.py").write_text('WHOSE = "user"\n')
    (user_dir / "whose.py").write_text(WHOSE)
    env = {
        "PYTHONPATH": str(shadows),
        "DUET_TEST_NAMES": " ".join(names),
        "DUET_TEST_PATH_LOG": str(tmp_path / "whose.json"),
    }
    fields = {
        "kind": "python",
        "callable": "whose:work",
        "setup": "whose:setup",
        "sys_path": [str(user_dir)],
    }
    with db.create(shm_path, parties=1):
        spec = write_spec(tmp_path, shm_path, 0, **fields)
        code, _, err = finish(start_worker(processes, spec, env=env, isolated=False))
    assert code == 0, err
    assert json.loads((tmp_path / "whose.json").read_text()) == dict.fromkeys(names, "user")


DRIVER = textwrap.dedent(
    """
    import json, os

    def drive(measure):
        seen = {"calls": [], "teardowns": []}

        def target(*args, **kwargs):
            seen["calls"].append([list(args), kwargs])
            return len(seen["calls"])

        def teardown(*args, **kwargs):
            seen["teardowns"].append([list(args), kwargs])

        made = []

        def setup():
            made.append(len(made) + 1)
            return (made[-1],), {"k": made[-1]}

        form = os.environ["DUET_TEST_FORM"]
        if form == "plain":
            seen["result"] = measure(target)
        elif form == "args":
            seen["result"] = measure(target, (1, 2))
        elif form == "kwargs":
            seen["result"] = measure(target, (1,), {"k": 2}, teardown=teardown)
        else:
            seen["result"] = measure(target, setup=setup, teardown=teardown)
        with open(os.environ["DUET_TEST_DRIVER_LOG"], "w") as f:
            json.dump(seen, f)

    drive.duet_driver = True
    """
)


@pytest.mark.parametrize("form", ["plain", "args", "kwargs", "setup"])
def test_a_driver_hands_over_each_form_of_call(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path, form: str
) -> None:
    """The one timed loop, through a driver: 2 + 4 iterations of 3 calls, each with its
    arguments; the teardown after every iteration (once per call with a setup); the last
    call's result handed back."""
    (user_dir / "userdriver.py").write_text(DRIVER)
    env = {"DUET_TEST_FORM": form, "DUET_TEST_DRIVER_LOG": str(tmp_path / "driver.json")}
    fields = {
        "kind": "python",
        "callable": "userdriver:drive",
        "sys_path": [str(user_dir)],
        "inner_loops": 3,
    }
    with db.create(shm_path, parties=1) as orchestrator:
        spec = write_spec(tmp_path, shm_path, 0, **fields)
        code, _, err = finish(start_worker(processes, spec, env=env))
        assert orchestrator.generations()[0] == 6
    assert code == 0, err
    lines = read_samples(tmp_path / "samples-0.jsonl")
    check_complete_samples(lines, "baseline", lines[0]["pid"], 2, 4, 3)
    seen = json.loads((tmp_path / "driver.json").read_text())
    assert seen["result"] == 18
    one = {"plain": [[], {}], "args": [[1, 2], {}], "kwargs": [[1], {"k": 2}]}
    if form == "setup":
        each = [[[n], {"k": n}] for n in range(1, 19)]
        assert seen["calls"] == each
        assert seen["teardowns"] == each
    else:
        assert seen["calls"] == [one[form]] * 18
        assert seen["teardowns"] == ([one[form]] * 6 if form == "kwargs" else [])


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("true", ["true"]),
        ("sleep 0.01", ["sleep", "0.01"]),
        ("python3 -c 'print((1, 2))'", ["python3", "-c", "print((1, 2))"]),
        ("./prog --in 'a b'", ["./prog", "--in", "a b"]),
        ("echo 'a;b'", ["echo", "a;b"]),
        ('echo "$HOME"', None),
        ("a && b", None),
        ("true | cat", None),
        ("ls *.py", None),
        ("FOO=1 true", None),
        ("exit 3", None),
        ("cd /tmp", None),
        ("no-such-program-here x", None),
        ("echo 'unterminated", None),
    ],
)
def test_only_simple_commands_are_spawned_without_a_shell(
    command: str, argv: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the worker imports it, by its bare name from the harness directory.
    monkeypatch.syspath_prepend(str(HARNESS))
    for name in ("duet_command", "duet_barrier", "duet_outputs", "duet_samples"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import duet_command

    assert duet_command.direct_argv(command) == argv


def test_run_queue_delay_is_measured_when_another_process_shares_the_cpu(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    """A busy process pinned to the side's CPU: the command (spawned directly) waits on the
    run queue for a large part of every iteration, and its CPU time stays near its own work."""
    cpu = two_cpus()[0]
    hog = processes.start([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {cpu})
    spin = (
        "python3 -c 'import time\nt = time.process_time() + 0.05\n"
        "while time.process_time() < t: pass'"
    )
    try:
        with db.create(shm_path, parties=1):
            worker = start_worker(
                processes, write_spec(tmp_path, shm_path, 0, command=spin), cpu=cpu
            )
            code, _, err = finish(worker, timeout_s=60)
    finally:
        hog.kill()
        hog.wait()
    assert code == 0, err
    lines = read_samples(tmp_path / "samples-0.jsonl")
    assert lines[-1]["spawn"] == "direct"
    measured = [s for s in lines[1:-1] if s["phase"] == "measure"]
    # Two runnable tasks on one CPU: the scheduler shares it, so the program waits for about as
    # long as it runs; its run-queue delay accounts for most of what its wall time gained (the
    # rest: its start-up blocks on page faults and file reads, more so on a busy machine).
    for s in measured:
        assert s["runq_ns"] > 0.2 * s["duration_ns"], s
        assert s["cpu_ns"] + s["runq_ns"] > 0.5 * s["duration_ns"], s
        assert s["nivcsw"] > 0, s


def test_a_script_without_an_interpreter_line_runs_through_the_shell(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    script = tmp_path / "script"
    script.write_text("true\n")
    script.chmod(0o755)
    with db.create(shm_path, parties=1):
        worker = start_worker(processes, write_spec(tmp_path, shm_path, 0, command=str(script)))
        code, _, err = finish(worker)
    assert code == 0, err
    assert read_samples(tmp_path / "samples-0.jsonl")[-1]["spawn"] == "shell"


def test_failing_command_exits_3_and_stops_the_other_side(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path) as orchestrator:
        failing = start_worker(processes, write_spec(tmp_path, shm_path, 0, command="exit 7"))
        other = start_worker(processes, write_spec(tmp_path, shm_path, 1, command="sleep 0.01"))
        code, _, err = finish(failing)
        other_code, _, other_err = finish(other)
        assert orchestrator.abort_reason() == db.REASON_PARTY_FAILED
    assert code == 3, err
    assert "exited with status 7 in iteration 0 (warmup)" in err
    lines = read_samples(tmp_path / "samples-0.jsonl")
    assert len(lines) == 2
    assert lines[1]["error"].startswith("BenchmarkFailed: the command exited with status 7")
    # The status as a number beside the text, for the runner.
    assert lines[1]["exit_status"] == 7
    assert "signal" not in lines[1]
    assert other_code == 5, other_err
    assert read_samples(tmp_path / "samples-1.jsonl")[-1]["error"].startswith("BarrierAborted: ")


def test_killed_command_is_a_failure(processes: Processes, shm_path: str, tmp_path: Path) -> None:
    with db.create(shm_path, parties=1):
        worker = start_worker(processes, write_spec(tmp_path, shm_path, 0, command="kill -9 $$"))
        code, _, err = finish(worker)
    assert code == 3
    assert "was killed by signal 9" in err
    error = read_samples(tmp_path / "samples-0.jsonl")[-1]
    assert error["signal"] == 9
    assert "exit_status" not in error


def test_a_failing_benchmark_tool_has_its_exit_status_in_the_error_line(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    fields = {"command": "echo half a line; exit 4", "output": "go"}
    with db.create(shm_path, parties=1):
        worker = start_worker(processes, write_spec(tmp_path, shm_path, 0, **fields))
        code, _, err = finish(worker)
    assert code == 3, err
    error = read_samples(tmp_path / "samples-0.jsonl")[-1]
    assert error["error"].startswith("BenchmarkFailed: the command exited with status 4 ")
    assert error["error"].endswith("its output ended: half a line")
    assert error["exit_status"] == 4


def test_exception_in_the_callable(
    processes: Processes, shm_path: str, tmp_path: Path, user_dir: Path
) -> None:
    fields = {"kind": "python", "callable": "userbench:fails", "sys_path": [str(user_dir)]}
    with db.create(shm_path) as orchestrator:
        failing = start_worker(processes, write_spec(tmp_path, shm_path, 0, **fields))
        other = start_worker(processes, write_spec(tmp_path, shm_path, 1))
        code, _, err = finish(failing)
        other_code, _, _ = finish(other)
        assert orchestrator.abort_reason() == db.REASON_PARTY_FAILED
    assert code == 3
    assert "Traceback (most recent call last)" in err
    assert "ValueError: boom in the benchmark" in err
    assert read_samples(tmp_path / "samples-0.jsonl")[-1] == {
        "error": "ValueError: boom in the benchmark"
    }
    assert other_code == 5


@pytest.mark.parametrize(
    ("callable_name", "expected"),
    [
        ("userbench:missing", "AttributeError: "),
        ("nosuchmodule:work", "ModuleNotFoundError: No module named 'nosuchmodule'"),
    ],
)
def test_import_failures(
    processes: Processes,
    shm_path: str,
    tmp_path: Path,
    user_dir: Path,
    callable_name: str,
    expected: str,
) -> None:
    fields = {"kind": "python", "callable": callable_name, "sys_path": [str(user_dir)]}
    with db.create(shm_path, parties=1):
        code, _, err = finish(start_worker(processes, write_spec(tmp_path, shm_path, 0, **fields)))
    assert code == 3, err
    assert read_samples(tmp_path / "samples-0.jsonl")[-1]["error"].startswith(expected)


def test_a_side_that_never_arrives_means_a_timeout(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path) as orchestrator:
        alone = start_worker(processes, write_spec(tmp_path, shm_path, 0, timeout_ns=300_000_000))
        begin = time.monotonic()
        code, _, err = finish(alone)
        took = time.monotonic() - begin
        assert orchestrator.abort_reason() == db.REASON_PARTY_TIMEOUT
        assert orchestrator.generations() == (1, 0)
    assert code == 4, err
    assert took < 5
    error = read_samples(tmp_path / "samples-0.jsonl")[-1]["error"]
    assert error.startswith("BarrierTimeout: barrier wait timed out after 0.300 s at generation 1")


def test_abort_releases_a_waiting_worker_promptly(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    with db.create(shm_path) as orchestrator:
        waiting = start_worker(processes, write_spec(tmp_path, shm_path, 0))
        deadline = time.monotonic() + 10
        while orchestrator.generations()[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(0.05)
        begin = time.monotonic()
        orchestrator.abort(db.REASON_ORCHESTRATOR)
        code, _, err = finish(waiting)
        took = time.monotonic() - begin
    assert code == 5, err
    assert took < 1.0
    assert (
        "cancelled by the orchestrator (reason 1)"
        in read_samples(tmp_path / "samples-0.jsonl")[-1]["error"]
    )


def test_missing_barrier_file_exits_6(processes: Processes, shm_path: str, tmp_path: Path) -> None:
    code, _, err = finish(start_worker(processes, write_spec(tmp_path, shm_path, 0)))
    assert code == 6
    assert "cannot use the barrier" in err
    lines = read_samples(tmp_path / "samples-0.jsonl")
    assert lines[-1]["error"].startswith("FileNotFoundError: ")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"protocol": 2}, "worker spec protocol 2, this worker speaks 1"),
        ({"kind": "native"}, "'kind' must be 'command' or 'python'"),
        ({"warmup": "5"}, "'warmup' must be an integer"),
        ({"kind": "python", "callable": "nocolon"}, "'callable' must be 'module:function'"),
        ({"timeout_ns": 0}, "timeout_ns > 0"),
    ],
)
def test_invalid_spec_exits_2(
    processes: Processes, shm_path: str, tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    code, _, err = finish(start_worker(processes, write_spec(tmp_path, shm_path, 0, **fields)))
    assert code == 2
    assert message in err
    assert message in read_samples(tmp_path / "samples-0.jsonl")[-1]["error"]


def test_usage_exits_2(processes: Processes, tmp_path: Path) -> None:
    process = processes.start([sys.executable, "-I", str(WORKER)], stderr=subprocess.PIPE)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "usage: duet_worker.py SPEC.json" in err
    code, _, err = finish(start_worker(processes, tmp_path / "missing.json"))
    assert code == 2
    assert "cannot read the worker spec" in err


# -- calibration -------------------------------------------------------------------------------


def calibrate(
    processes: Processes, tmp_path: Path, user_dir: Path, **fields: Any
) -> dict[str, Any]:
    spec = write_spec(tmp_path, "/dev/null", 0, kind="python", sys_path=[str(user_dir)], **fields)
    code, out, err = finish(start_worker(processes, spec, "--calibrate"))
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def test_calibration_reaches_the_target(
    processes: Processes, tmp_path: Path, user_dir: Path
) -> None:
    result = calibrate(
        processes, tmp_path, user_dir, callable="userbench:work", target_iteration_ns=5_000_000
    )
    assert set(result) == {"inner_loops", "per_call_ns"}
    assert result["inner_loops"] > 10
    assert 50 < result["per_call_ns"] < 1_000_000
    # The chosen count takes at least the target, and not absurdly more.
    assert 5_000_000 <= result["inner_loops"] * result["per_call_ns"] < 50_000_000


def test_calibration_is_capped(processes: Processes, tmp_path: Path, user_dir: Path) -> None:
    result = calibrate(
        processes,
        tmp_path,
        user_dir,
        callable="userbench:work",
        target_iteration_ns=10_000_000_000,
        max_inner_loops=50,
    )
    assert result["inner_loops"] == 50


def test_calibration_of_a_failing_callable(
    processes: Processes, tmp_path: Path, user_dir: Path
) -> None:
    spec = write_spec(
        tmp_path,
        "/dev/null",
        0,
        kind="python",
        callable="userbench:fails",
        sys_path=[str(user_dir)],
    )
    code, out, err = finish(start_worker(processes, spec, "--calibrate"))
    assert code == 3
    assert json.loads(out) == {"error": "ValueError: boom in the benchmark"}
    assert "Traceback" in err


def test_a_program_that_cannot_be_started_fails_with_the_reason(
    processes: Processes, shm_path: str, tmp_path: Path
) -> None:
    command = f"{tmp_path}/no-such-program --flag"
    with db.create(shm_path, parties=1):
        worker = start_worker(processes, write_spec(tmp_path, shm_path, 0, command=command))
        code, _, err = finish(worker)
    assert code == 3
    assert "the command could not be started in iteration 0 (No such file or directory)" in err
    # It never ran: no status.
    assert set(read_samples(tmp_path / "samples-0.jsonl")[-1]) == {"error"}
