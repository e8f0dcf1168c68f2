"""A PID namespace with its own ``/proc`` for a side or a build (issue 33, finding 2).

Both sides and the builds run as the invoking user, the uid of the shell that ran ``sudo -E
duet``: in the host's PID namespace they could read that shell's ``/proc/<pid>/environ`` (the
CI's tokens) and every process of the other side. In a PID namespace of its own, with a procfs
mounted for it, a side sees no process but its own.

``unshare(CLONE_NEWPID)`` moves only the caller's *children* into the new namespace, its first
child becomes the namespace's init (PID 1), and a PID 1 gets from outside only SIGKILL, SIGSTOP
and the signals it handles, must reap orphans, and takes every process of the namespace with it
when it ends. The program therefore runs two levels below the process ``Popen`` holds, as with
``unshare --fork --pid --mount-proc`` plus a minimal init:

- the *keeper* (the process ``Popen`` started, in the host's namespace, root, in the container
  and the side's session): unshares, forks the init, waits, and ends as the program ended (its
  exit status, or killed by the same signal), so that the ``Popen`` duet holds behaves as
  before;
- the *init* (PID 1 inside): mounts the namespace's ``/proc``, forks the program, drops to the
  sides' user (non-dumpable), reaps orphans; when the program ends it reports its status to the
  keeper and either ends (nothing left: the keeper ends after it) or, when the program left
  processes behind (a daemon), stays with them as before, until duet kills the container;
- the *program* (PID 2), which drops its privileges and execs as it always did.

The keeper and the init block every signal: signals duet sends to a side's process group
(``killpg``: SIGTERM, SIGINT, SIGKILL, SIGSTOP, SIGCONT) reach the program directly, as it is in
the same group; the two only wait, as ``unshare --fork`` does. SIGKILL (the cgroup's kill, the
group's) ends them; the init's end ends the namespace. Parent-death signals chain: duet -> keeper
-> init, and the init's end kills the program.

Everything here runs between ``fork`` and ``exec`` of a possibly multi-threaded orchestrator
(``spawn_prepared``): only system calls on data prepared before (``prepare_pid_namespace``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CLONE_NEWPID", "PidNamespace", "prepare_pid_namespace"]

# <sched.h>, <sys/mount.h>, <sys/prctl.h>
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

#: What the init tells the keeper: the program's wait status, and whether processes it left
#: behind keep the namespace (and the init) alive.
_REPORT = struct.Struct("=ii")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@dataclass(frozen=True, slots=True)
class PidNamespace:
    """What the child needs to enter a PID namespace, prepared before the fork.

    ``own_mount_namespace``: the sandbox made none (a build), so one is made here, private, for
    the namespace's ``/proc``; else the ``/proc`` goes into the sandbox's.
    """

    own_mount_namespace: bool
    unshare: Callable[..., int]
    mount: Callable[..., int]
    prctl: Callable[..., int]
    max_fd: int
    all_signals: frozenset[int]
    #: Whether the namespace outlives the program while processes it left run (a container
    #: kills them: the warning about them stays duet's); else they end with the program.
    keep_leftovers: bool = True

    def enter(self, drop_privileges: Callable[[], None] | None) -> None:
        """In the child: make the namespace and return in its PID 2 (the program), which goes
        on to exec; the keeper and the init never return. Raises ``OSError`` (in the keeper or
        the init, reported by the caller like any failing step) when a step fails.

        The caller restores its signal mask in the program before exec: every signal is
        blocked here."""
        signal.pthread_sigmask(signal.SIG_BLOCK, self.all_signals)
        flags = CLONE_NEWPID | (CLONE_NEWNS if self.own_mount_namespace else 0)
        _check(self.unshare(flags), "unshare(CLONE_NEWPID)")
        if self.own_mount_namespace:
            # Else the /proc mounted below would reach the host's (systemd makes / shared).
            _check(
                self.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /"
            )
        report_r, report_w = os.pipe()  # close-on-exec: the program never holds them
        alive_r, alive_w = os.pipe()
        init = os.fork()
        if init:
            self._keep(init, report_r, keep=(report_r, alive_w))
        os.close(report_r)
        os.close(alive_w)
        self._start_init(report_w, alive_r, drop_privileges)

    def _start_init(
        self, report_w: int, alive_r: int, drop_privileges: Callable[[], None] | None
    ) -> None:
        """PID 1: mount ``/proc``, fork the program (which returns), serve as init."""
        _check(
            self.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
            "mount the namespace's /proc",
        )
        program = os.fork()
        if not program:
            os.close(report_w)
            os.close(alive_r)
            return
        try:
            self._close_all_but((report_w, alive_r))
            if drop_privileges is not None:
                drop_privileges()
            # Not dumpable: the sides' user can neither ptrace the init (a copy of duet's
            # memory) nor read its /proc files.
            self.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
            # Dies with the keeper (a SIGKILLed duet); if the keeper is already gone, its end of
            # the pipe is closed.
            self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.set_blocking(alive_r, False)
            with contextlib.suppress(BlockingIOError):
                if os.read(alive_r, 1) == b"":
                    os._exit(1)
            self._serve(program, report_w)
        finally:
            os._exit(1)

    def _serve(self, program: int, report_w: int) -> None:
        """Reap until the program ends; report; stay while what it left runs."""
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == program:
                break
        left = self.keep_leftovers and _children_left()
        if left:
            # From now on the namespace lives as long as what the program left (as before:
            # duet kills it with the container); the keeper's end must not end it.
            self.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)
        os.write(report_w, _REPORT.pack(status, int(left)))
        os.close(report_w)
        while _children_left(block=True):
            pass
        os._exit(0)

    def _keep(self, init: int, report_r: int, *, keep: tuple[int, ...]) -> None:
        """The keeper: wait for the init's report, end as the program ended."""
        try:
            self._close_all_but(keep)
            data = b""
            with contextlib.suppress(OSError):
                while len(data) < _REPORT.size and (chunk := os.read(report_r, _REPORT.size)):
                    data += chunk
            if len(data) == _REPORT.size:
                status, left = _REPORT.unpack(data)
                if not left:
                    os.waitpid(init, 0)
            else:  # the init died before the program ended: killed, or a step failed
                _, status = os.waitpid(init, 0)
            self._end_as(status)
        finally:
            os._exit(1)

    def _end_as(self, status: int) -> None:
        """End this process as ``status`` says the program ended."""
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            self.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no core of duet's memory
            with contextlib.suppress(OSError, ValueError):
                if sig not in (signal.SIGKILL, signal.SIGSTOP):
                    signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            os._exit(128 + sig)
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)

    def _close_all_but(self, keep: tuple[int, ...]) -> None:
        """Close every descriptor but ``keep``: the program's output, ``Popen``'s error pipe
        (which it reads until every copy is closed) and anything inherited."""
        low = 0
        for fd in sorted(keep):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, self.max_fd)


def _children_left(*, block: bool = False) -> bool:
    """Reap what has ended; whether children are left (running, or one was reaped when
    ``block``: then look again)."""
    try:
        while True:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
            if pid == 0 or block:
                return True
    except ChildProcessError:
        return False


def prepare_pid_namespace(
    *, own_mount_namespace: bool, keep_leftovers: bool = True
) -> PidNamespace:
    """What ``PidNamespace.enter`` needs, looked up here, before any fork."""
    libc = _libc()
    unshare = libc.unshare
    unshare.argtypes = [ctypes.c_int]
    unshare.restype = ctypes.c_int
    mount = libc.mount
    mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
    ]
    mount.restype = ctypes.c_int
    prctl = libc.prctl
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return PidNamespace(
        own_mount_namespace=own_mount_namespace,
        unshare=unshare,
        mount=mount,
        prctl=prctl,
        max_fd=max(soft, 1024),
        all_signals=frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP},
        keep_leftovers=keep_leftovers,
    )
