"""``duet doctor``: on this machine, and on synthetic /sys and /proc trees for what it lacks
(SMT, cpufreq governors, turbo, intel_pstate/amd_pstate, slow clocksources, swap, load, steal,
temperatures, delegated cgroup v2, other duets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duet_bench.doctor import REQUIREMENTS, Diagnosis, Finding, diagnose, real_probes
from duet_bench.doctor.load import NEIGHBOURS_SHOWN
from duet_bench.isolation import Probe

OK = Probe(True)
NO_V1 = Probe(False, "no cgroup v1 hierarchy is mounted under /sys/fs/cgroup")


class Machine:
    """A synthetic machine: a sysfs root, a procfs root and the run directories."""

    def __init__(self, root: Path) -> None:
        self.sys = root / "sys"
        self.proc = root / "proc"
        self.shm = root / "shm"
        self.var_tmp = root / "var_tmp"
        for d in (self.sys, self.proc, self.shm, self.var_tmp):
            d.mkdir(parents=True)

    def put(self, rel: str, text: str) -> Path:
        tree, _, rest = rel.partition("/")
        base = {"sys": self.sys, "proc": self.proc, "shm": self.shm, "var_tmp": self.var_tmp}[tree]
        path = base / rest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        return path

    def cpus(self, siblings: list[list[int]], *, vm: bool = False) -> None:
        """One package, one node, one shared L3; each inner list is one physical core."""
        ids = sorted(c for core in siblings for c in core)
        self.put("sys/devices/system/cpu/online", f"{ids[0]}-{ids[-1]}")
        self.put("sys/devices/system/cpu/isolated", "")
        for core_id, core in enumerate(siblings):
            for c in core:
                base = f"sys/devices/system/cpu/cpu{c}"
                self.put(f"{base}/topology/physical_package_id", "0")
                self.put(f"{base}/topology/core_id", str(core_id))
                self.put(f"{base}/topology/core_cpus_list", ",".join(map(str, core)))
                self.put(f"{base}/cache/index3/level", "3")
                self.put(f"{base}/cache/index3/type", "Unified")
                self.put(f"{base}/cache/index3/shared_cpu_list", f"{ids[0]}-{ids[-1]}")
        self.put("sys/devices/system/node/node0/cpulist", f"{ids[0]}-{ids[-1]}")
        self.put(
            "sys/devices/system/clocksource/clocksource0/available_clocksource",
            "kvm-clock tsc" if vm else "tsc hpet acpi_pm",
        )
        self.put("sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc")

    def quiet_proc(self, *, swap_kb: int = 0, swap_free_kb: int = 0) -> None:
        self.put("proc/loadavg", "0.05 0.10 0.08 1/200 4242")
        self.put("proc/stat", "cpu  1000 0 500 90000 100 0 10 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
        self.put(
            "proc/meminfo",
            "MemTotal:       16000000 kB\nMemAvailable:   12000000 kB\n"
            f"SwapTotal:      {swap_kb} kB\nSwapFree:       {swap_free_kb} kB",
        )
        self.put("proc/sys/vm/swappiness", "60")
        self.put("proc/cpuinfo", "model name\t: Synthetic CPU")
        self.put("proc/cmdline", "quiet")
        self.put("proc/pressure/cpu", "some avg10=0.50 avg60=0.20 avg300=0.10 total=1\n")

    def cgroup_v2(self, own: str = "/user.slice/user-1000.slice/session-1.scope") -> Path:
        self.put(
            "proc/self/mountinfo",
            "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate",
        )
        self.put("proc/self/cgroup", f"0::{own}")
        self.put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids")
        own_dir = self.sys / "fs" / "cgroup" / own.lstrip("/")
        own_dir.mkdir(parents=True, exist_ok=True)
        for name in ("cgroup.procs", "cgroup.subtree_control"):
            (own_dir / name).write_text("")
        return own_dir

    def live_process(self, pid: int, cmdline: str, state: str = "S") -> None:
        self.put(f"proc/{pid}/stat", f"{pid} (python3) {state} 1 {pid} {pid} 0")
        (self.proc / str(pid) / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())

    def diagnose(self, **kw: object) -> Diagnosis:
        options: dict[str, object] = {
            "sysfs": self.sys,
            "proc": self.proc,
            "run_dirs": (self.shm, self.var_tmp),
            "probes": {"cgroup-v2": OK, "cgroup-v1": NO_V1},
            "euid": 0,
            "allowed": None,
            "self_pid": 1,
            "lock_file": self.var_tmp / "duet.lock",
        }
        options.update(kw)
        if options["allowed"] is None:
            online = (self.sys / "devices/system/cpu/online").read_text().strip()
            first, _, last = online.partition("-")
            options["allowed"] = range(int(first), int(last or first) + 1)
        return diagnose(**options)  # type: ignore[arg-type]


def topics(d: Diagnosis, severity: str | None = None) -> list[str]:
    return [f.topic for f in d.findings if severity is None or f.severity == severity]


def finding(d: Diagnosis, topic: str, text: str = "") -> Finding:
    matches = [f for f in d.findings if f.topic == topic and text in f.what]
    assert matches, f"no {topic!r} finding mentioning {text!r} in {[f.what for f in d.findings]}"
    return matches[0]


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


# --------------------------------------------------------------------------------------------
# This machine


def test_this_machine_is_diagnosed_completely() -> None:
    d = diagnose()
    data = d.to_dict()
    json.dumps(data)  # JSON-ready
    assert data["isolation"] in ("cgroup-v2", "cgroup-v1", "affinity-only")
    for key in ("isolation", "cpus", "pair", "findings", "probes", "cgroup", "facts", "checks"):
        assert key in data
    for f in data["findings"]:
        assert set(f) >= {"severity", "what", "why", "fix"}
        assert all(f[k].strip() for k in ("what", "why", "fix"))
        assert f["severity"] in ("error", "warning", "notice")
    # The level is the one the isolation backends themselves would choose.
    probes = real_probes()
    expected = next((lvl for lvl in ("cgroup-v2", "cgroup-v1") if probes[lvl].ok), "affinity-only")
    assert d.isolation == expected
    if len(os.sched_getaffinity(0)) >= 2:
        assert data["pair"] is not None
        assert len(data["pair"]["cpus"]) == 2


@pytest.mark.measures  # a CPU share: beside the parallel tests it fell to 0.12 once
def test_a_busy_process_on_the_measuring_cpus_is_named() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        time.sleep(0.3)  # past its start-up
        ticks_before = cpu_ticks(busy.pid)
        d = diagnose(sample_s=0.5)
        ticks_after = cpu_ticks(busy.pid)
    finally:
        busy.kill()
        busy.wait()
    named = {n["pid"]: n for n in d.facts["neighbours"]}
    assert busy.pid in named, d.facts["neighbours"]
    # The share is its own CPU time over the 0.5 s sample: no more than what /proc said it
    # used around the whole diagnosis (exact whatever the load, which a fixed floor is not:
    # a spinner gets under 0.2 of a CPU beside 9 others on 2 CPUs).
    hz = os.sysconf("SC_CLK_TCK")
    assert 0 < named[busy.pid]["cpu_share"] <= (ticks_after - ticks_before + 2) / hz / 0.5
    assert named[busy.pid]["command"].endswith("-c while 1: pass")
    finding = next(f for f in d.findings if f.topic == "neighbours")
    # Named in the finding when among the busiest it shows (on a shared machine a dozen others
    # may use more), counted in "and N more" otherwise: the finding follows the facts.
    shown = [n["pid"] for n in d.facts["neighbours"][:NEIGHBOURS_SHOWN]]
    assert (f"{busy.pid} " in finding.what) == (busy.pid in shown), finding.what
    if len(d.facts["neighbours"]) > NEIGHBOURS_SHOWN:
        assert f"and {len(d.facts['neighbours']) - NEIGHBOURS_SHOWN} more" in finding.what
    assert os.getpid() not in named  # duet itself is never its own neighbour


def cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks (proc(5), fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_json_text_and_require() -> None:
    done = doctor("--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["require"] == {"level": "none", "satisfied": True}
    level = data["isolation"]
    # Text, and --require: exit 3 exactly when the level is not available.
    strict = doctor("--require", "cgroup-v2")
    assert strict.returncode == (0 if level == "cgroup-v2" else 3)
    if strict.returncode == 3:
        assert "--require cgroup-v2" in strict.stderr
        assert f"gives duet {level}" in strict.stderr
    assert strict.stdout.startswith("duet doctor:")
    assert f"isolation    {level}" in strict.stdout
    # Every finding is printed with its fix (the machine may change between the two calls,
    # e.g. another duet starting: compare counts of the text itself).
    assert strict.stdout.count("fix: ") == strict.stdout.count("why: ")


# --------------------------------------------------------------------------------------------
# Synthetic machines


def test_a_tuned_bare_metal_machine_has_no_warnings(machine: Machine) -> None:
    machine.cpus([[0], [1], [2]])
    machine.quiet_proc()
    for c in range(3):
        base = f"sys/devices/system/cpu/cpu{c}/cpufreq"
        machine.put(f"{base}/scaling_governor", "performance")
        machine.put(f"{base}/scaling_driver", "acpi-cpufreq")
    machine.put("sys/devices/system/cpu/cpufreq/boost", "0")
    machine.cgroup_v2("/")
    d = machine.diagnose()
    assert d.isolation == "cgroup-v2"
    assert d.satisfies("cgroup-v2")
    assert topics(d, "warning") == []
    assert topics(d, "error") == []
    assert d.pair is not None
    assert d.pair["cpus"] == [1, 2]  # away from CPU 0, duet itself on CPU 0
    summaries = {c.topic: c.summary for c in d.checks}
    assert "turbo/boost is off" in summaries["boost"]
    assert "performance" in summaries["frequency"]


def test_smt_powersave_turbo_hpet_swap_load_heat_and_another_duet(machine: Machine) -> None:
    # An Intel laptop-like machine: SMT siblings far apart (0/2, 1/3), powersave, turbo on.
    machine.cpus([[0, 2], [1, 3]])
    machine.quiet_proc(swap_kb=2_000_000, swap_free_kb=1_900_000)
    machine.put("proc/loadavg", "3.50 2.00 1.00 5/300 999")
    machine.put("proc/pressure/cpu", "some avg10=35.00 avg60=20.00 avg300=5.00 total=9")
    machine.put("sys/devices/system/cpu/intel_pstate/status", "active")
    machine.put("sys/devices/system/cpu/intel_pstate/no_turbo", "0")
    for c in range(4):
        base = f"sys/devices/system/cpu/cpu{c}"
        machine.put(f"{base}/cpufreq/scaling_governor", "powersave")
        machine.put(f"{base}/cpufreq/scaling_driver", "intel_pstate")
        machine.put(f"{base}/cpufreq/energy_performance_preference", "balance_power")
        machine.put(f"{base}/thermal_throttle/core_throttle_count", "12" if c == 1 else "0")
    machine.put("sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet")
    machine.put("sys/class/thermal/thermal_zone0/type", "x86_pkg_temp")
    machine.put("sys/class/thermal/thermal_zone0/temp", "95000")
    machine.put("sys/class/thermal/thermal_zone0/trip_point_0_type", "passive")
    machine.put("sys/class/thermal/thermal_zone0/trip_point_0_temp", "100000")
    machine.put("sys/class/hwmon/hwmon0/name", "coretemp")
    machine.put("sys/class/hwmon/hwmon0/temp1_input", "45000")
    machine.put("sys/class/hwmon/hwmon0/temp1_crit", "100000")
    machine.cgroup_v2("/")
    # Another duet: pid 4321 runs (its barrier file and work directory), pid 777 is gone.
    machine.live_process(4321, "python -m duet_bench run --baseline a --candidate b")
    machine.put("shm/duet-4321-0123abcd.barrier", "")
    (machine.var_tmp / "duet-4321-xyz").mkdir()
    machine.put("shm/duet-777-deadbeef.barrier", "")
    d = machine.diagnose()

    assert d.pair is not None
    assert d.pair["cpus"] == [1, 2]  # one thread of each core, the one that is not CPU 0
    smt = finding(d, "smt")
    assert "siblings 0,3 " in smt.what
    assert "smt/control" in smt.fix

    governor = finding(d, "frequency", "powersave")
    assert governor.severity == "warning"
    assert "cpupower frequency-set -g performance" in governor.fix
    epp = finding(d, "frequency", "energy_performance_preference")
    assert "energy_performance_preference" in epp.fix
    boost = finding(d, "boost")
    assert "intel_pstate/no_turbo" in boost.what
    assert boost.fix == "`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo`"

    clock = finding(d, "clocksource")
    assert "hpet" in clock.what
    assert "echo tsc | sudo tee" in clock.fix

    swap = [f for f in d.findings if f.topic == "swap"]
    assert {("in use" in f.what) for f in swap} == {True, False}
    assert any("vm.swappiness=1" in f.fix for f in swap)

    load = finding(d, "load")
    assert "3.50" in load.what
    assert "CPU pressure 35.0%" in load.what

    hot = finding(d, "thermal", "hot")
    assert "x86_pkg_temp" in hot.what
    assert "95 °C" in hot.what
    assert "coretemp" not in hot.what  # 45 °C of a 100 °C limit is fine
    throttled = finding(d, "thermal", "throttled")
    assert "cpu1: 12 times" in throttled.what

    running = finding(d, "duet", "another duet")
    assert running.severity == "warning"
    assert "pid 4321" in running.what
    assert "python -m duet_bench run" in running.what
    assert "tail --pid=4321" in running.fix
    stale = finding(d, "duet", "leftovers")
    assert "duet-777-deadbeef.barrier" in stale.what
    assert d.facts["other_duets"]["running"] == {
        "4321": sorted(
            [
                str(machine.shm / "duet-4321-0123abcd.barrier"),
                str(machine.var_tmp / "duet-4321-xyz"),
            ]
        )
    }
    # Errors first, then warnings, then notices.
    order = [f.severity for f in d.findings]
    assert order == sorted(order, key=("error", "warning", "notice").index)


def test_a_zombie_or_our_own_pid_is_not_another_duet(machine: Machine) -> None:
    machine.cpus([[0], [1]])
    machine.quiet_proc()
    machine.cgroup_v2("/")
    machine.live_process(500, "python -m duet_bench run", state="Z")
    machine.put("shm/duet-500-aa.barrier", "")
    machine.live_process(600, "duet doctor")
    machine.put("shm/duet-600-bb.barrier", "")
    d = machine.diagnose(self_pid=600)
    assert "another duet" not in " ".join(f.what for f in d.findings)
    assert finding(d, "duet", "leftovers").severity == "notice"


def test_the_holder_of_the_measuring_lock_is_another_duet(machine: Machine) -> None:
    machine.cpus([[0], [1]])
    machine.quiet_proc()
    machine.cgroup_v2("/")
    holder = {"pid": 3131, "started": 1.7e9, "command": "duet compare main HEAD"}
    machine.put("var_tmp/duet.lock", json.dumps(holder))
    # /proc shows the process but not its command line (hidepid, another user's process).
    machine.put("proc/3131/stat", "3131 (duet) S 1 3131 3131 0")
    d = machine.diagnose()
    running = finding(d, "duet", "another duet")
    assert "pid 3131 (duet compare main HEAD)" in running.what
    assert "--wait" in running.fix
    # A stale lock file (its holder is gone) says nothing.
    (machine.proc / "3131" / "stat").unlink()
    assert "another duet" not in " ".join(f.what for f in machine.diagnose().findings)


def test_duet_cgroups_of_a_live_invocation_are_found(machine: Machine) -> None:
    machine.cpus([[0], [1]])
    machine.quiet_proc()
    machine.put(
        "proc/self/mountinfo",
        "31 25 0:27 / /sys/fs/cgroup/cpuset rw shared:5 - cgroup cgroup rw,cpuset\n"
        "32 25 0:28 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory",
    )
    machine.put("proc/self/cgroup", "3:cpuset:/\n2:memory:/")
    (machine.sys / "fs/cgroup/cpuset/duet-4242-0a1b2c3d/r000-baseline").mkdir(parents=True)
    (machine.sys / "fs/cgroup/memory/duet-4242-0a1b2c3d").mkdir(parents=True)
    machine.live_process(4242, "duet compare main HEAD")
    d = machine.diagnose(probes={"cgroup-v2": NO_V1, "cgroup-v1": OK})
    assert d.isolation == "cgroup-v1"
    running = finding(d, "duet", "another duet")
    assert "duet compare main HEAD" in running.what
    paths = d.facts["other_duets"]["running"]["4242"]
    assert len(paths) == 2  # the parent in each hierarchy, not its children


def test_amd_pstate_with_per_policy_boost(machine: Machine) -> None:
    machine.cpus([[0], [1], [2], [3]])
    machine.quiet_proc()
    machine.cgroup_v2("/")
    machine.put("sys/devices/system/cpu/amd_pstate/status", "active")
    for c in range(4):
        base = f"sys/devices/system/cpu/cpu{c}/cpufreq"
        machine.put(f"{base}/scaling_governor", "performance")
        machine.put(f"{base}/scaling_driver", "amd-pstate-epp")
        machine.put(f"{base}/energy_performance_preference", "performance")
        machine.put(f"{base}/boost", "1")
    d = machine.diagnose()
    boost = finding(d, "boost")
    assert "cpuN/cpufreq/boost" in boost.what
    assert "policy*/boost" in boost.fix
    assert not [f for f in d.findings if f.topic == "frequency"]
    assert "amd_pstate active" in {c.topic: c.summary for c in d.checks}["frequency"]
    # Four CPUs and nothing isolated: the notice says how to isolate the pair.
    isolate = finding(d, "topology", "isolated")
    assert "isolcpus=" in isolate.fix


def test_a_vm_without_cpufreq_gets_notices_not_warnings(machine: Machine) -> None:
    machine.cpus([[0], [1]], vm=True)
    machine.quiet_proc()
    machine.cgroup_v2("/")
    d = machine.diagnose()
    assert topics(d, "warning") == []
    vm = finding(d, "topology", "virtual machine")
    assert "kvm-clock" in vm.what
    assert "duet calibrate" in vm.fix
    freq = finding(d, "frequency", "no cpufreq driver")
    assert freq.severity == "notice"
    assert "host" in freq.what
    no_third = finding(d, "topology", "no CPU besides the pair")
    assert no_third.severity == "notice"


def test_a_delegated_cgroup_v2_subtree_as_a_user(machine: Machine) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another uid (chown) needs root; CI runs as root")
    machine.cpus([[0], [1]])
    machine.quiet_proc()
    own = machine.cgroup_v2()
    for path in (own, own / "cgroup.procs", own / "cgroup.subtree_control"):
        os.chown(path, 1000, 1000)
    d = machine.diagnose(euid=1000)
    assert d.cgroup["privilege"] == "delegated"
    assert d.isolation == "cgroup-v2"
    summary = {c.topic: c.summary for c in d.checks}["cgroup"]
    assert "delegated cgroup2 subtree" in summary
    # The same tree, owned by root: no delegation for uid 1000.
    for path in (own, own / "cgroup.procs", own / "cgroup.subtree_control"):
        os.chown(path, 0, 0)
    refused = Probe(
        False,
        "our cgroup /user.slice/... is shared with processes that are not ours",
        "run as root (`sudo duet ...`), or `systemd-run --user --scope -p Delegate=yes duet ...`",
    )
    d = machine.diagnose(euid=1000, probes={"cgroup-v2": refused, "cgroup-v1": NO_V1})
    assert d.cgroup["privilege"] == "none"
    assert d.isolation == "affinity-only"
    assert not d.satisfies("cgroup")
    assert d.satisfies("none")
    cg = finding(d, "cgroup")
    assert cg.severity == "warning"
    assert "systemd-run --user --scope -p Delegate=yes" in cg.fix
    assert "shared with processes" in cg.what


def test_no_cgroup_file_system_at_all(machine: Machine) -> None:
    machine.cpus([[0], [1]])
    machine.quiet_proc()
    d = machine.diagnose(probes={"cgroup-v2": Probe(False, "none"), "cgroup-v1": NO_V1})
    assert d.cgroup["version"] == "none"
    cg = finding(d, "cgroup")
    assert "mount -t cgroup2" in cg.fix


def test_a_single_cpu_has_no_pair(machine: Machine) -> None:
    machine.cpus([[0]])
    machine.quiet_proc()
    machine.cgroup_v2("/")
    d = machine.diagnose()
    assert d.pair is None
    error = finding(d, "topology", "no core pair")
    assert error.severity == "error"
    assert "--method sequential" in error.fix or "sequential" in error.why
    assert d.findings[0].severity == "error"


def test_no_sysfs_topology_is_an_error_not_a_crash(machine: Machine) -> None:
    machine.quiet_proc()
    d = machine.diagnose(allowed=[0, 1])
    assert "error" in d.cpus
    assert finding(d, "topology", "cannot be read").severity == "error"
    json.dumps(d.to_dict())


def test_steal_and_busy_time_are_measured_now(machine: Machine) -> None:
    machine.cpus([[0], [1]], vm=True)
    machine.quiet_proc()
    machine.cgroup_v2("/")

    def later(_seconds: float) -> None:
        # 1000 more ticks, 100 of them stolen, 400 idle: 10% steal, 60% busy.
        machine.put("proc/stat", "cpu  1400 0 600 90400 100 0 10 100 0 0")

    d = machine.diagnose(sample_s=0.5, sleep=later)
    assert d.facts["load"]["steal_fraction_now"] == pytest.approx(0.10)
    assert d.facts["load"]["busy_fraction_now"] == pytest.approx(0.60)
    steal = finding(d, "steal")
    assert "10.0%" in steal.what
    assert "over the last 0.5 s" in steal.what
    assert "vmstat 1" in steal.fix
    assert "60% of CPU time busy" in finding(d, "load").what


def test_findings_are_validated() -> None:
    with pytest.raises(ValueError, match="fix"):
        Finding("warning", "x", "what", "why", " ")
    with pytest.raises(ValueError, match="severity"):
        Finding("fatal", "x", "what", "why", "fix")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("cgroup-v2", {"cgroup": True, "cgroup-v2": True, "none": True}),
        ("cgroup-v1", {"cgroup": True, "cgroup-v2": False, "none": True}),
        ("affinity-only", {"cgroup": False, "cgroup-v2": False, "none": True}),
    ],
)
def test_require_levels(level: str, expected: dict[str, bool]) -> None:
    d = Diagnosis(
        isolation=level,  # type: ignore[arg-type]
        probes={},
        cgroup={},
        cpus={},
        pair=None,
        facts={},
        findings=(),
    )
    assert {r: d.satisfies(r) for r in REQUIREMENTS} == expected
