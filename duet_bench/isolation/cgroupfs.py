"""The cgroup file systems' plumbing every backend shares: locating a cgroup under a mount,
reading and writing interface files, walking, killing and removing a tree of cgroups, finding
what a crashed invocation left, and the command that gives duet the permissions it needs.

The machine itself (mounts, our own cgroups, CPU lists, live pids) is read by
:mod:`duet_bench.machine`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import secrets
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterable

from duet_bench.machine import CgroupMount, pid_alive

__all__ = [
    "PARENT_NAME_RE",
    "cgroup_dir",
    "find_stale",
    "kill_pids",
    "new_parent_name",
    "privilege_fix",
    "procs_of",
    "read_keyed",
    "read_text",
    "rmdir_tree",
    "subtree_bottom_up",
    "wait_until",
    "write_text",
]

logger = logging.getLogger(__name__)

#: Names of the per-invocation parent cgroups: ``duet-<pid>-<random>``.
PARENT_NAME_RE = re.compile(r"^duet-(\d+)-[0-9A-Za-z]+$")


def cgroup_dir(mount: CgroupMount, cgroup_path: str) -> str | None:
    """The directory of ``cgroup_path`` (as in /proc/self/cgroup) under ``mount``, or None when
    it lies outside what is mounted (e.g. a cgroup namespace whose root is not mounted)."""
    if mount.root != "/":
        if cgroup_path != mount.root and not cgroup_path.startswith(mount.root + "/"):
            return None
        cgroup_path = cgroup_path[len(mount.root) :] or "/"
    if cgroup_path.startswith("/.."):
        return None
    return os.path.normpath(os.path.join(mount.mountpoint, cgroup_path.lstrip("/")))


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def write_text(path: str, value: str) -> None:
    # One write(2) per value: cgroup files act on each write, and buffering could split it.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def read_keyed(path: str) -> dict[str, int]:
    """Read a flat-keyed cgroup file (``key value`` per line) into a dict of integers."""
    result: dict[str, int] = {}
    for line in read_text(path).splitlines():
        key, _, value = line.partition(" ")
        try:
            result[key] = int(value)
        except ValueError:
            continue
    return result


def new_parent_name() -> str:
    return f"duet-{os.getpid()}-{secrets.token_hex(4)}"


def subtree_bottom_up(path: str) -> list[str]:
    """Every cgroup directory at and below ``path``, deepest first (``path`` itself last)."""
    found: list[str] = []
    try:
        walker = list(os.walk(path, topdown=False))
    except OSError:
        walker = []
    for dirpath, dirnames, _ in walker:
        found.extend(os.path.join(dirpath, d) for d in dirnames)
    found.append(path)
    return found


def procs_of(path: str, *, recursive: bool = True) -> list[int]:
    """The pids in the cgroup at ``path`` (and its descendants)."""
    pids: list[int] = []
    for cgroup in subtree_bottom_up(path) if recursive else [path]:
        try:
            text = read_text(os.path.join(cgroup, "cgroup.procs"))
        except FileNotFoundError:
            continue
        pids.extend(int(line) for line in text.split())
    return pids


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``predicate`` with a growing interval (1 ms to 50 ms) until true or timed out."""
    deadline = time.monotonic() + timeout_s
    interval = 0.001
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
        interval = min(interval * 2, 0.05)


def kill_pids(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def rmdir_tree(path: str) -> bool:
    """Remove the cgroup at ``path`` and its descendants, deepest first. A cgroup that is
    already gone counts as removed. Returns whether ``path`` is gone."""
    for cgroup in subtree_bottom_up(path):
        if not wait_until(functools.partial(_try_rmdir, cgroup), 1.0):
            logger.warning("could not remove cgroup %s (still busy)", cgroup)
    return not os.path.exists(path)


def _try_rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as e:
        # EBUSY right after a kill: the last exiting task has not left the cgroup yet.
        logger.debug("rmdir %s: %s", path, e)
        return False
    return True


def find_stale(bases: Iterable[str]) -> list[str]:
    """``duet-<pid>-*`` directories directly under ``bases`` whose pid is not alive.

    A pid that was reused by an unrelated process since the crash makes us skip that parent
    (the safe side); it is picked up by a later cleanup once that process is gone.
    """
    stale: list[str] = []
    for base in dict.fromkeys(bases):
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for entry in entries:
            match = PARENT_NAME_RE.match(entry)
            path = os.path.join(base, entry)
            if match and os.path.isdir(path) and not pid_alive(int(match.group(1))):
                stale.append(path)
    return stale


def privilege_fix() -> str:
    """The commands that give duet the cgroup permissions it needs (for error messages): the
    current command line when we were started as ``duet``."""
    if os.path.basename(sys.argv[0]) == "duet" and len(sys.argv) > 1:
        # The full path: sudo resets PATH, so `sudo duet` finds no duet installed by pipx or in
        # a virtual environment.
        import shutil

        program = sys.argv[0] if "/" in sys.argv[0] else shutil.which(sys.argv[0]) or "duet"
        command = shlex.join([os.path.abspath(program), *sys.argv[1:]])
    else:
        command = '"$(command -v duet)" ...'

    return (
        f"run as root (`sudo {command}`), or on a systemd machine with cgroup v2 start duet "
        f"in a delegated scope: `systemd-run --user --scope -p Delegate=yes {command}` (needs "
        f"your systemd user manager; as root: `sudo systemd-run --scope -p Delegate=yes "
        f"{command}`)"
    )
