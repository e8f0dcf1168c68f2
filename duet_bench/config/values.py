"""The parsers of the configuration's values: one per kind of value (integer, number, size,
choice, ``module:function``, name, environment table). Each returns the value or raises
:class:`Invalid` with the problem and the fix; :mod:`duet_bench.config.validate` adds the file, the
line, the table and the key.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from duet_bench.config.model import range_problem
from duet_bench.defaults import (
    DEFAULT_CONFIDENCE,
    DEFAULT_CROSSOVER,
    DEFAULT_ISOLATION,
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_FAILURES,
    DEFAULT_MAX_RUNS,
    DEFAULT_METHOD,
    DEFAULT_MIN_RUNS,
    DEFAULT_PIDS_MAX,
    DEFAULT_RUNS,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
)
from duet_bench.manual import cite
from duet_bench.metrics import DEFAULT_METRIC
from duet_bench.units import parse_duration, parse_size
from duet_bench.untrusted import name_too_long

T = TypeVar("T")
#: One of a setting's words (a method, a crossover, a metric): its Literal type.
Word = TypeVar("Word", bound=str)

#: Where messages send the reader.
DOCS = f"see {cite('configuration.md')}"


def indented(text: str) -> str:
    """``text`` indented for a message's example."""
    return "\n".join("    " + line if line else line for line in text.splitlines())


class Invalid(Exception):
    """A problem with one value; :class:`Validator` adds the file, table and key."""

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


#: An example value of every key, for the fixes: a setting's is its built-in default.
EXAMPLES = {
    "runs": str(DEFAULT_RUNS),
    "min_runs": str(DEFAULT_MIN_RUNS),
    "max_runs": str(DEFAULT_MAX_RUNS),
    "budget": '"10m"',
    "iterations": str(DEFAULT_ITERATIONS),
    "warmup": str(DEFAULT_WARMUP),
    "confidence": f"{DEFAULT_CONFIDENCE:g}",
    "threshold": f"{DEFAULT_THRESHOLD:g}",
    "isolation": f'"{DEFAULT_ISOLATION}"',
    "memory_limit": '"2G"',
    "pids_limit": str(DEFAULT_PIDS_MAX),
    "timeout": f"{DEFAULT_TIMEOUT_S:g}",
    "method": f'"{DEFAULT_METHOD}"',
    "crossover": f'"{DEFAULT_CROSSOVER}"',
    "metric": f'"{DEFAULT_METRIC}"',
    "max_failures": str(DEFAULT_MAX_FAILURES),
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


def type_name(value: Any) -> str:
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


def show(value: Any) -> str:
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


def _unquoted(key: str, value: Any) -> str | None:
    """The fix for an integer written as a string (``runs = "10"``), or None when ``value`` is not
    one. ASCII digits only ("²" is a digit to isdigit, not to int) and not thousands of them
    (int() refuses 4,300): either was a traceback instead of the message."""
    if not (isinstance(value, str) and value.strip().isascii() and value.strip().isdigit()):
        return None
    digits = value.strip().lstrip("0") or "0"
    return f"write {key} = {digits} (without quotes)" if len(digits) <= 24 else None


def integer(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    quoted = _unquoted(key, value)
    if quoted:
        fix = quoted
    elif isinstance(value, float) and value.is_integer():
        fix = f"write {key} = {int(value)} (an integer has no decimal point)"
    else:
        fix = f"write e.g. {key} = {EXAMPLES[key]}"
    raise Invalid(f"must be an integer, got {show(value)} ({type_name(value)})", fix)


def number(key: str, value: Any) -> float:
    # An integer is a number too: `timeout = 60` and `threshold = 0` are natural to write.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond the range of a float
            raise Invalid(
                f"is too large, got {show(value)}", f"write e.g. {key} = {EXAMPLES[key]}"
            ) from None
    fix = f"write e.g. {key} = {EXAMPLES[key]}"
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            if math.isfinite(float(value)):
                fix = f"write {key} = {value.strip()} (without quotes)"
    raise Invalid(f"must be a number, got {show(value)} ({type_name(value)})", fix)


def string(key: str, value: Any, example: str | None = None) -> str:
    example = example or EXAMPLES[key]
    if not isinstance(value, str):
        raise Invalid(
            f"must be a string, got {show(value)} ({type_name(value)})",
            f"write e.g. {key} = {example} (with quotes)",
        )
    if not value.strip():
        raise Invalid("must not be empty", f"write e.g. {key} = {example}")
    if "\0" in value:
        raise Invalid("must not contain a NUL character", "remove the \\u0000")
    return value


def in_range(key: str, name: str, value: T) -> T:
    problem = range_problem(name, value)
    if problem:
        raise Invalid(problem, f"write e.g. {key} = {EXAMPLES[key]}")
    return value


def choice(key: str, value: Any, choices: Sequence[Word]) -> Word:
    """``value`` when it is one of ``choices`` (as its type: a method, a metric)."""
    text = string(key, value)
    chosen = [c for c in choices if c == text]
    if not chosen:
        # A prefix ("seq") is the likeliest meaning; difflib catches typos ("cgroups").
        close = [c for c in choices if c.startswith(text)] or difflib.get_close_matches(
            text, choices, n=1
        )
        raise Invalid(
            f"must be one of {', '.join(map(repr, choices))}, got {show(value)}",
            f'write {key} = "{close[0] if close else choices[0]}"',
        )
    return chosen[0]


def size_bytes(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise Invalid(f"must be a positive size, got {value}", f'write e.g. {key} = "2G"')
        return value
    if not isinstance(value, str):
        raise Invalid(
            f'must be a size such as "2G" or a number of bytes, got {show(value)} '
            f"({type_name(value)})",
            f'write e.g. {key} = "2G" (binary units: K, M, G, KiB, MiB, GiB; KB, MB, GB are '
            "decimal)",
        )
    try:
        return parse_size(value)
    except (ValueError, OverflowError):
        raise Invalid(
            f"{show(value)} is not a size",
            f'write e.g. {key} = "2G", "512MiB", "1.5GB" or a number of bytes',
        ) from None


def pids_limit(key: str, value: Any) -> int | None:
    """A limit of a side's processes: a number within its bounds, or ``"none"``: no limit."""
    if isinstance(value, int) and not isinstance(value, bool):
        return in_range(key, "pids_max", value)
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    quoted = _unquoted(key, value)
    if quoted:
        fix = quoted
    elif isinstance(value, float) and value.is_integer():
        fix = f"write {key} = {int(value)} (a number of processes has no decimal point)"
    else:
        fix = f'write e.g. {key} = 16384, or {key} = "none" for no limit'
    raise Invalid(
        f'must be a number of processes or "none", got {show(value)} ({type_name(value)})', fix
    )


_IDENTIFIER_PATH = r"[^\W\d]\w*(?:\.[^\W\d]\w*)*"


_CALLABLE = re.compile(rf"{_IDENTIFIER_PATH}:{_IDENTIFIER_PATH}")


def duration_s(key: str, value: Any) -> float:
    """A machine-time budget: ``"10m"``, ``"90s"``, ``"1.5h"`` or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            raise Invalid(
                f"{show(value)} is not a duration", f'write e.g. {key} = "10m", "90s" or 600'
            ) from None
    else:
        raise Invalid(
            f'must be a duration such as "10m" or a number of seconds, got {show(value)} '
            f"({type_name(value)})",
            f'write e.g. {key} = "10m"',
        )
    return float(in_range(key, "budget_s", seconds))


def callable_name(key: str, value: Any) -> str:
    example = EXAMPLES["setup"] if key == "setup" else _CALLABLE_EXAMPLE
    text = string(key, value, example)
    if not _CALLABLE.fullmatch(text):
        raise Invalid(
            f"must name a function as module:function, got {show(value)}",
            f"write e.g. {key} = {example} (the module is imported from the version's directory)",
        )
    return text


def benchmark_name(key: str, value: Any) -> str:
    text = string(key, value)
    if any(ord(c) < 32 or ord(c) == 127 for c in text) or text != text.strip():
        raise Invalid(
            f"must be one line without control characters or surrounding spaces, got {show(value)}",
            f"write e.g. {key} = {EXAMPLES['name']}",
        )
    if (too_long := name_too_long(text)) is not None:
        raise Invalid(f"{too_long}, got {show(value)}", f"write a shorter {key}")
    return text


_ENV_NAME = re.compile(r"[^=\0]+")


def env_table(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise Invalid(
            f"must be a table of variable names to strings, got {show(value)} ({type_name(value)})",
            f"write e.g. {key} = {EXAMPLES['env']}",
        )
    out: dict[str, str] = {}
    for var, val in value.items():
        if not _ENV_NAME.fullmatch(var):
            raise Invalid(f"has an invalid variable name {var!r}", "remove it")
        if var.startswith("DUET_"):
            raise Invalid(
                f"sets {var}: names starting with DUET_ are set by duet itself",
                "rename the variable",
            )
        if isinstance(val, str) and "\0" in val:
            raise Invalid(f"{var} must not contain a NUL character", "remove the \\u0000")
        if not isinstance(val, str):
            raise Invalid(
                f"{var} must be a string, got {show(val)} ({type_name(val)})",
                f'write {var} = "{val}" (environment values are strings: quote them)'
                if isinstance(val, (int, float)) and not isinstance(val, bool)
                else f'write e.g. {var} = "1"',
            )
        out[var] = val
    return out
