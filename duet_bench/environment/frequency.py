"""How fast the measured cores run: the frequency policy, turbo/boost and thermal throttling.

Read for the CPUs the sides run on (Fichte et al., *Complications for Computational Experiments
from Modern Processors*, CP 2021, on why each of these moves timings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from duet_bench.environment.record import Record
from duet_bench.machine import read_int_or_reason, read_text_or_reason

__all__ = ["read_cpufreq", "read_thermal"]

_NO_CPUFREQ = (
    "no cpufreq driver is loaded (usual inside a VM, where the host sets frequency and turbo)"
)


def _cpufreq_of(freq: Path, cpu: int, rec: Record) -> dict[str, object]:
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


def _boost(cpu_root: Path, policy_boost: Mapping[int, str]) -> tuple[str | None, str | None]:
    """Whether turbo/boost is ``"on"``, ``"off"`` or ``"mixed"``, and the file that says so."""
    global_boost, _ = read_text_or_reason(cpu_root / "cpufreq" / "boost")
    no_turbo, _ = read_text_or_reason(cpu_root / "intel_pstate" / "no_turbo")
    # intel_pstate ignores cpufreq/boost and has its own switch with the opposite sense.
    if no_turbo in ("0", "1"):
        return ("on" if no_turbo == "0" else "off"), "intel_pstate/no_turbo"
    if global_boost in ("0", "1"):
        return ("on" if global_boost == "1" else "off"), "cpufreq/boost"
    if policy_boost:
        # amd-pstate (Linux 6.11+) and some other drivers switch boost per policy.
        states = {"on" if v == "1" else "off" for v in policy_boost.values() if v in ("0", "1")}
        if states:
            return (states.pop() if len(states) == 1 else "mixed"), "cpuN/cpufreq/boost"
    return None, None


def read_cpufreq(sysfs: Path, cpus: Sequence[int], rec: Record) -> dict[str, object]:
    """The record's ``cpufreq``: each CPU's policy, boost, and which pstate driver is active."""
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
    boost, source = _boost(cpu_root, policy_boost)
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


def read_thermal(sysfs: Path, cpus: Sequence[int], rec: Record) -> dict[str, object]:
    """The record's ``thermal``: each CPU's throttle count and every thermal zone's temperature."""
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
