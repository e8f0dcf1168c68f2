"""The environment record of a measurement, assembled from its parts (docs/statistics.md, method 7).

Each part has its reader in a module of its own (:mod:`.cpu`, :mod:`.kernel`,
:mod:`.frequency`, :mod:`.memory`, :mod:`.load`); this module puts them together in the order
of the record, with the versions of Python and duet.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from pathlib import Path

import duet_bench
from duet_bench.environment.cpu import (
    measured_cpus,
    read_cpu,
    read_hypervisor,
    read_smt,
    resolve_pair,
)
from duet_bench.environment.frequency import read_cpufreq, read_thermal
from duet_bench.environment.kernel import read_cgroup, read_clocksource, read_kernel
from duet_bench.environment.kind import machine_kind
from duet_bench.environment.load import read_load_average, read_steal
from duet_bench.environment.memory import read_memory
from duet_bench.environment.record import Record
from duet_bench.machine import Machine
from duet_bench.topology import CorePair, Topology

__all__ = ["ENVIRONMENT_VERSION", "capture_environment"]

#: Version of the dict's layout; bump it when a key changes meaning or moves.
ENVIRONMENT_VERSION = 1


def capture_environment(
    *,
    topology: Topology | None = None,
    pair: CorePair | None = None,
    isolation: str | None = None,
    proc: str = "/proc",
    sysfs: str = "/sys",
) -> dict[str, object]:
    """Capture the environment of a measurement as a JSON-ready dict.

    ``topology`` is read from ``sysfs`` when not given. ``pair`` is the CPUs the sides run on;
    when not given it is chosen with :func:`~duet_bench.topology.choose_pair` (``"pair_source":
    "automatic"``), so the runner must pass the pair it really uses (``--cores`` included).
    ``isolation`` is the level actually achieved (``cgroup-v2``, ``cgroup-v1``,
    ``affinity-only``), recorded as missing when not given. ``proc`` and ``sysfs`` are the
    procfs and sysfs roots (synthetic trees in tests).

    Returns the record (keys in ``docs/topology.md``); values that could not be read are None
    and listed with the reason in ``result["missing"]`` under their dotted path.
    """
    rec = Record()
    proc_root, sys_root = Path(proc), Path(sysfs)
    topology, pair, pair_source = resolve_pair(topology, pair, sys_root, rec)
    cpus = measured_cpus(topology, pair)
    env: dict[str, object] = {
        "duet_environment": ENVIRONMENT_VERSION,
        "captured_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": os.uname().nodename,
        "duet_version": duet_bench.__version__,
        "python": _python(),
        "kernel": read_kernel(proc_root, rec),
        "cpu": read_cpu(proc_root, topology, rec),
        "hypervisor": read_hypervisor(sys_root, topology),
        "smt": read_smt(sys_root, rec),
        "topology": rec.get("topology", None if topology is None else topology.summary(), ""),
        "pair": rec.get("pair", None if pair is None else pair.as_dict(), ""),
        "pair_source": pair_source,
        "isolation": rec.get(
            "isolation",
            isolation,
            "not given to capture_environment (the runner records the level it achieved)",
        ),
        "cgroup": read_cgroup(Machine(sys=sys_root, proc=proc_root), rec),
        "cpufreq": read_cpufreq(sys_root, cpus, rec),
        "thermal": read_thermal(sys_root, cpus, rec),
        "clocksource": read_clocksource(sys_root, rec),
        "memory": read_memory(proc_root, rec),
        "load_average": read_load_average(proc_root, rec),
        "steal": read_steal(proc_root, rec),
    }
    if pair_source is None:
        rec.missing["pair_source"] = rec.missing.get("pair", "no pair")
    env["machine_kind"] = machine_kind(env)
    env["missing"] = dict(sorted(rec.missing.items()))
    return env


def _python() -> dict[str, object]:
    """The record's ``python``: the interpreter duet itself runs on."""
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
    }
