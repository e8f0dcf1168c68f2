"""The accuracy workloads and the noise generator (``benchmarks/workloads``, ``benchmarks/noise``):
they build with ``-Wall -Wextra -Werror``, the workloads run one tiny native duet (with and
without ``--fill``), and the noise generator starts, pins one thread per CPU, and stops by
itself within its bound, even when whoever started it is killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import is_root

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import noise  # noqa: E402
import workloads  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("build")


def test_the_workloads_build_and_scale_with_the_op_count(build_dir: Path) -> None:
    binary = workloads.build(build_dir)
    for kind in workloads.KINDS:
        ops = {"integer": 20000, "float": 20000, "cache": 20000, "memory": 2000}[kind]
        done = subprocess.run(
            [str(binary), "--kind", kind, "--ops", str(ops), "--bare", "3"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        lines = [json.loads(x) for x in done.stdout.splitlines()]
        assert [x["index"] for x in lines] == [0, 1, 2]
        assert all(x["duration_ns"] > 0 for x in lines)
        once = subprocess.run([str(binary), "--kind", kind, "--ops", "10", "--once"], timeout=60)
        assert once.returncode == 0
    bad = subprocess.run([str(binary), "--kind", "nope", "--ops", "1"], capture_output=True)
    assert bad.returncode == 2


def test_calibration_returns_a_positive_op_count() -> None:
    assert workloads.calibrate("integer", 5.0, cpu=0) > 1000


@pytest.mark.root
@pytest.mark.cgroup
@pytest.mark.parametrize("fill", [False, True], ids=["plain", "fill"])
def test_one_tiny_native_duet_measures_a_2x_ratio(tmp_path: Path, fill: bool) -> None:
    if not is_root():
        pytest.skip("cgroup isolation needs root")
    from duet_bench.plan import BenchmarkSpec, SideSpec
    from duet_bench.session import MachineOptions, SessionOptions, measure

    ops = workloads.calibrate("integer", 5.0, cpu=0)
    bench = BenchmarkSpec(
        name="integer-2x",
        baseline=SideSpec(kind="native", command=workloads.command("integer", ops, fill=fill)),
        candidate=SideSpec(kind="native", command=workloads.command("integer", 2 * ops, fill=fill)),
        runs=2, iterations=5, warmup=1, timeout_s=30,
    )  # fmt: skip
    doc = measure(
        [bench], SessionOptions(out=tmp_path / "r.json", machine=MachineOptions(progress=False))
    )
    runs = doc.benchmarks[0].runs
    assert [r.status for r in runs] == ["ok", "ok"], [r.reason for r in runs]
    a, b = [], []
    for r in runs:
        assert len(r.baseline.iterations_ns) == len(r.candidate.iterations_ns) == 5
        assert r.baseline.iteration_cpu_ns is not None
        assert r.candidate.iteration_cpu_ns is not None
        a += r.baseline.iteration_cpu_ns
        b += r.candidate.iteration_cpu_ns
    # 2x the work, in CPU time (which a busy machine delays but does not change): the median
    # iteration's (tests/budget.toml). Its wall time was accepted anywhere in 1.2-5.0 before.
    median_cpu_ratio = sorted(b)[5] / sorted(a)[5]
    assert 1.6 < median_cpu_ratio < 2.5


def _cpus_allowed(pid: int) -> list[str]:
    out = []
    for task in sorted(os.listdir(f"/proc/{pid}/task")):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    out.append(line.split(":", 1)[1].strip())
    return out


def _wait_gone(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_the_noise_generator_pins_one_thread_per_cpu_and_stops_by_itself() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    gen = noise.Noise(duration=2.0, seed=3, mib=8, cpus=",".join(map(str, cpus))).start()
    try:
        assert gen.info["cpus"] == cpus
        # A thread lives until the timetable has no on-period left before the bound.
        time.sleep(0.1)
        pinned = _cpus_allowed(gen.pid)[1:]  # the main thread is not pinned
        assert sorted(pinned) == sorted(str(c) for c in cpus)
        t0 = time.monotonic()
        assert gen.proc is not None
        assert gen.proc.wait(timeout=5) == 0
        assert time.monotonic() - t0 < 3.0
        assert json.loads(gen.proc.stdout.readline())["pinned"] == len(cpus)  # type: ignore[union-attr]
    finally:
        gen.stop()


def test_the_asymmetric_noise_hits_one_cpu_only() -> None:
    with noise.Noise(duration=5.0, seed=3, mib=8, asymmetric=0) as gen:
        time.sleep(0.1)
        assert gen.info["cpus"] == [0]
        assert _cpus_allowed(gen.pid)[1:] == ["0"]


def test_the_noise_generator_stops_within_its_bound_when_its_starter_is_killed(
    tmp_path: Path,
) -> None:
    # A starter that launches the generator detached from itself, prints its pid and is then
    # killed with SIGKILL: nothing is left to stop the generator but the generator itself.
    binary = noise.build(tmp_path)
    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys; p = subprocess.Popen(sys.argv[1:], start_new_session=True,"
         " stdout=subprocess.DEVNULL); print(p.pid, flush=True); import time; time.sleep(60)",
         str(binary), "--duration", "1", "--mib", "8"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    starter.stdout.close()
    assert _wait_gone(pid, 4.5), "the noise generator outlived its --duration bound"


def test_the_noise_generator_refuses_an_unbounded_run() -> None:
    done = subprocess.run([str(noise.build()), "--duration", "0"], capture_output=True)
    assert done.returncode == 2


def test_the_workload_refuses_a_count_that_is_not_a_positive_number(build_dir: Path) -> None:
    """``--ops -5`` once ran an iteration of 2^64 - 5 operations (strtoull): a usage error now."""
    binary = workloads.build(build_dir)
    for bad in ("-5", "0", "12x", ""):
        proc = subprocess.run(
            [str(binary), "--kind", "integer", "--ops", bad, "--once"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert proc.returncode == 2, (bad, proc.returncode)
        assert "usage" in proc.stderr, bad
    ok = subprocess.run(
        [str(binary), "--kind", "integer", "--ops", "1000", "--once"], timeout=10, check=False
    )
    assert ok.returncode == 0
