"""A scanner of TOML statements, for the line numbers of the validation's messages.

It only needs to be right for text tomllib accepted (the callers parse first), and only locates
things: tomllib stays the parser of record. The in-place editor (:mod:`duet_bench.config.writer`)
does not need it: tomlkit keeps the layout.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any, Literal

from duet_bench.config.model import Form


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
