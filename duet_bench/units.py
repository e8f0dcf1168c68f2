"""Numbers for people (docs/statistics.md, method 8): 3 significant digits, SI units, binary memory
units.

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


def change(x: float | None, decimals: int = 2) -> str:
    """A ratio as a signed percentage change: 1.048 -> ``+4.80%``, 0.97 -> ``-3.00%``,
    1.000296 -> ``+0.03%`` (3 significant digits, but no finer than ``decimals`` places of a
    percent: 0.01 % by default, below which a difference is noise in most benchmarks;
    :func:`change_digits` asks for more when an interval's bounds would look alike)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    pct = (x - 1.0) * 100.0
    if round(pct, decimals) == 0:
        return "0%"
    text = sig(abs(pct), SIGNIFICANT + decimals - 2)
    if "." in text and len(text.split(".")[1]) > decimals:
        text = f"{abs(pct):.{decimals}f}"
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


def interval(low: float | None, high: float | None, digits: int = SIGNIFICANT) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{sig(low, digits)}, {sig(high, digits)}]"


#: The most significant digits :func:`telling_digits` gives: past it, bounds that still look
#: alike are alike for any purpose (a ratio known to 1e-6).
MAX_DIGITS = 6


def telling_digits(*values: float | None, start: int = SIGNIFICANT) -> int:
    """The fewest significant digits, from ``start`` up to :data:`MAX_DIGITS`, that print the
    distinct ``values`` (a point and its interval) differently: ``1.05 [1.05, 1.05]`` says
    nothing, ``1.0500 [1.0483, 1.0518]`` does."""
    finite = sorted({v for v in values if v is not None and math.isfinite(v)})
    for digits in range(start, MAX_DIGITS + 1):
        shown = {sig(v, digits) for v in finite}
        if len(shown) == len(finite):
            return digits
    return MAX_DIGITS


def change_digits(*ratios: float | None) -> int:
    """The decimals (2 to 4) that print the changes of ``ratios`` differently (:func:`change`)."""
    finite = sorted({r for r in ratios if r is not None and math.isfinite(r)})
    for decimals in range(2, 5):
        if len({change(r, decimals) for r in finite}) == len(finite):
            return decimals
    return 4


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


def differing_name(name: str, width: int = NAME_WIDTH) -> str:
    """``name`` in ``width`` characters, keeping what tells it apart: an ad hoc comparison's
    name (``A vs B``, see ``duet run``) keeps where A and B differ and elides what they share
    (``…/pp2.4.7/bin/python… vs …/pp3.0.0/bin/python…``); any other name keeps its start and
    end (:func:`short_name`)."""
    if len(name) <= width:
        return name
    a, sep, b = name.partition(" vs ")
    if not sep or " vs " in b:
        return short_name(name, width)
    lead = len(_common_prefix(a, b))
    tail = len(_common_prefix(a[lead:][::-1], b[lead:][::-1]))
    # Widen the difference to whole words or path components: "pp2.4.7", not "2.4.7".
    while lead > 0 and a[lead - 1] not in _BOUNDARY:
        lead -= 1
    while tail > 0 and a[len(a) - tail] not in _BOUNDARY:
        tail -= 1
    core_a, core_b = a[lead : len(a) - tail], b[lead : len(b) - tail]
    prefix, suffix = a[:lead], a[len(a) - tail :]
    # Context is cut at word or path boundaries only; the most that fits wins.
    starts = [i for i in range(len(prefix) + 1) if i in (0, len(prefix)) or prefix[i] in _BOUNDARY]
    ends = [j for j in range(len(suffix) + 1) if j in (0, len(suffix)) or suffix[j] in _BOUNDARY]
    fitting = []
    for i in starts:
        for j in ends:
            pre = ("…" if i else "") + prefix[i:]
            post = suffix[:j] + ("…" if j < len(suffix) else "")
            text = f"{pre}{core_a}{post} vs {pre}{core_b}{post}"
            if len(text) <= width:
                fitting.append((len(text) - 2 * text.count("…"), text))
    if fitting:
        return max(fitting)[1]
    half = (width - len(" vs ")) // 2
    return f"{short_name(core_a, half)} vs {short_name(core_b, half)}"


_BOUNDARY = frozenset(" /=:,'\"")


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """``./build/parse --input data/very-long…/input.json``: the start and the end of a long
    name, which tell benchmarks apart better than the start alone."""
    if len(name) <= width:
        return name
    tail = (width - 1) // 3
    return name[: width - 1 - tail] + "…" + name[-tail:]


_DURATION_SUFFIXES = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """``10m``, ``90s``, ``1.5h``, ``600`` -> seconds (a bare number is seconds).

    Raises ``ValueError`` with the accepted forms.
    """
    s = text.strip().lower().replace(" ", "")
    number = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    suffix = s[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if suffix not in _DURATION_SUFFIXES or not value > 0 or not math.isfinite(value):
        raise ValueError(
            f"{text!r} is not a duration; write e.g. 90s, 10m, 1.5h or a number of seconds"
        )
    return value * _DURATION_SUFFIXES[suffix]


def clock(ns: float | None) -> str:
    """A machine time as a person reads it: ``12.3 s``, ``1 min 12 s``, ``2 h 05 min``."""
    if ns is None or not math.isfinite(ns):
        return "n/a"
    seconds = ns / 1e9
    if seconds < 59.5:
        return f"{sig(seconds)} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"
