"""Validating the parsed configuration: every key known, every value checked.

:class:`Validator` turns the parsed table into a :class:`~duet_bench.config.model.Config` or a
:class:`~duet_bench.errors.ConfigError` naming the file, the line when it can be found, the table,
the key and the fix, because a silently ignored typo would measure something else than asked for.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from duet_bench.config.model import (
    DEFAULT_PYTHON,
    BenchmarkConfig,
    BenchmarkFields,
    Config,
    Defaults,
    Form,
)
from duet_bench.config.suites import parse_suites
from duet_bench.config.values import (
    DOCS,
    EXAMPLES,
    Invalid,
    benchmark_name,
    callable_name,
    choice,
    duration_s,
    env_table,
    in_range,
    indented,
    integer,
    number,
    pids_limit,
    show,
    size_bytes,
    string,
    type_name,
)
from duet_bench.defaults import (
    CROSSOVERS,
    ISOLATIONS,
    KINDS,
    METHODS,
    SUITE_ONLY_KEYS,
    Isolation,
    Kind,
)
from duet_bench.errors import ConfigError
from duet_bench.metrics import METRIC_CHOICES

#: A parser of one benchmark setting of the file: (key, value) -> the field it fills, or
#: :class:`~duet_bench.config.values.Invalid`.
SettingParser = Callable[[str, Any], BenchmarkFields]

#: The benchmark settings by their key in the file
#: (:data:`duet_bench.defaults.BENCHMARK_FILE_KEYS`): what a ``[[benchmark]]`` table, a
#: ``[[suite]]`` entry and the suite-wide keys may set, each as the typed field it fills.
SETTING_PARSERS: dict[str, SettingParser] = {
    "runs": lambda k, v: BenchmarkFields(runs=in_range(k, "runs", integer(k, v))),
    "min_runs": lambda k, v: BenchmarkFields(min_runs=in_range(k, "min_runs", integer(k, v))),
    "max_runs": lambda k, v: BenchmarkFields(max_runs=in_range(k, "max_runs", integer(k, v))),
    "budget": lambda k, v: BenchmarkFields(budget_s=duration_s(k, v)),
    "iterations": lambda k, v: BenchmarkFields(iterations=in_range(k, "iterations", integer(k, v))),
    "warmup": lambda k, v: BenchmarkFields(warmup=in_range(k, "warmup", integer(k, v))),
    "timeout": lambda k, v: BenchmarkFields(timeout_s=in_range(k, "timeout_s", number(k, v))),
    "memory_limit": lambda k, v: BenchmarkFields(memory_limit_bytes=size_bytes(k, v)),
    "pids_limit": lambda k, v: BenchmarkFields(pids_max=pids_limit(k, v)),
    "threshold": lambda k, v: BenchmarkFields(threshold=in_range(k, "threshold", number(k, v))),
    "confidence": lambda k, v: BenchmarkFields(confidence=in_range(k, "confidence", number(k, v))),
    "method": lambda k, v: BenchmarkFields(method=choice(k, v, METHODS)),
    "crossover": lambda k, v: BenchmarkFields(crossover=choice(k, v, CROSSOVERS)),
    "metric": lambda k, v: BenchmarkFields(metric=choice(k, v, METRIC_CHOICES)),
}


def _isolation(key: str, value: Any) -> Isolation:
    return choice(key, value, ISOLATIONS)


def _max_failures(key: str, value: Any) -> int:
    return in_range(key, "max_failures", integer(key, value))


#: Keys of the suite table, each with its parser (the ``[[benchmark]]`` and ``[[suite]]``
#: tables are validated table by table).
SUITE_KEY_PARSERS: dict[str, Callable[[str, Any], object]] = {
    **SETTING_PARSERS,
    "isolation": _isolation,
    "max_failures": _max_failures,
    "build": string,
    "python": string,
    "benchmark": lambda k, v: v,
    "suite": lambda k, v: v,
}

#: Keys of a ``[[benchmark]]`` table, each with its parser.
BENCHMARK_KEY_PARSERS: dict[str, Callable[[str, Any], object]] = {
    "name": benchmark_name,
    "command": string,
    "python": callable_name,
    "native": string,
    "setup": callable_name,
    **SETTING_PARSERS,
    "env": env_table,
}


class Validator:
    """Turns the parsed table into a :class:`Config`, raising :class:`ConfigError` with the
    file, the line when it can be found, the table and the key."""

    def __init__(
        self,
        path: Path,
        form: Form,
        text: str,
        line: Callable[[int | None, str | None], int | None],
    ) -> None:
        self.path = path
        self.form = form
        self.text = text
        # The line of a key or table, or None (duet_bench.config.read.Lines).
        self._line = line

    # -- messages

    def _table_label(self, index: int | None, table: Mapping[str, Any] | None) -> str:
        prefix = "" if self.form == "duet" else "tool.duet."
        if index is None:
            return "" if self.form == "duet" else "[tool.duet]"
        name = table.get("name") if table is not None else None
        label = f"{prefix}benchmark[{index + 1}]"
        if not isinstance(name, str):
            return label
        # A name too long to accept is not quoted whole either.
        return f"{label} {name if len(name) <= 60 else name[:57] + '...'!r}"

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
            f"{fix}the keys here are: {names} ({DOCS})",
            index=index,
            table=table,
            key=key,
        )

    # -- the tables

    def config(self, table: Mapping[str, Any]) -> Config:
        settings = BenchmarkFields()
        isolation: Isolation | None = None
        max_failures = build = python = None
        for key, value in table.items():
            if key not in SUITE_KEY_PARSERS:
                raise self._unknown(
                    key, SUITE_KEY_PARSERS, BENCHMARK_KEY_PARSERS, index=None, table=None
                )
            try:
                if key in SETTING_PARSERS:
                    settings.update(SETTING_PARSERS[key](key, value))
                elif key == "isolation":
                    isolation = _isolation(key, value)
                elif key == "max_failures":
                    max_failures = _max_failures(key, value)
                elif key == "build":
                    build = string(key, value)
                elif key == "python":
                    python = string(key, value)
            except Invalid as e:
                raise self.error(e.problem, e.fix, key=key) from None

        suites = parse_suites(table.get("suite"), self.path, self.form, self.text, SETTING_PARSERS)
        benchmarks = self._benchmarks(table.get("benchmark"), optional=bool(suites))
        if python is None and any(b.kind == "python" for b in benchmarks):
            python = DEFAULT_PYTHON
        defaults = Defaults(**settings)
        if isolation is not None:
            defaults = replace(defaults, isolation=isolation)
        if max_failures is not None:
            defaults = replace(defaults, max_failures=max_failures)
        return Config(
            path=self.path,
            defaults=defaults,
            build=build,
            python=python,
            benchmarks=benchmarks,
            raw=copy.deepcopy(dict(table)),
            suites=suites,
            given=frozenset([*settings, *(k for k in SUITE_ONLY_KEYS if k in table)]),
        )

    def _benchmarks(self, value: Any, optional: bool = False) -> tuple[BenchmarkConfig, ...]:
        header = "[[benchmark]]" if self.form == "duet" else "[[tool.duet.benchmark]]"
        example = f'{header}\nname = "startup"\ncommand = "./app --version"'
        if value is None and optional:
            return ()
        if value is None:
            raise self.error(
                "defines no benchmark",
                f"add one:\n\n{indented(example)}\n\n  ({DOCS})",
            )
        if not isinstance(value, list):
            raise self.error(
                f"must be an array of tables ({header}), got {type_name(value)}",
                f"start every benchmark with {header} (double brackets)",
                key="benchmark",
            )
        if not value:
            raise self.error(
                "is empty", f"add a benchmark:\n\n{indented(example)}", key="benchmark"
            )
        out: list[BenchmarkConfig] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(value):
            b = self._benchmark(index, item)
            if b.name in seen:
                raise self.error(
                    f"{show(b.name)} is already the name of benchmark[{seen[b.name] + 1}]",
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
                f"must be a table, got {show(item)} ({type_name(item)})",
                'write each benchmark as a table: { name = "x", command = "..." } or a '
                "[[benchmark]] section",
                index=index,
            )
        settings = BenchmarkFields()
        name = setup = None
        env: Mapping[str, str] = {}
        kinds: dict[Kind, str] = {}
        for key, raw in item.items():
            if key not in BENCHMARK_KEY_PARSERS:
                raise self._unknown(
                    key, BENCHMARK_KEY_PARSERS, SUITE_KEY_PARSERS, index=index, table=item
                )
            try:
                if key == "name":
                    name = benchmark_name(key, raw)
                elif key in ("command", "native"):
                    kinds["command" if key == "command" else "native"] = string(key, raw)
                elif key == "python":
                    kinds["python"] = callable_name(key, raw)
                elif key == "setup":
                    setup = callable_name(key, raw)
                elif key == "env":
                    env = env_table(key, raw)
                else:
                    settings.update(SETTING_PARSERS[key](key, raw))
            except Invalid as e:
                raise self.error(e.problem, e.fix, index=index, table=item, key=key) from None
        if name is None:
            raise self.error(
                "has no name",
                f"add name = {EXAMPLES['name']} (names identify results and select "
                "benchmarks with --bench)",
                index=index,
                table=item,
            )
        if len(kinds) != 1:
            problem = (
                "says neither command, python nor native"
                if not kinds
                else f"has both {' and '.join(k for k in KINDS if k in kinds)}"
            )
            raise self.error(
                f'{problem}: a benchmark is exactly one of command = "shell command", '
                'python = "module:function" or native = "program using the barrier client"',
                "keep exactly one of them (make two benchmarks to measure two things)",
                index=index,
                table=item,
            )
        ((kind, what),) = kinds.items()
        if setup is not None and kind != "python":
            raise self.error(
                f"is only for python benchmarks, and this is a {kind} benchmark",
                "remove setup (a command can prepare its input itself)",
                index=index,
                table=item,
                key="setup",
            )
        return BenchmarkConfig(
            name=name,
            kind=kind,
            command=None if kind == "python" else what,
            callable=what if kind == "python" else None,
            setup=setup,
            env=env,
            **settings,
        )
