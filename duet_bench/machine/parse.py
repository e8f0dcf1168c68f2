"""The kernel's texts duet reads, parsed: CPU lists, cgroup mounts and memberships, a process's
``stat`` line, and the machine-wide figures of ``/proc`` (``stat``, ``loadavg``, ``pressure``).

Pure functions of text (``proc(5)``, the kernel's cgroup and PSI documentation); the reading,
and which file, is :mod:`duet_bench.machine`'s, which re-exports every name here. Standard
library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

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
# Processes


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


# --------------------------------------------------------------------------------------------
# The whole machine


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """The aggregate ``cpu`` line of ``/proc/stat``: clock ticks of every CPU since boot."""

    steal: int  # taken by the hypervisor for other guests
    idle: int  # idle + iowait
    total: int  # user nice system idle iowait irq softirq steal (guest is counted in user)

    @classmethod
    def parse(cls, text: str, name: str) -> tuple[CpuTicks | None, str]:
        """``(ticks, "")``, or ``(None, why)``; ``name`` is the file, for the reason."""
        line = next((ln for ln in text.splitlines() if ln.startswith("cpu ")), None)
        if line is None:
            return None, f"{name} has no aggregate 'cpu' line"
        numbers = [int(x) for x in line.split()[1:] if x.isdigit()]
        if len(numbers) < 8:
            return None, f"{name} has no steal column (kernel older than 2.6.11)"
        return cls(numbers[7], numbers[3] + numbers[4], sum(numbers[:8])), ""


def parse_load_average(text: str, name: str) -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages at the start of a ``loadavg`` file.

    Raises
    ------
    ValueError
        If it does not start with three numbers (the message names ``name``).
    """
    fields = text.split()
    if len(fields) < 3:
        raise ValueError(f"{name} holds {' '.join(fields)!r}, not three load averages")
    try:
        return float(fields[0]), float(fields[1]), float(fields[2])
    except ValueError:
        raise ValueError(f"{name} does not start with three numbers: {fields[:3]}") from None


def parse_pressure_some_avg10(text: str) -> float | None:
    """PSI's ``some avg10`` (the percentage of the last 10 s in which some runnable task
    waited), None when the text has none."""
    for line in text.splitlines():
        if line.startswith("some "):
            for word in line.split()[1:]:
                key, _, value = word.partition("=")
                if key == "avg10":
                    try:
                        return float(value)
                    except ValueError:
                        return None
    return None
