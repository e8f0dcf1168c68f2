"""The configuration: ``duet.toml``, or ``[tool.duet]`` in ``pyproject.toml`` (the same keys).

First arrow of the pipeline: a TOML file becomes a validated :class:`Config`, and
:func:`to_specs` turns it into the :class:`duet.plan.BenchmarkSpec` of each benchmark for the two
version directories. Every key is known: a wrong key, type or value is refused with a
:class:`~duet.errors.ConfigError` naming the file (and line when it can be found), the table, the
key and the fix, because a silently ignored typo (``iteration = 100``) would measure something
else than the user asked for, and nobody reads a benchmark's settings twice.

:func:`write_recommendation` edits the file in place for ``duet calibrate --write``. It is a
small line-based editor rather than a TOML round-trip library (one dependency fewer): it only
ever rewrites the value of ``runs``/``iterations``/``warmup`` or inserts such a line, and it
re-parses its own output and refuses to write unless the result equals the original data with
exactly those values changed, so a file it cannot edit safely is left untouched.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import difflib
import fnmatch
import json
import logging
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from duet.adapters.base import Suite
from duet.errors import ConfigError, ResultsError
from duet.manual import cite
from duet.metrics import DEFAULT_METRIC, METRIC_CHOICES, MetricChoice
from duet.plan import (
    DEFAULT_ITERATIONS,
    DEFAULT_RUNS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    BenchmarkSpec,
    Kind,
    Method,
    SideSpec,
)
from duet.results import write_atomic

log = logging.getLogger(__name__)

CONFIG_FILES = ("duet.toml", "pyproject.toml")

#: The interpreter of python benchmarks, relative to each version's directory, when the
#: configuration does not say (the layout ``python -m venv .venv`` gives).
DEFAULT_PYTHON = ".venv/bin/python"

#: The keys ``duet calibrate --write`` sets.
RECOMMENDATION_KEYS = ("runs", "iterations", "warmup", "method", "metric")
#: The recommended settings whose values are words; the others are integers.
WORD_RECOMMENDATIONS = ("method", "metric")

Isolation: TypeAlias = Literal["auto", "cgroup", "affinity"]
Form: TypeAlias = Literal["duet", "pyproject"]

ISOLATIONS: tuple[Isolation, ...] = ("auto", "cgroup", "affinity")
METHODS: tuple[Method, ...] = ("duet", "sequential")

MINIMAL_EXAMPLE = """\
# duet.toml
build = "make"                 # optional: run in each version's checkout before measuring

[[benchmark]]
name = "startup"
command = "./app --version"    # run through the shell in the version's directory
"""

_DOCS = f"see {cite('configuration.md')}"


def _range_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is out of range for the setting ``name`` (a field name), or None.

    One place for the rules, shared by the file validation (which adds the file, table and
    key) and the dataclasses' own checks (which guard programmatic construction).
    """
    if name == "runs" and value < 2:
        return f"must be at least 2, got {value} (5 or more give an interval)"
    if name == "iterations" and value < 1:
        return f"must be at least 1, got {value}"
    if name in ("warmup", "max_failures") and value < 0:
        return f"must be 0 or more, got {value}"
    if name == "confidence" and not 0 < value < 1:
        return f"must be strictly between 0 and 1, got {value}"
    if name == "threshold" and not (value >= 0 and math.isfinite(value)):
        return f"must be a finite number, 0 or more, got {value}"
    if name == "timeout_s" and not (value > 0 and math.isfinite(value)):
        return f"must be a positive, finite number of seconds, got {value}"
    if name == "memory_limit_bytes" and value is not None and value <= 0:
        return f"must be a positive size, got {value}"
    if name == "isolation" and value not in ISOLATIONS:
        return f"must be one of {', '.join(ISOLATIONS)}, got {value!r}"
    if name == "method" and value not in METHODS:
        return f"must be one of {', '.join(METHODS)}, got {value!r}"
    if name == "metric" and value not in METRIC_CHOICES:
        return f"must be one of {', '.join(METRIC_CHOICES)}, got {value!r}"
    return None


def _check_fields(record: object, names: Sequence[str]) -> None:
    for name in names:
        value = getattr(record, name)
        if value is not None:
            problem = _range_problem(name, value)
            if problem:
                raise ValueError(f"{type(record).__name__}.{name} {problem}")


@dataclass(frozen=True, slots=True)
class Defaults:
    """The suite-wide settings; every benchmark uses them unless it overrides one."""

    runs: int = DEFAULT_RUNS
    iterations: int = DEFAULT_ITERATIONS
    warmup: int = DEFAULT_WARMUP
    confidence: float = 0.99
    threshold: float = 0.02
    isolation: Isolation = "auto"
    memory_limit_bytes: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    method: Method = "duet"
    max_failures: int = 2
    metric: MetricChoice = DEFAULT_METRIC

    def __post_init__(self) -> None:
        _check_fields(self, [f.name for f in fields(self)])


@dataclass(frozen=True, slots=True)
class BenchmarkConfig:
    """One benchmark as configured; the overrides are None where the suite default applies.

    ``command`` holds the shell command of a ``command`` benchmark or the program line of a
    ``native`` one (both run through the shell in the version's directory); ``callable`` and
    ``setup`` are ``module:function`` names of a ``python`` benchmark.
    """

    name: str
    kind: Kind
    command: str | None = None
    callable: str | None = None
    setup: str | None = None
    runs: int | None = None
    iterations: int | None = None
    warmup: int | None = None
    timeout_s: float | None = None
    memory_limit_bytes: int | None = None
    threshold: float | None = None
    confidence: float | None = None
    method: Method | None = None
    metric: MetricChoice | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: Suite adapters: the harness output the sample is read from (``duet/adapters/``).
    output: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("command", "native") and not self.command:
            raise ValueError(f"benchmark {self.name!r}: a {self.kind} benchmark needs a command")
        if self.kind == "python" and not self.callable:
            raise ValueError(f"benchmark {self.name!r}: a python benchmark needs a callable")
        _check_fields(self, _OVERRIDABLE)


#: The settings a benchmark may override (field names).
_OVERRIDABLE = (
    "runs",
    "iterations",
    "warmup",
    "timeout_s",
    "memory_limit_bytes",
    "threshold",
    "confidence",
    "method",
    "metric",
)


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings one benchmark is measured and judged with, after merging."""

    runs: int
    iterations: int
    warmup: int
    timeout_s: float
    memory_limit_bytes: int | None
    threshold: float
    confidence: float
    method: Method
    max_failures: int
    metric: MetricChoice


#: Keys ``overrides`` may hold: the fields of :class:`Effective`, and ``isolation``, which is a
#: setting of the whole invocation (accepted so callers can pass every run option at once).
_OVERRIDE_KEYS = frozenset(f.name for f in fields(Effective)) | {"isolation"}


@dataclass(frozen=True, slots=True)
class Config:
    """A validated configuration.

    ``python`` is the interpreter of python benchmarks relative to each version's directory
    (:data:`DEFAULT_PYTHON` when a python benchmark exists and the file does not say, else
    None). ``raw`` is the parsed duet table itself, JSON-ready, for the results file.
    """

    path: Path
    defaults: Defaults
    build: str | None
    python: str | None
    benchmarks: tuple[BenchmarkConfig, ...]
    raw: Mapping[str, Any]
    #: ``[[suite]]`` entries, expanded into benchmarks at each version (``duet/adapters/``).
    suites: tuple[Suite, ...] = ()

    def benchmark(self, name: str) -> BenchmarkConfig:
        """The benchmark called ``name``; a :class:`ConfigError` naming the closest one if none."""
        for b in self.benchmarks:
            if b.name == name:
                return b
        names = [b.name for b in self.benchmarks]
        close = difflib.get_close_matches(name, names, n=1)
        raise ConfigError(
            f"{self.path}: no benchmark named {name!r}; the benchmarks are: {', '.join(names)}",
            fix=f"did you mean {close[0]!r}?" if close else "use one of those names",
        )

    def select(self, pattern: str | None) -> tuple[BenchmarkConfig, ...]:
        """The benchmarks whose name matches the glob ``pattern`` (all of them for None), in
        the order of the file. A name equal to the pattern always matches, so a name holding
        glob characters (``parse[fast]``) can still be selected exactly."""
        if pattern is None:
            return self.benchmarks
        chosen = tuple(
            b for b in self.benchmarks if b.name == pattern or fnmatch.fnmatchcase(b.name, pattern)
        )
        if not chosen:
            names = ", ".join(b.name for b in self.benchmarks)
            raise ConfigError(
                f"{self.path}: no benchmark matches {pattern!r}; the benchmarks are: {names}",
                fix="give a name or a glob on the names (quoted for the shell), e.g. 'parse*'",
            )
        return chosen

    def effective(
        self, b: BenchmarkConfig, overrides: Mapping[str, Any] | None = None
    ) -> Effective:
        """The settings of ``b``: ``overrides`` (options given explicitly on the command line)
        win over the benchmark's own values, which win over the suite defaults.

        ``overrides`` uses the field names (``timeout_s``, ``memory_limit_bytes``).
        ``memory_limit_bytes: None`` wins like any value (``--memory-limit none`` lifts a
        limit); for the other settings None cannot be a value and means "not given".
        """
        given = dict(overrides or {})
        unknown = set(given) - _OVERRIDE_KEYS
        if unknown:
            raise ValueError(
                f"unknown override(s) {sorted(unknown)}; known: {sorted(_OVERRIDE_KEYS)}"
            )
        d = self.defaults
        values: dict[str, Any] = {}
        for f in fields(Effective):
            if f.name in given and (given[f.name] is not None or f.name == "memory_limit_bytes"):
                values[f.name] = given[f.name]
            elif f.name in _OVERRIDABLE and getattr(b, f.name) is not None:
                values[f.name] = getattr(b, f.name)
            else:
                values[f.name] = getattr(d, f.name)
        return Effective(**values)


# --------------------------------------------------------------------------------------------
# Finding and loading


def find_config(start: Path) -> Path | None:
    """The configuration file that applies at ``start``: in ``start`` and then each parent
    directory, ``duet.toml`` first, then a ``pyproject.toml`` that has a ``[tool.duet]`` table.
    The search stops at the root of the git checkout (the directory holding ``.git``), so a
    file above the project is never picked up, or at the filesystem root.
    """
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        duet_toml = directory / "duet.toml"
        pyproject = directory / "pyproject.toml"
        if duet_toml.is_file():
            if pyproject.is_file() and _has_duet_table(pyproject):
                log.warning("%s is used; [tool.duet] in %s is ignored", duet_toml, pyproject)
            return duet_toml
        if pyproject.is_file() and _has_duet_table(pyproject):
            return pyproject
        if (directory / ".git").exists():
            break
    return None


def _has_duet_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        log.debug("cannot read %s: %s", pyproject, e)
        return False
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


# --------------------------------------------------------------------------------------------
# Validation


class _Invalid(Exception):
    """A problem with one value; :class:`_Validator` adds the file, table and key."""

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


#: An example value of every key, for the fixes.
_EXAMPLES = {
    "runs": "10",
    "iterations": "30",
    "warmup": "2",
    "confidence": "0.99",
    "threshold": "0.02",
    "isolation": '"auto"',
    "memory_limit": '"2G"',
    "timeout": "60",
    "method": '"duet"',
    "metric": '"auto"',
    "max_failures": "2",
    "build": '"make"',
    "python": '".venv/bin/python"',
    "benchmark": "[[benchmark]] tables",
    "name": '"parse"',
    "command": '"./app --input data.txt"',
    "native": '"./build/bench_parse"',
    "setup": '"mypkg.bench:make_input"',
    "env": '{ LC_ALL = "C" }',
}
_CALLABLE_EXAMPLE = '"mypkg.bench:parse"'


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.datetime):
        return "a date-time"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, datetime.time):
        return "a time"
    return type(value).__name__  # pragma: no cover - tomllib produces nothing else


def _show(value: Any) -> str:
    """``value`` as it would be written in TOML, shortened."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        fix = f"write {key} = {int(value.strip())} (without quotes)"
    elif isinstance(value, float) and value.is_integer():
        fix = f"write {key} = {int(value)} (an integer has no decimal point)"
    else:
        fix = f"write e.g. {key} = {_EXAMPLES[key]}"
    raise _Invalid(f"must be an integer, got {_show(value)} ({_type_name(value)})", fix)


def _number(key: str, value: Any) -> float:
    # An integer is a number too: `timeout = 60` and `threshold = 0` are natural to write.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond the range of a float
            raise _Invalid(
                f"is too large, got {_show(value)}", f"write e.g. {key} = {_EXAMPLES[key]}"
            ) from None
    fix = f"write e.g. {key} = {_EXAMPLES[key]}"
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            if math.isfinite(float(value)):
                fix = f"write {key} = {value.strip()} (without quotes)"
    raise _Invalid(f"must be a number, got {_show(value)} ({_type_name(value)})", fix)


def _string(key: str, value: Any, example: str | None = None) -> str:
    example = example or _EXAMPLES[key]
    if not isinstance(value, str):
        raise _Invalid(
            f"must be a string, got {_show(value)} ({_type_name(value)})",
            f"write e.g. {key} = {example} (with quotes)",
        )
    if not value.strip():
        raise _Invalid("must not be empty", f"write e.g. {key} = {example}")
    if "\0" in value:
        raise _Invalid("must not contain a NUL character", "remove the \\u0000")
    return value


def _in_range(key: str, name: str, value: Any) -> Any:
    problem = _range_problem(name, value)
    if problem:
        raise _Invalid(problem, f"write e.g. {key} = {_EXAMPLES[key]}")
    return value


def _choice(key: str, value: Any, choices: Sequence[str]) -> str:
    text = _string(key, value)
    if text not in choices:
        # A prefix ("seq") is the likeliest meaning; difflib catches typos ("cgroups").
        close = [c for c in choices if c.startswith(text)] or difflib.get_close_matches(
            text, choices, n=1
        )
        raise _Invalid(
            f"must be one of {', '.join(map(repr, choices))}, got {_show(value)}",
            f'write {key} = "{close[0] if close else choices[0]}"',
        )
    return text


def _size(key: str, value: Any) -> int:
    from duet.units import parse_size

    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise _Invalid(f"must be a positive size, got {value}", f'write e.g. {key} = "2G"')
        return value
    if not isinstance(value, str):
        raise _Invalid(
            f'must be a size such as "2G" or a number of bytes, got {_show(value)} '
            f"({_type_name(value)})",
            f'write e.g. {key} = "2G" (binary units: K, M, G, KiB, MiB, GiB; KB, MB, GB are '
            "decimal)",
        )
    try:
        return parse_size(value)
    except (ValueError, OverflowError):
        raise _Invalid(
            f"{_show(value)} is not a size",
            f'write e.g. {key} = "2G", "512MiB", "1.5GB" or a number of bytes',
        ) from None


_IDENTIFIER_PATH = r"[^\W\d]\w*(?:\.[^\W\d]\w*)*"
_CALLABLE = re.compile(rf"{_IDENTIFIER_PATH}:{_IDENTIFIER_PATH}")


def _callable_name(key: str, value: Any) -> str:
    example = _EXAMPLES["setup"] if key == "setup" else _CALLABLE_EXAMPLE
    text = _string(key, value, example)
    if not _CALLABLE.fullmatch(text):
        raise _Invalid(
            f"must name a function as module:function, got {_show(value)}",
            f"write e.g. {key} = {example} (the module is imported from the version's directory)",
        )
    return text


def _name(key: str, value: Any) -> str:
    text = _string(key, value)
    if any(ord(c) < 32 or ord(c) == 127 for c in text) or text != text.strip():
        raise _Invalid(
            f"must be one line without control characters or surrounding spaces, got "
            f"{_show(value)}",
            f"write e.g. {key} = {_EXAMPLES['name']}",
        )
    return text


_ENV_NAME = re.compile(r"[^=\0]+")


def _env(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Invalid(
            f"must be a table of variable names to strings, got {_show(value)} "
            f"({_type_name(value)})",
            f"write e.g. {key} = {_EXAMPLES['env']}",
        )
    out: dict[str, str] = {}
    for var, val in value.items():
        if not _ENV_NAME.fullmatch(var):
            raise _Invalid(f"has an invalid variable name {var!r}", "remove it")
        if var.startswith("DUET_"):
            raise _Invalid(
                f"sets {var}: names starting with DUET_ are set by duet itself",
                "rename the variable",
            )
        if isinstance(val, str) and "\0" in val:
            raise _Invalid(f"{var} must not contain a NUL character", "remove the \\u0000")
        if not isinstance(val, str):
            raise _Invalid(
                f"{var} must be a string, got {_show(val)} ({_type_name(val)})",
                f'write {var} = "{val}" (environment values are strings: quote them)'
                if isinstance(val, (int, float)) and not isinstance(val, bool)
                else f'write e.g. {var} = "1"',
            )
        out[var] = val
    return out


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
    "suite": (lambda k, v: v, "suite"),  # validated by duet.adapters.suites
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
        from duet.adapters.suites import parse_suites

        suites = parse_suites(table.get("suite"), self.path, self.form, self.text, _BENCHMARK_KEYS)
        values.pop("suite", None)
        benchmarks = self._benchmarks(table.get("benchmark"), optional=bool(suites))
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
            suites=suites,
        )

    def _benchmarks(self, value: Any, optional: bool = False) -> tuple[BenchmarkConfig, ...]:
        header = "[[benchmark]]" if self.form == "duet" else "[[tool.duet.benchmark]]"
        example = f'{header}\nname = "startup"\ncommand = "./app --version"'
        if value is None and optional:
            return ()
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


# --------------------------------------------------------------------------------------------
# Specs


def to_specs(
    config: Config,
    *,
    baseline_dir: Path,
    candidate_dir: Path,
    select: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[BenchmarkSpec]:
    """The benchmark specs of both versions, in the order of the file.

    Every side runs in its version's directory: a command or native program through the
    shell there, a python callable imported from there (the directory is on ``sys.path``) by
    the interpreter ``config.python`` resolved inside that directory, so each version uses its
    own environment. ``overrides`` (command-line options given explicitly, field names) win
    over a benchmark's values, which win over the suite defaults.
    """
    dirs = {"baseline": baseline_dir.resolve(), "candidate": candidate_dir.resolve()}
    specs = []
    for b in config.select(select):
        sides = {which: _side(config, b, directory) for which, directory in dirs.items()}
        e = config.effective(b, overrides)
        specs.append(
            BenchmarkSpec(
                name=b.name,
                baseline=sides["baseline"],
                candidate=sides["candidate"],
                runs=e.runs,
                iterations=e.iterations,
                warmup=e.warmup,
                timeout_s=e.timeout_s,
                memory_limit_bytes=e.memory_limit_bytes,
                method=e.method,
                max_failures=e.max_failures,
            )
        )
    return specs


def _side(config: Config, b: BenchmarkConfig, directory: Path) -> SideSpec:
    if b.kind == "python":
        # The loader sets a default whenever a python benchmark exists.
        assert config.python is not None
        return SideSpec(
            kind="python",
            interpreter=str(directory / config.python),
            callable=b.callable,
            setup=b.setup,
            sys_path=(str(directory),),
            cwd=str(directory),
            env=dict(b.env),
        )
    return SideSpec(
        kind=b.kind, command=b.command, cwd=str(directory), env=dict(b.env), output=b.output
    )


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
