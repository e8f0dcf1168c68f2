"""The configuration: ``duet.toml``, or ``[tool.duet]`` in ``pyproject.toml`` (the same keys).

First arrow of the pipeline: a TOML file becomes a validated :class:`Config`, which
:mod:`duet_bench.settings` merges with the built-in defaults and the command-line options into the
:class:`duet_bench.plan.BenchmarkSpec` and analysis settings of each benchmark. Every key is known:
a wrong key, type or value is refused with a :class:`~duet_bench.errors.ConfigError` naming the file
(and line when it can be found), the table, the key and the fix, because a silently ignored
typo (``iteration = 100``) would measure something else than the user asked for, and nobody
reads a benchmark's settings twice.

One job per module:

* :mod:`duet_bench.config.model`: the records (:class:`Defaults`, :class:`BenchmarkConfig`,
  :class:`Config`) and the range rules they share with the validation;
* :mod:`duet_bench.config.values`: the parsers of the values (integer, number, size, choice, ...);
* :mod:`duet_bench.config.read`: finding the file (:func:`choose_config`, :func:`find_config`),
  reading and parsing it (:func:`load_config`), and locating its statements for the line numbers
  of messages (``Lines``);
* :mod:`duet_bench.config.validate`: every key known, every value checked (the ``Validator``);
* :mod:`duet_bench.config.writer`: editing the file in place for ``duet calibrate --write``
  (:func:`~duet_bench.config.writer.write_recommendation`, on tomlkit), imported from there only, so
  that the command line does not import tomlkit to start.

Everything is imported from here: ``from duet_bench.config import load_config``.
"""

from __future__ import annotations

from duet_bench.config.model import (
    DEFAULT_PYTHON,
    RECOMMENDATION_KEYS,
    WORD_RECOMMENDATIONS,
    BenchmarkConfig,
    Config,
    Defaults,
    Form,
)
from duet_bench.config.read import (
    CONFIG_FILES,
    MINIMAL_EXAMPLE,
    choose_config,
    find_config,
    has_duet_table,
    load_config,
)
from duet_bench.config.validate import BENCHMARK_KEY_PARSERS, SUITE_KEY_PARSERS
from duet_bench.config.values import DOCS

__all__ = [
    "BENCHMARK_KEY_PARSERS",
    "CONFIG_FILES",
    "DEFAULT_PYTHON",
    "DOCS",
    "MINIMAL_EXAMPLE",
    "RECOMMENDATION_KEYS",
    "SUITE_KEY_PARSERS",
    "WORD_RECOMMENDATIONS",
    "BenchmarkConfig",
    "Config",
    "Defaults",
    "Form",
    "choose_config",
    "find_config",
    "has_duet_table",
    "load_config",
]
