"""Winsorization (duet paper section 4, docs/statistics.md, method 3): hand-made cases."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import duet_stats
from duet_stats._typing import ArrayLike, FloatArray

# These cases test the paper's rule itself, at every run length; the guard that leaves short
# runs alone (duet_stats.winsor.MIN_ITERATIONS) is tested in test_guards.py.


def winsorize_run(values: ArrayLike, *, fraction: float = 0.2) -> tuple[FloatArray, int]:
    return duet_stats.winsorize_run(values, fraction=fraction, min_iterations=3)


def winsorize_runs(values: ArrayLike, *, fraction: float = 0.2) -> tuple[FloatArray, int]:
    return duet_stats.winsorize_runs(values, fraction=fraction, min_iterations=3)


TEN = [float(v) for v in range(11)]  # 0..10: no extreme stands out


def test_no_value_qualifies() -> None:
    out, replaced = winsorize_run(TEN)
    assert replaced == 0
    np.testing.assert_array_equal(out, TEN)


def test_low_outlier_replaced_by_its_neighbour() -> None:
    values = [0.0, *range(10, 21)]  # 0 lies 10 below 10..20 (range 10): 10 > 2
    out, replaced = winsorize_run(values)
    assert replaced == 1
    assert out[0] == 10.0
    np.testing.assert_array_equal(out[1:], values[1:])


def test_high_outlier_replaced_by_its_neighbour() -> None:
    values = [*range(10), 30.0, 5.0]  # 30 lies 21 above 0..9 (range 9)
    out, replaced = winsorize_run(values)
    assert replaced == 1
    assert out[10] == 9.0
    assert out.tolist() == [*map(float, range(10)), 9.0, 5.0]


def test_both_qualify_the_further_one_is_replaced() -> None:
    # low: 10 outside the remaining 10..35 (threshold 5); high: 15 outside 0..20 (threshold 4)
    values = [0.0, *range(10, 21), 35.0]
    out, replaced = winsorize_run(values)
    assert replaced == 1
    assert out[0] == 0.0
    assert out[-1] == 20.0


def test_both_qualify_low_further() -> None:
    values = [-20.0, *range(10, 21), 30.0]  # low excess 30, high excess 10
    out, replaced = winsorize_run(values)
    assert (replaced, out[0], out[-1]) == (1, 10.0, 30.0)


def test_exactly_at_twenty_percent_is_kept() -> None:
    # 12 lies exactly 2 = 0.2 * (10 - 0) above 0..10: not *further* than 20%, kept.
    values = [*TEN, 12.0]
    out, replaced = winsorize_run(values)
    assert replaced == 0
    np.testing.assert_array_equal(out, values)


def test_just_above_twenty_percent_is_replaced() -> None:
    values = [*TEN, 12.000001]
    out, replaced = winsorize_run(values)
    assert replaced == 1
    assert out[-1] == 10.0


def test_fraction_is_configurable() -> None:
    values = [*TEN, 12.0]
    assert winsorize_run(values, fraction=0.1)[1] == 1
    assert winsorize_run(values, fraction=0.5)[1] == 0


def test_exact_tie_replaces_the_one_met_first() -> None:
    # Three evenly spaced values: both extremes lie a whole range outside the other two.
    out, replaced = winsorize_run([-1.0, 0.0, 1.0])
    assert (replaced, out.tolist()) == (1, [0.0, 0.0, 1.0])
    out, replaced = winsorize_run([1.0, 0.0, -1.0])
    assert (replaced, out.tolist()) == (1, [0.0, 0.0, -1.0])


def test_negation_symmetry() -> None:
    rng = np.random.default_rng(7)
    values = rng.standard_t(2, size=(50, 9))
    out, n = winsorize_runs(values)
    neg, n_neg = winsorize_runs(-values)
    assert n == n_neg
    np.testing.assert_array_equal(neg, -out)


def test_tied_extremes_never_qualify() -> None:
    out, replaced = winsorize_run([0.0, 0.0, 10.0, 10.0])
    assert replaced == 0
    np.testing.assert_array_equal(out, [0.0, 0.0, 10.0, 10.0])


def test_constant_run_unchanged() -> None:
    assert winsorize_run([5.0] * 6)[1] == 0


def test_outside_a_zero_range_qualifies() -> None:
    out, replaced = winsorize_run([5.0, 5.0, 5.0, 6.0])
    assert (replaced, out.tolist()) == (1, [5.0] * 4)


@pytest.mark.parametrize("values", [[], [1.0], [1.0, 100.0]])
def test_fewer_than_three_values_unchanged(values: list[float]) -> None:
    out, replaced = winsorize_run(values)
    assert replaced == 0
    np.testing.assert_array_equal(out, values)


def test_input_not_modified_and_copy_returned() -> None:
    values = np.array([0.0, *range(10, 21)])
    before = values.copy()
    out, _ = winsorize_run(values)
    np.testing.assert_array_equal(values, before)
    assert out is not values
    assert out.dtype == np.float64


def test_runs_row_wise_with_total_count() -> None:
    runs = np.array(
        [
            [0.0, *range(10, 21)],  # low replaced
            [*TEN, 12.0],  # none
            [*range(10), 30.0, 5.0],  # high replaced
        ]
    )
    out, replaced = winsorize_runs(runs)
    assert replaced == 2
    for row_in, row_out in zip(runs, out, strict=True):
        expected, _ = winsorize_run(row_in)
        np.testing.assert_array_equal(row_out, expected)


def test_runs_with_two_iterations_unchanged() -> None:
    out, replaced = winsorize_runs([[1.0, 9.0], [3.0, 4.0]])
    assert replaced == 0
    np.testing.assert_array_equal(out, [[1.0, 9.0], [3.0, 4.0]])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: winsorize_run([[1.0, 2.0, 3.0]]), "values must be 1-D"),
        (lambda: winsorize_run([1.0, np.nan, 3.0]), "values must hold finite numbers"),
        (lambda: winsorize_run([1.0, 2.0, 3.0], fraction=-0.1), "fraction must be"),
        (lambda: winsorize_runs([1.0, 2.0, 3.0]), "values must be a 2-D array"),
        (lambda: winsorize_runs([[1.0, 2.0], [1.0]]), "values is ragged"),
        (lambda: winsorize_runs([[1.0, np.inf, 2.0]]), "finite"),
    ],
)
def test_invalid_arguments(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()
