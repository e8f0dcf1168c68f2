"""The verdict words: what a ratio and its interval mean at a threshold, and which verdicts
fail a CI job (docs/statistics.md, method 2). Thresholds and words live here, not in
``duet_stats``."""

from __future__ import annotations

from duet_bench.defaults import FailOn
from duet_bench.results.analysis import VERDICTS, Verdict

__all__ = ["VERDICTS", "FailOn", "Verdict", "fails", "verdict"]


def verdict(*, ratio: float, ci_low: float, ci_high: float, threshold: float) -> Verdict:
    """The verdict of docs/statistics.md, method 2.

    ``regression`` needs the whole interval above 1 *and* a point estimate at least ``1 + t``;
    ``no change`` needs the whole interval inside ``[1/(1+t), 1+t]``: a wide interval is never
    called "no change".
    """
    band_high = 1.0 + threshold
    band_low = 1.0 / band_high
    if ci_low > 1.0 and ratio >= band_high:
        return "regression"
    if ci_high < 1.0 and ratio <= band_low:
        return "improvement"
    if band_low <= ci_low and ci_high <= band_high:
        return "no change"
    return "inconclusive"


def fails(verdicts: list[Verdict | None], fail_on: FailOn) -> bool:
    """Whether these verdicts fail a CI job under ``--fail-on``.

    ``regression``: any regression. ``inconclusive``: a regression, or an inconclusive verdict
    (a job that must prove "not slower" fails when the data cannot say). ``any``: any
    regression or improvement (a change either way must be acknowledged). ``never``: never.
    """
    failing: dict[FailOn, set[Verdict | None]] = {
        "regression": {"regression"},
        "inconclusive": {"regression", "inconclusive"},
        "any": {"regression", "improvement"},
        "never": set(),
    }
    bad = failing[fail_on]
    return any(v in bad for v in verdicts)
