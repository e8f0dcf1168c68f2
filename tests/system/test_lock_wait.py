"""The measuring lock under --wait (issue 25 item 11): a bounded wait, a queued duet that would
overwrite the --out the duet it waited for wrote, and a root lock no other user can hold.
Real processes holding a real ``flock``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from duet_bench import lock as duet_lock
from duet_bench.errors import EnvironmentNotReady
from tests.conftest import is_root
from tests.system.conftest import skip_or_fail
from tests.system.test_faults import ISOLATION, QUICK, clean, finish, start, wait_for

HOLD = (
    "import sys, duet_bench.lock\n"
    "duet_bench.lock.acquire(path=sys.argv[1], command='duet run --holder')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.fixture
def held_lock() -> Iterator[subprocess.Popen[str]]:
    """Another process holding this suite's measuring lock until the test ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, os.environ["DUET_LOCK"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    try:
        yield child
    finally:
        child.kill()
        child.communicate()


COMMON = ("--runs", "2", "--iterations", "1", "--isolation", ISOLATION, *QUICK)


@pytest.mark.usefixtures("no_leftovers")
def test_wait_timeout_bounds_the_wait(tmp_path: Path, held_lock: subprocess.Popen[str]) -> None:
    began = time.monotonic()
    popen = start(
        "run", "--baseline", "true", "--candidate", "true", "--wait", "--wait-timeout", "1",
        "--out", str(tmp_path / "r.json"), *COMMON, tag=uuid.uuid4().hex,
    )  # fmt: skip
    done = finish(popen)
    clean(done)
    assert done.returncode == 3, done.stderr
    assert f"another duet (pid {held_lock.pid}, `duet run --holder`" in done.stderr
    assert "still measuring on this machine after --wait-timeout 1 s" in done.stderr
    assert time.monotonic() - began < 30
    assert not (tmp_path / "r.json").exists()


@pytest.mark.usefixtures("no_leftovers")
def test_a_queued_duet_does_not_overwrite_the_out_written_while_it_waited(
    tmp_path: Path,
) -> None:
    out, log_path = tmp_path / "r.json", tmp_path / "queued.log"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, os.environ["DUET_LOCK"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    with log_path.open("w") as log:
        queued = start(
            "run", "--baseline", "true", "--candidate", "true", "--wait", "--out", str(out),
            *COMMON, tag=uuid.uuid4().hex, stderr=log,
        )  # fmt: skip
    try:
        wait_for(lambda: "waiting for it" in log_path.read_text(), "the duet to queue")
        out.write_text('{"written by": "the duet it waited for"}\n')  # the first one's results
        holder.communicate("")  # the first one finishes: the lock is free
        done = finish(queued)
    finally:
        for p in (holder, queued):
            if p.poll() is None:
                p.kill()
            p.communicate()
    stderr = log_path.read_text()
    assert done.returncode == 2, stderr
    assert "was written by another duet while this one waited for it" in stderr
    assert "its own --out" in stderr
    assert out.read_text() == '{"written by": "the duet it waited for"}\n'


def test_as_root_another_users_lock_file_is_replaced_not_obeyed(tmp_path: Path) -> None:
    if not is_root():
        skip_or_fail("needs root: the lock of a root duet")
    directory = Path("/var/tmp") / f"dlock-{uuid.uuid4().hex[:12]}"
    directory.mkdir(mode=0o1777)
    os.chmod(directory, 0o1777)
    path = directory / "duet.lock"
    # nobody creates the lock file world-readable and holds its flock forever.
    squat = subprocess.Popen(
        ["flock", "-x", str(path), "sh", "-c", "echo held; exec cat"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, user=65534, group=65534,
    )  # fmt: skip
    try:
        assert squat.stdout is not None
        assert squat.stdout.readline() == "held\n"
        assert path.stat().st_uid == 65534
        with duet_lock.acquire(path=str(path), command="duet run --root"):
            st = path.stat()
            assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
            # And nobody cannot open it, so cannot hold it.
            probe = subprocess.run(
                ["sh", "-c", 'exec 3< "$1"', "sh", str(path)],
                user=65534, group=65534, capture_output=True, text=True, check=False,
            )  # fmt: skip
            assert probe.returncode != 0
            assert "Permission denied" in probe.stderr
    except EnvironmentNotReady as e:
        pytest.fail(f"root was kept from measuring by another user's lock: {e}")
    finally:
        squat.kill()
        squat.communicate()
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def test_as_root_its_own_open_lock_file_is_closed_to_others(tmp_path: Path) -> None:
    if not is_root():
        skip_or_fail("needs root: the lock of a root duet")
    path = tmp_path / "duet.lock"
    path.touch(mode=0o666)
    os.chmod(path, 0o666)  # as a duet before this change left it
    inode = path.stat().st_ino
    with duet_lock.acquire(path=str(path), command="duet run --root"):
        st = path.stat()
        assert (st.st_ino, st.st_uid, st.st_mode & 0o777) == (inode, 0, 0o600)
