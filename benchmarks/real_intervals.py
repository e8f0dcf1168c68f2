"""Interval constructions on the real A/A data of the metric study: which holds 99%, how wide.

Every duet A/A benchmark of the metric-study directories given (both sides ran the same program,
so the true ratio is 1), on the CPU time of each iteration, analysed by the real estimator
(``duet_stats.ratio.duet_ratio``, winsorization as the analysis does it) with each interval
method, and with one construction duet does not ship, a **stratified** interval: the runs
resampled within each core assignment. duet alternates the sides between the two CPUs, balanced,
so a CPU that runs slower than the other shifts every run's log ratio by ``+d`` or ``-d``
depending on where the baseline sat; the grand mean cancels it, the plain bootstrap counts it as
spread, the stratified one does not. But each stratum has R/2 runs, and the bootstrap's
narrowness bias ``(m - 1) / m`` is larger at m = R/2 than at R, so part of its narrowing is that
bias: ``stratified-scaled`` scales its replicates by ``sqrt(m / (m - 1) * (R - 1) / R)``. Both read
their quantiles at the expanded level of the default interval. ``--synthetic`` adds iid A/A data
without any asymmetry, to show what the stratum bias alone does.

The intervals are few (about a hundred) and those of one cell kind share a machine state, so
read the coverage with its Wilson interval, as how the methods compare on the same data.

Run: ``python benchmarks/real_intervals.py [--results DIR ...] [--synthetic N]``; about a minute.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from duet_stats.intervals import expanded_confidence
from duet_stats.ratio import duet_ratio

ROOT = Path(__file__).resolve().parent
METRIC = ROOT / "results" / "metric"
DEFAULT_RESULTS = (METRIC / "idle-20261125", METRIC / "busy-20261125", METRIC / "quick")
CONFIDENCE = 0.99
REPS = 10_000
METHODS = ("percentile", "expanded", "bca")
STRATIFIED = ("stratified", "stratified-scaled")


def aa_sets(results: Path) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per duet A/A benchmark: baseline and candidate CPU ns (runs x iterations), and whether
    the baseline sat on the lower-numbered CPU in each run."""
    for path in sorted((results / "raw").glob("aa__*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for bench in doc["benchmarks"]:
            if bench.get("method") != "duet":
                continue
            ok = [
                r
                for r in bench["runs"]
                if r["status"] == "ok" and r["baseline"].get("iteration_cpu_ns")
            ]
            if not ok:
                continue
            yield (
                np.asarray([r["baseline"]["iteration_cpu_ns"] for r in ok], dtype=float),
                np.asarray([r["candidate"]["iteration_cpu_ns"] for r in ok], dtype=float),
                np.asarray([r["baseline"]["cores"][0] < r["candidate"]["cores"][0] for r in ok]),
            )


def stratified(
    log_g: np.ndarray, first: np.ndarray, rng: np.random.Generator
) -> dict[str, tuple[float, float]] | None:
    """The two stratified intervals of ``mean(log_g)`` (log scale); None without 2 runs a side."""
    a, b = log_g[first], log_g[~first]
    m = min(a.size, b.size)
    if m < 2:
        return None
    star = (
        a[rng.integers(0, a.size, (REPS, a.size))].mean(axis=1)
        + b[rng.integers(0, b.size, (REPS, b.size))].mean(axis=1)
    ) / 2
    centre = (a.mean() + b.mean()) / 2
    scaled = centre + (star - centre) * math.sqrt(m / (m - 1) * (log_g.size - 1) / log_g.size)
    level = expanded_confidence(CONFIDENCE, log_g.size)
    q = ((1 - level) / 2, (1 + level) / 2)
    lo, hi = np.quantile(star, q)
    slo, shi = np.quantile(scaled, q)
    return {"stratified": (float(lo), float(hi)), "stratified-scaled": (float(slo), float(shi))}


def wilson(held: int, total: int, z: float = 1.96) -> tuple[float, float]:
    p = held / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return centre - half, centre + half


def table(rows: dict[str, list[tuple[float, float]]], title: str) -> None:
    """Coverage and width per construction; ``rows`` holds (lo, hi) on the log scale."""
    print(f"\n{title}\n")
    print("| interval | hold 1 | coverage (95% Wilson) | median width | width / expanded |")
    print("|---|---|---|---|---|")
    reference = statistics.median(math.exp(h) - math.exp(lo) for lo, h in rows["expanded"])
    for kind, bounds in rows.items():
        held = sum(lo <= 0 <= hi for lo, hi in bounds)
        c_lo, c_hi = wilson(held, len(bounds))
        width = statistics.median(math.exp(h) - math.exp(lo) for lo, h in bounds)
        print(
            f"| {kind} | {held}/{len(bounds)} | {held / len(bounds):.1%} "
            f"({c_lo:.1%}-{c_hi:.1%}) | {width:.2%} | {width / reference:.3f} |"
        )


def real(dirs: list[Path], rng: np.random.Generator) -> None:
    """One table per directory, then one over all of them."""
    pooled: dict[str, list[tuple[float, float]]] = {k: [] for k in (*METHODS, *STRATIFIED)}
    for results in dirs:
        rows: dict[str, list[tuple[float, float]]] = {k: [] for k in pooled}
        for base, cand, first in aa_sets(results):
            estimates = {
                m: duet_ratio(base, cand, method=m, reps=REPS, confidence=CONFIDENCE, rng=rng)
                for m in METHODS
            }
            strat = stratified(np.log(estimates["expanded"].run_ratios), first, rng)
            if strat is None or any(e.ci_low is None for e in estimates.values()):
                continue
            for m, e in estimates.items():
                rows[m].append((math.log(e.ci_low or 1.0), math.log(e.ci_high or 1.0)))
            for kind, bounds in strat.items():
                rows[kind].append(bounds)
        if not rows["expanded"]:
            raise SystemExit(f"no duet A/A benchmark with per-iteration CPU time in {results}")
        runs = f"R = {base.shape[0]} x I = {base.shape[1]}"
        table(
            rows, f"Real A/A, CPU time, {results.name} ({len(rows['expanded'])} intervals, {runs})"
        )
        for kind, bounds in rows.items():
            pooled[kind].extend(bounds)
    if len(dirs) > 1:
        table(pooled, f"Real A/A, CPU time, all of them ({len(pooled['expanded'])} intervals)")


def synthetic(trials: int, rng: np.random.Generator, runs: int = 10, iterations: int = 30) -> None:
    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in ("expanded", *STRATIFIED)}
    first = np.arange(runs) % 2 == 0
    for _ in range(trials):
        base = np.exp(rng.normal(0.0, 0.02, (runs, iterations)) + rng.normal(0.0, 0.01, (runs, 1)))
        cand = np.exp(rng.normal(0.0, 0.02, (runs, iterations)) + rng.normal(0.0, 0.01, (runs, 1)))
        e = duet_ratio(base, cand, method="expanded", reps=REPS, confidence=CONFIDENCE, rng=rng)
        rows["expanded"].append((math.log(e.ci_low or 1.0), math.log(e.ci_high or 1.0)))
        strat = stratified(np.log(e.run_ratios), first, rng)
        assert strat is not None
        for kind, bounds in strat.items():
            rows[kind].append(bounds)
    table(
        rows,
        f"Synthetic A/A without core asymmetry, R = {runs} x I = {iterations}, {trials} data sets",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, nargs="+", default=list(DEFAULT_RESULTS))
    parser.add_argument("--synthetic", type=int, default=1000, metavar="N", help="0 to skip")
    args = parser.parse_args()
    rng = np.random.default_rng(20261126)
    real(args.results, rng)
    if args.synthetic:
        synthetic(args.synthetic, rng)


if __name__ == "__main__":
    main()
