"""Writing a file so that a reader sees the old content or the new one, never a part.

One helper for every file duet writes in place (results, configuration, stamps, reports): a
crash, a full disk or a killed CI job must not leave half a file that the next run reads as
broken. Errors are plain :class:`OSError`; each caller words them for its own file (a results
file says "choose another --out", a configuration "set the values by hand").
"""

from __future__ import annotations

import contextlib
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
