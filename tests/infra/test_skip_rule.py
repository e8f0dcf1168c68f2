"""The suite's skip rule (tests/conftest.py, tests/allowed_skips.py) and the end-of-run summary
(scripts/test_summary.py), run on real pytest sessions (pytester) and real JUnit files."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.allowed_skips import ALLOWED, allowed_entry

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent.parent
SUMMARY = REPO / "scripts" / "test_summary.py"

# The real reasons of the CI machines' skips, and one for each way a reason may go wrong.
HOST_V2 = (
    "the cgroup2 hierarchy at /sys/fs/cgroup/unified offers no cpu, cpuset "
    "(a hybrid machine: they are bound to cgroup v1); the guest tier runs this"
)
GUEST_V1 = "cgroup v1 is not usable: no cgroup v1 hierarchy with cpu, cpuacct, cpuset"
DUETS_OWN_PROBE = "cgroup v1 is not usable: no cgroup v1 hierarchy is mounted under /sys/fs/cgroup"

# The rule as the suite's conftest defines it, alone (not the suite's fixtures).
CONFTEST = "from tests.conftest import pytest_runtest_makereport  # noqa: F401\n"


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.syspath_prepend(str(REPO))
    for name in ("CI", "DUET_CI_MACHINE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    return pytester


def skipping(reason: str) -> str:
    return f"import pytest\n\ndef test_it():\n    pytest.skip({reason!r})\n"


@pytest.mark.parametrize(
    ("ci", "machine", "reason", "outcome"),
    [
        (None, None, "no compiler here", "skipped"),
        ("true", None, "no compiler here", "failed"),
        ("true", None, HOST_V2, "skipped"),
        ("true", "guest", HOST_V2, "failed"),
        ("true", "guest", GUEST_V1, "skipped"),
        ("true", None, GUEST_V1, "failed"),
        # A reason that contains an allowed one, or is duet's own probe's: not allowed.
        ("true", "guest", DUETS_OWN_PROBE, "failed"),
        ("true", None, HOST_V2 + "; and something else", "failed"),
        ("true", None, "not " + "root reads files whatever their mode", "failed"),
    ],
)
def test_in_ci_only_an_allowed_reason_of_that_machine_may_skip(
    session: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ci: str | None,
    machine: str | None,
    reason: str,
    outcome: str,
) -> None:
    if ci is not None:
        monkeypatch.setenv("CI", ci)
    if machine is not None:
        monkeypatch.setenv("DUET_CI_MACHINE", machine)
    session.makepyfile(skipping(reason))
    result = session.runpytest()
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(
            ["*not an allowed fact of that machine*tests/allowed_skips.py*"]
        )


def test_a_skipif_marker_and_an_xfail_are_judged_as_a_skip_and_left_alone(
    session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    session.makepyfile(
        """
        import pytest

        @pytest.mark.skipif(True, reason="root reads files whatever their mode")
        def test_allowed():
            pass

        @pytest.mark.skipif(True, reason="the tool is missing")
        def test_not_allowed():
            pass

        @pytest.mark.xfail(reason="a known bug", strict=True)
        def test_expected_to_fail():
            assert False
        """
    )
    # A skip in setup (a marker, a fixture) fails the run as an error of that test.
    session.runpytest().assert_outcomes(skipped=1, errors=1, xfailed=1)


def test_every_allowed_reason_names_a_machine_and_says_why() -> None:
    for entry in ALLOWED:
        assert entry.machines
        assert set(entry.machines) <= {"host", "guest"}
        assert len(entry.why) > 40, entry
        assert not entry.runs_in_guest or entry.machines == ("host",), entry
    assert allowed_entry(HOST_V2, "host") is not None
    assert allowed_entry(GUEST_V1, "guest") is not None


GUEST_TEST = """
import os
import pytest

def test_controllers():
    if os.environ.get("DUET_CI_MACHINE") != "guest":
        pytest.skip({host_v2!r})
    {guest_body}

def test_elsewhere():
    pass
"""


def junit(
    session: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    machine: str,
    guest_body: str = "pass",
    extra: str = "",
) -> Path:
    """A real JUnit file of the same test module run on the host or in the guest."""
    session.makepyfile(test_v2=GUEST_TEST.format(host_v2=HOST_V2, guest_body=guest_body) + extra)
    path = session.path / f"{machine}.xml"
    if machine == "guest":
        monkeypatch.setenv("DUET_CI_MACHINE", "guest")
    else:
        monkeypatch.delenv("DUET_CI_MACHINE", raising=False)
    session.runpytest(f"--junitxml={path}")
    return path


def summary(*args: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SUMMARY), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_test_left_to_the_guest_must_have_passed_there(
    session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = junit(session, monkeypatch, "host")
    case = ET.parse(host).getroot().find(".//testcase[@name='test_controllers']")
    assert case is not None
    assert case.find("skipped") is not None
    passed = junit(session, monkeypatch, "guest")
    done = summary(host, "--guest", passed)
    assert done.returncode == 0, done.stdout
    assert "left to the guest, passed there: test_v2::test_controllers" in done.stdout

    failed = junit(session, monkeypatch, "guest", guest_body="assert False, 'broken'")
    done = summary(host, "--guest", failed)
    assert done.returncode == 1, done.stdout
    assert "LEFT TO THE GUEST, NOT PASSED THERE: test_v2::test_controllers: it failed" in (
        done.stdout
    )

    skipped = junit(session, monkeypatch, "guest", guest_body="pytest.skip('no systemd')")
    done = summary(host, "--guest", skipped)
    assert done.returncode == 1, done.stdout
    assert "it skipped there: no systemd" in done.stdout
    assert "NOT ALLOWED on the guest" in done.stdout

    done = summary(host, "--guest", session.path / "absent.xml")
    assert done.returncode == 1, done.stdout
    assert "the guest tier did not run its system tests" in done.stdout
    done = summary(host)
    assert done.returncode == 1, done.stdout


def test_the_summary_fails_on_a_skip_that_is_not_allowed(
    session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = "\ndef test_tool():\n    pytest.skip('go is not installed')\n"
    host = junit(session, monkeypatch, "host", extra=extra)
    guest = junit(session, monkeypatch, "guest", extra=extra.replace("tool", "tool_guest"))
    done = summary(host, "--guest", guest)
    assert done.returncode == 1, done.stdout
    assert "1 x [host: host.xml] go is not installed\n        NOT ALLOWED on the host" in (
        done.stdout
    )
    assert "left to the guest, passed there" in done.stdout
    assert "tests: 6 run in 2 invocation(s), 0 failed, 3 skipped" in done.stdout
