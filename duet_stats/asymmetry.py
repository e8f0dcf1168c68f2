"""Side asymmetry: does the core a side sits on change its time? ([duet] section 3.2)

duet alternates the sides between the two cores from run to run. With the baseline on core
``a`` a run's ratio is ``R * c_b / c_a`` (``c`` the speed factor of each core); with the sides
swapped it is ``R * c_a / c_b``. Half the difference of the two groups' mean log run ratios is
therefore ``log(c_b / c_a)``, whatever the true ratio ``R``: the same estimate serves an A/A and
an A/B. Balanced alternation cancels the asymmetry in the grand mean, but it widens the interval
(it becomes run-to-run variance) and leaves a bias when the groups are of unequal size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duet_stats._typing import ArrayLike
from duet_stats._validate import as_vector, check_confidence, check_count, check_rng

__all__ = ["Asymmetry", "side_asymmetry"]


@dataclass(frozen=True, slots=True)
class Asymmetry:
    """``ratio = T(on b) / T(on a)``: how much slower the same code runs on the second core.

    Attributes
    ----------
    ratio : float
    ci_low, ci_high : float or None
        Stratified percentile bootstrap interval (runs resampled within each group); None with
        fewer than 2 runs in a group.
    runs_a, runs_b : int
        Runs with the baseline on the first and on the second core.
    share_of_run_variance : float or None
        ``log(ratio)^2 / var(log g)``: the share of the between-run variance of the log run
        ratios that the asymmetry explains.
    residual_bias : float
        The bias it leaves in the grand ratio, ``ratio ** ((runs_a - runs_b) / runs)``.
    """

    ratio: float
    ci_low: float | None
    ci_high: float | None
    runs_a: int
    runs_b: int
    share_of_run_variance: float | None
    residual_bias: float

    @property
    def significant(self) -> bool | None:
        """Whether the interval excludes 1 (None without an interval)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low > 1.0 or self.ci_high < 1.0


def side_asymmetry(
    log_run_ratios: ArrayLike,
    baseline_on_a: ArrayLike,
    *,
    confidence: float,
    reps: int,
    rng: np.random.Generator,
) -> Asymmetry | None:
    """Estimate the core asymmetry from the log run ratios and where the baseline sat.

    Parameters
    ----------
    log_run_ratios : array_like, shape (runs,)
        ``log`` of each run's geometric-mean ratio (candidate over baseline).
    baseline_on_a : array_like of bool, shape (runs,)
        True for the runs with the baseline on the first core.
    confidence : float
        Level of the bootstrap interval, strictly between 0 and 1.
    reps : int
        Bootstrap replicates (at least 1).
    rng : numpy.random.Generator

    Returns
    -------
    Asymmetry or None
        None when one group is empty (nothing to compare).

    References
    ----------
    .. [duet] L. Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the
       Cloud", ICPE 2020, section 3.2 (alternating the sides between the cores).
    """
    log_g = as_vector(log_run_ratios, name="log_run_ratios", positive=False)
    on_a = np.asarray(baseline_on_a, dtype=bool)
    if on_a.shape != log_g.shape:
        raise ValueError(
            f"baseline_on_a must have one entry per run ({log_g.size}), got shape {on_a.shape}"
        )
    check_confidence(confidence)
    check_count(reps, name="reps", minimum=1)
    check_rng(rng)
    group_a, group_b = log_g[on_a], log_g[~on_a]
    if group_a.size == 0 or group_b.size == 0:
        return None
    delta = (float(group_a.mean()) - float(group_b.mean())) / 2.0
    lo = hi = None
    if group_a.size >= 2 and group_b.size >= 2:
        ia = rng.integers(0, group_a.size, size=(reps, group_a.size))
        ib = rng.integers(0, group_b.size, size=(reps, group_b.size))
        star = (group_a[ia].mean(axis=1) - group_b[ib].mean(axis=1)) / 2.0
        q = np.quantile(star, [(1 - confidence) / 2, (1 + confidence) / 2])
        lo, hi = math.exp(float(q[0])), math.exp(float(q[1]))
    total_var = float(log_g.var(ddof=1)) if log_g.size > 1 else 0.0
    share = min(1.0, delta * delta / total_var) if total_var > 0 else None
    return Asymmetry(
        ratio=math.exp(delta),
        ci_low=lo,
        ci_high=hi,
        runs_a=int(group_a.size),
        runs_b=int(group_b.size),
        share_of_run_variance=share,
        residual_bias=math.exp(delta * (group_a.size - group_b.size) / log_g.size),
    )
