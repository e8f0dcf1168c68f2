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


def core_difference(
    rng: np.random.Generator,
    runs: int,
    iterations: int,
    *,
    core_low: float = 0.10,
    core_high: float = 0.30,
    drift_sd: float = 0.005,
    random_side: bool = True,
) -> np.ndarray:
    """``log(T on CPU b / T on CPU a)`` per iteration, for a pair of CPUs whose speeds differ a
    lot and change between runs.

    Per run one CPU is 10-30% slower than the other (``log`` of the factor uniform between
    ``log1p(core_low)`` and ``log1p(core_high)``; which CPU is the slower one drawn per run when
    ``random_side``, else always CPU b), and inside the run the difference drifts as a random
    walk of ``drift_sd`` per iteration (the VM's vCPU speed changes over tens to hundreds of
    milliseconds: docs/statistics.md, "Which CPU each side runs on").
    """
    size = rng.uniform(np.log1p(core_low), np.log1p(core_high), (runs, 1))
    sign = rng.choice([-1.0, 1.0], (runs, 1)) if random_side else np.ones((runs, 1))
    walk = np.cumsum(rng.normal(0.0, drift_sd, (runs, iterations)), axis=1)
    out: np.ndarray = sign * size + walk
    return out


def on_cpus(
    a: np.ndarray, b: np.ndarray, log_b_slower: np.ndarray, *, design: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Put the sides on the CPUs of :func:`core_difference` under a design.

    ``design="iteration"``: iteration ``i`` of run ``r`` runs the baseline on CPU a when
    ``(r + i)`` is even (the runner's crossover); ``design="run"``: for the whole run when ``r``
    is even (the per-run swap). Returns ``(baseline_ns, candidate_ns, assignment)``, assignment
    1 where the baseline ran on CPU b; the side on CPU b takes ``exp(log_b_slower)`` longer.
    """
    r, i = np.indices(a.shape)
    assignment = ((r + i) % 2 if design == "iteration" else r % 2).astype(np.int64)
    slow = np.exp(log_b_slower)
    return (
        np.where(assignment == 1, a * slow, a),
        np.where(assignment == 0, b * slow, b),
        assignment,
    )


def make_crossover_aa(
    rng: np.random.Generator,
    runs: int,
    iterations: int,
    *,
    design: str,
    ratio: float = 1.0,
    core_low: float = 0.10,
    core_high: float = 0.30,
    drift_sd: float = 0.005,
    random_side: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`make_duet_data` (true ``ratio``; 1 for an A/A) on the CPUs of
    :func:`core_difference` under ``design`` (:func:`on_cpus`)."""
    a, b = make_duet_data(rng, runs, iterations, ratio)
    d = core_difference(
        rng,
        runs,
        iterations,
        core_low=core_low,
        core_high=core_high,
        drift_sd=drift_sd,
        random_side=random_side,
    )
    return on_cpus(a, b, d, design=design)
