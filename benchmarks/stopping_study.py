"""Measuring until decided: error rates and runs to a verdict of the repeated-interval rule.

Issue 30, item 6 (docs/statistics.md, "Measuring until decided"). The rule of
``duet_stats.stopping``: after every run from ``min_runs`` to ``max_runs`` the repeated
confidence interval of the mean per-run log ratio is read with the verdict words of
``duet_bench.analysis.verdict``; the measurement stops at the first look whose verdict is not
``inconclusive``, and is ``inconclusive`` when ``max_runs`` is reached. Compared here:

- the three boundary shapes (``pocock``, ``obrien-fleming``, ``bonferroni``);
- the fixed design of 10 runs read once with the t interval at the same confidence (the
  expanded-percentile bootstrap interval duet reports for a fixed design is within a few
  percent of it at 10 runs; the t interval keeps 2,000 x cells fast), and the fixed design with
  as many runs as the rule's mean runs (equal expected machine time).

Sequences of per-run log ratios come from two sources:

- ``real``: resampled (with replacement) from the per-run log ratios of the real A/A results
  files in the repository (``benchmarks/results/**/aa*.json.gz``; every file's per-run log
  ratios of the metric its analysis chose, centred on the file's mean and scaled by
  ``sqrt(n / (n - 1))`` so that the truth is exactly 1), one pool per kind of workload and
  machine condition; a change is added as ``log(1 + change)``;
- ``normal``: independent normal log ratios with the median per-run standard deviation of the
  real pools, and ``t3``: Student t with 3 degrees of freedom scaled to the same standard
  deviation (heavy tails).

Run from the repository root: ``python benchmarks/stopping_study.py`` (defaults: 2,000 sequences
per cell, min 5 and max 40 runs, 99%, threshold 2%, seed 30). Writes
``benchmarks/results/stopping/study.json`` (every cell) and ``summary.md`` (the table of
docs/statistics.md, also printed); with ``--out-label max80``, ``study-max80.json`` and
``benchmarks/results/stopping/summary-max80.md`` beside them (the studies of the default
maximum).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from duet_bench.analysis.estimate import run_log_ratios  # noqa: E402
from duet_bench.analysis.series import series_of  # noqa: E402
from duet_bench.analysis.verdict import verdict  # noqa: E402
from duet_bench.results import from_dict  # noqa: E402
from duet_stats.intervals import t_quantile_two_sided  # noqa: E402
from duet_stats.stopping import SHAPES, stopping_bounds  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "stopping"


def pool_key(path: Path) -> str:
    """The condition of a results file: workload and machine state from its name."""
    name = path.name.split(".json")[0]
    parts = [p for p in name.replace("-", "__").split("__") if p]
    words = [p for p in parts if not p.startswith("rep") and not p.isdigit()]
    return (
        f"{path.parent.parent.name if path.parent.name == 'raw' else path.parent.name}/"
        + "/".join(words[1:])
    )


def per_run_log_ratios(path: Path) -> list[np.ndarray]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc = {k: v for k, v in doc.items() if k not in ("accuracy_cell",)}
    results = from_dict(doc, source=str(path))
    out = []
    for record in results.benchmarks:
        if record.method == "sequential":
            continue
        ok = record.ok_runs()
        if len(ok) < 5:
            continue
        series = series_of(ok)
        data = series.of("cpu") or series.wall
        x = np.asarray(run_log_ratios(*data, series.assignment), dtype=np.float64)
        if np.all(np.isfinite(x)):
            out.append(x)
    return out


def real_pools() -> dict[str, np.ndarray]:
    pools: dict[str, list[float]] = {}
    files = sorted((ROOT / "benchmarks" / "results").glob("**/aa*.json.gz"))
    for path in files:
        try:
            runs = per_run_log_ratios(path)
        except Exception as exc:  # a file of another schema: say so and go on
            print(f"skipped {path.relative_to(ROOT)}: {exc}", file=sys.stderr)
            continue
        for x in runs:
            n = x.size
            centred = (x - x.mean()) * math.sqrt(n / (n - 1))
            pools.setdefault(pool_key(path), []).extend(centred.tolist())
    return {k: np.asarray(v) for k, v in pools.items() if len(v) >= 20}


def fixed_verdicts(x: np.ndarray, n: int, confidence: float, threshold: float) -> list[str]:
    c = t_quantile_two_sided(confidence, n - 1)
    out = []
    for row in x[:, :n]:
        m = float(row.mean())
        h = c * float(row.std(ddof=1)) / math.sqrt(n)
        out.append(
            verdict(
                ratio=math.exp(m),
                ci_low=math.exp(m - h),
                ci_high=math.exp(m + h),
                threshold=threshold,
            )
        )
    return out


def sequential(x: np.ndarray, bounds: Any, threshold: float) -> tuple[list[str], list[int]]:
    """Vectorised rule: the verdict and runs at the first decided look of each row."""
    rows, _ = x.shape
    lo_n, hi_n = bounds.min_runs, bounds.max_runs
    n = np.arange(lo_n, hi_n + 1, dtype=np.float64)
    total = np.cumsum(x, axis=1)[:, lo_n - 1 : hi_n]
    squares = np.cumsum(x * x, axis=1)[:, lo_n - 1 : hi_n]
    mean = total / n
    var = np.maximum((squares - n * mean * mean) / (n - 1.0), 0.0)
    half = np.asarray(bounds.critical) * np.sqrt(var / n)
    lo, hi = mean - half, mean + half
    band = math.log1p(threshold)
    reg = (lo > 0) & (mean >= band)
    imp = (hi < 0) & (mean <= -band)
    same = (lo >= -band) & (hi <= band)
    decided = reg | imp | same
    verdicts, runs = [], []
    for r in range(rows):
        idx = np.flatnonzero(decided[r])
        if idx.size == 0:
            verdicts.append("inconclusive")
            runs.append(hi_n)
            continue
        k = int(idx[0])
        verdicts.append("regression" if reg[r, k] else "improvement" if imp[r, k] else "no change")
        runs.append(lo_n + k)
    return verdicts, runs


def rates(verdicts: list[str]) -> dict[str, float]:
    n = len(verdicts)
    return {
        v: round(sum(1 for x in verdicts if x == v) / n, 4)
        for v in ("regression", "improvement", "no change", "inconclusive")
    }


def spread(runs: list[int]) -> dict[str, float]:
    a = np.asarray(runs)
    return {
        "median": float(np.median(a)),
        "mean": round(float(a.mean()), 2),
        "p90": float(np.quantile(a, 0.9)),
        "max": int(a.max()),
    }


def summary(cells: list[dict[str, Any]]) -> str:
    """The table of docs/statistics.md: per design, over the pools of today's default design
    (crossover at every iteration, ``/iteration`` in the pool's name), over all real pools, and
    on the simulated sources."""

    def group(name: str) -> list[dict[str, Any]]:
        if name == "iteration":
            return [
                c for c in cells if c["source"].startswith("real:") and "iteration" in c["source"]
            ]
        if name == "all real":
            return [c for c in cells if c["source"].startswith("real:")]
        return [c for c in cells if c["source"] == name]

    lines = [
        "| pools | design | A/A false verdict, worst pool | A/A inconclusive, worst pool "
        "| A/A median runs (worst pool) | 5% found, worst pool | 5% median runs (worst pool) "
        "| 1% found at t = 0.5%, worst pool | 1% median runs (worst pool) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in ("iteration", "all real", "normal", "t3"):
        cs = group(g)
        pools = len({c["source"] for c in cs})
        for shape in (*SHAPES, "fixed10"):
            aa = [c for c in cs if c["change"] == 0.0]
            five = [c for c in cs if c["change"] == 0.05]
            one = [c for c in cs if c["change"] == 0.01]
            if shape == "fixed10":
                r = [c["fixed10"] for c in aa]
                f5 = [c["fixed10"]["regression"] for c in five]
                f1 = [c["fixed10_at_0.5%"]["regression"] for c in one]
                m_aa = m5 = m1 = "10 (10)"
            else:
                r = [c[shape]["rates"] for c in aa]
                f5 = [c[shape]["rates"]["regression"] for c in five]
                f1 = [c[shape]["at_0.5%"]["rates"]["regression"] for c in one]

                def med(
                    xs: list[dict[str, Any]], key: str | None = None, shape: str = shape
                ) -> str:
                    runs = [(x[shape][key] if key else x[shape])["runs"]["median"] for x in xs]
                    return f"{np.median(runs):.0f} ({max(runs):.0f})"

                m_aa, m5, m1 = med(aa), med(five), med(one, "at_0.5%")
            false = max(x["regression"] + x["improvement"] for x in r)
            inc = max(x["inconclusive"] for x in r)
            lines.append(
                f"| {g} ({pools}) | {shape} | {false:.2%} | {inc:.1%} | {m_aa} | {min(f5):.1%} "
                f"| {m5} | {min(f1):.1%} | {m1} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--min-runs", type=int, default=5)
    parser.add_argument("--max-runs", type=int, default=40)
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--threshold", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument(
        "--out-label",
        default="",
        help="write study-LABEL.json and the table summary-LABEL (default: study.json and summary)",
    )
    args = parser.parse_args()
    started = time.time()
    pools = real_pools()
    sds = {k: float(np.std(v, ddof=1)) for k, v in pools.items()}
    sd = float(np.median(list(sds.values())))
    rng = np.random.default_rng(args.seed)
    sources: dict[str, Any] = {}
    for key, pool in pools.items():
        sources[f"real:{key}"] = lambda m, pool=pool: rng.choice(pool, size=(m, args.max_runs))
    sources["normal"] = lambda m: rng.normal(0.0, sd, size=(m, args.max_runs))
    sources["t3"] = lambda m: rng.standard_t(3, size=(m, args.max_runs)) * sd / math.sqrt(3.0)
    bounds = {
        s: stopping_bounds(
            min_runs=args.min_runs, max_runs=args.max_runs, confidence=args.confidence, shape=s
        )
        for s in SHAPES
    }
    cells = []
    for source, draw in sources.items():
        for change in (0.0, 0.01, 0.05):
            x = draw(args.sequences) + math.log1p(change)
            cell: dict[str, Any] = {
                "source": source,
                "sd": round(sds.get(source.split(":", 1)[-1], sd), 5),
                "pool": int(pools[source[5:]].size) if source.startswith("real:") else None,
                "change": change,
            }
            for shape, b in bounds.items():
                v, r = sequential(x, b, args.threshold)
                # A 1% change is below the 2% threshold: "found" is read at threshold 0.5%.
                v_small, r_small = sequential(x, b, 0.005) if change == 0.01 else (None, None)
                cell[shape] = {"rates": rates(v), "runs": spread(r)}
                if v_small is not None and r_small is not None:
                    cell[shape]["at_0.5%"] = {"rates": rates(v_small), "runs": spread(r_small)}
            cell["fixed10"] = rates(fixed_verdicts(x, 10, args.confidence, args.threshold))
            mean_runs = max(5, round(cell["pocock"]["runs"]["mean"]))
            cell["fixed_equal_time"] = {
                "runs": mean_runs,
                "rates": rates(fixed_verdicts(x, mean_runs, args.confidence, args.threshold)),
            }
            if change == 0.01:
                cell["fixed10_at_0.5%"] = rates(fixed_verdicts(x, 10, args.confidence, 0.005))
            cells.append(cell)
            print(cell["source"], change, flush=True)
    out = {
        "command": "python benchmarks/stopping_study.py " + " ".join(sys.argv[1:]),
        "args": vars(args),
        "pools": {k: {"runs": int(v.size), "sd": round(sds[k], 5)} for k, v in pools.items()},
        "critical": {s: [round(c, 3) for c in b.critical] for s, b in bounds.items()},
        "cells": cells,
        "seconds": round(time.time() - started, 1),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = f"-{args.out_label}" if args.out_label else ""
    (OUT / f"study{suffix}.json").write_text(json.dumps(out, indent=1) + "\n")
    table = summary(cells)
    (OUT / f"summary{suffix}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
