"""Benchmark of the statistics: analyse 100 benchmarks of 30 runs x 100 iterations, 10,000
bootstrap replicates each, the way ``duet analyze`` does (duet ratio + percentile interval,
winsorization, impact factors of both sides, runs needed when inconclusive).

Goal (issue "Foundation"): under 2 s on a 2-core machine. Run: ``make bench-stats`` or
``python benchmarks/bench_stats.py [--benchmarks 100] [--repeat 5] [--json]``.
Quotes the median of ``--repeat`` timings (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from duet_bench.analysis import AnalysisSettings, analyze_document
from duet_bench.results import ResultsDocument, from_dict


def synthetic(
    benchmarks: int, runs: int, iterations: int, seed: int = 1, *, metrics: bool = True
) -> ResultsDocument:
    """``metrics``: per-iteration CPU time and run-queue delay too (duet-results/2, what duet
    records today: every metric is analysed), else wall time only (a duet-results/1 file)."""
    rng = np.random.default_rng(seed)
    items = []
    for k in range(benchmarks):
        ratio = 1.0 + 0.01 * (k % 7)
        out = []
        for r in range(runs):
            shared = rng.lognormal(0, 0.1) * rng.lognormal(0, 0.05, iterations)
            a = 1e7 * shared * rng.lognormal(0, 0.01, iterations)
            b = 1e7 * ratio * shared * rng.lognormal(0, 0.01, iterations)
            sides = {}
            for name, wall in (("baseline", a), ("candidate", b)):
                side: dict[str, list[int]] = {"iterations_ns": wall.astype(np.int64).tolist()}
                if metrics:
                    runq = wall * rng.uniform(0.0, 0.05, iterations)
                    cpu = (wall - runq) * rng.lognormal(0, 0.002, iterations) * 0.98
                    side["iteration_cpu_ns"] = cpu.astype(np.int64).tolist()
                    side["iteration_runq_ns"] = runq.astype(np.int64).tolist()
                sides[name] = side
            out.append({"index": r, "status": "ok", **sides})
        items.append({"name": f"bench-{k:03d}", "runs": out})
    return from_dict({"schema": "duet-results/2", "benchmarks": items})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--wall-only", action="store_true", help="wall time only, as in a duet-results/1 file"
    )
    args = parser.parse_args()
    doc = synthetic(args.benchmarks, args.runs, args.iterations, metrics=not args.wall_only)
    settings = AnalysisSettings(reps=args.reps)
    analyze_document(synthetic(2, args.runs, args.iterations), settings)  # warm imports
    timings = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        analyze_document(doc, settings)
        timings.append(time.perf_counter() - t0)
    result = {
        "benchmarks": args.benchmarks,
        "runs": args.runs,
        "iterations": args.iterations,
        "reps": args.reps,
        "median_s": statistics.median(timings),
        "min_s": min(timings),
        "max_s": max(timings),
        "per_benchmark_ms": statistics.median(timings) / args.benchmarks * 1e3,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.benchmarks} benchmarks x {args.runs} runs x {args.iterations} iterations, "
            f"{args.reps} replicates: median {result['median_s']:.3f} s "
            f"(min {result['min_s']:.3f}, max {result['max_s']:.3f}, {args.repeat} repeats), "
            f"{result['per_benchmark_ms']:.1f} ms per benchmark"
        )


if __name__ == "__main__":
    main()
