"""``duet demo`` end to end: ONE demo, every claim it makes checked, no retry. The README's first
command finds its 5% slower candidate in both conditions and never gives a wrong answer.

How often this test fails by chance (tests/README.md, "Statistical claims"): it fails when a
condition misses the 5% or when a 99% interval misses the true ratio. The rate it is planned
with, DEMO_DETECTED of DEMO_TRIALS demos finding the 5% per condition (7 of 9, the figure the
brief of issue 22 names for the demo before the crossover design), makes it fail by chance in
1 - (7/9)^2, about 40% of CI runs (FALSE_FAILURE below): far above the suite's budget of 1 in
200. Measured here on 2026-11-27 (load average 8-11 from four other developers' runs): 3 of 3
demos found it in both conditions (quiet 1.044 [1.031, 1.054], 1.056 [1.046, 1.065], 1.046
[1.030, 1.066]; busy 1.051 [1.041, 1.063], 1.051 [1.030, 1.071], 1.049 [1.042, 1.057]), too
few to narrow the rate (Clopper-Pearson 95% for 3 of 3: 29-100%).
NOTE for the lead: the crossover design (another developer's) is meant to make the demo find
its 5% in both conditions reliably; re-measure DEMO_DETECTED / DEMO_TRIALS (tens of demos) once
it lands. Until then this test is the suite's largest chance failure, on purpose: a retry would
hide that the demo misses its own claim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duet_bench import settings
from duet_bench.demo import holds_expected
from duet_bench.lock import acquire as acquire_lock

# Each demo may take its subprocess timeout (600 s) and then clean up.
pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.timeout(900)]

#: Demos that found the 5% in a condition, of demos run (per condition; see the docstring).
DEMO_DETECTED, DEMO_TRIALS = 7, 9
#: The chance that one demo fails this test with duet working as designed.
FALSE_FAILURE = 1 - (DEMO_DETECTED / DEMO_TRIALS) ** 2


@pytest.mark.skipif(shutil.which("cc") is None, reason="the demo compiles C: no cc here")
def test_the_demo_finds_its_regression_and_never_gives_a_wrong_answer(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "demo", "--quiet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("ratio 1.05):", 1)[1]
    rows = {
        where: next(line for line in table.splitlines() if line.startswith(label))
        for where, label in (
            ("quiet", "the machine as it is"),
            ("busy", "one busy process beside it"),
        )
    }
    for where, row in rows.items():
        doc = json.loads((out / where / "results.json").read_text())
        bench = doc["benchmarks"][0]
        assert len(bench["runs"]) == settings.DEMO_RUNS  # the demo's default
        a = bench["analysis"]
        # A CPU-bound C program: CPU time decides, and every metric was analysed.
        assert a["metric"] == "cpu", a["metric_reason"]
        assert set(a["metrics"]) == {"wall", "cpu", "wall-runq"}
        assert (out / where / "report.md").read_text().startswith("## duet:")
        # 5% more loop iterations (the loop is not all of the program): the 99% interval holds
        # a ratio within a point of 1.05, and the demo finds it (FALSE_FAILURE: see above).
        interval = f"{a['ratio']:.4f} [{a['ci_low']:.4f}, {a['ci_high']:.4f}]"
        assert holds_expected(a["ci_low"], a["ci_high"]), f"{where}: {interval}\n{done.stdout}"
        assert a["verdict"] == "regression", f"{where}: {a['verdict']} {interval}\n{done.stdout}"
        assert "detected" in row, done.stdout
    busy = json.loads((out / "busy" / "results.json").read_text())
    # The busy process had to take turns with the sides: the run queue shows it.
    assert busy["benchmarks"][0]["analysis"]["interference"]["share"] > 0.3, done.stdout


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                found.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" "))
            except FileNotFoundError:
                continue
    return [c.decode(errors="replace") for c in found]


@pytest.mark.skipif(shutil.which("cc") is None, reason="the demo compiles C: no cc here")
def test_the_demo_refuses_or_waits_while_another_duet_measures(tmp_path: Path) -> None:
    """On a shared machine the demo exited 3 while another duet measured, lacking the --wait
    of run and compare. Neither refused nor waiting may it disturb that duet: it compiles
    nothing and starts no busy process before it holds the lock."""
    held = acquire_lock(path=os.environ["DUET_LOCK"], command="duet run --name holder")
    demo = [sys.executable, "-m", "duet_bench", "demo", "--runs", "5", "--quiet"]
    waiting: subprocess.Popen[bytes] | None = None
    try:
        refused = subprocess.run(
            [*demo, "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=120
        )
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert "duet run --name holder" in refused.stderr
        assert "--wait" in refused.stderr
        assert not (tmp_path / "a").exists()

        log_path = tmp_path / "waiting.log"
        with log_path.open("w") as log:
            waiting = subprocess.Popen(
                [*demo, "--wait", "--out", str(tmp_path / "b")],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 120
        while "waiting for it" not in log_path.read_text():
            assert waiting.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "demo --wait never said it waits"
            time.sleep(0.05)
        time.sleep(0.5)  # what it would start next, it would start now
        assert _children(waiting.pid) == []
        assert not (tmp_path / "b").exists()
    except BaseException:
        if waiting is not None:
            waiting.terminate()  # duet cleans up on SIGTERM
            waiting.wait(timeout=60)
        held.release()
        raise
    held.release()
    # Measured once the lock is free (the verdicts are the other test's business).
    assert waiting.wait(timeout=600) == 0, log_path.read_text()
    for where in ("quiet", "busy"):
        doc = json.loads((tmp_path / "b" / where / "results.json").read_text())
        assert doc["state"]["complete"], doc["state"]
