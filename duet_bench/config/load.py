"""Finding, reading and validating the configuration.

:func:`choose_config` is the one rule for which file is the configuration (on disk for
:func:`find_config`, at a commit for ``duet compare``); :func:`load_config` reads and parses it,
and :mod:`duet_bench.config.validate` turns the parsed table into a
:class:`~duet_bench.config.model.Config` or a :class:`~duet_bench.errors.ConfigError`.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from duet_bench.config.model import (
    Config,
    Form,
)
from duet_bench.config.validate import _Validator
from duet_bench.config.values import (
    _DOCS,
    _indent,
    _type_name,
)
from duet_bench.errors import ConfigError
from duet_bench.isolation.privileges import open_as_invoking_user

log = logging.getLogger(__name__)


CONFIG_FILES = ("duet.toml", "pyproject.toml")


MINIMAL_EXAMPLE = """\
# duet.toml
build = "make"                 # optional: run in each version's checkout before measuring

[[benchmark]]
name = "startup"
command = "./app --version"    # run through the shell in the version's directory
"""


def choose_config(
    read: Callable[[str], str | None], names: Sequence[str] = CONFIG_FILES
) -> tuple[str, str] | None:
    """``(name, text)`` of the configuration among the files ``names`` of one place (a
    directory on disk, or a commit), or None: the first that exists, where a file called
    ``pyproject.toml`` counts only when it has a ``[tool.duet]`` table.

    ``read(name)`` gives the file's text, None when there is no such file, or "" when it exists
    but cannot be read (a ``duet.toml`` is then still chosen, so that loading it says why).
    The one rule for finding the configuration: :func:`find_config` applies it to each
    directory up to the git root, ``duet compare`` to the root of a commit.
    """
    found = []
    for name in names:
        text = read(name)
        if text is None or (Path(name).name == "pyproject.toml" and not has_duet_table(text)):
            continue
        found.append((name, text))
    if len(found) > 1:
        log.warning("%s is used; [tool.duet] in %s is ignored", found[0][0], found[1][0])
    return found[0] if found else None


def find_config(start: Path) -> Path | None:
    """The configuration file that applies at ``start``: in ``start`` and then each parent
    directory, ``duet.toml`` first, then a ``pyproject.toml`` that has a ``[tool.duet]`` table
    (:func:`choose_config`). The search stops at the root of the git checkout (the directory
    holding ``.git``), so a file above the project is never picked up, or at the filesystem root.
    """
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        found = choose_config(
            lambda name: _read_if_file(Path(name)),
            [str(directory / name) for name in CONFIG_FILES],
        )
        if found is not None:
            return Path(found[0])
        if (directory / ".git").exists():
            break
    return None


def _read_if_file(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        log.debug("cannot read %s: %s", path, e)
        return ""


def has_duet_table(text: str) -> bool:
    """Whether the ``pyproject.toml`` ``text`` has a ``[tool.duet]`` table."""
    try:
        tool = tomllib.loads(text).get("tool")
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        # Broken TOML: claim the file when it mentions the table, so that loading reports the
        # syntax error instead of "no configuration found".
        return re.search(r"^\s*\[\[?\s*tool\s*\.\s*duet\b", text, re.MULTILINE) is not None
    return isinstance(tool, dict) and "duet" in tool


def _form_of(path: Path) -> Form:
    return "pyproject" if path.name == "pyproject.toml" else "duet"


def load_config(
    path: Path | None = None, *, start: Path | None = None, text: str | None = None
) -> Config:
    """Read, parse and validate a configuration.

    Parameters
    ----------
    path
        The file. None: :func:`find_config` from ``start`` (default: the current directory).
        With ``text`` it only names the file in messages and decides the form: a file called
        ``pyproject.toml`` holds the keys under ``[tool.duet]``, any other name at top level.
    start
        Where to start looking when ``path`` is None.
    text
        The file's content, already read (e.g. ``git show HEAD:duet.toml``).

    Raises
    ------
    ConfigError
        No file, an unreadable file, invalid TOML (with line and column), or an unknown key, a
        wrong type or value (with the table, the key and the fix).
    """
    if text is None:
        if path is None:
            where = (start or Path.cwd()).resolve()
            found = find_config(where)
            if found is None:
                raise ConfigError(
                    f"no duet configuration in {where} or its parents up to the git root "
                    "(looked for duet.toml, and for [tool.duet] in pyproject.toml)",
                    fix=f"create duet.toml at the root of your project, for example:\n\n"
                    f"{_indent(MINIMAL_EXAMPLE)}\n  ({_DOCS})",
                )
            path = found
        text = _read(path)
    elif path is None:
        path = Path("duet.toml")
    form = _form_of(path)
    data = _parse(path, text)
    if form == "pyproject":
        tool = data.get("tool")
        if not isinstance(tool, dict) or "duet" not in tool:
            raise ConfigError(
                f"{path}: has no [tool.duet] table",
                fix="add a [tool.duet] table and [[tool.duet.benchmark]] tables to it, or "
                f"create duet.toml ({_DOCS})",
            )
        table = tool["duet"]
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: tool.duet must be a table, got {_type_name(table)}",
                fix="write the settings under a [tool.duet] header",
            )
    else:
        table = data
    return _Validator(path, form, text).config(table)


def _read(path: Path) -> str:
    """The text of the configuration file the user named or that was found from the working
    directory: root under ``sudo`` opens it as the user who ran sudo, so a link there leads only
    where they may read (docs/isolation.md, "What runs as root")."""
    try:
        with os.fdopen(open_as_invoking_user(path), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file",
            fix=f"create it, for example:\n\n{_indent(MINIMAL_EXAMPLE)}\n  ({_DOCS})",
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path} is a directory, not a configuration file",
            fix=f"name the file itself, e.g. {path / 'duet.toml'}",
        ) from None
    except OSError as e:
        raise ConfigError(
            f"{path}: cannot be read ({e.strerror or e})", fix="check the path and permissions"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte {e.start}); TOML files are UTF-8",
            fix="save the file as UTF-8",
        ) from None


_TOML_POSITION = re.compile(
    r"^(?P<msg>.*) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$", re.S
)


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # Python 3.11's TOMLDecodeError has no line/column attributes (3.14 adds them): they
        # are only in the message, "Invalid value (at line 3, column 8)".
        match = _TOML_POSITION.match(str(e))
        msg = match.group("msg") if match else str(e)
        if match and match.group("line"):
            line, col = int(match.group("line")), int(match.group("col"))
        else:
            line = text.count("\n") + 1 - (1 if text.endswith("\n") else 0)
            col = len(text.rstrip("\n").rsplit("\n", 1)[-1]) + 1
        lines = text.split("\n")
        source = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
        shown = f"\n    {source}\n    {' ' * (col - 1)}^" if source.strip() else ""
        raise ConfigError(
            f"{path}:{line}:{col}: not valid TOML: {msg}{shown}",
            fix='correct the syntax at that place (strings need quotes: name = "parse"; '
            f"a benchmark starts with a [[benchmark]] line); {_DOCS}",
        ) from None
    except (RecursionError, ValueError) as e:
        # tomllib recurses into nested arrays and tables and refuses integers of more than
        # sys.get_int_max_str_digits() digits; neither is a configuration anybody writes.
        what = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise ConfigError(
            f"{path}: not a usable configuration: {what}",
            fix=f"write the configuration as {_DOCS} shows",
        ) from None
