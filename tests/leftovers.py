"""What a test may leave behind, looked for everywhere duet puts things (tests/conftest.py's
``no_leftovers``): processes, ``duet-<pid>-*`` cgroups at any depth of every cgroup hierarchy,
barrier files in /dev/shm, work directories in /var/tmp, and worktree slots in the caches.

Other developers' duets and test runs share the machine and make their own ``duet-<pid>-*``
objects at the same time: an object counts only when it is new since the test began and its
owner pid is the test process or one of its descendants."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from duet_bench.isolation import cgroup_mounts

CGROUP_ROOT = "/sys/fs/cgroup"
#: ``duet-<pid>-...`` (cgroups, barrier files, work directories), ``duet-worktrees-<uid>`` aside.
OWNED_RE = re.compile(r"^duet-(\d+)-")
#: How long a process the test started may take to exit after the test (a SIGTERM'd duet
#: cleans up first).
GRACE_S = 3.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    cgroups: frozenset[str]
    files: frozenset[str]
    slots: frozenset[str]


def duet_cgroups() -> set[str]:
    """Every ``duet-*`` cgroup directory at any depth of every mounted hierarchy (not below one:
    its children are its own business)."""
    found: set[str] = set()
    mounts = {m.mountpoint for m in cgroup_mounts(CGROUP_ROOT)}
    for mountpoint in sorted(mounts):
        for dirpath, dirnames, _ in os.walk(mountpoint):
            for name in list(dirnames):
                if name.startswith("duet-"):
                    found.add(os.path.join(dirpath, name))
                    dirnames.remove(name)
    return found


def duet_files() -> set[str]:
    return set(glob.glob("/dev/shm/duet-*")) | set(glob.glob("/var/tmp/duet-*"))


def worktree_caches() -> list[Path]:
    """The worktree caches duet uses for this user (versions.slots.default_cache_dir)."""
    roots = [
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "duet" / "worktrees"
    ]
    roots += [Path(p) for p in glob.glob("/var/tmp/duet-worktrees-*")]
    return [cache for root in roots if root.is_dir() for cache in root.iterdir() if cache.is_dir()]


def worktree_slots() -> set[str]:
    """Held slots (a ``<name>.lock``) and stamps without their worktree, in every cache."""
    found: set[str] = set()
    for cache in worktree_caches():
        for entry in cache.iterdir():
            if entry.name.endswith(".lock") and not entry.name.startswith("."):
                found.add(f"{entry} (a slot still locked)")
            elif entry.name.endswith(".stamp") and not (cache / entry.name[:-6]).exists():
                found.add(f"{entry} (a build stamp without its worktree)")
    return found


def snapshot() -> Snapshot:
    return Snapshot(frozenset(duet_cgroups()), frozenset(duet_files()), frozenset(worktree_slots()))


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (through /proc/<pid>/task/*/children)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in glob.glob(f"/proc/{parent}/task/*/children"):
            try:
                children = [int(c) for c in Path(task).read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def tagged(tag: str) -> set[int]:
    """Live processes with ``DUET_TEST_TAG=<tag>`` in their environment (double forks and
    ``setsid`` do not shed it)."""
    needle = f"DUET_TEST_TAG={tag}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.add(int(entry))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def ours_left(
    before: Snapshot, after: Snapshot, *, ours: set[int], existing: set[int], tag: str
) -> list[str]:
    """What the test left: new objects owned by the test process or a descendant it had, and
    processes it started that still run (killed here, after ``GRACE_S``, so the next test starts
    clean). ``existing``: descendants that ran before the test (not its own)."""
    owners = ours | {os.getpid()}

    def owned(path: str) -> bool:
        m = OWNED_RE.match(os.path.basename(path))
        return m is not None and int(m.group(1)) in owners

    left = [f"cgroup {p}" for p in sorted(after.cgroups - before.cgroups) if owned(p)]
    left += [f"file {p}" for p in sorted(after.files - before.files) if owned(p)]
    left += [f"worktree {p}" for p in sorted(after.slots - before.slots)]
    deadline = time.monotonic() + GRACE_S
    while True:
        running = (set(descendants(os.getpid())) - existing) | tagged(tag)
        running = {pid for pid in running if _alive(pid)}
        if not running or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in sorted(running):
        left.append(f"process {pid}: {_cmdline(pid)}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left
