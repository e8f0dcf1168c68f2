"""The affinity-only fallback: pinning, process groups, and honest "missing" measurements.

No cgroups and no root needed.
"""

from __future__ import annotations

import logging
import os
import subprocess
import textwrap

import pytest

from duet_bench.errors import IsolationError
from duet_bench.isolation import Limits, pid_alive
from duet_bench.isolation.affinity import UNRELIABLE, AffinityBackend

pytestmark = pytest.mark.usefixtures("isolation_clean")


def test_child_is_pinned_and_leads_its_own_session(child_env: dict[str, str], cpu: int) -> None:
    with AffinityBackend() as backend:
        c = backend.container("r001-baseline", cpus=[cpu], mems=None, limits=Limits())
        popen = c.spawn(
            ["sh", "-c", "grep Cpus_allowed_list /proc/self/status; sleep 60"],
            env=child_env,
            cwd="/",
            stdout=subprocess.PIPE,
            stderr=None,
        )
        assert popen.stdout is not None
        line = popen.stdout.readline().decode()
        assert line.split()[-1] == str(cpu)
        assert os.getpgid(popen.pid) == popen.pid
        assert os.getsid(popen.pid) == popen.pid
        assert popen.pid in c.processes()
        c.close()
        assert popen.wait(timeout=5) == -9
        popen.stdout.close()


def test_usage_reports_everything_missing_with_the_reason(child_env: dict[str, str]) -> None:
    with AffinityBackend() as backend:
        c = backend.container("r001-candidate", cpus=[0], mems=None, limits=Limits())
        c.spawn(["true"], env=child_env, cwd="/", stdout=None, stderr=None).wait(timeout=5)
        usage = c.usage()
    assert usage.cpu_ns is None
    assert usage.peak_memory_bytes is None
    assert usage.missing["cpu_ns"] == UNRELIABLE
    assert usage.missing["peak_memory_bytes"] == UNRELIABLE
    assert "affinity-only: CPU time of orphaned children and peak memory are unreliable" in (
        UNRELIABLE
    )
    assert backend.level == "affinity-only"
    assert backend.warning is not None
    assert backend.warning.startswith("isolation level affinity-only")
    assert backend.cleanup_stale() == []


def test_kill_reaches_a_child_that_changed_its_group(
    child_env: dict[str, str], python: str
) -> None:
    # The child moves to its own process group but its parent stays alive: found through the
    # parent chain. (A double fork whose middle process exits escapes this level; that is what
    # the warning says and what cgroups are for.)
    script = textwrap.dedent(
        """
        import os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "60"], process_group=0)
        print(child.pid, flush=True)
        time.sleep(60)
        """
    )
    with AffinityBackend() as backend:
        c = backend.container("r002-baseline", cpus=[0], mems=None, limits=Limits())
        popen = c.spawn(
            [python, "-c", script], env=child_env, cwd="/", stdout=subprocess.PIPE, stderr=None
        )
        assert popen.stdout is not None
        grandchild = int(popen.stdout.readline())
        assert os.getpgid(grandchild) == grandchild != popen.pid
        assert set(c.processes()) == {popen.pid, grandchild}
        c.kill()
        assert popen.wait(timeout=5) == -9
        popen.stdout.close()
        assert not pid_alive(grandchild)


def test_limits_are_not_enforced_but_said_so(caplog: pytest.LogCaptureFixture) -> None:
    with AffinityBackend(reason="no permission") as backend:
        assert backend.warning is not None
        assert "no permission" in backend.warning
        with caplog.at_level(logging.WARNING, logger="duet_bench.isolation.affinity"):
            backend.container("r003-baseline", cpus=[0], mems=None, limits=Limits(pids_max=5))
        assert "not enforced" in caplog.text


def test_refuses_offline_cpus_and_bad_names() -> None:
    with AffinityBackend() as backend:
        with pytest.raises(IsolationError, match="not online"):
            backend.container("r004-baseline", cpus=[100_000], mems=None, limits=Limits())
        with pytest.raises(ValueError, match="container name"):
            backend.container("../escape", cpus=[0], mems=None, limits=Limits())
        with pytest.raises(ValueError, match="container name"):
            backend.container("cpu.stat", cpus=[0], mems=None, limits=Limits())
        with pytest.raises(ValueError, match="cpus"):
            backend.container("r004-candidate", cpus=[], mems=None, limits=Limits())
