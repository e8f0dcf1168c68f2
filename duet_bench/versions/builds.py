"""Builds: a command through ``/bin/sh`` in a worktree, its log, its stamp, stopping it.

Plain ``subprocess``: a build is the user's command, not a git operation, and it needs what
only ``Popen`` gives (its own process group, output straight to a file, another user).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from duet_bench import files
from duet_bench.errors import VersionError
from duet_bench.isolation import RunAs
from duet_bench.results import SideName
from duet_bench.versions.git import clean_environment
from duet_bench.versions.slots import Slot
from duet_bench.versions.version import Version

log = logging.getLogger(__name__)

#: Lines of the build log a failure message shows.
TAIL_LINES = 40
#: Version of the stamp file format; a stamp of another version is not trusted.
STAMP_FORMAT = 1
#: After SIGTERM, how long a build's processes get to exit before SIGKILL.
KILL_GRACE_S = 2.0


class BuildFailed(VersionError):
    """A build command failed or timed out (exit 3). The message holds the log tail; the
    attributes let a report show it on its own."""

    def __init__(
        self,
        message: str,
        *,
        fix: str,
        side: SideName,
        build_exit_code: int | None,
        log_path: Path,
        tail: str,
    ) -> None:
        super().__init__(message, fix=fix)
        self.side = side
        # Not `exit_code`: that is duet's own exit code (3), which the CLI reads.
        self.build_exit_code = build_exit_code  # None: timed out; negative: killed by a signal
        self.log_path = log_path
        self.tail = tail


def log_path(side: SideName, slot: Slot, log_dir: Path | None) -> Path:
    """Where the build log of ``side`` goes: ``<log_dir>/build-<side>.log``, else beside the
    stamp (and removed with the worktree)."""
    target = (log_dir / f"build-{side}.log") if log_dir else slot.stamp_dir / "build.log"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise VersionError(
            f"cannot create the log directory {target.parent}: {e.strerror or e}",
            fix="choose a writable results directory (--out)",
        ) from None
    return target


def stamp_matches(slot: Slot, command_sha: str) -> bool:
    """Whether the slot's stamp says this command already succeeded at this commit."""
    try:
        stamp = json.loads((slot.stamp_dir / "stamp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(stamp, dict)
        and stamp.get("format") == STAMP_FORMAT
        and stamp.get("commit") == slot.commit
        and stamp.get("command_sha256") == command_sha
    )


def remove_stamp(slot: Slot) -> None:
    """Before a build: an interrupted or failed build must not be taken for a finished one."""
    with contextlib.suppress(FileNotFoundError):
        (slot.stamp_dir / "stamp.json").unlink()


def reuse_log(version: Version, slot: Slot, log_path: Path) -> None:
    """Write the log of a skipped build: a note, then the earlier build's log."""
    previous = slot.stamp_dir / "build.log"
    if log_path == previous:
        return
    note = (
        f"# duet: the {version.side} ({version.ref} = {version.commit}) reuses an earlier "
        "build of this commit with the same command; its log follows.\n"
    )
    try:
        body = previous.read_bytes()
    except OSError:
        body = b"# duet: (the earlier build's log is gone)\n"
    with open(log_path, "wb") as out:
        out.write(note.encode())
        out.write(body)


def run_build(
    version: Version,
    command: str,
    log_path: Path,
    timeout_s: float | None,
    run_as: RunAs | None,
) -> float:
    """Run ``command`` in ``version.directory``, output to ``log_path``; its duration in
    seconds.

    Raises
    ------
    BuildFailed
        A non-zero exit, a signal or the timeout.
    """
    env = clean_environment()
    env.update(
        DUET_SIDE=version.side,
        DUET_VERSION_DIR=str(version.directory),
        PWD=str(version.directory),
    )
    who: dict[str, Any] = {}
    if run_as is not None:
        env = run_as.environment(env)
        who = {"user": run_as.uid, "group": run_as.gid, "extra_groups": list(run_as.groups)}
    header = (
        f"# duet build: {version.side}, {version.ref} = {version.commit}\n"
        f"# directory: {version.directory}\n# command: {command}\n"
        + (f"# user: {run_as.name} (uid {run_as.uid})\n" if run_as else "")
    )
    log.info("%s: building %s: %s", version.side, version.ref, command)
    t0 = time.monotonic()
    # The output goes straight to the file, not through a pipe: a background process the
    # build leaves behind (a compiler server) keeps a pipe open and would hang the read.
    with open(log_path, "wb") as out:
        out.write(header.encode())
        out.flush()
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=version.directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Its own process group, so that a timeout or a signal stops the whole build
            # (make and its compilers), not only the shell.
            start_new_session=True,
            **who,
        )
        try:
            returncode: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            returncode = None
        except BaseException:
            # SIGINT/SIGTERM arrive as an exception (the CLI's handler): the build must
            # not outlive us.
            _stop_group(proc)
            raise
        if _group_alive(proc.pid):
            log.warning(
                "the %s build left processes running; stopping them (they would disturb "
                "the measurement)",
                version.side,
            )
            _stop_group(proc)
    duration_s = time.monotonic() - t0
    if returncode != 0:
        raise _failure(version, returncode, log_path, timeout_s)
    return duration_s


def _failure(
    version: Version, returncode: int | None, log_path: Path, timeout_s: float | None
) -> BuildFailed:
    tail = _tail(log_path, TAIL_LINES)
    if returncode is None:
        what = f"timed out after {timeout_s:g} s and was stopped"
    elif returncode < 0:
        what = f"was killed by {signal.Signals(-returncode).name}"
        if -returncode == signal.SIGKILL:
            what += " (out of memory?)"
    else:
        what = f"failed with exit code {returncode}"
    return BuildFailed(
        f"the build of the {version.side} ({version.ref} = {version.commit[:12]}) {what}; "
        f"log: {log_path}\n--- last lines of the build log ---\n{tail}",
        fix=(
            "fix the build command or the code at that commit; to debug it where it ran, "
            "re-run with --keep-worktrees and run the command in "
            f"{version.directory} with DUET_SIDE={version.side}"
        ),
        side=version.side,
        build_exit_code=returncode,
        log_path=log_path,
        tail=tail,
    )


def write_stamp(
    slot: Slot,
    command: str,
    command_sha: str,
    log_path: Path,
    duration_s: float,
    cache_dir: Path,
) -> None:
    """Record a successful build (and keep a copy of its log) beside the worktree."""
    stamp = {
        "format": STAMP_FORMAT,
        "commit": slot.commit,
        "command_sha256": command_sha,
        "command": command,
        "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "duration_s": round(duration_s, 3),
    }
    path = slot.stamp_dir / "stamp.json"
    try:
        slot.stamp_dir.mkdir(parents=True, exist_ok=True)
        if log_path != slot.stamp_dir / "build.log":
            shutil.copyfile(log_path, slot.stamp_dir / "build.log")
        files.write_atomic(path, json.dumps(stamp, indent=1) + "\n")
    except OSError as e:
        reason = e.strerror or str(e)
        raise VersionError(
            f"the build succeeded but its stamp {path} could not be written: {reason}",
            fix=f"free space in {cache_dir} (or set XDG_CACHE_HOME), then run again",
        ) from None


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: orphans of the
    build are reparented to PID 1, which in a container may never reap them, and
    ``killpg(pgid, 0)`` succeeds on zombies."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    if not entries:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the build's process group, SIGKILL what is left after a grace period, reap."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.02)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)


def _tail(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 200 * lines))
            data = f.read()
    except OSError:
        return "(the build log cannot be read)"
    text = data.decode("utf-8", "replace").splitlines()
    if size > 200 * lines and text:
        text = text[1:]  # the first line read is probably cut
    return "\n".join(text[-lines:])
