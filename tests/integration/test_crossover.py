"""Crossover at every iteration (docs/statistics.md, method 1b), end to end: ``duet run`` with real
processes, the real barrier, real cgroup v1 (root) or CPU affinity only. Every kind moves: a
command's children, every thread of a python callable, a native program through ``duet_barrier.h``.

What each test checks is what the sides saw from inside (``/proc/self/stat`` field 39, the CPU a
task last ran on, and the kernel's affinity of every thread), not only what the harness says it
did; and the recorded ``iteration_cpus`` against the plan: iteration k of run r (warm-up
included) runs the baseline on ``pair[(r + k) % 2]`` and the candidate on the other CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import is_root
from tests.integration.test_run import ISOLATIONS, duet

pytestmark = pytest.mark.usefixtures("no_leftovers")

ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS = ROOT / "duet_bench" / "harness"
WARMUP = 1  # odd: the count of k runs over warm-up and measured iterations together
ITERATIONS = 4
RUNS = 2


def need(isolation: str) -> None:
    if isolation == "cgroup" and not is_root():
        pytest.skip("cgroup isolation needs root (CI runs these as root)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("crossover needs two CPUs")


def measure(out: Path, isolation: str, *args: str, crossover: str = "iteration") -> dict[str, Any]:
    done = duet(
        "run", *args, "--runs", str(RUNS), "--iterations", str(ITERATIONS),
        "--warmup", str(WARMUP), "--isolation", isolation, "--crossover", crossover,
        "--out", str(out), "--quiet", "--reps", "200",
        "--fail-on", "never",  # about where the sides ran, not the verdict
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["schema"] == "duet-results/3"
    return doc


def planned(doc: dict[str, Any], run: int, side: str, k: int) -> int:
    """docs/statistics.md, method 1b: the CPU of ``side`` in iteration k (warm-up included) of run
    ``run``."""
    pair = doc["environment"]["pair"]["cpus"]
    offset = 0 if side == "baseline" else 1
    return int(pair[(run + k + offset) % 2])


def check_crossed(doc: dict[str, Any]) -> None:
    """Every measured iteration of every side on its planned CPU, the sides never together."""
    bench = doc["benchmarks"][0]
    assert bench["settings"]["crossover"] == "iteration"
    pair = sorted(doc["environment"]["pair"]["cpus"])
    for r in bench["runs"]:
        assert r["status"] == "ok", r["reason"]
        base, cand = r["baseline"]["iteration_cpus"], r["candidate"]["iteration_cpus"]
        assert len(base) == len(cand) == ITERATIONS
        for i in range(ITERATIONS):
            assert base[i] == planned(doc, r["index"], "baseline", WARMUP + i)
            assert cand[i] == planned(doc, r["index"], "candidate", WARMUP + i)
            assert base[i] != cand[i]
        assert sorted(set(base)) == pair  # alternating, not stuck
        assert r["baseline"]["cores"] == r["candidate"]["cores"] == pair


def logged(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_seen(doc: dict[str, Any], seen: dict[str, list[int]]) -> None:
    """What the sides saw from inside, iteration by iteration (warm-up included, runs in
    order), against the plan."""
    for side, cpus in seen.items():
        expected = [
            planned(doc, r, side, k) for r in range(RUNS) for k in range(WARMUP + ITERATIONS)
        ]
        assert cpus == expected, side


# A command that records, from inside the process the worker spawned, the CPUs it may run on
# and the CPU it last ran on (its own /proc/self, read by the same process: `read` is a builtin).
COMMAND = (
    "read -r stat < /proc/self/stat; set -- $stat; shift 38; cpu=$1; "
    "allowed=$(grep Cpus_allowed_list /proc/self/status | cut -f2); "
    'echo "{\\"cpu\\": $cpu, \\"allowed\\": \\"$allowed\\"}" >> {log}.$DUET_SIDE'
)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_aa_crosses_at_every_iteration(tmp_path: Path, isolation: str) -> None:
    need(isolation)
    log = tmp_path / "seen"
    command = COMMAND.replace("{log}", str(log))
    doc = measure(tmp_path / "r.json", isolation, "--baseline", command, "--candidate", command)
    check_crossed(doc)
    seen: dict[str, list[int]] = {}
    for side in ("baseline", "candidate"):
        lines = logged(Path(f"{log}.{side}"))
        # The shell duet spawned (and what it runs) may use one CPU: the iteration's.
        assert all(line["allowed"] == str(line["cpu"]) for line in lines), lines
        seen[side] = [line["cpu"] for line in lines]
    check_seen(doc, seen)


THREADED = textwrap.dedent(
    """
    import json, os, threading

    # The calibration of inner loops imports it too, outside any run (no DUET_SIDE).
    LOG = os.environ["XOVER_LOG"] + "." + os.environ.get("DUET_SIDE", "calibration")
    _go = threading.Condition()
    _round = [0]
    _acks = [0]

    def _helper():
        # Blocks between iterations; runs (so its last CPU is current) once per call.
        seen = 0
        while True:
            with _go:
                _go.wait_for(lambda: _round[0] > seen)
                seen = _round[0]
                _acks[0] += 1
                _go.notify_all()

    def setup():
        for _ in range(3):
            threading.Thread(target=_helper, daemon=True).start()

    def _last_cpu(tid):
        with open(f"/proc/self/task/{tid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])  # field 39

    def work():
        with _go:
            _round[0] += 1
            _go.notify_all()
            _go.wait_for(lambda: _acks[0] >= 3 * _round[0])
        tids = sorted(int(t) for t in os.listdir("/proc/self/task"))
        affinity = [sorted(os.sched_getaffinity(t)) for t in tids]
        last = [_last_cpu(t) for t in tids]
        with open(LOG, "a") as f:
            f.write(json.dumps({"threads": len(tids), "affinity": affinity, "last": last}) + "\\n")
        return sum(range(20000))
    """
)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_every_thread_of_a_python_callable_moves(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    need(isolation)
    (tmp_path / "threaded.py").write_text(THREADED)
    log = tmp_path / "seen"
    monkeypatch.setenv("XOVER_LOG", str(log))
    doc = measure(
        tmp_path / "r.json", isolation, "--keep-env", "XOVER_LOG",
        "--python-baseline", sys.executable, "--python-candidate", sys.executable,
        "--callable", "threaded:work", "--setup", "threaded:setup",
        "--baseline-dir", str(tmp_path), "--candidate-dir", str(tmp_path),
    )  # fmt: skip
    check_crossed(doc)
    inner = doc["benchmarks"][0]["settings"]["inner_loops"]
    for side in ("baseline", "candidate"):
        lines = logged(Path(f"{log}.{side}"))
        assert len(lines) == RUNS * (WARMUP + ITERATIONS) * inner
        seen = []
        for line in lines:
            assert line["threads"] >= 4  # the worker's thread and the three helpers
            # Every thread may run on one CPU only, the same for all, and ran there last.
            cpus = {tuple(a) for a in line["affinity"]}
            assert len(cpus) == 1, line
            (only,) = cpus
            assert len(only) == 1, line
            assert set(line["last"]) == {only[0]}, line
            seen.append(only[0])
        check_seen(doc, {side: seen[::inner]})


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_native_program_crosses_at_every_iteration(tmp_path: Path, isolation: str) -> None:
    need(isolation)
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the native program cannot be built")
    binary = tmp_path / "native_bench"
    subprocess.run(
        [gcc, "-std=c11", "-O2", f"-I{HARNESS}", str(ROOT / "tests/duet/c/native_bench.c"),
         "-o", str(binary)],
        check=True,
    )  # fmt: skip
    program = f"{binary} 2000"
    doc = measure(
        tmp_path / "r.json", isolation, "--native", "--baseline", program, "--candidate", program
    )
    check_crossed(doc)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_crossover_run_keeps_each_side_on_its_cpu(tmp_path: Path, isolation: str) -> None:
    need(isolation)
    log = tmp_path / "seen"
    command = COMMAND.replace("{log}", str(log))
    doc = measure(
        tmp_path / "r.json", isolation, "--baseline", command, "--candidate", command,
        crossover="run",
    )  # fmt: skip
    bench = doc["benchmarks"][0]
    assert bench["settings"]["crossover"] == "run"
    for r in bench["runs"]:
        for side in ("baseline", "candidate"):
            (cpu,) = r[side]["cores"]
            assert r[side]["iteration_cpus"] == [cpu] * ITERATIONS
        assert r["baseline"]["cores"] != r["candidate"]["cores"]
    for side in ("baseline", "candidate"):
        runs = [r[side]["cores"][0] for r in bench["runs"] for _ in range(WARMUP + ITERATIONS)]
        assert [line["cpu"] for line in logged(Path(f"{log}.{side}"))] == runs


def test_progress_counts_two_barrier_generations_per_crossed_iteration(tmp_path: Path) -> None:
    """Within a run the progress is the share of iterations both sides began: crossing over, an
    iteration is two generations, and counting generations would run ahead by 2x."""
    import time

    from duet_bench.isolation import select_backend
    from duet_bench.plan import BenchmarkSpec, RunPlan, SideSpec
    from duet_bench.runner import RunnerContext, install_harness, measure_run
    from duet_bench.session import WORK_ROOT

    need("affinity")
    side = SideSpec(kind="command", command="sleep 0.3")
    iterations = 8
    bench = BenchmarkSpec(
        name="p", baseline=side, candidate=side, runs=2, iterations=iterations, warmup=0
    )
    pair = sorted(os.sched_getaffinity(0))[:2]
    plan = RunPlan(index=0, cpus={"baseline": pair[0], "candidate": pair[1]}, crossover=True)
    reported: list[tuple[int, float]] = []
    # Not under /tmp: the sides' sandbox has a /tmp of its own (as duet's work directory).
    workdir = Path(tempfile.mkdtemp(prefix=f"duet-{os.getpid()}-", dir=WORK_ROOT))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        backend = stack.enter_context(select_backend("affinity"))
        ctx = RunnerContext(
            backend=backend,
            workdir=workdir,
            worker=install_harness(workdir),
            on_iterations=lambda share: reported.append((time.monotonic_ns(), share)),
        )
        record = measure_run(bench, plan, ctx)
    assert record.ok, record.reason
    starts = [
        max(a, b)
        for a, b in zip(
            record.baseline.iteration_start_ns or (),
            record.candidate.iteration_start_ns or (),
            strict=True,
        )
    ]
    assert len(reported) >= 2  # about once a second over about 2.4 s
    for when, share in reported:
        begun = sum(1 for s in starts if s <= when)
        # The report follows the generations it read a moment before: at most one behind.
        assert begun - 1 <= round(share * iterations) <= begun, (share, begun)
