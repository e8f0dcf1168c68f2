"""Line layout shared by the terminal reports of ``duet doctor`` and ``duet calibrate``."""

from __future__ import annotations

import re
import textwrap

#: Width of the terminal reports (characters).
WIDTH = 100
_NBSP = "\u00a0"


def wrap(text: str, indent: int, *, first: int = 0, width: int = WIDTH) -> str:
    """``text`` filled to ``width``, continuation lines indented by ``indent``; the first line
    is ``first`` columns shorter (it follows a label printed before it). Spans in backticks,
    commands a user copies from the terminal, are never broken across lines."""
    protected = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", _NBSP), text)
    filled = textwrap.fill(
        protected,
        width=width,
        initial_indent=" " * first,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return filled[first:].replace(_NBSP, " ")


def terminal_width(stream: object) -> int:
    """The columns of the terminal ``stream`` writes to; :data:`WIDTH` when it is not one (a
    file, a pipe, a CI log), so saved reports do not depend on who made them."""
    import shutil

    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return WIDTH
    return max(40, shutil.get_terminal_size((WIDTH, 24)).columns)
