"""``duet_bench.untrusted.visible``: the one function every shown name passes through."""

from __future__ import annotations

import sys
import unicodedata

from duet_bench.untrusted import _INVISIBLE, for_terminal, visible


def test_every_invisible_format_character_is_in_the_list() -> None:
    """The list is written out (building it from unicodedata at import costs 0.3 s of every
    duet command): every Cf, Zl and Zp character of this Python's Unicode must be in it."""
    missing = [
        f"U+{c:04X}"
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp") and not _INVISIBLE.match(chr(c))
    ]
    assert not missing, f"add to _INVISIBLE (Unicode {unicodedata.unidata_version}): {missing}"


def test_visible_keeps_text_and_shows_what_hides() -> None:
    assert visible("parse: 12 ms\tok\nnaïve 日本 🙂") == "parse: 12 ms\tok\nnaïve 日本 🙂"
    assert visible("a\u202eb\u200bc\x07d\ufeff") == "a\ufffdb\ufffdc\ufffdd\ufffd"
    # The terminal's own breaker of workflow commands is added after: it stays.
    assert for_terminal("::error::x\u2066") == ":\u200b:error::x\ufffd"
