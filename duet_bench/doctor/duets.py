"""Other duet runs: another duet measuring now (the holder of the measuring lock, live
``duet-<pid>-*`` entries in ``/dev/shm``, ``/var/tmp`` and the cgroup hierarchies), and the
leftovers of one that crashed."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from duet_bench.doctor.load import command_of
from duet_bench.doctor.model import Check, Finding
from duet_bench.isolation import PARENT_NAME_RE
from duet_bench.lock import parse_holder
from duet_bench.machine import Machine

__all__ = ["other_duets"]


def _cgroup_dirs(machine: Machine) -> list[Path]:
    """``duet-*`` directories in every cgroup hierarchy, not descending into them."""
    found: list[Path] = []
    for mount in machine.cgroup_mounts():
        top = machine.on_sys(mount.mountpoint)
        base_depth = len(top.parts)
        for dirpath, dirnames, _ in os.walk(top):
            here = Path(dirpath)
            for name in list(dirnames):
                if name.startswith("duet-"):
                    found.append(here / name)
                    dirnames.remove(name)
            # duet's parents sit in our own cgroup or next to it, a few levels down at most.
            if len(here.parts) - base_depth >= 4:
                dirnames.clear()
    return sorted(set(found))


def _lock_holder(lock_file: Path) -> tuple[int, str] | None:
    """``(pid, command)`` written in the measuring lock file (:mod:`duet_bench.lock`), possibly
    stale.

    Read without taking the lock: the doctor must not make a starting duet wait or fail."""
    try:
        with lock_file.open("rb") as f:
            holder = parse_holder(f.read(8192))
    except OSError:
        return None
    return (holder.pid, holder.command) if holder is not None else None


def other_duets(
    machine: Machine,
    run_dirs: Iterable[Path],
    self_pid: int,
    lock_file: Path | None,
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    live: dict[int, list[str]] = {}
    stale: list[str] = []
    holder = _lock_holder(lock_file) if lock_file is not None else None
    if holder is not None and holder[0] != self_pid and machine.pid_alive(holder[0]):
        live.setdefault(holder[0], []).append(f"holds the measuring lock {lock_file}")
    candidates: list[Path] = []
    for directory in run_dirs:
        try:
            candidates.extend(sorted(directory.iterdir()))
        except OSError:
            continue
    candidates.extend(_cgroup_dirs(machine))
    for path in candidates:
        match = PARENT_NAME_RE.match(path.name) or re.match(r"^duet-(\d+)-", path.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == self_pid:
            continue
        if machine.pid_alive(pid):
            live.setdefault(pid, []).append(str(path))
        else:
            stale.append(str(path))
    findings: list[Finding] = []
    checks: list[Check] = []
    if live:

        def who(pid: int) -> str:
            # The process's own command line; the lock file's text when /proc hides it.
            command = command_of(machine, pid)
            if not command and holder is not None and holder[0] == pid:
                command = holder[1]
            return f"pid {pid} ({command})" if command else f"pid {pid}"

        described = "; ".join(who(pid) for pid in sorted(live))
        pids = sorted(live)
        findings.append(
            Finding(
                "warning",
                "duet",
                f"another duet is running on this machine: {described}",
                "two duets compete for the same cores: each one's sides are disturbed by the "
                "other's, and a calibration taken now describes a busier machine than usual",
                f"wait for it to finish (`tail --pid={pids[0]} -f /dev/null`), or let duet queue "
                "behind it (`duet run --wait ...`; without --wait a second duet refuses to "
                "measure), or serialise the jobs on this runner (a CI concurrency group)",
            )
        )
    else:
        checks.append(Check("duet", "no other duet is running"))
    if stale:
        shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
        findings.append(
            Finding(
                "notice",
                "duet",
                f"leftovers of a duet that did not finish: {shown}",
                "they hold no CPU, but barrier files and cgroups accumulate",
                "the next `duet run` removes them (it cleans up after dead invocations); to do "
                "it now: `sudo rm -rf /dev/shm/duet-* /var/tmp/duet-*` for the files and "
                "`sudo rmdir` on the cgroup directories (only while no duet runs)",
            )
        )
    return findings, checks, {"running": {str(k): v for k, v in live.items()}, "stale": stale}
