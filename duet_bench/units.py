"""Numbers for people (method.md section 8): 3 significant digits, SI units, binary memory units.

Fixed decimals hide small differences in small numbers and print noise in large ones; three
significant digits keep the resolution relative, which is how ratios and times are compared.
"""

from __future__ import annotations

import math

SIGNIFICANT = 3


def sig(x: float, digits: int = SIGNIFICANT) -> str:
    """``x`` with ``digits`` significant digits and no exponent (``1.00``, ``0.987``, ``1230``)."""
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0" if digits <= 1 else "0." + "0" * (digits - 1)
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:.{decimals}f}"
    # Rounding can carry into a new digit (9.996 -> "10.00"): recompute with one fewer decimal.
    if decimals > 0 and len(text.lstrip("-").replace(".", "").lstrip("0")) > digits:
        text = f"{x:.{decimals - 1}f}"
    return text


_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def duration(ns: float | None) -> str:
    """A duration in nanoseconds as ``12.3 ms``, ``456 µs``, ``1.23 s``."""
    if ns is None or not math.isfinite(ns):
        return "n/a"
    for i, (scale, unit) in enumerate(_TIME_UNITS):
        if abs(ns) >= scale or scale == 1.0:
            text = sig(ns / scale)
            # 999.7 ms rounds to "1000 ms": say "1.00 s" instead.
            if abs(float(text)) >= 1000 and i > 0:
                bigger, big_unit = _TIME_UNITS[i - 1]
                return f"{sig(ns / bigger)} {big_unit}"
            return f"{text} {unit}"
    return f"{sig(ns)} ns"  # pragma: no cover - the loop always returns


_BYTE_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))


def size(n_bytes: float | None) -> str:
    """A memory size with binary units: ``96.0 MiB``, ``1.50 GiB``."""
    if n_bytes is None or not math.isfinite(n_bytes):
        return "n/a"
    for scale, unit in _BYTE_UNITS:
        if abs(n_bytes) >= scale or scale == 1:
            if scale == 1:
                return f"{int(n_bytes)} B"
            return f"{sig(n_bytes / scale)} {unit}"
    return f"{int(n_bytes)} B"  # pragma: no cover


def ratio(x: float | None) -> str:
    return "n/a" if x is None else sig(x)


def change(x: float | None) -> str:
    """A ratio as a signed percentage change: 1.048 -> ``+4.80%``, 0.97 -> ``-3.00%``,
    1.000296 -> ``+0.03%`` (3 significant digits, but no finer than 0.01 %: below that a
    difference is noise in any benchmark)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    pct = (x - 1.0) * 100.0
    if round(pct, 2) == 0:
        return "0%"
    text = sig(abs(pct))
    if "." in text and len(text.split(".")[1]) > 2:
        text = f"{abs(pct):.2f}"
    return ("+" if pct > 0 else "-") + text + "%"


def percent(confidence: float) -> str:
    """A confidence level as ``99%`` or ``99.9%``."""
    return f"{confidence * 100:g}%"


def share(fraction: float) -> str:
    """A fraction of a whole as a whole percentage: 0.587 -> ``59%``; never rounds a non-zero
    share to ``0%`` or an incomplete one to ``100%``."""
    pct = fraction * 100.0
    if 0 < pct < 1:
        return "<1%"
    if 99 < pct < 100:
        return ">99%"
    return f"{pct:.0f}%"


def interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{sig(low)}, {sig(high)}]"


_SIZE_SUFFIXES = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1000**3,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1000**4,
    "tib": 1 << 40,
}


def parse_size(text: str) -> int:
    """``512M``, ``2GiB``, ``1.5g``, ``1000000`` -> bytes (K/M/G alone are binary, as in cgroups).

    Raises ``ValueError`` with the accepted forms.
    """
    s = text.strip().lower().replace(" ", "")
    number = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    suffix = s[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if suffix not in _SIZE_SUFFIXES or not value > 0 or not math.isfinite(value):
        raise ValueError(
            f"{text!r} is not a size; write e.g. 512M, 2G, 1.5GiB or a number of bytes"
        )
    return int(value * _SIZE_SUFFIXES[suffix])


#: A name longer than this is shortened where it is displayed (it is stored whole).
NAME_WIDTH = 48


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """``./build/parse --input data/very-long…/input.json``: the start and the end of a long
    name, which tell benchmarks apart better than the start alone."""
    if len(name) <= width:
        return name
    tail = (width - 1) // 3
    return name[: width - 1 - tail] + "…" + name[-tail:]
