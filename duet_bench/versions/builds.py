"""Builds: a command through ``/bin/sh`` in a worktree, its log, its stamp, stopping it.

A build is the user's command, not a git operation: it runs through the isolation backend, in
a container of its own that is killed, with everything the build left running, when it ends;
as the user the sides run as, without the CI's secrets. The stamps live in that user's cache
and are read and written as that user (docs/isolation.md, "What runs as root").
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Collection
from pathlib import Path
from typing import IO

from duet_bench import dirfd, files
from duet_bench.errors import VersionError
from duet_bench.isolation import RunAs
from duet_bench.isolation.jobs import run_job
from duet_bench.isolation.privileges import allowed_environment, call_as
from duet_bench.results import SideName
from duet_bench.versions.git import clean_environment
from duet_bench.versions.slots import Slot
from duet_bench.versions.version import Version

log = logging.getLogger(__name__)

#: Lines of the build log a failure message shows.
TAIL_LINES = 40
#: Version of the stamp file format; a stamp of another version is not trusted.
STAMP_FORMAT = 1


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
        dirfd.make_directories(target.parent)
    except OSError as e:
        raise VersionError(
            f"cannot create the log directory {target.parent}: {e.strerror or e}",
            fix=files.fix_for(e, "choose a writable results directory (--out)"),
        ) from None
    return target


def stamp_matches(slot: Slot, command_sha: str, run_as: RunAs | None = None) -> bool:
    """Whether the slot's stamp says this command already succeeded at this commit. The stamp
    is read as ``run_as``, whose cache it is (docs/isolation.md, "What runs as root")."""
    path = slot.stamp_dir / "stamp.json"
    try:
        stamp = json.loads(call_as(run_as, lambda: path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False
    return (
        isinstance(stamp, dict)
        and stamp.get("format") == STAMP_FORMAT
        and stamp.get("commit") == slot.commit
        and stamp.get("command_sha256") == command_sha
    )


def remove_stamp(slot: Slot, run_as: RunAs | None = None) -> None:
    """Before a build: an interrupted or failed build must not be taken for a finished one."""

    def remove() -> None:
        with contextlib.suppress(FileNotFoundError):
            (slot.stamp_dir / "stamp.json").unlink()

    call_as(run_as, remove)


def reuse_log(version: Version, slot: Slot, log_path: Path, run_as: RunAs | None = None) -> None:
    """Write the log of a skipped build: a note, then the earlier build's log (read as
    ``run_as``: root reading it would copy whatever file a link there names)."""
    previous = slot.stamp_dir / "build.log"
    if log_path == previous:
        return
    note = (
        f"# duet: the {version.side} ({version.ref} = {version.commit}) reuses an earlier "
        "build of this commit with the same command; its log follows.\n"
    )
    try:
        # latin-1: any bytes through the JSON of call_as and back, unchanged.
        body = call_as(run_as, lambda: previous.read_bytes().decode("latin-1")).encode("latin-1")
    except OSError:
        body = b"# duet: (the earlier build's log is gone)\n"
    with new_log(log_path) as out:
        out.write(note.encode())
        out.write(body)


def new_log(path: Path) -> IO[bytes]:
    """``path`` made anew for writing: whatever is there (a link planted in a results directory
    the user or the pull request can write) is replaced, never written through, and no link on
    the way is followed (:func:`duet_bench.dirfd.create_in_place`)."""
    return open(dirfd.create_in_place(path), "wb")


def run_build(
    version: Version,
    command: str,
    log_path: Path,
    timeout_s: float | None,
    run_as: RunAs | None,
    keep_env: Collection[str] = (),
) -> float:
    """Run ``command`` in ``version.directory``, output to ``log_path``; its duration in
    seconds.

    The build runs in a container of its own (:func:`duet_bench.isolation.jobs.run_job`):
    whatever it starts, daemons and ``setsid`` children included, is killed when it ends,
    before anything is measured. The CI's secrets are not in its environment (``keep_env``
    names those kept).

    Raises
    ------
    BuildFailed
        A non-zero exit, a signal or the timeout.
    """
    env = allowed_environment(clean_environment(), keep_env)
    env.update(
        DUET_SIDE=version.side,
        DUET_VERSION_DIR=str(version.directory),
        PWD=str(version.directory),
    )
    if run_as is not None:
        env = run_as.environment(env)
    header = (
        f"# duet build: {version.side}, {version.ref} = {version.commit}\n"
        f"# directory: {version.directory}\n# command: {command}\n"
        + (f"# user: {run_as.name} (uid {run_as.uid})\n" if run_as else "")
    )
    log.info("%s: building %s: %s", version.side, version.ref, command)
    t0 = time.monotonic()
    with new_log(log_path) as out:
        out.write(header.encode())
        out.flush()
        returncode = run_job(
            ["/bin/sh", "-c", command],
            name=f"build-{version.side}",
            what=f"the {version.side} build",
            cwd=str(version.directory),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout_s=timeout_s,
            run_as=run_as,
        )
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
    run_as: RunAs | None = None,
) -> None:
    """Record a successful build (and keep a copy of its log) beside the worktree, as
    ``run_as``, whose cache it is."""
    stamp = {
        "format": STAMP_FORMAT,
        "commit": slot.commit,
        "command_sha256": command_sha,
        "command": command,
        "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "duration_s": round(duration_s, 3),
    }
    path = slot.stamp_dir / "stamp.json"
    copy = slot.stamp_dir / "build.log"
    try:
        body = None if log_path == copy else _read_own(log_path)

        def write() -> None:
            slot.stamp_dir.mkdir(parents=True, exist_ok=True)
            if body is not None:
                files.write_atomic(copy, body)
            files.write_atomic(path, json.dumps(stamp, indent=1) + "\n")

        call_as(run_as, write)
    except OSError as e:
        reason = e.strerror or str(e)
        raise VersionError(
            f"the build succeeded but its stamp {path} could not be written: {reason}",
            fix=f"free space in {cache_dir} (or set XDG_CACHE_HOME), then run again",
        ) from None


def _read_own(path: Path) -> bytes:
    """The bytes of a file duet wrote, read only if it is still a regular file of its own."""
    fd = files.open_existing(path)
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    with open(fd, "rb") as f:
        return f.read()


def _tail(path: Path, lines: int) -> str:
    try:
        fd = files.open_existing(path)
        if fd is None:
            raise FileNotFoundError(str(path))
        with open(fd, "rb") as f:
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
