"""``duet demo`` end to end: the README's first command finds its 5% slower candidate on the
machine as it is, and beside a busy process it never gives a wrong answer: it finds it, or says
inconclusive and explains the miss (preemption costs a side cache warm-up, so even CPU time
scatters there: 1.04 [0.989, 1.05] once in CI at 6 runs).

Finding the 5% is a statistical claim: a 99% interval misses the true ratio about once in a
hundred demos by design, and more often on a host whose vCPUs change speed for seconds at a time
(1.02 [0.997, 1.04] on the quiet machine once in CI at 8 runs). The claims that depend on the
draw get a second demo when the first misses; what does not depend on it is checked every time.
A duet that cannot find the 5% fails both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duet_bench.lock import acquire as acquire_lock

pytestmark = pytest.mark.usefixtures("no_leftovers")

#: How many demos the statistical claims may take (see the module docstring).
ATTEMPTS = 2


def _demo(out: Path) -> str:
    """Run ``duet demo`` into ``out``; check what holds whatever the draw; return its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "demo", "--quiet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("ratio 1.05):", 1)[1]
    assert "the machine as it is" in table, done.stdout
    assert "one busy process beside it" in table, done.stdout
    for where in ("quiet", "busy"):
        doc = json.loads((out / where / "results.json").read_text())
        bench = doc["benchmarks"][0]
        assert len(bench["runs"]) == 16  # the demo's default
        a = bench["analysis"]
        # A CPU-bound C program: CPU time decides, and every metric was analysed.
        assert a["metric"] == "cpu", a["metric_reason"]
        assert set(a["metrics"]) == {"wall", "cpu", "wall-runq"}
        # Never a wrong answer: 5% more work is neither "no change" nor an improvement.
        assert a["verdict"] in ("regression", "inconclusive"), done.stdout
        assert (out / where / "report.md").read_text().startswith("## duet:")
    busy = json.loads((out / "busy" / "results.json").read_text())
    # The busy process had to take turns with the sides: the run queue shows it.
    assert busy["benchmarks"][0]["analysis"]["interference"]["share"] > 0.3, done.stdout
    return done.stdout


def _found(out: Path, stdout: str) -> str | None:
    """None when the demo found what it should; else why not."""
    table = stdout.split("ratio 1.05):", 1)[1]
    quiet_row, busy_row = (
        next(line for line in table.splitlines() if line.startswith(where))
        for where in ("the machine as it is", "one busy process beside it")
    )
    if "detected" not in quiet_row:
        return f"the quiet machine missed the 5%: {quiet_row}"
    if "detected" not in busy_row and not (
        "MISSED" in busy_row and "the deciding metric said inconclusive" in table
    ):
        return f"beside the busy process: {busy_row}"
    for where in ("quiet", "busy"):
        a = json.loads((out / where / "results.json").read_text())["benchmarks"][0]["analysis"]
        # 5% more loop iterations (the loop is not all of the program): the interval holds a
        # ratio within a point of 1.05, whether it decided or not.
        if not (a["ci_low"] <= 1.06 and a["ci_high"] >= 1.04):
            return f"{where}: {a['ratio']:.4f} [{a['ci_low']:.4f}, {a['ci_high']:.4f}] misses 1.05"
    return None


@pytest.mark.skipif(shutil.which("cc") is None, reason="the demo compiles C: no cc here")
def test_the_demo_detects_its_regression_also_beside_a_busy_process(tmp_path: Path) -> None:
    misses = []
    for attempt in range(ATTEMPTS):
        out = tmp_path / f"attempt-{attempt}"
        stdout = _demo(out)
        miss = _found(out, stdout)
        if miss is None:
            return
        misses.append(f"{miss}\n{stdout}")
    pytest.fail("\n\n".join(misses))


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
