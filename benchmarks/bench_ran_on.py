"""What reading where a side really ran costs per iteration (issue 33, finding 3).

``Barrier.ran_on`` runs once at the end of every iteration, outside the timed region: for each
thread of the side it reads ``/proc/<tid>/schedstat`` and, for a thread that ran,
``/proc/<tid>/stat``; for a command, also its exited process's ``stat``. This times it here, in
one process crossing over two CPUs, with 0, 1 and 7 extra threads (each wakes every 0.1 ms, so
it ran since the previous call and is read twice) and for a command's zombie, ``n`` calls
each. The figures are per call, in microseconds: the time it adds to every iteration of a side
(a 20 ms iteration of the integer workload: divide by 20,000 for the share).

Run: ``python benchmarks/bench_ran_on.py [--calls 2000] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "duet_bench" / "harness"
sys.path.insert(0, str(HARNESS))

import duet_barrier  # noqa: E402


def _busy(stop: threading.Event) -> None:
    # Runs a little every 0.1 ms without holding the GIL for long: a Python thread spinning
    # on the GIL would time the GIL hand-over, not the reads.
    while not stop.is_set():
        time.sleep(0.0001)


def time_calls(barrier: duet_barrier.Barrier, calls: int, command: bool) -> list[float]:
    took = []
    for _ in range(calls):
        pids: tuple[int, ...] = ()
        if command:
            child = subprocess.Popen(["true"])
            os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
            pids = (child.pid,)
        t0 = time.perf_counter_ns()
        barrier.ran_on(pids)
        took.append((time.perf_counter_ns() - t0) / 1000)
        if command:
            child.wait()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[:2]
    rows = []
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        path = os.path.join(d, "b.barrier")
        duet_barrier.create(path, parties=1).close()
        barrier = duet_barrier.attach(path, 0)
        barrier.cross(cpus)
        for extra, command in ((0, False), (1, False), (7, False), (0, True)):
            stop = threading.Event()
            threads = [
                threading.Thread(target=_busy, args=(stop,), daemon=True) for _ in range(extra)
            ]
            for t in threads:
                t.start()
            barrier._move(cpus[0])  # the new threads too
            took = sorted(time_calls(barrier, args.calls, command))
            stop.set()
            for t in threads:
                t.join()
            rows.append(
                {
                    "case": "command (its zombie)" if command else f"{1 + extra} thread(s)",
                    "calls": len(took),
                    "median_us": statistics.median(took),
                    "p90_us": took[int(0.9 * len(took))],
                }
            )
        barrier.close()
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"load_average": load, "rows": rows}, indent=1))
        return
    print(f"load average {load[0]:.3g} {load[1]:.3g} {load[2]:.3g}; CPUs {cpus}")
    for r in rows:
        print(f"{r['case']:>22}: median {r['median_us']:.3g} us, p90 {r['p90_us']:.3g} us per call")


if __name__ == "__main__":
    main()
