"""What an earlier duet that did not finish left in ``/dev/shm`` and ``/var/tmp``, and only that.

duet names its entries there ``duet-<pid>-<random>``: barrier files
``duet-<pid>-<16 hex digits>.barrier`` (:func:`duet_bench.harness.duet_barrier.new_path`) and
work directories ``duet-<pid>-<8 characters>`` (``tempfile.mkdtemp``). Both directories are
shared with every user, who may make entries that look alike; root removing them would delete
other users' files (issue 33, finding 5: a user's ``/var/tmp/duet-3999999-userdata`` and
``/dev/shm/duet-3999998-userfile`` went as "left behind by an earlier duet", though no such pid
can exist). An entry is removed only when all of these hold:

- its name is exactly one of the two formats above (a barrier file a regular file, a work
  directory a directory, neither a link);
- its pid can exist (at most ``/proc/sys/kernel/pid_max``) and is not alive;
- it is duet's own: owned by the user duet runs as (root under sudo). A barrier file is handed to
  the user the sides run as (docs/isolation.md, "What runs as root"), so one owned by another
  user counts when its first 8 bytes are the barrier's magic ``DUETBARR``, which only a barrier
  has.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat

from duet_bench.machine import pid_alive

__all__ = ["is_stale", "remove_stale_files"]

_BARRIER_NAME = re.compile(r"^duet-([1-9][0-9]{0,9})-[0-9a-f]{16}\.barrier$")
#: ``tempfile``'s characters (``_RandomNameSequence.characters``), eight of them.
_WORKDIR_NAME = re.compile(r"^duet-([1-9][0-9]{0,9})-[a-z0-9_]{8}$")
_BARRIER_MAGIC = b"DUETBARR"
#: The kernel's own default limit, when ``pid_max`` cannot be read.
_DEFAULT_PID_MAX = 32768


def _pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return _DEFAULT_PID_MAX


def _starts_with_magic(directory_fd: int, name: str) -> bool:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=directory_fd)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.pread(fd, 8, 0) == _BARRIER_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def is_stale(directory_fd: int, name: str, *, pid_max: int | None = None) -> bool:
    """Whether ``name`` in the directory ``directory_fd`` is duet's and left by a duet that no
    longer runs (the module documentation)."""
    barrier = _BARRIER_NAME.match(name)
    match = barrier or _WORKDIR_NAME.match(name)
    if match is None:
        return False
    pid = int(match.group(1))
    if pid > (_pid_max() if pid_max is None else pid_max) or pid_alive(pid):
        return False
    try:
        st = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    except OSError:
        return False
    if barrier is not None:
        if not stat.S_ISREG(st.st_mode):
            return False
        return st.st_uid == os.geteuid() or _starts_with_magic(directory_fd, name)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def remove_stale_files(directory: str) -> list[str]:
    """Remove the entries of ``directory`` that :func:`is_stale` says an earlier duet left;
    return their paths."""
    removed: list[str] = []
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return removed
    try:
        limit = _pid_max()
        for name in sorted(os.listdir(fd)):
            if not is_stale(fd, name, pid_max=limit):
                continue
            path = os.path.join(directory, name)
            if _BARRIER_NAME.match(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)
            else:
                # rmtree walks with descriptors and never follows a link.
                shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    finally:
        os.close(fd)
    return removed
