"""docs/results-schema.json is what scripts/results_schema.py generates from the records of
duet_bench.results, and every fixture, the golden file and a file of each schema version in
the committed study data validate against it (as tests/duet/test_docs.py checks docs/cli.md)."""

from __future__ import annotations

import gzip
import json
import re
import sys
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


def test_the_package_ships_the_one_schema_and_the_wheel_carries_it() -> None:
    """The schema the package reads is docs/results-schema.json itself (through the _docs
    link), and the package data names it: a wheel carries it (tests/install/test_core_install.py
    runs ``duet schema`` in an installed wheel)."""
    from duet_bench.results.schema import SCHEMA_PATH

    assert SCHEMA_PATH.resolve() == SHIPPED.resolve()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"_docs/results-schema.json"' in pyproject


def test_duet_schema_prints_the_schema_and_checks_a_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from duet_bench.cli import main

    done = CliRunner().invoke(main, ["schema"])
    assert done.exit_code == 0, done.output
    assert done.output == SHIPPED.read_text()

    fixture = ROOT / "tests" / "fixtures" / "results-basic.json"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").write_bytes(gzip.compress(fixture.read_bytes()))
    done = CliRunner().invoke(main, ["schema", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert done.output == f"{tmp_path / 'out' / 'results.json'}: matches the results schema " + (
        f"({_load(fixture)['schema']})\n"
    )

    bad = json.loads(fixture.read_text())
    bad["benchmarks"][0]["name"] = 7
    del bad["benchmarks"][1]["runs"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    done = CliRunner().invoke(main, ["schema", str(path)])
    assert done.exit_code == 3
    assert done.stdout.splitlines() == [
        "$.benchmarks[0].name: 7 is not of type 'string'",
        "$.benchmarks[1]: 'runs' is a required property",
    ]
    assert f"duet: error: {path} does not match the results schema: 2 problems" in done.stderr


def test_duet_schema_without_jsonschema_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from duet_bench.cli import main

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # the import fails as when missing
    fixture = ROOT / "tests" / "fixtures" / "results-basic.json"
    done = CliRunner().invoke(main, ["schema", str(fixture)])
    assert done.exit_code == 3
    assert "jsonschema is not installed" in done.stderr
    assert "pip install 'duet-bench[schema]'" in done.stderr
