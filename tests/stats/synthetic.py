"""Synthetic duet data shared by the ``stats`` tests (a helper module, not a test file)."""

from __future__ import annotations

import numpy as np


def make_duet_data(
    rng: np.random.Generator,
    runs: int,
    iterations: int,
    ratio: float,
    *,
    shared_run_sd: float = 0.2,
    shared_iteration_sd: float = 0.1,
    own_run_sd: float = 0.03,
    own_sd: float = 0.02,
    base_ns: float = 1e7,
) -> tuple[np.ndarray, np.ndarray]:
    """Lognormal iteration times with a known candidate/baseline ratio.

    Both sides of a run share a per-run "interference" factor and per-iteration noise (what the
    barrier synchronises); each side also has its own per-run factor (random initial state) and
    per-iteration noise. All log-factors have mean 0, so the expected log ratio is log(ratio).
    """
    shared = rng.lognormal(0.0, shared_run_sd, (runs, 1)) * rng.lognormal(
        0.0, shared_iteration_sd, (runs, iterations)
    )
    a = (
        base_ns
        * shared
        * rng.lognormal(0.0, own_run_sd, (runs, 1))
        * rng.lognormal(0.0, own_sd, (runs, iterations))
    )
    b = (
        base_ns
        * ratio
        * shared
        * rng.lognormal(0.0, own_run_sd, (runs, 1))
        * rng.lognormal(0.0, own_sd, (runs, iterations))
    )
    return a, b
