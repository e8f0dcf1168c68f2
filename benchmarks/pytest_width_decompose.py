"""Where an in-process benchmark's width comes from: the runs, the CPUs, or the iterations.

Reads the results files that ``benchmarks/pytest_width.py`` wrote (``results-*.json`` under a
label's folder) and prints, per benchmark and trial, from the per-iteration CPU-time log ratios
(candidate over baseline) of every run:

- ``run sd``: the standard deviation of the runs' mean log ratios (what the interval's width is
  made of; a run is one pair of processes);
- ``from within``: what the within-run spread alone would give the run means (``within sd /
  sqrt(iterations)``): a ``run sd`` far above it is an effect of the run (of the pair of
  processes: layout, the interpreter's state), not of the iterations;
- ``CPU effect``: half the difference between the iterations where the baseline ran on one CPU
  and those where it ran on the other (crossover alternates them, so a CPU that is slower than
  the other shows as a log ratio that alternates in sign); its median and largest over the runs;
- ``within sd`` and ``resid sd``: the within-run spread before and after removing that effect.

Run from the repository root: ``python benchmarks/pytest_width_decompose.py
benchmarks/results/pytest-width/quiet-20261129-3``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def decompose(benchmark: dict[str, Any]) -> dict[str, float]:
    run_means: list[float] = []
    effects: list[float] = []
    within: list[float] = []
    resid: list[float] = []
    iterations = 0
    for run in benchmark["runs"]:
        base, cand = run["baseline"], run["candidate"]
        logs = np.log(np.array(cand["iteration_cpu_ns"]) / np.array(base["iteration_cpu_ns"]))
        iterations = len(logs)
        first = [c[0] if isinstance(c, list) else c for c in base["iteration_cpus"]]
        sign = np.where(np.array(first) == first[0], 1.0, -1.0)
        effect = (logs[sign > 0].mean() - logs[sign < 0].mean()) / 2 if (sign < 0).any() else 0.0
        run_means.append(float(logs.mean()))
        effects.append(abs(float(effect)))
        within.append(float(logs.std(ddof=1)))
        resid.append(float((logs - logs.mean() - effect * (sign - sign.mean())).std(ddof=1)))
    return {
        "runs": len(run_means),
        "run_sd": float(np.std(run_means, ddof=1)),
        "from_within": float(np.median(within) / math.sqrt(iterations)),
        "cpu_effect_median": float(np.median(effects)),
        "cpu_effect_max": float(np.max(effects)),
        "within_sd": float(np.median(within)),
        "resid_sd": float(np.median(resid)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    print(
        "| file | benchmark | run sd | from within | CPU effect median / max | within sd "
        "| resid sd |"
    )
    print("|---|---|---|---|---|---|---|")
    for path in sorted(args.folder.glob("results-*.json")):
        for bench in json.loads(path.read_text())["benchmarks"]:
            d = decompose(bench)
            print(
                f"| {path.name} | {bench['name'].rsplit('::', 1)[-1]} | {d['run_sd']:.4f} | "
                f"{d['from_within']:.4f} | {d['cpu_effect_median']:.3f} / "
                f"{d['cpu_effect_max']:.3f} | "
                f"{d['within_sd']:.3f} | {d['resid_sd']:.3f} |"
            )


if __name__ == "__main__":
    main()
