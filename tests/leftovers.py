"""What a test may leave behind, looked for everywhere duet puts things (tests/conftest.py's
``no_leftovers``): processes, ``duet-<pid>-*`` cgroups at any depth of every cgroup hierarchy,
barrier files in /dev/shm, work directories in /var/tmp, temporary directories (``duet-demo-``,
``duet-collect-``, ``duet-plots-``, ``duet-calibrate-``: in the test's own ``TMPDIR``), worktree
slots in the caches (the run's, /var/tmp's, and any ``duet/worktrees`` cache under the test's
``tmp_path``, as ``duet bisect``'s tests give it its own ``XDG_CACHE_HOME``), git worktrees still
registered in the test's repositories, and changes of state: a cgroup's
``cgroup.subtree_control`` (each hierarchy's root and first level) and mounts.

Other developers' duets and test runs share the machine and make their own ``duet-<pid>-*``
objects at the same time: an object counts only when it is new since the test began and its
owner pid is the test process or one of its descendants; a temporary directory counts when it is
in the test's own ``TMPDIR``; a mount when it lies under the test's directories or is named after
a pid of its. The cgroup hierarchies are found by reading /proc/self/mountinfo here, not through
duet's own probes (which the tests check)."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = "/sys/fs/cgroup"
MOUNTINFO = "/proc/self/mountinfo"
#: ``duet-<pid>-...`` (cgroups, barrier files, work directories), ``duet-worktrees-<uid>`` aside.
OWNED_RE = re.compile(r"^duet-(\d+)-")
#: How long a process the test started may take to exit after the test (a SIGTERM'd duet
#: cleans up first).
GRACE_S = 3.0


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of /proc/self/mountinfo."""

    mountpoint: str
    fstype: str
    source: str
    #: The superblock's options: a cgroup v1 hierarchy's controllers are among them.
    super_options: frozenset[str]


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read_mounts(path: str = MOUNTINFO) -> list[Mount]:
    """The mount table, read from ``path`` (proc(5): ``... mountpoint options [optional...] -
    fstype source super-options``)."""
    mounts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if "-" not in fields:
                continue
            dash = fields.index("-")
            if dash < 5 or len(fields) < dash + 3:
                continue
            mounts.append(
                Mount(
                    mountpoint=_unescape(fields[4]),
                    fstype=fields[dash + 1],
                    source=_unescape(fields[dash + 2]),
                    super_options=frozenset(fields[dash + 3].split(","))
                    if len(fields) > dash + 3
                    else frozenset(),
                )
            )
    return mounts


def cgroup_hierarchies(path: str = MOUNTINFO) -> list[Mount]:
    """Every mounted cgroup hierarchy, v1 (``cgroup``) and v2 (``cgroup2``)."""
    return [m for m in read_mounts(path) if m.fstype in ("cgroup", "cgroup2")]


def v1_controllers(path: str = MOUNTINFO) -> set[str]:
    """The controllers of the mounted cgroup v1 hierarchies."""
    known = {"cpuset", "cpu", "cpuacct", "memory", "pids", "blkio", "devices", "freezer",
             "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"}  # fmt: skip
    return {
        o for m in cgroup_hierarchies(path) if m.fstype == "cgroup" for o in m.super_options
    } & known


def v2_mountpoint(path: str = MOUNTINFO) -> str | None:
    """The cgroup2 hierarchy's mount point, if one is mounted."""
    return next((m.mountpoint for m in cgroup_hierarchies(path) if m.fstype == "cgroup2"), None)


@dataclass(frozen=True, slots=True)
class Snapshot:
    cgroups: frozenset[str]
    files: frozenset[str]
    slots: frozenset[str]
    #: ``cgroup.subtree_control`` of each hierarchy's root and first level: path -> contents.
    subtree: tuple[tuple[str, str], ...] = ()
    #: Mount points with their type and source.
    mounts: frozenset[str] = frozenset()


def duet_cgroups() -> set[str]:
    """Every ``duet-*`` cgroup directory at any depth of every mounted hierarchy (not below one:
    its children are its own business)."""
    found: set[str] = set()
    mounts = {m.mountpoint for m in cgroup_hierarchies()}
    for mountpoint in sorted(mounts):
        for dirpath, dirnames, _ in os.walk(mountpoint):
            for name in list(dirnames):
                if name.startswith("duet-"):
                    found.add(os.path.join(dirpath, name))
                    dirnames.remove(name)
    return found


def duet_files() -> set[str]:
    return set(glob.glob("/dev/shm/duet-*")) | set(glob.glob("/var/tmp/duet-*"))


def _walk_for(top: Path, wanted: str, depth: int = 6) -> list[Path]:
    """Directories called ``wanted`` under ``top`` (at most ``depth`` levels, not into a
    ``.git`` or one another)."""
    found = []
    base = str(top).count(os.sep)
    for dirpath, dirnames, _ in os.walk(top):
        if wanted in dirnames:
            found.append(Path(dirpath) / wanted)
        dirnames[:] = [d for d in dirnames if d not in (".git", wanted, "node_modules")]
        if dirpath.count(os.sep) - base >= depth:
            dirnames.clear()
    return found


def worktree_caches(test_dirs: tuple[Path, ...] = ()) -> list[Path]:
    """The worktree caches duet uses for this user (versions.slots.default_cache_dir), and any
    under ``test_dirs`` (a test that gives duet an ``XDG_CACHE_HOME`` of its own)."""
    roots = [
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "duet" / "worktrees"
    ]
    roots += [Path(p) for p in glob.glob("/var/tmp/duet-worktrees-*")]
    for top in test_dirs:
        roots += [d / "worktrees" for d in _walk_for(top, "duet")]
    return [cache for root in roots if root.is_dir() for cache in root.iterdir() if cache.is_dir()]


def worktree_slots(test_dirs: tuple[Path, ...] = ()) -> set[str]:
    """Held slots (a ``<name>.lock``) and stamps without their worktree, in every cache."""
    found: set[str] = set()
    for cache in worktree_caches(test_dirs):
        for entry in cache.iterdir():
            if entry.name.endswith(".lock") and not entry.name.startswith("."):
                found.add(f"{entry} (a slot still locked)")
            elif entry.name.endswith(".stamp") and not (cache / entry.name[:-6]).exists():
                found.add(f"{entry} (a build stamp without its worktree)")
    return found


def registered_worktrees(test_dirs: tuple[Path, ...]) -> set[str]:
    """Git worktrees still registered (``.git/worktrees/<name>``) in the repositories under
    ``test_dirs``: ``duet compare`` and ``bisect`` remove theirs."""
    found: set[str] = set()
    for top in test_dirs:
        for dirpath, dirnames, _ in os.walk(top):
            if ".git" in dirnames:
                registered = Path(dirpath) / ".git" / "worktrees"
                if registered.is_dir():
                    found |= {
                        f"{p} (a git worktree still registered)"
                        for p in registered.iterdir()
                        if _made_by_duet(p)
                    }
            dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
    return found


def _made_by_duet(registration: Path) -> bool:
    """Whether a registered worktree is one of duet's (its path in a duet worktree cache,
    ``.../duet/worktrees/...`` or ``/var/tmp/duet-worktrees-*``), not one a test made itself
    to see duet leave it alone."""
    try:
        where = (registration / "gitdir").read_text().strip()
    except OSError:
        return True  # a broken registration: report it
    return "/duet/worktrees/" in where or where.startswith("/var/tmp/duet-worktrees-")


def temporary_dirs(tmpdir: Path | None) -> set[str]:
    """``duet-*`` entries in the test's own ``TMPDIR`` (demo, collect, plots, calibrate)."""
    if tmpdir is None or not tmpdir.is_dir():
        return set()
    return {str(p) for p in tmpdir.iterdir() if p.name.startswith("duet-")}


def subtree_controls() -> tuple[tuple[str, str], ...]:
    """``cgroup.subtree_control`` of each cgroup2 hierarchy's root and its first level."""
    found = []
    for mount in cgroup_hierarchies():
        if mount.fstype != "cgroup2":
            continue
        root = Path(mount.mountpoint)
        for path in [root / "cgroup.subtree_control", *root.glob("*/cgroup.subtree_control")]:
            if path.parent.name.startswith("duet-"):
                continue  # a duet's own parent: its lifetime is checked as a cgroup
            with contextlib.suppress(OSError):
                found.append((str(path), " ".join(sorted(path.read_text().split()))))
    return tuple(sorted(found))


def mount_points() -> frozenset[str]:
    return frozenset(f"{m.mountpoint} ({m.fstype} {m.source})" for m in read_mounts())


def snapshot(test_dirs: tuple[Path, ...] = (), tmpdir: Path | None = None) -> Snapshot:
    """What exists now; ``test_dirs``: the test's own directories, ``tmpdir``: its TMPDIR."""
    return Snapshot(
        frozenset(duet_cgroups()),
        frozenset(duet_files() | temporary_dirs(tmpdir)),
        frozenset(worktree_slots(test_dirs) | registered_worktrees(test_dirs)),
        subtree_controls(),
        mount_points(),
    )


def lock_holders(path: str) -> set[int]:
    """The pids that hold a lock on the file at ``path`` (/proc/locks, by its inode)."""
    try:
        st = os.stat(path)
    except OSError:
        return set()
    inode = f":{st.st_ino}"
    holders = set()
    with contextlib.suppress(OSError), open("/proc/locks", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" ("->" marks a waiter)
            if "->" in fields:
                continue
            if len(fields) >= 6 and fields[5].endswith(inode) and fields[4].isdigit():
                holders.add(int(fields[4]))
    return holders


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
    before: Snapshot,
    after: Snapshot,
    *,
    ours: set[int],
    existing: set[int],
    tag: str,
    test_dirs: tuple[Path, ...] = (),
    tmpdir: Path | None = None,
) -> list[str]:
    """What the test left: new objects owned by the test process or a descendant it had, and
    processes it started that still run (killed here, after ``GRACE_S``, so the next test starts
    clean). ``existing``: descendants that ran before the test (not its own); ``test_dirs`` and
    ``tmpdir``: the test's own directories (what is in them is the test's)."""
    owners = ours | {os.getpid()}
    own_dirs = tuple(str(d) for d in (*test_dirs, *([tmpdir] if tmpdir else ())))

    def owned(path: str) -> bool:
        if own_dirs and path.startswith(own_dirs):
            return True
        m = OWNED_RE.match(os.path.basename(path))
        return m is not None and int(m.group(1)) in owners

    def mount_owned(line: str) -> bool:
        point = line.rsplit(" (", 1)[0]
        return owned(point) or any(
            (m := OWNED_RE.match(part)) is not None and int(m.group(1)) in owners
            for part in point.split("/")
        )

    left = [f"cgroup {p}" for p in sorted(after.cgroups - before.cgroups) if owned(p)]
    left += [f"file {p}" for p in sorted(after.files - before.files) if owned(p)]

    def slot_owned(entry: str) -> bool:
        # A slot another process holds (another developer's duet) is not ours; one held by
        # nobody is a lock file left behind, one held by ours is still ours.
        if not entry.endswith("(a slot still locked)"):
            return True
        holders = lock_holders(entry.rsplit(" (", 1)[0])
        return not holders or bool(holders & owners)

    left += [f"worktree {p}" for p in sorted(after.slots - before.slots) if slot_owned(p)]
    left += [f"mount {m}" for m in sorted(after.mounts - before.mounts) if mount_owned(m)]
    was = dict(before.subtree)
    left += [
        f"state {path}: {was[path]!r} before the test, {now!r} after it"
        for path, now in after.subtree
        if path in was and was[path] != now
    ]
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
