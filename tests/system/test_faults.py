"""Faults while measuring, end to end through ``python -m duet_bench``: real processes, real cgroups
and namespaces (as root), real signals.

Each test checks the promise of the reliability issue for its fault: the run (or the command)
fails cleanly with a clear message, what was measured before is kept in a valid results file,
and nothing is left behind: no process (every process a test starts carries a per-test tag in
its environment, which survives double forks and ``setsid``), no cgroup, no barrier file, no
work directory of that duet. Side faults that already have end-to-end tests (a side exiting
non-zero, killed by a signal, never reaching the barrier) are in ``tests/integration/test_run.py``.

No assertion here depends on how fast the machine is: where a test must act in the middle of
a measurement, the benchmark blocks on a gate file the test controls.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from duet_bench import results
from duet_bench.errors import EnvironmentNotReady
from duet_bench.isolation import pid_alive
from duet_bench.isolation.cgroup_v1 import probe_v1
from duet_bench.isolation.cgroup_v2 import probe_v2
from duet_bench.lock import DEFAULT_PATH, FALLBACK_PATH, acquire, lock_path, parse_holder
from tests.conftest import is_root
from tests.system.conftest import (
    CGROUP_ROOT,
    TAG_VARIABLE,
    duet_cgroup_dirs,
    skip_or_fail,
    tagged_processes,
)

# Also run in the guest tier: under sudo the sides run as the invoking user (SUDO_UID).
pytestmark = [pytest.mark.guest, pytest.mark.usefixtures("no_leftovers")]

#: Only for duet to reach its end when a test goes wrong; never a measurement. Generous: in the
#: guest tier (QEMU under TCG, 10-20x slower) on a loaded host, killing a fork bomb's 4096
#: processes alone took over a minute.
PATIENCE_S = 600.0


# --------------------------------------------------------------------------------------------
# Helpers


@dataclass(frozen=True, slots=True)
class Finished:
    pid: int
    returncode: int
    stdout: str
    stderr: str


def duet_env(tag: str, *, without_sudo: bool = False) -> dict[str, str]:
    env = {**os.environ, TAG_VARIABLE: tag}
    if without_sudo:
        # duet runs git as the invoking user (SUDO_UID, docs/isolation.md): a repository in
        # pytest's root-only tmp_path is not theirs to read. A test about something else runs
        # duet as plain root.
        env = {k: v for k, v in env.items() if not k.startswith("SUDO_")}
    return env


def start(
    *args: str,
    tag: str,
    cwd: Path | None = None,
    stderr: int | IO[Any] = subprocess.PIPE,
    new_session: bool = False,
    without_sudo: bool = False,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "duet_bench", *args],
        cwd=cwd,
        env=duet_env(tag, without_sudo=without_sudo),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=new_session,
    )


def finish(popen: subprocess.Popen[str]) -> Finished:
    try:
        out, err = popen.communicate(timeout=PATIENCE_S)
    except subprocess.TimeoutExpired:
        popen.kill()
        out, err = popen.communicate()
        pytest.fail(f"duet did not end within {PATIENCE_S:g} s:\n{err}")
    return Finished(popen.pid, popen.returncode, out or "", err or "")


def duet(*args: str, tag: str, cwd: Path | None = None, without_sudo: bool = False) -> Finished:
    return finish(start(*args, tag=tag, cwd=cwd, without_sudo=without_sudo))


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll until ``condition`` holds (a state, not a time: the bound only ends a broken test)."""
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


def left_behind(pid: int) -> list[str]:
    """Every cgroup, barrier file and work directory of the duet whose pid is ``pid``."""
    prefix = f"duet-{pid}-"
    found = [p for p in duet_cgroup_dirs() if os.path.basename(p).startswith(prefix)]
    for directory in ("/dev/shm", "/var/tmp"):
        with contextlib.suppress(FileNotFoundError):
            found += [
                os.path.join(directory, n) for n in os.listdir(directory) if n.startswith(prefix)
            ]
    return sorted(found)


def assert_nothing_left(pid: int, tag: str) -> None:
    assert left_behind(pid) == []
    # A killed process can be a zombie for a moment (the reaper is init): pid_alive says dead.
    deadline = time.monotonic() + 5
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tagged_processes(tag) == []


def hanging(tag: str) -> bool:
    """Whether a side of this test sits in the ``sleep 1000`` of :func:`gated`."""
    for pid in tagged_processes(tag):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x001000\x00":
                return True
    return False


def runs_in(path: Path) -> int:
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    return sum(len(b["runs"]) for b in doc.get("benchmarks", []))


def clean(done: Finished) -> None:
    assert "Traceback" not in done.stderr, done.stderr


@pytest.fixture
def cgroups() -> None:
    """Root with a usable cgroup hierarchy, else skip with the reason."""
    if not is_root():
        skip_or_fail("needs root: cgroups and namespaces")
    v1, v2 = probe_v1(CGROUP_ROOT), probe_v2(CGROUP_ROOT)
    if not (v1.ok or v2.ok):
        skip_or_fail(f"no usable cgroups: v1: {v1.reason}; v2: {v2.reason}")


ISOLATION = "cgroup" if is_root() else "affinity"
#: None of these tests is about a verdict: their A/A runs never fail on one (exit 0 or 3).
QUICK = ("--warmup", "0", "--quiet", "--reps", "1000", "--fail-on", "never")


# --------------------------------------------------------------------------------------------
# Benchmarks that misbehave


@pytest.mark.root
@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_a_fork_bomb_is_bounded_by_pids_max_and_cleaned_up(tmp_path: Path, tag: str) -> None:
    # 600 blocked readers of a FIFO: dash forks them without an exec each, so the bomb reaches
    # pids.max (--pids-limit 256, duet's own 3 or 4 tasks of the side among them) in seconds, and
    # every one of them stays alive until killed. A low limit keeps the test short where forking
    # is slow: reaching the default 4096 took about 28 s in the guest (TCG), where it once did not
    # within a 60 s timeout; the generous iteration timeout stays for that guest.
    bomb = (
        'cd "$TMPDIR" && mkfifo never && exec 3<>never && i=0 && '
        "while [ $i -lt 600 ]; do read x <&3 & i=$((i+1)); done"
    )
    out = tmp_path / "r.json"
    done = duet(
        "run", "--baseline", "true", "--candidate", bomb, "--name", "bomb", "--runs", "2",
        "--iterations", "1", "--isolation", "cgroup", "--max-failures", "0", "--out", str(out),
        "--pids-limit", "256", "--timeout", "300", *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 3, done.stderr
    assert "pids.max" in done.stderr
    doc = results.load(out)
    assert doc.benchmarks[0].settings.pids_max == 256
    run = doc.benchmarks[0].runs[0]
    assert run.status == "pids-limit"
    assert run.reason is not None
    assert run.reason.startswith("candidate: reached the limit of 256 processes (pids.max)")
    # The reason says how a benchmark that needs more raises the limit.
    assert "--pids-limit N, or pids_limit = N" in run.reason
    assert run.candidate.hit_limit == "pids"
    assert_nothing_left(done.pid, tag)


@pytest.mark.root
@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_a_memory_hog_is_out_of_memory_with_the_kernels_count(tmp_path: Path, tag: str) -> None:
    hog = f"{sys.executable} -c 'x = b\"x\" * (256 << 20)'"
    out = tmp_path / "r.json"
    done = duet(
        "run", "--baseline", "true", "--candidate", hog, "--name", "hog", "--runs", "2",
        "--iterations", "1", "--memory-limit", "64M", "--isolation", "cgroup",
        "--max-failures", "0", "--out", str(out), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 3, done.stderr
    run = results.load(out).benchmarks[0].runs[0]
    assert run.status == "out-of-memory"
    assert run.candidate.hit_limit == "memory"
    reason = run.candidate.reason or ""
    assert "memory limit of 64.0 MiB" in reason
    count = re.search(r"the kernel's OOM killer killed (\d+) process", reason)
    assert count is not None, reason
    assert int(count.group(1)) >= 1
    assert_nothing_left(done.pid, tag)


@pytest.mark.root
@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_a_detached_daemon_is_killed_with_its_run(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    # Double fork (the subshell exits at once, the daemon is re-parented to init) and setsid
    # (a new session and process group): neither the process tree nor the process group
    # holds it any more, the cgroup does.
    marker = f"duet-daemon-{uuid.uuid4().hex}"
    pids = shared_dir / "pids"
    # The iteration waits until its daemon has written its pid: the iteration (and the run)
    # could otherwise end and kill the daemon before it wrote it (2 of 4 were seen once).
    count = f"$([ -e {pids} ] && wc -l < {pids} || echo 0)"
    daemon = (
        f"n={count}; "
        f"( setsid sh -c 'echo $$ >> {pids}; sleep 1000; true' {marker} & ); "
        f'while [ "{count}" -le "$n" ]; do sleep 0.01; done; '
        f"grep SigBlk /proc/self/status >> {shared_dir / 'masks'}"
    )
    out = tmp_path / "r.json"
    done = duet(
        "run", "--baseline", "true", "--candidate", daemon, "--name", "daemon", "--runs", "2",
        "--iterations", "2", "--isolation", "cgroup", "--out", str(out),
        *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    assert all(r.ok for r in results.load(out).benchmarks[0].runs)
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 4  # one per iteration: 2 runs x 2 iterations
    # The orchestrator holds signals while it forks a side; the side must not inherit that.
    assert set((shared_dir / "masks").read_text().split()) == {"SigBlk:", "0000000000000000"}
    # The pids it wrote are its PID namespace's (docs/isolation.md): look for the daemon by
    # its marker in the host's /proc instead.
    survivors = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if marker.encode() in cmdline and pid_alive(int(entry)):
                survivors.append(int(entry))
    assert survivors == []
    assert_nothing_left(done.pid, tag)


def test_a_side_that_hangs_inside_an_iteration_times_out_with_its_whole_tree(
    tmp_path: Path, tag: str
) -> None:
    # The first iteration of each run is quick; the second hangs in a process tree (a
    # background sleeper and a foreground one), which the timeout must end entirely.
    # --timeout 5, not 1: in the runner-like guest (QEMU TCG, 4 vCPUs on 2 host CPUs) a
    # healthy side sometimes made no barrier progress for 1 s and was blamed instead.
    hang = 'if [ -e "$TMPDIR/once" ]; then sleep 1000 & sleep 1000; else touch "$TMPDIR/once"; fi'
    out = tmp_path / "r.json"
    done = duet(
        "run", "--baseline", "true", "--candidate", hang, "--name", "hang", "--runs", "2",
        "--iterations", "3", "--timeout", "5", "--isolation", ISOLATION, "--max-failures", "0",
        "--out", str(out), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 3, done.stderr
    run = results.load(out).benchmarks[0].runs[0]
    assert run.status == "timeout"
    assert run.reason is not None
    assert run.reason.startswith("candidate: no barrier progress for 5 s")
    assert run.candidate.hit_limit == "timeout"
    # Whichever noticed first (its own barrier wait, or the orchestrator's watchdog), the
    # baseline is a consequence, not the cause.
    assert run.baseline.reason in (
        "stopped after waiting for the other side at the barrier",
        "stopped because the other side timed out",
    )
    # Measured before the hang (the baseline went one iteration further): kept.
    assert len(run.candidate.iterations_ns) == 1
    assert len(run.baseline.iterations_ns) == 2
    assert_nothing_left(done.pid, tag)


@pytest.mark.root
@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_a_side_cannot_see_the_other_sides_tmp(tmp_path: Path, tag: str) -> None:
    # The baseline writes into its /tmp in every iteration; from the second iteration on the
    # barrier guarantees the baseline's first write happened before the candidate looks. A
    # shared /tmp would fail the candidate, deterministically.
    secret = f"/tmp/duet-private-{uuid.uuid4().hex}"
    out = tmp_path / "r.json"
    done = duet(
        "run", "--baseline", f"echo baseline > {secret} && test -s {secret}",
        "--candidate", f"if [ -e {secret} ]; then echo saw the baseline file >&2; exit 1; fi",
        "--name", "private tmp", "--runs", "2", "--iterations", "3", "--isolation", "cgroup",
        "--max-failures", "0", "--out", str(out), *QUICK, tag=tag,
        # Started from a directory under /tmp (a checkout there), duet keeps the host's /tmp for
        # the sides, which need it to find their files (docs/isolation.md).
        cwd=Path("/"),
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    assert all(r.ok for r in results.load(out).benchmarks[0].runs)
    assert not os.path.exists(secret)  # nor did it land in the host's /tmp
    assert_nothing_left(done.pid, tag)


# --------------------------------------------------------------------------------------------
# The orchestrator interrupted or killed


def gated(gate: Path) -> str:
    """A command that takes a moment until ``gate`` exists, then hangs (until killed).

    ``gate`` must be in ``shared_dir``: under ``sudo`` the sides run as the invoking user, who
    cannot look into pytest's 0700 ``tmp_path`` (nor, with a private /tmp, see it at all)."""
    return f"if [ -e {gate} ]; then sleep 1000; else sleep 0.02; fi"


@pytest.mark.parametrize(
    ("signum", "code", "to_group"),
    [
        # Ctrl-C in a terminal (and a cancelled CI job) signals the whole process group.
        pytest.param(signal.SIGINT, 130, True, id="SIGINT-group"),
        # The other two take the same way out of the measuring loop and through the same
        # cleanup of the sides' cgroups: the guest (cgroup v2, under sudo) runs the group's
        # variant only, the host all three (each variant costs about 24 s of TCG there).
        pytest.param(signal.SIGTERM, 143, False, id="SIGTERM", marks=pytest.mark.host_only),
        pytest.param(signal.SIGHUP, 129, False, id="SIGHUP", marks=pytest.mark.host_only),
    ],
)
def test_an_interrupted_orchestrator_cleans_up_and_keeps_its_runs(
    tmp_path: Path, tag: str, shared_dir: Path, signum: signal.Signals, code: int, to_group: bool
) -> None:
    gate, out = shared_dir / "gate", tmp_path / "r.json"
    popen = start(
        "run", "--baseline", gated(gate), "--candidate", gated(gate), "--name", "gated",
        "--runs", "10", "--iterations", "3", "--isolation", ISOLATION, "--out", str(out),
        *QUICK, tag=tag, new_session=to_group,
    )  # fmt: skip
    try:
        wait_for(lambda: runs_in(out) >= 1, "the first run to be written")
        gate.touch()  # every later iteration hangs: the signal lands in the middle of a run
        kept = runs_in(out)
        if to_group:
            os.killpg(popen.pid, signum)
        else:
            popen.send_signal(signum)
        done = finish(popen)
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.communicate()
    clean(done)
    assert done.returncode == code, done.stderr
    assert f"interrupted by {signum.name}" in done.stderr
    doc = results.load(out)
    assert doc.state["complete"] is False
    assert doc.state["stopped"] == f"interrupted by {signum.name} while measuring 'gated'"
    runs = doc.benchmarks[0].runs
    assert len(runs) >= kept >= 1
    assert all(r.ok for r in runs)
    assert_nothing_left(done.pid, tag)
    # Its report says it is incomplete, and exits 3, instead of "1 no change" and 0.
    # Plain root: under sudo (the guest) a file the user names is opened as that user, and
    # pytest's tmp_path is root's alone.
    report = duet("report", str(out), tag=tag, without_sudo=True)
    assert report.returncode == 3, report.stderr
    assert f"interrupted after {len(runs)} of 10 runs" in report.stdout


def _subtree_controls() -> dict[Path, set[str]]:
    """The controllers enabled for the children of the cgroup2 root and of its first level."""
    root = Path("/sys/fs/cgroup")
    files = [root / "cgroup.subtree_control", *root.glob("*/cgroup.subtree_control")]
    out: dict[Path, set[str]] = {}
    for f in files:
        with contextlib.suppress(OSError):
            out[f] = set(f.read_text().split())
    return out


def _turn_off_what_was_turned_on(before: dict[Path, set[str]]) -> None:
    # Deepest first: a parent's controller cannot go while a child still enables it.
    for f in sorted(before, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            for ctrl in set(f.read_text().split()) - before[f]:
                f.write_text(f"-{ctrl}")


def test_a_killed_orchestrator_is_cleaned_up_by_the_next_duet(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    """A SIGKILLed duet leaves its sides, cgroups, barrier file and work directory; the next duet
    removes them. On cgroup v2 the killed duet also leaves the cpu and cpuset controllers it
    turned on in the root's and its slice's subtree_control, which nobody can attribute to it
    afterwards (the next duet leaves controllers alone: others may use them); the test turns
    them off again itself, so that the leftover check sees the machine as it found it."""
    controls = _subtree_controls()
    try:
        _killed_and_cleaned(tmp_path, tag, shared_dir)
    finally:
        _turn_off_what_was_turned_on(controls)


def _killed_and_cleaned(tmp_path: Path, tag: str, shared_dir: Path) -> None:
    gate, out = shared_dir / "gate", tmp_path / "r.json"
    popen = start(
        "run", "--baseline", gated(gate), "--candidate", gated(gate), "--runs", "10",
        "--iterations", "3", "--isolation", ISOLATION, "--out", str(out), *QUICK, tag=tag,
    )  # fmt: skip
    try:
        wait_for(lambda: runs_in(out) >= 1, "the first run to be written")
        gate.touch()
        wait_for(lambda: hanging(tag), "a side to hang in an iteration")
    finally:
        popen.kill()
        popen.communicate()
    leftovers = left_behind(popen.pid)
    # What SIGKILL leaves: the sides, their cgroups, the barrier file, the work directory.
    assert any(p.startswith("/var/tmp/") for p in leftovers)
    assert any(p.startswith("/dev/shm/") for p in leftovers)
    if ISOLATION == "cgroup":
        assert any(p.startswith(CGROUP_ROOT) for p in leftovers)
    # Written after every run, atomically: valid, with what was measured.
    assert len(results.load(out).benchmarks[0].runs) >= 1
    # The kernel released its lock; its description stays, stale, and must not block.
    stale = parse_holder(Path(os.environ["DUET_LOCK"]).read_bytes())
    assert stale is not None
    assert stale.pid == popen.pid

    done = duet(
        "run", "--baseline", "true", "--candidate", "true", "--runs", "2", "--iterations", "1",
        "--isolation", ISOLATION, "--out", str(tmp_path / "next.json"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    assert_nothing_left(popen.pid, tag)
    if f"duet-{popen.pid}-" not in done.stderr:
        # The machine is shared: another duet that started in between may have removed them
        # first (and said so in its own output). Then there is nothing left to check here.
        skip_or_fail("another duet on this machine removed the leftovers before ours could")
    assert "removed what an earlier duet that did not finish left behind" in done.stderr


# --------------------------------------------------------------------------------------------
# Two duets at once


def test_a_second_duet_refuses_or_waits_for_the_first(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    gate = shared_dir / "gate"
    lock = os.environ["DUET_LOCK"]  # this test run's own lock (tests/conftest.py)
    blocked = f"while [ ! -e {gate} ]; do sleep 0.02; done"
    common = ("--runs", "2", "--iterations", "1", "--isolation", ISOLATION, *QUICK)
    first = start(
        "run", "--baseline", blocked, "--candidate", blocked, "--name", "first",
        "--out", str(tmp_path / "first.json"), *common, tag=tag,
    )  # fmt: skip
    waiting: list[subprocess.Popen[str]] = []
    try:

        def holder_is_first() -> bool:
            with open(lock, "rb") as f:
                holder = parse_holder(f.read())
            return holder is not None and holder.pid == first.pid

        wait_for(holder_is_first, "the first duet to take the lock")

        # Without --wait: refused at once, naming the first, nothing written.
        second = duet(
            "run", "--baseline", "true", "--candidate", "true",
            "--out", str(tmp_path / "second.json"), *common, tag=tag,
        )  # fmt: skip
        clean(second)
        assert second.returncode == 3, second.stderr
        assert f"another duet (pid {first.pid}, `duet run --baseline" in second.stderr
        assert "destroy each other's measurements" in second.stderr
        assert "--wait" in second.stderr
        assert not (tmp_path / "second.json").exists()

        # With --wait: queued; one of them is interrupted while it waits.
        for name in ("third", "fourth"):
            args = ("run", "--baseline", "true", "--candidate", "true", "--wait", "--out")
            with (tmp_path / f"{name}.log").open("w") as log:
                waiting.append(
                    start(*args, str(tmp_path / f"{name}.json"), *common, tag=tag, stderr=log)
                )
        third, fourth = waiting
        for name in ("third", "fourth"):
            log_path = tmp_path / f"{name}.log"
            wait_for(lambda p=log_path: "waiting for it" in p.read_text(), f"{name} to wait")
        assert third.poll() is None
        assert not (tmp_path / "third.json").exists()
        fourth.send_signal(signal.SIGTERM)
        assert finish(fourth).returncode == 143
        fourth_log = (tmp_path / "fourth.log").read_text()
        assert "interrupted by SIGTERM" in fourth_log
        assert "Traceback" not in fourth_log
        assert not (tmp_path / "fourth.json").exists()

        gate.touch()
        done_first = finish(first)
        assert done_first.returncode == 0, done_first.stderr
        assert finish(third).returncode == 0
        third_log = (tmp_path / "third.log").read_text()
        assert f"another duet (pid {first.pid}," in third_log
        assert "Traceback" not in third_log
    finally:
        for p in (first, *waiting):
            if p.poll() is None:
                p.kill()
            p.communicate()
    first_doc = results.load(tmp_path / "first.json")
    third_doc = results.load(tmp_path / "third.json")
    assert first_doc.state["complete"] is True
    assert third_doc.state["complete"] is True
    # It measured after the first had finished (ISO-8601 UTC times compare as text).
    assert third_doc.created is not None
    assert third_doc.created >= first_doc.state["updated"]
    for pid in (first.pid, *(p.pid for p in waiting)):
        assert_nothing_left(pid, tag)


def lock_is_free(path: Path) -> bool:
    """Whether another open file description could take the lock now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


@pytest.mark.host_only  # in process: no cgroup, no sudo, no side
def test_a_killed_holder_never_blocks_and_its_stale_text_is_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "duet.lock"
    code = (
        "import sys, duet_bench.lock\n"
        "duet_bench.lock.acquire(path=sys.argv[1], command='duet run --killed')\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "held\n"
        with pytest.raises(EnvironmentNotReady, match=rf"pid {child.pid}, `duet run --killed`"):
            acquire(path=str(path))
    finally:
        child.kill()
        child.communicate()
    stale = parse_holder(path.read_bytes())
    assert stale is not None
    assert stale.pid == child.pid
    with acquire(path=str(path), command="duet run --next") as held:
        assert held.holder.pid == os.getpid()
        assert parse_holder(path.read_bytes()) == held.holder
        assert not lock_is_free(path)
    assert lock_is_free(path)
    assert path.read_bytes() == b""  # a clean release leaves no text behind


@pytest.mark.host_only  # in process: no cgroup, no sudo, no side
def test_nested_acquisitions_in_one_process_share_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "duet.lock"
    outer = acquire(path=str(path))
    inner = acquire(path=str(path))
    inner.release()
    inner.release()  # idempotent
    assert not lock_is_free(path)
    outer.release()
    assert lock_is_free(path)


@pytest.mark.host_only  # in process: no cgroup, no sudo, no side
def test_the_lock_is_never_taken_through_a_symlink_or_a_fifo(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "duet.lock"
    link.symlink_to(victim)
    with pytest.raises(EnvironmentNotReady, match="it is a symbolic link"):
        acquire(path=str(link))
    assert victim.read_text() == "precious"
    fifo = tmp_path / "fifo.lock"
    os.mkfifo(fifo)
    with pytest.raises(EnvironmentNotReady, match="not a regular file"):
        acquire(path=str(fifo))


@pytest.mark.host_only  # in process: no cgroup, no sudo, no side
def test_duet_lock_chooses_the_lock_file() -> None:
    assert lock_path({"DUET_LOCK": "/somewhere/duet.lock"}) == "/somewhere/duet.lock"
    assert lock_path({"DUET_LOCK": ""}) in (DEFAULT_PATH, FALLBACK_PATH)
    assert lock_path({}) in (DEFAULT_PATH, FALLBACK_PATH)
