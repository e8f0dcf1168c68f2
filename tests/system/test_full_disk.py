"""A results file says why it stopped even when the disk fills during the run (issue 25 item 8):
a real tmpfs, mounted small under the test's directory, filled by the test while duet measures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from duet_bench import results
from duet_bench.errors import ResultsError
from duet_bench.results.write import RESERVED_BYTES, dumps_reserving, write_state_in_place
from tests.conftest import is_root
from tests.system.conftest import skip_or_fail
from tests.system.test_faults import ISOLATION, QUICK, finish, runs_in, start, wait_for

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs mounted at ``tmp_path / "fs"``, unmounted afterwards."""
    if not is_root():
        skip_or_fail("needs root to mount a tmpfs")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        skip_or_fail(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> None:
    """Write ``directory/filler`` until the file system is full (ENOSPC)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(OSError, match="No space left"):
            _write_forever(fd)
    finally:
        os.close(fd)


def _write_forever(fd: int) -> None:
    while True:
        os.write(fd, b"\0" * 4096)


def test_the_state_is_written_in_place_on_a_full_file_system(small_fs: Path) -> None:
    doc = results.load(FIXTURE)
    path = small_fs / "r.json"
    path.write_text(dumps_reserving(replace(doc, state={"complete": False})))
    fill(small_fs)
    with pytest.raises(ResultsError, match="No space left"):  # the atomic rewrite needs space
        results.save(doc, path)
    stopped = "interrupted by SIGTERM while measuring 'x'; " + "long " * (RESERVED_BYTES // 4)
    write_state_in_place(path, {"complete": False, "stopped": stopped, "updated": "now"})
    loaded = results.load(path)
    assert loaded.state["stopped"].startswith("interrupted by SIGTERM while measuring 'x'")
    assert loaded.state["stopped"].endswith("…")
    assert [b.name for b in loaded.benchmarks] == [b.name for b in doc.benchmarks]


def test_a_run_that_fills_the_disk_still_says_why_it_stopped(small_fs: Path) -> None:
    tag, out = os.urandom(8).hex(), small_fs / "r.json"
    popen = start(
        "run", "--baseline", "sleep 0.05", "--candidate", "sleep 0.05", "--name", "slow",
        "--runs", "200", "--iterations", "1", "--isolation", ISOLATION, "--out", str(out),
        *QUICK, tag=tag,
    )  # fmt: skip
    try:
        wait_for(lambda: runs_in(out) >= 1, "the first run to be written")
        fill(small_fs)
        done = finish(popen)
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.communicate()
    assert done.returncode == 3, done.stderr
    state = json.loads(out.read_text())["state"]
    assert state["complete"] is False
    assert "No space left on device" in state["stopped"], state
    assert "while measuring 'slow'" in state["stopped"]
    (small_fs / "filler").unlink()
    report = subprocess.run(
        [sys.executable, "-m", "duet_bench", "report", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode == 3
    assert "No space left on device" in report.stdout
