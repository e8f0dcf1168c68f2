"""The environment record (docs/statistics.md, method 7) on this machine and on synthetic /proc and
/sys."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import duet_bench
from duet_bench.environment import capture_environment, load_average, machine_kind
from duet_bench.topology import Cpu, Topology, choose_pair, read_topology

# --------------------------------------------------------------------------------------------
# Helpers


def put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def flat_cpus(n: int, *, hypervisor: bool = False) -> Topology:
    """``n`` CPUs, one per core, one package, one shared L3."""
    cpus = tuple(
        Cpu(id=i, package=0, core=i, siblings=(i,), node=0, l2=(i,), l3=tuple(range(n)))
        for i in range(n)
    )
    return Topology(
        cpus=cpus,
        allowed=frozenset(range(n)),
        hypervisor=hypervisor,
        hypervisor_evidence="the kvm-clock clocksource is available (guest-only)"
        if hypervisor
        else "",
    )


def leaves(node: object, path: str = "") -> Iterator[tuple[str, object]]:
    """Every leaf of a JSON-like tree with its dotted path (lists are leaves)."""
    if isinstance(node, Mapping):
        if not node and path:
            yield path, node
        for key, value in node.items():
            yield from leaves(value, f"{path}.{key}" if path else str(key))
    else:
        yield path, node


def lookup(env: Mapping[str, object], dotted: str) -> object:
    node: object = env
    for key in dotted.split("."):
        assert isinstance(node, Mapping), f"{dotted}: {key} is below a leaf"
        assert key in node, f"{dotted}: no key {key}"
        node = node[key]
    return node


def check_missing_convention(env: Mapping[str, object]) -> None:
    """A null is always explained in ``missing``, and ``missing`` only explains nulls."""
    missing = env["missing"]
    assert isinstance(missing, Mapping)
    for path, value in leaves({k: v for k, v in env.items() if k != "missing"}):
        if value is None:
            assert path in missing, f"{path} is null without a reason"
    for path, reason in missing.items():
        assert isinstance(reason, str)
        assert reason, f"{path}: empty reason"
        assert lookup(env, path) is None, f"{path} is listed as missing but has a value"
    json.dumps(env, allow_nan=False)


def intel_box(root: Path, *, no_turbo: str = "0") -> tuple[str, str]:
    """A bare-metal Intel server with intel_pstate; returns (proc, sysfs)."""
    proc, sysfs = root / "proc", root / "sys"
    model = "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz"
    put(
        proc,
        "cpuinfo",
        "\n\n".join(
            f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\nflags\t\t: fpu"
            for i in range(4)
        ),
    )
    put(
        proc,
        "meminfo",
        "MemTotal:       65536000 kB\nMemFree:        60000000 kB\n"
        "MemAvailable:   62000000 kB\nSwapTotal:       2097152 kB\nSwapFree:        1572864 kB",
    )
    put(proc, "stat", "cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 25 0 12 200 2 0 1 9 0 0")
    put(proc, "loadavg", "0.50 0.25 0.10 1/200 4242")
    put(proc, "sys/vm/swappiness", "10")
    put(
        proc,
        "self/mountinfo",
        "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate",
    )
    put(proc, "cmdline", "BOOT_IMAGE=/vmlinuz root=UUID=x isolcpus=2,3 api_token=secret quiet")
    put(sysfs, "fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids")
    cpu = "devices/system/cpu"
    for i in range(4):
        put(sysfs, f"{cpu}/cpu{i}/cpufreq/scaling_governor", "powersave")
        put(sysfs, f"{cpu}/cpu{i}/cpufreq/scaling_driver", "intel_pstate")
        put(sysfs, f"{cpu}/cpu{i}/cpufreq/scaling_min_freq", "1200000")
        put(sysfs, f"{cpu}/cpu{i}/cpufreq/scaling_max_freq", "3400000")
        put(sysfs, f"{cpu}/cpu{i}/cpufreq/cpuinfo_max_freq", "3400000")
        put(sysfs, f"{cpu}/cpu{i}/thermal_throttle/core_throttle_count", "0")
    put(sysfs, f"{cpu}/intel_pstate/status", "active")
    put(sysfs, f"{cpu}/intel_pstate/no_turbo", no_turbo)
    put(sysfs, f"{cpu}/smt/control", "on")
    put(sysfs, f"{cpu}/smt/active", "1")
    put(sysfs, "class/thermal/thermal_zone0/type", "x86_pkg_temp")
    put(sysfs, "class/thermal/thermal_zone0/temp", "45000")
    put(sysfs, "devices/system/clocksource/clocksource0/current_clocksource", "tsc")
    put(sysfs, "devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm")
    return str(proc), str(sysfs)


# --------------------------------------------------------------------------------------------
# Synthetic machines


def test_intel_no_turbo_0_means_boost_on(tmp_path: Path) -> None:
    proc, sysfs = intel_box(tmp_path, no_turbo="0")
    env = capture_environment(topology=flat_cpus(4), proc=proc, sysfs=sysfs, isolation="cgroup-v2")
    check_missing_convention(env)
    cpufreq = env["cpufreq"]
    assert isinstance(cpufreq, dict)
    assert cpufreq["boost"] == "on"
    assert cpufreq["boost_source"] == "intel_pstate/no_turbo"
    assert cpufreq["intel_pstate_status"] == "active"
    # Governor per chosen CPU (the automatic pair on 4 flat CPUs is 1, 2).
    assert env["pair_source"] == "automatic"
    assert set(cpufreq["cpus"]) == {"1", "2"}
    assert cpufreq["cpus"]["1"] == {
        "governor": "powersave",
        "driver": "intel_pstate",
        "min_khz": 1200000,
        "max_khz": 3400000,
        "hardware_max_khz": 3400000,
    }
    assert env["thermal"] == {
        "core_throttle_count": {"1": 0, "2": 0},
        "zones_millicelsius": {"thermal_zone0:x86_pkg_temp": 45000},
    }
    assert env["cpu"] == {
        "model": "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz",
        "online": 4,
        "allowed": 4,
        "physical_cores": 4,
        "packages": 1,
        "numa_nodes": 1,
        "threads_per_core": 1,
    }
    assert env["memory"] == {
        "total_bytes": 65536000 * 1024,
        "available_bytes": 62000000 * 1024,
        "swap_total_bytes": 2 * 1024**3,
        "swap_used_bytes": 512 * 1024**2,
        "swappiness": 10,
    }
    assert env["load_average"] == [0.5, 0.25, 0.1]
    steal = env["steal"]
    assert isinstance(steal, dict)
    assert steal["ticks"] == 35
    assert steal["total_ticks"] == 1000
    assert steal["fraction_since_boot"] == pytest.approx(0.035)
    assert env["cgroup"] == {
        "version": "v2",
        "v1_controllers": [],
        "v2_mount": "/sys/fs/cgroup",
        "v2_controllers": ["cpu", "cpuset", "io", "memory", "pids"],
    }
    assert env["clocksource"] == {"current": "tsc", "available": ["tsc", "hpet", "acpi_pm"]}
    assert env["smt"] == {"control": "on", "active": True}
    assert env["isolation"] == "cgroup-v2"
    assert env["hypervisor"] == {"detected": False, "evidence": ""}
    kernel = env["kernel"]
    assert isinstance(kernel, dict)
    # Only timing-relevant boot options; nothing else from the command line leaks out.
    assert kernel["boot_options"] == {"isolcpus": "2,3"}
    assert "secret" not in json.dumps(env)
    assert env["machine_kind"] == "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz x4 CPU, cgroup-v2"
    # What is not in use here is missing with a reason, not a made-up value.
    missing = env["missing"]
    assert isinstance(missing, dict)
    assert "amd_pstate is not in use" in missing["cpufreq.amd_pstate_status"]


def test_intel_no_turbo_1_means_boost_off(tmp_path: Path) -> None:
    proc, sysfs = intel_box(tmp_path, no_turbo="1")
    env = capture_environment(topology=flat_cpus(4), proc=proc, sysfs=sysfs)
    assert env["cpufreq"]["boost"] == "off"  # type: ignore[index]


@pytest.mark.parametrize(
    ("files", "boost", "source"),
    [
        ({"cpufreq/boost": "0"}, "off", "cpufreq/boost"),
        ({"cpufreq/boost": "1"}, "on", "cpufreq/boost"),
        ({"cpu0/cpufreq/boost": "1", "cpu1/cpufreq/boost": "1"}, "on", "cpuN/cpufreq/boost"),
        ({"cpu0/cpufreq/boost": "1", "cpu1/cpufreq/boost": "0"}, "mixed", "cpuN/cpufreq/boost"),
    ],
)
def test_boost_sources(tmp_path: Path, files: dict[str, str], boost: str, source: str) -> None:
    for i in (0, 1):
        put(tmp_path, f"devices/system/cpu/cpu{i}/cpufreq/scaling_governor", "schedutil")
    put(tmp_path, "devices/system/cpu/amd_pstate/status", "passive")
    for rel, text in files.items():
        put(tmp_path, f"devices/system/cpu/{rel}", text)
    env = capture_environment(topology=flat_cpus(2), sysfs=str(tmp_path), proc=str(tmp_path))
    cpufreq = env["cpufreq"]
    assert isinstance(cpufreq, dict)
    assert (cpufreq["boost"], cpufreq["boost_source"]) == (boost, source)
    assert cpufreq["amd_pstate_status"] == "passive"
    check_missing_convention(env)


def test_cpufreq_driver_without_boost_switch(tmp_path: Path) -> None:
    put(tmp_path, "devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance")
    put(tmp_path, "devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance")
    env = capture_environment(topology=flat_cpus(2), sysfs=str(tmp_path), proc=str(tmp_path))
    missing = env["missing"]
    assert isinstance(missing, dict)
    assert "offers no boost switch" in missing["cpufreq.boost"]
    # The file that is missing inside an existing cpufreq directory is named.
    assert "scaling_driver does not exist" in missing["cpufreq.cpus.0.driver"]
    check_missing_convention(env)


def test_everything_missing_is_recorded_with_reasons(tmp_path: Path) -> None:
    proc, sysfs = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    sysfs.mkdir()
    topology = flat_cpus(2, hypervisor=True)
    pair = choose_pair(topology)
    env = capture_environment(topology=topology, pair=pair, proc=str(proc), sysfs=str(sysfs))
    check_missing_convention(env)
    missing = env["missing"]
    assert isinstance(missing, dict)
    # Never 0 for what was not measured.
    assert env["memory"]["total_bytes"] is None  # type: ignore[index]
    assert env["memory"]["swap_used_bytes"] is None  # type: ignore[index]
    assert env["steal"]["ticks"] is None  # type: ignore[index]
    assert env["load_average"] is None
    assert env["cpu"]["model"] is None  # type: ignore[index]
    assert env["cpufreq"]["cpus"] == {"0": None, "1": None}  # type: ignore[index]
    assert "does not exist" in missing["memory.total_bytes"]
    assert "does not exist" in missing["load_average"]
    assert "no cpufreq driver" in missing["cpufreq.cpus.0"]
    assert "no cpufreq driver" in missing["cpufreq.boost"]
    assert "not given" in missing["isolation"]
    assert "does not exist" in missing["cgroup.version"]
    assert "thermal.zones_millicelsius" in missing
    # What does not depend on files is still there.
    assert env["pair_source"] == "given"
    assert env["pair"]["cpus"] == [0, 1]  # type: ignore[index]
    assert env["duet_version"] == duet_bench.__version__
    assert env["machine_kind"] == "unknown CPU x2 vCPU, isolation unknown"


def test_unreadable_topology_is_missing_with_the_reason(tmp_path: Path) -> None:
    env = capture_environment(proc=str(tmp_path), sysfs=str(tmp_path))
    check_missing_convention(env)
    missing = env["missing"]
    assert isinstance(missing, dict)
    assert "cannot read the CPU topology" in missing["topology"]
    assert missing["pair"] == "no topology to choose a pair from"
    assert env["cpu"]["online"] is None  # type: ignore[index]
    assert env["hypervisor"] == {"detected": False, "evidence": ""}


def test_no_pair_possible_is_missing_with_the_reason(tmp_path: Path) -> None:
    env = capture_environment(topology=flat_cpus(1), proc=str(tmp_path), sysfs=str(tmp_path))
    check_missing_convention(env)
    assert "no pair of CPUs on different physical cores" in env["missing"]["pair"]  # type: ignore[index]
    # Without a pair, the frequency of every usable CPU is recorded instead.
    assert set(env["cpufreq"]["cpus"]) == {"0"}  # type: ignore[index]


@pytest.mark.parametrize(
    ("mountinfo", "version", "v1"),
    [
        ("30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw", "v2", []),
        (
            "30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
            "31 30 0:27 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
            "32 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
            "33 30 0:29 / /sys/fs/cgroup/systemd rw shared:9 - cgroup cgroup rw,name=systemd",
            "v1",
            ["cpu", "cpuacct", "cpuset"],
        ),
        (
            "31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
            "40 30 0:35 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw",
            "hybrid",
            ["memory"],
        ),
        (
            # systemd's named v1 hierarchy beside a pure cgroup2 mount holds no controller.
            "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
            "33 30 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd",
            "v2",
            [],
        ),
        ("22 1 0:5 / /proc rw - proc proc rw", "none", []),
    ],
)
def test_cgroup_versions(tmp_path: Path, mountinfo: str, version: str, v1: list[str]) -> None:
    put(tmp_path, "proc/self/mountinfo", mountinfo)
    put(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu memory")
    put(tmp_path, "sys/fs/cgroup/unified/cgroup.controllers", "")
    env = capture_environment(
        topology=flat_cpus(2), proc=str(tmp_path / "proc"), sysfs=str(tmp_path / "sys")
    )
    cgroup = env["cgroup"]
    assert isinstance(cgroup, dict)
    assert cgroup["version"] == version
    assert cgroup["v1_controllers"] == v1
    if version == "v2":
        assert cgroup["v2_controllers"] == ["cpu", "memory"]
    check_missing_convention(env)


@pytest.mark.parametrize(
    ("cpuinfo", "model"),
    [
        (
            "processor\t: 0\nmodel name\t: AMD EPYC   7B13 64-Core Processor\n",
            "AMD EPYC 7B13 64-Core Processor",
        ),
        (
            "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
            "ARM implementer 0x41 part 0xd0c",
        ),
        ("processor\t: 0\nflags\t: fpu\n", None),
    ],
)
def test_cpu_model(tmp_path: Path, cpuinfo: str, model: str | None) -> None:
    put(tmp_path, "cpuinfo", cpuinfo)
    env = capture_environment(topology=flat_cpus(2), proc=str(tmp_path), sysfs=str(tmp_path))
    assert env["cpu"]["model"] == model  # type: ignore[index]
    check_missing_convention(env)


def test_stat_without_steal_column(tmp_path: Path) -> None:
    put(tmp_path, "stat", "cpu  100 0 50 800 10 0 5\n")
    env = capture_environment(topology=flat_cpus(2), proc=str(tmp_path), sysfs=str(tmp_path))
    assert "no steal column" in env["missing"]["steal.ticks"]  # type: ignore[index]
    check_missing_convention(env)


def test_boot_options_stop_at_init_arguments(tmp_path: Path) -> None:
    put(tmp_path, "cmdline", "nohz_full=2-3 mitigations=off -- isolcpus=9 --secret")
    env = capture_environment(topology=flat_cpus(2), proc=str(tmp_path), sysfs=str(tmp_path))
    assert env["kernel"]["boot_options"] == {"nohz_full": "2-3", "mitigations": "off"}  # type: ignore[index]


def test_load_average(tmp_path: Path) -> None:
    put(tmp_path, "loadavg", "1.00 2.50 3.75 2/300 99")
    assert load_average(tmp_path) == (1.0, 2.5, 3.75)
    put(tmp_path, "loadavg", "garbage")
    with pytest.raises(ValueError, match="three load averages"):
        load_average(tmp_path)
    with pytest.raises(FileNotFoundError, match="loadavg"):
        load_average(tmp_path / "nowhere")


def test_machine_kind() -> None:
    env: dict[str, object] = {
        "cpu": {"model": "AMD EPYC 7B13", "online": 2},
        "hypervisor": {"detected": True},
        "isolation": "cgroup-v1",
        "cgroup": {"version": "hybrid"},
        "hostname": "runner-1",
        "load_average": [0.1, 0.2, 0.3],
    }
    assert machine_kind(env) == "AMD EPYC 7B13 x2 vCPU, cgroup-v1"
    # Volatile facts do not change it ...
    other = {**env, "hostname": "runner-2", "load_average": [3.0, 2.0, 1.0]}
    assert machine_kind(other) == machine_kind(env)
    # ... what matters does.
    assert machine_kind({**env, "isolation": "affinity-only"}) != machine_kind(env)
    assert machine_kind({**env, "cpu": {"model": "AMD EPYC 7B13", "online": 4}}) != machine_kind(
        env
    )
    assert machine_kind({**env, "isolation": None}) == (
        "AMD EPYC 7B13 x2 vCPU, cgroup hybrid (isolation unknown)"
    )
    assert machine_kind({}) == "unknown CPU x? CPU?, isolation unknown"
    assert machine_kind({"cpu": "not a dict", "hypervisor": {"detected": False}}) == (
        "unknown CPU x? CPU, isolation unknown"
    )


# --------------------------------------------------------------------------------------------
# This machine


def test_this_machine() -> None:
    topology = read_topology()
    env = capture_environment(topology=topology, isolation="affinity-only")
    check_missing_convention(env)
    assert env["duet_version"] == duet_bench.__version__
    assert env["hostname"] == os.uname().nodename
    assert env["kernel"]["release"] == os.uname().release  # type: ignore[index]
    assert env["cpu"]["online"] == len(topology.online)  # type: ignore[index]
    assert env["isolation"] == "affinity-only"
    assert env["machine_kind"] == machine_kind(env)
    assert env["cgroup"]["version"] in {"v1", "v2", "hybrid", "none"}  # type: ignore[index]
    loads = env["load_average"]
    assert isinstance(loads, list)
    assert len(loads) == 3
    assert all(x >= 0 for x in loads)
    assert load_average() == pytest.approx(tuple(os.getloadavg()), abs=1.0)
    # Reading the machine twice gives the same machine.
    assert machine_kind(capture_environment(isolation="affinity-only")) == env["machine_kind"]
