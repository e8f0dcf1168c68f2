"""Harness overhead per iteration against a bare loop of the same work (runner issue: < 1% at
10 ms iterations).

The integer workload (``benchmarks/workloads/``) calibrated to ``--iteration-ms`` (10 ms):

- ``bare``: the C program times each iteration itself in a plain loop, pinned to one CPU, alone;
- ``native``: the same program as a duet native benchmark (A/A, both sides the same), through
  ``duet_bench.session.measure`` (cgroups, barrier, samples file);
- ``python``: the python workload ``pyworkloads:integer`` through the python worker, against a
  bare Python loop of the same calls in one process (inner loops calibrated to the same time).

Two overheads for each harness: of the *measured iteration* (median measured duration against
the bare median: what the harness adds inside the timed region), and of *wall time per
iteration* (the side's wall time divided by warm-up plus measured iterations, against the bare
median: barrier waits, sample writing, process start-up, amortised). The load average is
printed next to every figure; ``--noise`` repeats everything under the reference noise.
``--crossover iteration|run`` (default ``iteration``, duet's default) says whether the sides
cross over the two CPUs at every iteration (a move and a second rendezvous per iteration, outside
the timed region) or keep them for a run.

Run: ``python benchmarks/bench_overhead.py [--iteration-ms 10] [--runs 5] [--iterations 50]
[--crossover iteration|run] [--noise] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import noise  # noqa: E402
import workloads  # noqa: E402

from duet_bench.defaults import Crossover  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.session import MachineOptions, SessionOptions, measure  # noqa: E402


def bare_native(ops: int, iterations: int, cpu: int) -> list[int]:
    done = subprocess.run(
        [str(workloads.build()), "--kind", "integer", "--ops", str(ops), "--bare", str(iterations)],
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    return [json.loads(line)["duration_ns"] for line in done.stdout.splitlines()]


BARE_PY = """
import sys, time, json
sys.path.insert(0, sys.argv[1])
import pyworkloads as p
s = p.setup_integer()
n, iters = int(sys.argv[2]), int(sys.argv[3])
out = []
for _ in range(iters):
    t = time.monotonic_ns()
    for _ in range(n):
        p.integer(s)
    out.append(time.monotonic_ns() - t)
print(json.dumps(out))
"""


def bare_python(inner: int, iterations: int, cpu: int) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", BARE_PY, str(HERE / "workloads"), str(inner), str(iterations)],
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    return json.loads(done.stdout)


def through_duet(
    side: SideSpec, runs: int, iterations: int, warmup: int, crossover: Crossover
) -> dict[str, Any]:
    bench = BenchmarkSpec(
        name="overhead", baseline=side, candidate=side, runs=runs, iterations=iterations,
        warmup=warmup, crossover=crossover,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        doc = measure(
            [bench],
            SessionOptions(out=Path(tmp) / "r.json", machine=MachineOptions(progress=False)),
        )
    b = doc.benchmarks[0]
    durations, walls = [], []
    for r in b.ok_runs():
        for s in (r.baseline, r.candidate):
            durations += list(s.iterations_ns)
            if s.wall_ns:
                walls.append(s.wall_ns / (iterations + warmup))
    return {
        "median_ns": float(np.median(durations)),
        "wall_per_iteration_ns": float(np.median(walls)) if walls else None,
        "inner_loops": b.settings.inner_loops,
    }


def measure_all(args: argparse.Namespace) -> dict[str, Any]:
    ops = workloads.calibrate("integer", args.iteration_ms, cpu=0)
    out: dict[str, Any] = {
        "iteration_ms": args.iteration_ms,
        "ops": ops,
        "crossover": args.crossover,
    }
    n = args.runs * args.iterations // 2
    load = os.getloadavg()[0]
    bare = bare_native(ops, n, cpu=0)
    nat = through_duet(
        SideSpec(kind="native", command=workloads.command("integer", ops)),
        args.runs,
        args.iterations,
        args.warmup,
        args.crossover,
    )
    bare += bare_native(ops, n, cpu=1)  # before and after, on each CPU: drift shows as spread
    bare_med = float(np.median(bare))
    out["native"] = {
        "bare_median_ms": bare_med / 1e6,
        "duet_median_ms": nat["median_ns"] / 1e6,
        "measured_overhead": nat["median_ns"] / bare_med - 1,
        "wall_per_iteration_ms": (nat["wall_per_iteration_ns"] or 0) / 1e6,
        "wall_overhead": (nat["wall_per_iteration_ns"] or 0) / bare_med - 1,
        "load_average": [load, os.getloadavg()[0]],
    }
    load = os.getloadavg()[0]
    py = through_duet(
        SideSpec(
            kind="python",
            interpreter=sys.executable,
            callable="pyworkloads:integer",
            setup="pyworkloads:setup_integer",
            sys_path=(str(HERE / "workloads"),),
        ),
        args.runs,
        args.iterations,
        args.warmup,
        args.crossover,
    )
    inner = int(py["inner_loops"] or 1)
    pb = bare_python(inner, n, cpu=0) + bare_python(inner, n, cpu=1)
    pbare = float(np.median(pb))
    out["python"] = {
        "inner_loops": inner,
        "bare_median_ms": pbare / 1e6,
        "duet_median_ms": py["median_ns"] / 1e6,
        "measured_overhead": py["median_ns"] / pbare - 1,
        "wall_per_iteration_ms": (py["wall_per_iteration_ns"] or 0) / 1e6,
        "wall_overhead": (py["wall_per_iteration_ns"] or 0) / pbare - 1,
        "load_average": [load, os.getloadavg()[0]],
    }
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iteration-ms", type=float, default=10.0)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--crossover", choices=("iteration", "run"), default="iteration")
    p.add_argument("--noise", action="store_true", help="under the reference noise")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    from accuracy import measuring_lock

    with measuring_lock():
        return run(args)


def run(args: argparse.Namespace) -> int:
    started = time.time()
    if args.noise:
        with noise.Noise(duration=900, seed=7):
            res = measure_all(args)
    else:
        res = measure_all(args)
    res["condition"] = "noise" if args.noise else "quiet"
    res["seconds"] = round(time.time() - started, 1)
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(
        f"integer workload, {args.iteration_ms:g} ms iterations, {res['condition']}, "
        f"{args.runs} runs x {args.iterations} iterations, crossover {args.crossover}"
    )
    for name in ("native", "python"):
        r = res[name]
        print(
            f"  {name:7s} bare {r['bare_median_ms']:.3f} ms, through duet {r['duet_median_ms']:.3f}"
            f" ms: measured iteration {100 * r['measured_overhead']:+.2f}%, wall time per"
            f" iteration {r['wall_per_iteration_ms']:.3f} ms ({100 * r['wall_overhead']:+.2f}%)"
            f"  [load {r['load_average'][0]:.2f} -> {r['load_average'][1]:.2f}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
