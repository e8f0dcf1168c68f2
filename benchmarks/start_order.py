"""Does the side that starts an iteration first run it faster? Per A/A cell of the crossover
study (``benchmarks/results/crossover/raw``), the mean per-iteration log CPU-time ratio
(candidate over baseline) over the iterations the candidate started first and over those the
baseline started first, from the recorded ``iteration_start_ns`` of both sides.

A side that starts first runs alone for the start skew; when the two vCPUs share a host core or
a cache, it then runs faster. Balanced in expectation, it still widens the interval, and in a
run whose start order leans one way it biases the ratio.

Run: ``python benchmarks/start_order.py [PATH ...]``: A/A cells of the study (``aa__*.json.gz``
in a directory, the default ``RAW``) or results files (``.json``, ``.json.gz``) named directly.
A start skew of a few µs leaves no time to run alone, so the table also gives the share of
iterations whose skew exceeded 1 ms and the order effect over those alone.
"""

from __future__ import annotations

import gzip
import itertools
import json
import sys
from pathlib import Path

import numpy as np

RAW = Path(__file__).resolve().parent / "results" / "crossover" / "raw"


LONG_SKEW_NS = 1e6


def cell(path: Path) -> tuple[float, ...] | None:
    """(iterations, mean log ratio, share the candidate started first, mean log ratio when the
    candidate started first, when the baseline did, median absolute skew in µs, share of
    iterations with a skew over 1 ms, and over those the mean log ratio when the candidate
    started first minus when the baseline did)."""
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    ratios: list[float] = []
    skews: list[float] = []
    repeats: list[bool] = []  # this start order = the previous iteration's arrival order
    lag: list[tuple[float, float]] = []
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
        lr = np.log(cb / ca)
        ratios += list(lr)
        skews += list(sb - sa)
        wa = np.array(a["iterations_ns"][:n], float)
        wb = np.array(b["iterations_ns"][:n], float)
        candidate_last = (sb + wb) > (sa + wa)
        repeats += list(candidate_last[:-1] == (sb < sa)[1:])
        lag += list(itertools.pairwise(lr))
    if not ratios:
        return None
    lr, sk = np.array(ratios), np.array(skews)
    first = sk < 0
    long = np.abs(sk) > LONG_SKEW_NS
    return (
        len(lr),
        float(lr.mean()),
        float(first.mean()),
        _mean(lr[first]),
        _mean(lr[~first]),
        float(np.median(np.abs(sk)) / 1e3),
        float(long.mean()),
        _mean(lr[long & first]) - _mean(lr[long & ~first]),
        float(np.mean(repeats)) if repeats else float("nan"),
        float(np.corrcoef(np.array(lag).T)[0, 1]) if len(lag) > 2 else float("nan"),
    )


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else float("nan")


def _cells(args: list[str]) -> list[Path]:
    if not args:
        return sorted(RAW.glob("aa__*.json.gz"))
    out: list[Path] = []
    for a in map(Path, args):
        out += sorted(a.glob("aa__*.json.gz")) if a.is_dir() else [a]
    return out


def main() -> int:
    print(
        "| cell | iterations | mean | candidate first | when candidate first "
        "| when baseline first | median skew | skew > 1 ms | order effect over those "
        "| = previous arrival | lag-1 autocorrelation |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in _cells(sys.argv[1:]):
        got = cell(path)
        if got is None:
            continue
        n, mean, share, cand, base, skew, long, effect, repeat, autocorr = got
        name = path.name.removesuffix(".gz").removesuffix(".json")
        print(
            f"| {name} | {n:.0f} | {mean:+.2%} | {share:.0%} | {cand:+.2%} | {base:+.2%} "
            f"| {skew:.0f} µs | {long:.0%} | {effect:+.2%} | {repeat:.0%} | {autocorr:+.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
