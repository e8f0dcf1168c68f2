"""The results file of a measuring session (:class:`duet_bench.results.write.ResultsWriter`) on
real files: what it says before the first run, after each record, when stopped and when
finished (the full disk is ``tests/system/test_full_disk.py``'s, on a real tmpfs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from duet_bench import results
from duet_bench.results.completeness import completeness
from duet_bench.results.write import RESERVED_BYTES, ResultsWriter

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def _writer(tmp_path: Path) -> tuple[ResultsWriter, results.BenchmarkRecord]:
    """A writer of ``tmp_path / "results.json"`` planning the fixture's first benchmark (its
    runs) and a second one of 4 runs, and that first benchmark's record."""
    fixture = results.load(FIXTURE)
    record = fixture.benchmarks[0]
    first = replace(fixture, benchmarks=(), state={})
    planned = [(record.name, len(record.runs)), ("never-started", 4)]
    return ResultsWriter(tmp_path / "results.json", first, planned=planned), record


def test_before_the_first_run_the_file_says_what_is_planned(tmp_path: Path) -> None:
    writer, record = _writer(tmp_path)
    path = tmp_path / "results.json"
    doc = results.load(path)
    assert doc == writer.doc
    assert [doc.state[k] for k in ("complete", "stopped")] == [False, None]
    assert list(doc.state) == ["complete", "stopped", "updated", "planned"]
    planned = len(record.runs) + 4
    assert completeness(doc).sentence == (
        f"interrupted after 0 of {planned} runs (the file does not say why); "
        f"not started: {record.name}, never-started"
    )
    # The state on one line, followed by the room for a longer reason.
    line = next(x for x in path.read_text().splitlines() if x.startswith(' "state": '))
    assert line.endswith(" " * RESERVED_BYTES + ",")


def test_each_record_is_written_and_a_stop_says_where(tmp_path: Path) -> None:
    writer, record = _writer(tmp_path)
    path = tmp_path / "results.json"
    writer.save(replace(record, runs=record.runs[:1]))
    assert results.load(path).benchmarks == (replace(record, runs=record.runs[:1]),)
    writer.save(record)  # the same benchmark again: in place, not added
    writer.stop(f"interrupted by SIGINT while measuring {record.name!r}")
    doc = results.load(path)
    assert doc.benchmarks == (record,)
    assert completeness(doc).sentence == (
        f"interrupted after {len(record.runs)} of {len(record.runs) + 4} runs (interrupted by "
        f"SIGINT while measuring {record.name!r}); not started: never-started"
    )


def test_finished_the_file_is_complete_with_the_last_environment(tmp_path: Path) -> None:
    writer, record = _writer(tmp_path)
    writer.save(record)
    environment = {**writer.doc.environment, "load_average_after": [0.5, 0.25, 0.125]}
    doc = writer.finish(environment)
    assert doc == results.load(tmp_path / "results.json")
    assert doc.state["complete"] is True
    assert doc.state["stopped"] is None
    assert doc.environment["load_average_after"] == [0.5, 0.25, 0.125]
    assert completeness(doc).sentence is None
