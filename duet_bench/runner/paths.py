"""Where a side may look, as policy: which of its paths need the host's /tmp (a side's private
/tmp would hide them), what the run-as user may execute or read, and so which interpreter runs
the worker of ``command`` benchmarks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from duet_bench.errors import EnvironmentNotReady
from duet_bench.isolation import RunAs
from duet_bench.plan import SideSpec

#: duet's harness (standard library only): copied next to the sides, the worker run from there.
HARNESS_DIR = Path(__file__).parent.parent / "harness"
WORKER = HARNESS_DIR / "duet_worker.py"


def uses_host_tmp(spec: SideSpec, worker_python: str | None = None) -> bool:
    """Whether a side names files under the host's /tmp (its directory, interpreter, the
    worker's interpreter, python path or program), which a private /tmp in its mount namespace
    would hide."""
    tmp = os.path.realpath("/tmp")
    interpreter = worker_python if spec.kind == "command" else spec.interpreter
    paths = [spec.cwd, interpreter, *spec.sys_path]
    for word in (spec.command or "").split():
        # A file the benchmark creates directly in /tmp (a cache, a socket: `--db /tmp/x.db`)
        # is what the private /tmp is for; only what exists there already (the program, an
        # input, a directory prepared for it) needs the host's /tmp.
        if not word.startswith("/") or os.path.realpath(word) == tmp:
            continue
        if os.path.lexists(word) or os.path.realpath(os.path.dirname(word)) != tmp:
            paths.append(word)
    if spec.cwd is None:
        paths.append(working_directory())
    return any(p and under_host_tmp(p) for p in paths)


def working_directory() -> str:
    """duet's working directory, where a side without ``cwd`` runs; a clear error when it was
    removed from under duet (by a benchmark or its build) instead of a traceback. (A directory
    removed before duet started is refused at the start, ``duet_bench.cli``.)"""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise EnvironmentNotReady(
            "duet's working directory no longer exists: it was removed while duet ran (by a "
            "benchmark, its build or another program), and the sides that run there cannot "
            "start",
            fix="a benchmark must not remove its own directory; cd to an existing directory "
            "(or give the benchmark a cwd) and run again",
        ) from None


def accessible_by(path: str, run_as: RunAs | None, *, mode: int = os.X_OK) -> bool:
    """Whether ``run_as`` may execute (or read, with ``mode=os.R_OK``) ``path``: every directory
    on the way must be searchable by that user, and the file itself executable (readable)."""
    if run_as is None:
        return os.access(path, mode)
    import stat

    real = os.path.realpath(path)
    parts = real.split("/")
    dirs = ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
    checks = [(d, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH) for d in dirs]
    if mode == os.X_OK:
        checks.append((real, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH))
    else:
        checks.append((real, stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH))
    for target, user_bit, group_bit, other_bit in checks:
        try:
            st = os.stat(target)
        except OSError:
            return False
        if st.st_uid == run_as.uid:
            ok = st.st_mode & user_bit
        elif st.st_gid == run_as.gid or st.st_gid in run_as.groups:
            ok = st.st_mode & group_bit
        else:
            ok = st.st_mode & other_bit
        if not ok:
            return False
    return True


def under_host_tmp(path: str) -> bool:
    """Whether ``path`` lies under the host's /tmp, which a side's private /tmp hides: the
    path as written, resolved, or any place the kernel passes through on the way (a symlink in
    /tmp is hidden wherever it points; ``.venv -> /tmp/build/venv`` hides ``.venv/bin/python``
    although that resolves to ``/usr/bin/python3.11``)."""
    return host_tmp_on_the_way(path) is not None


def host_tmp_on_the_way(path: str) -> str | None:
    """The first path under the host's /tmp that resolving ``path`` goes through, or None."""
    return next((p for p in _resolution(path) if _in_tmp(p)), None)


def _in_tmp(path: str) -> bool:
    return any(
        (path + "/").startswith(prefix + "/") for prefix in {os.path.realpath("/tmp"), "/tmp"}
    )


def _resolution(path: str) -> list[str]:
    """Every path the kernel looks up to resolve ``path``, symlink by symlink: ``realpath``
    gives only the end, and a venv's ``bin/python`` ends outside the /tmp its link went through."""
    absolute = path if os.path.isabs(path) else os.path.join(working_directory(), path)
    seen = [os.path.normpath(absolute)]
    todo = seen[0].split("/")[1:]
    current, hops = "/", 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        seen.append(candidate)
        if hops < 40 and os.path.islink(candidate):  # 40: the kernel's own limit (ELOOP)
            hops += 1
            target = os.readlink(candidate)
            if target.startswith("/"):
                current = "/"
            todo = target.split("/") + todo
        else:
            current = candidate
    seen.append(current)
    return seen


def why_hidden(path: str) -> str | None:
    """Why a side with a private /tmp cannot see ``path``, for an error message; None when
    nothing on its way is under /tmp."""
    seen = _resolution(path)
    first = next((i for i, p in enumerate(seen) if _in_tmp(p)), None)
    if first is None:
        return None
    deepest = first
    while deepest + 1 < len(seen) and _in_tmp(seen[deepest + 1]):
        deepest += 1
    before = seen[first - 1] if first > 0 else ""
    via = (
        f" (the symlink {before} points to {os.readlink(before)})"
        if before and os.path.islink(before)
        else ""
    )
    return (
        f"{path} is reached through {seen[deepest]}{via}, and a side's private /tmp does not "
        "show the host's /tmp"
    )


def worker_python_for(run_as: RunAs | None) -> str:
    """The interpreter that runs the worker of ``command`` benchmarks.

    The worker uses only the standard library, so any Python >= 3.11 will do. Ours, unless the
    sides run as a user who cannot execute it (duet installed under /root and run with sudo),
    or it lives under /tmp (a checkout in /tmp: a side's private /tmp would hide it); then the
    interpreter our virtual environment was made from, or a system python3.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    candidates = list(
        dict.fromkeys(
            [
                sys.executable,
                base,
                os.path.realpath(base),
                "/usr/bin/python3",
                "/usr/local/bin/python3",
            ]
        )
    )
    usable = [c for c in candidates if os.path.exists(c) and accessible_by(c, run_as)]
    if usable:
        outside_tmp = [c for c in usable if not under_host_tmp(c)]
        # Under /tmp only: uses_host_tmp then gives the side the host's /tmp.
        return (outside_tmp or usable)[0]
    who = run_as.name if run_as else "this user"
    raise EnvironmentNotReady(
        f"no Python interpreter that {who} may execute was found (tried {', '.join(candidates)})",
        fix="install python3 system-wide (apt-get install python3) or install duet where that "
        "user can read it",
    )
