"""Does the side that starts an iteration first run it faster? Per A/A cell of the crossover
study (``benchmarks/results/crossover/raw``), the mean per-iteration log CPU-time ratio
(candidate over baseline) over the iterations the candidate started first and over those the
baseline started first, from the recorded ``iteration_start_ns`` of both sides.

A side that starts first runs alone for the start skew; when the two vCPUs share a host core or
a cache, it then runs faster. Balanced in expectation, it still widens the interval, and in a
run whose start order leans one way it biases the ratio.

Run: ``python benchmarks/start_order.py [RAW_DIR]``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np

RAW = Path(__file__).resolve().parent / "results" / "crossover" / "raw"


def cell(path: Path) -> tuple[int, float, float, float, float, float] | None:
    """(iterations, mean log ratio, share the candidate started first, mean log ratio when the
    candidate started first, when the baseline did, median absolute skew in µs)."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ratios: list[float] = []
    skews: list[float] = []
    for run in doc["benchmarks"][0]["runs"]:
        a, b = run["baseline"], run["candidate"]
        if run["status"] != "ok" or None in (
            a.get("iteration_cpu_ns"),
            a.get("iteration_start_ns"),
        ):
            continue
        n = min(len(a["iteration_cpu_ns"]), len(b["iteration_cpu_ns"]))
        ca, cb = (
            np.array(a["iteration_cpu_ns"][:n], float),
            np.array(b["iteration_cpu_ns"][:n], float),
        )
        sa = np.array(a["iteration_start_ns"][:n], float)
        sb = np.array(b["iteration_start_ns"][:n], float)
        ratios += list(np.log(cb / ca))
        skews += list(sb - sa)
    if not ratios:
        return None
    lr, sk = np.array(ratios), np.array(skews)
    first = sk < 0
    return (
        len(lr),
        float(lr.mean()),
        float(first.mean()),
        float(lr[first].mean()) if first.any() else float("nan"),
        float(lr[~first].mean()) if (~first).any() else float("nan"),
        float(np.median(np.abs(sk)) / 1e3),
    )


def main() -> int:
    raw = Path(sys.argv[1]) if len(sys.argv) > 1 else RAW
    print(
        "| cell | iterations | mean | candidate first | when candidate first "
        "| when baseline first | median skew |"
    )
    print("|---|---|---|---|---|---|---|")
    for path in sorted(raw.glob("aa__*.json.gz")):
        got = cell(path)
        if got is None:
            continue
        n, mean, share, cand, base, skew = got
        name = path.name.removesuffix(".json.gz")
        print(
            f"| {name} | {n} | {mean:+.2%} | {share:.0%} | {cand:+.2%} | {base:+.2%} "
            f"| {skew:.0f} µs |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
