"""Writing a file so that a reader sees the old content or the new one, never a part; and the
files root opens in a directory another user may write (docs/isolation.md, "What runs as root").

One helper for every file duet writes in place (results, configuration, stamps, reports): a
crash, a full disk or a killed CI job must not leave half a file that the next run reads as
broken. Errors are plain :class:`OSError`; each caller words them for its own file (a results
file says "choose another --out", a configuration "set the values by hand").

:func:`create_new` and :func:`open_existing` are for a file whose *last* directory belongs to
the user the sides run as (a side's directory), every directory above it being root's: only the
last component of the path can be a link the user planted, and ``O_NOFOLLOW``/``O_EXCL`` refuse
it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` by ``data`` (text is written as UTF-8, byte for byte: no newline
    translation) through a temporary file in the same directory, ``fsync`` and
    :func:`os.replace`.

    The missing parent directories are created. An existing file keeps its permission bits; a
    new one gets those any new file would (``0666`` less the umask) rather than the ``0600``
    of the temporary file. A symlink at ``path`` is replaced by the file: resolve the path first
    to write through it.

    Raises
    ------
    OSError
        The directory cannot be created or written, the disk is full, ...; the temporary file
        is removed and ``path`` is unchanged.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    # The rename is only durable once the directory entry is on disk as well.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _umask() -> int:
    """The process umask, read without setting it (os.umask would, for every thread)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


#: Flags of every open of a file another user may have replaced: never through a link, never
#: blocking on a FIFO planted there, never inherited by a program we start.
_UNTRUSTED = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def create_new(path: Path, mode: int = 0o644) -> int:
    """A new file at ``path``, opened for reading and writing; its descriptor.

    ``O_EXCL`` refuses anything already there, a link above all (a link is never followed
    with ``O_EXCL``): the file is ours, whatever the directory's owner does later.

    Raises
    ------
    OSError
        ``FileExistsError`` when something is at ``path`` already.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _UNTRUSTED, mode)
    os.set_blocking(fd, True)
    return fd


def open_existing(path: Path) -> int | None:
    """``path`` opened read-only if it is a regular file with a single name, reached without
    following a link; None when there is nothing at ``path``.

    A link (``O_NOFOLLOW``), a FIFO or a device, and a hard link (a second name of a file that
    lives elsewhere, such as ``/etc/shadow`` where ``fs.protected_hardlinks`` is 0) raise
    ``OSError``: what another user put there instead of their own file is not read by root.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _UNTRUSTED)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError(
                errno.EPERM,
                f"it is not a regular file of its own (mode {st.st_mode:o}, {st.st_nlink} links)",
                str(path),
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
