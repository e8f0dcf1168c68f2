"""The machine reader (duet_bench.machine): on this machine's /proc with real processes, and on
synthetic mountinfo, cgroup and /sys text for what this machine lacks."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duet_bench.doctor.isolation import cgroup_facts
from duet_bench.machine import (
    THIS,
    CgroupMount,
    CpuTicks,
    Machine,
    cgroup_mounts,
    cgroup_version,
    format_cpu_list,
    parse_cpu_list,
    parse_load_average,
    parse_mountinfo,
    parse_pressure_some_avg10,
    parse_proc_cgroup,
    read_cpu_list,
    read_int,
    read_text_or_reason,
)

HYBRID = (
    "22 1 0:5 / /proc rw,nosuid - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 master:1 - cgroup2 cgroup2 rw\n"
)


def test_mountinfo_with_optional_fields_escapes_and_namespaces() -> None:
    mounts = parse_mountinfo(
        HYBRID + "50 41 0:38 /job\\0401 /srv/cg\\040root rw - cgroup2 cgroup2 rw,nsdelegate\n"
    )
    assert [m.mountpoint for m in mounts] == [
        "/sys/fs/cgroup/cpu,cpuacct",
        "/sys/fs/cgroup/systemd",
        "/sys/fs/cgroup/unified",
        "/srv/cg root",
    ]
    assert mounts[0] == CgroupMount(
        "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "/", frozenset({"cpu", "cpuacct"})
    )
    # Mount options (rw, xattr) and named hierarchies are not controllers.
    assert mounts[1].controllers == frozenset()
    assert mounts[3].root == "/job 1"
    assert cgroup_version(mounts) == "hybrid"


@pytest.mark.parametrize(
    ("kinds", "version"),
    [
        ([("cgroup2", ())], "v2"),
        ([("cgroup2", ()), ("cgroup", ())], "v2"),  # name=systemd beside cgroup2
        ([("cgroup", ("cpuset",))], "v1"),
        ([("cgroup", ("memory",)), ("cgroup2", ())], "hybrid"),
        ([], "none"),
    ],
)
def test_cgroup_version(kinds: list[tuple[str, tuple[str, ...]]], version: str) -> None:
    mounts = [CgroupMount(f"/m{i}", t, "/", frozenset(c)) for i, (t, c) in enumerate(kinds)]
    assert cgroup_version(mounts) == version


def test_proc_cgroup_of_v1_and_v2() -> None:
    own = parse_proc_cgroup("12:cpu,cpuacct:/a\n1:name=systemd:/s\n0::/user.slice\nbad line\n")
    assert own == {"cpu": "/a", "cpuacct": "/a", "name=systemd": "/s", "": "/user.slice"}


def test_cpu_lists_round_trip() -> None:
    assert parse_cpu_list(" 0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert format_cpu_list([11, 10, 8, 3, 2, 1, 0, 0]) == "0-3,8,10-11"
    assert parse_cpu_list("") == ()
    with pytest.raises(ValueError, match="bad range"):
        parse_cpu_list("3-1")


def test_files_missing_or_malformed_are_none(tmp_path: Path) -> None:
    (tmp_path / "n").write_text("42\n")
    (tmp_path / "word").write_text("many\n")
    assert read_int(tmp_path / "n") == 42
    assert read_int(tmp_path / "word") is None
    assert read_cpu_list(tmp_path / "word") is None
    assert read_text_or_reason(tmp_path / "absent") == (None, f"{tmp_path}/absent does not exist")


def test_synthetic_roots(tmp_path: Path) -> None:
    m = Machine(sys=tmp_path / "sys", proc=tmp_path / "proc")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(HYBRID)
    (tmp_path / "proc/7").mkdir()
    (tmp_path / "proc/7/stat").write_text("7 (a b) c) Z 1 7 7 0 0 0 0 0 0 0 3 4\n")
    (tmp_path / "proc/8").mkdir()
    (tmp_path / "proc/8/stat").write_text("8 (sleepy) S 7 8 8 0 0 0 0 0 0 0 5 6\n")
    assert not m.live
    assert [x.mountpoint for x in m.cgroup_mounts("/sys/fs/cgroup/unified")] == [
        "/sys/fs/cgroup/unified"
    ]
    assert m.on_sys("/sys/fs/cgroup/unified") == tmp_path / "sys/fs/cgroup/unified"
    assert not m.pid_alive(7)  # a zombie, its name holding ") "
    assert m.pid_alive(8)
    assert not m.pid_alive(9)
    assert m.parent_pid(8) == 7
    assert m.process_ticks() == {7: 7, 8: 11}
    with pytest.raises(FileNotFoundError):
        m.own_cgroups()


def test_real_processes() -> None:
    child = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "-c", "import time\ntime.sleep(30)"]
    )
    try:
        deadline = time.monotonic() + 10
        # taskset execs python: wait for the exec.
        while not (THIS.cmdline(child.pid) or "").startswith(sys.executable):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert THIS.pid_alive(child.pid)
        # Newlines of a `python -c` program become spaces: one line.
        assert THIS.cmdline(child.pid) == f"{sys.executable} -c import time time.sleep(30)"
        assert THIS.allowed_cpus(child.pid) == (0,)
        assert THIS.parent_pid(child.pid) == os.getpid()
    finally:
        child.kill()
        child.wait()
    assert not THIS.pid_alive(child.pid)
    assert not THIS.pid_alive(0)


def test_status_fields_of_real_processes() -> None:
    """The umask and the capabilities (dirfd's mode of a new file, the sandbox's CAP_SYS_ADMIN)
    of a process started with a known umask and, when we are root, as nobody."""
    nobody = 65534 if os.geteuid() == 0 else None
    child = subprocess.Popen(["sleep", "30"], umask=0o027, user=nobody)
    try:
        assert THIS.umask(child.pid) == 0o027
        # A process that is not root has no effective capabilities (no file capabilities).
        assert THIS.capabilities(child.pid) == 0
        assert THIS.status_field(child.pid, "Pid") == str(child.pid)
        assert THIS.status_field(child.pid, "NoSuchField") is None
    finally:
        child.kill()
        child.wait()
    assert THIS.umask(child.pid) is None
    assert THIS.capabilities() is not None  # our own, "self"


def test_a_process_group_is_alive_until_its_last_process_is_a_zombie() -> None:
    """isolation.jobs waits on this: the leader and an orphan of its group, zombies not
    counted (an orphan's zombie may never be reaped by a container's PID 1)."""
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo $!; exec sleep 30"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    orphan = int(leader.stdout.readline())
    try:
        assert THIS.group_alive(leader.pid)
        leader.kill()
        deadline = time.monotonic() + 10
        while (stat := THIS.stat(leader.pid)) is not None and stat.state != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert THIS.group_alive(leader.pid)  # the leader is a zombie, its orphan runs
        leader.wait()
        os.kill(orphan, 9)
        while THIS.pid_alive(orphan):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not THIS.group_alive(leader.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, 9)
        leader.wait()
        leader.stdout.close()


def test_machine_wide_figures_of_this_machine() -> None:
    """/proc/stat, /proc/loadavg and /proc/pressure/cpu, read as the environment record and the
    doctor read them."""
    first = THIS.cpu_ticks()
    assert first is not None
    assert 0 <= first.steal <= first.total
    assert 0 < first.idle <= first.total
    time.sleep(0.05)
    second = THIS.cpu_ticks()
    assert second is not None
    assert second.total >= first.total
    assert second.idle >= first.idle
    assert THIS.load_average() == pytest.approx(os.getloadavg(), abs=1.0)
    pressure = THIS.cpu_pressure()
    if Path("/proc/pressure/cpu").exists():
        assert pressure is not None
        assert 0.0 <= pressure <= 100.0
    else:
        assert pressure is None


def test_machine_wide_texts_that_say_less() -> None:
    assert CpuTicks.parse("cpu  1 2 3 4 5 6 7 8 9 10\n", "s") == (CpuTicks(8, 9, 36), "")
    assert CpuTicks.parse("cpu0 1 2 3 4 5 6 7 8\n", "s") == (None, "s has no aggregate 'cpu' line")
    assert CpuTicks.parse("cpu  1 2 3 4 5 6 7\n", "s")[1] == (
        "s has no steal column (kernel older than 2.6.11)"
    )
    assert parse_load_average("0.50 0.25 0.10 1/99 42\n", "l") == (0.5, 0.25, 0.1)
    with pytest.raises(ValueError, match="not three load averages"):
        parse_load_average("0.5", "l")
    some = "some avg10=1.50 avg60=0.20 avg300=0.00 total=1\nfull avg10=0.00 avg60=0 total=0\n"
    assert parse_pressure_some_avg10(some) == 1.5
    assert parse_pressure_some_avg10("full avg10=3.00\n") is None


def test_the_doctor_sees_the_mounts_the_isolation_backends_see() -> None:
    mounts = cgroup_mounts()
    # The environment record reads them through the same reader, with a reason when it cannot.
    assert THIS.cgroup_mounts_or_reason() == (mounts, "")
    assert Machine(proc=Path("/nonexistent")).cgroup_mounts_or_reason() == (
        None,
        "/nonexistent/self/mountinfo does not exist",
    )
    facts = cgroup_facts(THIS, os.geteuid())
    v2 = [m.mountpoint for m in mounts if m.fstype == "cgroup2"]
    assert facts["v2_mount"] == (v2[0] if v2 else None)
    assert facts["v1_controllers"] == sorted(
        {c for m in mounts if m.fstype == "cgroup" for c in m.controllers}
    )
    assert facts["version"] == cgroup_version(mounts)
