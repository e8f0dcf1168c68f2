"""``select_backend`` on this machine, and the records of the interface."""

from __future__ import annotations

import logging
import os
import sys

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Limits, Usage, select_backend
from duet_bench.isolation.cgroup_v1 import probe_v1
from duet_bench.isolation.cgroup_v2 import probe_v2
from tests.leftovers import v2_mountpoint

# Also run in the guest tier (cgroup v2 with controllers under systemd, sudo from a user).
pytestmark = [pytest.mark.guest, pytest.mark.usefixtures("isolation_clean")]

ROOT = "/sys/fs/cgroup"


@pytest.mark.root
@pytest.mark.cgroup
def test_auto_picks_the_best_usable_level() -> None:
    v2, v1 = probe_v2(ROOT), probe_v1(ROOT)
    if not (v2.ok or v1.ok):
        pytest.skip(f"no cgroup level here: {v2.reason}; {v1.reason}")
    with select_backend("auto", root=ROOT) as backend:
        assert backend.level == ("cgroup-v2" if v2.ok else "cgroup-v1")
        assert backend.warning is None
    with select_backend("cgroup", root=ROOT) as backend:
        assert backend.level == ("cgroup-v2" if v2.ok else "cgroup-v1")


@pytest.mark.root
@pytest.mark.cgroup
def test_a_controller_less_unified_hierarchy_is_not_chosen() -> None:
    # Which hierarchy is mounted, read from /proc/self/mountinfo: not duet's find_v2_mount.
    mount = v2_mountpoint()
    if mount is None:
        pytest.skip("no cgroup2 hierarchy")
    with open(os.path.join(mount, "cgroup.controllers")) as f:
        offered = set(f.read().split())
    if {"cpuset", "cpu", "memory", "pids"} <= offered:
        pytest.skip("the unified hierarchy has the controllers here")
    probe = probe_v2(ROOT)
    assert not probe.ok
    assert "does not offer" in probe.reason
    if probe_v1(ROOT).ok:
        with select_backend("auto", root=ROOT) as backend:
            assert backend.level == "cgroup-v1"


def test_auto_falls_back_to_affinity_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="duet_bench.isolation"):
        backend = select_backend("auto", root="/nonexistent")
    with backend:
        assert backend.level == "affinity-only"
        assert backend.warning is not None
        assert "no cgroup v1 hierarchy is mounted under /nonexistent" in backend.warning
        assert "affinity-only" in caplog.text


def test_cgroup_request_raises_with_reason_and_fix() -> None:
    with pytest.raises(IsolationError, match="no cgroup isolation is possible") as error:
        select_backend("cgroup", root="/nonexistent")
    assert "no cgroup2 hierarchy" in error.value.message
    assert error.value.fix


def test_affinity_request_and_bad_request() -> None:
    with select_backend("affinity") as backend:
        assert backend.level == "affinity-only"
    with pytest.raises(ValueError, match="request"):
        select_backend("docker")  # type: ignore[arg-type]


@pytest.mark.root
@pytest.mark.cgroup
def test_without_privileges_the_fix_is_sudo_or_a_delegated_scope() -> None:
    if not (probe_v1(ROOT).ok or probe_v2(ROOT).ok):
        pytest.skip("no cgroup level here even as root")
    # A forked copy of this process that gives up root: the interpreter itself may not be
    # readable by an unprivileged user, so no new program is started.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                select_backend("cgroup", root=ROOT)
                text = "no error\n"
            except IsolationError as e:
                text = f"{e.message}\n{e.fix}\n"
            os.write(write_end, text.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        output = f.read().decode()
    os.waitpid(pid, 0)
    message, fix = output.splitlines()[:2]
    assert "uid 65534" in message
    assert 'sudo "$(command -v duet)" ...' in fix  # sudo resets PATH: the full path
    assert "systemd-run --user --scope -p Delegate=yes" in fix


def test_usage_never_records_an_unmeasured_field() -> None:
    usage = Usage(1, 1, 0, None, 0, False, missing={"peak_memory_bytes": "no memory cgroup"})
    assert usage.missing == {"peak_memory_bytes": "no memory cgroup"}
    with pytest.raises(ValueError, match="no reason"):
        Usage(1, 1, 0, None, 0, False, missing={})
    with pytest.raises(ValueError, match="also listed"):
        Usage(1, 1, 0, 5, 0, False, missing={"peak_memory_bytes": "?"})
    with pytest.raises(ValueError, match="unknown"):
        Usage(1, 1, 0, 5, 0, False, missing={"wall_ns": "?"})
    with pytest.raises(ValueError, match="negative"):
        Usage(-1, 1, 0, 5, 0, False, missing={})
    with pytest.raises(TypeError):
        usage.missing["cpu_ns"] = "x"  # type: ignore[index]
    everything = Usage.unmeasured("why")
    assert everything.cpu_ns is None
    assert set(everything.missing.values()) == {"why"}


def test_limits_are_checked() -> None:
    assert Limits() == Limits(None, None)
    with pytest.raises(ValueError, match="memory_bytes"):
        Limits(memory_bytes=0)
    with pytest.raises(ValueError, match="pids_max"):
        Limits(pids_max=-1)


def test_the_privilege_fix_names_duet_by_its_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from duet_bench.isolation import privilege_fix

    monkeypatch.setattr(sys, "argv", ["/opt/venv/bin/duet", "run", "--baseline", "a b"])
    fix = privilege_fix()
    assert "`sudo /opt/venv/bin/duet run --baseline 'a b'`" in fix
    assert "Delegate=yes /opt/venv/bin/duet run" in fix
