"""The environment a measurement was taken in (``method.md`` section 7 of the design documents).

:func:`capture_environment` returns a JSON-ready dict for the results file: the CPU and its
topology, the chosen pair with its SMT siblings, kernel, cgroup version and isolation level,
what disturbs timings (frequency governor, turbo/boost, clocksource, swap, load, steal time,
thermal throttling; Fichte et al., *Complications for Computational Experiments from Modern
Processors*, CP 2021) and the versions of Python and duet.

A value that cannot be read is ``None`` in the dict and its dotted path is a key of the
top-level ``"missing"`` map, whose value says why (``{"cpufreq.governor.1": "... does not
exist"}``): the same convention as the results file's ``missing`` maps. Nothing unmeasured is
ever recorded as 0.

Only the model name comes from ``/proc/cpuinfo``; the topology comes from ``/sys``
(:mod:`duet_bench.topology`).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import duet_bench
from duet_bench.errors import DuetError
from duet_bench.machine import (
    Machine,
    cgroup_version,
    parse_mountinfo,
    read_int_or_reason,
    read_text_or_reason,
)
from duet_bench.topology import CorePair, Topology, choose_pair, detect_hypervisor, read_topology

__all__ = ["ENVIRONMENT_VERSION", "capture_environment", "load_average", "machine_kind"]

#: Version of the dict's layout; bump it when a key changes meaning or moves.
ENVIRONMENT_VERSION = 1

_NO_CPUFREQ = (
    "no cpufreq driver is loaded (usual inside a VM, where the host sets frequency and turbo)"
)


class _Record:
    """Collects missing values with their reasons while the dict is built."""

    def __init__(self) -> None:
        self.missing: dict[str, str] = {}

    def get(self, key: str, value: object, reason: str) -> object:
        """Return ``value``; when it is None, remember ``key`` as missing because of ``reason``."""
        if value is None:
            # The first reason given for a key is the most specific one; keep it.
            self.missing.setdefault(key, reason)
        return value


def load_average(proc: str | Path = "/proc") -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages from ``<proc>/loadavg``.

    Parameters
    ----------
    proc : str or Path
        The procfs root.

    Returns
    -------
    tuple of float
        ``(1 min, 5 min, 15 min)``.

    Raises
    ------
    OSError
        If the file cannot be read.
    ValueError
        If it does not start with three numbers.
    """
    path = Path(proc) / "loadavg"
    fields = path.read_text(encoding="ascii").split()
    if len(fields) < 3:
        raise ValueError(f"{path} holds {' '.join(fields)!r}, not three load averages")
    try:
        return float(fields[0]), float(fields[1]), float(fields[2])
    except ValueError:
        raise ValueError(f"{path} does not start with three numbers: {fields[:3]}") from None


def _cpu_model(proc: Path) -> tuple[str | None, str]:
    text, reason = read_text_or_reason(proc / "cpuinfo")
    if text is None:
        return None, reason
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    # x86 says "model name"; other architectures name the model differently.
    for key in ("model name", "Model", "cpu model", "cpu", "Processor"):
        if fields.get(key):
            return " ".join(fields[key].split()), ""
    if "CPU implementer" in fields and "CPU part" in fields:
        return f"ARM implementer {fields['CPU implementer']} part {fields['CPU part']}", ""
    return None, f"{proc / 'cpuinfo'} has no model name line"


def _meminfo(proc: Path) -> tuple[dict[str, int], str]:
    text, reason = read_text_or_reason(proc / "meminfo")
    if text is None:
        return {}, reason
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            unit = parts[1] if len(parts) > 1 else ""
            values[key.strip()] = int(parts[0]) * (1024 if unit == "kB" else 1)
    return values, ""


def _memory(proc: Path, rec: _Record) -> dict[str, object]:
    info, reason = _meminfo(proc)

    def field(name: str, key: str) -> object:
        why = reason or f"{proc / 'meminfo'} has no {name} line"
        return rec.get(f"memory.{key}", info.get(name), why)

    swap_used: int | None = None
    if "SwapTotal" in info and "SwapFree" in info:
        swap_used = info["SwapTotal"] - info["SwapFree"]
    swappiness, why = read_int_or_reason(proc / "sys" / "vm" / "swappiness")
    return {
        "total_bytes": field("MemTotal", "total_bytes"),
        "available_bytes": field("MemAvailable", "available_bytes"),
        "swap_total_bytes": field("SwapTotal", "swap_total_bytes"),
        "swap_used_bytes": rec.get(
            "memory.swap_used_bytes",
            swap_used,
            reason or f"{proc / 'meminfo'} lacks SwapTotal or SwapFree",
        ),
        "swappiness": rec.get("memory.swappiness", swappiness, why),
    }


def _steal(proc: Path, rec: _Record) -> dict[str, object]:
    text, reason = read_text_or_reason(proc / "stat")
    steal: int | None = None
    total: int | None = None
    if text is not None:
        line = next((ln for ln in text.splitlines() if ln.startswith("cpu ")), None)
        if line is None:
            reason = f"{proc / 'stat'} has no aggregate 'cpu' line"
        else:
            numbers = [int(x) for x in line.split()[1:] if x.isdigit()]
            if len(numbers) < 8:
                reason = f"{proc / 'stat'} has no steal column (kernel older than 2.6.11)"
            else:
                # user nice system idle iowait irq softirq steal; guest time is already
                # counted in user, so the first eight columns are the whole.
                steal, total = numbers[7], sum(numbers[:8])
    fraction = steal / total if steal is not None and total else None
    return {
        "ticks": rec.get("steal.ticks", steal, reason),
        "total_ticks": rec.get("steal.total_ticks", total, reason),
        "fraction_since_boot": rec.get(
            "steal.fraction_since_boot", fraction, reason or "no CPU time counted yet"
        ),
        "user_hz": os.sysconf("SC_CLK_TCK"),
    }


# Kernel boot options that change how steady timings are. Only these are recorded: the whole
# command line can hold site-specific or secret values that do not belong in a results file.
_BOOT_OPTIONS = frozenset(
    {
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "threadirqs",
        "nosmt",
        "mitigations",
        "preempt",
        "intel_pstate",
        "amd_pstate",
        "cpufreq.default_governor",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "idle",
        "transparent_hugepage",
        "clocksource",
        "tsc",
        "nowatchdog",
        "nmi_watchdog",
        "skew_tick",
    }
)


def _boot_options(cmdline: str) -> dict[str, str]:
    """The timing-relevant options of a kernel command line (``name -> value``, "" if bare)."""
    options: dict[str, str] = {}
    for word in cmdline.split():
        if word == "--":
            break  # what follows is for init, not the kernel
        name, _, value = word.partition("=")
        if name in _BOOT_OPTIONS:
            options[name] = value
    return options


def _cgroup(machine: Machine, rec: _Record) -> dict[str, object]:
    mountinfo = machine.proc / "self" / "mountinfo"
    text, reason = read_text_or_reason(mountinfo)
    if text is None:
        return {
            "version": rec.get("cgroup.version", None, reason),
            "v1_controllers": rec.get("cgroup.v1_controllers", None, reason),
            "v2_mount": rec.get("cgroup.v2_mount", None, reason),
            "v2_controllers": rec.get("cgroup.v2_controllers", None, reason),
        }
    # The same parser as the isolation backends' (duet_bench.machine).
    mounts = parse_mountinfo(text)
    v1 = {c for m in mounts if m.fstype == "cgroup" for c in m.controllers}
    v2_mount = next((m.mountpoint for m in mounts if m.fstype == "cgroup2"), None)
    v2_controllers: list[str] | None = []
    if v2_mount is not None:
        controllers, why = read_text_or_reason(machine.on_sys(v2_mount) / "cgroup.controllers")
        v2_controllers = None if controllers is None else sorted(controllers.split())
        rec.get("cgroup.v2_controllers", v2_controllers, why)
    # "hybrid": systemd's layout with the v1 controllers plus an (almost) empty v2 hierarchy at
    # /sys/fs/cgroup/unified; duet's isolation then works through v1.
    return {
        "version": cgroup_version(mounts),
        "v1_controllers": sorted(v1),
        "v2_mount": rec.get("cgroup.v2_mount", v2_mount, "no cgroup2 file system is mounted"),
        "v2_controllers": v2_controllers,
    }


def _cpufreq_of(freq: Path, cpu: int, rec: _Record) -> dict[str, object]:
    """The frequency policy of one CPU whose ``cpufreq`` directory exists."""
    values: dict[str, object] = {}
    for key, name in (("governor", "scaling_governor"), ("driver", "scaling_driver")):
        text, reason = read_text_or_reason(freq / name)
        values[key] = rec.get(f"cpufreq.cpus.{cpu}.{key}", text, reason)
    for key, name in (
        ("min_khz", "scaling_min_freq"),
        ("max_khz", "scaling_max_freq"),
        ("hardware_max_khz", "cpuinfo_max_freq"),
    ):
        number, reason = read_int_or_reason(freq / name)
        values[key] = rec.get(f"cpufreq.cpus.{cpu}.{key}", number, reason)
    return values


def _cpufreq(sysfs: Path, cpus: Sequence[int], rec: _Record) -> dict[str, object]:
    cpu_root = sysfs / "devices" / "system" / "cpu"
    per_cpu: dict[str, object] = {}
    policy_boost: dict[int, str] = {}
    for cpu in cpus:
        freq = cpu_root / f"cpu{cpu}" / "cpufreq"
        if not freq.is_dir():
            per_cpu[str(cpu)] = rec.get(
                f"cpufreq.cpus.{cpu}", None, f"{freq} does not exist: {_NO_CPUFREQ}"
            )
            continue
        per_cpu[str(cpu)] = _cpufreq_of(freq, cpu, rec)
        boost_text, _ = read_text_or_reason(freq / "boost")
        if boost_text is not None:
            policy_boost[cpu] = boost_text

    intel_status, why_intel = read_text_or_reason(cpu_root / "intel_pstate" / "status")
    amd_status, why_amd = read_text_or_reason(cpu_root / "amd_pstate" / "status")
    global_boost, _ = read_text_or_reason(cpu_root / "cpufreq" / "boost")
    no_turbo, _ = read_text_or_reason(cpu_root / "intel_pstate" / "no_turbo")
    boost: str | None = None
    source: str | None = None
    # intel_pstate ignores cpufreq/boost and has its own switch with the opposite sense.
    if no_turbo in ("0", "1"):
        boost, source = ("on" if no_turbo == "0" else "off"), "intel_pstate/no_turbo"
    elif global_boost in ("0", "1"):
        boost, source = ("on" if global_boost == "1" else "off"), "cpufreq/boost"
    elif policy_boost:
        # amd-pstate (Linux 6.11+) and some other drivers switch boost per policy.
        states = {"on" if v == "1" else "off" for v in policy_boost.values() if v in ("0", "1")}
        if states:
            boost = states.pop() if len(states) == 1 else "mixed"
            source = "cpuN/cpufreq/boost"
    why_boost = ""
    if boost is None:
        has_driver = (
            any(isinstance(v, dict) for v in per_cpu.values()) or intel_status or amd_status
        )
        why_boost = (
            "the cpufreq driver offers no boost switch (no cpufreq/boost, intel_pstate/no_turbo "
            "or per-policy boost file)"
            if has_driver
            else _NO_CPUFREQ
        )
    return {
        "cpus": per_cpu,
        "boost": rec.get("cpufreq.boost", boost, why_boost),
        "boost_source": rec.get("cpufreq.boost_source", source, why_boost),
        "intel_pstate_status": rec.get(
            "cpufreq.intel_pstate_status", intel_status, f"intel_pstate is not in use ({why_intel})"
        ),
        "amd_pstate_status": rec.get(
            "cpufreq.amd_pstate_status", amd_status, f"amd_pstate is not in use ({why_amd})"
        ),
    }


def _thermal(sysfs: Path, cpus: Sequence[int], rec: _Record) -> dict[str, object]:
    cpu_root = sysfs / "devices" / "system" / "cpu"
    throttle: dict[str, object] = {}
    for cpu in cpus:
        path = cpu_root / f"cpu{cpu}" / "thermal_throttle" / "core_throttle_count"
        value, reason = read_int_or_reason(path)
        if value is None and not path.parent.exists():
            reason = f"{path.parent} does not exist (Intel CPUs only, and not inside a VM)"
        throttle[str(cpu)] = rec.get(f"thermal.core_throttle_count.{cpu}", value, reason)
    zones: dict[str, object] = {}
    thermal_root = sysfs / "class" / "thermal"
    try:
        entries = sorted(p for p in thermal_root.iterdir() if p.name.startswith("thermal_zone"))
    except OSError:
        entries = []
    for zone in entries:
        kind, _ = read_text_or_reason(zone / "type")
        temp, reason = read_int_or_reason(zone / "temp")
        key = f"{zone.name}:{kind or '?'}"
        zones[key] = rec.get(f"thermal.zones_millicelsius.{key}", temp, reason)
    if not entries:
        rec.missing["thermal.zones_millicelsius"] = (
            f"no thermal_zone* in {thermal_root} (usual inside a VM)"
        )
    return {"core_throttle_count": throttle, "zones_millicelsius": zones or None}


def _clocksource(sysfs: Path, rec: _Record) -> dict[str, object]:
    base = sysfs / "devices" / "system" / "clocksource" / "clocksource0"
    current, why_current = read_text_or_reason(base / "current_clocksource")
    available, why_available = read_text_or_reason(base / "available_clocksource")
    return {
        "current": rec.get("clocksource.current", current, why_current),
        "available": rec.get(
            "clocksource.available",
            available.split() if available is not None else None,
            why_available,
        ),
    }


def capture_environment(
    *,
    topology: Topology | None = None,
    pair: CorePair | None = None,
    isolation: str | None = None,
    proc: str = "/proc",
    sysfs: str = "/sys",
) -> dict[str, object]:
    """Capture the environment of a measurement as a JSON-ready dict.

    Parameters
    ----------
    topology : Topology, optional
        The machine; read from ``sysfs`` when not given.
    pair : CorePair, optional
        The CPUs the sides run on. When not given it is chosen with :func:`choose_pair`
        (``"pair_source": "automatic"``), so the runner must pass the pair it really uses
        (``--cores`` included).
    isolation : str, optional
        The isolation level actually achieved (``cgroup-v2``, ``cgroup-v1``,
        ``affinity-only``); recorded as missing when not given.
    proc, sysfs : str
        The procfs and sysfs roots (synthetic trees in tests).

    Returns
    -------
    dict
        See ``docs/topology.md`` for the keys. Values that could not be read are None and
        listed with the reason in ``result["missing"]`` under their dotted path.
    """
    rec = _Record()
    proc_root, sys_root = Path(proc), Path(sysfs)
    uname = os.uname()

    if topology is None:
        try:
            topology = read_topology(sys_root)
        except DuetError as exc:
            rec.missing["topology"] = str(exc)
    pair_source: str | None = "given" if pair is not None else None
    if pair is None and topology is not None:
        try:
            pair = choose_pair(topology)
            pair_source = "automatic"
        except DuetError as exc:
            rec.missing["pair"] = str(exc)
    elif pair is None:
        rec.missing["pair"] = "no topology to choose a pair from"

    model, why = _cpu_model(proc_root)
    cpus_for_freq: Sequence[int] = ()
    if pair is not None:
        cpus_for_freq = pair.cpus
    elif topology is not None:
        cpus_for_freq = topology.usable

    cpu: dict[str, object] = {"model": rec.get("cpu.model", model, why)}
    if topology is not None:
        cpu.update(
            online=len(topology.online),
            allowed=len(topology.usable),
            physical_cores=len(topology.physical_cores()),
            packages=len(topology.packages),
            numa_nodes=len(topology.nodes),
            threads_per_core=topology.threads_per_core,
        )
    else:
        for key in ("online", "allowed", "physical_cores", "packages", "numa_nodes"):
            cpu[key] = rec.get(f"cpu.{key}", None, "the topology could not be read")
        cpu["threads_per_core"] = rec.get(
            "cpu.threads_per_core", None, "the topology could not be read"
        )

    if topology is not None:
        hypervisor, evidence = topology.hypervisor, topology.hypervisor_evidence
    else:
        hypervisor, evidence = detect_hypervisor(sys_root)

    smt_control, why_control = read_text_or_reason(
        sys_root / "devices" / "system" / "cpu" / "smt" / "control"
    )
    smt_active, why_active = read_text_or_reason(
        sys_root / "devices" / "system" / "cpu" / "smt" / "active"
    )
    cmdline, why_cmdline = read_text_or_reason(proc_root / "cmdline")
    boot_options = _boot_options(cmdline) if cmdline is not None else None

    try:
        loads: list[float] | None = list(load_average(proc_root))
        why_load = ""
    except FileNotFoundError:
        loads, why_load = None, f"{proc_root / 'loadavg'} does not exist"
    except OSError as exc:
        loads, why_load = None, f"cannot read {proc_root / 'loadavg'}: {exc.strerror or exc}"
    except ValueError as exc:
        loads, why_load = None, str(exc)

    env: dict[str, object] = {
        "duet_environment": ENVIRONMENT_VERSION,
        "captured_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": uname.nodename,
        "duet_version": duet_bench.__version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "kernel": {
            "sysname": uname.sysname,
            "release": uname.release,
            "version": uname.version,
            "machine": uname.machine,
            "boot_options": rec.get("kernel.boot_options", boot_options, why_cmdline),
        },
        "cpu": cpu,
        "hypervisor": {"detected": hypervisor, "evidence": evidence},
        "smt": {
            "control": rec.get("smt.control", smt_control, why_control),
            "active": rec.get(
                "smt.active", None if smt_active is None else smt_active == "1", why_active
            ),
        },
        "topology": rec.get(
            "topology",
            topology.summary() if topology is not None else None,
            rec.missing.get("topology", ""),
        ),
        "pair": rec.get("pair", pair.as_dict() if pair is not None else None, ""),
        "pair_source": pair_source,
        "isolation": rec.get(
            "isolation",
            isolation,
            "not given to capture_environment (the runner records the level it achieved)",
        ),
        "cgroup": _cgroup(Machine(sys=sys_root, proc=proc_root), rec),
        "cpufreq": _cpufreq(sys_root, cpus_for_freq, rec),
        "thermal": _thermal(sys_root, cpus_for_freq, rec),
        "clocksource": _clocksource(sys_root, rec),
        "memory": _memory(proc_root, rec),
        "load_average": rec.get("load_average", loads, why_load),
        "steal": _steal(proc_root, rec),
    }
    if pair_source is None:
        rec.missing["pair_source"] = rec.missing.get("pair", "no pair")
    env["machine_kind"] = machine_kind(env)
    env["missing"] = dict(sorted(rec.missing.items()))
    return env


def _dig(env: Mapping[str, object], *keys: str) -> object:
    node: object = env
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def machine_kind(env: Mapping[str, object]) -> str:
    """A short, stable description of the machine, to refuse merging unlike shards.

    Two results files whose ``machine_kind`` differ were measured on different kinds of
    machine (CPU model, CPU count, VM or not, isolation level) and must not be merged. Volatile
    facts (hostname, load, kernel patch level) are deliberately left out.

    Parameters
    ----------
    env : mapping
        A dict from :func:`capture_environment`, or one read back from a results file.
        Missing parts become ``unknown``.

    Returns
    -------
    str
        For example ``"AMD EPYC 7B13 x2 vCPU, cgroup-v1"``.
    """
    model = _dig(env, "cpu", "model")
    online = _dig(env, "cpu", "online")
    vm = _dig(env, "hypervisor", "detected")
    isolation = _dig(env, "isolation")
    cgroup_version = _dig(env, "cgroup", "version")
    model_text = (
        " ".join(model.split()) if isinstance(model, str) and model.strip() else "unknown CPU"
    )
    count = f"x{online}" if isinstance(online, int) and not isinstance(online, bool) else "x?"
    unit = "vCPU" if vm is True else "CPU" if vm is False else "CPU?"
    if isinstance(isolation, str) and isolation:
        level = isolation
    elif isinstance(cgroup_version, str) and cgroup_version:
        level = f"cgroup {cgroup_version} (isolation unknown)"
    else:
        level = "isolation unknown"
    return f"{model_text} {count} {unit}, {level}"
