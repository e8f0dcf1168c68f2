"""The look shared by every plot of a report: colours and markers, rc parameters, a bare
figure and plain-text labels for untrusted names (the numbers come from the row model,
:mod:`duet_bench.report.rows`).

Benchmark names are untrusted: labels are one line of plain text, drawn with mathtext off (see
:data:`RC_PARAMS`), so ``$\\foo$`` is just text. matplotlib is imported inside :func:`figure`
(``duet --help`` stays fast) and used through ``Figure`` and the Agg canvas, never ``pyplot``.
"""

from __future__ import annotations

import re
from typing import Any

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
