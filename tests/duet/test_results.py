"""The results document: validation with precise messages, atomic writes, round trips."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from duet_bench import results
from duet_bench.errors import ResultsError
from duet_bench.results.analysis import AnalysisBlock
from duet_bench.runner.outcome import runtime_of

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def minimal() -> dict[str, Any]:
    return {
        "schema": "duet-results/1",
        "benchmarks": [
            {
                "name": "b",
                "runs": [
                    {
                        "index": 0,
                        "status": "ok",
                        "baseline": {"iterations_ns": [10, 11]},
                        "candidate": {"iterations_ns": [12, 13]},
                    }
                ],
            }
        ],
    }


def write(tmp_path: Path, data: Any) -> Path:
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data))
    return p


def test_minimal_document_loads() -> None:
    doc = results.from_dict(minimal())
    run = doc.benchmarks[0].runs[0]
    assert run.baseline.iterations_ns == (10, 11)
    assert run.candidate.warmup_ns == ()
    assert doc.benchmarks[0].method == "duet"


def test_round_trip_is_identity() -> None:
    doc = results.load(FIXTURE)
    again = results.from_dict(json.loads(results.dumps(doc)))
    assert again == doc


def test_where_the_run_queue_delay_came_from_survives_a_round_trip() -> None:
    data = minimal()
    data["schema"] = "duet-results/2"
    side = data["benchmarks"][0]["runs"][0]["baseline"]
    side.update(iteration_runq_ns=[0, 5], runq_source="pressure")
    doc = results.from_dict(data)
    assert doc.benchmarks[0].runs[0].baseline.runq_source == "pressure"
    assert doc.benchmarks[0].runs[0].candidate.runq_source is None
    again = json.loads(results.dumps(doc))
    assert again["benchmarks"][0]["runs"][0]["baseline"]["runq_source"] == "pressure"
    assert "runq_source" not in again["benchmarks"][0]["runs"][0]["candidate"]


def test_the_runtime_a_harness_named_survives_a_round_trip_and_must_be_an_object() -> None:
    data = minimal()
    data["schema"] = "duet-results/3"
    jvm = {"jvm": "/usr/bin/java", "jmh_version": "1.37", "threads": 1, "flags": ["-Xmx1g"]}
    data["benchmarks"][0]["runs"][0]["baseline"]["runtime"] = {"jvm": jvm}
    doc = results.from_dict(data)
    assert doc.benchmarks[0].runs[0].baseline.runtime == {"jvm": jvm}
    assert doc.benchmarks[0].runs[0].candidate.runtime is None
    again = json.loads(results.dumps(doc))
    assert again["benchmarks"][0]["runs"][0]["baseline"]["runtime"] == {"jvm": jvm}
    assert "runtime" not in again["benchmarks"][0]["runs"][0]["candidate"]
    data["benchmarks"][0]["runs"][0]["baseline"]["runtime"] = ["java"]
    with pytest.raises(ResultsError, match="runtime"):
        results.from_dict(data)


def test_the_jvm_of_a_done_line_is_the_runtime() -> None:
    assert runtime_of({"jvm": {"jmh_version": "1.37"}, "runq": "task"}) == {
        "jvm": {"jmh_version": "1.37"}
    }
    assert runtime_of({"runq": "task"}) is None
    assert runtime_of({"jvm": "not an object"}) is None


@pytest.mark.parametrize("version", [1, 2])
def test_files_before_crossover_still_read(version: int) -> None:
    """Versions 1 and 2 predate crossover: they read, without a CPU per iteration, and are
    written back as the current version."""
    data = minimal()
    data["schema"] = f"duet-results/{version}"
    doc = results.from_dict(data)
    side = doc.benchmarks[0].runs[0].baseline
    assert side.iteration_cpus is None
    again = json.loads(results.dumps(doc))
    assert again["schema"] == results.SCHEMA == "duet-results/3"
    assert "iteration_cpus" not in again["benchmarks"][0]["runs"][0]["baseline"]


def test_the_cpu_of_every_iteration_survives_a_round_trip() -> None:
    data = minimal()
    data["schema"] = "duet-results/3"
    run = data["benchmarks"][0]["runs"][0]
    run["baseline"].update(iteration_cpus=[1, 0], cores=[0, 1])
    run["candidate"].update(iteration_cpus=[0, 1], cores=[0, 1])
    data["benchmarks"][0]["settings"] = {"crossover": "iteration"}
    doc = results.from_dict(data)
    assert doc.benchmarks[0].runs[0].baseline.iteration_cpus == (1, 0)
    assert doc.benchmarks[0].settings.crossover == "iteration"
    assert results.from_dict(json.loads(results.dumps(doc))) == doc


def test_the_recorded_plan_is_typed_and_rewritten_as_it_was_read() -> None:
    """``settings`` is read once into its record: a limit null (no limit) and a limit absent (an
    older file) stay apart, a key this duet does not know is kept, a known key of the wrong type
    is refused with its place."""
    data = minimal()
    data["benchmarks"][0]["settings"] = {
        "runs": 12,
        "timeout_s": 60,
        "memory_limit_bytes": None,
        "crossover": "iteration",
        "until_decided": {"min_runs": 5, "max_runs": 9, "budget_s": None, "shape": "pocock"},
        "analysis": {"threshold": 0.5, "metric": "wall", "future": [1]},
        "from_a_newer_duet": {"x": 1},
    }
    plan = results.from_dict(data).benchmarks[0].settings
    assert (plan.runs, plan.memory_limit_bytes, plan.pids_max) == (12, None, results.ABSENT)
    assert plan.until_decided == results.RecordedDesign(5, 9, None, "pocock")
    assert plan.analysis is not None
    assert plan.analysis.threshold == 0.5
    assert plan.unknown == {"from_a_newer_duet": {"x": 1}}
    back = results.to_dict(results.from_dict(data))["benchmarks"][0]["settings"]
    assert json.dumps(back) == json.dumps(data["benchmarks"][0]["settings"])
    data["benchmarks"][0]["settings"]["runs"] = "12"
    with pytest.raises(ResultsError, match=r"settings\.runs: expected an integer"):
        results.from_dict(data)
    assert "settings" not in results.to_dict(results.from_dict(minimal()))["benchmarks"][0]


def test_a_pids_limit_is_read_as_recorded() -> None:
    """``--pids-limit 300`` records 300, ``--pids-limit none`` null; a file from before the option
    records 4096 or, older still, nothing (absent), and reads as it was."""
    for recorded in (300, None, 4096):
        data = minimal()
        data["benchmarks"][0]["settings"] = {"runs": 12, "pids_max": recorded}
        doc = results.from_dict(data)
        assert doc.benchmarks[0].settings.pids_max == recorded
        assert results.to_dict(doc)["benchmarks"][0]["settings"]["pids_max"] == recorded
    data["benchmarks"][0]["settings"] = {"runs": 12, "pids_max": "lots"}
    with pytest.raises(ResultsError, match=r"settings\.pids_max: expected an integer"):
        results.from_dict(data)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schema="duet-results/4"), r"newer duet \(duet-results/4\)"),
        (lambda d: d.update(schema="pyperf/1"), "is not a duet results schema"),
        (lambda d: d.pop("schema"), "schema: missing"),
        (lambda d: d.pop("benchmarks"), "missing required field 'benchmarks'"),
        (
            lambda d: d["benchmarks"][0]["runs"][0]["baseline"].update(iteration_ns=[1]),
            r"benchmarks\[0\] \('b'\)\.runs\[0\]\.baseline: unknown field 'iteration_ns'",
        ),
        (
            lambda d: d["benchmarks"][0]["runs"][0]["baseline"]["iterations_ns"].__setitem__(1, -5),
            r"iterations_ns\[1\]: a duration must be positive, got -5",
        ),
        (
            lambda d: d["benchmarks"][0]["runs"][0]["baseline"]["iterations_ns"].__setitem__(
                0, 1.5
            ),
            r"iterations_ns\[0\]: expected an integer number of nanoseconds",
        ),
        (
            lambda d: d["benchmarks"][0]["runs"][0]["candidate"]["iterations_ns"].pop(),
            "baseline has 2 samples but candidate has 1",
        ),
        (lambda d: d["benchmarks"][0]["runs"][0].update(status="weird"), "'weird' is not one of"),
        (
            lambda d: d["benchmarks"].append(copy.deepcopy(d["benchmarks"][0])),
            "appears more than once",
        ),
        (lambda d: d["benchmarks"][0]["runs"][0].update(index="0"), r"index: expected an integer"),
    ],
)
def test_wrong_fields_are_refused_with_the_field_named(mutate: Any, message: str) -> None:
    data = minimal()
    mutate(data)
    with pytest.raises(ResultsError, match=message):
        results.from_dict(data)


def test_unknown_top_level_and_benchmark_fields_cost_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The accuracy study annotates its raw files ("accuracy_cell"); a newer duet may add a field.
    data = minimal()
    data["accuracy_cell"] = {"condition": "idle"}
    data["benchmarks"][0]["origin"] = "study"
    with caplog.at_level("WARNING", logger="duet_bench.results.read"):
        doc = results.from_dict(data, source="r.json")
    assert [b.name for b in doc.benchmarks] == ["b"]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned
    assert "'accuracy_cell'" in warned[0]
    assert "benchmarks[0] 'origin'" in warned[0]
    assert "r.json" in warned[0]


def test_known_documents_read_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="duet_bench.results.read"):
        results.load(FIXTURE)
    assert not caplog.records


def test_gzip_results_are_read_transparently(tmp_path: Path) -> None:
    import gzip

    plain = results.load(FIXTURE)
    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    assert results.load(packed) == plain
    # By content, not by name: a compressed file renamed to .json reads too.
    renamed = tmp_path / "results.json"
    renamed.write_bytes(packed.read_bytes())
    assert results.load(renamed) == plain
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[:40])
    with pytest.raises(ResultsError, match="gzip file that cannot be decompressed"):
        results.load(cut)


def test_failed_run_may_be_ragged() -> None:
    data = minimal()
    data["benchmarks"][0]["runs"][0].update(status="failed", reason="crashed")
    data["benchmarks"][0]["runs"][0]["candidate"]["iterations_ns"] = []
    doc = results.from_dict(data)
    assert not doc.benchmarks[0].runs[0].ok


def test_truncated_file_is_refused(tmp_path: Path) -> None:
    text = FIXTURE.read_text()
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(ResultsError, match="truncated") as info:
        results.load(p)
    assert info.value.fix is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "empty"), ("{not json", "not valid JSON|truncated"), ("[]", "expected a JSON object")],
)
def test_unreadable_files(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "x.json"
    p.write_text(content)
    with pytest.raises(ResultsError, match=message):
        results.load(p)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no such file"):
        results.load(tmp_path / "nope.json")


def test_save_is_atomic_and_leaves_no_temporary(tmp_path: Path) -> None:
    doc = results.from_dict(minimal())
    target = tmp_path / "out" / "results.json"
    results.save(doc, target)
    results.save(doc, target)
    assert results.load(target) == doc
    assert sorted(os.listdir(target.parent)) == ["results.json"]


def test_saved_file_gets_the_mode_the_umask_gives(tmp_path: Path) -> None:
    doc = results.from_dict(minimal())
    old = os.umask(0o027)
    try:
        results.save(doc, tmp_path / "a.json")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640
    results.save(doc, tmp_path / "b.json")
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o666 & ~old


def test_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    doc = results.from_dict(minimal())
    target = tmp_path / "results.json"
    results.save(doc, target)
    before = target.read_text()
    # NaN cannot be written as JSON: the write fails after the old file existed.
    bad = doc.with_benchmark(
        results.BenchmarkRecord(
            name="b", runs=doc.benchmarks[0].runs, analysis=AnalysisBlock(ratio=float("nan"))
        )
    )
    with pytest.raises(ValueError, match="JSON"):
        results.save(bad, target)
    assert target.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["results.json"]


@pytest.mark.root
def test_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    """A real full file system (a 64 KiB tmpfs): the write fails, the old file survives."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        target = mnt / "results.json"
        small = results.from_dict(minimal())
        results.save(small, target)
        before = target.read_text()
        big = results.load(FIXTURE)  # about 90 KiB of JSON: does not fit
        with pytest.raises(ResultsError, match="previous file is unchanged"):
            results.save(big, target)
        assert target.read_text() == before
        assert os.listdir(mnt) == ["results.json"]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
