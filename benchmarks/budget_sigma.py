#!/usr/bin/env python3
"""The inputs of tests/budget.toml's model figures, measured from the tests themselves: run the
tests that assert a verdict or a ratio with a kept ``--basetemp``, then read every results file
they wrote and print, per test directory and benchmark, the runs, the geometric mean ratio and
the standard deviation of the run log ratios (``sigma``), with its one-sided 95% upper bound
(chi-square), which is what the table uses.

    pytest <tests> --basetemp=/tmp/budget-sitting -p no:cacheprovider
    python benchmarks/budget_sigma.py /tmp/budget-sitting > benchmarks/results/budget/sigma.txt
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.aa import run_log_ratios


def main(root: str) -> int:
    print("test directory | file | benchmark | runs | ratio | sigma | sigma 95% upper")
    for path in sorted(Path(root).rglob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("duet-results"):
            continue
        for bench in doc.get("benchmarks", []):
            try:
                logs = run_log_ratios(bench)
            except (AssertionError, KeyError, ValueError, TypeError):
                continue
            if len(logs) < 2:
                continue
            sd = statistics.stdev(logs)
            df = len(logs) - 1
            upper = sd * math.sqrt(df / scipy.stats.chi2.ppf(0.05, df))
            test_dir = path.relative_to(root).parts[0]
            print(
                f"{test_dir} | {path.relative_to(root)} | {bench.get('name')} | {len(logs)} | "
                f"{math.exp(statistics.fmean(logs)):.3g} | {sd:.3g} | {upper:.3g}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
