"""Generate docs/cli.md from the commands' --help (checked by tests/duet/test_docs.py).

Run: .venv/bin/python scripts/cli_docs.py > docs/cli.md
"""

from __future__ import annotations

import click

from duet_bench.cli import main

CONVENTIONS = """\
## One vocabulary

Every command that has these options gives them the same name and meaning.

- **`--out DIR` is always a directory**, made if missing. `run`, `compare` and `merge` write
  `results.json` with `report.md`, `junit.xml` and `metrics.txt` beside it (`compare` also
  `plots/`); `calibrate` writes its A/A's `results.json`; `bisect` its `bisect.json`, `report.md`,
  `steps/` and `logs/`; `demo` one directory per condition; `report --out DIR` the report under the
  name `compare` gives that format (`report.md`, `junit.xml`, `metrics.txt`, `report.html`,
  `report.txt`, `report.json`). A directory, because most commands write several files and three
  already took one: with a file for some commands and a directory for others, the same
  `--out duet-results` meant two things. The commands that read results (`analyze`, `report`,
  `comment`, `github`, `merge`, `calibrate --results`) take that directory or the `results.json`
  in it.
- **Deprecated, still working:** a `--out` of `run`, `calibrate` or `merge` that ends in `.json`
  or `.json.gz` is the results file, as before, with a warning that names the directory form
  (`--out r/x.json` -> `--out r`, which writes `r/results.json`); `report -o/--output FILE` writes
  FILE, with a warning naming `--out DIR`. Scripts and CI jobs written for the old form keep
  working until they move; a later version will refuse them.
- **`--bench PATTERN` selects benchmarks** of the configuration: a name, or a glob on the names
  (quoted for the shell: `'parse*'`). `compare` measures every match; `bisect` and `calibrate`
  follow one, so there the pattern must match one name. `--benchmark` is its old spelling.
- **`--format FORMAT`** takes the same names everywhere: `text`, `markdown`, `json`, `junit`,
  `openmetrics`, `html`. A command that cannot write one says so in its `--help` and refuses it
  naming what writes it (`html` with its plots is `duet report`'s).
- **Exit codes**: 0 no regression, 1 a regression (per `--fail-on`), 2 usage or configuration
  error, 3 environment or infrastructure failure, 128 + N interrupted by signal N; each command's
  `--help` ends with what they mean for it.
"""


def render() -> str:
    out = [
        "# Command reference",
        "",
        "Generated from `--help` by `scripts/cli_docs.py`; a test fails when it is out of date.",
        "",
        CONVENTIONS,
    ]
    # The group's own context settings (help option names, width), as `duet --help` sees them.
    settings = {**main.context_settings, "terminal_width": 100, "max_content_width": 100}
    root = click.Context(main, info_name="duet", **settings)
    out += ["## duet", "", "```", main.get_help(root), "```", ""]
    for name in sorted(main.list_commands(root)):
        command = main.get_command(root, name)
        assert command is not None
        ctx = click.Context(
            command,
            info_name=name,
            parent=root,
            **settings,
        )
        out += [f"## duet {name}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
