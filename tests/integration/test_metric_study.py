"""``benchmarks/metric_study.py`` end to end on one tiny cell: the A/A of the integer workload
beside one busy process, measured by duet and the sequential method, analysed with both metrics,
stored (resumable) and summarized."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import is_root
from tests.script_module import load_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = [
    pytest.mark.usefixtures("no_leftovers"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (the native workload)"),
    pytest.mark.skipif(
        not is_root(), reason="measures in cgroups beside a busy process and noise: needs root"
    ),
]


@pytest.fixture(scope="module")
def study() -> ModuleType:
    return load_script(BENCHMARKS / "metric_study.py", "metric_study")


def _busy_alive(pid: int) -> bool:
    """Whether ``pid`` is still the busy process (its code is on its command line)."""
    try:
        return "getppid" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def test_one_busy_aa_cell_is_measured_stored_and_summarized(
    study: ModuleType, tmp_path: Path
) -> None:
    argv = [
        *("--quick", "--results", str(tmp_path), "--only", "aa"),
        *("--workloads", "integer", "--conditions", "busy", "--runs", "5", "--iterations", "3"),
    ]
    assert study.main(argv) == 0
    raw = tmp_path / "raw" / "aa__integer__busy__rep0.json.gz"
    doc = json.loads(gzip.decompress(raw.read_bytes()))
    cell = doc["accuracy_cell"]
    assert cell["condition"] == "busy"
    # The busy process ran for the cell and is gone with it.
    assert not _busy_alive(cell["busy_pid"])
    assert cell["load_average_before"]
    assert cell["machine_busy_cpus"] > 0
    assert cell["processes"], "the processes that used CPU during the cell are recorded"
    assert {"pid", "command", "cpu_share"} <= set(cell["processes"][0])
    assert sorted(b["method"] for b in doc["benchmarks"]) == ["duet", "sequential"]

    summary = json.loads((tmp_path / "metric-study.json").read_text())
    assert summary["schema"] == "duet-metric-study/1"
    row = summary["aa"]["integer"]["busy"]
    assert row["reps"] == 1
    for name in ("duet-wall", "duet-cpu", "sequential-wall", "sequential-cpu"):
        width = row[name]["width"]
        assert width is not None, name
        assert 0 < width["median"] < 10, (name, width)
        assert row[name]["contains_1"][1] == 1, name
        assert summary["coverage"][name][1] == 1, name
    assert summary["coverage"]["all"][1] == 4
    assert row["duet-default"]["metrics"][0] in ("wall", "cpu")
    share = row["duet-interference"]["median"]
    assert 0 <= share <= 1
    if os.cpu_count() == 2:
        # Two measuring CPUs and no third: the busy process must have preempted a side.
        assert share > 0
    entry = summary["cells"]["aa/integer/busy/rep0"]
    assert entry["duet"]["auto_metric"] in ("wall", "cpu")
    assert entry["sequential"]["cpu"]["low"] <= entry["sequential"]["cpu"]["high"]
    assert "| integer | busy | 1 |" in (tmp_path / "metric-study.md").read_text()

    # Resumable: the cell on disk is not measured again.
    stamp = raw.stat().st_mtime_ns
    assert study.main(argv) == 0
    assert raw.stat().st_mtime_ns == stamp
