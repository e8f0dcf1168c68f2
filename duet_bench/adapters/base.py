"""What every adapter provides (:class:`Adapter`), and the version a suite is discovered in
(:class:`Checkout`).

A suite entry (``[[suite]]`` in ``duet.toml``, ``[[tool.duet.suite]]`` in ``pyproject.toml``,
the record :class:`duet_bench.config.model.Suite`) names the adapter, where the suite is and an
optional filter; every benchmark discovered in it becomes the duet benchmark
``<suite name>/<benchmark name>`` with the suite's settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from duet_bench.config.model import BenchmarkConfig, Suite
    from duet_bench.isolation.model import RunAs


@dataclass(frozen=True, slots=True)
class Checkout:
    """The version a suite is discovered in: its directory after the build, the interpreter
    of python suites (absolute, or None when the configuration has no python benchmark), the
    environment discovery runs with, and the user it runs as: the version's own programs (a
    cargo build script, the built benchmark binary listing its benchmarks) never run as root
    (docs/isolation.md, "What runs as root"); ``keep_env`` names the CI secrets kept on purpose.
    """

    directory: Path
    python: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    run_as: RunAs | None = None
    keep_env: tuple[str, ...] = ()


class Adapter(Protocol):
    """One benchmark tool.

    ``discover`` lists the benchmarks of ``suite`` in ``checkout`` (the tool's own names,
    filtered, in a stable order); it raises :class:`duet_bench.errors.ConfigError` saying what the
    tool printed when the suite cannot be listed. ``benchmark`` says how one iteration of
    ``name`` runs, relative to the version's directory (duet runs every side in its version's
    directory), named ``f"{suite.name}/{name}"``. ``iteration`` is one sentence for the
    documentation and the report: what one iteration of this adapter is.
    """

    name: str
    iteration: str

    def discover(self, suite: Suite, checkout: Checkout) -> tuple[str, ...]: ...

    def benchmark(self, suite: Suite, name: str) -> BenchmarkConfig: ...
