"""The ``[[suite]]`` entries of the configuration (``[[tool.duet.suite]]`` in pyproject.toml).

``duet_bench.config``'s validator hands the parsed array here (:func:`parse_suites`) with the
parsers of the benchmark settings, so a suite's ``runs``, ``threshold``, ... are checked exactly as
a benchmark's are, and every message names the file, the line, the suite and the key::

    [[suite]]
    adapter = "google-benchmark"   # which benchmark tool (ADAPTERS below)
    path = "build/bench_parse"     # where the suite is, relative to the version's directory
    name = "parse"                 # optional: benchmarks are called parse/<name>
    filter = "BM_Parse"            # optional: the tool's own selection syntax
    min_time = 0.05                # the adapter's own options
    runs = 10                      # the usual benchmark settings, for every benchmark found
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from duet_bench.config.model import AdapterOptions, BenchmarkFields, Suite
from duet_bench.config.values import env_table
from duet_bench.defaults import BENCHMARK_FILE_KEYS
from duet_bench.errors import ConfigError
from duet_bench.manual import cite

#: A parser of one benchmark setting, as in ``duet_bench.config``: (key, value) -> the field it
#: fills, raising an exception with ``problem`` and ``fix`` attributes.
SettingParser = Callable[[str, Any], BenchmarkFields]

#: The keys every suite entry has, whatever its adapter.
COMMON_KEYS = ("adapter", "path", "name", "filter", "env")

_DOCS = f"see {cite('adapters.md')}"
_TEXT_EXAMPLES = {"path": "build/bench", "name": "parse", "filter": "BM_Parse"}

#: The adapters a suite entry may name (``adapter = "..."``) -> ``module:attribute`` of its
#: :class:`~duet_bench.adapters.base.Adapter`. Each lives in its own module exposing
#: ``ADAPTER``, imported by name only when a configuration names it (:func:`load_adapter`), so a
#: missing toolchain or an adapter that is not in this build costs nothing to the
#: configurations that do not use it, and the configuration depends on no adapter's code.
ADAPTERS: dict[str, str] = {
    "google-benchmark": "duet_bench.adapters.google_benchmark:ADAPTER",
    "go": "duet_bench.adapters.go:ADAPTER",
    "cargo": "duet_bench.adapters.cargo:ADAPTER",
    "pytest-benchmark": "duet_bench.adapters.pytest_benchmark:ADAPTER",
    "jmh": "duet_bench.adapters.jmh:ADAPTER",
}


def unknown_adapter(name: str) -> ConfigError:
    close = difflib.get_close_matches(name, list(ADAPTERS), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return ConfigError(
        f"adapter {name!r} is not known; the adapters are: {', '.join(ADAPTERS)}",
        fix=f'{hint}write e.g. adapter = "google-benchmark" (see {cite("adapters.md")})',
    )


def load_adapter(name: str) -> Any:
    """The adapter called ``name``, loaded from its module (typed as an
    :class:`~duet_bench.adapters.base.Adapter` by :func:`duet_bench.adapters.registry.get_adapter`);
    a :class:`ConfigError` when there is none or its module is not part of this duet."""
    target = ADAPTERS.get(name)
    if target is None:
        raise unknown_adapter(name)
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise ConfigError(
            f"adapter {name!r} is not part of this duet build ({module_name} is missing)",
            fix="upgrade duet-bench to a release that has it, or use another adapter",
        ) from None
    return getattr(module, attribute)


def slug(text: str) -> str:
    """``text`` as one safe file-name word."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "suite"


def _header(form: str) -> str:
    return "[[suite]]" if form == "duet" else "[[tool.duet.suite]]"


def _line_of(text: str, form: str, index: int, key: str | None) -> int | None:
    """The line of ``key`` in the index-th suite table (or of its header); None when the file
    does not say (suites written inline)."""
    table = r"suite" if form == "duet" else r"tool\s*\.\s*duet\s*\.\s*suite"
    header = re.compile(rf"^\s*\[\[\s*{table}\s*\]\]")
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines) if header.match(line)]
    if index >= len(starts):
        return None
    start = starts[index]
    if key is None:
        return start + 1
    wanted = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for n in range(start + 1, len(lines)):
        if lines[n].lstrip().startswith("["):
            break
        if wanted.match(lines[n]):
            return n + 1
    return start + 1


class _Suites:
    def __init__(self, path: Path, form: str, text: str, settings: Mapping[str, SettingParser]):
        self.path = path
        self.form = form
        self.text = text
        self.settings = {k: settings[k] for k in BENCHMARK_FILE_KEYS if k in settings}

    def error(
        self, problem: str, fix: str, *, index: int, table: Any = None, key: str | None = None
    ) -> ConfigError:
        line = _line_of(self.text, self.form, index, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        prefix = "" if self.form == "duet" else "tool.duet."
        label = f"{prefix}suite[{index + 1}]"
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            label += f" {table['name']!r}"
        subject = f"{key} " if key else ""
        return ConfigError(f"{where}: {label}: {subject}{problem}", fix=fix)

    def parse(self, value: Any) -> tuple[Suite, ...]:
        header = _header(self.form)
        example = f'{header}\nadapter = "google-benchmark"\npath = "build/bench"'
        if not isinstance(value, list) or not value:
            line = _line_of(self.text, self.form, 0, None)
            where = f"{self.path}:{line}" if line else str(self.path)
            raise ConfigError(
                f"{where}: suite must be an array of tables ({header}), got "
                f"{type(value).__name__ if value != [] else 'an empty array'}",
                fix=f"start every suite with {header} (double brackets), e.g.\n\n    "
                + example.replace("\n", "\n    "),
            )
        out: list[Suite] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(value):
            suite = self.suite(index, item)
            if suite.name in seen:
                raise self.error(
                    f"{suite.name!r} is already the name of suite[{seen[suite.name] + 1}]",
                    'give each suite its own name = "..." (benchmarks are called '
                    "<suite name>/<benchmark>)",
                    index=index,
                    table=item,
                    key="name" if "name" in item else None,
                )
            seen[suite.name] = index
            out.append(suite)
        return tuple(out)

    def _adapter(self, index: int, item: dict[str, Any]) -> tuple[str, Any]:
        """The suite's adapter name and the adapter, or the error naming the known ones."""
        adapter_name = item.get("adapter")
        if adapter_name is None:
            raise self.error(
                "has no adapter",
                f'add adapter = "..." (one of {", ".join(ADAPTERS)}; {_DOCS})',
                index=index,
                table=item,
            )
        if not isinstance(adapter_name, str) or adapter_name not in ADAPTERS:
            known = unknown_adapter(str(adapter_name))
            raise self.error(
                known.message.replace(f"adapter {str(adapter_name)!r} ", ""),
                known.fix or "",
                index=index,
                table=item,
                key="adapter",
            )
        try:
            adapter = load_adapter(adapter_name)
        except ConfigError as e:
            fix = e.fix or ""
            raise self.error(e.message, fix, index=index, table=item, key="adapter") from None
        return adapter_name, adapter

    def suite(self, index: int, item: Any) -> Suite:
        if not isinstance(item, dict):
            raise self.error(
                f"must be a table, got {item!r}",
                f'write each suite as a {_header(self.form)} section with adapter = "..." and '
                'path = "..."',
                index=index,
            )
        adapter_name, adapter = self._adapter(index, item)
        # The adapter's parsers of its own keys, each (options, key, value) -> options with
        # that key's field set (typed by the adapter's record), and its record without options.
        options: Mapping[str, Callable[[Any, str, Any], AdapterOptions]] = getattr(
            adapter, "options", {}
        )
        parsed_options: AdapterOptions = getattr(adapter, "no_options", AdapterOptions())
        known_keys = [*COMMON_KEYS, *options, *self.settings, "env"]
        for key in item:
            if key not in known_keys:
                close = difflib.get_close_matches(key, known_keys, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else "remove it; "
                raise self.error(
                    f"is not a key of a {adapter_name} suite",
                    f"{hint}the keys here are: {', '.join(known_keys)} ({_DOCS})",
                    index=index,
                    table=item,
                    key=key,
                )
        if "path" not in item:
            raise self.error(
                "has no path",
                'add path = "..." (relative to the version\'s directory: the benchmark binary '
                f"the build command builds, the package or crate of the suite; {_DOCS})",
                index=index,
                table=item,
            )
        text: dict[str, str] = {}
        for key in ("path", "name", "filter"):
            if key not in item:
                continue
            raw = item[key]
            if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
                raise self.error(
                    f"must be a non-empty string, got {raw!r}",
                    f'write e.g. {key} = "{_TEXT_EXAMPLES[key]}"',
                    index=index,
                    table=item,
                    key=key,
                )
            text[key] = raw
        if "name" in text and ("/" in text["name"] or text["name"] != text["name"].strip()):
            raise self.error(
                f"must not contain '/' nor surrounding spaces, got {text['name']!r}",
                'write e.g. name = "parse" (benchmarks are called <suite name>/<benchmark>)',
                index=index,
                table=item,
                key="name",
            )
        settings = BenchmarkFields()
        env: Mapping[str, str] = {}
        for key, raw in item.items():
            try:
                if key == "env":
                    env = env_table(key, raw)
                elif key in self.settings:
                    settings.update(self.settings[key](key, raw))
                elif key in options:
                    parsed_options = options[key](parsed_options, key, raw)
            except Exception as e:
                problem = getattr(e, "problem", None)
                if problem is None:
                    raise
                raise self.error(
                    problem, getattr(e, "fix", None) or _DOCS, index=index, table=item, key=key
                ) from None
        name = text.get("name") or default_name(adapter_name, text["path"])
        return Suite(
            adapter=adapter_name,
            name=name,
            path=text["path"],
            filter=text.get("filter"),
            options=parsed_options,
            settings=settings,
            env=env,
        )


def default_name(adapter: str, path: str) -> str:
    """The suite's name when the entry gives none: the adapter, and the path's last part when
    it says more than ``.`` (``go``, ``google-benchmark-bench_parse``)."""
    last = Path(path.rstrip("/")).name
    return adapter if last in ("", ".") else f"{adapter}-{slug(last)}"


def parse_suites(
    value: Any, path: Path, form: str, text: str, settings: Mapping[str, SettingParser]
) -> tuple[Suite, ...]:
    """The validated suite entries (``()`` when the configuration has none).

    ``settings`` are the parsers of the benchmark keys (``duet_bench.config``'s), so a suite's
    ``runs``, ``threshold``... are checked as a benchmark's; an exception they raise carries
    ``problem`` and ``fix``, which the message puts after the file, line, suite and key.
    """
    if value is None:
        return ()
    return _Suites(path, form, text, settings).parse(value)


class OptionError(Exception):
    """A wrong value of an adapter's own option (``problem`` and ``fix``, like the settings)."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


def positive_seconds(key: str, value: Any) -> float:
    """An adapter option in seconds: a positive number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise OptionError(
            f"must be a positive number of seconds, got {value!r}", f"write e.g. {key} = 0.1"
        )
    return float(value)


def positive_integer(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(f"must be a positive integer, got {value!r}", f"write e.g. {key} = 10")
    return value


def word(key: str, value: Any) -> str:
    """An adapter option that is one non-empty string (a path, a target name, a duration)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise OptionError(
            f"must be a non-empty string, got {value!r}", f'write it in quotes: {key} = "..."'
        )
    return value
