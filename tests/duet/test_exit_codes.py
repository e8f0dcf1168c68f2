"""One exit-code table (``duet_bench.errors``), one place that exits (``duet_bench.cli``): the
commands that read results exit 0, 1, 2 or 3 by it, in a process of their own, and no other
module of duet ends the process. (``run``/``compare``: tests/integration; ``bisect``:
tests/integration/test_bisect.py; ``doctor --require``: tests/duet/test_doctor.py; ``github``:
tests/ci/test_workflow_commands.py.)"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from duet_bench.errors import (
    EXIT_CODES,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    Outcome,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "results-basic.json"


def duet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args], capture_output=True, text=True, check=False
    )


def test_the_table() -> None:
    assert (EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_INFRASTRUCTURE) == (0, 1, 2, 3)
    assert set(EXIT_CODES) == {0, 1, 2, 3}
    assert [int(o) for o in Outcome] == [0, 1, 3]
    assert all(o in EXIT_CODES for o in Outcome)


def test_analyze_exits_by_the_table(tmp_path: Path) -> None:
    """results-basic.json analysed has a regression (parse-json)."""
    found = duet("analyze", str(FIXTURE))
    assert found.returncode == 1, found.stderr
    assert "regression" in found.stdout
    assert found.stderr == ""
    assert duet("analyze", str(FIXTURE), "--fail-on", "never").returncode == 0
    usage = duet("analyze", str(FIXTURE), "--confidence", "2")
    assert usage.returncode == 2, usage.stderr
    missing = duet("analyze", str(tmp_path / "none.json"))
    assert missing.returncode == 3
    assert missing.stderr.startswith(f"duet: error: {tmp_path / 'none.json'}: no such file")


def _shard(analysed: dict[str, Any], names: list[str], index: int) -> dict[str, Any]:
    data = json.loads(json.dumps(analysed))
    data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] in names]
    data["config"] = {
        "command": "compare",
        "shard": [index, 2],
        "bench": None,
        "versions": {"baseline": {"commit": "a" * 40}, "candidate": {"commit": "b" * 40}},
    }
    return data


def test_merge_exits_1_on_a_regression_of_any_shard(tmp_path: Path) -> None:
    analysed = duet("analyze", str(FIXTURE), "--format", "json", "--fail-on", "never")
    assert analysed.returncode == 0, analysed.stderr
    whole = json.loads(analysed.stdout)

    def shards(*parts: list[str]) -> list[str]:
        paths = []
        for index, names in enumerate(parts, start=1):
            path = tmp_path / f"{'-'.join(names)}.json"
            path.write_text(json.dumps(_shard(whole, names, index)))
            paths.append(str(path))
        return paths

    regressed = shards(["parse-json"], ["render-page"])
    found = duet("merge", *regressed, "--out", str(tmp_path / "merged"))
    assert found.returncode == 1, found.stderr
    never = duet("merge", *regressed, "--out", str(tmp_path / "m2"), "--fail-on", "never")
    assert never.returncode == 0, never.stderr
    # An improvement and no change: no regression.
    fine = duet("merge", *shards(["sort-1M"], ["render-page"]), "--out", str(tmp_path / "m3"))
    assert fine.returncode == 0, fine.stderr


def test_bisect_has_an_outcome_for_every_result_of_the_search() -> None:
    from duet_bench.bisect.search import Outcome as SearchOutcome
    from duet_bench.commands.bisect import OUTCOMES

    assert set(OUTCOMES) == set(get_args(SearchOutcome)) - {"undecided"}
    assert OUTCOMES["not slower"] is Outcome.OK
    assert {OUTCOMES["single"], OUTCOMES["spread"]} == {Outcome.FAILS}


def _exits(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that end the process: ``sys.exit``, ``exit``, ``quit``, ``os._exit``
    excepted (a forked child's end), ``raise SystemExit``, click's ``ctx.exit``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = getattr(f.value, "id", "") if isinstance(f, ast.Attribute) else ""
            if (name == "exit" and owner != "os") or name in ("quit", "Exit"):
                lines.append(node.lineno)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if getattr(raised, "id", "") == "SystemExit":
                lines.append(node.lineno)
    return lines


def test_only_the_cli_exits() -> None:
    """Library code raises or returns an Outcome; ``cli.py`` exits. The harness files are
    scripts of their own (each run by path in the measured environment: their ``main`` is
    their process's)."""
    package = ROOT / "duet_bench"
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(package.rglob("*.py"))
        if "harness" not in path.parts
        if (lines := _exits(ast.parse(path.read_text(), str(path))))
    }
    assert set(found) == {"duet_bench/cli.py"}, found


@pytest.mark.parametrize("module", ["duet_worker", "duet_pytest"])
def test_the_runner_reads_the_harness_codes_without_importing_it_by_path(module: str) -> None:
    """The orchestrator imports the codes from the harness files as modules of duet's package:
    sys.path is left as it was, and no harness file is loaded under its bare name."""
    code = (
        "import sys; before = list(sys.path); "
        f"import duet_bench.harness.{module}; "
        "import duet_bench.runner.supervise, duet_bench.adapters.pytest_benchmark; "
        "assert sys.path == before, sys.path; "
        "bare = [m for m in sys.modules if m.startswith('duet_') and '.' not in m]; "
        "assert set(bare) <= {'duet_bench', 'duet_stats'}, bare"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
