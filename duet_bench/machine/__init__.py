"""One reader of the machine: ``/sys`` and ``/proc`` files, cgroup mounts, our own cgroups, CPU
lists, processes, and the machine-wide figures (CPU ticks, load average, CPU pressure).

Everything duet learns about the machine it runs on is read here, once, with one return type
per fact, so that ``duet doctor`` (:mod:`duet_bench.doctor`), the environment record
(:mod:`duet_bench.environment`), the topology (:mod:`duet_bench.topology`), the measuring lock
(:mod:`duet_bench.lock`), the file writer (:mod:`duet_bench.dirfd`), the version's jobs
(:mod:`duet_bench.isolation.jobs`) and the isolation backends (:mod:`duet_bench.isolation`)
cannot disagree about what they read: the doctor promises never to claim what the runner then
refuses, so both parse the cgroup mounts with :func:`parse_mountinfo`. The texts are parsed by
:mod:`duet_bench.machine.parse` (pure functions, every name re-exported here).

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
from dataclasses import dataclass
from pathlib import Path

from duet_bench.machine.parse import (
    V1_CONTROLLERS,
    CgroupMount,
    CgroupVersion,
    CpuTicks,
    ProcessStat,
    cgroup_version,
    format_cpu_list,
    parse_cpu_list,
    parse_load_average,
    parse_mountinfo,
    parse_pressure_some_avg10,
    parse_proc_cgroup,
)

__all__ = [
    "THIS",
    "V1_CONTROLLERS",
    "CgroupMount",
    "CgroupVersion",
    "CpuTicks",
    "Machine",
    "ProcessStat",
    "cgroup_mounts",
    "cgroup_version",
    "format_cpu_list",
    "online_cpus",
    "own_cgroups",
    "parse_cpu_list",
    "parse_load_average",
    "parse_mountinfo",
    "parse_pressure_some_avg10",
    "parse_proc_cgroup",
    "pid_alive",
    "read_cpu_list",
    "read_int",
    "read_int_or_reason",
    "read_text",
    "read_text_or_reason",
]

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
# The machine


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
        mounts = self.cgroup_mounts_or_reason()[0] or []
        if under is None:
            return mounts
        top = os.path.normpath(under)
        return [m for m in mounts if _under(m.mountpoint, top)]

    def cgroup_mounts_or_reason(self) -> tuple[list[CgroupMount] | None, str]:
        """``(mounts, "")`` from ``<proc>/self/mountinfo`` (:func:`parse_mountinfo`), or
        ``(None, why)`` when it cannot be read (the environment record's ``missing``)."""
        text, reason = read_text_or_reason(self.proc / "self" / "mountinfo")
        return (None, reason) if text is None else (parse_mountinfo(text), "")

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
        value = self.status_field(pid, "Cpus_allowed_list")
        try:
            return None if value is None else parse_cpu_list(value)
        except ValueError:
            return None

    def status_field(self, pid: int | str, key: str) -> str | None:
        """The value of ``key`` (``Umask``, ``CapEff``, ...) in ``<proc>/<pid>/status``, None
        when the file cannot be read or has no such line."""
        text = read_text(self.proc / str(pid) / "status")
        for line in (text or "").splitlines():
            name, colon, value = line.partition(":")
            if colon and name == key:
                return value.strip()
        return None

    def umask(self, pid: int | str = "self") -> int | None:
        """The umask of ``pid``, read without setting it (``os.umask`` would, for every
        thread); None when unknown (``Umask`` is in ``status`` from Linux 4.7)."""
        value = self.status_field(pid, "Umask")
        try:
            return None if value is None else int(value, 8)
        except ValueError:
            return None

    def capabilities(self, pid: int | str = "self") -> int | None:
        """The effective capabilities of ``pid`` (``CapEff``, a bit per capability of
        ``linux/capability.h``), None when unknown."""
        value = self.status_field(pid, "CapEff")
        try:
            return None if value is None else int(value, 16)
        except ValueError:
            return None

    def pids(self) -> list[int]:
        """The pids listed in the procfs root (sorted)."""
        try:
            return sorted(int(e.name) for e in self.proc.iterdir() if e.name.isdigit())
        except OSError:
            return []

    def group_alive(self, pgid: int) -> bool:
        """Whether a process of group ``pgid`` still runs. Zombies do not count: orphans of a
        group are reparented to PID 1, which in a container may never reap them. Without a
        procfs to list, the kernel is asked (``killpg(pgid, 0)``, which counts zombies)."""
        pids = self.pids()
        if not pids and self.live:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return False
            return True
        for pid in pids:
            stat = self.stat(pid)
            if stat is not None and stat.process_group == pgid and stat.state not in ("Z", "X"):
                return True
        return False

    def process_ticks(self) -> dict[int, int]:
        """``pid -> utime + stime`` (clock ticks) of every process that can be read."""
        out: dict[int, int] = {}
        for pid in self.pids():
            stat = self.stat(pid)
            if stat is not None and stat.ticks is not None:
                out[pid] = stat.ticks
        return out

    # ---- the whole machine

    def cpu_ticks_or_reason(self) -> tuple[CpuTicks | None, str]:
        """``<proc>/stat``'s aggregate CPU times (:class:`CpuTicks`), or None and why."""
        path = self.proc / "stat"
        text, reason = read_text_or_reason(path)
        return (None, reason) if text is None else CpuTicks.parse(text, str(path))

    def cpu_ticks(self) -> CpuTicks | None:
        """:meth:`cpu_ticks_or_reason` without the reason."""
        return self.cpu_ticks_or_reason()[0]

    def load_average(self) -> tuple[float, float, float]:
        """The 1, 5 and 15 minute load averages from ``<proc>/loadavg``.

        Raises
        ------
        OSError
            If the file cannot be read.
        ValueError
            If it does not start with three numbers.
        """
        path = self.proc / "loadavg"
        return parse_load_average(path.read_text(encoding="ascii"), str(path))

    def cpu_pressure(self) -> float | None:
        """PSI: the percentage of the last 10 s in which some runnable task waited for a CPU
        (``<proc>/pressure/cpu``), None without PSI."""
        text = read_text(self.proc / "pressure" / "cpu")
        return None if text is None else parse_pressure_some_avg10(text)


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
