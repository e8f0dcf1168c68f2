"""The adapters by name: ``adapter = "..."`` in a suite entry, as the typed
:class:`~duet_bench.adapters.base.Adapter` that discovery and the benchmarks use.

The names and the loading by name are the configuration's
(:data:`duet_bench.config.suites.ADAPTERS`, :func:`duet_bench.config.suites.load_adapter`): a
suite entry is checked against its adapter's options when the configuration is read, without
the configuration importing any adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from duet_bench.config.suites import ADAPTERS, load_adapter, unknown_adapter

if TYPE_CHECKING:
    from duet_bench.adapters.base import Adapter

__all__ = ["ADAPTERS", "get_adapter", "unknown_adapter"]


def get_adapter(name: str) -> Adapter:
    """The adapter called ``name``; a :class:`~duet_bench.errors.ConfigError` when there is
    none or its module is not part of this duet."""
    return cast("Adapter", load_adapter(name))
