"""Writing where another user can write, as root, without following what they planted
(docs/isolation.md, "What runs as root").

duet runs as root under sudo, and writes its results where the user says (``--out``), by
default in the user's checkout, which the pull request's tree fills. A link there (committed, or
made by the pull request's build, which runs as the user) must not lead root's writes into
``/etc``: root walks the path one directory at a time from ``/`` (or from its working directory
for a relative path), each opened relative to the last with ``O_DIRECTORY | O_NOFOLLOW``, and
makes each file as a new temporary file (``O_CREAT | O_EXCL | O_NOFOLLOW``) in that directory,
then renames it into place (``renameat``): root never writes through a name that was already
there, a link or a hard link. A link is followed only where no user but root could have made
it: in a directory that is root's and that neither group nor others can write (``/var/run`` is
such a link); any other raises :class:`UnsafeLink`. Under sudo, what root creates (directories
and files) is handed to the user who ran sudo (``SUDO_UID``/``SUDO_GID``), who can then remove
it.

Not as root, paths are followed as the kernel does, as before: a user's own links are theirs to
follow.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from duet_bench.machine import THIS
from duet_bench.manual import cite

__all__ = [
    "UnsafeLink",
    "create_in_place",
    "invoking_user",
    "make_directories",
    "open_directory",
    "replacing",
    "write_file",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: Links followed in one path at most (the kernel's limit, MAXSYMLINKS).
_MAX_LINKS = 40


class UnsafeLink(OSError):
    """A link on the way to a file root writes, in a directory another user can write."""

    def __init__(self, link: str, directory_owner: int) -> None:
        who = f"uid {directory_owner}" if directory_owner != 0 else "users other than root"
        super().__init__(
            errno.ELOOP,
            f"{link} is a symbolic link in a directory that {who} can write; duet runs as "
            "root and never follows a link that another user, or the "
            f"code being measured, could have put there ({cite('isolation.md')}, "
            '"What runs as root")',
            link,
        )
        self.fix = "give the path without that link (its real path: realpath PATH)"


def invoking_user() -> tuple[int, int] | None:
    """The uid and gid of who ran ``sudo duet`` (they own what duet writes for them); None when
    not root or not under sudo."""
    if os.geteuid() != 0:
        return None
    uid, gid = os.environ.get("SUDO_UID", ""), os.environ.get("SUDO_GID", "")
    if not uid.isdigit() or int(uid) == 0:
        return None
    return int(uid), int(gid) if gid.isdigit() else int(uid)


def open_directory(path: str | os.PathLike[str], *, create: bool = False) -> int:
    """A descriptor of the directory ``path`` (``O_RDONLY | O_DIRECTORY``), made with its
    missing parents when ``create`` (handed to :func:`invoking_user`). As root, no link another
    user can have planted is followed (:class:`UnsafeLink`).

    Raises
    ------
    OSError
        ``FileNotFoundError`` (not ``create``), ``NotADirectoryError``, :class:`UnsafeLink`,
        ``PermissionError``...
    """
    text = os.fspath(path)
    if os.geteuid() != 0:
        if create:
            os.makedirs(text, exist_ok=True)
        return os.open(text, _DIR_FLAGS)
    return _walk(text, create=create)


def _walk(text: str, *, create: bool) -> int:
    # Components still to walk, first at the end; `where` is the path walked, for messages.
    todo = list(reversed(text.split("/")))
    fd = os.open("/" if text.startswith("/") else ".", _DIR_FLAGS)
    where = "/" if text.startswith("/") else ""
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            shown = os.path.join(where, name) if where else name
            try:
                step = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, "no such directory", shown) from None
                step = _make_directory(name, fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory", shown) from None
                parent = os.fstat(fd)
                if parent.st_uid != 0 or parent.st_mode & 0o022:
                    raise UnsafeLink(shown, parent.st_uid) from None
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", shown) from None
                target = os.readlink(name, dir_fd=fd)
                todo.extend(reversed(target.split("/")))
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", _DIR_FLAGS)
                where = shown
                continue
            os.close(fd)
            fd, where = step, shown
        return fd
    except BaseException:
        os.close(fd)
        raise


def _make_directory(name: str, parent: int) -> int:
    """``mkdir name`` in ``parent`` (as ``mkdir -p`` would: 0777 less the umask), opened, and
    the invoking user's."""
    with contextlib.suppress(FileExistsError):  # made at the same time by someone else
        os.mkdir(name, 0o777, dir_fd=parent)
    fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    owner = invoking_user()
    if owner is not None and os.fstat(fd).st_uid == 0:
        os.fchown(fd, *owner)
    return fd


def make_directories(path: str | os.PathLike[str]) -> None:
    """``mkdir -p path``, through :func:`open_directory`."""
    os.close(open_directory(path, create=True))


@contextlib.contextmanager
def _directory_of(path: Path) -> Iterator[int]:
    fd = open_directory(path.parent, create=True)
    try:
        yield fd
    finally:
        os.close(fd)


def _new_temporary(directory: int, name: str) -> tuple[str, int]:
    """A new file beside ``name`` in ``directory``: its name and a descriptor open for writing,
    mode 0600 and the invoking user's."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        temporary = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(temporary, flags, 0o600, dir_fd=directory)
        except FileExistsError:
            continue
        owner = invoking_user()
        if owner is not None:
            os.fchown(fd, *owner)
        return temporary, fd


def _mode_for(directory: int, name: str) -> int:
    """The permission bits of the regular file at ``name`` (not through a link), else those of
    any new file (0666 less the umask)."""
    try:
        st = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode) & 0o777
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask (:meth:`duet_bench.machine.Machine.umask`); 0o022 when unknown."""
    umask = THIS.umask()
    return 0o022 if umask is None else umask


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str], mode: int | None = None) -> Iterator[IO[bytes]]:
    """A file to write ``path``'s new content into: when the block ends without an error it
    replaces ``path`` (``fsync``, then rename, then ``fsync`` of the directory), else it is
    removed and ``path`` is unchanged. The missing directories are made; the file gets
    ``mode``, by default that of the file it replaces (a new one: 0666 less the umask);
    whatever is at ``path`` (a link too) is replaced, never written through."""
    target = Path(path)
    with _directory_of(target) as directory:
        if mode is None:
            mode = _mode_for(directory, target.name)
        temporary, fd = _new_temporary(directory, target.name)
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), mode)
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, target.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
            raise
        # The rename is only durable once the directory entry is on disk as well.
        os.fsync(directory)


def write_file(path: str | os.PathLike[str], data: str | bytes, mode: int | None = None) -> None:
    """Replace ``path`` by ``data`` (text as UTF-8, byte for byte) through :func:`replacing`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path, mode) as f:
        f.write(payload)


def create_in_place(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """A new, empty file at ``path`` at once (a log that is read while it grows), open for
    writing; its descriptor. Made under another name and renamed over whatever was at ``path``:
    that is replaced, never written through."""
    target = Path(path)
    with _directory_of(target) as directory:
        temporary, fd = _new_temporary(directory, target.name)
        try:
            os.fchmod(fd, mode)
            os.replace(temporary, target.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
            raise
    return fd
