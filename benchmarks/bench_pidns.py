"""What a side's PID namespace with its own ``/proc`` costs (issue 33, finding 2), with and
without it, in one sitting, as root.

- *per start* (``spawn``): a container of the best level here, a sandbox as the runner makes
  it, and ``/bin/true`` started and waited for, ``--starts`` times alternately with and without
  the PID namespace (the keeper and init processes, the ``/proc`` mount): the median time from
  ``Container.spawn`` to the end of ``wait`` in microseconds, and the median to ``spawn``'s
  return (the program has exec'd), and the container's peak memory (the keeper and the init are
  copies of the orchestrator that stay in the side's cgroup: the pages they write are charged
  to it).
- *per iteration, directly*: the only work an iteration gains is for that one more task in
  the side's task list, the namespace's init (asleep): one ``sched_setaffinity`` at the
  crossover's move and one read of its ``/proc/<tid>/schedstat`` in ``Barrier.ran_on``; both
  timed here on a sleeping child, ``--calls`` times (median, microseconds). Robust to load in a
  way the A/A runs below are not.
- *per iteration*: A/A duet runs of the integer workload (``benchmarks/workloads``, native,
  calibrated to ``--iteration-ms``, 20 ms), through ``duet_bench.session.measure``, alternately
  with and without the namespace (``--pairs`` times each): the median measured iteration,
  the side's wall time per iteration (barrier waits, the crossover's moves: one more task, the
  namespace's init, to move at each), and the A/A interval's width; the pairs in ABBA order
  (from sitting 6 on). Nothing per iteration
  changes but that one task, so the expected difference is ~0.

Without the namespace means the runner's sandboxes with ``pid_namespace=False``: the code as it
was before, with everything else the same.

Run: ``sudo python benchmarks/bench_pidns.py [--starts 200] [--pairs 3] [--runs 10]
[--iterations 20] [--json]``; raw output under ``benchmarks/results/pidns/``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import workloads  # noqa: E402

from duet_bench.isolation import Limits, make_sandbox, select_backend  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.runner import run as runner_run  # noqa: E402
from duet_bench.session import MachineOptions, SessionOptions, measure  # noqa: E402


def starts(n: int) -> dict[str, Any]:
    """``/bin/true`` in a container with a sandbox, with and without the namespace, alternately."""
    took: dict[bool, list[float]] = {True: [], False: []}
    returned: dict[bool, list[float]] = {True: [], False: []}
    peak: dict[bool, list[int]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d, select_backend("auto") as backend:
        base = make_sandbox(d, "baseline", share_network=False)
        try:
            for i in range(2 * n):
                own = i % 2 == 0
                sandbox = dataclasses.replace(base, pid_namespace=own)
                with backend.container("pidns", cpus=[0], mems=None, limits=Limits()) as c:
                    t0 = time.perf_counter_ns()
                    p = c.spawn(["/bin/true"], env={}, cwd="/", stdout=None, stderr=None,
                                sandbox=sandbox)  # fmt: skip
                    t1 = time.perf_counter_ns()
                    if p.wait() != 0:
                        raise SystemExit("/bin/true failed")
                    t2 = time.perf_counter_ns()
                    peak[own].append(c.usage().peak_memory_bytes or 0)
                returned[own].append((t1 - t0) / 1000)
                took[own].append((t2 - t0) / 1000)
        finally:
            base.remove()
        level = backend.level
    return {
        "level": level,
        "starts": n,
        "with_us": statistics.median(took[True]),
        "without_us": statistics.median(took[False]),
        "with_exec_us": statistics.median(returned[True]),
        "without_exec_us": statistics.median(returned[False]),
        "with_peak_memory_kib": statistics.median(peak[True]) / 1024,
        "without_peak_memory_kib": statistics.median(peak[False]) / 1024,
    }


def extra_per_iteration(calls: int) -> dict[str, float]:
    """One ``sched_setaffinity`` and one ``schedstat`` read of a sleeping task, as the crossover
    and ``ran_on`` do for the init at every iteration."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - sleeps until killed
        time.sleep(3600)
        os._exit(0)
    try:
        cpus = sorted(os.sched_getaffinity(0))
        took = []
        for i in range(calls):
            t0 = time.perf_counter_ns()
            os.sched_setaffinity(pid, {cpus[i % len(cpus)]})
            with open(f"/proc/{pid}/schedstat", "rb") as f:
                f.read()
            took.append((time.perf_counter_ns() - t0) / 1000)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return {"calls": calls, "median_us": statistics.median(took)}


@contextlib.contextmanager
def namespace(own: bool) -> Iterator[None]:
    """The runner's sandboxes with or without the PID namespace."""
    made = vars(runner_run)["make_sandbox"]

    def make(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.replace(made(*args, **kwargs), pid_namespace=own)

    vars(runner_run)["make_sandbox"] = make
    try:
        yield
    finally:
        vars(runner_run)["make_sandbox"] = made


def one_aa(ops: int, runs: int, iterations: int, own: bool) -> dict[str, float]:
    side = SideSpec(kind="native", command=workloads.command("integer", ops))
    bench = BenchmarkSpec(
        name="pidns", baseline=side, candidate=side, runs=runs, iterations=iterations, warmup=2
    )
    with tempfile.TemporaryDirectory() as tmp, namespace(own):
        options = SessionOptions(out=Path(tmp) / "r.json", machine=MachineOptions(progress=False))
        doc = measure([bench], options)
    b = doc.benchmarks[0]
    durations, walls = [], []
    for r in b.ok_runs():
        for s in (r.baseline, r.candidate):
            durations += list(s.iterations_ns)
            if s.wall_ns:
                walls.append(s.wall_ns / (iterations + 2))
    analysis = b.analysis
    low = analysis.ci_low if analysis is not None else None
    high = analysis.ci_high if analysis is not None else None
    return {
        "median_iteration_ms": statistics.median(durations) / 1e6,
        "wall_per_iteration_ms": statistics.median(walls) / 1e6,
        "aa_width": (high - low) if low is not None and high is not None else float("nan"),
        "ok_runs": len(b.ok_runs()),
    }


def iterations(args: argparse.Namespace) -> dict[str, Any]:
    ops = workloads.calibrate("integer", args.iteration_ms, cpu=0)
    rows: dict[str, list[dict[str, float]]] = {"with": [], "without": []}
    for pair in range(args.pairs):
        # ABBA: a drift of the machine's load over the sitting favours neither condition.
        for own in (True, False) if pair % 2 == 0 else (False, True):
            rows["with" if own else "without"].append(one_aa(ops, args.runs, args.iterations, own))
    summary: dict[str, Any] = {"ops": ops, "iteration_ms": args.iteration_ms, "raw": rows}
    for key in ("median_iteration_ms", "wall_per_iteration_ms", "aa_width"):
        with_ = statistics.median(r[key] for r in rows["with"])
        without = statistics.median(r[key] for r in rows["without"])
        summary[key] = {"with": with_, "without": without, "ratio": with_ / without}
    return summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--starts", type=int, default=200)
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--iteration-ms", type=float, default=20.0)
    p.add_argument("--skip-aa", action="store_true", help="no A/A runs (they need a quiet machine)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the namespaces need it (sudo python benchmarks/...)")
    from accuracy import measuring_lock

    with measuring_lock("benchmarks/bench_pidns.py"):
        return run(args)


def run(args: argparse.Namespace) -> int:
    started = time.time()
    load = [os.getloadavg()[0]]
    res: dict[str, Any] = {"spawn": starts(args.starts)}
    res["extra_per_iteration"] = extra_per_iteration(args.calls)
    load.append(os.getloadavg()[0])
    if not args.skip_aa:
        res["iteration"] = iterations(args)
        load.append(os.getloadavg()[0])
    res["load_average"] = load
    res["seconds"] = round(time.time() - started, 1)
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    s = res["spawn"]
    print(f"per start ({s['level']}, {s['starts']} each, /bin/true to its end):")
    print(
        f"  with the PID namespace {s['with_us']:.3g} us, without {s['without_us']:.3g} us "
        f"(to exec: {s['with_exec_us']:.3g} vs {s['without_exec_us']:.3g} us; peak memory "
        f"{s['with_peak_memory_kib']:.3g} vs {s['without_peak_memory_kib']:.3g} KiB)"
    )
    extra = res["extra_per_iteration"]
    print(f"per iteration, the init's move and schedstat read: {extra['median_us']:.3g} us")
    if args.skip_aa:
        print(f"load average {', '.join(f'{x:.3g}' for x in load)}; {res['seconds']} s")
        return 0
    it = res["iteration"]
    print(f"per iteration (integer, {args.iteration_ms:g} ms, {args.pairs} A/A pairs):")
    for key in ("median_iteration_ms", "wall_per_iteration_ms", "aa_width"):
        row = it[key]
        print(f"  {key}: with {row['with']:.3g}, without {row['without']:.3g}, "
              f"ratio {row['ratio']:.3g}")  # fmt: skip
    print(f"load average {', '.join(f'{x:.3g}' for x in load)}; {res['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
