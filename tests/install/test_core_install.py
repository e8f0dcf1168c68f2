"""The core install (no extras) does what a CI job does: it analyses (an undecided experiment of
few runs too), merges shards and writes the comment, with neither scipy nor matplotlib in the
venv; a plot request says how to get them.

The session's wheelhouse holds duet's wheel and its core dependencies only (``pip wheel`` of the
checkout), so an import of scipy or matplotlib on these paths fails here for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install.wheelhouse import Wheelhouse, wheelhouse

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


@pytest.fixture(scope="session")
def wheels(request: pytest.FixtureRequest) -> Wheelhouse:
    return wheelhouse(request)


def _shards(tmp_path: Path) -> list[Path]:
    """Two shards of one `duet compare --shard i/2`, cut from the fixture."""
    data = json.loads(FIXTURE.read_text())
    benchmarks = data["benchmarks"]
    data["config"] = {
        "command": "compare",
        "suite": {"runs": 20},
        "versions": {"baseline": {"commit": "a" * 40}, "candidate": {"commit": "b" * 40}},
    }
    paths = []
    for i, part in enumerate((benchmarks[:3], benchmarks[3:]), start=1):
        data["benchmarks"] = part
        data["config"]["shard"] = [i, 2]
        path = tmp_path / f"shard{i}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


def _small_undecided(tmp_path: Path) -> Path:
    """5 runs of 3 iterations, the candidate within 2% of the baseline and a run-to-run swing:
    inconclusive, and the runs that would decide it are fewer than 30 samples in all, where the
    planning reads a t quantile (a CI job's ``--runs 5 --iterations 3`` on ``true`` once needed
    scipy for it and failed)."""
    data = json.loads(FIXTURE.read_text())
    bench = data["benchmarks"][0]
    per_run = (1.0, -0.8, 0.6, -0.2, 0.4)
    per_iteration = (1, -1, 0.5, -0.3, 0.8, -0.9, 0.2, -0.6, 1, -0.4, 0.7, -1, 0.1, -0.2, 0.9)
    runs = []
    for i, swing in enumerate(per_run):
        run = bench["runs"][i]
        base = run["baseline"]["iterations_ns"][:3]
        cand = [
            int(ns * (1 + 0.02 * swing + 0.006 * per_iteration[3 * i + j]))
            for j, ns in enumerate(base)
        ]
        runs.append(
            {
                **run,
                "baseline": {**run["baseline"], "iterations_ns": base},
                "candidate": {**run["candidate"], "iterations_ns": cand},
            }
        )
    data["benchmarks"] = [{**bench, "runs": runs}]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(data))
    return path


def test_the_core_install_merges_and_comments_without_scipy_or_matplotlib(
    tmp_path: Path, wheels: Wheelhouse
) -> None:
    venv = tmp_path / "core-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **wheels.offline_env()}
    done = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", str(wheels.wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    absent = subprocess.run(
        [str(venv / "bin/python"), "-c", "import scipy"], capture_output=True, text=True
    )
    assert absent.returncode != 0, "scipy came with the core install"
    absent = subprocess.run(
        [str(venv / "bin/python"), "-c", "import matplotlib"], capture_output=True, text=True
    )
    assert absent.returncode != 0, "matplotlib came with the core install"
    run_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}

    def duet(*args: str) -> subprocess.CompletedProcess[str]:
        """The core install's ``duet`` with ``args``, in ``tmp_path``."""
        return subprocess.run(
            [str(venv / "bin/duet"), *args],
            env=run_env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )

    done = duet("analyze", str(_small_undecided(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert "inconclusive" in done.stdout
    assert "runs in all" in done.stdout  # the planning's advice, its t quantile without scipy

    merged = tmp_path / "merged"  # --out DIR: results.json and the reports, without plots
    done = duet("merge", *map(str, _shards(tmp_path)), "--out", str(merged))
    # Exit 1 is the fixture's regression under the default --fail-on; the file is the point.
    assert done.returncode in (0, 1), done.stderr
    assert len(json.loads((merged / "results.json").read_text())["benchmarks"]) == 6
    assert (merged / "report.md").is_file()

    done = duet("comment", str(merged), "--dry-run", "--provider", "github", "--pr", "1")
    assert done.returncode == 0, done.stderr
    assert "parse-json" in done.stdout
    assert "Traceback" not in done.stderr

    # Text, markdown and html need no plots; the html page says how to get them.
    done = duet("report", str(merged), "--format", "html", "--out", str(tmp_path / "r"))
    assert done.returncode in (0, 1), done.stderr
    assert "duet-bench[plots]" in done.stderr
    assert (tmp_path / "r" / "report.html").is_file()

    # The results schema travels in the wheel: printed with the core, checking names the extra.
    done = duet("schema")
    assert done.returncode == 0, done.stderr
    shipped = Path(__file__).parents[2] / "docs" / "results-schema.json"
    assert done.stdout == shipped.read_text()
    done = duet("schema", str(merged))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "pip install 'duet-bench[schema]'" in done.stderr

    # Plots asked for: the error names the extra, no traceback.
    done = duet("report", str(merged), "--plot", str(tmp_path / "plots"))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "matplotlib is not installed" in done.stderr
    assert "pip install 'duet-bench[plots]'" in done.stderr
    assert "Traceback" not in done.stderr
