"""The ``missing`` convention of the environment record: what was not read, and why.

A value that cannot be read is ``None`` in the record and its dotted path is a key of the
top-level ``"missing"`` map, whose value says why (``{"cpufreq.cpus.1.governor": "... does not
exist"}``), the same convention as the results file's ``missing`` maps. Nothing unmeasured is
ever recorded as 0. Every reader of this package fills one :class:`Record` as it goes.
"""

from __future__ import annotations

__all__ = ["Record"]


class Record:
    """Collects missing values with their reasons while the record is built."""

    def __init__(self) -> None:
        self.missing: dict[str, str] = {}

    def get(self, key: str, value: object, reason: str) -> object:
        """Return ``value``; when it is None, remember ``key`` as missing because of ``reason``."""
        if value is None:
            # The first reason given for a key is the most specific one; keep it.
            self.missing.setdefault(key, reason)
        return value
