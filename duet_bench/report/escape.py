"""Text that comes from the measured code is data, never markup.

Benchmark names, commands and their output come from the pull request under test: a name like
``</details><img src=x onerror=...>`` or ``@org/team`` must render as the characters it is made
of, not as HTML, a link, a table break or a notification; and, as on the terminal, control
characters, bidirectional overrides and invisible formatting characters are shown as U+FFFD
(:func:`duet_bench.untrusted.visible`, the one function every shown name passes through).
"""

from __future__ import annotations

import re

from duet_bench.untrusted import visible

_HTML_CHARS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_HTML = str.maketrans(_HTML_CHARS)
# Markdown punctuation that can start emphasis, links, images, code or break a table cell, and
# the HTML characters, in ONE table: translating twice escaped the "#" of "&#39;" again
# ("&&#35;39;" for a quote).
_MD = str.maketrans(
    {
        **_HTML_CHARS,
        "|": "&#124;",
        "`": "&#96;",
        "*": "&#42;",
        "_": "&#95;",
        "[": "&#91;",
        "]": "&#93;",
        "!": "&#33;",
        "~": "&#126;",
        "#": "&#35;",
        "\\": "&#92;",
    }
)
# A zero-width space after "@" keeps the text readable but stops GitHub/GitLab mentions.
_MENTION = re.compile(r"@(?=[\w-])")


def markdown_text(text: str, *, limit: int | None = 200) -> str:
    """Escape untrusted text for a markdown (GitHub/GitLab flavoured) inline context."""
    s = visible(" ".join(str(text).split()))
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.translate(_MD)
    return _MENTION.sub("@&#8203;", s)


def html_text(text: str) -> str:
    """Escape untrusted text for HTML element content or a quoted attribute."""
    return visible(str(text)).translate(_HTML)


def shown_text(text: object) -> str:
    """Untrusted text for a writer that escapes markup itself (ElementTree's XML and SVG
    attributes, OpenMetrics label values): only the invisible and control characters shown as
    U+FFFD (:func:`duet_bench.untrusted.visible`)."""
    return visible(str(text))
