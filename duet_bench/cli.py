"""The ``duet`` command line: the group, exit codes and signals.

Only this module exits: it turns the :class:`~duet_bench.errors.DuetError` a command raises,
or the :class:`~duet_bench.errors.Outcome` it returns, into a message and an exit code (0 no
regression, 1 regression found, 2 usage error, 3 environment or infrastructure failure; the table
is :data:`duet_bench.errors.EXIT_CODES`). Every command lives in its own
module under ``duet_bench/commands/`` (:data:`LAZY_COMMANDS`), imported only when it runs or is
listed, and the options they share in :mod:`duet_bench.commands.options`; heavy modules (numpy,
scipy, matplotlib, GitPython) are imported inside the commands, so ``duet --help`` starts fast.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import click

from duet_bench import __version__
from duet_bench.commands.help import exit_codes_epilog
from duet_bench.errors import DuetError, Outcome

F = TypeVar("F", bound=Callable[..., Any])


def color_for(stream: Any) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, and no ``NO_COLOR`` (no-color.org:
    set and not empty)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def fails_on(doc: Any, fail_on: str) -> bool:
    """Whether the verdicts of ``doc`` fail a CI job under ``--fail-on``
    (:func:`duet_bench.analysis.fails` has the rule)."""
    from duet_bench.analysis import fails, verdicts_of

    return fails(verdicts_of(doc), fail_on)  # type: ignore[arg-type]  # FAIL_ON's choices


def outcome_of(doc: Any, fail_on: str) -> Outcome:
    """:attr:`Outcome.FAILS` when the verdicts of ``doc`` fail a CI job under ``--fail-on``
    (:func:`fails_on`), else :attr:`Outcome.OK`."""
    return Outcome.FAILS if fails_on(doc, fail_on) else Outcome.OK


def _die(error: DuetError) -> NoReturn:
    from duet_bench.untrusted import for_terminal

    # A message can quote the measured code (a side's stderr, a benchmark's name).
    click.secho(
        f"duet: error: {for_terminal(error.message)}",
        fg="red" if color_for(sys.stderr) else None,
        err=True,
    )
    if error.fix:
        click.echo(f"  fix: {for_terminal(error.fix)}", err=True)
    if error.exit_code > 128:  # Interrupted: a second signal must not change the exit code
        from duet_bench import interrupts

        interrupts.hold_until_exit()
    sys.exit(error.exit_code)


def reports_errors(fn: F) -> F:
    """The exit of a command: a :class:`DuetError` raised by library code becomes its message
    and exit code, and the :class:`Outcome` the command returns its exit code (``None`` is
    :attr:`Outcome.OK`)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            outcome: Outcome | None = fn(*args, **kwargs)
        except DuetError as e:
            _die(e)
        except ModuleNotFoundError as e:
            # scipy, matplotlib and arch are extras (duet_bench.extras): say which to install.
            from duet_bench.extras import missing_module_error

            known = missing_module_error(e)
            if known is None:
                raise
            _die(known)
        if outcome:  # Outcome.OK ends as click ends a command: exit 0
            sys.exit(int(outcome))

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature


class LazyGroup(click.Group):
    """A group whose commands in :data:`LAZY_COMMANDS` are imported only when used or listed,
    so ``duet --help`` and every other command stay fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            import importlib

            module_name, attr = LAZY_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


#: Commands that live in their own module under ``duet_bench/commands/``
#: (name -> "module:attribute").
LAZY_COMMANDS: dict[str, str] = {
    "analyze": "duet_bench.commands.analyze:analyze",
    "bisect": "duet_bench.commands.bisect:bisect",
    "calibrate": "duet_bench.commands.calibrate:calibrate",
    "comment": "duet_bench.commands.comment:comment",
    "compare": "duet_bench.commands.compare:compare",
    "demo": "duet_bench.commands.demo:demo",
    "doctor": "duet_bench.commands.doctor:doctor",
    "github": "duet_bench.commands.github:github",
    "merge": "duet_bench.commands.merge:merge",
    "report": "duet_bench.commands.report:report",
    "run": "duet_bench.commands.run:run",
}


@click.group(
    cls=LazyGroup,
    epilog=exit_codes_epilog({}),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="duet")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def main(verbose: int) -> None:
    """duet: A/B performance regression testing for CI.

    Runs two versions of a program at the same time, each on its own core in its own cgroup,
    synchronised by a shared-memory barrier, and reports the ratio with a bootstrap confidence
    interval and a verdict: regression, improvement, no change or inconclusive. Each command's
    --help says what its exit codes mean for it.
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG), format="duet: %(levelname)s: %(message)s")
    _check_working_directory()
    _ignore_invoker_paths()


def _check_working_directory() -> None:
    """Refuse to start in a directory that no longer exists (a shell still in a directory that
    was removed): every command reads relative paths from it, and failed further on with a
    traceback or a wrong reason. ``--help`` still works there."""
    try:
        os.getcwd()
    except FileNotFoundError:
        if {"-h", "--help"} & set(sys.argv[1:]):
            return
        from duet_bench.errors import EnvironmentNotReady

        shell = os.environ.get("PWD")
        where = f" ({shell})" if shell else ""
        _die(
            EnvironmentNotReady(
                f"the current directory{where} no longer exists: it was removed after the shell "
                "entered it, and duet reads relative paths from it (--out, the configuration, "
                "the benchmarks' commands and directories, the git checkout)",
                fix='cd to a directory that exists (cd "$PWD" if it was made again, else cd ..) '
                "and run duet again",
            )
        )


def _ignore_invoker_paths() -> None:
    """Under sudo, root makes no file where the invoking user's ``TMPDIR`` points (issue 33);
    say so, since a user who set it expects it to be used."""
    from duet_bench.isolation.privileges import ignore_invoker_paths
    from duet_bench.untrusted import for_terminal

    for text in ignore_invoker_paths(os.environ):
        click.echo(
            f"duet: warning: ignoring {for_terminal(text)} from the environment of the user who "
            "ran sudo: root makes no file in a directory another user names, so its temporary "
            "files go to /tmp",
            err=True,
        )


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted`: cleanup runs, the results file
    says where it stopped, and the exit code is 128 + the signal (130, 143, 129); see
    :mod:`duet_bench.interrupts`."""
    from duet_bench import interrupts

    interrupts.install()


def finish(
    doc: Any,
    out: str,
    fmt: str,
    fail_on: str,
    max_failures: int | None,
    *,
    missing: Sequence[str] = (),
) -> Outcome:
    """Print the report, then the outcome by contract: raise (exit 3) when a benchmark is broken
    or ``missing`` in one version (that outranks a regression: a verdict from a broken suite is
    not to be trusted), else :attr:`Outcome.FAILS` on a regression per ``--fail-on``, else
    :attr:`Outcome.OK`."""
    from duet_bench.report import render
    from duet_bench.report.layout import terminal_width
    from duet_bench.session import raise_if_broken

    color, width = fmt == "text" and color_for(sys.stdout), terminal_width(sys.stdout)
    click.echo(render(doc, fmt, color=color, width=width), nl=False)  # type: ignore[arg-type]
    click.echo(f"results: {out}", err=True)
    raise_if_broken(doc, max_failures, missing=missing)
    return outcome_of(doc, fail_on)


def deprecated_entry(old: str, command: str) -> None:
    """``old``, a way to run ``duet COMMAND`` kept for CI workflows written for it: a warning
    that names ``duet COMMAND`` (on stderr, whose lines GitHub also reads as workflow
    commands), then the command with the same arguments and exit code."""
    text = f"`{old}` is deprecated: run `duet {command}` with the same arguments"
    if os.environ.get("GITHUB_ACTIONS") == "true":  # ``text`` has nothing to escape (%, CR, LF)
        click.echo(f"::warning title=duet::{text}", err=True)
    else:
        click.echo(f"duet: warning: {text}", err=True)
    main([command, *sys.argv[1:]], prog_name="duet")


if __name__ == "__main__":  # pragma: no cover
    main()
