"""Doing work as the user the builds and sides run as, and keeping the CI's secrets from them.

duet runs as root (``sudo duet compare``) to make cgroups and namespaces; everything that
touches a path the user or the pull request controls is done as that user
(docs/isolation.md, "What runs as root"):

- :func:`popen_user` gives ``subprocess`` the user's uid, gid and groups (git commands);
- :func:`call_as` runs a Python function in a forked child that dropped to the user (file work
  in the user's worktree cache: making its directories, removing worktrees, the build stamps),
  with its result or ``OSError`` carried back as JSON;
- :func:`open_as` is :func:`call_as` for a function that opens a file: its descriptor comes
  back over a UNIX socket (the lock files of the worktree cache: the user opens them, root
  holds the lock);
- :func:`remove_tree` is ``rm -rf`` that never follows a link and never changes a mode through
  one.

:func:`allowed_environment` is what builds and benchmarks get of duet's environment: an
allow-list (:data:`ALLOWED_VARIABLES`), plus what ``--keep-env`` names; the CI's credentials and
anything else stay with duet.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Collection, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

from duet_bench.errors import IsolationError
from duet_bench.isolation.model import RunAs

__all__ = [
    "ALLOWED_PREFIXES",
    "ALLOWED_VARIABLES",
    "KEEP_VARIABLE",
    "allowed_environment",
    "call_as",
    "ignore_invoker_paths",
    "invoking_user_of",
    "open_as",
    "popen_user",
    "remove_tree",
]

_T = TypeVar("_T")

#: What the builds, the discovery steps and the sides get of duet's own environment: an
#: allow-list, never duet's environment minus known token names, which missed the next token
#: (issue 33, finding 2: ``CI_BUILD_TOKEN`` reached them). The locale and terminal, the user's
#: identity (``HOME``, ``USER``, ``LOGNAME``: under sudo the user's own, set by
#: ``RunAs.environment``), ``PATH``, ``TMPDIR`` (a side's is duet's private one), and the
#: toolchains' homes that the adapters' builds need (go: ``GOPATH``, ``GOCACHE``,
#: ``GOMODCACHE``, ``GOROOT``; cargo: ``CARGO_HOME``, ``RUSTUP_HOME``, ``RUSTUP_TOOLCHAIN``).
#: What duet sets (``DUET_SIDE``, the barrier's variables...), the configuration's ``env`` and
#: the names given to ``--keep-env`` (or in :data:`KEEP_VARIABLE`) are added by the callers.
ALLOWED_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "GOPATH",
        "GOCACHE",
        "GOMODCACHE",
        "GOROOT",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        # The pytest test that duet_pytest:run measures (docs/adapters.md, pytest-benchmark):
        # what a `duet run --callable duet_pytest:run` names; a node id, no secret.
        "DUET_PYTEST_NODEID",
    }
)
#: ``LC_ALL``, ``LC_CTYPE``...
ALLOWED_PREFIXES = ("LC_",)
#: Names kept as ``--keep-env`` keeps them, separated by spaces or commas: the same for every
#: duet a script or test suite starts (the suite's leftover check follows its processes by a
#: variable of its own).
KEEP_VARIABLE = "DUET_KEEP_ENV"


def invoking_user_of(environ: Mapping[str, str]) -> RunAs | None:
    """Who root works for: the user who ran ``sudo duet`` (``SUDO_UID``), or the real uid of a
    set-uid duet; None when duet is not root, or root ran it. A path in such a user's
    environment is theirs, and root opens it only as them."""
    if os.geteuid() != 0:
        return None
    uid = os.getuid()
    if uid == 0:
        text = environ.get("SUDO_UID", "")
        if not text.isdigit() or int(text) == 0:
            return None
        uid = int(text)
    try:
        return RunAs.for_user(str(uid))
    except IsolationError:
        return RunAs(name=f"uid {uid}", uid=uid, gid=uid)


#: Variables that name a directory root itself would use (``tempfile`` honours them). Under
#: sudo they are the invoking user's choice, and ignored (the sides get a ``TMPDIR`` of duet's).
#: ``DUET_LOCK`` is opened as the invoking user instead (:mod:`duet_bench.lock`);
#: ``XDG_CACHE_HOME`` is read only when duet runs for itself (:mod:`duet_bench.versions.slots`).
INVOKER_PATH_VARIABLES = ("TMPDIR", "TEMP", "TMP")


def ignore_invoker_paths(environ: MutableMapping[str, str]) -> list[str]:
    """Remove :data:`INVOKER_PATH_VARIABLES` from ``environ`` (duet's own environment) when root
    works for another user (:func:`invoking_user_of`), so that root makes no file in a
    directory that user names (issue 33); the removed ``NAME=value`` texts, for a warning."""
    if invoking_user_of(environ) is None:
        return []
    removed = [f"{k}={environ.pop(k)}" for k in INVOKER_PATH_VARIABLES if k in environ]
    if removed:
        tempfile.tempdir = None  # gettempdir() caches what it found first
    return removed


def allowed_environment(env: Mapping[str, str], keep: Collection[str] = ()) -> dict[str, str]:
    """What of ``env`` (duet's own environment) a build, a discovery step or a side gets:
    :data:`ALLOWED_VARIABLES`, the ``LC_*`` variables, and the names in ``keep``
    (``--keep-env``) or in ``env``'s :data:`KEEP_VARIABLE`."""
    kept = {*keep, *re.split(r"[\s,]+", env.get(KEEP_VARIABLE, ""))} - {""}
    return {
        k: v
        for k, v in env.items()
        if k in ALLOWED_VARIABLES or k.startswith(ALLOWED_PREFIXES) or k in kept
    }


def popen_user(run_as: RunAs | None) -> dict[str, Any]:
    """The ``subprocess`` arguments that start a program as ``run_as`` (nothing for None)."""
    if run_as is None:
        return {}
    return {"user": run_as.uid, "group": run_as.gid, "extra_groups": list(run_as.groups)}


def call_as(run_as: RunAs | None, fn: Callable[[], _T]) -> _T:
    """``fn()`` as ``run_as``: in a forked child that drops to that user first (in this process
    for None). Its result must be JSON (None, str, bool, numbers, lists); an ``OSError`` it
    raises is raised here with its errno, text and file name, anything else as
    ``RuntimeError``.

    A fork, not a new interpreter: the work is a few file operations, and the child is this
    program, so nothing the user controls is loaded as root. Changing its uid also makes the
    child undumpable, so the user cannot ptrace it while it still holds our memory.
    """
    if run_as is None:
        return fn()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 0
        try:
            os.close(read_end)
            os.setgroups(list(run_as.groups))
            os.setgid(run_as.gid)
            os.setuid(run_as.uid)
            payload: dict[str, Any] = {"result": fn()}
        except OSError as e:
            name = e.filename if isinstance(e.filename, str) else None
            payload = {"oserror": [e.errno, e.strerror or str(e), name]}
        except BaseException as e:
            payload = {"error": f"{type(e).__name__}: {e}"}
        try:
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(write_end, data) :]
        except BaseException:
            status = 1
        os._exit(status)
    os.close(write_end)
    try:
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    try:
        answer = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        answer = {}
    if "result" in answer:
        return answer["result"]  # type: ignore[no-any-return]
    if "oserror" in answer:
        errno_, text, name = answer["oserror"]
        raise OSError(errno_, text, name) if name else OSError(errno_, text)
    raise RuntimeError(answer.get("error") or f"the work as {run_as.name} died without an answer")


def open_as(run_as: RunAs | None, fn: Callable[[], int]) -> int:
    """The descriptor ``fn()`` opens, opened as ``run_as`` (by this process for None): in a
    forked child that drops to that user first and sends the descriptor back (``SCM_RIGHTS``).
    Root then holds a file the user could open, reached the way the user would reach it: a link
    on the way leads only where the user may go. An ``OSError`` of ``fn`` is raised here as in
    :func:`call_as`."""
    if run_as is None:
        return fn()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

    def opened() -> None:
        ours.close()
        fd = fn()
        socket.send_fds(theirs, [b"fd"], [fd])

    with ours:
        try:
            call_as(run_as, opened)
        finally:
            theirs.close()
        ours.settimeout(5.0)
        _, fds, _, _ = socket.recv_fds(ours, 16, 1)
    if len(fds) != 1:
        raise RuntimeError(f"the work as {run_as.name} sent no descriptor back")
    os.set_inheritable(fds[0], False)
    return fds[0]


def open_as_invoking_user(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of ``path``, a file the user named on the command line (a results
    file, a configuration), opened as the user who ran ``sudo`` when root runs under it: a link
    there leads only where that user may read, so root never parses or quotes a file of its own
    through it (docs/isolation.md, "What runs as root"). Opened by this process otherwise.
    ``OSError`` as ``open`` raises it."""
    run_as = RunAs.from_environment(None, os.environ)
    flags = os.O_RDONLY | os.O_CLOEXEC
    return open_as(run_as, lambda: os.open(path, flags))


def remove_tree(path: Path) -> None:
    """``rm -rf path``, read-only entries included, never through a link.

    ``shutil.rmtree`` walks with directory descriptors (``shutil.rmtree.avoids_symlink_attacks``
    on Linux), so a link swapped in during the walk is removed, not followed. The error handler
    only makes writable what is a real directory or file, through a descriptor opened with
    ``O_NOFOLLOW``: ``os.chmod`` of a path follows links, and made ``/etc/shadow`` 0777 when a
    build replaced its worktree by a link to it (issue 25, item 1). A link at ``path`` itself
    is unlinked; nothing at ``path`` is fine.
    """
    if os.path.islink(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    if not os.path.lexists(path):
        return
    # `onerror` is deprecated from Python 3.12 on, `onexc` does not exist before it.
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_make_writable_and_retry)
    else:
        shutil.rmtree(path, onerror=_make_writable_and_retry)


def _make_writable_and_retry(func: Callable[..., Any], path: str, _exc: Any) -> None:
    # Builds leave read-only trees (Go's module cache, some installers); the directory that
    # holds a read-only entry must be writable for rmtree to delete it. Only the owner's bits
    # are added, to what is really there: nothing is opened to others, whatever a link swapped
    # in higher up makes the path name.
    parent = os.path.dirname(path)
    for target, bits in ((parent, stat.S_IWUSR | stat.S_IXUSR), (path, stat.S_IWUSR)):
        with contextlib.suppress(OSError):
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                st = os.fstat(fd)
                if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                    os.fchmod(fd, stat.S_IMODE(st.st_mode) | bits)
            finally:
                os.close(fd)
    if func is os.path.islink:
        return  # rmtree refused a link at the top: nothing to retry, remove_tree handled it
    func(path)
