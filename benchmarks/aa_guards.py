"""A/A guards of the statistics: how often a 99% duet interval misses 1 when nothing changed.

Issue 12, item 5. Synthetic A/A data (both sides run the same code, so the true ratio is 1) for
every I in {3, 5, 10, 30} iterations and R in {5, 10, 20, 30} runs, analysed by the real
estimator (``duet_stats.ratio.duet_ratio``, the call ``duet_bench.analysis.analyze_benchmark``
makes) with each winsorization rule and each interval method, on the same data sets (a paired
comparison). For every cell it reports the coverage (share of intervals containing 1) with its 95%
Wilson interval, the false-verdict rate (``regression`` or ``improvement`` at the default 2%
threshold,
``duet_bench.analysis.verdict``), the median width and the share of runs in which a value was
replaced.

Noise models (log scale; "own" noise hits one side, "shared" noise hits both sides of an
iteration alike, as the barrier intends):

- ``lognormal``: the model of ``tests/stats/synthetic.py``: shared run factor sd 0.2, shared
  iteration noise sd 0.1, own run factor sd 0.03, own iteration noise sd 0.02.
- ``shared-machine``: ``lognormal`` plus, for each side and iteration independently, a 3% chance
  of a preemption that makes the iteration 1 + Exp(mean 0.3) times longer (another process took
  the CPU of one side for a while).
- ``noisy-cpu``: ``lognormal`` plus preemptions with a 15% chance per iteration on one CPU only;
  the sides swap CPUs between runs as duet does (run r: baseline on CPU r mod 2), so the log
  ratios of a run are skewed one way or the other.

``--real`` does the same on the real A/A data of the accuracy study
(``benchmarks/results/raw/`` at 20 ms iterations, ``benchmarks/results/ms100/raw/`` at 100 ms;
layout in ``benchmarks/accuracy.py``): every duet benchmark whose two sides ran the same program
is an A/A set; the sets of one cell kind (e.g. ``aa/integer/noise``, five repetitions of 10 runs,
or ``r30/integer/noise``, twenty trials of 30 runs) are pooled, and ``--subsamples`` times R runs
are drawn from the pool without replacement and cut to their first I iterations. The subsamples
of one pool overlap, so their rates are not independent trials: read them as how the rules
compare on the same real data, not as exact coverage.

Run: ``make bench-guards`` (both) or ``python benchmarks/aa_guards.py [--trials 300] [--real]
[--json FILE]``. One process; at the defaults the synthetic run takes about 4 minutes of CPU
and the real one about 7 (26 and 42 minutes of wall time on the shared VM at load 10).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duet_bench.analysis import verdict
from duet_stats.ratio import duet_ratio

ITERATIONS = (3, 5, 10, 30)
RUNS = (5, 10, 20, 30)
THRESHOLD = 0.02
CONFIDENCE = 0.99

#: Winsorization rules: name -> (winsorize, winsorize_min_iterations). "paper" is the duet
#: paper's rule at every run length; "from N" applies it only to runs of N or more iterations.
RULES: dict[str, tuple[bool, int]] = {
    "off": (False, 3),
    "paper": (True, 3),
    "from 8": (True, 8),
    "from 10": (True, 10),
    "from 20": (True, 20),
}
INTERVALS = ("percentile", "expanded")
#: The tables add ``t``, a reference interval (see :func:`estimates`).
TABLE_INTERVALS = (*INTERVALS, "t")

Array = np.ndarray[Any, np.dtype[np.float64]]


def _base(rng: np.random.Generator, runs: int, its: int) -> tuple[Array, Array]:
    shared = rng.lognormal(0.0, 0.2, (runs, 1)) * rng.lognormal(0.0, 0.1, (runs, its))
    a = 1e7 * shared * rng.lognormal(0.0, 0.03, (runs, 1)) * rng.lognormal(0.0, 0.02, (runs, its))
    b = 1e7 * shared * rng.lognormal(0.0, 0.03, (runs, 1)) * rng.lognormal(0.0, 0.02, (runs, its))
    return a, b


def _preemptions(rng: np.random.Generator, shape: tuple[int, int], p: float) -> Array:
    hit = rng.random(shape) < p
    factor: Array = np.where(hit, 1.0 + rng.exponential(0.3, shape), 1.0)
    return factor


def lognormal(rng: np.random.Generator, runs: int, its: int) -> tuple[Array, Array]:
    return _base(rng, runs, its)


def shared_machine(rng: np.random.Generator, runs: int, its: int) -> tuple[Array, Array]:
    a, b = _base(rng, runs, its)
    return a * _preemptions(rng, a.shape, 0.03), b * _preemptions(rng, b.shape, 0.03)


def noisy_cpu(rng: np.random.Generator, runs: int, its: int) -> tuple[Array, Array]:
    a, b = _base(rng, runs, its)
    hits = _preemptions(rng, a.shape, 0.15)
    baseline_on_noisy = (np.arange(runs) % 2 == 0)[:, None]
    return np.where(baseline_on_noisy, a * hits, a), np.where(baseline_on_noisy, b, b * hits)


MODELS: dict[str, Callable[[np.random.Generator, int, int], tuple[Array, Array]]] = {
    "lognormal": lognormal,
    "shared-machine": shared_machine,
    "noisy-cpu": noisy_cpu,
}


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Tally:
    trials: int = 0
    covered: int = 0
    false_verdicts: int = 0
    replaced: int = 0
    runs: int = 0
    widths: list[float] | None = None

    def add(self, lo: float, hi: float, ratio: float, replaced: int, runs: int) -> None:
        self.trials += 1
        self.covered += lo <= 1.0 <= hi
        v = verdict(ratio=ratio, ci_low=lo, ci_high=hi, threshold=THRESHOLD)
        self.false_verdicts += v in ("regression", "improvement")
        self.replaced += replaced
        self.runs += runs
        if self.widths is None:
            self.widths = []
        self.widths.append(hi - lo)

    def row(self) -> dict[str, Any]:
        lo, hi = wilson(self.covered, self.trials)
        return {
            "trials": self.trials,
            "coverage": self.covered / self.trials,
            "coverage_95ci": [lo, hi],
            "false_verdicts": self.false_verdicts / self.trials,
            "median_width": float(np.median(self.widths or [math.nan])),
            "replaced_share": self.replaced / max(1, self.runs),
        }


@dataclass(frozen=True)
class Estimate:
    ratio: float
    low: float
    high: float
    winsorized: int


def estimates(
    a: Array, b: Array, reps: int, rng: np.random.Generator
) -> list[tuple[str, str, Estimate]]:
    """(rule, interval, estimate) for every rule and interval on one data set.

    Every rule and interval gets the same bootstrap draws (a paired comparison). ``t`` is a
    reference, not a duet option: the t interval on the run means of ``log s``, exact when they
    are normal; it shows how much of a shortfall is the bootstrap's.
    """
    out: list[tuple[str, str, Estimate]] = []
    seed = int(rng.integers(2**32))
    for rule, (on, from_its) in RULES.items():
        for interval in INTERVALS:
            est = duet_ratio(
                a,
                b,
                confidence=CONFIDENCE,
                reps=reps,
                method=interval,  # type: ignore[arg-type]
                winsorize=on,
                winsorize_min_iterations=from_its,
                rng=np.random.default_rng(seed),
            )
            assert est.ci_low is not None
            assert est.ci_high is not None
            out.append(
                (rule, interval, Estimate(est.ratio, est.ci_low, est.ci_high, est.winsorized))
            )
        log_g = np.log(est.run_ratios)
        half = t_quantile(log_g.size - 1) * log_g.std(ddof=1) / math.sqrt(log_g.size)
        low, high = math.exp(log_g.mean() - half), math.exp(log_g.mean() + half)
        out.append((rule, "t", Estimate(est.ratio, low, high, est.winsorized)))
    return out


def t_quantile(df: int) -> float:
    """The two-sided t quantile of CONFIDENCE with df degrees of freedom."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 1.0 - (1.0 - CONFIDENCE) / 2.0))


def measure(
    trials: int,
    reps: int,
    seed: int,
    models: tuple[str, ...] = tuple(MODELS),
    iterations: tuple[int, ...] = ITERATIONS,
    runs_list: tuple[int, ...] = RUNS,
) -> dict[str, Any]:
    cells: dict[tuple[str, int, int, str, str], Tally] = {}
    for m_index, (model, make) in enumerate(MODELS.items()):
        if model not in models:
            continue
        for its in iterations:
            for runs in runs_list:
                rng = np.random.default_rng([seed, m_index, its, runs])
                for _ in range(trials):
                    a, b = make(rng, runs, its)
                    for rule, interval, est in estimates(a, b, reps, rng):
                        key = (model, its, runs, rule, interval)
                        cells.setdefault(key, Tally()).add(
                            est.low, est.high, est.ratio, est.winsorized, runs
                        )
    return {
        "trials": trials,
        "models": list(models),
        "iterations": list(iterations),
        "runs": list(runs_list),
        "reps": reps,
        "seed": seed,
        "confidence": CONFIDENCE,
        "threshold": THRESHOLD,
        "cells": [
            {"model": k[0], "iterations": k[1], "runs": k[2], "rule": k[3], "interval": k[4]}
            | t.row()
            for k, t in cells.items()
        ],
    }


RESULTS = Path(__file__).resolve().parent / "results"
#: Where the study keeps its gzipped results documents, by iteration time.
REAL_DIRS = {"20 ms": RESULTS / "raw", "100 ms": RESULTS / "ms100" / "raw"}


def real_pools() -> dict[str, list[tuple[Array, Array]]]:
    """The runs of every real A/A duet benchmark, pooled by cell kind: name -> [(a, b) per run]."""
    pools: dict[str, list[tuple[Array, Array]]] = {}
    for label, directory in REAL_DIRS.items():
        for path in sorted(directory.glob("*.json.gz")):
            with gzip.open(path, "rt") as f:
                doc = json.load(f)
            results = doc.get("results", doc)  # calibration cells wrap the results document
            # aa__integer__noise__rep3 -> aa/integer/noise; trial and repetition numbers pooled.
            cell = re.sub(r"__(rep|trial)\d+$", "", path.name.removesuffix(".json.gz"))
            for bench in results.get("benchmarks", []):
                versions = bench.get("versions", {})
                same = versions.get("baseline") == versions.get("candidate")
                # A python side's recorded version omits its environment, where the py cells
                # set DUET_WORKLOAD_SCALE: their "2x" benchmark looks like A/A but is not.
                if bench.get("method") != "duet" or not same or bench["name"] == "2x":
                    continue
                name = f"{label} {cell.replace('__', '/')}"
                if len(results["benchmarks"]) > 2 or bench["name"] not in ("duet",):
                    name += f" [{bench['name'][:12]}]"
                for run in bench["runs"]:
                    if run["status"] != "ok":
                        continue
                    a = np.asarray(run["baseline"]["iterations_ns"], dtype=float)
                    b = np.asarray(run["candidate"]["iterations_ns"], dtype=float)
                    pools.setdefault(name, []).append((a, b))
    return pools


def measure_real(
    subsamples: int,
    reps: int,
    seed: int,
    iterations: tuple[int, ...] = ITERATIONS,
    runs_list: tuple[int, ...] = RUNS,
) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for p_index, (name, pool) in enumerate(sorted(real_pools().items())):
        its_available = min(len(a) for a, _ in pool)
        a_all = np.array([a[:its_available] for a, _ in pool])
        b_all = np.array([b[:its_available] for _, b in pool])
        pooled = float(np.exp(np.mean(np.log(b_all) - np.log(a_all))))
        for runs in runs_list:
            if 2 * runs > len(pool):
                continue  # too few runs in the pool for subsamples that differ
            for its in iterations:
                if its > its_available:
                    continue
                rng = np.random.default_rng([seed, p_index, runs, its])
                tallies: dict[tuple[str, str], Tally] = {}
                for _ in range(subsamples):
                    pick = rng.choice(len(pool), size=runs, replace=False)
                    a, b = a_all[pick, :its], b_all[pick, :its]
                    for rule, interval, est in estimates(a, b, reps, rng):
                        tallies.setdefault((rule, interval), Tally()).add(
                            est.low, est.high, est.ratio, est.winsorized, runs
                        )
                for (rule, interval), t in tallies.items():
                    out.append(
                        {
                            "pool": name,
                            "pool_runs": len(pool),
                            "pool_ratio": pooled,
                            "iterations": its,
                            "runs": runs,
                            "rule": rule,
                            "interval": interval,
                        }
                        | t.row()
                    )
    return {
        "subsamples": subsamples,
        "reps": reps,
        "seed": seed,
        "iterations": list(iterations),
        "runs": list(runs_list),
        "cells": out,
    }


def real_tables(result: dict[str, Any]) -> str:
    """Markdown: coverage (%) pooled over all real pools, by rule, interval, R and I."""
    out = [
        f"\nreal A/A data: coverage of 1 (%) over all pools ({result['subsamples']} subsamples "
        "per pool and cell), false verdicts (%) in brackets\n",
        "| rule | interval | R | " + " | ".join(f"I = {i}" for i in result["iterations"]) + " |",
        "|---|---|---|" + "---|" * len(result["iterations"]),
    ]
    for rule in RULES:
        for interval in TABLE_INTERVALS:
            for runs in result["runs"]:
                text = []
                for its in result["iterations"]:
                    cells = [
                        c
                        for c in result["cells"]
                        if (c["rule"], c["interval"], c["runs"], c["iterations"])
                        == (rule, interval, runs, its)
                    ]
                    if not cells:
                        text.append("")
                        continue
                    n = sum(c["trials"] for c in cells)
                    cov = sum(c["coverage"] * c["trials"] for c in cells) / n
                    fv = sum(c["false_verdicts"] * c["trials"] for c in cells) / n
                    text.append(f"{100 * cov:.1f} ({100 * fv:.1f})")
                if any(text):
                    out.append(f"| {rule} | {interval} | {runs} | " + " | ".join(text) + " |")
    pools = sorted({(c["pool"], c["pool_runs"], c["pool_ratio"]) for c in result["cells"]})
    out.append("\npools (runs, ratio of all their runs):")
    out += [f"- {name}: {n} runs, {ratio:.4f}" for name, n, ratio in pools]
    return "\n".join(out)


def tables(result: dict[str, Any]) -> str:
    """Markdown: per model and interval, coverage (%) by rule and R (rows) and I (columns)."""
    by_key = {
        (c["model"], c["interval"], c["rule"], c["runs"], c["iterations"]): c
        for c in result["cells"]
    }
    out: list[str] = []
    its_list = result["iterations"]
    for model in result["models"]:
        for interval in TABLE_INTERVALS:
            out.append(
                f"\n{model}, {interval} interval: coverage of 1 (%), false verdicts (%) "
                f"in brackets; {result['trials']} trials per cell\n"
            )
            out.append("| rule | R | " + " | ".join(f"I = {i}" for i in its_list) + " |")
            out.append("|---|---|" + "---|" * len(its_list))
            for rule in RULES:
                for runs in result["runs"]:
                    cells = [by_key[(model, interval, rule, runs, i)] for i in its_list]
                    text = [
                        f"{100 * c['coverage']:.1f} ({100 * c['false_verdicts']:.1f})"
                        for c in cells
                    ]
                    out.append(f"| {rule} | {runs} | " + " | ".join(text) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="data sets per cell")
    parser.add_argument("--reps", type=int, default=10_000, help="bootstrap replicates")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--iterations", nargs="+", type=int, default=list(ITERATIONS))
    parser.add_argument("--runs", nargs="+", type=int, default=list(RUNS))
    parser.add_argument("--real", action="store_true", help="the real A/A data instead")
    parser.add_argument("--subsamples", type=int, default=100, help="per real pool and cell")
    parser.add_argument("--json", metavar="FILE", help="also write every cell as JSON")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.real:
        iterations = tuple(args.iterations)
        result = measure_real(args.subsamples, args.reps, args.seed, iterations, tuple(args.runs))
        text = real_tables(result)
    else:
        result = measure(
            args.trials,
            args.reps,
            args.seed,
            tuple(args.models),
            tuple(args.iterations),
            tuple(args.runs),
        )
        text = tables(result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(text)
    print(f"\n{result['seconds']} s; Wilson 95% intervals of every rate in the JSON output")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
