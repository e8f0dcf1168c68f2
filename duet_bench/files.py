"""Writing a file so that a reader sees the old content or the new one, never a part; and the
files root opens in a directory another user may write (docs/isolation.md, "What runs as root").

One helper for every file duet writes in place (results, configuration, stamps, reports): a
crash, a full disk or a killed CI job must not leave half a file that the next run reads as
broken. Errors are plain :class:`OSError`; each caller words them for its own file (a results
file says "choose another --out", a configuration "set the values by hand"; :func:`fix_for`
gives the fix of a link root refused to follow).

:func:`create_new` and :func:`open_existing` are for a file in a directory another user may
write (a side's directory, the results directory): the directories on the way are walked without
following a link another user could have planted (:func:`duet_bench.dirfd.open_directory`), and
``O_NOFOLLOW``/``O_EXCL`` refuse a link at the last name.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from duet_bench import dirfd
from duet_bench.errors import ResultsError


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace ``path`` by ``data`` (text is written as UTF-8, byte for byte: no newline
    translation) through a temporary file in the same directory, ``fsync`` and a rename
    (:func:`duet_bench.dirfd.write_file`).

    The missing parent directories are created. An existing file keeps its permission bits; a
    new one gets those any new file would (``0666`` less the umask) rather than the ``0600``
    of the temporary file; ``mode`` sets them. A symlink at ``path`` is replaced by the file:
    resolve the path first to write through it. As root, no link another user could have
    planted on the way is followed (:class:`duet_bench.dirfd.UnsafeLink`), and under sudo what
    is created is the invoking user's.

    Raises
    ------
    OSError
        The directory cannot be created or written, the disk is full, a link is on the way
        (root), ...; the temporary file is removed and ``path`` is unchanged.
    """
    dirfd.write_file(path, data, mode)


def make_out_directory(path: Path) -> None:
    """``mkdir -p path`` for a results directory (``--out``), through
    :func:`duet_bench.dirfd.make_directories`; the error says what to do.

    Raises
    ------
    ResultsError
        It cannot be made: a file or a refused link on the way, no permission, a full disk.
    """
    try:
        dirfd.make_directories(path)
    except OSError as e:
        raise ResultsError(
            f"{path}: cannot make the results directory ({e.strerror or e})",
            fix=fix_for(e, "choose another --out (a directory duet can create or write)"),
        ) from e


def fix_for(error: OSError, default: str) -> str:
    """What to do about ``error`` writing a file: the link's own fix for
    :class:`duet_bench.dirfd.UnsafeLink`, else ``default``."""
    return error.fix if isinstance(error, dirfd.UnsafeLink) else default


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
    parent = dirfd.open_directory(path.parent)
    try:
        fd = os.open(
            path.name, os.O_RDWR | os.O_CREAT | os.O_EXCL | _UNTRUSTED, mode, dir_fd=parent
        )
    finally:
        os.close(parent)
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
        parent = dirfd.open_directory(path.parent)
    except FileNotFoundError:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | _UNTRUSTED, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link", str(path)) from None
        raise
    finally:
        os.close(parent)
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
