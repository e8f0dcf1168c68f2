"""The skips CI accepts: facts of the CI machines, each with why (docs/reliability.md, "Tests").

In CI every other skip is a failure (``tests/conftest.py``; CI is ``CI=true``, which ``make
test`` sets, and the guest tier sets it under sudo): a test that cannot run there is a hole in
what CI checks, not a pass. CI has two machines. The **host** is root on a Debian 12 VM with 2
vCPUs, cgroup v1 controllers and a controller-less cgroup2 at /sys/fs/cgroup/unified (hybrid
layout), and the tools ``scripts/bootstrap.sh`` installs. The **guest** (the guest tier,
``scripts/guest/``) is cgroup v2 only, with controllers, under systemd; it runs
``pytest tests/system -m guest`` as root through sudo from a user, with ``DUET_CI_MACHINE=guest``.

A skip is allowed only when its reason, whole (``re.fullmatch``: a reason that merely contains
an allowed phrase is not allowed), describes the machine it was seen on, and the test it skips
runs where the fact differs (the other machine, a developer's machine), or checks a case that
cannot exist there. A test the host leaves to the guest (``runs_in_guest``) must have passed
in the guest: ``scripts/test_summary.py`` checks it in the two machines' JUnit files.

A product error is never on this list: a backend that fails on a machine where it should work
fails its test, and a reason worded by duet itself (its probes' messages) is never allowed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

Machine = Literal["host", "guest"]

#: The environment variable that names the CI machine a test runs on (unset: the host).
MACHINE_VARIABLE = "DUET_CI_MACHINE"


@dataclass(frozen=True, slots=True)
class Allowed:
    #: A regular expression the skip's whole reason must match (``re.fullmatch``).
    reason: str
    #: Why the CI machine cannot run the test, and where it runs instead.
    why: str
    #: The CI machines on which the skip is a fact.
    machines: tuple[Machine, ...]
    #: The test, skipped on the host, runs in the guest tier: it must have passed there.
    runs_in_guest: bool = False


ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        r"root reads files whatever their mode",
        "CI runs as root and root reads any file, so an unreadable file cannot be made there; "
        "the test runs on a developer's machine as a user (a gap in CI, said here)",
        ("host",),
    ),
    Allowed(
        r"this hierarchy offers the controllers|the unified hierarchy has the controllers here",
        "the test is about a cgroup2 hierarchy WITHOUT controllers; it runs on the host of CI "
        "(hybrid) and skips only in the guest, whose cgroup2 has them",
        ("guest",),
    ),
    Allowed(
        r"the cgroup2 hierarchy at /sys/fs/cgroup/unified offers no [a-z]+(, [a-z]+)* "
        r"\(a hybrid machine: they are bound to cgroup v1\); the guest tier runs this",
        "the host's cgroup2 is controller-less (its controllers are bound to v1, hybrid layout, "
        "and it is never remounted): the tests that need cgroup v2 controllers run in the guest "
        "tier (cgroup v2 under systemd), where CI requires them (DUET_REQUIRE_SYSTEM_TESTS=1)",
        ("host",),
        runs_in_guest=True,
    ),
    Allowed(
        # The wording of tests/system/conftest.py's v1_root (read from /proc/mounts), not of
        # duet's probe ("no cgroup v1 hierarchy is mounted under ..."), which must not be trusted.
        r"cgroup v1 is not usable: no cgroup v1 hierarchy with [a-z]+(, [a-z]+)*",
        "the guest is cgroup v2 only (as a hosted runner); the v1 tests run on the host",
        ("guest",),
    ),
)


def current_machine() -> Machine:
    """The CI machine these tests run on: ``DUET_CI_MACHINE`` (the guest tier sets ``guest``)."""
    return "guest" if os.environ.get(MACHINE_VARIABLE, "") == "guest" else "host"


def allowed_entry(reason: str, machine: Machine = "host") -> Allowed | None:
    """The entry that allows a skip for ``reason`` on ``machine``, or None."""
    for allowed in ALLOWED:
        if machine in allowed.machines and re.fullmatch(allowed.reason, reason.strip()):
            return allowed
    return None


def why_allowed(reason: str, machine: Machine = "host") -> str | None:
    """Why CI may skip a test for ``reason`` on ``machine``, or None when it may not."""
    entry = allowed_entry(reason, machine)
    return None if entry is None else entry.why
