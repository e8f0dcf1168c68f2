"""The one reader of the descriptive values of a results file (the analysis block): a value of
the wrong type is read as None, never raised on, since a results file is outside input and the
analysis can always be made again from the samples. :mod:`duet_bench.results.analysis` builds
its records with these; :mod:`duet_bench.ci.sanitize` adds what an untrusted file needs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def number(value: object) -> float | None:
    """A finite number as a float, else None (a bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def integer(value: object) -> int | None:
    """An integer, else None (a bool is not an integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def count(value: object) -> int | None:
    """A non-negative integer, else None."""
    n = integer(value)
    return n if n is not None and n >= 0 else None


def string(value: object) -> str | None:
    """A string, else None."""
    return value if isinstance(value, str) else None


def mapping(value: object) -> Mapping[str, Any] | None:
    """A JSON object, else None."""
    return value if isinstance(value, Mapping) else None
