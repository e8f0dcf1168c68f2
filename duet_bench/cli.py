"""The ``duet`` command line: the group and exit codes, on top of every command (nothing
imports this module but ``__main__``).

Only this module exits: the group (:meth:`LazyGroup.invoke`) turns the
:class:`~duet_bench.errors.DuetError` a command raises, or the
:class:`~duet_bench.errors.Outcome` it returns, into a message and an exit code (0 no
regression, 1 regression found, 2 usage error, 3 environment or infrastructure failure; the table
is :data:`duet_bench.errors.EXIT_CODES`). Every command lives in its own
module under ``duet_bench/commands/`` (:data:`LAZY_COMMANDS`), imported only when it runs or is
listed, and the options they share in :mod:`duet_bench.commands.options`; heavy modules (numpy,
scipy, matplotlib, GitPython) are imported inside the commands, so ``duet --help`` starts fast.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
import textwrap
from typing import NoReturn

import click

from duet_bench import __version__, interrupts
from duet_bench.commands.finish import color_for
from duet_bench.commands.help import exit_codes_epilog
from duet_bench.errors import DuetError, EnvironmentNotReady, Outcome
from duet_bench.extras import missing_module_error
from duet_bench.isolation.privileges import ignore_invoker_paths
from duet_bench.untrusted import for_terminal


def _die(error: DuetError) -> NoReturn:
    # A message can quote the measured code (a side's stderr, a benchmark's name).
    click.secho(
        f"duet: error: {for_terminal(error.message)}",
        fg="red" if color_for(sys.stderr) else None,
        err=True,
    )
    if error.fix:
        click.echo(f"  fix: {for_terminal(error.fix)}", err=True)
    if error.exit_code > 128:  # Interrupted: a second signal must not change the exit code
        interrupts.hold_until_exit()
    sys.exit(error.exit_code)


class LazyGroup(click.Group):
    """A group whose commands in :data:`LAZY_COMMANDS` are imported only when used or listed,
    so ``duet --help`` and every other command stay fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def invoke(self, ctx: click.Context) -> None:
        """The exit of every command: a :class:`DuetError` raised by library code becomes its
        message and exit code, and the :class:`Outcome` the command returns its exit code
        (``None`` is :attr:`Outcome.OK`, which ends as click ends a command: exit 0)."""
        try:
            outcome = super().invoke(ctx)
        except DuetError as e:
            _die(e)
        except ModuleNotFoundError as e:
            # scipy, matplotlib and arch are extras (duet_bench.extras): say which to install.
            known = missing_module_error(e)
            if known is None:
                raise
            _die(known)
        if isinstance(outcome, Outcome) and outcome:
            sys.exit(int(outcome))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
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
    "schema": "duet_bench.commands.schema:schema",
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
    handler = logging.StreamHandler()
    handler.setFormatter(FitFormatter("duet: %(levelname)s: %(message)s"))
    logging.basicConfig(level=max(level, logging.DEBUG), handlers=[handler])
    _check_working_directory()
    _ignore_invoker_paths()


class FitFormatter(logging.Formatter):
    """Log lines folded to the terminal's width (``COLUMNS``, else the terminal's) when stderr
    is a terminal; a CI log or a captured stderr keeps one line per message, which is what a
    search of the log wants (``COLUMNS`` alone is no sign of a terminal: readline sets it in
    every program that loads it). Words are never broken: a path stays whole on a line of its
    own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        # "duet: warning: ...", as the messages duet prints itself.
        return self._style.format(record).replace(
            f"duet: {record.levelname}: ", f"duet: {record.levelname.lower()}: ", 1
        )

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if not sys.stderr.isatty():
            return text
        width = max(shutil.get_terminal_size().columns - 1, 40)
        return "\n".join(
            textwrap.fill(
                line,
                width,
                subsequent_indent="  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
            for line in text.splitlines()
        )


def _check_working_directory() -> None:
    """Refuse to start in a directory that no longer exists (a shell still in a directory that
    was removed): every command reads relative paths from it, and failed further on with a
    traceback or a wrong reason. ``--help`` still works there."""
    try:
        os.getcwd()
    except FileNotFoundError:
        if {"-h", "--help"} & set(sys.argv[1:]):
            return
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
    for text in ignore_invoker_paths(os.environ):
        logging.getLogger(__name__).warning(
            "ignoring %s from the environment of the user who ran sudo: root makes no file in a "
            "directory another user names, so its temporary files go to /tmp",
            for_terminal(text),
        )


if __name__ == "__main__":  # pragma: no cover
    main()
