"""The errors duet raises, and the one table of duet's exit codes. Library code raises these
errors, and a command that runs to its end returns an :class:`Outcome`; only ``duet_bench.cli``
turns either into a message and an exit code (0 no regression, 1 regression found, 2 usage
error, 3 environment or infrastructure failure).

The exit codes of the processes duet starts are not these: the worker's are in
``duet_bench/harness/duet_worker.py``, the pytest driver's in ``duet_pytest.py`` beside it
(standard library only: they run inside the measured environment)."""

from __future__ import annotations

import enum

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 3

#: What each exit code means, for every command's ``--help`` (a command says more where its
#: meaning is narrower: :func:`duet_bench.commands.help.exit_codes_epilog`).
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "no regression",
    EXIT_REGRESSION: "a regression was found (see --fail-on)",
    EXIT_USAGE: "usage or configuration error",
    EXIT_INFRASTRUCTURE: "environment or infrastructure failure: the machine refused, a build "
    "or a benchmark failed, results unreadable or incomplete",
}
#: The exit codes of an interrupted command (:class:`Interrupted`).
EXIT_INTERRUPTED = ("128+N", "interrupted by signal N: 130 SIGINT, 143 SIGTERM, 129 SIGHUP")


class Outcome(enum.IntEnum):
    """What a command that ran to its end returns; its value is the exit code (the ``duet``
    group, :meth:`duet_bench.cli.LazyGroup.invoke`, exits with it). A failure raises a
    :class:`DuetError` instead, whose ``exit_code`` says 2 or 3."""

    #: No regression (per ``--fail-on``); doctor: what ``--require`` asks; bisect: not slower.
    OK = EXIT_OK
    #: A regression per ``--fail-on``; bisect: the slowdown was located.
    FAILS = EXIT_REGRESSION
    #: bisect: the search stopped undecided (what would decide it is in bisect.json).
    UNDECIDED = EXIT_INFRASTRUCTURE


class DuetError(Exception):
    """Base of every error duet reports to a user.

    The message says what happened and why; ``fix`` says what to do about it.
    """

    exit_code = EXIT_INFRASTRUCTURE

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        if self.fix:
            return f"{self.message}\n  fix: {self.fix}"
        return self.message


class UsageError(DuetError):
    """Wrong arguments or options (exit 2)."""

    exit_code = EXIT_USAGE


class ConfigError(DuetError):
    """A configuration file or value that cannot be used (exit 2)."""

    exit_code = EXIT_USAGE


class ResultsError(DuetError):
    """A results document that cannot be read or is not valid (exit 3)."""


class IncompleteResults(DuetError):
    """A results document that does not hold every planned run: its verdicts are from part of
    the runs (exit 3 unless ``--allow-incomplete``)."""


class EnvironmentNotReady(DuetError):
    """The machine does not allow what was asked (cgroups, cores, privileges) (exit 3)."""


class IsolationError(EnvironmentNotReady):
    """Setting up, using or removing a container failed (exit 3)."""


class BarrierError(DuetError):
    """The shared-memory barrier failed: timeout, abort or a corrupt file (exit 3)."""


class BenchmarkFailed(DuetError):
    """A benchmark ended with no successful run, or with more failed runs than allowed (exit 3)."""


class VersionError(DuetError):
    """A git ref that cannot be resolved, or a build that failed (exit 3)."""


class UnknownRef(VersionError):
    """A git ref that names no commit, here or on the remote (exit 2): the user's argument is
    wrong, the machine is fine. A fetch that fails or a clone too shallow stay exit 3."""

    exit_code = EXIT_USAGE


class Interrupted(DuetError):
    """The orchestrator received SIGINT or SIGTERM; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        import signal

        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}", fix=None)
        self.signum = signum
        self.exit_code = 128 + signum
