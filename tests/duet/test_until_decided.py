"""Measuring until decided (docs/statistics.md, method 2b) on the duet side: the verdict at every
look, the record of the looks, and the sequential method's note (issue 30)."""

from __future__ import annotations

from typing import Any

import numpy as np

from duet_bench import results
from duet_bench.analysis import AnalysisSettings, analyze_benchmark


def _document(
    *,
    runs: int,
    ratio: float,
    method: str = "duet",
    settings: dict[str, Any] | None = None,
    same_cpu: bool = False,
    clash: bool = False,
    noise: float = 0.003,
    seed: int = 30,
) -> dict[str, Any]:
    """Runs of 20 iterations, CPU time = wall time; the sides change CPUs 2 and 5 at every
    iteration, or (``same_cpu``) both sides are recorded on CPU 2 as the sequential method
    records them, or (``clash``) the candidate is recorded on the baseline's CPU: a failed
    move."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(runs):
        shared = rng.lognormal(np.log(10e6), 0.05, 20)
        a = shared * rng.lognormal(0, noise, 20)
        b = shared * ratio * rng.lognormal(0, noise, 20)
        base_cpus = [2] * 20 if same_cpu else [(2, 5)[(r + i) % 2] for i in range(20)]
        cand_cpus = base_cpus if same_cpu or clash else [(5, 2)[(r + i) % 2] for i in range(20)]

        def side(x: np.ndarray, where: list[int]) -> dict[str, Any]:
            ns = [int(v) for v in x]
            return {"iterations_ns": ns, "iteration_cpu_ns": ns, "iteration_cpus": where}

        out.append(
            {
                "index": r,
                "status": "ok",
                "baseline": side(a, base_cpus),
                "candidate": side(b, cand_cpus),
            }
        )
    return {
        "schema": "duet-results/2",
        "benchmarks": [
            {
                "name": "x",
                "method": method,
                "runs": out,
                "settings": {"crossover": "iteration", **(settings or {})},
            }
        ],
    }


def test_the_sequential_method_has_no_crossover_note() -> None:
    """Issue 30: one side after the other on one CPU is the design, not a failed move."""
    doc = results.from_dict(_document(runs=6, ratio=1.0, method="sequential", same_cpu=True))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert "same CPU" not in (a.note or "")
    assert "crossover at every iteration was asked for" not in (a.note or "")
    # The duet method on one CPU still says so: there the move did fail.
    doc = results.from_dict(_document(runs=6, ratio=1.0, clash=True))
    a = analyze_benchmark(doc.benchmarks[0], AnalysisSettings(reps=500))
    assert "both sides were recorded on the same CPU" in (a.note or "")
