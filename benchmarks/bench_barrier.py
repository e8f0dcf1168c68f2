"""Benchmark of the barrier: round trip and start skew of both clients (C and Python).

Two parties pinned to two CPUs (0 and 1 by default) do ``--iterations`` empty iterations at a
barrier in /dev/shm; each records the release time (``CLOCK_MONOTONIC``) of every iteration.

- round trip: the time between two consecutive releases of one party, i.e. one barrier crossing
  plus a clock read (both parties pooled);
- start skew: |release of party 0 - release of party 1| in the same iteration.

The first ``--discard`` iterations (process start-up) are left out. ``--hog`` adds a noisy
neighbour pinned on each of the two CPUs (random read-modify-writes over 64 MiB plus integer
work, SCHED_OTHER, nice 0), the interference generator of docs/accuracy.md ("The prototype"), always
on.

``--crossover`` has the parties cross over the two CPUs at every wait (duet's default,
``Barrier.cross`` / ``duet_barrier_cross``: a rendezvous, the move, a second rendezvous), and
measures the move alone too: ``--moves`` moves of one process with 0 and ``--threads`` idle extra
threads, alternating between the two CPUs, each timed (``move_us``).

Goals on an idle machine: C median < 1 µs and p99 < 20 µs, Python median < 2 µs and p99 < 50 µs
(for the waits without crossover).
Run: ``python benchmarks/bench_barrier.py [--iterations 20000] [--hog] [--crossover] [--json]``.
"""

from __future__ import annotations

import argparse
import array
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "duet_bench" / "harness"
C_SOURCE = ROOT / "benchmarks" / "c" / "bench_barrier.c"
GOALS_US = {"c": (1.0, 20.0), "python": (2.0, 50.0)}  # (median, p99)
TIMEOUT_NS = 60_000_000_000


def python_party(path: str, slot: int, n: int, cpu: int, out: str, other: int) -> None:
    """The Python side (run in its own process with ``--party``); crossing over between
    ``cpu`` and ``other`` unless ``other`` is -1."""
    os.sched_setaffinity(0, {cpu})
    sys.path.append(str(HARNESS))
    import duet_barrier

    barrier = duet_barrier.attach(path, slot)
    if other >= 0:
        barrier.cross([cpu, other])
    starts = array.array("Q", bytes(8 * n))
    wait = barrier.wait
    for i in range(n):
        starts[i] = wait(TIMEOUT_NS)
    barrier.close()
    with open(out, "wb") as f:
        starts.tofile(f)


def python_moves(path: str, n: int, cpu: int, other: int, threads: int, out: str) -> None:
    """The Python client's move alone (``--move-party``): ``n`` moves of this process and its
    ``threads`` idle extra threads, alternating between two CPUs, each timed."""
    import threading

    sys.path.append(str(HARNESS))
    import duet_barrier

    stop = threading.Event()
    idle = [threading.Thread(target=stop.wait, daemon=True) for _ in range(threads)]
    for t in idle:
        t.start()
    barrier = duet_barrier.attach(path, 0)
    barrier.cross([cpu, other])
    took = array.array("Q", bytes(8 * n))
    move = barrier._move
    clock = time.monotonic_ns
    cpus = (cpu, other)
    for i in range(n):
        t0 = clock()
        move(cpus[(i + 1) % 2])
        took[i] = clock() - t0
    barrier.close()
    stop.set()
    with open(out, "wb") as f:
        took.tofile(f)


def python_hog(cpu: int) -> None:
    """A noisy neighbour in Python, when gcc is missing."""
    os.sched_setaffinity(0, {cpu})
    memory = bytearray(64 << 20)
    x = 88172645463325252 ^ cpu
    mask = (1 << 64) - 1
    size = len(memory)
    while True:
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        memory[x % size] = (memory[x % size] + x) & 0xFF


def percentile(sorted_values: list[int], q: float) -> int:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summary_us(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": percentile(ordered, 0.5) / 1000,
        "p99": percentile(ordered, 0.99) / 1000,
        "max": ordered[-1] / 1000,
    }


def read_starts(path: Path, n: int) -> list[int]:
    starts = array.array("Q")
    with open(path, "rb") as f:
        starts.fromfile(f, n)
    return list(starts)


def measure(
    client: str,
    c_binary: Path | None,
    python: str,
    n: int,
    cpus: tuple[int, int],
    workdir: Path,
    discard: int,
    crossover: bool = False,
) -> dict[str, Any]:
    sys.path.append(str(HARNESS))
    import duet_barrier

    path = duet_barrier.new_path()
    barrier = duet_barrier.create(path)
    try:
        parties = []
        for slot in (0, 1):
            out = workdir / f"{client}-{slot}.bin"
            other = str(cpus[1 - slot]) if crossover else "-1"
            if client == "c":
                assert c_binary is not None
                argv = [str(c_binary), "party", path, str(slot), str(n), str(cpus[slot]), str(out)]
                argv += [other] if crossover else []
            else:
                argv = [python, __file__, "--party", path, str(slot), str(n), str(cpus[slot])]
                argv += [str(out), other]
            parties.append((subprocess.Popen(argv), out))
        for process, _ in parties:
            if process.wait(timeout=600) != 0:
                raise SystemExit(f"the {client} party failed with exit code {process.returncode}")
        generations = barrier.generations()
    finally:
        barrier.close()
        os.unlink(path)
    # Crossing over, a wait is two generations (both finished, then both moved).
    expected = 2 * n if crossover else n
    if generations != (expected, expected):
        raise SystemExit(
            f"the {client} parties stopped at generations {generations}, not {expected}"
        )
    starts = [read_starts(out, n)[discard:] for _, out in parties]
    round_trips = [b - a for side in starts for a, b in itertools.pairwise(side)]
    skews = [abs(a - b) for a, b in zip(starts[0], starts[1], strict=True)]
    result = {"round_trip_us": summary_us(round_trips), "skew_us": summary_us(skews)}
    median_goal, p99_goal = GOALS_US[client]
    result["goals_met"] = all(
        result[metric]["median"] < median_goal and result[metric]["p99"] < p99_goal
        for metric in ("round_trip_us", "skew_us")
    )
    return result


def measure_moves(
    client: str,
    c_binary: Path | None,
    python: str,
    n: int,
    cpus: tuple[int, int],
    threads: int,
    workdir: Path,
) -> dict[str, float]:
    """One move alone, in µs: ``n`` moves of one process with ``threads`` idle extra threads."""
    sys.path.append(str(HARNESS))
    import duet_barrier

    path = duet_barrier.new_path()
    barrier = duet_barrier.create(path, parties=1)
    out = workdir / f"{client}-moves.bin"
    args = [path, str(n), str(cpus[0]), str(cpus[1]), str(threads), str(out)]
    try:
        if client == "c":
            assert c_binary is not None
            argv = [str(c_binary), "move", *args]
        else:
            argv = [python, __file__, "--move-party", *args]
        if subprocess.run(argv, check=False, timeout=600).returncode != 0:
            raise SystemExit(f"the {client} move party failed")
    finally:
        barrier.close()
        os.unlink(path)
    return summary_us(read_starts(out, n)[10:])  # the first ones fault pages in


def build_c(workdir: Path) -> Path | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    binary = workdir / "bench_barrier"
    subprocess.run(
        [
            gcc,
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O2",
            "-pthread",
            f"-I{HARNESS}",
            str(C_SOURCE),
            "-o",
            str(binary),
        ],
        check=True,
    )
    return binary


def start_hogs(c_binary: Path | None, cpus: tuple[int, int]) -> list[subprocess.Popen[bytes]]:
    hogs = []
    for cpu in cpus:
        if c_binary is not None:
            argv = [str(c_binary), "hog", str(cpu), "3600"]
        else:
            argv = [sys.executable, __file__, "--hog-process", str(cpu)]
        hogs.append(subprocess.Popen(argv))
    time.sleep(0.5)  # let them fill their 64 MiB
    return hogs


def environment(python: str) -> dict[str, Any]:
    def read(path: str) -> str:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return "unknown"

    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus_online": os.cpu_count(),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "loadavg": read("/proc/loadavg"),
        "python_party": f"{python} ({version})",
    }


def print_table(report: dict[str, Any]) -> None:
    cpus = report["cpus"]
    print(
        f"barrier benchmark: {report['iterations']} empty iterations (first "
        f"{report['discard']} left out), CPUs {cpus[0]} and {cpus[1]}, "
        f"hog {'on' if report['hog'] else 'off'}, "
        f"crossover {'on' if report['crossover'] else 'off'}"
    )
    columns = ("round trip median", "p99", "max", "skew median", "p99", "max")
    widths = (18, 8, 9, 12, 8, 9)
    print(f"{'client':<8} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for client, result in report["results"].items():
        values = [result[metric][stat] for metric in ("round_trip_us", "skew_us")
                  for stat in ("median", "p99", "max")]  # fmt: skip
        median_goal, p99_goal = GOALS_US[client]
        verdict = "met" if result["goals_met"] else "MISSED"
        print(
            f"{client:<8} "
            + " ".join(f"{v:>{w}.3f}" for v, w in zip(values, widths, strict=True))
            + f"   goals {verdict} (median < {median_goal:g}, p99 < {p99_goal:g})"
        )
    for client, result in report["results"].items():
        for threads, move in result.get("move_us", {}).items():
            print(
                f"{client:<8} one move of the process with {threads} extra threads: median "
                f"{move['median']:.2f}, p99 {move['p99']:.2f}, max {move['max']:.2f}"
            )
    print("(microseconds)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--discard", type=int, default=100, help="first iterations left out")
    parser.add_argument("--cpus", default="0,1", help="the two CPUs, e.g. 0,1")
    parser.add_argument("--hog", action="store_true", help="a CPU and memory hog on both CPUs")
    parser.add_argument("--clients", default="c,python", help="c, python or both")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the Python party")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--crossover", action="store_true", help="cross over at every wait")
    parser.add_argument("--moves", type=int, default=2000, help="moves timed (with --crossover)")
    parser.add_argument("--threads", type=int, default=8, help="extra threads in the 2nd moves")
    parser.add_argument("--party", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--move-party", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--hog-process", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.party:
        path, slot, n, cpu, out, other = args.party
        python_party(path, int(slot), int(n), int(cpu), out, int(other))
        return 0
    if args.move_party:
        path, n, cpu, other, threads, out = args.move_party
        python_moves(path, int(n), int(cpu), int(other), int(threads), out)
        return 0
    if args.hog_process is not None:
        python_hog(args.hog_process)
        return 0

    first, second = (int(c) for c in args.cpus.split(","))
    cpus = (first, second)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    with tempfile.TemporaryDirectory(prefix="duet-bench-barrier-") as tmp:
        workdir = Path(tmp)
        c_binary = build_c(workdir)
        if "c" in clients and c_binary is None:
            print("gcc not found: the C client is not measured", file=sys.stderr)
            clients.remove("c")
        hogs = start_hogs(c_binary, cpus) if args.hog else []
        try:
            results = {
                client: measure(
                    client,
                    c_binary,
                    args.python,
                    args.iterations,
                    cpus,
                    workdir,
                    args.discard,
                    args.crossover,
                )
                for client in clients
            }
            for client in clients if args.crossover else ():
                results[client]["move_us"] = {
                    threads: measure_moves(
                        client, c_binary, args.python, args.moves, cpus, threads, workdir
                    )
                    for threads in (0, args.threads)
                }
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    report = {
        "benchmark": "barrier",
        "iterations": args.iterations,
        "discard": args.discard,
        "cpus": list(cpus),
        "hog": args.hog,
        "crossover": args.crossover,
        "goals_us": {client: {"median": m, "p99": p} for client, (m, p) in GOALS_US.items()},
        "environment": environment(args.python),
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
