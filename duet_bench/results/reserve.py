"""A results file that can always say why it stopped, even on a full disk.

The file is replaced atomically after every run (:func:`duet_bench.results.write_atomic`), which
needs room for a whole new copy: on a full disk that write fails, and so would the last one, the
one that records ``state.stopped``. So a measuring session writes its document with
:func:`dumps_reserving`: the ``state`` object is on one line followed by :data:`RESERVED_BYTES`
spaces (JSON whitespace). :func:`write_state_in_place` then overwrites that line inside the
existing file, whose blocks are already allocated: no new space is needed, so it cannot fail
with ENOSPC (``tests/system/test_full_disk.py`` checks it on a full tmpfs).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duet_bench.errors import ResultsError
from duet_bench.results.model import ResultsDocument
from duet_bench.results.write import to_dict, write_atomic
from duet_bench.untrusted import for_terminal

log = logging.getLogger(__name__)

__all__ = [
    "RESERVED_BYTES",
    "dumps_reserving",
    "save_reserving",
    "save_state",
    "write_state_in_place",
]

#: Room kept after ``state`` for a longer ``stopped`` reason written in place.
RESERVED_BYTES = 1024
#: The top-level ``state`` key as :func:`dumps_reserving` writes it (indent 1: a top-level key
#: is the only one after a newline and a single space; strings hold no raw newline).
_KEY = b'\n "state": '
_SENTINEL = "\x00duet-state\x00"
#: The state is near the top (after schema, tool and created): this much is read to find it.
_HEAD_BYTES = 1 << 20


def dumps_reserving(doc: ResultsDocument) -> str:
    """:func:`duet_bench.results.dumps` with ``state`` on one line and room after it."""
    data = to_dict(doc)
    state = data.get("state") or {}
    data["state"] = _SENTINEL
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    line = json.dumps(state, ensure_ascii=False, allow_nan=False) + " " * RESERVED_BYTES
    return text.replace(json.dumps(_SENTINEL), line, 1)


def save_reserving(doc: ResultsDocument, path: Path) -> None:
    """Write ``doc`` atomically (:func:`duet_bench.results.write_atomic`) with the room."""
    text = dumps_reserving(doc)
    write_atomic(path, text)


def save_state(doc: ResultsDocument, path: Path) -> None:
    """Save ``doc``, whose state changed (:func:`save_reserving`); when the disk is full, write
    its state in the room the file keeps for it (:func:`write_state_in_place`) so that the file
    still says whether and why it stopped. What changed besides the state is then lost, and
    said (a warning on stderr)."""
    try:
        save_reserving(doc, path)
    except ResultsError as e:
        state = dict(doc.state)
        lost = f"the results file could not be rewritten ({e.message}): the last changes are lost"
        state["stopped"] = f"{state['stopped']}; {lost}" if state.get("stopped") else lost
        write_state_in_place(path, state)
        log.warning(
            "%s", for_terminal(f"{path}: {lost}; its state was written in the room reserved for it")
        )


def write_state_in_place(path: Path, state: Mapping[str, Any]) -> None:
    """Overwrite the ``state`` of the file at ``path`` (written by :func:`dumps_reserving`)
    without allocating: the new state replaces the old one and its padding, byte for byte.
    A ``stopped`` reason too long for the room is shortened."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        raise ResultsError(
            f"{path}: cannot record why duet stopped ({e.strerror or e})",
            fix="the results file was removed or made read-only while duet ran",
        ) from e
    try:
        head = os.pread(fd, _HEAD_BYTES, 0)
        start = head.find(_KEY)
        end = head.find(b"\n", start + len(_KEY)) if start >= 0 else -1
        if end < 0:
            raise ResultsError(
                f"{path}: no room for the state to be written in place",
                fix="the file was not written by a measuring duet; re-run the benchmark",
            )
        start += len(_KEY)
        width = end - start - (1 if head[end - 1 : end] == b"," else 0)
        line = _fit(state, width)
        os.pwrite(fd, line + b" " * (width - len(line)), start)
        os.fsync(fd)
    except OSError as e:
        raise ResultsError(f"{path}: cannot record why duet stopped ({e.strerror or e})") from e
    finally:
        os.close(fd)


def _fit(state: Mapping[str, Any], width: int) -> bytes:
    """``state`` as one JSON line of at most ``width`` bytes, its ``stopped`` cut if needed."""
    line = json.dumps(dict(state), ensure_ascii=False).encode()
    stopped = state.get("stopped")
    if len(line) > width and isinstance(stopped, str):
        keep = max(len(stopped) - (len(line) - width) - 1, 0)
        line = json.dumps({**state, "stopped": stopped[:keep] + "…"}, ensure_ascii=False).encode()
        while len(line) > width and keep > 0:  # multi-byte characters
            keep -= 8
            cut = {**state, "stopped": stopped[: max(keep, 0)] + "…"}
            line = json.dumps(cut, ensure_ascii=False).encode()
    if len(line) > width:
        raise ResultsError("the state does not fit in the room reserved for it")
    return line
