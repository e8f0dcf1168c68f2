"""Measure until decided: repeated confidence intervals over the runs (docs/statistics.md, 2b).

Not to be confused with :mod:`duet_stats.sequential`, the *sequential method* (one side measured
after the other). This module is about *when to stop measuring*: after every run from
``min_runs`` to ``max_runs`` the interval of the mean per-run log ratio is looked at, and the
measurement stops as soon as the verdict it gives is decided.

Looking at a fixed-design interval after every run is peeking: each look is a new chance of a
false verdict. The intervals here are *simultaneous*: with probability at least ``confidence``
every interval from ``min_runs`` to ``max_runs`` contains the true mean log ratio, so a verdict
read from the interval at whatever look the measurement stops (decided, budget spent, interrupted)
is wrong with probability at most ``1 - confidence``. That holds for any stopping rule, because
the event "some interval misses" does not depend on where one stops.

Each look ``n`` gives ``m_n +- c_n * s_n / sqrt(n)`` on the per-run log ratios ``x_1..x_n`` (mean
``m_n``, standard deviation ``s_n`` with divisor ``n - 1``). The critical values ``c_n`` come from
one of three shapes:

``"pocock"`` (the default)
    One ``c`` for every look, such that ``P(max_n |T_n| > c) = 1 - confidence`` where
    ``T_n = (m_n - mu) / (s_n / sqrt(n))``. For independent normal log ratios the joint law of
    ``T_min..T_max`` does not depend on ``mu`` or ``sigma`` (the t statistics are pivotal), so ``c``
    is computed once by simulating standard normal sequences: exact for normal data up to the
    simulation's error (2**17 sequences: a nominal 1% is 1% +- 0.03%, one standard error).
    Pocock's (1977) constant boundary, with t statistics instead of z.
``"obrien-fleming"``
    ``c_n = k * sqrt(max_runs / n)``, ``k`` calibrated the same way: wide early, narrow late
    (O'Brien and Fleming 1979).
``"bonferroni"``
    ``c_n`` the two-sided t quantile at ``1 - (1 - confidence) / K`` with ``n - 1`` degrees of
    freedom, ``K = max_runs - min_runs + 1`` looks. Valid by the union bound whatever the
    correlation between looks (and whatever the shape of each look's law as long as each look's
    t interval holds), but wider than the others.

The choice between them was made by simulation and resampling of real per-run ratios
(``benchmarks/stopping_study.py``; docs/statistics.md, "Measuring until decided").

References
----------
.. [1] S. J. Pocock, "Group sequential methods in the design and analysis of clinical trials",
   Biometrika 64(2), 1977, 191-199 (constant nominal level at every look).
.. [2] P. C. O'Brien, T. R. Fleming, "A multiple testing procedure for clinical trials",
   Biometrics 35(3), 1979, 549-556.
.. [3] C. Jennison, B. W. Turnbull, "Repeated confidence intervals for group sequential clinical
   trials", Controlled Clinical Trials 5(1), 1984, 33-45; and "Group Sequential Methods with
   Applications to Clinical Trials", Chapman & Hall, 2000, chapter 9 (repeated confidence
   intervals: simultaneous coverage, so any stopping time keeps the level).
.. [4] K. K. G. Lan, D. L. DeMets, "Discrete sequential boundaries for clinical trials",
   Biometrika 70(3), 1983, 659-663 (spending functions; the Bonferroni split is the spending
   ``alpha * k / K`` with the union bound in place of the joint law).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from duet_stats._typing import ArrayLike, FloatArray
from duet_stats._validate import as_vector, check_confidence, check_count
from duet_stats.intervals import t_quantile_two_sided

__all__ = [
    "SHAPES",
    "StoppingBounds",
    "StoppingInterval",
    "StoppingShape",
    "stopping_bounds",
    "stopping_intervals",
]

#: The shapes of the repeated-interval boundary.
StoppingShape: TypeAlias = Literal["pocock", "obrien-fleming", "bonferroni"]
SHAPES: tuple[StoppingShape, ...] = ("pocock", "obrien-fleming", "bonferroni")

#: Fewer runs than this give no interval (docs/statistics.md, method 1: the bootstrap is
#: meaningless below 5 runs; the t statistic with 1-2 degrees of freedom is hardly better).
MIN_RUNS = 3

#: Simulated standard normal sequences that calibrate ``"pocock"`` and ``"obrien-fleming"``.
CALIBRATION_SEQUENCES = 2**17
_CALIBRATION_SEED = 20261129
_CHUNK = 2**14


@dataclass(frozen=True, slots=True)
class StoppingInterval:
    """The interval at one look.

    Attributes
    ----------
    runs : int
        Runs seen at this look.
    log_ratio : float
        Mean per-run log ratio.
    log_low, log_high : float
        The repeated confidence interval of the mean log ratio.
    critical : float
        The critical value ``c_n`` used.
    """

    runs: int
    log_ratio: float
    log_low: float
    log_high: float
    critical: float

    @property
    def ratio(self) -> float:
        """The geometric-mean ratio ``exp(log_ratio)``."""
        return math.exp(self.log_ratio)

    @property
    def ci_low(self) -> float:
        """The interval's lower end as a ratio."""
        return math.exp(self.log_low)

    @property
    def ci_high(self) -> float:
        """The interval's upper end as a ratio."""
        return math.exp(self.log_high)


@dataclass(frozen=True, slots=True)
class StoppingBounds:
    """The critical value of every look from ``min_runs`` to ``max_runs``.

    Attributes
    ----------
    min_runs, max_runs : int
        The first and the last look.
    confidence : float
        Simultaneous coverage of all the looks' intervals.
    shape : {"pocock", "obrien-fleming", "bonferroni"}
        How the error is spread over the looks.
    critical : tuple of float
        ``critical[n - min_runs]`` is ``c_n``.
    """

    min_runs: int
    max_runs: int
    confidence: float
    shape: StoppingShape
    critical: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.critical) != self.max_runs - self.min_runs + 1:
            raise ValueError(
                f"critical must have one value per look ({self.max_runs - self.min_runs + 1}); "
                f"got {len(self.critical)}"
            )

    def interval(self, log_run_ratios: ArrayLike) -> StoppingInterval:
        """The interval at the look after ``len(log_run_ratios)`` runs.

        Raises ``ValueError`` when there are fewer than ``min_runs`` or more than ``max_runs``
        log ratios: no look was planned there, and an interval read there has no coverage.
        """
        x = as_vector(log_run_ratios, name="log_run_ratios", positive=False)
        n = int(x.size)
        if not self.min_runs <= n <= self.max_runs:
            raise ValueError(
                f"log_run_ratios has {n} runs, but looks are planned after {self.min_runs} to "
                f"{self.max_runs} runs only; pass between {self.min_runs} and {self.max_runs} "
                "runs, or make bounds for the runs you have"
            )
        c = self.critical[n - self.min_runs]
        mean = float(np.mean(x))
        half = c * float(np.std(x, ddof=1)) / math.sqrt(n)
        return StoppingInterval(
            runs=n, log_ratio=mean, log_low=mean - half, log_high=mean + half, critical=c
        )


def stopping_bounds(
    *,
    min_runs: int,
    max_runs: int,
    confidence: float = 0.99,
    shape: StoppingShape = "pocock",
) -> StoppingBounds:
    """Critical values for repeated confidence intervals with simultaneous coverage.

    Parameters
    ----------
    min_runs : int
        The first look (at least 3).
    max_runs : int
        The last look (at least ``min_runs``).
    confidence : float, default 0.99
        The probability that every interval from ``min_runs`` to ``max_runs`` contains the mean
        log ratio, for independent normal per-run log ratios.
    shape : {"pocock", "obrien-fleming", "bonferroni"}, default "pocock"
        See the module's docstring.

    Returns
    -------
    StoppingBounds
        Deterministic: the calibration uses a fixed seed, so the same arguments give the same
        bounds on every machine and re-analysis.

    References
    ----------
    .. [1] Jennison and Turnbull (1984), repeated confidence intervals; Pocock (1977);
       O'Brien and Fleming (1979); Lan and DeMets (1983); see the module's docstring.
    """
    min_runs = check_count(min_runs, name="min_runs", minimum=MIN_RUNS)
    max_runs = check_count(max_runs, name="max_runs", minimum=min_runs)
    confidence = check_confidence(confidence)
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}; got {shape!r}")
    return StoppingBounds(
        min_runs=min_runs,
        max_runs=max_runs,
        confidence=confidence,
        shape=shape,
        critical=_critical(min_runs, max_runs, confidence, shape),
    )


def stopping_intervals(log_run_ratios: ArrayLike, bounds: StoppingBounds) -> list[StoppingInterval]:
    """The interval at every look from ``bounds.min_runs`` to the runs given (at most
    ``bounds.max_runs``): what the measurement saw after each run."""
    x = as_vector(log_run_ratios, name="log_run_ratios", positive=False)
    last = min(int(x.size), bounds.max_runs)
    return [bounds.interval(x[:n]) for n in range(bounds.min_runs, last + 1)]


@functools.lru_cache(maxsize=32)
def _critical(
    min_runs: int, max_runs: int, confidence: float, shape: StoppingShape
) -> tuple[float, ...]:
    looks = max_runs - min_runs + 1
    alpha = 1.0 - confidence
    ns = np.arange(min_runs, max_runs + 1, dtype=np.float64)
    if shape == "bonferroni":
        return tuple(t_quantile_two_sided(1.0 - alpha / looks, int(n) - 1) for n in ns)
    scale = np.ones(looks) if shape == "pocock" else np.sqrt(max_runs / ns)
    k = _calibrate(min_runs, max_runs, alpha, tuple(float(s) for s in scale))
    return tuple(float(k * s) for s in scale)


def _calibrate(min_runs: int, max_runs: int, alpha: float, scale: tuple[float, ...]) -> float:
    """The ``k`` with ``P(max_n |T_n| / scale_n > k) = alpha`` over standard normal sequences."""
    ns = np.arange(1, max_runs + 1, dtype=np.float64)
    looks = slice(min_runs - 1, max_runs)
    s = np.asarray(scale)
    worst = np.empty(CALIBRATION_SEQUENCES)
    for start in range(0, CALIBRATION_SEQUENCES, _CHUNK):
        # The same sequences whatever max_runs: drawn run by run (rows) from a stream per chunk,
        # so that the first M runs of every sequence do not depend on max_runs. More looks can
        # then only raise each sequence's maximum, and the calibrated constant never falls
        # when max_runs grows (what continuing a measurement relies on; docs/statistics.md).
        rng = np.random.default_rng([_CALIBRATION_SEED, start])
        z = rng.standard_normal((max_runs, _CHUNK)).T
        total = np.cumsum(z, axis=1)[:, looks]
        squares = np.cumsum(z * z, axis=1)[:, looks]
        n = ns[looks]
        mean = total / n
        var = (squares - n * mean * mean) / (n - 1.0)
        t = np.abs(mean) / np.sqrt(np.maximum(var, 1e-300) / n)
        worst[start : start + _CHUNK] = np.max(t / s, axis=1)
    return float(np.quantile(worst, 1.0 - alpha))


def _simultaneous_miss(bounds: StoppingBounds, x: FloatArray) -> FloatArray:
    """For sequences ``x`` (rows) centred on their true mean: whether some look's interval
    missed 0 (a helper for the tests and the study)."""
    ns = np.arange(1, x.shape[1] + 1, dtype=np.float64)
    looks = slice(bounds.min_runs - 1, bounds.max_runs)
    n = ns[looks]
    total = np.cumsum(x, axis=1)[:, looks]
    squares = np.cumsum(x * x, axis=1)[:, looks]
    mean = total / n
    var = np.maximum((squares - n * mean * mean) / (n - 1.0), 0.0)
    half = np.asarray(bounds.critical) * np.sqrt(var / n)
    return np.asarray(np.any(np.abs(mean) > half, axis=1), dtype=np.float64)
