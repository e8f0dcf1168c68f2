"""One machine-wide lock for measuring: two duets on the same cores destroy each other's
measurements, so only one invocation measures at a time.

The lock is an ``flock`` on a file, held for the whole measurement
(:func:`duet_bench.session.measure` takes it). The file is, first match wins:

1. ``$DUET_LOCK`` when the variable is set and not empty. A test suite points it at a file of
   its own so that it never contends with a real duet on the machine (nor with another test
   run); so can a user who deliberately runs two duets on disjoint cores of a big machine.
   Under sudo (``sudo -E``, ``--preserve-env``) the variable is the invoking user's path, not
   root's: root opens (or creates) that file as the invoking user, without following a final
   link, so a path there leads only where that user may write (issue 33: root truncated a file
   of its own, and made files in a root-only directory, through ``DUET_LOCK``).
2. ``/run/lock/duet.lock`` when it exists or ``/run/lock`` is writable (a tmpfs, empty after a
   reboot; world-writable on Debian and Ubuntu, so root and users share one lock).
3. ``/var/tmp/duet.lock`` otherwise.

The holder writes its pid, start time and command line into the file, so that a second
invocation can say who it is waiting for. It never truncates or writes a file whose text is not
empty and not such a description: a file duet did not write keeps its content (the lock is
held all the same, only a refused invocation cannot name the holder). The kernel releases an
``flock`` when its holder dies, even by SIGKILL: a crashed duet never blocks the next one. Its
text stays behind, stale, and is overwritten by the next holder; a reader therefore trusts the
text only while the pid it names is alive.

The file is opened without following symlinks, and must be a regular file: ``/run/lock`` is
writable by every user, and root must not be tricked into writing through a planted link.

A root duet's lock is root's alone: the file is root-owned with mode 0600, so no other user can
open it and hold its ``flock`` to keep root from measuring (``flock`` works on a read-only
descriptor too). A lock file that another user owns, or that others may open, is replaced
(unlinked and created again) before root locks it: whoever held the old one holds nothing; a
root-owned one others may open (made by an older duet) is closed to them with ``chmod``.
Other users' duets then cannot open the lock and refuse, saying so.

``--wait`` is bounded: ``timeout`` (``--wait-timeout``) seconds, then the same refusal as
without ``--wait``, with how long it waited.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import shlex
import stat
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType

from duet_bench.errors import EnvironmentNotReady
from duet_bench.isolation.model import RunAs
from duet_bench.isolation.privileges import invoking_user_of, open_as
from duet_bench.machine import pid_alive

__all__ = [
    "DEFAULT_PATH",
    "ENV_VARIABLE",
    "FALLBACK_PATH",
    "Holder",
    "MeasureLock",
    "acquire",
    "lock_path",
    "parse_holder",
    "read_holder",
]

log = logging.getLogger(__name__)

ENV_VARIABLE = "DUET_LOCK"
DEFAULT_PATH = "/run/lock/duet.lock"
FALLBACK_PATH = "/var/tmp/duet.lock"
#: The holder text is a single JSON line; anything longer was not written by duet.
_MAX_HOLDER_BYTES = 4096
_COMMAND_CHARS = 120
#: How long a refused invocation re-reads the holder text when it names no live process: the
#: new holder takes the lock a moment before it writes its text.
_SETTLE_S = 0.5


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lock, as the holder wrote it."""

    pid: int
    #: Unix time at which the holder took the lock.
    started: float
    command: str

    def describe(self, now: float | None = None) -> str:
        """``another duet (pid 1234, `duet run ...`, running for 3m12s)``."""
        elapsed = (time.time() if now is None else now) - self.started
        return (
            f"another duet (pid {self.pid}, `{self.command}`, "
            f"running for {_duration(max(0.0, elapsed))})"
        )


def _duration(seconds: float) -> str:
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def lock_path(environ: Mapping[str, str] | None = None) -> str:
    """The lock file this invocation uses (see the module documentation)."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_VARIABLE, "")
    if explicit:
        return os.path.abspath(explicit)
    directory = os.path.dirname(DEFAULT_PATH)
    if os.path.lexists(DEFAULT_PATH) or os.access(directory, os.W_OK | os.X_OK):
        return DEFAULT_PATH
    return FALLBACK_PATH


def parse_holder(data: bytes) -> Holder | None:
    """The holder written in a lock file, or None when ``data`` is empty or not what duet
    writes (the file is world-writable: never trust it further than that)."""
    if not data.strip() or len(data) > _MAX_HOLDER_BYTES:
        return None
    try:
        item = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(item, dict):
        return None
    pid, started, command = item.get("pid"), item.get("started"), item.get("command")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    if isinstance(started, bool) or not isinstance(started, int | float):
        return None
    if not isinstance(command, str) or started != started or abs(started) > 1e12:
        return None
    printable = "".join(c if c.isprintable() else "?" for c in command)
    return Holder(pid=pid, started=float(started), command=_shorten(printable))


def read_holder(path: str) -> Holder | None:
    """The holder named in the lock file at ``path`` (possibly stale), or None. The file
    ``$DUET_LOCK`` names is read as the invoking user under sudo (the module documentation)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = open_as(_named_by_invoker(path), lambda: os.open(path, flags))
    except (OSError, RuntimeError):
        return None
    try:
        return parse_holder(os.pread(fd, _MAX_HOLDER_BYTES + 1, 0))
    except OSError:
        return None
    finally:
        os.close(fd)


def _named_by_invoker(path: str) -> RunAs | None:
    """The user who ran ``sudo duet`` when ``path`` is the lock file their ``$DUET_LOCK``
    names (root must open it as them); None otherwise."""
    explicit = os.environ.get(ENV_VARIABLE, "")
    if not explicit or os.path.abspath(explicit) != path:
        return None
    return invoking_user_of(os.environ)


def _shorten(text: str) -> str:
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 3] + "..."


def _command_line(argv: list[str]) -> str:
    """This invocation's command line as a user would type it."""
    if not argv:
        return "python"
    program = argv[0]
    if os.path.basename(program) == "duet" or program.endswith(
        os.path.join("duet_bench", "__main__.py")
    ):
        words = ["duet", *argv[1:]]
    else:
        words = [os.path.basename(program) or "python", *argv[1:]]
    return _shorten(shlex.join(words))


@dataclass(slots=True)
class _Held:
    """The lock as this process holds it (shared by nested acquisitions)."""

    path: str
    fd: int
    pid: int
    depth: int
    holder: Holder


_guard = threading.Lock()
_held: dict[str, _Held] = {}


class MeasureLock:
    """This process's hold on the measuring lock. ``release`` (or the end of a ``with`` block)
    gives it back; it is idempotent. Nested acquisitions in one process share the lock."""

    def __init__(self, held: _Held) -> None:
        self._held: _Held | None = held

    @property
    def path(self) -> str:
        assert self._held is not None, "released"
        return self._held.path

    @property
    def holder(self) -> Holder:
        assert self._held is not None, "released"
        return self._held.holder

    def release(self) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        with _guard:
            held.depth -= 1
            if held.depth > 0:
                return
            if _held.get(held.path) is held:
                del _held[held.path]
        if held.pid != os.getpid():
            return  # a forked child's copy: the parent still holds the lock
        # Clear our text before unlocking: text left behind is then only ever a crash's.
        if _ours_to_write(held.fd):
            with contextlib.suppress(OSError):
                os.ftruncate(held.fd, 0)
        os.close(held.fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> MeasureLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def acquire(
    *,
    wait: bool = False,
    path: str | None = None,
    command: str | None = None,
    timeout: float | None = None,
) -> MeasureLock:
    """Take the machine-wide measuring lock.

    When another process holds it: without ``wait``, raise :class:`EnvironmentNotReady` naming
    that process; with ``wait``, log once that we wait and block until it is released. The
    wait can be interrupted by a signal handler that raises (``duet_bench.cli`` turns SIGINT,
    SIGTERM and SIGHUP into :class:`duet_bench.errors.Interrupted`). ``command`` describes this
    invocation in the lock file (default: our command line). ``timeout``: with ``wait``, give
    up after that many seconds (raise as without ``wait``); None waits as long as it takes.
    """
    target = lock_path() if path is None else path
    with _guard:
        held = _held.get(target)
        if held is not None and held.pid == os.getpid():
            held.depth += 1
            return MeasureLock(held)
    fd = _open(target)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _settled_holder(fd)
            who = other.describe() if other is not None else "another duet"
            if not wait:
                raise EnvironmentNotReady(
                    f"{who} is measuring on this machine: two duets on the same cores destroy "
                    "each other's measurements",
                    fix=f"wait for it, or pass --wait to queue behind it (lock file {target})",
                ) from None
            log.warning("%s is measuring on this machine; waiting for it to finish (--wait)", who)
            _wait_for(fd, target, timeout)
        holder = Holder(
            pid=os.getpid(),
            started=time.time(),
            command=_shorten(command) if command is not None else _command_line(sys.argv),
        )
        _write_holder(fd, holder)
    except BaseException:
        os.close(fd)
        raise
    held = _Held(path=target, fd=fd, pid=os.getpid(), depth=1, holder=holder)
    with _guard:
        _held[target] = held
    log.debug("took the measuring lock %s", target)
    return MeasureLock(held)


#: How often a bounded wait tries the lock again.
_POLL_S = 0.1


def _wait_for(fd: int, target: str, timeout: float | None) -> None:
    """Block until the ``flock`` on ``fd`` is ours, or raise after ``timeout`` seconds."""
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                other = _settled_holder(fd)
                who = other.describe() if other is not None else "another duet"
                raise EnvironmentNotReady(
                    f"{who} is still measuring on this machine after --wait-timeout {timeout:g} s",
                    fix=f"raise --wait-timeout, or find out why it runs so long (lock file "
                    f"{target})",
                ) from None
            time.sleep(_POLL_S)


def _open(path: str) -> int:
    """The lock file's descriptor (:func:`_open_any`); as root, a lock file that is root's
    alone: another user's is replaced (the module documentation says why). The invoking user's
    ``$DUET_LOCK`` under sudo is opened as that user, and stays theirs."""
    invoker = _named_by_invoker(path)
    if invoker is not None:
        return _open_any(path, invoker)
    fd = _open_any(path)
    if os.geteuid() != 0:
        return fd
    for _ in range(5):
        st = os.fstat(fd)
        if st.st_uid == 0:
            # Ours (perhaps from a duet before 0600): closed to others from now on. Replacing
            # it would let us measure beside a root duet that holds the old one.
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
            return fd
        os.close(fd)
        log.warning(
            "replacing the measuring lock %s, owned by uid %d: a root duet's lock must be "
            "root's alone",
            path,
            st.st_uid,
        )
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        fd = _open_any(path)
    os.close(fd)
    raise EnvironmentNotReady(
        f"cannot make the measuring lock {path} root's alone: it is replaced again and again",
        fix=f"find who recreates it, or set {ENV_VARIABLE} to a file in a directory only root "
        "may write",
    )


def _open_any(path: str, run_as: RunAs | None = None) -> int:
    """Open (creating it if needed) the lock file, as ``run_as`` when given; never through a
    symlink, never anything but a regular file. Read-only when we may not write it: ``flock``
    works on any descriptor, we just cannot leave our description then."""
    root = os.geteuid() == 0 and run_as is None

    def opened() -> int:
        base = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        for _ in range(5):
            try:
                return os.open(path, os.O_RDWR | base)
            except FileNotFoundError:
                try:
                    fd = os.open(
                        path, os.O_RDWR | os.O_CREAT | os.O_EXCL | base, 0o600 if root else 0o666
                    )
                except FileExistsError:
                    continue  # another duet created it in between: open that one
                # Every user's duet must be able to take and describe the lock, whatever our
                # umask; the content is never trusted (parse_holder). Root's is its own.
                with contextlib.suppress(OSError):
                    os.fchmod(fd, 0o600 if root else 0o666)
                return fd
            except PermissionError:
                return os.open(path, os.O_RDONLY | base)
        raise FileNotFoundError(errno.ENOENT, "created and removed again repeatedly", path)

    fd = -1
    try:
        try:
            fd = open_as(run_as, opened)
        except RuntimeError as e:
            raise OSError(errno.EIO, str(e)) from None
        mode = os.fstat(fd).st_mode
    except OSError as e:
        if fd >= 0:
            os.close(fd)
        symlink = e.errno == errno.ELOOP
        reason = "it is a symbolic link" if symlink else (e.strerror or str(e))
        if run_as is not None:
            reason += (
                f" (as {run_as.name}, who ran sudo: {ENV_VARIABLE} is their path, and root "
                "opens it only as they could)"
            )
        raise EnvironmentNotReady(
            f"cannot open the measuring lock {path}: {reason}",
            fix=f"remove {path} if it is not a file duet made, or set {ENV_VARIABLE} to a file "
            "you may write (every duet on this machine must use the same one); a lock file "
            "only root may open is a root duet's: run this duet as root too",
        ) from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise EnvironmentNotReady(
            f"cannot use the measuring lock {path}: it is not a regular file",
            fix=f"remove it, or set {ENV_VARIABLE} to a file you may write",
        )
    return fd


def _ours_to_write(fd: int) -> bool:
    """Whether the lock file's text is empty or a holder's description: what duet wrote. Any
    other content is not duet's to truncate (a file ``$DUET_LOCK`` named by mistake)."""
    try:
        data = os.pread(fd, _MAX_HOLDER_BYTES + 1, 0)
    except OSError:
        return False
    return not data.strip() or parse_holder(data) is not None


def _write_holder(fd: int, holder: Holder) -> None:
    text = json.dumps({"pid": holder.pid, "started": holder.started, "command": holder.command})
    if not _ours_to_write(fd):
        log.warning(
            "the measuring lock file holds text duet did not write: left as it is (the lock is "
            "held all the same); point %s at a file of its own",
            ENV_VARIABLE,
        )
        return
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode() + b"\n", 0)
    except OSError as e:
        # A read-only descriptor (a lock file of another user) or a full disk: the lock is
        # held all the same, only a refused invocation cannot name us.
        log.debug("could not describe ourselves in the lock file: %s", e)


def _settled_holder(fd: int) -> Holder | None:
    """The holder's description, once it names a live process. A holder that just took the
    lock has not written it yet (the old text of a crashed duet may still be there)."""
    deadline = time.monotonic() + _SETTLE_S
    while True:
        try:
            holder = parse_holder(os.pread(fd, _MAX_HOLDER_BYTES + 1, 0))
        except OSError:
            holder = None
        if holder is not None and pid_alive(holder.pid):
            return holder
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
