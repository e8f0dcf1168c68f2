"""The measuring of ``duet calibrate --compare-designs``: the same A/A measured with crossover
at every iteration, with the sides swapped between runs and with the sequential method,
interleaved; and the calibration that follows from comparing them
(:mod:`duet_bench.calibrate.designs`).

Interleaving: the runs are measured in blocks of :data:`BLOCK_RUNS` runs per design, the three
designs one block after the other in an order that rotates from block to block, so that a
quiet or a busy stretch of the machine falls on every design alike rather than on whichever was
measured first. Each block is one :func:`duet_bench.session.measure`, all of them inside one
hold of the measuring lock; the blocks' runs are joined into one results file, each design a
benchmark of its own (``NAME``, ``NAME [per-run]``, ``NAME [sequential]``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from duet_bench import results
from duet_bench.calibrate import aa_data, calibrate_metrics
from duet_bench.calibrate.decide import MethodChoice
from duet_bench.calibrate.designs import (
    DESIGNS,
    Design,
    DesignComparison,
    choose_design,
    design_figures,
)
from duet_bench.lock import acquire
from duet_bench.session import measure

if TYPE_CHECKING:
    from duet_bench.analysis import AnalysisSettings
    from duet_bench.calibrate import Calibration
    from duet_bench.plan import BenchmarkSpec
    from duet_bench.results import BenchmarkRecord, ResultsDocument
    from duet_bench.session import SessionOptions

__all__ = [
    "BLOCK_RUNS",
    "SUFFIXES",
    "blocks",
    "design_of",
    "design_records",
    "design_specs",
    "measure_interleaved",
    "with_designs",
]

#: Runs per design in one block: 2 keeps each block balanced over the two CPUs of the pair
#: (the per-run swap and the crossover's starting CPU alternate from run to run).
BLOCK_RUNS = 2

#: The suffix of each design's benchmark name in the results file.
SUFFIXES: Mapping[Design, str] = {
    "iteration": "",
    "run": " [per-run]",
    "sequential": " [sequential]",
}


def design_specs(spec: BenchmarkSpec) -> list[BenchmarkSpec]:
    """The A/A ``spec`` once per design, named with :data:`SUFFIXES`."""
    out = []
    for design in DESIGNS:
        name = spec.name + SUFFIXES[design]
        if design == "sequential":
            out.append(replace(spec, name=name, method="sequential"))
        else:
            out.append(replace(spec, name=name, method="duet", crossover=design))
    return out


def blocks(runs: int) -> list[int]:
    """The runs of each block: :data:`BLOCK_RUNS` each, an odd run joining the last block (a
    benchmark needs 2 runs)."""
    sizes = [BLOCK_RUNS] * max(1, runs // BLOCK_RUNS)
    sizes[-1] += runs - sum(sizes)
    return sizes


def _join(joined: ResultsDocument | None, block: ResultsDocument) -> ResultsDocument:
    """``joined`` with the runs of ``block`` appended to each benchmark, renumbered."""
    if joined is None:
        return replace(block, benchmarks=tuple(replace(b, analysis=None) for b in block.benchmarks))
    out = []
    for record in joined.benchmarks:
        new = block.benchmark(record.name)
        runs = record.runs + tuple(
            replace(r, index=len(record.runs) + k) for k, r in enumerate(new.runs)
        )
        settings = replace(record.settings, runs=len(runs))
        # A python benchmark's calls per iteration are measured afresh by every block's session:
        # keep each block's count when they differ (the ratio of a run compares equal work).
        counts = (*(record.settings.inner_loops_by_block or (record.settings.inner_loops,)),)
        counts = (*counts, new.settings.inner_loops)
        if len(set(counts)) > 1:
            settings = replace(settings, inner_loops_by_block=counts)
        out.append(replace(record, runs=runs, settings=settings))
    environment = {
        **joined.environment,
        "load_average_after": block.environment.get("load_average_after"),
    }
    return replace(joined, benchmarks=tuple(out), environment=environment, state=block.state)


def measure_interleaved(
    specs: Sequence[BenchmarkSpec],
    options: SessionOptions,
    *,
    on_block: Callable[[int, int], None] | None = None,
) -> ResultsDocument:
    """Measure every spec (each with the same runs) in rotating blocks; write the joined
    document to ``options.out`` after every block and return it.

    Raises
    ------
    DuetError
        As :func:`duet_bench.session.measure` (the runs measured so far are in
        ``options.out``).
    """
    sizes = blocks(specs[0].runs)
    joined: ResultsDocument | None = None
    # The measuring lock for the whole comparison (each block's measure nests in it): another
    # duet taking the machine between two blocks would part the designs' machine minutes.
    with (
        acquire(wait=options.wait),
        tempfile.TemporaryDirectory(prefix="duet-calibrate-") as tmp,
    ):
        for n, size in enumerate(sizes):
            if on_block is not None:
                on_block(n, len(sizes))
            k = n % len(specs)
            order = [replace(s, runs=size) for s in (*specs[k:], *specs[:k])]
            block = measure(order, replace(options, out=Path(tmp) / f"block-{n}.json"))
            # The first block's order is the file's order of the benchmarks.
            if joined is None:
                block = replace(block, benchmarks=tuple(block.benchmark(s.name) for s in specs))
            joined = _join(joined, block)
            results.save(joined, options.out)
    assert joined is not None
    return joined


def design_of(record: BenchmarkRecord) -> Design:
    """The design a record was measured with: files without ``settings.crossover`` predate the
    crossover and swapped the sides between runs."""
    if record.method == "sequential":
        return "sequential"
    return "iteration" if record.settings.crossover == "iteration" else "run"


def design_records(doc: ResultsDocument, main: BenchmarkRecord) -> dict[Design, BenchmarkRecord]:
    """The records of ``main``'s A/A per design (``main`` and the records named after it),
    the first of each design."""
    out: dict[Design, BenchmarkRecord] = {}
    for record in doc.benchmarks:
        if record.name == main.name or record.name.startswith(main.name + " ["):
            out.setdefault(design_of(record), record)
    return out


def with_designs(
    records: Mapping[Design, BenchmarkRecord],
    first: Calibration,
    settings: AnalysisSettings,
    busy_share: Mapping[str, float],
) -> tuple[Calibration, BenchmarkRecord]:
    """The calibration of the design the comparison recommends, with the comparison in
    ``designs`` and the ``crossover`` to write; and the record it comes from.

    ``first`` is the calibration of the main record: its metric is the one the designs are
    compared on. When the sequential method wins, the figures are those of the narrower duet
    design, planned for the sequential method (the sequential A/A's components).

    Raises
    ------
    ValueError
        As :func:`duet_bench.calibrate.aa_data` (a design's record without the metric).
    """
    figures = tuple(
        design_figures(d, aa_data(records[d], first.metric), settings)
        for d in DESIGNS
        if d in records
    )
    choice = choose_design(figures)
    main_design: Design = choice.design
    if main_design == "sequential":
        duet = [d for d in choice.equal_time_widths if d != "sequential"]
        main_design = min(duet, key=lambda d: choice.equal_time_widths[d], default="iteration")
        if main_design not in records:
            main_design = next(d for d in DESIGNS if d in records and d != "sequential")
    main = records[main_design]
    cal = calibrate_metrics(
        main,
        records.get("sequential"),
        settings,
        busy_share=busy_share,
        method=MethodChoice(choice.method, choice.reason),
    )
    rec = cal.recommended
    if rec is not None:
        rec = replace(rec, crossover=choice.crossover)
    comparison = DesignComparison(first.metric, figures, choice)
    return replace(cal, recommended=rec, designs=comparison), main
