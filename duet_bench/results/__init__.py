"""The results document ``duet-results/3``: raw samples, environment, configuration, analysis.

Every producer (``duet run``, ``duet compare``, ``duet merge``) writes this document and every
consumer (``duet analyze``, ``duet report``, ``duet comment``) reads it. It is rewritten
atomically after every run, so a crash never loses what was measured. The schema history is in
``docs/results-schema.md``; bump :data:`SCHEMA` only with an entry there.

- :mod:`~duet_bench.results.model`: the frozen records and the names of the schema
- :mod:`~duet_bench.results.analysis`: the analysis block of a benchmark, typed
  (:class:`~duet_bench.results.analysis.AnalysisBlock`); :mod:`~duet_bench.results.values` the
  one lenient reader of its numbers
- :mod:`~duet_bench.results.plan`: a benchmark's recorded plan (its ``settings``), typed
  (:class:`~duet_bench.results.plan.RecordedPlan`)
- :mod:`~duet_bench.results.read`: reading with validation (``from_dict``)
- :mod:`~duet_bench.results.load`: opening a file and reading it (``load``, ``load_given``)
- :mod:`~duet_bench.results.write`: writing (``to_dict``, ``dumps``, ``save``; ``ResultsWriter``,
  the file of a session that measures, with room kept for why it stopped)
- :mod:`~duet_bench.results.completeness`: whether a document holds every planned run
"""

from __future__ import annotations

from duet_bench.results.load import load, load_given
from duet_bench.results.model import (
    METHODS,
    READABLE_VERSIONS,
    RUN_STATUSES,
    SCHEMA,
    SCHEMA_FAMILY,
    SCHEMA_VERSION,
    SIDE_SERIES,
    SIDES,
    BenchmarkRecord,
    JSONObject,
    ResultsDocument,
    RunRecord,
    SideName,
    SideRecord,
    replace_name,
)
from duet_bench.results.plan import ABSENT, RecordedAnalysis, RecordedDesign, RecordedPlan
from duet_bench.results.read import from_dict
from duet_bench.results.write import benchmark_dict, dumps, save, to_dict, write_atomic

__all__ = [
    "ABSENT",
    "METHODS",
    "READABLE_VERSIONS",
    "RUN_STATUSES",
    "SCHEMA",
    "SCHEMA_FAMILY",
    "SCHEMA_VERSION",
    "SIDES",
    "SIDE_SERIES",
    "BenchmarkRecord",
    "JSONObject",
    "RecordedAnalysis",
    "RecordedDesign",
    "RecordedPlan",
    "ResultsDocument",
    "RunRecord",
    "SideName",
    "SideRecord",
    "benchmark_dict",
    "dumps",
    "from_dict",
    "load",
    "load_given",
    "replace_name",
    "save",
    "to_dict",
    "write_atomic",
]
