"""The look shared by every plot of a report: colours and markers, rc parameters, a bare
figure, plain-text labels for untrusted names, and the numbers of an analysis as text.

Benchmark names are untrusted: labels are one line of plain text, drawn with mathtext off (see
:data:`RC_PARAMS`), so ``$\\foo$`` is just text. matplotlib is imported inside :func:`figure`
(``duet --help`` stays fast) and used through ``Figure`` and the Agg canvas, never ``pyplot``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from duet_bench import units

#: Verdict -> (colour, marker, filled). Okabe-Ito hues; the marker points the way the
#: candidate moved on the ratio axis (right: slower, left: faster).
VERDICT_STYLE: dict[str, tuple[str, str, bool]] = {
    "regression": ("#D55E00", ">", True),
    "improvement": ("#0072B2", "<", True),
    "inconclusive": ("#E69F00", "D", True),
    "no change": ("#4D4D4D", "o", True),
    "no verdict": ("#000000", "s", False),
}
#: Side -> (colour, marker): Okabe-Ito blue and vermillion, distinct in every common
#: colour-vision deficiency, and different shapes for grey scale.
SIDE_STYLE: dict[str, tuple[str, str]] = {
    "baseline": ("#0072B2", "o"),
    "candidate": ("#D55E00", "^"),
}
BAND = "#E3E3E3"
RUN_SHADE = "#F1F1F1"

#: rcParams for every plot (typed loosely: matplotlib types the keys as a Literal of names).
RC_PARAMS: dict[Any, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 12,
    "text.parse_math": False,
    "text.usetex": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "svg.fonttype": "path",
    "svg.hashsalt": "duet",
}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_LABEL_LIMIT = 48


def label(name: str, limit: int = _LABEL_LIMIT) -> str:
    """An untrusted name as one line of plain text for a plot."""
    s = _CONTROL.sub("\ufffd", " ".join(str(name).split()))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def number(x: Any) -> float | None:
    """``x`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def verdict(a: Mapping[str, Any]) -> str:
    """The verdict of an analysis, ``"no verdict"`` when it has none we know."""
    v = a.get("verdict")
    return v if isinstance(v, str) and v in VERDICT_STYLE else "no verdict"


def digits(a: Mapping[str, Any]) -> int:
    """Significant digits that tell the ratio and its bounds apart (units.telling_digits)."""
    return units.telling_digits(
        number(a.get("ci_low")), number(a.get("ratio")), number(a.get("ci_high"))
    )


def interval_text(a: Mapping[str, Any], *, with_level: bool = True) -> str:
    """``[1.04, 1.06] 99% CI`` (the level left out if not ``with_level``), or ``no interval``."""
    lo, hi = number(a.get("ci_low")), number(a.get("ci_high"))
    if lo is None or hi is None:
        return "no interval"
    conf = number(a.get("confidence"))
    level = f" {units.percent(conf)} CI" if with_level and conf is not None else ""
    return f"{units.interval(lo, hi, digits(a))}{level}"


def estimate_text(a: Mapping[str, Any]) -> str:
    """``ratio 1.05 [1.04, 1.06] 99% CI, regression``."""
    ratio = number(a.get("ratio"))
    if ratio is None:
        return "no successful run"
    return f"ratio {units.sig(ratio, digits(a))} {interval_text(a)}, {verdict(a)}"


_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def time_unit(typical_ns: float) -> tuple[float, str]:
    """The SI unit that shows ``typical_ns`` with 1 to 3 digits before the point."""
    for scale, unit in _TIME_UNITS:
        if typical_ns >= scale:
            return scale, unit
    return 1.0, "ns"


def figure(width: float, height: float) -> Any:
    """An empty matplotlib ``Figure`` of ``width`` x ``height`` inches on the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig
