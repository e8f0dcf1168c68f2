"""Golden files compared with a stated tolerance on numbers.

The reports carry floats computed by numpy (log, exp, sums over bootstrap replicates). numpy
takes other code paths on other CPUs (AVX-512 or AVX2 kernels, other summation orders), so the
same fixture gives, for example, ``1.0014873987899298`` on one machine and ``1.00148739878993``
on another: the last one or two of 17 significant digits. A golden file that stores them
byte for byte fails on part of the machines CI may draw.

So a golden is compared in two parts: the text between numbers must be identical, and each
number must equal the golden's within :data:`REL_TOL` (relative), or :data:`ABS_TOL` near 0.
1e-9 is a million times the differences seen between CPUs (a few units in the 16th digit) and
a million times smaller than any change of method (a different quantile, one more replicate,
another seed) would make, so a real change still fails.

A number printed with 3 significant digits could in principle round the other way on another
CPU (only when the float lies within about 1e-15 of a rounding boundary); the check then fails
with both numbers named, and the fix is to regenerate on one machine and look at the diff.

Regenerate a golden after an intended change with ``DUET_UPDATE_GOLDEN=1`` (the module doc of
each golden test says which command).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

#: Relative tolerance on every number of a golden file.
REL_TOL = 1e-9
#: Absolute tolerance, for numbers near zero (a log ratio of an A/A benchmark).
ABS_TOL = 1e-12

# A decimal number as the reports print them: sign, digits, fraction, exponent, possibly
# followed by a unit (``ms``, ``pt``, ``%``). Digits inside a word (``cgroup-v1``, ``h2``) are
# not numbers: they must match as text.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\d.])")


def _split(text: str) -> tuple[list[str], list[str]]:
    """The text between numbers, and the numbers, in order."""
    return _NUMBER.split(text), _NUMBER.findall(text)


def _close(got: str, want: str) -> bool:
    if got == want:
        return True
    try:
        a, b = float(got), float(want)
    except ValueError:  # pragma: no cover - the pattern only matches numbers
        return False
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _where(text: str, index: int) -> str:
    """Line number and line of the ``index``-th number of ``text``, for the message."""
    match = list(_NUMBER.finditer(text))[index]
    line_no = text.count("\n", 0, match.start()) + 1
    line = text.splitlines()[line_no - 1]
    return f"line {line_no}: {line.strip()[:160]}"


def mismatch(got: str, want: str) -> str | None:
    """Why ``got`` differs from the golden text ``want`` beyond the tolerance, or None."""
    got_text, got_numbers = _split(got)
    want_text, want_numbers = _split(want)
    if got_text != want_text:
        for i, (g, w) in enumerate(zip(got_text, want_text, strict=False)):
            if g != w:
                return f"the text differs after {i} number(s): got {g[:120]!r}, golden {w[:120]!r}"
        return f"the text has {len(got_text)} parts, the golden {len(want_text)}"
    for i, (g, w) in enumerate(zip(got_numbers, want_numbers, strict=True)):
        if not _close(g, w):
            return (
                f"number {i} differs beyond rel {REL_TOL:g}: got {g}, golden {w} ({_where(got, i)})"
            )
    return None


def check_golden(text: str, golden: Path) -> None:
    """Assert that ``text`` matches the golden file within the tolerance; with
    ``DUET_UPDATE_GOLDEN`` set, write it instead."""
    if os.environ.get("DUET_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    why = mismatch(text, golden.read_text(encoding="utf-8"))
    assert why is None, f"{golden.name} changed: {why}; see the module doc of the test"
