"""Adapters: the benchmark suites people already have (pytest-benchmark, Google Benchmark,
``go test -bench``, ``cargo bench``), each turned into ordinary duet benchmarks.

An adapter answers two questions for one benchmark tool (``duet_bench.adapters.base.Adapter``):
which
benchmarks a version of the suite has (discovery, run in that version's directory after its
build) and how one iteration of one of them runs (a :class:`duet_bench.config.BenchmarkConfig`, so
every discovered benchmark is measured, analysed and reported like any other).
"""
