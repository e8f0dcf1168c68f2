"""The skips CI accepts: facts of the CI machine, each with why (docs/reliability.md, "Tests").

In CI (``CI=true``) every other skip is a failure (``tests/conftest.py``): a test that cannot run
there is a hole in what CI checks, not a pass. CI is root on a Debian 12 VM with 2 vCPUs, cgroup
v1 controllers and a controller-less cgroup2 at /sys/fs/cgroup/unified (hybrid layout), and the
tools ``scripts/bootstrap.sh`` installs. A skip is allowed here only when its reason describes
that machine and the test it skips runs where the fact differs (the guest tier, a developer's
machine), or checks a case that cannot exist on it.

A product error is never on this list: a backend that fails on a machine where it should work
fails its test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Allowed:
    #: A regular expression searched in the skip's reason.
    reason: str
    #: Why the CI machine cannot run the test, and where it runs instead.
    why: str


ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        r"root reads files whatever their mode",
        "CI runs as root and root reads any file, so an unreadable file cannot be made there; "
        "the test runs on a developer's machine as a user (a gap in CI, said here)",
    ),
    Allowed(
        r"the pytest-benchmark adapter is in this build",
        "the test is about a reduced build without that adapter; the build CI tests has them all",
    ),
    Allowed(
        r"this hierarchy offers the controllers|the unified hierarchy has the controllers",
        "the test is about a cgroup2 hierarchy WITHOUT controllers; it runs on the host of CI "
        "(hybrid) and skips only in the guest, whose cgroup2 has them",
    ),
    Allowed(
        r"offers no [a-z, ]+ \(a hybrid machine: they are bound to cgroup v1\)",
        "the host's cgroup2 is controller-less (its controllers are bound to v1, hybrid layout, "
        "and it is never remounted): the tests that need cgroup v2 controllers run in the guest "
        "tier (cgroup v2 under systemd), where CI requires them (DUET_REQUIRE_SYSTEM_TESTS=1)",
    ),
    Allowed(
        r"cgroup v1 is not usable: .*no cgroup v1|no cgroup v1 hierarch",
        "the guest is cgroup v2 only (as a hosted runner); the v1 tests run on the host",
    ),
)


def why_allowed(reason: str) -> str | None:
    """Why CI may skip a test for ``reason``, or None when it may not."""
    for allowed in ALLOWED:
        if re.search(allowed.reason, reason, flags=re.IGNORECASE):
            return allowed.why
    return None
