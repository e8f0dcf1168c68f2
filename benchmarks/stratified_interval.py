"""Would a stratified interval (runs resampled within each core assignment) narrow duet's?

duet alternates the sides between the two CPUs, balanced, from run to run. A CPU that runs slower
than the other shifts every run's log ratio by ``+d`` or ``-d`` depending on where the baseline
sat: the grand mean cancels it, the plain bootstrap over runs counts it as spread. Resampling
the runs within each assignment (a stratified bootstrap) removes that spread; but each stratum
has R/2 runs, and the bootstrap's narrowness bias ``(m - 1) / m`` is larger at m = R/2 than at R,
so part of the narrowing is that bias, not information.

This script measures both on data already on disk, with the default interval (``expanded``, 99%,
``duet_stats.intervals.expanded_confidence`` at R runs):

1. **Real A/A**: every duet benchmark of a metric-study directory's A/A cells, on the CPU time
   of each iteration: the plain width, the stratified width, the stratified width corrected for
   the stratum bias (replicate deviations scaled by ``sqrt(m / (m - 1) * (R - 1) / R)``), and how
   many of each hold 1.
2. **Synthetic A/A** without any core asymmetry (iid normal log run ratios, sd 1%): what the
   stratum bias alone does to width and coverage.

Run: ``python benchmarks/stratified_interval.py [--results DIR] [--trials N]``; about a minute.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from pathlib import Path

import numpy as np

from duet_stats.intervals import expanded_confidence

ROOT = Path(__file__).resolve().parent
DEFAULT_RESULTS = ROOT / "results" / "metric" / "idle-20261125"
CONFIDENCE = 0.99
REPS = 10_000


def _bounds(replicates: np.ndarray, runs: int) -> tuple[float, float]:
    level = expanded_confidence(CONFIDENCE, runs)
    lo, hi = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def intervals(
    log_g: np.ndarray, baseline_first: np.ndarray, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """Plain, stratified and bias-corrected stratified intervals of ``mean(log_g)`` (log scale)."""
    runs = log_g.size
    plain = log_g[rng.integers(0, runs, (REPS, runs))].mean(axis=1)
    a, b = log_g[baseline_first], log_g[~baseline_first]
    strat = (
        a[rng.integers(0, a.size, (REPS, a.size))].mean(axis=1)
        + b[rng.integers(0, b.size, (REPS, b.size))].mean(axis=1)
    ) / 2
    m = min(a.size, b.size)
    scale = math.sqrt(m / (m - 1) * (runs - 1) / runs)
    centre = (a.mean() + b.mean()) / 2
    corrected = centre + (strat - centre) * scale
    return {
        "plain": _bounds(plain, runs),
        "stratified": _bounds(strat, runs),
        "corrected": _bounds(corrected, runs),
    }


def real(results: Path, rng: np.random.Generator) -> None:
    rows = []
    for path in sorted((results / "raw").glob("aa__*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for bench in doc["benchmarks"]:
            if bench.get("method") != "duet":
                continue
            log_g, first = [], []
            for run in bench["runs"]:
                if run["status"] != "ok" or not run["baseline"].get("iteration_cpu_ns"):
                    continue
                base = np.asarray(run["baseline"]["iteration_cpu_ns"], dtype=float)
                cand = np.asarray(run["candidate"]["iteration_cpu_ns"], dtype=float)
                log_g.append(float(np.mean(np.log(cand / base))))
                first.append(run["baseline"]["cores"][0] < run["candidate"]["cores"][0])
            g, on = np.asarray(log_g), np.asarray(first)
            if on.sum() < 2 or (~on).sum() < 2:
                continue
            rows.append(intervals(g, on, rng))
    if not rows:
        raise SystemExit(f"no duet A/A cell with per-iteration CPU time under {results / 'raw'}")
    print(f"real A/A, CPU time: {len(rows)} duet intervals from {results}")
    for kind in ("plain", "stratified", "corrected"):
        widths = [math.exp(r[kind][1]) - math.exp(r[kind][0]) for r in rows]
        held = sum(r[kind][0] <= 0 <= r[kind][1] for r in rows)
        print(
            f"  {kind:<10} median width {100 * statistics.median(widths):.2f}% "
            f"(range {100 * min(widths):.2f}-{100 * max(widths):.2f}), hold 1: {held}/{len(rows)}"
        )


def synthetic(trials: int, rng: np.random.Generator, runs: int = 10) -> None:
    first = np.arange(runs) % 2 == 0
    held = {"plain": 0, "stratified": 0, "corrected": 0}
    widths: dict[str, list[float]] = {k: [] for k in held}
    for _ in range(trials):
        bounds = intervals(rng.normal(0.0, 0.01, runs), first, rng)
        for kind, (lo, hi) in bounds.items():
            held[kind] += lo <= 0 <= hi
            widths[kind].append(hi - lo)
    plain = statistics.median(widths["plain"])
    print(f"synthetic A/A, no core asymmetry, R = {runs}, {trials} trials")
    for kind in held:
        print(
            f"  {kind:<10} coverage {held[kind] / trials:.3f}, "
            f"median width {statistics.median(widths[kind]) / plain:.3f} x plain"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261126)
    real(args.results, rng)
    synthetic(args.trials, rng)


if __name__ == "__main__":
    main()
