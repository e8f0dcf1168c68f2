"""Text from the measured code on its way to a terminal or a CI log: shown, never obeyed.

A benchmark's stderr, its name and the reasons built from them come from the code under test
(a pull request's). Printed raw, an escape sequence rewrites the terminal (cursor moves, a
window title, hidden text, a fake "ok"), a line starting with ``::`` is a GitHub Actions workflow
command (``::error::``, ``::add-mask::``, ``::stop-commands::``, the old ``::set-output``; the
runner trims the line first, so indenting does not help) and ``##[`` its older form, and
GitLab's ``section_start:<time>:<name>\\r\\e[0K`` folds the job log. :func:`for_terminal` is the
one function every such text passes through (the stderr tail on the terminal, the text report,
error messages): escape sequences removed, other control characters and bidirectional
overrides shown as U+FFFD, workflow commands and section markers broken by a zero-width space.

:func:`visible` is the part every other place a name is shown applies too (the markdown, HTML
and JUnit reports, through :mod:`duet_bench.report.escape` and :mod:`duet_bench.report.junit`):
control characters, bidirectional overrides and every other invisible formatting character
(Unicode category Cf: zero-width spaces and joiners, the BOM, tag characters; the line and
paragraph separators; the Hangul fillers) shown as U+FFFD. Two names that differ only by an
invisible character, or whose text reads in another order than it is stored (Trojan Source),
then look different wherever they are shown (issue 33, finding 6).
"""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_CHARS", "for_terminal", "name_too_long", "visible"]

#: The longest benchmark name duet accepts (checked where the configuration is read): a name is
#: a label in a table row, a terminal line and a CI comment, and a 10 kB one was printed whole.
MAX_NAME_CHARS = 200

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and the two-character escapes.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]?)")
# C0 controls but tab and newline (a carriage return overwrites the line), DEL, C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides and isolates (Trojan Source, CVE-2021-42574), and the marks.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Every character of Unicode's category Cf (format: invisible, or reordering the text around
# it), the line and paragraph separators (Zl, Zp) and the Hangul fillers (letters that show
# nothing). tests/duet/test_untrusted.py checks the list against unicodedata.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_WORKFLOW_COMMAND = re.compile(r"^(\s*)(::|##\[)", re.MULTILINE)
_SECTION = re.compile(r"section_(start|end):")
_ZWSP = "\u200b"


def name_too_long(text: str) -> str | None:
    """Why ``text`` cannot be a benchmark name because of its length, or None when it can: for
    the configuration's ``name`` and ``duet run --name``."""
    if len(text) <= MAX_NAME_CHARS:
        return None
    return (
        f"is {len(text)} characters long; a benchmark name may have at most {MAX_NAME_CHARS} "
        "(it labels a row of every report, a line on the terminal and the CI comment)"
    )


def visible(text: str) -> str:
    """``text`` with control characters, bidirectional overrides and invisible formatting
    characters shown as U+FFFD (tab and newline kept): for every place a name or a side's text
    is shown (see the module)."""
    s = _CONTROL.sub("\ufffd", text)
    s = _BIDI.sub("\ufffd", s)
    return _INVISIBLE.sub("\ufffd", s)


def for_terminal(text: str) -> str:
    """``text`` safe to print on a terminal or into a CI job's log (see the module)."""
    s = visible(_ESCAPE.sub("", text))
    s = _WORKFLOW_COMMAND.sub(lambda m: m.group(1) + m.group(2)[0] + _ZWSP + m.group(2)[1:], s)
    return _SECTION.sub(lambda m: f"section{_ZWSP}_{m.group(1)}:", s)
