"""Running a benchmark tool's own programs at discovery: found explicitly, their output kept for the
error message."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from duet_bench.adapters.base import Checkout
from duet_bench.config.model import Suite
from duet_bench.errors import ConfigError
from duet_bench.isolation.jobs import run_job_captured
from duet_bench.isolation.privileges import allowed_environment

#: Where adapters put what they build at discovery, inside each version's directory (a test
#: binary, a copy of a bench executable), so the iteration command is the same relative path
#: in both versions.
WORK_DIR = ".duet-adapters"

#: Discovery builds (go test -c, cargo bench --no-run): generous, a cold cargo build of
#: criterion takes minutes on a small machine.
DISCOVERY_TIMEOUT_S = 1800.0


def find_tool(
    suite: Suite, option: str, program: str, fallbacks: Sequence[str], given: str | None
) -> str:
    """The program to run: ``given``, the suite's option ``option`` (``go = "/opt/go/bin/go"``),
    then ``PATH``, then the usual install places (``/usr/local/go/bin/go``,
    ``~/.cargo/bin/cargo``), which are not on every user's ``PATH`` (CI runners, sudo, systemd
    units)."""
    if given is not None:
        return given
    found = shutil.which(program)
    if found:
        return found
    for candidate in fallbacks:
        path = os.path.expanduser(candidate)
        if os.access(path, os.X_OK):
            return path
    places = ", ".join(fallbacks)
    raise ConfigError(
        f"suite {suite.name!r}: {program} is not on PATH nor in {places}",
        fix=f'install it, or name it in the suite entry: {option} = "/path/to/{program}"',
    )


def run_tool(
    argv: Sequence[str],
    *,
    suite: Suite,
    checkout: Checkout,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run one discovery step and return its stdout; a :class:`ConfigError` saying what the
    benchmark tool printed when it fails.

    As the builds: as the invoking user, without the CI's secrets (the benchmark tool and what
    it builds are the version's code), and in a container of its own, killed with whatever the
    step left running (a daemon, a ``setsid`` child) before anything is measured
    (:func:`duet_bench.isolation.jobs.run_job_captured`)."""
    where = cwd or checkout.directory
    environment = {
        **allowed_environment(os.environ, checkout.keep_env),
        **checkout.env,
        **suite.env,
        **(env or {}),
    }
    if checkout.run_as is not None:
        environment = checkout.run_as.environment(environment)
    command = shlex.join(argv)
    try:
        done = run_job_captured(
            argv,
            name="discovery",
            what=f"suite {suite.name!r}: {what} ({command})",
            cwd=str(where),
            env=environment,
            timeout_s=DISCOVERY_TIMEOUT_S,
            run_as=checkout.run_as,
        )
    except FileNotFoundError:
        raise ConfigError(
            f"suite {suite.name!r}: cannot {what}: {argv[0]} does not exist (in {where})",
            fix="check the suite's path, and that the build command builds it",
        ) from None
    except PermissionError:
        raise ConfigError(
            f"suite {suite.name!r}: cannot {what}: {argv[0]} is not executable",
            fix="check the suite's path names the program itself",
        ) from None
    if done.returncode is None:
        raise ConfigError(
            f"suite {suite.name!r}: {what} took more than {DISCOVERY_TIMEOUT_S:.0f} s: {command}",
            fix="run it by hand in the version's directory to see where it hangs",
        )
    if done.returncode != 0:
        printed = (done.stderr.strip() + "\n" + done.stdout.strip()).strip()
        tail = printed[-2000:] or "(nothing)"
        raise ConfigError(
            f"suite {suite.name!r}: {what} failed (exit status {done.returncode}) in {where}: "
            f"{command}\nit printed:\n{tail}",
            fix="run that command by hand in the version's directory and fix what it says",
        )
    return done.stdout


def command_in(path: str, argv: Sequence[str]) -> str:
    """``argv`` as a command run in ``path`` (relative to the version's directory): spawned
    directly when ``path`` is the version's directory itself, else through ``cd path && exec``
    (a go test binary or a cargo bench runs in its package's directory, as ``go test`` and
    ``cargo bench`` run them)."""
    if os.path.normpath(path) == ".":
        return shlex.join(argv)
    return f"cd {shlex.quote(path)} && exec {shlex.join(argv)}"


def program_path(path: str) -> str:
    """A path relative to the version's directory as a program to run (``./bench``, not a
    name looked up on ``PATH``)."""
    if os.path.isabs(path) or path.startswith(("./", "../")):
        return path
    return "./" + path
