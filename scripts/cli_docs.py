"""Generate docs/cli.md from the commands' --help (checked by tests/duet/test_docs.py).

Run: .venv/bin/python scripts/cli_docs.py > docs/cli.md
"""

from __future__ import annotations

import click

from duet_bench.cli import main


def render() -> str:
    out = [
        "# Command reference",
        "",
        "Generated from `--help` by `scripts/cli_docs.py`; a test fails when it is out of date.",
        "",
    ]
    # The group's own context settings (help option names, width), as `duet --help` sees them.
    settings = {**main.context_settings, "terminal_width": 100, "max_content_width": 100}
    root = click.Context(main, info_name="duet", **settings)
    out += ["## duet", "", "```", main.get_help(root), "```", ""]
    for name in sorted(main.list_commands(root)):
        command = main.get_command(root, name)
        assert command is not None
        # A command's own context class: cloup's commands format their help with cloup's.
        ctx = command.context_class(
            command,
            info_name=name,
            parent=root,
            **settings,
        )
        out += [f"## duet {name}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
