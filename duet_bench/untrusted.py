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
"""

from __future__ import annotations

import re

__all__ = ["for_terminal"]

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and the two-character escapes.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]?)")
# C0 controls but tab and newline (a carriage return overwrites the line), DEL, C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides and isolates (Trojan Source, CVE-2021-42574), and the marks.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_WORKFLOW_COMMAND = re.compile(r"^(\s*)(::|##\[)", re.MULTILINE)
_SECTION = re.compile(r"section_(start|end):")
_ZWSP = "\u200b"


def for_terminal(text: str) -> str:
    """``text`` safe to print on a terminal or into a CI job's log (see the module)."""
    s = _ESCAPE.sub("", text)
    s = _CONTROL.sub("\ufffd", s)
    s = _BIDI.sub("\ufffd", s)
    s = _WORKFLOW_COMMAND.sub(lambda m: m.group(1) + m.group(2)[0] + _ZWSP + m.group(2)[1:], s)
    return _SECTION.sub(lambda m: f"section{_ZWSP}_{m.group(1)}:", s)
