"""What hiding the other side's files costs per run (issue 33, finding 4).

Each side's child, in its new mount namespace, covers the other side's directory and private
``/tmp`` with an empty read-only tmpfs (``Sandbox.hidden``): two mounts per side per run, before
``exec``, nothing per iteration. This forks ``--runs`` children that each enter a mount
namespace as the sandbox does and time those two mounts alone (as root), in microseconds.

Run: ``sudo python benchmarks/bench_hide.py [--runs 200] [--json]``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from duet_bench.isolation import sandbox


def one(libc: ctypes.CDLL, targets: list[bytes]) -> float:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe
        code = 1
        try:
            if (
                libc.unshare(sandbox.CLONE_NEWNS) == 0
                and libc.mount(None, b"/", None, sandbox.MS_REC | sandbox.MS_PRIVATE, None) == 0
            ):
                t0 = time.perf_counter_ns()
                ok = all(
                    libc.mount(b"none", t, b"tmpfs", sandbox._HIDDEN_FLAGS, b"size=4k,mode=0") == 0
                    for t in targets
                )
                took = time.perf_counter_ns() - t0
                if ok:
                    os.write(write_end, str(took).encode())
                    code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    data = os.read(read_end, 64)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise SystemExit("a mount failed: run as root")
    return int(data) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        targets = []
        for name in ("candidate", "candidate-tmp-x"):
            os.mkdir(os.path.join(d, name))
            targets.append(os.fsencode(os.path.join(d, name)))
        took = sorted(one(libc, targets) for _ in range(args.runs))
    row = {
        "runs": len(took),
        "median_us": statistics.median(took),
        "p90_us": took[int(0.9 * len(took))],
        "load_average": os.getloadavg(),
    }
    if args.json:
        print(json.dumps(row, indent=1))
        return
    load = row["load_average"]
    print(
        f"two tmpfs mounts per side per run: median {row['median_us']:.3g} us, "
        f"p90 {row['p90_us']:.3g} us ({row['runs']} children; load {load[0]:.3g})"
    )


if __name__ == "__main__":
    main()
