"""The commands of the ``duet`` CLI, one module each (registered lazily in
``duet_bench.cli.LAZY_COMMANDS``). Each module defines one click command and imports heavy modules
inside the command's body. The shared options come from :mod:`duet_bench.commands.options`, the
end of a command (the report printed, the outcome by ``--fail-on``) from
:mod:`duet_bench.commands.finish`; a command returns an ``Outcome`` or raises, and the group in
:mod:`duet_bench.cli`, on top, exits. Here, what the commands that read a results file share
(:func:`raise_if_incomplete`, :func:`reanalyze`); they read it with
:func:`duet_bench.results.load_given`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from duet_bench.errors import IncompleteResults
from duet_bench.results.completeness import completeness

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.results import ResultsDocument


def raise_if_incomplete(doc: ResultsDocument, *, allow: bool) -> None:
    """Raise :class:`duet_bench.errors.IncompleteResults` (exit 3) when ``doc`` does not hold
    every planned run (:mod:`duet_bench.results.completeness`), unless ``allow``. Called after
    the command said its verdicts, which carry the same sentence."""
    sentence = completeness(doc).sentence
    if sentence and not allow:
        raise IncompleteResults(
            f"the results are incomplete: {sentence}; the verdicts above are from part of "
            "the planned runs",
            fix="re-run the measurement to the end (the cause is in the parenthesis), or pass "
            "--allow-incomplete to exit by these verdicts",
        )


def reanalyze(
    doc: ResultsDocument, given: AnalysisSettings, names: frozenset[str], *, only_missing: bool
) -> ResultsDocument:
    """``doc`` with its benchmarks analysed again from the raw samples, each with the settings
    recorded with it except the settings ``names`` of ``given`` (the options given explicitly:
    :meth:`duet_bench.analysis.AnalysisSettings.from_record`).
    ``only_missing``: only the benchmarks without an analysis."""
    from dataclasses import replace

    from duet_bench.analysis import AnalysisSettings, analyze_benchmark

    for b in doc.benchmarks:
        if not only_missing or b.analysis is None:
            these = AnalysisSettings.from_record(b, given, names)
            doc = doc.with_benchmark(replace(b, analysis=analyze_benchmark(b, these).to_block()))
    return doc
