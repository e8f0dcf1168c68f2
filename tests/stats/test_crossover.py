"""duet_stats.crossover: the sides change CPUs at every iteration (docs/statistics.md, method
1b)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_stats.crossover import centre_assignments, core_contrast, crossover_runs
from duet_stats.planning import variance_components
from duet_stats.ratio import duet_ratio
from tests.stats.synthetic import make_crossover_aa, make_duet_data

# --- equal weighting, by hand ------------------------------------------------------------------


def test_even_count_the_mean_of_the_assignment_means_is_the_plain_mean() -> None:
    # Under 0: 0.10, 0.14 (mean 0.12); under 1: 0.30, 0.26 (mean 0.28).
    runs = crossover_runs([[0.10, 0.30, 0.14, 0.26]], [[0, 1, 0, 1]], winsorize="off")
    assert runs.log_run_ratios[0] == pytest.approx((0.12 + 0.28) / 2)  # 0.20, the plain mean
    assert runs.log_contrasts[0] == pytest.approx((0.12 - 0.28) / 2)  # -0.08
    assert runs.both.tolist() == [True]
    assert runs.single_assignment_runs == 0


def test_odd_count_weighs_the_assignments_equally_not_the_iterations() -> None:
    # Under 0: 0.10, 0.20 (mean 0.15); under 1: 0.30. The plain mean, 0.20, would give the
    # assignment with the extra iteration 2/3 of the weight; equal weighting gives 0.225.
    runs = crossover_runs([[0.10, 0.30, 0.20]], [[0, 1, 0]], winsorize="off")
    assert runs.log_run_ratios[0] == pytest.approx(0.225)
    assert runs.log_contrasts[0] == pytest.approx((0.15 - 0.30) / 2)
    # The other run of the pair starts on the other CPU: (0.30 + 0.25) / 2 and (0.30 - 0.25) / 2
    # with 0 as the lone assignment; assignments may be bools as well.
    runs = crossover_runs([[0.40, 0.30, 0.10]], [[True, False, True]], winsorize="off")
    assert runs.log_run_ratios[0] == pytest.approx((0.30 + 0.25) / 2)
    assert runs.log_contrasts[0] == pytest.approx((0.30 - 0.25) / 2)


def test_a_run_under_one_assignment_falls_back_to_its_plain_mean() -> None:
    runs = crossover_runs([[0.1, 0.2, 0.6], [0.1, 0.3, 0.2]], [[1, 1, 1], [0, 1, 0]])
    assert runs.log_run_ratios[0] == pytest.approx(0.3)
    assert math.isnan(runs.log_contrasts[0])
    assert runs.both.tolist() == [False, True]
    assert runs.single_assignment_runs == 1
    assert not runs.log_run_ratios.flags.writeable


def test_the_per_run_design_gives_exactly_todays_estimate() -> None:
    """Every run under one assignment (the sides swap between runs): the same numbers, bit for
    bit, as without the assignment, winsorization included."""
    a, b = make_duet_data(np.random.default_rng(3), 10, 30, 1.03)
    per_run = np.repeat((np.arange(10) % 2)[:, None], 30, axis=1)
    plain = duet_ratio(a, b, method="expanded", reps=2000, rng=np.random.default_rng(1))
    with_it = duet_ratio(
        a, b, method="expanded", reps=2000, assignment=per_run, rng=np.random.default_rng(1)
    )
    assert plain == with_it
    assert np.array_equal(plain.run_ratios, with_it.run_ratios)
    assert plain.winsorized > 0  # the rule did act, and acted alike


def test_swapping_the_versions_negates_the_ratio_and_keeps_the_core_difference() -> None:
    # The baseline's CPU becomes the candidate's: the log ratios negate, the assignment flips.
    rng = np.random.default_rng(5)
    a, b, assignment = make_crossover_aa(rng, 8, 31, design="iteration", ratio=1.04)
    log_s = np.log(b) - np.log(a)
    one = crossover_runs(log_s, assignment)
    other = crossover_runs(-log_s, 1 - assignment)
    assert np.allclose(other.log_run_ratios, -one.log_run_ratios, rtol=0, atol=1e-15)
    assert np.allclose(other.log_contrasts, one.log_contrasts, rtol=0, atol=1e-15)
    assert other.winsorized == one.winsorized


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(-0.5, 0.5),
    iterations=st.integers(2, 41),
)
def test_a_core_difference_changes_the_contrast_and_nothing_else(
    seed: int, shift: float, iterations: int
) -> None:
    """Adding ``+shift`` under assignment 0 and ``-shift`` under 1 (a core difference of any
    size, at any count from 2, odd or even) leaves every balanced run value where it was, winsorized
    or not, and moves every contrast by exactly ``shift``; the raw-series winsorization has no
    such guarantee, which is why it is not the default. (Winsorized from 6 iterations on: in an
    assignment of two values the residuals are mirror images, a tie between the two extremes
    that the rounding of the shift decides; the guard of 20 iterations keeps runs far from it.)
    """
    rng = np.random.default_rng(seed)
    log_s = rng.normal(0.0, 0.02, (4, iterations))
    log_s[:, rng.integers(0, iterations)] += rng.normal(0.0, 0.1)  # an outlier now and then
    assignment = (np.add.outer(np.arange(4), np.arange(iterations)) % 2).astype(np.int64)
    moved = log_s + np.where(assignment == 0, shift, -shift)
    for mode in ("centred", "off") if iterations >= 6 else ("off",):
        one = crossover_runs(log_s, assignment, winsorize=mode, winsorize_min_iterations=3)
        other = crossover_runs(moved, assignment, winsorize=mode, winsorize_min_iterations=3)
        assert other.winsorized == one.winsorized
        assert np.allclose(other.log_run_ratios, one.log_run_ratios, rtol=0, atol=1e-12)
        both = one.both
        assert np.allclose(other.log_contrasts[both], one.log_contrasts[both] + shift, atol=1e-12)


# --- winsorization -----------------------------------------------------------------------------


def _two_level_run() -> tuple[np.ndarray, np.ndarray]:
    """20 alternating iterations: +0.2 under 0, -0.2 under 1 (a 22% core difference), spread
    +-0.01 in each, and under 0 one iteration 0.05 above its group."""
    spread9 = np.linspace(-0.01, 0.01, 9)
    group0 = 0.2 + np.append(spread9, 0.05)
    group1 = -0.2 + np.linspace(-0.01, 0.01, 10)
    values = np.empty(20)
    values[0::2], values[1::2] = group0, group1
    return values[None, :], (np.arange(20) % 2)[None, :]


def test_centred_winsorization_judges_the_run_as_with_equal_cores() -> None:
    values, assignment = _two_level_run()
    centred = crossover_runs(values, assignment, winsorize="centred")
    assert centred.winsorized == 1
    # By hand: group 0's median is 0.2 + (0 + 0.0025) / 2 = 0.20125, group 1's is -0.2. The
    # residuals' largest is 0.05 - 0.00125 = 0.04875 (0.03875 beyond the rest, whose range is
    # 0.02: more than 20% of it); its nearest neighbour is group 1's 0.01, so it becomes
    # 0.01 + 0.20125 = 0.21125.
    mean0 = (0.2 * 9 + 0.21125) / 10
    assert centred.log_run_ratios[0] == pytest.approx((mean0 + -0.2) / 2, abs=1e-15)
    assert centred.log_contrasts[0] == pytest.approx((mean0 + 0.2) / 2, abs=1e-15)
    # On the raw series the 0.4 gap between the assignments counts as range: 0.25 lies 0.04
    # beyond the rest, less than 20% of 0.42, and nothing is replaced.
    assert crossover_runs(values, assignment, winsorize="series").winsorized == 0
    off = crossover_runs(values, assignment, winsorize="off")
    assert off.winsorized == 0
    assert off.log_run_ratios[0] == pytest.approx((0.2 + 0.005 + -0.2) / 2, abs=1e-15)


def test_winsorization_keeps_the_guard_and_one_value_per_run() -> None:
    values, assignment = _two_level_run()
    guarded = crossover_runs(values, assignment, winsorize_min_iterations=21)
    assert guarded.winsorized == 0
    # A second far value in group 1: still one replacement per run, the one further out.
    values = values.copy()
    values[0, 1] = -0.2 - 0.08
    assert crossover_runs(values, assignment).winsorized == 1


# --- the core contrast -------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [1.0, 1.05])
def test_the_contrast_recovers_a_known_core_difference_whatever_the_ratio(ratio: float) -> None:
    """CPU b 20% slower in every run (no drift): the contrast's estimate within 1% of 1.2 and
    its 99% interval around it. Deterministic (fixed seed); with the noise of this model (per
    run contrast sd about 0.005) the estimate misses 1.2 by 1% with probability below 1e-6."""
    rng = np.random.default_rng(11)
    a, b, assignment = make_crossover_aa(
        rng, 10, 30, design="iteration", ratio=ratio, core_low=0.2, core_high=0.2,
        drift_sd=0.0, random_side=False,
    )  # fmt: skip
    est = core_contrast(
        np.log(b) - np.log(a), assignment, confidence=0.99, reps=4000, rng=np.random.default_rng(2)
    )
    assert est is not None
    assert est.ratio == pytest.approx(1.2, rel=0.01)
    assert est.ci_low is not None
    assert est.ci_high is not None
    assert est.ci_low < 1.2 < est.ci_high
    assert est.significant is True
    assert est.runs == 10
    assert est.share_of_within_run_variance is not None
    assert est.share_of_within_run_variance > 0.9  # the swing dominates the raw spread


@pytest.mark.slow
def test_the_contrast_interval_covers_the_true_core_difference() -> None:
    """Over 1,000 seeded data sets of 10 runs (CPU b 10-30% slower, the factor drawn per run
    uniformly on the log scale and drifting inside the run), the 99% expanded interval of the
    contrast contains the expected core difference, ``(log 1.1 + log 1.3) / 2``, at least 97%
    of the time, and not always (measured: 98.5%). Deterministic (fixed seeds). Were the true
    coverage 98.5% (what the expanded interval gives the duet ratio at 10 runs), the chance of
    falling below 97% at 1,000 trials is about 1e-4, and of never missing below 1e-6."""
    truth = (math.log1p(0.1) + math.log1p(0.3)) / 2
    hits = 0
    for trial in range(1000):
        rng = np.random.default_rng([21, trial])
        a, b, assignment = make_crossover_aa(
            rng, 10, 30, design="iteration", ratio=1.03, random_side=False
        )
        est = core_contrast(np.log(b) - np.log(a), assignment, confidence=0.99, reps=2000, rng=rng)
        assert est is not None
        assert est.ci_low is not None
        assert est.ci_high is not None
        hits += math.log(est.ci_low) <= truth <= math.log(est.ci_high)
    assert 970 <= hits < 1000, hits


# --- the A/A promise on unequal, changing cores -----------------------------------------------

TRIALS = 1000


def _aa(design: str, iterations: int) -> tuple[float, float]:
    """Coverage of 1 and median width of the default interval (expanded, 99%, winsorized) over
    ``TRIALS`` seeded A/A data sets of 10 runs on CPUs 10-30% apart, analysed as duet does."""
    hits, widths = 0, []
    for trial in range(TRIALS):
        rng = np.random.default_rng([iterations, trial])
        a, b, assignment = make_crossover_aa(rng, 10, iterations, design=design)
        e = duet_ratio(
            a,
            b,
            method="expanded",
            reps=2000,
            assignment=assignment if design == "iteration" else None,
            rng=rng,
        )
        assert e.ci_low is not None
        assert e.ci_high is not None
        hits += e.ci_low <= 1.0 <= e.ci_high
        widths.append(e.ci_high - e.ci_low)
    return hits / TRIALS, float(np.median(widths))


@pytest.mark.slow
@pytest.mark.parametrize("iterations", [30, 31])
def test_crossover_aa_covers_one_and_is_much_narrower_than_the_per_run_swap(
    iterations: int,
) -> None:
    """A/A on a pair of CPUs one of which is 10-30% slower, which one and by how much changing
    between runs and drifting inside them (``tests/stats/synthetic.py``, ``make_crossover_aa``).

    With the sides changing CPUs at every iteration and each run weighing its two assignments
    equally, the 99% interval covers 1 at least 97% of the time at an even and an odd count
    (measured: 98.5% at 30 and 97.6% at 31 iterations; ``benchmarks/crossover_aa.py`` gives
    98.7-99.0% over 2,000 data sets), and its median width is under a third of the per-run
    swap's on data of the same kind (measured 7.8% against 35%). Deterministic (fixed
    seeds); were the true coverage 98.5%, the chance of falling below 97% at 1,000 trials is
    about 1e-4. The width ratio has no such tail: its two medians vary by a few percent between
    seeds, far from the factor of 3.
    """
    crossover, crossover_width = _aa("iteration", iterations)
    per_run, per_run_width = _aa("run", iterations)
    assert crossover >= 0.97, crossover
    assert crossover < 1.0  # an interval that never misses would test nothing
    assert per_run >= 0.97, per_run  # wide, but honest: the swap is balanced
    assert crossover_width * 3 < per_run_width, (crossover_width, per_run_width)


def test_the_share_of_within_run_variance_is_the_squared_contrast_over_it() -> None:
    log_ratios = np.array([[0.10, 0.02, 0.12, 0.00], [0.06, 0.01, 0.09, 0.03]])
    assignment = np.array([[0, 1, 0, 1], [0, 1, 0, 1]])
    est = core_contrast(
        log_ratios,
        assignment,
        confidence=0.9,
        reps=100,
        winsorize="off",
        rng=np.random.default_rng(0),
    )
    assert est is not None
    delta = math.log(est.ratio)
    within = float(log_ratios.var(axis=1, ddof=1).mean())
    assert 0 < delta * delta / within < 1
    assert est.share_of_within_run_variance == pytest.approx(delta * delta / within, rel=1e-12)


def test_no_run_under_both_assignments_gives_no_contrast() -> None:
    out = core_contrast(
        [[0.1, 0.2], [0.3, 0.1]],
        [[0, 0], [1, 1]],
        confidence=0.99,
        reps=100,
        rng=np.random.default_rng(0),
    )
    assert out is None


# --- centring for planning ---------------------------------------------------------------------


def test_centring_removes_the_swing_and_keeps_the_balanced_run_means() -> None:
    # Under 0: 0.10, 0.20 (mean 0.15); under 1: 0.30 (mean 0.30); half the contrast -0.075.
    out = centre_assignments([[0.10, 0.30, 0.20], [0.5, 0.5, 0.5]], [[0, 1, 0], [1, 1, 1]])
    assert out[0].tolist() == pytest.approx([0.175, 0.225, 0.275])
    assert out[0].mean() == pytest.approx(0.225)  # the balanced run log ratio
    assert out[1].tolist() == [0.5, 0.5, 0.5]  # one assignment: unchanged
    # On crossover data with a 10-30% core difference the within-run variance falls to about
    # the noise the design leaves; the between-run variance is that of the balanced run means.
    a, b, assignment = make_crossover_aa(np.random.default_rng(4), 10, 30, design="iteration")
    log_s = np.log(b) - np.log(a)
    raw, centred = (
        variance_components(log_s),
        variance_components(centre_assignments(log_s, assignment)),
    )
    assert centred.within_run_var < raw.within_run_var / 10
    balanced = crossover_runs(log_s, assignment, winsorize="off").log_run_ratios
    assert centred.between_run_var == pytest.approx(float(np.var(balanced, ddof=1)))


# --- argument checks ---------------------------------------------------------------------------


def test_arguments_are_checked() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="shape of the log ratios"):
        crossover_runs([[0.1, 0.2]], [[0, 1, 0]])
    with pytest.raises(ValueError, match=r"must hold 0 .* or 1"):
        crossover_runs([[0.1, 0.2]], [[0, 2]])
    with pytest.raises(ValueError, match="winsorize must be one of"):
        crossover_runs([[0.1, 0.2]], [[0, 1]], winsorize="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        crossover_runs([[0.1, float("nan")]], [[0, 1]])
    with pytest.raises(ValueError, match="winsorize_min_iterations"):
        crossover_runs([[0.1, 0.2]], [[0, 1]], winsorize_min_iterations=0)
    with pytest.raises(ValueError, match="confidence"):
        core_contrast([[0.1, 0.2]], [[0, 1]], confidence=1.0, reps=10, rng=rng)
    with pytest.raises(ValueError, match="method"):
        core_contrast([[0.1, 0.2]], [[0, 1]], confidence=0.9, reps=10, method="x", rng=rng)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Generator"):
        core_contrast([[0.1, 0.2]], [[0, 1]], confidence=0.9, reps=10, rng=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        duet_ratio([[1.0, 2.0]] * 5, [[1.0, 2.0]] * 5, assignment=[[0, 1]], rng=rng)


def test_the_contrast_variance_is_the_two_assignments_variances_by_hand() -> None:
    """``(s0^2 / n0 + s1^2 / n1) / 4`` per run, by hand: 5 iterations (3 on assignment 0, 2 on
    1); NaN where an assignment has fewer than 2 iterations."""
    x = [[0.01, 0.03, 0.02, 0.05, 0.00], [0.10, 0.14, 0.12, 0.16, 0.11]]
    a = [[0, 1, 0, 1, 0], [0, 1, 0, 1, 0]]
    runs = crossover_runs(np.array(x), np.array(a), winsorize="off")

    def by_hand(row: list[float], on: list[int]) -> float:
        g0 = [v for v, s in zip(row, on, strict=True) if s == 0]
        g1 = [v for v, s in zip(row, on, strict=True) if s == 1]
        v0, v1 = np.var(g0, ddof=1), np.var(g1, ddof=1)
        return float((v0 / len(g0) + v1 / len(g1)) / 4)

    for r in range(2):
        assert runs.log_contrast_vars[r] == pytest.approx(by_hand(x[r], a[r]), rel=1e-12)
    one = crossover_runs(np.array([[0.01, 0.02, 0.03]]), np.array([[0, 1, 0]]), winsorize="off")
    assert math.isnan(one.log_contrast_vars[0])  # one iteration on assignment 1
