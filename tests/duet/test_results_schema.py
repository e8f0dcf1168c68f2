"""docs/results-schema.json is what scripts/results_schema.py generates from the records of
duet_bench.results, and every fixture, the golden file and a file of each schema version in
the committed study data validate against it (as tests/duet/test_docs.py checks docs/cli.md)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from duet_bench import results
from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "docs" / "results-schema.json"


def _load(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _samples() -> list[Path]:
    """The fixtures, the golden file, and the first file of each schema version under
    benchmarks/results (validating all 700 takes minutes)."""
    fixtures = sorted((ROOT / "tests" / "fixtures").rglob("*.json"))
    picked: dict[str, Path] = {}
    for path in sorted((ROOT / "benchmarks" / "results").rglob("*.json*")):
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            found = re.search(rb'"schema": *"(duet-results/[0-9]+)"', f.read(512))
        if found:
            picked.setdefault(found[1].decode(), path)
    assert set(picked) == {"duet-results/1", "duet-results/2", "duet-results/3"}
    return [p for p in fixtures if "benchmarks" in _load(p)] + sorted(picked.values())


def test_the_shipped_schema_is_up_to_date() -> None:
    expected = load_script(ROOT / "scripts" / "results_schema.py", "results_schema").render()
    assert SHIPPED.read_text() == expected, (
        "docs/results-schema.json is stale: run "
        ".venv/bin/python scripts/results_schema.py > docs/results-schema.json"
    )


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SHIPPED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", _samples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_results_files_validate(path: Path, validator: jsonschema.protocols.Validator) -> None:
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(_load(path))]
    assert not errors, errors[:3]


def test_what_duet_writes_validates(validator: jsonschema.protocols.Validator) -> None:
    """An analysed document as duet writes it, every analysis key present."""
    from duet_bench.analysis import AnalysisSettings, analyze_document

    doc = analyze_document(
        results.load(ROOT / "tests" / "fixtures" / "results-basic.json"), AnalysisSettings(reps=200)
    )
    assert not [e.message for e in validator.iter_errors(results.to_dict(doc))]


def test_the_schema_refuses_what_the_reader_refuses(
    validator: jsonschema.protocols.Validator,
) -> None:
    side = {"iterations_ns": [1, 2], "typo_ns": 3}
    run = {"index": 0, "status": "ok", "baseline": side, "candidate": side}
    doc = {"schema": "duet-results/3", "benchmarks": [{"name": "b", "runs": [run]}]}
    assert not validator.is_valid(doc)
    side.pop("typo_ns")
    assert validator.is_valid(doc)
    side["iterations_ns"] = [0]
    assert not validator.is_valid(doc)
