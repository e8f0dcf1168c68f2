"""Frequency and clocksource: governor, energy-performance preference, boost/turbo,
``intel_pstate`` and ``amd_pstate`` state (Fichte et al., *Complications for Computational
Experiments from Modern Processors*, CP 2021, sections 3-4), and the clock duet reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from duet_bench.doctor.model import Check, Finding, dig
from duet_bench.machine import format_cpu_list, read_text

__all__ = ["clocksource_findings", "frequency_findings"]

# Clocksources read through the vDSO without a system call: a clock_gettime costs tens of
# nanoseconds. The others (hpet, acpi_pm, jiffies) trap into the kernel and cost microseconds,
# which is the size of the barrier's start skew itself.
_FAST_CLOCKSOURCES = frozenset(
    {
        "tsc",
        "kvm-clock",
        "arch_sys_counter",
        "hyperv_clocksource_tsc_page",
        "xen",
        "riscv_clocksource",
    }
)


def frequency_findings(
    env: Mapping[str, Any], sysfs: Path, pair_cpus: Sequence[int], vm: bool
) -> tuple[list[Finding], list[Check], dict[str, Any]]:
    findings: list[Finding] = []
    checks: list[Check] = []
    cpu_root = sysfs / "devices" / "system" / "cpu"
    per_cpu = dig(env, "cpufreq", "cpus")
    per_cpu = per_cpu if isinstance(per_cpu, Mapping) else {}
    policies = {int(k): v for k, v in per_cpu.items() if isinstance(v, Mapping)}
    epp: dict[int, str] = {}
    for cpu in policies:
        value = read_text(cpu_root / f"cpu{cpu}" / "cpufreq" / "energy_performance_preference")
        if value is not None:
            epp[cpu] = value
    boost = dig(env, "cpufreq", "boost")
    boost_source = dig(env, "cpufreq", "boost_source")
    intel = dig(env, "cpufreq", "intel_pstate_status")
    amd = dig(env, "cpufreq", "amd_pstate_status")
    facts: dict[str, Any] = {
        "cpus": {str(k): dict(v) for k, v in policies.items()},
        "energy_performance_preference": {str(k): v for k, v in epp.items()},
        "boost": boost,
        "boost_source": boost_source,
        "intel_pstate": intel,
        "amd_pstate": amd,
    }
    if not policies:
        where = "the hypervisor's host" if vm else "the firmware"
        driver_word = "no cpufreq driver is loaded"
        findings.append(
            Finding(
                "notice",
                "frequency",
                f"{driver_word} for CPUs {format_cpu_list(pair_cpus)}: frequency, turbo and "
                f"power states are set by {where} and cannot be read or fixed from here",
                "a frequency change that hits both sides alike cancels in the per-iteration "
                "ratio; one that hits one core only (turbo depends on how many cores are busy) "
                "does not",
                "inside a VM nothing can be done: check the result with "
                "`duet calibrate --command true` (side asymmetry, A/A interval); on bare metal "
                "load the driver (`sudo modprobe acpi-cpufreq`) or set the BIOS power profile "
                "to maximum performance",
            )
        )
    else:
        gov_f, gov_c = _governor_findings(policies, epp, intel, amd)
        findings += gov_f
        checks += gov_c
    boost_f, boost_c = _boost_findings(boost, boost_source)
    return findings + boost_f, checks + boost_c, facts


def _governor_findings(
    policies: Mapping[int, Mapping[str, Any]], epp: Mapping[int, str], intel: object, amd: object
) -> tuple[list[Finding], list[Check]]:
    """The governors and energy-performance preferences of the pair's CPUs."""
    findings: list[Finding] = []
    checks: list[Check] = []
    governors = {cpu: dig(p, "governor") for cpu, p in policies.items()}
    drivers = sorted({str(dig(p, "driver")) for p in policies.values()})
    checks.append(
        Check(
            "frequency",
            "governor "
            + ", ".join(f"cpu{c} {g}" for c, g in sorted(governors.items()))
            + f"; driver {', '.join(drivers)}"
            + (f"; intel_pstate {intel}" if intel else "")
            + (f"; amd_pstate {amd}" if amd else ""),
        )
    )
    slow = sorted(c for c, g in governors.items() if g != "performance")
    if slow:
        cpus = format_cpu_list(slow)
        names = sorted({str(governors[c]) for c in slow})
        findings.append(
            Finding(
                "warning",
                "frequency",
                f"CPU {cpus} use the {'/'.join(names)} governor, not performance",
                "the governor lowers the frequency while a core waits (at the barrier, "
                "between runs) and raises it under load, so the first part of every "
                "iteration runs slower and the two sides need not run at the same speed "
                "(Fichte et al., section 4)",
                "`sudo cpupower frequency-set -g performance`, or `echo performance | sudo "
                "tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`",
            )
        )
    if len({str(g) for g in governors.values()}) > 1:
        findings.append(
            Finding(
                "warning",
                "frequency",
                "the CPUs of the pair use different governors ("
                + ", ".join(f"cpu{c} {g}" for c, g in sorted(governors.items()))
                + ")",
                "one core then runs at a different frequency than the other; alternating "
                "the sides cancels the bias but not the extra noise",
                "`sudo cpupower frequency-set -g performance` (sets every CPU alike)",
            )
        )
    lazy = sorted(c for c, v in epp.items() if v != "performance")
    if lazy:
        findings.append(
            Finding(
                "warning",
                "frequency",
                f"CPU {format_cpu_list(lazy)} have energy_performance_preference "
                f"{'/'.join(sorted({epp[c] for c in lazy}))}",
                "with hardware-managed P-states (intel_pstate or amd_pstate in active "
                "mode) the CPU picks its own frequency from this hint; anything but "
                "performance trades speed for energy as load changes",
                "`echo performance | sudo tee "
                "/sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference`",
            )
        )
    return findings, checks


def _boost_findings(boost: object, boost_source: object) -> tuple[list[Finding], list[Check]]:
    """Turbo/boost, and the switch that turns it off."""
    findings: list[Finding] = []
    checks: list[Check] = []
    if boost in ("on", "mixed"):
        if boost_source == "intel_pstate/no_turbo":
            fix = "`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo`"
        elif boost_source == "cpufreq/boost":
            fix = "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost`"
        else:
            fix = "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/policy*/boost`"
        findings.append(
            Finding(
                "warning",
                "boost",
                f"turbo/boost is {boost} ({boost_source})",
                "the boosted frequency depends on how many cores are busy, on temperature and "
                "on the power budget, and changes within seconds: run-to-run variation that "
                "a second core does not necessarily share (Fichte et al., section 3)",
                fix,
            )
        )
    elif boost == "off":
        checks.append(Check("boost", f"turbo/boost is off ({boost_source})"))
    return findings, checks


def clocksource_findings(env: Mapping[str, Any]) -> tuple[list[Finding], list[Check]]:
    current = dig(env, "clocksource", "current")
    available = dig(env, "clocksource", "available")
    avail = [str(x) for x in available] if isinstance(available, list) else []
    if not isinstance(current, str):
        return [], [Check("clocksource", "unknown (not readable)")]
    if current in _FAST_CLOCKSOURCES:
        return [], [Check("clocksource", f"{current} (available: {' '.join(avail) or '?'})")]
    better = next((c for c in ("tsc", "kvm-clock", "arch_sys_counter") if c in avail), None)
    fix = (
        f"`echo {better} | sudo tee "
        "/sys/devices/system/clocksource/clocksource0/current_clocksource`"
        if better
        else "boot with `clocksource=tsc tsc=reliable` only if the TSC is known to be stable "
        "on this machine; otherwise use another machine"
    )
    return [
        Finding(
            "warning",
            "clocksource",
            f"the clocksource is {current} (available: {' '.join(avail) or '?'})",
            "reading this clock is a system call costing microseconds instead of a vDSO read "
            "of tens of nanoseconds: short iterations and the barrier's start timestamps are "
            "measured coarsely",
            fix,
        )
    ], []
