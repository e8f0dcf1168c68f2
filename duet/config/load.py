"""Finding, reading and validating the configuration.

:func:`choose_config` is the one rule for which file is the configuration (on disk for
:func:`find_config`, at a commit for ``duet compare``); :func:`load_config` reads and parses it,
and :class:`_Validator` turns the parsed table into a :class:`~duet.config.model.Config` or a
:class:`~duet.errors.ConfigError` naming the file, the line, the table, the key and the fix.
"""

from __future__ import annotations

import copy
import difflib
import logging
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from duet.config.model import (
    DEFAULT_PYTHON,
    ISOLATIONS,
    METHODS,
    BenchmarkConfig,
    Config,
    Defaults,
    Form,
)
from duet.config.scan import _Region, _regions, _scan, _ScanError, _suite_path, _target_region
from duet.config.values import (
    _EXAMPLES,
    _callable_name,
    _choice,
    _env,
    _in_range,
    _integer,
    _Invalid,
    _name,
    _number,
    _show,
    _size,
    _string,
    _type_name,
)
from duet.errors import ConfigError
from duet.manual import cite
from duet.metrics import METRIC_CHOICES
from duet.plan import Kind

log = logging.getLogger(__name__)


CONFIG_FILES = ("duet.toml", "pyproject.toml")


MINIMAL_EXAMPLE = """\
# duet.toml
build = "make"                 # optional: run in each version's checkout before measuring

[[benchmark]]
name = "startup"
command = "./app --version"    # run through the shell in the version's directory
"""


_DOCS = f"see {cite('configuration.md')}"


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


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
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


#: Keys of the suite table, each with its parser and the field it fills.
_GLOBAL_KEYS: dict[str, tuple[Callable[[str, Any], Any], str]] = {
    "runs": (lambda k, v: _in_range(k, "runs", _integer(k, v)), "runs"),
    "iterations": (lambda k, v: _in_range(k, "iterations", _integer(k, v)), "iterations"),
    "warmup": (lambda k, v: _in_range(k, "warmup", _integer(k, v)), "warmup"),
    "confidence": (lambda k, v: _in_range(k, "confidence", _number(k, v)), "confidence"),
    "threshold": (lambda k, v: _in_range(k, "threshold", _number(k, v)), "threshold"),
    "isolation": (lambda k, v: _choice(k, v, ISOLATIONS), "isolation"),
    "memory_limit": (_size, "memory_limit_bytes"),
    "timeout": (lambda k, v: _in_range(k, "timeout_s", _number(k, v)), "timeout_s"),
    "method": (lambda k, v: _choice(k, v, METHODS), "method"),
    "metric": (lambda k, v: _choice(k, v, METRIC_CHOICES), "metric"),
    "max_failures": (lambda k, v: _in_range(k, "max_failures", _integer(k, v)), "max_failures"),
    "build": (_string, "build"),
    "python": (_string, "python"),
    "benchmark": (lambda k, v: v, "benchmark"),  # validated table by table
}


#: Keys of a ``[[benchmark]]`` table.
_BENCHMARK_KEYS: dict[str, tuple[Callable[[str, Any], Any], str]] = {
    "name": (_name, "name"),
    "command": (_string, "command"),
    "python": (_callable_name, "callable"),
    "native": (_string, "native"),
    "setup": (_callable_name, "setup"),
    **{
        k: _GLOBAL_KEYS[k]
        for k in (
            "runs",
            "iterations",
            "warmup",
            "timeout",
            "memory_limit",
            "threshold",
            "confidence",
            "method",
            "metric",
        )
    },
    "env": (_env, "env"),
}


_KINDS: tuple[Kind, ...] = ("command", "python", "native")


class _Validator:
    """Turns the parsed table into a :class:`Config`, raising :class:`ConfigError` with the
    file, the line when it can be found, the table and the key."""

    def __init__(self, path: Path, form: Form, text: str) -> None:
        self.path = path
        self.form = form
        self.text = text
        self._scanned: list[_Region] | None = None
        self._scan_failed = False

    # -- messages

    def _table_label(self, index: int | None, table: Mapping[str, Any] | None) -> str:
        prefix = "" if self.form == "duet" else "tool.duet."
        if index is None:
            return "" if self.form == "duet" else "[tool.duet]"
        name = table.get("name") if table is not None else None
        label = f"{prefix}benchmark[{index + 1}]"
        return f"{label} {name!r}" if isinstance(name, str) else label

    def _line(self, index: int | None, key: str | None) -> int | None:
        """The line of ``key`` in the suite table (index None) or in the index-th benchmark
        table, or of that table's header; None when the file does not say (inline tables)."""
        if self._scanned is None and not self._scan_failed:
            try:
                self._scanned = _regions(_scan(self.text))
            except _ScanError:
                # Only the line number is lost: the message still names the table and key.
                self._scan_failed = True
        if self._scanned is None:
            return None
        region = _target_region(self._scanned, self.form, index)
        if region is None:
            # Benchmarks written inline (benchmark = [{...}]): the line of that key.
            return self._line(None, "benchmark") if index is not None else None
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

    def error(
        self,
        problem: str,
        fix: str | None,
        *,
        index: int | None = None,
        table: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> ConfigError:
        line = self._line(index, key)
        where = f"{self.path}:{line}" if line else f"{self.path}"
        label = self._table_label(index, table)
        subject = f"{key} " if key is not None else ""
        parts = [where, label] if label else [where]
        return ConfigError(f"{': '.join(parts)}: {subject}{problem}", fix=fix)

    def _unknown(
        self,
        key: str,
        known: Mapping[str, Any],
        other: Mapping[str, Any],
        *,
        index: int | None,
        table: Mapping[str, Any] | None,
    ) -> ConfigError:
        if key == "tool" and index is None and self.form == "duet":
            return self.error(
                "is not a known key",
                "in duet.toml the settings are top-level keys and the benchmarks [[benchmark]] "
                "tables: drop the 'tool.duet.' prefix (or move them to pyproject.toml)",
                key=key,
            )
        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        elsewhere = difflib.get_close_matches(key, list(other), n=1, cutoff=0.6)
        if key in other or (elsewhere and not close):
            hint = "" if key in other else f"did you mean {elsewhere[0]!r}? "
            key_here = key if key in other else elsewhere[0]
            if index is None:
                where = "[[benchmark]]" if self.form == "duet" else "[[tool.duet.benchmark]]"
                fix = f"{key_here} belongs in a {where} table (it is a setting of one benchmark)"
            elif self.form == "duet":
                fix = (
                    f"{key_here} is a setting of the whole suite: move it above the first "
                    "[[benchmark]] line (every key after a [[benchmark]] line belongs to that "
                    "benchmark)"
                )
            else:
                fix = f"{key_here} is a setting of the whole suite: move it into [tool.duet]"
            problem = "is not a key of this table" if key in other else "is not a known key"
            return self.error(problem, hint + fix, index=index, table=table, key=key)
        names = ", ".join(k for k in known)
        fix = f"did you mean {close[0]!r}? " if close else "remove it; "
        return self.error(
            "is not a known key",
            f"{fix}the keys here are: {names} ({_DOCS})",
            index=index,
            table=table,
            key=key,
        )

    # -- the tables

    def config(self, table: Mapping[str, Any]) -> Config:
        values: dict[str, Any] = {}
        for key, value in table.items():
            if key not in _GLOBAL_KEYS:
                raise self._unknown(key, _GLOBAL_KEYS, _BENCHMARK_KEYS, index=None, table=None)
            parse, target = _GLOBAL_KEYS[key]
            try:
                values[target] = parse(key, value)
            except _Invalid as e:
                raise self.error(e.problem, e.fix, key=key) from None
        benchmarks = self._benchmarks(table.get("benchmark"))
        python = values.pop("python", None)
        if python is None and any(b.kind == "python" for b in benchmarks):
            python = DEFAULT_PYTHON
        build = values.pop("build", None)
        values.pop("benchmark", None)
        return Config(
            path=self.path,
            defaults=Defaults(**values),
            build=build,
            python=python,
            benchmarks=benchmarks,
            raw=copy.deepcopy(dict(table)),
            given=frozenset(values),
        )

    def _benchmarks(self, value: Any) -> tuple[BenchmarkConfig, ...]:
        header = "[[benchmark]]" if self.form == "duet" else "[[tool.duet.benchmark]]"
        example = f'{header}\nname = "startup"\ncommand = "./app --version"'
        if value is None:
            raise self.error(
                "defines no benchmark",
                f"add one:\n\n{_indent(example)}\n\n  ({_DOCS})",
            )
        if not isinstance(value, list):
            raise self.error(
                f"must be an array of tables ({header}), got {_type_name(value)}",
                f"start every benchmark with {header} (double brackets)",
                key="benchmark",
            )
        if not value:
            raise self.error("is empty", f"add a benchmark:\n\n{_indent(example)}", key="benchmark")
        out: list[BenchmarkConfig] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(value):
            b = self._benchmark(index, item)
            if b.name in seen:
                raise self.error(
                    f"{_show(b.name)} is already the name of benchmark[{seen[b.name] + 1}]",
                    "give every benchmark its own name (they identify results across runs)",
                    index=index,
                    table=item,
                    key="name",
                )
            seen[b.name] = index
            out.append(b)
        return tuple(out)

    def _benchmark(self, index: int, item: Any) -> BenchmarkConfig:
        if not isinstance(item, dict):
            raise self.error(
                f"must be a table, got {_show(item)} ({_type_name(item)})",
                'write each benchmark as a table: { name = "x", command = "..." } or a '
                "[[benchmark]] section",
                index=index,
            )
        values: dict[str, Any] = {}
        for key, raw in item.items():
            if key not in _BENCHMARK_KEYS:
                raise self._unknown(key, _BENCHMARK_KEYS, _GLOBAL_KEYS, index=index, table=item)
            parse, target = _BENCHMARK_KEYS[key]
            try:
                values[target] = parse(key, raw)
            except _Invalid as e:
                raise self.error(e.problem, e.fix, index=index, table=item, key=key) from None
        if "name" not in values:
            raise self.error(
                "has no name",
                f"add name = {_EXAMPLES['name']} (names identify results and select "
                "benchmarks with --bench)",
                index=index,
                table=item,
            )
        kinds = [k for k in _KINDS if k in item]
        if len(kinds) != 1:
            problem = (
                "says neither command, python nor native"
                if not kinds
                else f"has both {' and '.join(kinds)}"
            )
            raise self.error(
                f'{problem}: a benchmark is exactly one of command = "shell command", '
                'python = "module:function" or native = "program using the barrier client"',
                "keep exactly one of them (make two benchmarks to measure two things)",
                index=index,
                table=item,
            )
        kind = kinds[0]
        if "setup" in values and kind != "python":
            raise self.error(
                f"is only for python benchmarks, and this is a {kind} benchmark",
                "remove setup (a command can prepare its input itself)",
                index=index,
                table=item,
                key="setup",
            )
        if kind == "native":
            values["command"] = values.pop("native")
        return BenchmarkConfig(kind=kind, **values)
