"""The adapters by name: ``adapter = "..."`` in a suite entry.

Each adapter lives in its own module exposing ``ADAPTER``, imported only when a configuration
names it, so a missing toolchain or an adapter that is not in this build costs nothing to the
configurations that do not use it.
"""

from __future__ import annotations

import difflib
import importlib
from typing import TYPE_CHECKING

from duet_bench.errors import ConfigError
from duet_bench.manual import cite

if TYPE_CHECKING:
    from duet_bench.adapters.base import Adapter

#: Adapter name -> ``module:attribute`` of its :class:`~duet_bench.adapters.base.Adapter`.
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


def get_adapter(name: str) -> Adapter:
    """The adapter called ``name``; a :class:`ConfigError` when there is none or its module is
    not part of this duet."""
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
    adapter: Adapter = getattr(module, attribute)
    return adapter
