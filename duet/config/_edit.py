"""Editing the configuration in place (``duet calibrate --write``).

The part of the former ``duet/config.py`` below its marker "Editing the file in place", moved
here unchanged; ``duet/config_writer.py`` (on tomlkit) replaces this module, and
:mod:`duet.config` re-exports what it provides.

:func:`write_recommendation` is a small line-based editor rather than a TOML round-trip library
(one dependency fewer): it only ever rewrites the value of ``runs``/``iterations``/``warmup`` or
inserts such a line, and it re-parses its own output and refuses to write unless the result
equals the original data with exactly those values changed, so a file it cannot edit safely is
left untouched.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from duet.config.load import _DOCS, _form_of, _parse, _read
from duet.config.model import RECOMMENDATION_KEYS, WORD_RECOMMENDATIONS, Form, _range_problem
from duet.errors import ConfigError, ResultsError
from duet.results import write_atomic

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Editing the file in place (duet calibrate --write)


def write_recommendation(
    path: Path, *, benchmark: str | None, values: Mapping[str, int | str]
) -> None:
    """Set ``runs``/``iterations``/``warmup``/``method`` in the suite table (``benchmark``
    None) or in that benchmark's table of ``path``, keeping everything else byte for byte: comments,
    order, spacing, line endings. An existing key gets its value replaced (its comment kept);
    a missing one is added after the table's last key. Works for ``duet.toml`` and for
    ``[tool.duet]`` in ``pyproject.toml``; the file is replaced atomically and keeps its mode.

    Raises
    ------
    ValueError
        ``values`` has another key or a value out of range (a bug of the caller).
    ConfigError
        The file cannot be read or parsed, has no such benchmark, or is written in a way this
        editor cannot change safely (benchmarks as inline tables); nothing is written then.
    """
    for key, value in values.items():
        if key not in RECOMMENDATION_KEYS:
            raise ValueError(f"write_recommendation sets {RECOMMENDATION_KEYS}, not {key!r}")
        if key in WORD_RECOMMENDATIONS:
            if not isinstance(value, str):
                raise ValueError(f"{key} must be a str, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} must be an int, got {value!r}")
        problem = _range_problem(key, value)
        if problem:
            raise ValueError(f"{key} {problem}")
    real = path.resolve()  # write through a symlink instead of replacing it by a file
    text = _read(path)
    new = edit_text(text, form=_form_of(path), benchmark=benchmark, values=values, path=path)
    if new == text:
        return
    mode = real.stat().st_mode & 0o7777
    try:
        write_atomic(real, new)
        # The temporary file write_atomic renames is created 0600: restore the file's mode.
        os.chmod(real, mode)
    except (ResultsError, OSError) as e:
        # write_atomic words its errors for results files: report the system's reason only.
        cause = e.__cause__ if isinstance(e, ResultsError) and e.__cause__ else e
        reason = getattr(cause, "strerror", None) or str(cause)
        raise ConfigError(
            f"{path}: could not write the recommendation ({reason}); the file is unchanged",
            fix="make the file and its directory writable, or set the values by hand: "
            + ", ".join(f"{k} = {_toml_value(v)}" for k, v in values.items()),
        ) from e


def edit_text(
    text: str,
    *,
    form: Form,
    benchmark: str | None,
    values: Mapping[str, int | str],
    path: Path | None = None,
) -> str:
    """The text of :func:`write_recommendation` without touching a file (for tests and dry
    runs). ``form`` is ``"duet"`` (keys at top level) or ``"pyproject"`` (under tool.duet)."""
    path = path or Path("duet.toml" if form == "duet" else "pyproject.toml")
    data = _parse(path, text)
    base: tuple[str, ...] = () if form == "duet" else ("tool", "duet")
    suite: Any = data
    for part in base:
        suite = suite.get(part) if isinstance(suite, dict) else None
    if not isinstance(suite, dict):
        raise ConfigError(
            f"{path}: has no [tool.duet] table to write the recommendation into",
            fix=f"add [tool.duet] to {path}, or create duet.toml ({_DOCS})",
        )
    index: int | None = None
    expected = copy.deepcopy(data)
    target: dict[str, Any] = expected
    for part in base:
        target = target[part]
    if benchmark is not None:
        items = suite.get("benchmark")
        items = items if isinstance(items, list) else []
        names = [b.get("name") if isinstance(b, dict) else None for b in items]
        if names.count(benchmark) != 1:
            listed = ", ".join(str(n) for n in names if isinstance(n, str)) or "none"
            problem = "no benchmark" if benchmark not in names else "more than one benchmark"
            raise ConfigError(
                f"{path}: {problem} named {benchmark!r} (the benchmarks: {listed})",
                fix="name one benchmark of the file, or leave it out to set the suite defaults",
            )
        index = names.index(benchmark)
        target = target["benchmark"][index]
    target.update(values)

    manual = ", ".join(f"{k} = {_toml_value(v)}" for k, v in values.items())
    where = (
        ("the top of the file" if form == "duet" else "[tool.duet]")
        if benchmark is None
        else f"benchmark {benchmark!r}"
    )
    cannot = ConfigError(
        f"{path}: the recommendation cannot be written without disturbing the file (is the "
        "table written inline?); nothing was written",
        fix=f"set {manual} by hand in {where}",
    )
    try:
        regions = _regions(_scan(text))
        new = _apply(text, regions, form, index, values, len(suite.get("benchmark") or ()))
    except _ScanError as e:
        log.debug("cannot edit %s: %s", path, e)
        raise cannot from None
    # The editor's own check: the new file must parse to the old data with exactly the new
    # values. Anything else (a key defined in a way the scanner did not expect) is refused.
    try:
        reparsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        log.debug("edit of %s gave invalid TOML: %s", path, e)
        raise cannot from None
    if not _same(reparsed, expected):
        raise cannot
    return new


def _same(a: Any, b: Any) -> bool:
    """Deep equality where NaN equals NaN (a TOML file may hold ``nan``)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _toml_value(value: int | str) -> str:
    """An int or a plain string (a method name) as TOML; JSON's quoting is TOML's for them."""
    return json.dumps(value) if isinstance(value, str) else str(value)


def _apply(
    text: str,
    regions: list[_Region],
    form: Form,
    index: int | None,
    values: Mapping[str, int | str],
    n_benchmarks: int,
) -> str:
    array = _benchmark_path(form)
    headers = sum(1 for r in regions if r.array and r.path == array)
    if index is not None and headers != n_benchmarks:
        raise _ScanError("the benchmarks are not all written as [[benchmark]] tables")
    nl = "\r\n" if "\r\n" in text else "\n"
    region = _target_region(regions, form, index)
    edits: list[tuple[int, int, str]] = []
    missing: list[str] = []
    for key, value in values.items():
        stmt = None
        if region is not None:
            stmt = next((s for s in region.stmts if s.kind == "keyval" and s.path == (key,)), None)
        if stmt is not None:
            edits.append((stmt.value_start, stmt.value_end, _toml_value(value)))
        else:
            missing.append(f"{key} = {_toml_value(value)}")
    if missing:
        at, _, block = _insertion(text, regions, region, missing, nl)
        if at == len(text) and not text.endswith("\n") and block.endswith(nl):
            block = block[: -len(nl)]  # the file had no final newline: keep it that way
        edits.append((at, at, block))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _insertion(
    text: str, regions: list[_Region], region: _Region | None, lines: list[str], nl: str
) -> tuple[int, int, str]:
    """Where and what to insert for the keys ``lines`` missing from ``region``."""
    if region is None:
        # pyproject.toml whose tool.duet exists only through [[tool.duet.benchmark]] tables:
        # add the [tool.duet] table right before the first of them (and its comments).
        block = "[tool.duet]" + nl + nl.join(lines) + nl + nl
        first = next(
            (r for r in regions if r.header is not None and r.path[:2] == ("tool", "duet")), None
        )
        if first is None:
            raise _ScanError("no place for a [tool.duet] table")
        at = _attached_comments_start(regions, first)
        return at, at, block
    keyvals = [s for s in region.stmts if s.kind == "keyval"]
    if keyvals:
        last = keyvals[-1]
        indent = last.indent
        at = last.end
        lead = "" if text[:at].endswith("\n") else nl
        return at, at, lead + "".join(indent + line + nl for line in lines)
    if region.header is not None:
        at = region.header.end
        lead = "" if text[:at].endswith("\n") else nl
        return at, at, lead + "".join(line + nl for line in lines)
    # The top of a duet.toml without any key yet: before the comments that introduce the first
    # table, but after a comment block that opens the file (that one describes the file).
    body = "".join(line + nl for line in lines)
    following = next((r for r in regions if r.header is not None), None)
    if following is None:
        at = len(text)
        lead = "" if not text or text.endswith("\n") else nl
        return at, at, lead + body
    at = _attached_comments_start(regions, following)
    if at == 0 and any(s.kind == "comment" for s in region.stmts):
        at = following.header.start if following.header else at
        return at, at, nl + body + nl
    return at, at, body + nl


def _attached_comments_start(regions: list[_Region], region: _Region) -> int:
    """The offset of the comment lines directly above ``region``'s header (no blank line in
    between), which belong to that header; the header's own offset when there are none."""
    assert region.header is not None
    i = regions.index(region)
    before = regions[i - 1].stmts if i > 0 else []
    at = region.header.start
    for s in reversed(before):
        if s.kind != "comment":
            break
        at = s.start
    return at


# --------------------------------------------------------------------------------------------
# A scanner of TOML statements. It only needs to be right for text tomllib accepted (the
# callers parse first), and only locates things: tomllib stays the parser of record.


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
