"""The golden comparison of ``tests/golden.py``: tolerant of the last bits of a float, strict
about everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden import check_golden, mismatch


def test_the_last_digits_of_a_float_may_differ() -> None:
    # Seen between two CPUs (with and without AVX-512) on the same fixture and numpy.
    assert mismatch('{"ratio": 1.0014873987899298}', '{"ratio": 1.00148739878993}') is None
    assert mismatch("duet_ratio 0.99412345307731\n", "duet_ratio 0.99412345307733\n") is None
    assert mismatch("width 1.2e-05 s", "width 1.2000000000000001e-05 s") is None


@pytest.mark.parametrize(
    ("got", "want", "said"),
    [
        ('{"ratio": 1.0015}', '{"ratio": 1.0014873987899298}', "number 0 differs"),
        ("1.05 [1.04, 1.06] regression", "1.05 [1.04, 1.06] no change", "the text differs"),
        ("ratio 1.05 (99% CI)", "ratio 1.05 (95% CI)", "number 1 differs"),
        ("runs: 10", "runs: 10, 11", "the text"),
        ("cgroup-v1", "cgroup-v2", "the text differs"),
        ("x 0.0", "x 1e-9", "number 0 differs"),
    ],
)
def test_a_real_change_is_caught(got: str, want: str, said: str) -> None:
    why = mismatch(got, want)
    assert why is not None
    assert said in why


def test_a_failure_names_the_line(tmp_path: Path) -> None:
    golden = tmp_path / "g.txt"
    golden.write_text("a 1\nb 2.5 ms\n", encoding="utf-8")
    check_golden("a 1\nb 2.5000000000001 ms\n", golden)
    with pytest.raises(AssertionError, match=r"g.txt changed: number 1 .*line 2: b 2.6 ms"):
        check_golden("a 1\nb 2.6 ms\n", golden)
