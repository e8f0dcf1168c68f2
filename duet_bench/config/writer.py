"""Editing the configuration in place for ``duet calibrate --write``.

:func:`write_recommendation` sets ``runs``/``iterations``/``warmup``/``method``/``metric`` (and
``crossover`` when the designs were compared) in ``duet.toml`` or in ``[tool.duet]`` of
``pyproject.toml`` and keeps everything else as the user wrote it: comments, key order,
spacing, quoting, line endings. The TOML is read and written by tomlkit, a style-preserving
parser (what poetry uses on pyproject.toml), rather than by a hand-written scanner: the TOML
grammar (strings of four kinds, dotted and quoted keys, inline and nested tables) is its job.
Two things stay ours:

- *where* a missing key goes: right after the table's last key with that key's indentation,
  not after the comments that introduce the next table, which is where tomlkit appends;
- *whether* to write at all: tomllib (the parser :mod:`duet_bench.config` loads with) reads the new
  text back, and unless it equals the old data with exactly the new values, nothing is written.
  A layout tomlkit mishandles is refused with the values to set by hand, never broken.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.container
import tomlkit.exceptions
import tomlkit.items

from duet_bench import files
from duet_bench.config.model import (
    RECOMMENDATION_KEYS,
    WORD_RECOMMENDATIONS,
    Form,
    range_problem,
)
from duet_bench.config.read import form_of, parse_toml, read_file
from duet_bench.config.values import DOCS
from duet_bench.errors import ConfigError
from duet_bench.isolation.model import RunAs
from duet_bench.isolation.privileges import call_as

log = logging.getLogger(__name__)

__all__ = ["edit_text", "write_recommendation"]


class _Unwritable(Exception):
    """The file is laid out in a way the editor does not change (the reason is in the text)."""


def write_recommendation(
    path: Path,
    *,
    benchmark: str | None,
    values: Mapping[str, int | str],
    suite: int | None = None,
) -> None:
    """Set the recommended settings in the suite table (``benchmark`` None) or in that
    benchmark's table of ``path``, or with ``suite`` in the ``suite``-th ``[[suite]]`` table
    (from 0, in file order: every benchmark the suite finds gets them), keeping everything else
    as it was (see :func:`edit_text`).
    Works for ``duet.toml`` and for ``[tool.duet]`` in ``pyproject.toml``; the file is replaced
    atomically, keeps its mode, and is written through a symlink. Unchanged values: no write.

    Raises
    ------
    ValueError
        ``values`` has another key or a value out of range (a bug of the caller).
    ConfigError
        The file cannot be read, parsed or written, has no such benchmark, or the new text
        would not read back as the old data with exactly the new values; nothing is written.
    """
    for key, value in values.items():
        if key not in RECOMMENDATION_KEYS:
            raise ValueError(f"write_recommendation sets {RECOMMENDATION_KEYS}, not {key!r}")
        if key in WORD_RECOMMENDATIONS:
            if not isinstance(value, str):
                raise ValueError(f"{key} must be a str, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} must be an int, got {value!r}")
        problem = range_problem(key, value)
        if problem:
            raise ValueError(f"{key} {problem}")
    text = read_file(path)
    new = edit_text(
        text, form=form_of(path), benchmark=benchmark, values=values, path=path, suite=suite
    )
    if new == text:
        return

    def write() -> None:
        # Through a symlink instead of replacing it by a file.
        files.write_atomic(path.resolve(), new)

    try:
        # Under sudo, as the user who ran it: the file is in their checkout, where root would
        # follow whatever links the pull request's tree holds (docs/isolation.md, "What runs
        # as root"); the user writes what they could write anyway, as its owner.
        call_as(RunAs.from_environment(None, os.environ), write)
    except OSError as e:
        raise ConfigError(
            f"{path}: could not write the recommendation ({e.strerror or e}); the file is "
            "unchanged",
            fix="make the file and its directory writable, or set the values by hand: "
            + _manual(values),
        ) from e


def edit_text(
    text: str,
    *,
    form: Form,
    benchmark: str | None,
    values: Mapping[str, int | str],
    path: Path | None = None,
    suite: int | None = None,
) -> str:
    """The text of :func:`write_recommendation` without touching a file (for tests and dry
    runs). ``form`` is ``"duet"`` (keys at top level) or ``"pyproject"`` (under tool.duet).

    An existing key gets its value replaced (its spelling and comment kept); a missing one is
    added after the table's last key, with that key's indentation.
    """
    path = path or Path("duet.toml" if form == "duet" else "pyproject.toml")
    suite_index = suite
    data = parse_toml(path, text)  # tomllib first: its errors carry line and column
    table: Any = data if form == "duet" else data.get("tool", {})
    if form == "pyproject":
        table = table.get("duet") if isinstance(table, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(
            f"{path}: has no [tool.duet] table to write the recommendation into",
            fix=f"add [tool.duet] to {path}, or create duet.toml ({DOCS})",
        )
    array = "suite" if suite_index is not None else "benchmark"
    index = suite_index
    if index is None and benchmark is not None:
        index = _benchmark_index(path, table, benchmark)
    elif index is not None:
        items = table.get("suite")
        if not isinstance(items, list) or not 0 <= index < len(items):
            raise ConfigError(
                f"{path}: has no suite table number {index + 1}",
                fix="name a suite's benchmark of this file (suite name/benchmark)",
            )
    expected = copy.deepcopy(data)
    target: dict[str, Any] = expected if form == "duet" else expected["tool"]["duet"]
    if index is not None:
        target = target[array][index]
    target.update(values)

    where = (
        ("the top of the file" if form == "duet" else "[tool.duet]")
        if index is None
        else f"suite table number {index + 1}"
        if suite_index is not None
        else f"benchmark {benchmark!r}"
    )

    def cannot(reason: str) -> ConfigError:
        return ConfigError(
            f"{path}: the recommendation cannot be written without disturbing the file "
            f"({reason}); nothing was written",
            fix=f"set {_manual(values)} by hand in {where}",
        )

    nl = "\r\n" if "\r\n" in text else "\n"
    try:
        doc = tomlkit.parse(text)
        _set_values(_table(doc, form, index, array), values, nl)
        new = doc.as_string()
    except _Unwritable as e:
        raise cannot(str(e)) from None
    except (tomlkit.exceptions.TOMLKitError, KeyError, IndexError, TypeError, ValueError) as e:
        log.debug("tomlkit cannot edit %s: %r", path, e)
        raise cannot("tomlkit cannot edit its layout") from None
    # The editor's own check: the new file must parse to the old data with exactly the new
    # values. Anything else (a layout tomlkit renders differently) is refused.
    try:
        reparsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        log.debug("edit of %s gave invalid TOML: %s", path, e)
        reparsed = None
    if reparsed is None or not _same(reparsed, expected):
        raise cannot("the edited text would not read back as the same settings")
    return new


def _benchmark_index(path: Path, suite: Mapping[str, Any], benchmark: str) -> int:
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
    return names.index(benchmark)


def _manual(values: Mapping[str, int | str]) -> str:
    """The values as the lines to write by hand: ``runs = 12, method = "duet"``."""
    # JSON's quoting of a plain word is TOML's.
    return ", ".join(
        f"{k} = {json.dumps(v) if isinstance(v, str) else v}" for k, v in values.items()
    )


def _same(a: Any, b: Any) -> bool:
    """Deep equality where NaN equals NaN (a TOML file may hold ``nan``)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


# --------------------------------------------------------------------------------------------
# Finding the table and placing the keys in tomlkit's document


_Table = tomlkit.TOMLDocument | tomlkit.items.Table


def _table(
    doc: tomlkit.TOMLDocument, form: Form, index: int | None, array: str = "benchmark"
) -> _Table:
    """The suite table (``index`` None) or the index-th table of ``array`` (``benchmark``, or
    ``suite``: the ``[[suite]]`` tables).

    Found by walking the document's bodies in file order rather than by ``doc["tool"]``, so
    that ``[tool.duet]`` and ``[[tool.duet.benchmark]]`` tables parted by other tables (as in a
    pyproject.toml with ``[tool.ruff]`` between them) are found piece by piece. Refused: tables
    written inline or with dotted keys (``benchmark = [{...}]``, ``[tool]`` + ``duet.runs =
    3``), where tomlkit would change the spacing of the line (``warmup = 1}``) or the end of the
    file.
    """
    suites: list[_Table] = [doc]
    if form == "pyproject":
        suites = _pieces(_pieces(suites, "tool"), "duet")
    if index is None:
        headed = [
            t for t in suites if isinstance(t, tomlkit.TOMLDocument) or not t.is_super_table()
        ]
        if len(headed) > 1:
            raise _Unwritable("[tool.duet] is written in more than one piece")
        return headed[0] if headed else suites[0]
    benchmarks: list[tomlkit.items.Table] = []
    for suite in suites:
        for key, item in _body(suite):
            if key is not None and key.key == array:
                if key.is_dotted() or not isinstance(item, tomlkit.items.AoT):
                    raise _Unwritable(f"the {array}s are not all written as [[{array}]] tables")
                benchmarks += item.body
    return benchmarks[index]


def _pieces(tables: list[_Table], name: str) -> list[_Table]:
    """The tables called ``name`` inside ``tables``, each piece where the file has one."""
    found: list[_Table] = []
    for table in tables:
        for key, item in _body(table):
            if key is None or key.key != name:
                continue
            if key.is_dotted() or not isinstance(item, tomlkit.items.Table):
                raise _Unwritable(f"the {name!r} table is written with dotted keys or inline")
            found.append(item)
    return found


def _body(table: _Table) -> list[tuple[tomlkit.items.Key | None, tomlkit.items.Item]]:
    return table.body if isinstance(table, tomlkit.TOMLDocument) else table.value.body


def _set_values(table: _Table, values: Mapping[str, int | str], nl: str) -> None:
    body = table if isinstance(table, tomlkit.TOMLDocument) else table.value
    missing = []
    for key, value in values.items():
        if key in table:
            table[key] = value  # tomlkit keeps the key's spelling, the comment and the line end
        else:
            missing.append(key)
    if not missing:
        return
    if isinstance(table, tomlkit.items.Table) and table.is_super_table():
        # [tool.duet] known only through its [[tool.duet.benchmark]] tables: tomlkit writes
        # the header when the table gains a key, above those tables and below the comments
        # before them. A blank line parts the new keys from the first benchmark.
        for n, key in enumerate(missing):
            item = tomlkit.item(values[key])
            table[key] = item
            item.trivia.trail = nl + (nl if n == len(missing) - 1 else "")
        return
    _insert(body, {k: values[k] for k in missing}, nl, top=isinstance(table, tomlkit.TOMLDocument))


def _insert(
    body: tomlkit.container.Container, values: Mapping[str, int | str], nl: str, *, top: bool
) -> None:
    """Add ``values`` after the last key of ``body``; without keys, where a reader looks for
    them (see :func:`_place_without_keys`)."""
    items = body.body
    last = max(
        (
            i
            for i, (key, item) in enumerate(items)
            if key is not None and (key.is_dotted() or not _is_table(item))
        ),
        default=None,
    )
    blank_before = blank_after = False
    if last is not None:
        at = last + 1
        indent = items[last][1].trivia.indent
        if "\n" not in items[last][1].trivia.trail:
            # The last line of a file without a final newline: keep it without one.
            items[last][1].trivia.trail += nl
            final = ""
        else:
            final = nl
    elif not top:
        at, indent, final = 0, "", nl  # right under the table's header
    else:
        at, blank_before, blank_after = _place_without_keys(items)
        indent, final = "", nl
    # Blank lines around the block ride on its first and last line: a Whitespace item of
    # their own could not be inserted through the container's bookkeeping.
    for n, (key, value) in enumerate(values.items()):
        item = tomlkit.item(value)
        item.trivia.indent = (nl if blank_before and n == 0 else "") + indent
        last_one = n == len(values) - 1
        item.trivia.trail = (final + (nl if blank_after else "")) if last_one else nl
        if at + n < len(items):
            body._insert_at(at + n, key, item)
        else:
            body.append(key, item)


def _place_without_keys(items: list[tuple[Any, Any]]) -> tuple[int, bool, bool]:
    """Where the first keys of a duet.toml go, and whether blank lines surround them: before
    the comments that introduce the first table (they belong to it), but after a comment block
    that opens the file (that one describes the file)."""
    first = next((i for i, (_, item) in enumerate(items) if _is_table(item)), None)
    if first is None:
        return len(items), False, False
    at = first
    while at > 0 and isinstance(items[at - 1][1], tomlkit.items.Comment):
        at -= 1
    if at == 0 and first > 0:
        return first, True, True
    return at, False, True


def _is_table(item: object) -> bool:
    """A table with a header of its own (not an inline one), or an array of such tables."""
    return isinstance(item, tomlkit.items.AoT) or (
        isinstance(item, tomlkit.items.Table) and not isinstance(item, tomlkit.items.InlineTable)
    )
