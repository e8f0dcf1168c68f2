"""The marker: the hidden first line ``<!-- duet-report v1 key=K -->`` that makes a comment
ours, and the key inside it (one comment per key, e.g. one per suite).

The body writes it (:func:`marker`), the upsert reads it back (:func:`marker_key`); the key
goes inside an HTML comment, so :func:`validate_key` makes ``-->`` impossible.
"""

from __future__ import annotations

import re

from duet_bench.errors import UsageError

#: The marker that makes a comment ours; ``key`` lets several suites keep one comment each.
MARKER_FORMAT = "<!-- duet-report v1 key={key} -->"
_MARKER = re.compile(r"<!-- duet-report(?: [^\n]*?)? key=([A-Za-z0-9._-]{1,64}) -->")
_KEY = re.compile(r"[A-Za-z0-9._-]{1,64}")
DEFAULT_KEY = "default"


def validate_key(key: str) -> str:
    """The comment key, checked: it goes inside an HTML comment, so ``-->`` must be impossible."""
    if not _KEY.fullmatch(key):
        raise UsageError(
            f"comment key {key!r} is not 1 to 64 letters, digits, '.', '_' or '-'",
            fix="use e.g. --key default or --key parser-suite",
        )
    return key


def marker(key: str) -> str:
    return MARKER_FORMAT.format(key=validate_key(key))


def marker_key(body: str) -> str | None:
    """The key of the marker on the first line of ``body``, or None when it has none."""
    first = body.split("\n", 1)[0].strip()
    m = _MARKER.fullmatch(first)
    return m.group(1) if m else None
