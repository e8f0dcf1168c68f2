"""``benchmarks/accuracy.py --only calib``: ``duet calibrate --compare-sequential`` runs as a child
process (under the measuring lock the script holds), its recommendation is stored with the raw
samples, and the summary sets it beside the method the A/A repetitions found narrower."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import is_root
from tests.script_module import load_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]


@pytest.fixture(scope="module")
def accuracy() -> ModuleType:
    return load_script(BENCHMARKS / "accuracy.py", "accuracy_script")


def test_the_verdict_compares_the_recommendation_with_the_aa_repetitions(
    accuracy: ModuleType,
) -> None:
    cells = {
        "calib/integer/quiet/rep0": {"recommends": "sequential"},
        "calib/integer/noise/rep0": {"recommends": "duet"},
        "calib/memory/quiet/rep0": {"recommends": "duet"},
        "calib/float/quiet/rep0": {"recommends": "duet"},
        "aa/integer/quiet/rep0": {"duet": {}},
    }
    per = {
        "integer": {"quiet": {"gain": 0.8}, "noise": {"gain": 6.0}},
        "memory": {"quiet": {"gain": 0.9}},
    }
    verdicts = accuracy._calib_verdicts(cells, per)
    assert set(verdicts) == {k for k in cells if k.startswith("calib/")}
    assert verdicts["calib/integer/quiet/rep0"]["agrees"] is True
    assert verdicts["calib/integer/quiet/rep0"]["aa_better"] == "sequential"
    assert verdicts["calib/integer/noise/rep0"]["agrees"] is True
    assert verdicts["calib/memory/quiet/rep0"]["agrees"] is False
    # No A/A repetitions for float: nothing to compare with, said as such.
    assert verdicts["calib/float/quiet/rep0"]["agrees"] is None
    assert verdicts["calib/float/quiet/rep0"]["aa_better"] is None


@pytest.mark.skipif(not is_root(), reason="measures with the noise generator and cgroups: root")
def test_calib_cells_measure_store_and_summarize(accuracy: ModuleType, tmp_path: Path) -> None:
    rc = accuracy.main(
        [
            *("--quick", "--results", str(tmp_path), "--only", "calib"),
            *("--workloads", "integer", "--calib-runs", "5", "--iterations", "5"),
        ]
    )
    assert rc == 0
    for cond in ("quiet", "noise"):
        raw = tmp_path / "raw" / f"calib__integer__{cond}__rep0.json.gz"
        doc = json.loads(gzip.decompress(raw.read_bytes()))
        # The whole results document of the calibration's A/A is kept (nothing measured lost).
        names = [b["name"] for b in doc["results"]["benchmarks"]]
        # --compare-sequential is the old spelling of --compare-designs: the three designs.
        assert len(names) == 3, names
        assert any("sequential" in n for n in names), names
        assert any("per-run" in n for n in names), names
        assert doc["calibration"]["method"]["pays"] in ("duet", "sequential")
        assert doc["accuracy_cell"]["argv"][:2] == ["duet", "calibrate"]
        assert doc["accuracy_cell"]["condition"] == cond
        # The noise generator's own start line (seed, timetable) is kept with the noisy cell.
        assert ("noise" in doc["accuracy_cell"]) == (cond == "noise")
    summary = json.loads((tmp_path / "accuracy.json").read_text())
    assert set(summary["calibrate"]) == {"calib/integer/quiet/rep0", "calib/integer/noise/rep0"}
    for c in summary["calibrate"].values():
        assert c["recommends"] in ("duet", "sequential")
        assert c["accuracy_gain"] is not None
        assert c["accuracy_gain"] > 0
        assert c["agrees"] is None  # no aa cells were measured in this directory
    assert "duet calibrate --compare-sequential" in accuracy.tables(summary)


def test_a_failed_calibration_keeps_what_it_measured(
    accuracy: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``duet calibrate`` exits non-zero (every run of the workload fails): the cell is not
    stored as finished (the next run measures it again), and the results file the calibration
    wrote, with its failed runs, is kept under ``raw/failed/`` instead of vanishing with the
    temporary directory."""
    import argparse

    accuracy.workloads.build()
    monkeypatch.setattr(accuracy, "RESULTS", tmp_path)
    args = argparse.Namespace(
        calib_runs=5, iterations=3, reps_calib=1, workloads=["integer"], iteration_ms=10.0
    )
    driver = accuracy.Driver(args)
    driver.ops = {"integer": -5}  # the workload refuses a negative count: every run fails
    monkeypatch.setattr(accuracy, "CONDITIONS", ("quiet",))
    driver.calib()
    assert not accuracy.raw_path("calib/integer/quiet/rep0").exists()
    kept = list((tmp_path / "raw" / "failed").glob("calib__integer__quiet__rep0.*.json.gz"))
    assert len(kept) == 1, kept
    doc = json.loads(gzip.decompress(kept[0].read_bytes()))
    assert doc["key"] == "calib/integer/quiet/rep0"
    assert "duet calibrate exited" in doc["reason"]
    statuses = {r["status"] for b in doc["results"]["benchmarks"] for r in b["runs"]}
    assert statuses, doc["results"]
    assert "ok" not in statuses
    # The summary reads only finished cells.
    assert "calib/integer/quiet/rep0" not in accuracy.load_raw()
