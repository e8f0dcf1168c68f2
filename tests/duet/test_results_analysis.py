"""The analysis block typed (duet_bench.results.analysis): every stored block duet wrote, in
the fixtures, the golden file and the committed study data (schemas 1, 2 and 3), reads into the
records and writes back as it was; a value of the wrong type reads as None."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duet_bench import results
from duet_bench.results.analysis import KEYS, AnalysisBlock, MetricBlock, SideSummary
from duet_bench.results.values import count, number

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def results_documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every results document in the repository's fixtures and study data, parsed."""
    studies = ROOT / "benchmarks" / "results"
    found = [*FIXTURES.rglob("*.json"), *studies.rglob("*.json"), *studies.rglob("*.json.gz")]
    for path in sorted(found):
        data = _load(path)
        if _is_results(data):
            yield path, data


def _load(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _is_results(data: Any) -> bool:
    return isinstance(data, dict) and str(data.get("schema", "")).startswith("duet-results/")


def test_every_stored_block_round_trips() -> None:
    schemas = set()
    blocks = 0
    for path, data in results_documents():
        schemas.add(data["schema"])
        for b in data["benchmarks"]:
            if b.get("analysis") is None:
                continue
            blocks += 1
            out = AnalysisBlock.from_dict(b["analysis"]).to_dict()
            assert out == b["analysis"], f"{path}: {b['name']}"
            assert json.dumps(out) == json.dumps(b["analysis"]), f"{path}: key order"
    assert {"duet-results/1", "duet-results/2", "duet-results/3"} <= schemas
    assert blocks > 100


def test_the_golden_document_round_trips() -> None:
    data = _load(FIXTURES / "golden" / "results-basic.json")
    assert all(b["analysis"] for b in data["benchmarks"])
    for b in data["benchmarks"]:
        assert AnalysisBlock.from_dict(b["analysis"]).to_dict() == b["analysis"]


def test_an_old_block_is_filled_with_none_and_written_back_without_the_new_keys() -> None:
    old = {"ratio": 1.05, "ci_low": 1.01, "ci_high": 1.09, "verdict": "regression",
           "baseline": {"mean_ns": 10.0, "median_ns": 9.0}}  # fmt: skip
    block = AnalysisBlock.from_dict(old)
    assert (block.metric, block.metrics, block.design) == (None, {}, None)
    assert block.baseline == SideSummary(median_ns=9.0, mean_ns=10.0)
    assert block.baseline.typical_ns == 9.0
    assert block.to_dict() == old
    assert set(KEYS) - set(old) == block.absent


def test_values_of_the_wrong_type_read_as_none() -> None:
    block = AnalysisBlock.from_dict(
        {
            "ratio": "<b>1.0</b>",
            "ci_low": True,
            "ci_high": float("nan"),
            "verdict": "<img>",
            "runs_used": -3,
            "baseline": "fast",
            "candidate": {"median_ns": "x", "mean_ns": 2},
            "note": {"a": 1},
            "failures": ["run 1: timeout", 3],
            "metrics": {"wall": {"missing": "why"}, "cpu": "x"},
        }
    )
    assert (block.ratio, block.ci_low, block.ci_high, block.verdict) == (None,) * 4
    assert (block.runs_used, block.baseline, block.note) == (None, None, None)
    assert block.candidate == SideSummary(median_ns=None, mean_ns=2.0)
    assert block.failures == ("run 1: timeout",)
    assert block.metrics == {"wall": MetricBlock(missing="why")}


@pytest.mark.parametrize(
    ("value", "as_number", "as_count"),
    [(1, 1.0, 1), (2.5, 2.5, None), (True, None, None), (-1, -1.0, None), ("1", None, None)],
)
def test_the_one_reader_of_numbers(
    value: object, as_number: float | None, as_count: int | None
) -> None:
    assert number(value) == as_number
    assert count(value) == as_count


def test_the_golden_document_reads_and_writes_back_byte_for_byte() -> None:
    path = FIXTURES / "golden" / "results-basic.json"
    doc = results.from_dict(_load(path))
    assert all(b.analysis is not None for b in doc.benchmarks)
    assert results.dumps(doc) == results.dumps(results.from_dict(json.loads(results.dumps(doc))))
    assert results.to_dict(doc) == _load(path)


def test_unknown_keys_of_a_stored_analysis_are_ignored_with_the_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = _load(FIXTURES / "golden" / "results-basic.json")
    data["benchmarks"][0]["analysis"]["accuracy_note"] = "added by a study"
    with caplog.at_level(logging.WARNING):
        doc = results.from_dict(data)
    assert "'accuracy_note'" in caplog.text
    assert "accuracy_note" not in results.to_dict(doc)["benchmarks"][0]["analysis"]
