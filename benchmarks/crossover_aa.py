"""A/A coverage and width of the two core designs on a machine whose CPUs differ a lot.

Issue 21, item 3. Synthetic A/A data (true ratio 1; ``tests/stats/synthetic.py``,
``make_crossover_aa``): the duet model of the statistics tests plus, per run, one CPU 10-30%
slower than the other (which one drawn per run) with the difference drifting inside the run.
Each data set is drawn twice, once per design: the sides change CPUs at every iteration
(analysed with the assignment, as ``duet_bench.analysis`` does when ``iteration_cpus`` are
recorded) or only between runs (analysed as today). Both through
``duet_stats.ratio.duet_ratio`` with the default ``expanded`` 99% interval and winsorization.
For every cell: coverage of 1 with its 95% Wilson interval, and the median and 90th percentile
of the interval width.

Run from the repository root: ``python benchmarks/crossover_aa.py`` (defaults: 10 runs,
I = 30 and 31, 2,000 data sets per cell, seed 21). ``--winsor`` instead measures how often each
winsorization of ``duet_stats.crossover.crossover_runs`` replaces a value in crossover runs of
30 iterations, with equal CPUs, CPUs 2-5% apart and 10-30% apart, without and with one outlier
per run (one iteration's log ratio raised by 0.15, about five times the iteration noise), and
the A/A coverage and median width of each (10 runs x 30 iterations, CPUs 10-30% apart, without
and with a 3% chance per side and iteration of a preemption that makes the iteration
1 + Exp(mean 0.3) times longer).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

# The data model is the one the tests check; it lives with them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from duet_stats.crossover import crossover_runs
from duet_stats.intervals import log_interval
from duet_stats.ratio import duet_ratio
from tests.stats.synthetic import make_crossover_aa


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def cell(design: str, runs: int, iterations: int, trials: int, seed: int, reps: int) -> str:
    rng = np.random.default_rng([seed, iterations, runs])
    boot = np.random.default_rng([seed, iterations, runs, 1])
    hits = 0
    widths = []
    for _ in range(trials):
        a, b, assignment = make_crossover_aa(rng, runs, iterations, design=design)
        est = duet_ratio(
            a,
            b,
            method="expanded",
            reps=reps,
            assignment=assignment if design == "iteration" else None,
            rng=boot,
        )
        assert est.ci_low is not None
        assert est.ci_high is not None
        hits += est.ci_low <= 1.0 <= est.ci_high
        widths.append(est.ci_high - est.ci_low)
    lo, hi = wilson(hits, trials)
    w = np.array(widths) * 100
    return (
        f"| {design} | {runs} | {iterations} | {100 * hits / trials:.1f} "
        f"({100 * lo:.1f}-{100 * hi:.1f}) | {np.median(w):.2f} | {np.quantile(w, 0.9):.2f} |"
    )


def winsor_shares(trials: int, seed: int) -> None:
    """Share of runs in which each winsorization replaced a value (10 runs x 30 iterations)."""
    print("| outlier | CPUs apart | centred | series |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(seed)
    runs, iterations = 10, 30
    for outlier in (0.0, 0.15):
        for low, high in ((0.0, 0.0), (0.02, 0.05), (0.10, 0.30)):
            replaced = {"centred": 0, "series": 0}
            for _ in range(trials):
                a, b, assignment = make_crossover_aa(
                    rng, runs, iterations, design="iteration", core_low=low, core_high=high
                )
                log_s = np.log(b) - np.log(a)
                log_s[np.arange(runs), rng.integers(0, iterations, runs)] += outlier
                for mode in replaced:
                    replaced[mode] += crossover_runs(log_s, assignment, winsorize=mode).winsorized
            shares = [f"{100 * replaced[m] / (trials * runs):.1f}%" for m in replaced]
            print(f"| {outlier} | {100 * low:.0f}-{100 * high:.0f}% | " + " | ".join(shares) + " |")


def winsor_coverage(trials: int, seed: int, reps: int) -> None:
    """A/A coverage of 1 and median width (99% expanded) under each winsorization."""
    print("| preemptions | winsorization | coverage of 1, % | median width, % |")
    print("|---|---|---|---|")
    runs, iterations = 10, 30
    for p_hit in (0.0, 0.03):
        hits = {"centred": 0, "series": 0, "off": 0}
        widths: dict[str, list[float]] = {m: [] for m in hits}
        for trial in range(trials):
            rng = np.random.default_rng([seed, trial])
            a, b, assignment = make_crossover_aa(rng, runs, iterations, design="iteration")
            slow = [
                np.where(
                    rng.random((runs, iterations)) < p_hit,
                    1.0 + rng.exponential(0.3, (runs, iterations)),
                    1.0,
                )
                for _ in range(2)
            ]
            log_s = np.log(b * slow[1]) - np.log(a * slow[0])
            for mode in hits:
                log_g = np.array(crossover_runs(log_s, assignment, winsorize=mode).log_run_ratios)
                lo, hi = log_interval(
                    log_g,
                    confidence=0.99,
                    reps=reps,
                    method="expanded",
                    rng=np.random.default_rng([seed, trial, 1]),  # the same draws for each
                )
                hits[mode] += lo <= 0.0 <= hi
                widths[mode].append(math.exp(hi) - math.exp(lo))
        for mode in hits:
            print(
                f"| {p_hit:.0%} | {mode} | {100 * hits[mode] / trials:.1f} | "
                f"{100 * float(np.median(widths[mode])):.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[10])
    parser.add_argument("--iterations", type=int, nargs="+", default=[30, 31])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--winsor", action="store_true", help="winsorization shares instead")
    args = parser.parse_args()
    if args.winsor:
        winsor_shares(args.trials, args.seed)
        winsor_coverage(args.trials, args.seed, args.reps)
        return
    print("| design | R | I | coverage of 1, % (95% Wilson) | median width, % | p90 width, % |")
    print("|---|---|---|---|---|---|")
    for runs in args.runs:
        for iterations in args.iterations:
            for design in ("iteration", "run"):
                print(cell(design, runs, iterations, args.trials, args.seed, args.reps), flush=True)


if __name__ == "__main__":
    main()
