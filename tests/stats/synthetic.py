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


def make_noisy_cpu_aa(
    rng: np.random.Generator, runs: int, iterations: int, *, hit_probability: float = 0.15
) -> tuple[np.ndarray, np.ndarray]:
    """A/A data (true ratio 1) from a machine where one CPU is often preempted.

    :func:`make_duet_data` with ratio 1, plus, on one CPU only, a ``hit_probability`` chance per
    iteration that the iteration takes ``1 + Exp(mean 0.3)`` times longer. The sides swap CPUs
    between runs as duet does (run r: baseline on the noisy CPU when r is even), so each run's
    log ratios are skewed, alternately to one side and the other. The ``noisy-cpu`` model of
    ``benchmarks/aa_guards.py``.
    """
    a, b = make_duet_data(rng, runs, iterations, 1.0)
    hit = rng.random((runs, iterations)) < hit_probability
    slow = np.where(hit, 1.0 + rng.exponential(0.3, (runs, iterations)), 1.0)
    baseline_on_noisy = (np.arange(runs) % 2 == 0)[:, None]
    return np.where(baseline_on_noisy, a * slow, a), np.where(baseline_on_noisy, b, b * slow)
