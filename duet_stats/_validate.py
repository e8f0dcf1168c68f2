"""Argument checks shared by the ``duet_stats`` modules.

Every public function checks its arguments on entry with these helpers, so that a bad input fails
early with a ``ValueError`` that names the argument, the rule broken and what was found, instead of
surfacing later as a NaN or a numpy broadcasting error.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from duet_stats._typing import ArrayLike, FloatArray

__all__ = [
    "as_runs",
    "as_vector",
    "check_confidence",
    "check_count",
    "check_fraction",
    "check_nonnegative",
    "check_positive",
    "check_rng",
]


def _ragged_lengths(values: Any) -> list[int] | None:
    """Row lengths of a list of sequences whose lengths differ, else ``None``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        return None
    lengths = []
    for row in values:
        if isinstance(row, (str, bytes)) or not isinstance(row, (Sequence, np.ndarray)):
            return None
        lengths.append(len(row))
    return lengths if len(set(lengths)) > 1 else None


def _to_float(values: ArrayLike, *, name: str, what: str) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        lengths = _ragged_lengths(values)
        if lengths is not None:
            shown = ", ".join(str(n) for n in lengths[:10]) + (", ..." if len(lengths) > 10 else "")
            raise ValueError(
                f"{name} is ragged: every run must have the same number of iterations "
                f"(run lengths: {shown}); trim the runs to a common length or pad none of them"
            ) from exc
        raise ValueError(f"{name} must be an array of numbers ({what}); {exc}") from exc
    return array


def _describe_bad(array: FloatArray, bad: np.ndarray[Any, np.dtype[np.bool_]]) -> str:
    count = int(np.count_nonzero(bad))
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    where = f"run {first[0]}, iteration {first[1]}" if len(first) == 2 else f"index {first[0]}"
    return f"{count} offending value(s), first at {where}: {float(array[first])!r}"


def _check_values(array: FloatArray, *, name: str, positive: bool) -> None:
    nonfinite = ~np.isfinite(array)
    if nonfinite.any():
        raise ValueError(
            f"{name} must hold finite numbers; found NaN or infinity "
            f"({_describe_bad(array, nonfinite)})"
        )
    if positive:
        nonpositive = array <= 0
        if nonpositive.any():
            raise ValueError(
                f"{name} must hold positive numbers (times in ns, or their ratios); "
                f"found zero or negative ({_describe_bad(array, nonpositive)})"
            )


def as_runs(
    values: ArrayLike,
    *,
    name: str,
    positive: bool = True,
    min_runs: int = 2,
    min_iterations: int = 1,
) -> FloatArray:
    """Return ``values`` as a C-contiguous float64 array of shape ``(runs, iterations)``.

    Raises ``ValueError`` for ragged input, a shape that is not 2-D, too few runs or iterations,
    non-finite values and (when ``positive``) values that are zero or negative.
    """
    array = _to_float(values, name=name, what="shape (runs, iterations)")
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (runs, iterations); "
            f"got {array.ndim}-D with shape {array.shape}"
        )
    runs, iterations = array.shape
    if runs < min_runs:
        raise ValueError(f"{name} needs at least {min_runs} run(s) (rows); got {runs}")
    if iterations < min_iterations:
        raise ValueError(
            f"{name} needs at least {min_iterations} iteration(s) per run (columns); "
            f"got {iterations}"
        )
    _check_values(array, name=name, positive=positive)
    return np.ascontiguousarray(array)


def as_vector(
    values: ArrayLike, *, name: str, positive: bool = True, min_size: int = 1
) -> FloatArray:
    """Return ``values`` as a float64 1-D array, checked like :func:`as_runs`."""
    array = _to_float(values, name=name, what="a 1-D sequence")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got {array.ndim}-D with shape {array.shape}")
    if array.size < min_size:
        raise ValueError(f"{name} needs at least {min_size} value(s); got {array.size}")
    _check_values(array, name=name, positive=positive)
    return np.ascontiguousarray(array)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_confidence(confidence: float, *, name: str = "confidence") -> float:
    """Return ``confidence`` as a float strictly between 0 and 1."""
    if not _is_real(confidence) or not 0.0 < float(confidence) < 1.0:
        raise ValueError(
            f"{name} must be strictly between 0 and 1 (e.g. 0.99 for a 99% interval); "
            f"got {confidence!r}"
        )
    return float(confidence)


def check_count(value: int, *, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` that is at least ``minimum`` (bools are refused)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {int(value)}")
    return int(value)


def check_fraction(value: float, *, name: str) -> float:
    """Return ``value`` as a finite float >= 0 (a fraction of a range; may exceed 1)."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return float(value)


def check_positive(value: float, *, name: str) -> float:
    """Return ``value`` as a finite float > 0."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def check_nonnegative(value: float, *, name: str) -> float:
    """Return ``value`` as a finite float >= 0."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return float(value)


def check_rng(rng: object) -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator``; raise ``TypeError`` otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator, e.g. numpy.random.default_rng(seed); "
            f"got {type(rng).__name__}"
        )
    return rng
