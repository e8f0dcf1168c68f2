"""``duet demo`` end to end: the README's first command never gives a wrong answer about its 5%
slower candidate. In each condition it finds it, or says inconclusive with an interval that
holds 1.05 and explains the miss; and it finds it in at least one condition.

Finding the 5% is a statistical claim, and this host changes vCPU speed for seconds at a time.
At 16 runs the quiet condition said 1.03 [0.981, 1.08], then 1.06 [0.999, 1.12], in two demos
back to back while the busy condition found it in both (1.04 [1.03, 1.05]). At 8 runs, CI once
saw 1.02 [0.997, 1.04]: a 99% interval also misses the true ratio now and then, by design.
The claims that depend on the draw therefore get up to ATTEMPTS demos; what does not depend on
it is checked in every one. A duet that cannot find the 5% fails them all.
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

pytestmark = pytest.mark.usefixtures("no_leftovers")

#: How many demos the statistical claims may take (see the module docstring).
ATTEMPTS = 3


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
        assert len(bench["runs"]) == settings.DEMO_RUNS  # the demo's default
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
    """None when the demo gave the right answer and found the 5% at least once; else why not."""
    table = stdout.split("ratio 1.05):", 1)[1]
    rows = [
        next(line for line in table.splitlines() if line.startswith(where))
        for where in ("the machine as it is", "one busy process beside it")
    ]
    for where in ("quiet", "busy"):
        a = json.loads((out / where / "results.json").read_text())["benchmarks"][0]["analysis"]
        # 5% more loop iterations (the loop is not all of the program): the interval holds a
        # ratio within a point of 1.05, whether it decided or not.
        if not holds_expected(a["ci_low"], a["ci_high"]):
            return f"{where}: {a['ratio']:.4f} [{a['ci_low']:.4f}, {a['ci_high']:.4f}] misses 1.05"
    if not any("detected" in row for row in rows):
        return "neither condition found the 5%:\n" + "\n".join(rows)
    if any("MISSED" in row for row in rows):
        # A miss is explained under the table (and, the interval holding 1.05, inconclusive).
        assert "the deciding metric said inconclusive" in table, stdout
    return None


@pytest.mark.skipif(shutil.which("cc") is None, reason="the demo compiles C: no cc here")
def test_the_demo_finds_its_regression_and_never_gives_a_wrong_answer(tmp_path: Path) -> None:
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
