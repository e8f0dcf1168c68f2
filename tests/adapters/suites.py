"""The shared shape of the adapter tests: a small real suite of one benchmark tool in a real git
repository with two commits. BASE has ``steady``, ``slowed`` and ``removed``; HEAD makes
``slowed`` 30% slower (twice as slow for cargo, whose wall time spreads most under load),
drops ``removed`` and adds ``added``. ``duet compare`` must find the
regression on ``slowed`` only, report ``added`` as new and ``removed`` as missing, and an A/A
(HEAD against itself) must find no regression."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from duet_bench.adapters.tools import find_tool
from duet_bench.config.model import Suite
from duet_bench.errors import ConfigError
from tests.aa import assert_not_slowed
from tests.conftest import is_root
from tests.integration.gitrepo import GitRepo, make_repo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "adapters"
ISOLATION = "cgroup" if is_root() else "affinity"

#: Steps of the xorshift loop per operation: HEAD's ``slowed`` does 30% more.
STEPS_BASE = 20_000
STEPS_HEAD = 26_000


def tool(program: str, fallbacks: Sequence[str]) -> str | None:
    """Where the adapter itself finds ``program`` (PATH, then the usual install places), or
    None: the tests skip exactly when the adapter would refuse."""
    probe = Suite(adapter=program, name="probe", path=".")
    try:
        return find_tool(probe, program, program, fallbacks, None)
    except ConfigError:
        return None


def source(name: str, *, slowed: int, extra: str) -> str:
    text = (FIXTURES / name).read_text()
    return text.replace("@SLOWED@", str(slowed)).replace("@EXTRA@", extra)


def settings(metric: str, runs: int = 5) -> str:
    """Few runs and iterations: enough for a 30% change, short on a busy 2-CPU machine. Wall
    time (go, criterion: no CPU time per operation) takes more runs on a machine whose two
    cores are unequally busy."""
    return (
        f'runs = {runs}\niterations = 5\nwarmup = 1\nisolation = "{ISOLATION}"\n'
        f'metric = "{metric}"\n'
    )


def project(
    tmp_path: Path,
    base: Mapping[str, str],
    head: Mapping[str, str],
) -> GitRepo:
    repo = make_repo(tmp_path / "project", [dict(base)])
    repo.tag("base", "HEAD")
    repo.commit(dict(head), "slow one benchmark down by 30%, replace another")
    return repo


def compare(
    repo: GitRepo,
    base: str,
    head: str,
    out: Path,
    env: Mapping[str, str] | None = None,
    *extra: str,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    import os

    done = subprocess.run(
        [
            sys.executable, "-m", "duet_bench", "compare", base, head, "--out", str(out),
            "--quiet", "--reps", "2000", "--no-plots", *extra,
        ],
        cwd=repo.path,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    results = out / "results.json"
    doc = json.loads(results.read_text()) if results.is_file() else {}
    return done, doc


def check_regression_found(
    done: subprocess.CompletedProcess[str],
    doc: dict[str, Any],
    suite: str,
    names: Mapping[str, str],
    window: tuple[float, float] = (1.1, 1.6),
) -> None:
    """``names`` maps the roles (steady, slowed, added, removed) to the benchmark tool's names;
    ``window``: where the slowed benchmark's ratio must lie (30% more steps by default)."""
    assert done.returncode == 1, done.stdout + done.stderr
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    steady, slowed = f"{suite}/{names['steady']}", f"{suite}/{names['slowed']}"
    added, removed = f"{suite}/{names['added']}", f"{suite}/{names['removed']}"
    assert set(by_name) == {steady, slowed, added, removed}, sorted(by_name)
    assert by_name[slowed]["analysis"]["verdict"] == "regression", by_name[slowed]["analysis"]
    low, high = window
    assert low < by_name[slowed]["analysis"]["ratio"] < high, by_name[slowed]["analysis"]
    assert_not_slowed(by_name[steady])
    assert by_name[added]["runs"] == []
    assert by_name[added]["note"].startswith("new")
    assert by_name[removed]["runs"] == []
    assert by_name[removed]["note"].startswith("missing")
    assert doc["config"]["suites"] == {"new": [added], "missing": [removed]}
    assert doc["config"]["missing_in_baseline"] == []
    assert "new: only in the candidate" in done.stdout
    assert "Traceback" not in done.stderr


#: For a comparison of a version with itself: its verdicts are not what the test is about, so
#: two runs (the least ``--runs`` takes) show every benchmark measured on both sides in every
#: run as well as ten did (the cargo and go A/As took 52 s and 27 s at 10 and 20 runs).
NO_VERDICT = ("--fail-on", "never", "--runs", "2")


def check_both_sides_measured(done: subprocess.CompletedProcess[str], doc: dict[str, Any]) -> None:
    """An adapter's A/A (HEAD against HEAD, ``NO_VERDICT``): every benchmark measured on both
    sides in every run, exit 0 (not 3). Its verdicts are not asserted: at 99% three A/A
    verdicts per adapter would fail CI in about 4% of runs for nothing; the A/B test of each
    adapter is the one that fails when a side measures the wrong work."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert doc["benchmarks"], doc
    for b in doc["benchmarks"]:
        assert b["runs"], b
        for run in b["runs"]:
            assert run["status"] == "ok", run
            for side in ("baseline", "candidate"):
                assert run[side]["iterations_ns"], (side, run)
                assert all(ns > 0 for ns in run[side]["iterations_ns"]), (side, run)
