"""How every ``duet`` command presents its ``--help``: options in named groups (cloup's option
groups on top of click), and the exit codes in the epilog, from the one table of
:data:`duet_bench.errors.EXIT_CODES`.

A command declares itself with ``@click.command(cls=Command, exits={...})``: the options find
their group by parameter name (:data:`GROUPS`), so the shared option decorators of
:mod:`duet_bench.commands.options` need not know which command stacks them, and ``exits`` says
what a code means for this command where it says more than the shared table.

cloup is imported only to format a help page: at import it reads click's version through
``importlib.metadata`` (30 to 100 ms on a busy 2-vCPU machine), which neither ``duet --help``
(the commands' one-line summaries) nor a command that runs needs to pay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click
import cloup

from duet_bench.errors import EXIT_CODES, EXIT_INFRASTRUCTURE, EXIT_INTERRUPTED

if TYPE_CHECKING:
    import cloup

#: The option groups of ``--help``, in the order shown, each with the parameter names it holds.
#: An option of no group lands in "Other options" (a test keeps that to ``--help``).
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "What to measure",
        (
            "baseline",
            "candidate",
            "native",
            "python_baseline",
            "python_candidate",
            "python",
            "callable_",
            "setup",
            "baseline_dir",
            "candidate_dir",
            "directory",
            "name",
            "command",
            "config",
            "config_path",
            "bench",
            "shard",
            "from_results",
            "allow_missing",
        ),
    ),
    ("Versions (git)", ("repo", "rebuild", "keep_worktrees")),
    (
        "Measuring",
        (
            "runs",
            "min_runs",
            "max_runs",
            "budget",
            "step_max_runs",
            "step_min_runs",
            "step_budget",
            "continue_from",
            "iterations",
            "warmup",
            "method",
            "crossover",
            "compare_designs",
            "memory_limit",
            "pids_limit",
            "timeout",
            "max_failures",
            "spread_share",
            "busy",
        ),
    ),
    (
        "Isolation",
        ("isolation", "cores", "share_network", "user", "keep_env", "plan_seed", "require"),
    ),
    ("Waiting for another duet", ("wait", "wait_timeout")),
    (
        "Analysis",
        ("metric", "confidence", "threshold", "interval", "winsorize", "reps", "seed"),
    ),
    (
        "Output",
        (
            "out",
            "output",
            "fmt",
            "plot_dir",
            "no_plots",
            "write",
            "quiet",
            "limit",
            "provider",
            "pr",
            "key",
            "details_url",
            "expect_head_sha",
            "author",
            "dry_run",
        ),
    ),
    ("Exit", ("fail_on", "allow_incomplete", "require_comment")),
)
_GROUP_OF = {name: title for title, names in GROUPS for name in names}
_ORDER = [title for title, _names in GROUPS]
_RANK = {name: i for i, name in enumerate(name for _title, names in GROUPS for name in names)}
#: The epilog is a preserved block (click does not wrap it): wrapped here for 80 columns.
_EPILOG_WIDTH = 78


def exit_codes_epilog(exits: Mapping[int, str], *, interrupts: bool = True) -> str:
    """The "Exit codes" paragraph of a command: every code of :data:`EXIT_CODES` with this
    command's meaning where ``exits`` gives one (a code mapped to "" is left out), and the
    codes of an interrupted command when it measures (``interrupts``)."""
    import textwrap

    meanings = {**EXIT_CODES, **exits}
    rows = [(str(code), text) for code, text in sorted(meanings.items()) if text]
    if interrupts:
        rows.append(EXIT_INTERRUPTED)
    lines = ["\b", "Exit codes:"]
    for code, text in rows:
        lines += textwrap.wrap(
            text,
            _EPILOG_WIDTH,
            initial_indent=f"  {code:<6}",
            subsequent_indent=" " * 8,
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def _group(params: Sequence[click.Parameter]) -> None:
    """Put every option of ``params`` in its group of :data:`GROUPS` (new groups for each
    command: a cloup group holds the options of one command)."""
    groups: dict[str, cloup.OptionGroup] = {}
    for param in params:
        title = _GROUP_OF.get(param.name or "")
        if isinstance(param, click.Option) and title and getattr(param, "group", None) is None:
            param.group = groups.setdefault(title, cloup.OptionGroup(title))  # type: ignore[attr-defined]


class Command(click.Command):
    """A duet command: options grouped in ``--help`` (:data:`GROUPS`), and the exit codes as
    the epilog (:func:`exit_codes_epilog`)."""

    def __init__(
        self,
        *args: Any,
        exits: Mapping[int, str] | None = None,
        interrupts: bool = True,
        **kwargs: Any,
    ) -> None:
        if not kwargs.get("epilog"):
            kwargs["epilog"] = exit_codes_epilog(exits or {}, interrupts=interrupts)
        super().__init__(*args, **kwargs)

    def get_help(self, ctx: click.Context) -> str:
        """The help page, formatted by cloup: the same command as a :class:`cloup.Command`
        with its options grouped, in a cloup context beside ``ctx``."""
        grouped = self._grouped()
        sub = cloup.Context(
            grouped,
            info_name=ctx.info_name,
            parent=ctx.parent,
            terminal_width=ctx.terminal_width,
            max_content_width=ctx.max_content_width,
            help_option_names=ctx.help_option_names,
        )
        return grouped.get_help(sub)

    def _grouped(self) -> cloup.Command:
        _group(self.params)
        grouped = cloup.Command(
            name=self.name,
            params=list(self.params),
            help=self.help,
            epilog=self.epilog,
            short_help=self.short_help,
            options_metavar=self.options_metavar,
            add_help_option=self.add_help_option,
            context_settings=self.context_settings,
        )
        grouped.option_groups.sort(key=lambda g: _ORDER.index(g.title))
        for group in grouped.option_groups:
            group.options = sorted(group.options, key=lambda o: _RANK[o.name or ""])
        return grouped


#: ``exits`` of the commands that only read results (no measuring: never a build or a machine
#: that refused).
READS_RESULTS: Mapping[int, str] = {
    EXIT_INFRASTRUCTURE: "unreadable results, an output that cannot be written, or incomplete "
    "results (an interrupted run; see --allow-incomplete)",
}
