"""One reader of the machine: ``/sys`` and ``/proc`` files, cgroup mounts, our own cgroups, CPU
lists and processes.

Everything duet learns about the machine it runs on is read here, once, with one return type
per fact, so that ``duet doctor`` (:mod:`duet_bench.doctor`), the environment record
(:mod:`duet_bench.environment`), the topology (:mod:`duet_bench.topology`), the measuring lock
(:mod:`duet.lock`) and the isolation backends (:mod:`duet_bench.isolation`) cannot disagree about
what they read: the doctor promises never to claim what the runner then refuses, so both parse the
cgroup mounts with :func:`parse_mountinfo`.

Conventions:

- a file that cannot be read is ``None`` (:func:`read_text`, :func:`read_int`,
  :func:`read_cpu_list`), never an exception: a missing file is a fact about the machine;
  :func:`read_text_or_reason` also says why, for the ``missing`` maps of the results file;
- CPU and node lists are sorted tuples of ints (:func:`parse_cpu_list`), written back as the
  kernel writes them (:func:`format_cpu_list`);
- the roots are injectable: :class:`Machine` holds a sysfs and a procfs root (synthetic trees in
  the tests), :data:`THIS` is the real ``/sys`` and ``/proc``, and the module-level functions
  :func:`cgroup_mounts`, :func:`own_cgroups`, :func:`pid_alive` and :func:`online_cpus` read
  this machine for the isolation backends.

Standard library only: the isolation backends import it inside the measured environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = [
    "THIS",
    "V1_CONTROLLERS",
    "CgroupMount",
    "CgroupVersion",
    "Machine",
    "ProcessStat",
    "cgroup_mounts",
    "cgroup_version",
    "format_cpu_list",
    "online_cpus",
    "own_cgroups",
    "parse_cpu_list",
    "parse_mountinfo",
    "parse_proc_cgroup",
    "pid_alive",
    "read_cpu_list",
    "read_int",
    "read_int_or_reason",
    "read_text",
    "read_text_or_reason",
]

# Controllers a cgroup-v1 mount can carry; its other super options (rw, name=systemd, ...) are
# not controllers.
V1_CONTROLLERS = frozenset(
    {
        "blkio",
        "cpu",
        "cpuacct",
        "cpuset",
        "devices",
        "freezer",
        "hugetlb",
        "memory",
        "misc",
        "net_cls",
        "net_prio",
        "perf_event",
        "pids",
        "rdma",
    }
)

CgroupVersion: TypeAlias = Literal["v1", "v2", "hybrid", "none"]


# --------------------------------------------------------------------------------------------
# Files


def read_text_or_reason(path: Path) -> tuple[str | None, str]:
    """``(stripped text, "")``, or ``(None, reason)`` when ``path`` cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip(), ""
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"


def read_text(path: Path) -> str | None:
    """The stripped text of ``path``, None when it cannot be read."""
    return read_text_or_reason(path)[0]


def read_int_or_reason(path: Path) -> tuple[int | None, str]:
    """``(integer, "")``, or ``(None, reason)`` when unreadable or not an integer."""
    text, reason = read_text_or_reason(path)
    if text is None:
        return None, reason
    try:
        return int(text), ""
    except ValueError:
        return None, f"{path} holds {text!r}, not an integer"


def read_int(path: Path) -> int | None:
    """The integer in ``path``, None when unreadable or not an integer."""
    return read_int_or_reason(path)[0]


def read_cpu_list(path: Path) -> tuple[int, ...] | None:
    """The CPU (or node) list in ``path``, None when unreadable or not a list."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return parse_cpu_list(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# CPU lists


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU list such as ``"0-3,8,10-11"``.

    Parameters
    ----------
    text : str
        The list as the kernel writes it in ``online``, ``thread_siblings_list``,
        ``shared_cpu_list``, ``node*/cpulist``, ``cpuset.cpus``, ``Cpus_allowed_list``.
        Surrounding whitespace is ignored; an empty string is the empty list.

    Returns
    -------
    tuple of int
        The CPU ids, sorted and without duplicates.

    Raises
    ------
    ValueError
        If an element is not a number or a range ``a-b`` with ``a <= b``.
    """
    ids: set[int] = set()
    text = text.strip()
    if not text:
        return ()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        first, sep, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if sep else lo
        except ValueError:
            raise ValueError(f"not a CPU list: {text!r} (bad element {part!r})") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"not a CPU list: {text!r} (bad range {part!r})")
        ids.update(range(lo, hi + 1))
    return tuple(sorted(ids))


def format_cpu_list(ids: Iterable[int]) -> str:
    """Write CPU ids the way the kernel does (``"0-3,8"``), the inverse of :func:`parse_cpu_list`.

    Parameters
    ----------
    ids : iterable of int
        CPU ids in any order; duplicates are ignored.

    Returns
    -------
    str
        Ascending ranges joined by commas; ``""`` for no ids.
    """
    parts: list[str] = []
    ordered = sorted(set(ids))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


# --------------------------------------------------------------------------------------------
# Cgroups


@dataclass(frozen=True, slots=True)
class CgroupMount:
    """One cgroup file system mount from ``/proc/<pid>/mountinfo``."""

    mountpoint: str
    fstype: str  # "cgroup" (v1) or "cgroup2"
    root: str  # the cgroup mounted there ("/" unless inside a cgroup namespace or bind mount)
    controllers: frozenset[str]  # v1 only: the controllers among the super options


def _unescape(text: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[CgroupMount]:
    """The cgroup (v1) and cgroup2 mounts in the text of a ``mountinfo`` file, in its order.

    Each line is ``id parent major:minor root mountpoint options [optional...] - fstype source
    super-options`` (``proc(5)``); the optional fields end at the ``-`` separator.
    """
    found: list[CgroupMount] = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        left_fields = left.split()
        right_fields = right.split()
        if len(left_fields) < 5 or len(right_fields) < 3:
            continue
        fstype = right_fields[0]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        options = right_fields[2].split(",") if fstype == "cgroup" else []
        found.append(
            CgroupMount(
                mountpoint=_unescape(left_fields[4]),
                fstype=fstype,
                root=_unescape(left_fields[3]),
                controllers=frozenset(o for o in options if o in V1_CONTROLLERS),
            )
        )
    return found


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup``: controller -> cgroup path; the cgroup2 entry has key ``""``.

    Named v1 hierarchies keep their key as the kernel writes it (``name=systemd``)."""
    result: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            result[""] = path
        for controller in controllers.split(","):
            if controller:
                result[controller] = path
    return result


def cgroup_version(mounts: Iterable[CgroupMount]) -> CgroupVersion:
    """The layout: ``v1``, ``v2``, ``hybrid`` (v1 controllers and a cgroup2 hierarchy beside
    them, systemd's layout with ``/sys/fs/cgroup/unified``) or ``none``.

    A v1 hierarchy without controllers (systemd's ``name=systemd`` beside a pure cgroup2
    mount) does not make a layout v1 or hybrid: no controller can be used through it."""
    kinds = {m.fstype for m in mounts if m.fstype == "cgroup2" or m.controllers}
    if kinds == {"cgroup", "cgroup2"}:
        return "hybrid"
    if "cgroup" in kinds:
        return "v1"
    if "cgroup2" in kinds:
        return "v2"
    return "none"


# --------------------------------------------------------------------------------------------
# The machine


@dataclass(frozen=True, slots=True)
class ProcessStat:
    """The fields of ``/proc/<pid>/stat`` that duet uses (``proc(5)``)."""

    state: str  # R, S, D, Z (zombie), X (dead), ...
    parent_pid: int
    process_group: int
    ticks: int | None  # utime + stime in clock ticks; None when the line is cut short

    @classmethod
    def parse(cls, text: str) -> ProcessStat | None:
        """Parse the text of a stat file; None when it is not one."""
        # The command name in parentheses may hold spaces and ")": split after the last ")".
        # After it: state is field 3, ppid 4, pgrp 5, utime 14 and stime 15 (1-based).
        fields = text.rpartition(")")[2].split()
        if len(fields) < 3 or not (fields[1].isdigit() and fields[2].isdigit()):
            return None
        ticks = None
        if len(fields) > 12 and fields[11].isdigit() and fields[12].isdigit():
            ticks = int(fields[11]) + int(fields[12])
        return cls(fields[0], int(fields[1]), int(fields[2]), ticks)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


@dataclass(frozen=True, slots=True)
class Machine:
    """The machine as seen through a sysfs and a procfs root.

    Attributes
    ----------
    sys, proc : Path
        The roots; synthetic trees in tests, ``/sys`` and ``/proc`` in :data:`THIS`.
    """

    sys: Path = Path("/sys")
    proc: Path = Path("/proc")

    @property
    def live(self) -> bool:
        """Whether ``proc`` is this machine's procfs (so pids can be signalled)."""
        return self.proc == Path("/proc")

    def on_sys(self, path: str) -> Path:
        """Map an absolute path under /sys (a mount point) onto the sysfs root in use."""
        if _under(path, "/sys"):
            return self.sys / path[len("/sys") :].lstrip("/")
        return Path(path)

    # ---- cgroups

    def cgroup_mounts(self, under: str | None = None) -> list[CgroupMount]:
        """The cgroup mounts of this process (at or below ``under`` when given); ``[]`` when
        ``<proc>/self/mountinfo`` cannot be read."""
        text = read_text(self.proc / "self" / "mountinfo")
        mounts = parse_mountinfo(text or "")
        if under is None:
            return mounts
        top = os.path.normpath(under)
        return [m for m in mounts if _under(m.mountpoint, top)]

    def own_cgroups(self, pid: int | str = "self") -> dict[str, str]:
        """The cgroups of ``pid`` (:func:`parse_proc_cgroup`).

        Raises
        ------
        OSError
            When ``<proc>/<pid>/cgroup`` cannot be read (the caller says what that means).
        """
        path = self.proc / str(pid) / "cgroup"
        return parse_proc_cgroup(path.read_text(encoding="utf-8", errors="replace"))

    # ---- CPUs

    def online_cpus(self) -> tuple[int, ...]:
        """``devices/system/cpu/online``; our affinity when it cannot be read."""
        online = read_cpu_list(self.sys / "devices" / "system" / "cpu" / "online")
        return online if online is not None else tuple(sorted(os.sched_getaffinity(0)))

    # ---- processes

    def stat(self, pid: int) -> ProcessStat | None:
        """``<proc>/<pid>/stat``, None when it cannot be read (the process is gone)."""
        text = read_text(self.proc / str(pid) / "stat")
        return None if text is None else ProcessStat.parse(text)

    def pid_alive(self, pid: int) -> bool:
        """Whether ``pid`` runs (a zombie is dead: it will never run again).

        On this machine's procfs the kernel is asked first (``kill(pid, 0)``): a process of
        another user that ``hidepid`` hides from /proc is alive."""
        if pid <= 0:
            return False
        if self.live:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
        stat = self.stat(pid)
        return stat is not None and stat.state not in ("Z", "X")

    def parent_pid(self, pid: int) -> int | None:
        """The parent of ``pid``, None when it cannot be read."""
        stat = self.stat(pid)
        return stat.parent_pid if stat is not None else None

    def cmdline(self, pid: int) -> str | None:
        """The command line of ``pid`` on one line (a ``python -c`` program has newlines),
        None when unreadable; ``""`` for a kernel thread."""
        try:
            raw = (self.proc / str(pid) / "cmdline").read_bytes()
        except OSError:
            return None
        words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
        return " ".join(" ".join(words).split())

    def comm(self, pid: int) -> str | None:
        """The short name of ``pid`` (``<proc>/<pid>/comm``)."""
        return read_text(self.proc / str(pid) / "comm")

    def allowed_cpus(self, pid: int) -> tuple[int, ...] | None:
        """The CPUs ``pid`` may run on (``Cpus_allowed_list``), None when unreadable."""
        text = read_text(self.proc / str(pid) / "status")
        if text is None:
            return None
        for line in text.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                try:
                    return parse_cpu_list(line.split(":", 1)[1])
                except ValueError:
                    return None
        return None

    def pids(self) -> list[int]:
        """The pids listed in the procfs root (sorted)."""
        try:
            return sorted(int(e.name) for e in self.proc.iterdir() if e.name.isdigit())
        except OSError:
            return []

    def process_ticks(self) -> dict[int, int]:
        """``pid -> utime + stime`` (clock ticks) of every process that can be read."""
        out: dict[int, int] = {}
        for pid in self.pids():
            stat = self.stat(pid)
            if stat is not None and stat.ticks is not None:
                out[pid] = stat.ticks
        return out


#: This machine: the real ``/sys`` and ``/proc``.
THIS = Machine()


def cgroup_mounts(under: str | None = None) -> list[CgroupMount]:
    """This process's cgroup mounts at or below ``under`` (:meth:`Machine.cgroup_mounts`)."""
    return THIS.cgroup_mounts(under)


def own_cgroups(pid: int | str = "self") -> dict[str, str]:
    """``/proc/<pid>/cgroup`` of this machine (:meth:`Machine.own_cgroups`); raises OSError."""
    return THIS.own_cgroups(pid)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs on this machine (:meth:`Machine.pid_alive`)."""
    return THIS.pid_alive(pid)


def online_cpus() -> tuple[int, ...]:
    """This machine's online CPUs (:meth:`Machine.online_cpus`)."""
    return THIS.online_cpus()
