"""Thermal: temperatures near their limits and thermal throttling (Fichte et al., section 3)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duet_bench.doctor.model import Check, Finding, dig
from duet_bench.machine import read_int, read_text

__all__ = ["THERMAL_ABSOLUTE_MC", "THERMAL_MARGIN_MC", "thermal_findings"]

#: Report a temperature this close (in millidegrees) to the sensor's own limit.
THERMAL_MARGIN_MC = 10_000
#: Without a limit from the sensor, report temperatures at or above this (millidegrees).
THERMAL_ABSOLUTE_MC = 90_000


def _sensors(sysfs: Path) -> list[dict[str, Any]]:
    """Every temperature the kernel exposes (thermal zones and hwmon), with its limit."""
    sensors: list[dict[str, Any]] = []
    zone_root = sysfs / "class" / "thermal"
    try:
        zones = sorted(p for p in zone_root.iterdir() if p.name.startswith("thermal_zone"))
    except OSError:
        zones = []
    for zone in zones:
        temp = read_int(zone / "temp")
        if temp is None:
            continue
        limit: int | None = None
        for trip in sorted(zone.glob("trip_point_*_type")):
            kind = read_text(trip)
            value = read_int(trip.with_name(trip.name.replace("_type", "_temp")))
            # The first trip where the kernel acts (passive cooling = throttling) is the limit.
            if kind in ("passive", "hot", "critical") and value and value > 0:
                limit = value if limit is None else min(limit, value)
        sensors.append(
            {
                "sensor": f"{zone.name} ({read_text(zone / 'type') or '?'})",
                "mc": temp,
                "limit_mc": limit,
            }
        )
    hwmon_root = sysfs / "class" / "hwmon"
    try:
        hwmons = sorted(hwmon_root.iterdir())
    except OSError:
        hwmons = []
    for hw in hwmons:
        name = read_text(hw / "name") or hw.name
        for inp in sorted(hw.glob("temp*_input")):
            temp = read_int(inp)
            if temp is None:
                continue
            prefix = inp.name.removesuffix("_input")
            limits = [
                v
                for v in (read_int(hw / f"{prefix}_max"), read_int(hw / f"{prefix}_crit"))
                if v is not None and v > 0
            ]
            label = read_text(hw / f"{prefix}_label") or prefix
            sensors.append(
                {
                    "sensor": f"{name} {label}",
                    "mc": temp,
                    "limit_mc": min(limits) if limits else None,
                }
            )
    return sensors


def thermal_findings(
    sysfs: Path, env: Mapping[str, Any]
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    sensors = _sensors(sysfs)
    hot = [
        s
        for s in sensors
        if (s["limit_mc"] is not None and s["mc"] >= s["limit_mc"] - THERMAL_MARGIN_MC)
        or (s["limit_mc"] is None and s["mc"] >= THERMAL_ABSOLUTE_MC)
    ]
    if hot:
        listed = ", ".join(
            f"{s['sensor']} {s['mc'] / 1000:.0f} °C"
            + (f" (limit {s['limit_mc'] / 1000:.0f} °C)" if s["limit_mc"] else "")
            for s in hot
        )
        findings.append(
            Finding(
                "warning",
                "thermal",
                f"hot: {listed}",
                "near its limit the CPU lowers its frequency (thermal throttling), in the middle "
                "of a run and not necessarily on both cores alike (Fichte et al., section 3)",
                "let the machine cool down and improve its cooling; switching turbo off "
                "lowers the heat (see the boost finding); watch with "
                "`watch -n1 cat /sys/class/thermal/thermal_zone*/temp`",
            )
        )
    throttle = dig(env, "thermal", "core_throttle_count")
    counts = (
        {k: int(v) for k, v in throttle.items() if isinstance(v, int) and v > 0}
        if isinstance(throttle, Mapping)
        else {}
    )
    if counts:
        findings.append(
            Finding(
                "warning",
                "thermal",
                "the CPUs of the pair were thermally throttled since boot ("
                + ", ".join(f"cpu{k}: {v} times" for k, v in sorted(counts.items()))
                + ")",
                "a throttled core runs slower for a while: a run that meets it is slower on "
                "one side only",
                "improve cooling or switch turbo off; the counters are in "
                "/sys/devices/system/cpu/cpu*/thermal_throttle/ (they only grow: compare "
                "before and after a measurement)",
            )
        )
    checks: list[Check] = []
    if not sensors:
        checks.append(Check("temperature", "not exposed by the kernel (usual inside a VM)"))
    elif not hot:
        warmest = max(sensors, key=lambda s: s["mc"])
        checks.append(
            Check(
                "temperature",
                f"{len(sensors)} sensor(s), warmest {warmest['sensor']} "
                f"{warmest['mc'] / 1000:.0f} °C",
            )
        )
    return findings, checks, {"sensors": sensors, "throttle_counts": counts}
