"""Stopping duet the hard ways (issue 25 item 10), end to end with real signals and processes:
Ctrl-C then the CI runner's SIGTERM a few milliseconds apart, and SIGKILL of the orchestrator.
Helpers and fixtures from ``test_faults``."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from duet_bench import results
from tests.system.test_faults import (
    ISOLATION,
    QUICK,
    assert_nothing_left,
    clean,
    duet,
    finish,
    gated,
    runs_in,
    start,
    tagged_processes,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("no_leftovers")


@pytest.mark.parametrize("gap_ms", [0, 2, 8, 20, 50, 100])
def test_ctrl_c_then_sigterm_cleans_up_and_says_why(
    tmp_path: Path, tag: str, shared_dir: Path, gap_ms: int
) -> None:
    gate, out = shared_dir / "gate", tmp_path / "r.json"
    popen = start(
        "run", "--baseline", gated(gate), "--candidate", gated(gate), "--name", "gated",
        "--runs", "10", "--iterations", "3", "--isolation", ISOLATION, "--out", str(out),
        *QUICK, tag=tag, new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: runs_in(out) >= 1, "the first run to be written")
        gate.touch()
        os.killpg(popen.pid, signal.SIGINT)  # Ctrl-C: the whole process group
        time.sleep(gap_ms / 1000)
        with contextlib.suppress(ProcessLookupError):
            popen.send_signal(signal.SIGTERM)  # the CI runner's, during the clean-up
        done = finish(popen)
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.communicate()
    clean(done)
    assert done.returncode == 130, done.stderr  # the first signal decides
    doc = results.load(out)
    assert doc.state["stopped"] == "interrupted by SIGINT while measuring 'gated'"
    assert_nothing_left(done.pid, tag)


def _measuring(tag: str) -> bool:
    """Whether a side of this test runs its ``sleep 0.05``."""
    for pid in tagged_processes(tag):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x000.05\x00":
                return True
    return False


def test_the_sides_die_with_a_sigkilled_orchestrator(tmp_path: Path, tag: str) -> None:
    out = tmp_path / "r.json"
    # One run of 1,000 iterations of 50 ms: 50 s a side would go on measuring unsupervised.
    popen = start(
        "run", "--baseline", "sleep 0.05", "--candidate", "sleep 0.05", "--runs", "2",
        "--iterations", "1000", "--isolation", ISOLATION, "--out", str(out), *QUICK, tag=tag,
    )  # fmt: skip
    try:
        wait_for(lambda: _measuring(tag), "a side to measure")
    finally:
        popen.kill()
        popen.communicate()
    deadline = time.monotonic() + 10
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tagged_processes(tag) == [], "a side went on measuring after duet was killed"
    # The next duet removes the cgroups, barrier file and work directory it left.
    done = duet(
        "run", "--baseline", "true", "--candidate", "true", "--runs", "2", "--iterations", "1",
        "--isolation", ISOLATION, "--out", str(tmp_path / "next.json"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    assert_nothing_left(popen.pid, tag)
