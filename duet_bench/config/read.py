"""The configuration's text: which file it is, reading it (as the invoking user under sudo),
parsing it, and locating its statements for the line numbers of messages.

:func:`choose_config` is the one rule for which file is the configuration (on disk for
:func:`find_config`, at a commit for ``duet compare``); :func:`load_config` reads and parses it,
and :mod:`duet_bench.config.validate` turns the parsed table into a
:class:`~duet_bench.config.model.Config` or a :class:`~duet_bench.errors.ConfigError`, asking
:class:`Lines` for the line of a table or key. The scanner behind :class:`Lines` only needs to be
right for text tomllib accepted (it runs after the parse, and only when a message needs a line),
and only locates things: tomllib stays the parser of record. The in-place editor
(:mod:`duet_bench.config.writer`) does not need it: tomlkit keeps the layout.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from duet_bench.config.model import Config, Form
from duet_bench.config.validate import Validator
from duet_bench.config.values import DOCS, indented, type_name
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


def form_of(path: Path) -> Form:
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
                    f"{indented(MINIMAL_EXAMPLE)}\n  ({DOCS})",
                )
            path = found
        text = read_file(path)
    elif path is None:
        path = Path("duet.toml")
    form = form_of(path)
    data = parse_toml(path, text)
    if form == "pyproject":
        tool = data.get("tool")
        if not isinstance(tool, dict) or "duet" not in tool:
            raise ConfigError(
                f"{path}: has no [tool.duet] table",
                fix="add a [tool.duet] table and [[tool.duet.benchmark]] tables to it, or "
                f"create duet.toml ({DOCS})",
            )
        table = tool["duet"]
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: tool.duet must be a table, got {type_name(table)}",
                fix="write the settings under a [tool.duet] header",
            )
    else:
        table = data
    return Validator(path, form, text, Lines(text, form)).config(table)


def read_file(path: Path) -> str:
    """The text of the configuration file the user named or that was found from the working
    directory: root under ``sudo`` opens it as the user who ran sudo, so a link there leads only
    where they may read (docs/isolation.md, "What runs as root")."""
    try:
        with os.fdopen(open_as_invoking_user(path), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file",
            fix=f"create it, for example:\n\n{indented(MINIMAL_EXAMPLE)}\n  ({DOCS})",
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


def parse_toml(path: Path, text: str) -> dict[str, Any]:
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
            f"a benchmark starts with a [[benchmark]] line); {DOCS}",
        ) from None
    except (RecursionError, ValueError) as e:
        # tomllib recurses into nested arrays and tables and refuses integers of more than
        # sys.get_int_max_str_digits() digits; neither is a configuration anybody writes.
        what = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise ConfigError(
            f"{path}: not a usable configuration: {what}",
            fix=f"write the configuration as {DOCS} shows",
        ) from None


class Lines:
    """The line of a key or table of the configuration's text, for messages: the text is
    scanned on the first question, and a text the scanner does not handle only loses the line
    numbers (the message still names the table and key)."""

    def __init__(self, text: str, form: Form) -> None:
        self.text = text
        self.form = form
        self._scanned: list[_Region] | None = None
        self._scan_failed = False

    def __call__(self, index: int | None, key: str | None) -> int | None:
        """The line of ``key`` in the suite table (index None) or in the index-th benchmark
        table, or of that table's header; None when the file does not say (inline tables)."""
        if self._scanned is None and not self._scan_failed:
            try:
                self._scanned = _regions(_scan(self.text))
            except _ScanError:
                self._scan_failed = True
        if self._scanned is None:
            return None
        region = _target_region(self._scanned, self.form, index)
        if region is None:
            # Benchmarks written inline (benchmark = [{...}]): the line of that key.
            return self(None, "benchmark") if index is not None else None
        if key is not None:
            for s in region.stmts:
                if s.kind == "keyval" and s.path[:1] == (key,):
                    return s.line
            if index is None:
                # A key written as a table of its own: [benchmark] instead of [[benchmark]].
                table = (*_suite_path(self.form), key)
                for r in self._scanned:
                    if r.header is not None and r.path[: len(table)] == table:
                        return r.header.line
                return None
        header = region.header
        return header.line if header is not None else None


class _ScanError(Exception):
    """The scanner met something it does not handle; callers fall back or refuse."""


@dataclass(slots=True)
class _Stmt:
    kind: Literal["blank", "comment", "header", "keyval"]
    start: int  # offset of the first character of the line
    end: int  # offset just after the statement's last newline (or the end of the text)
    line: int  # 1-based line of ``start``
    path: tuple[str, ...] = ()  # the header's table or the dotted key
    array: bool = False  # a [[array of tables]] header
    indent: str = ""
    value_start: int = 0
    value_end: int = 0


@dataclass(slots=True)
class _Region:
    """A header and the statements up to the next one (the top of the file has no header)."""

    header: _Stmt | None
    path: tuple[str, ...]
    array: bool
    stmts: list[_Stmt]


def _suite_path(form: Form) -> tuple[str, ...]:
    return () if form == "duet" else ("tool", "duet")


def _benchmark_path(form: Form) -> tuple[str, ...]:
    return (*_suite_path(form), "benchmark")


def _target_region(regions: list[_Region], form: Form, index: int | None) -> _Region | None:
    if index is None:
        if form == "duet":
            return regions[0]
        return next((r for r in regions if not r.array and r.path == ("tool", "duet")), None)
    arrays = [r for r in regions if r.array and r.path == _benchmark_path(form)]
    return arrays[index] if index < len(arrays) else None


def _regions(stmts: list[_Stmt]) -> list[_Region]:
    regions = [_Region(header=None, path=(), array=False, stmts=[])]
    for s in stmts:
        if s.kind == "header":
            regions.append(_Region(header=s, path=s.path, array=s.array, stmts=[]))
        else:
            regions[-1].stmts.append(s)
    return regions


def _key_path(fragment: str, header: bool) -> tuple[str, ...]:
    """The key path of a key or table name as tomllib reads it (quotes, escapes, dots)."""
    try:
        data: Any = tomllib.loads(f"[{fragment}]" if header else f"{fragment} = 0")
    except tomllib.TOMLDecodeError as e:
        raise _ScanError(f"cannot read the key {fragment!r}: {e}") from None
    path = []
    while isinstance(data, dict) and len(data) == 1:
        ((key, data),) = data.items()
        path.append(key)
    return tuple(path)


def _scan(text: str) -> list[_Stmt]:
    stmts: list[_Stmt] = []
    n = len(text)
    pos = 0
    line = 1
    while pos < n:
        start = pos
        while pos < n and text[pos] in " \t":
            pos += 1
        indent = text[start:pos]
        if pos >= n or text[pos] in "\r\n":
            end = _end_of_line(text, pos)
            stmts.append(_Stmt("blank", start, end, line))
        elif text[pos] == "#":
            end = _end_of_line(text, pos)
            stmts.append(_Stmt("comment", start, end, line))
        elif text[pos] == "[":
            array = text.startswith("[[", pos)
            pos += 2 if array else 1
            key_end = _scan_key(text, pos, "]")
            closing = "]]" if array else "]"
            if not text.startswith(closing, key_end):
                raise _ScanError(f"line {line}: unterminated table header")
            path = _key_path(text[pos:key_end], header=True)
            end = _end_of_line(text, key_end + len(closing))
            stmts.append(_Stmt("header", start, end, line, path=path, array=array, indent=indent))
        else:
            key_end = _scan_key(text, pos, "=")
            if key_end >= n:
                raise _ScanError(f"line {line}: a key without '='")
            path = _key_path(text[pos:key_end], header=False)
            value_start = key_end + 1
            while value_start < n and text[value_start] in " \t":
                value_start += 1
            value_end = _scan_value(text, value_start)
            end = _end_of_line(text, value_end)
            stmts.append(
                _Stmt(
                    "keyval",
                    start,
                    end,
                    line,
                    path=path,
                    indent=indent,
                    value_start=value_start,
                    value_end=value_end,
                )
            )
        line += text.count("\n", start, stmts[-1].end)
        pos = stmts[-1].end
    return stmts


def _end_of_line(text: str, pos: int) -> int:
    """Past trailing blanks, an optional comment and the newline; only those may follow."""
    n = len(text)
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos < n and text[pos] == "#":
        newline = text.find("\n", pos)
        return n if newline < 0 else newline + 1
    if text.startswith("\r\n", pos):
        return pos + 2
    if pos < n and text[pos] == "\n":
        return pos + 1
    if pos >= n:
        return n
    raise _ScanError(f"unexpected {text[pos]!r} at offset {pos}")


def _scan_key(text: str, pos: int, stop: str) -> int:
    """The offset of ``stop`` after a (dotted, quoted) key starting at ``pos``."""
    n = len(text)
    while pos < n and text[pos] != stop:
        if text[pos] in "\r\n":
            raise _ScanError("a newline inside a key")
        pos = _skip_string(text, pos) if text[pos] in "\"'" else pos + 1
    return pos


def _skip_string(text: str, pos: int) -> int:
    """The offset just after the string (any of TOML's four kinds) starting at ``pos``."""
    n = len(text)
    quote = text[pos]
    multi = text.startswith(quote * 3, pos)
    i = pos + (3 if multi else 1)
    while i < n:
        c = text[i]
        if c == "\\" and quote == '"':
            i += 2
            continue
        if multi and text.startswith(quote * 3, i):
            j = i + 3
            # Up to two more quotes belong to the string: """a"""" is 'a"'.
            while j < n and text[j] == quote and j - i < 5:
                j += 1
            return j
        if not multi:
            if c == quote:
                return i + 1
            if c in "\r\n":
                break
        i += 1
    raise _ScanError(f"unterminated string at offset {pos}")


def _scan_value(text: str, pos: int) -> int:
    """The offset just after the value starting at ``pos`` (arrays and inline tables may span
    lines and hold comments; strings may hold anything)."""
    n = len(text)
    depth = 0
    end = pos
    while pos < n:
        c = text[pos]
        if c in "\"'":
            pos = _skip_string(text, pos)
            end = pos
        elif c in "[{":
            depth += 1
            pos += 1
            end = pos
        elif c in "]}":
            depth -= 1
            pos += 1
            end = pos
            if depth < 0:
                raise _ScanError(f"unbalanced {c!r} at offset {pos}")
        elif c == "#" or c in "\r\n":
            if depth == 0:
                break
            newline = text.find("\n", pos)
            pos = n if newline < 0 else newline + 1
        elif c in " \t":
            pos += 1
        else:
            pos += 1
            end = pos
    if depth:
        raise _ScanError("unterminated array or inline table")
    return end
