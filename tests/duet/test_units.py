from __future__ import annotations

import pytest

from duet_bench import units


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.0, "1.00"),
        (1.0484, "1.05"),
        (0.98765, "0.988"),
        (0.0012345, "0.00123"),
        (123.45, "123"),
        (1234.4, "1234"),
        (9.996, "10.0"),
        (0.9996, "1.00"),
        (-2.5, "-2.50"),
        (0.0, "0.00"),
    ],
)
def test_three_significant_digits(x: float, text: str) -> None:
    assert units.sig(x) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (12_345_678, "12.3 ms"),
        (456_000, "456 µs"),
        (1_234_000_000, "1.23 s"),
        (999_700_000, "1.00 s"),
        (999, "999 ns"),
        (None, "n/a"),
    ],
)
def test_durations_use_si_units(ns: float | None, text: str) -> None:
    assert units.duration(ns) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(100 * 2**20, "100 MiB"), (1536 * 2**20, "1.50 GiB"), (512, "512 B"), (None, "n/a")],
)
def test_sizes_use_binary_units(n: float | None, text: str) -> None:
    assert units.size(n) == text


def test_change_and_interval() -> None:
    assert units.change(1.048) == "+4.80%"
    assert units.change(0.97) == "-3.00%"
    assert units.change(1.0) == "0%"
    assert units.change(1.000296) == "+0.03%"
    assert units.change(0.99996) == "0%"
    assert units.interval(0.99, 1.0123) == "[0.990, 1.01]"
    assert units.percent(0.99) == "99%"
    assert units.percent(0.999) == "99.9%"
