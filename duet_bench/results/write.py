"""Writing a results document: the JSON form of each record, the file replaced atomically
(:func:`save`), and the file of a session that measures (:class:`ResultsWriter`), rewritten after
every run so that a crash never loses what was measured and always able to say why it stopped,
even on a full disk.

The file is replaced atomically after every run (:func:`write_atomic`), which needs room for a
whole new copy: on a full disk that write fails, and so would the last one, the one that records
``state.stopped``. So a measuring session writes its document with :func:`dumps_reserving`: the
``state`` object is on one line followed by :data:`RESERVED_BYTES` spaces (JSON whitespace).
:func:`write_state_in_place` then overwrites that line inside the existing file, whose blocks are
already allocated: no new space is needed, so it cannot fail with ENOSPC
(``tests/system/test_full_disk.py`` checks it on a full tmpfs).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from duet_bench import files
from duet_bench.errors import ResultsError
from duet_bench.results.model import (
    SIDE_SERIES,
    BenchmarkRecord,
    JSONObject,
    ResultsDocument,
    RunRecord,
    SideRecord,
)
from duet_bench.untrusted import for_terminal

log = logging.getLogger(__name__)

#: Room kept after ``state`` for a longer ``stopped`` reason written in place.
RESERVED_BYTES = 1024
#: The top-level ``state`` key as :func:`dumps_reserving` writes it (indent 1: a top-level key
#: is the only one after a newline and a single space; strings hold no raw newline).
_KEY = b'\n "state": '
_SENTINEL = "\x00duet-state\x00"
#: The state is near the top (after schema, tool and created): this much is read to find it.
_HEAD_BYTES = 1 << 20


def _side_dict(s: SideRecord) -> JSONObject:
    out: JSONObject = {
        "status": s.status,
        "iterations_ns": list(s.iterations_ns),
        "warmup_ns": list(s.warmup_ns),
    }
    if s.iteration_start_ns is not None:
        out["iteration_start_ns"] = list(s.iteration_start_ns)
    for key in SIDE_SERIES:
        values = getattr(s, key)
        if values is not None:
            out[key] = list(values)
    if s.figures is not None:
        out["figures"] = dict(s.figures)
    if s.runtime is not None:
        out["runtime"] = dict(s.runtime)
    if s.cores is not None:
        out["cores"] = list(s.cores)
    for k in ("cpu_ns", "cpu_user_ns", "cpu_system_ns", "peak_memory_bytes", "wall_ns"):
        out[k] = getattr(s, k)
    out["exit_code"] = s.exit_code
    for k in ("reason", "hit_limit", "runq_source", "stderr_tail"):
        if getattr(s, k) is not None:
            out[k] = getattr(s, k)
    if s.missing:
        out["missing"] = dict(s.missing)
    return out


def _run_dict(r: RunRecord) -> JSONObject:
    out: JSONObject = {"index": r.index, "status": r.status}
    if r.reason is not None:
        out["reason"] = r.reason
    if r.order is not None:
        out["order"] = list(r.order)
    out["baseline"] = _side_dict(r.baseline)
    out["candidate"] = _side_dict(r.candidate)
    return out


def benchmark_dict(b: BenchmarkRecord) -> JSONObject:
    out: JSONObject = {"name": b.name}
    if b.kind is not None:
        out["kind"] = b.kind
    out["method"] = b.method
    if b.versions:
        out["versions"] = dict(b.versions)
    plan = b.settings.to_dict()
    if plan:
        out["settings"] = plan
    if b.note is not None:
        out["note"] = b.note
    if b.analysis is not None:
        out["analysis"] = b.analysis.to_dict()
    out["runs"] = [_run_dict(r) for r in b.runs]
    return out


def to_dict(doc: ResultsDocument) -> JSONObject:
    out: JSONObject = {"schema": doc.schema}
    if doc.tool:
        out["tool"] = dict(doc.tool)
    if doc.created is not None:
        out["created"] = doc.created
    if doc.state:
        out["state"] = dict(doc.state)
    if doc.config:
        out["config"] = dict(doc.config)
    if doc.environment:
        out["environment"] = dict(doc.environment)
    out["benchmarks"] = [benchmark_dict(b) for b in doc.benchmarks]
    return out


def dumps(doc: ResultsDocument) -> str:
    return json.dumps(to_dict(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def save(doc: ResultsDocument, path: str | os.PathLike[str]) -> None:
    """Write ``doc`` atomically: temporary file in the same directory, fsync, rename.

    If anything fails (a full disk, a signal), the previous file is left as it was and the
    temporary file is removed.
    """
    write_atomic(Path(path), dumps(doc))


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` so that readers see the old or the new file, never a part
    (:func:`duet_bench.files.write_atomic`), with the error worded for a results file."""
    try:
        files.write_atomic(path, text)
    except OSError as e:
        raise ResultsError(
            f"{path}: could not write the results ({e.strerror or e}); the previous file "
            "is unchanged",
            fix=files.fix_for(e, "free disk space or choose another --out, then re-run"),
        ) from e


def dumps_reserving(doc: ResultsDocument) -> str:
    """:func:`dumps` with ``state`` on one line and room after it."""
    data = to_dict(doc)
    state = data.get("state") or {}
    data["state"] = _SENTINEL
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    line = json.dumps(state, ensure_ascii=False, allow_nan=False) + " " * RESERVED_BYTES
    return text.replace(json.dumps(_SENTINEL), line, 1)


def now() -> str:
    """The time as a results file records it (``created``, ``state.updated``): UTC, seconds."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class ResultsWriter:
    """The results file of a session that measures, from its first write to its last: the
    document before the first run (every benchmark planned in ``state.planned``, so that those
    never started count in its completeness), after every run (:meth:`save`), and once more when
    the session ends (:meth:`finish`) or stops (:meth:`stop`). Every write is atomic and keeps
    the room of :func:`dumps_reserving`, so that the last one says whether and why the session
    stopped even on a full disk. :attr:`doc` is the document as last written, the runs of every
    benchmark in progress included."""

    def __init__(
        self, path: Path, doc: ResultsDocument, planned: Sequence[tuple[str, int]]
    ) -> None:
        """Write ``doc`` to ``path`` as not complete, with ``planned`` (name and runs of each
        benchmark the session is about to measure) as its ``state.planned``."""
        self.path = path
        self._planned = [{"name": name, "runs": runs} for name, runs in planned]
        self.doc = replace(doc, state=self._state())
        self._write()

    def _state(self, *, complete: bool = False, stopped: str | None = None) -> dict[str, Any]:
        """The document's ``state``: complete or not, where it stopped, when it was written,
        and what was planned."""
        return {
            "complete": complete,
            "stopped": stopped,
            "updated": now(),
            "planned": self._planned,
        }

    def save(self, record: BenchmarkRecord) -> None:
        """Write the document with ``record`` as it now stands (added, or in place of the
        record of that name)."""
        self.doc = replace(self.doc.with_benchmark(record), state=self._state())
        self._write()

    def _write(self) -> None:
        """:attr:`doc` written atomically, with the room after its state."""
        text = dumps_reserving(self.doc)
        write_atomic(self.path, text)

    def finish(self, environment: Mapping[str, Any]) -> ResultsDocument:
        """Write the document as complete, with the session's final ``environment``; return
        it."""
        self._end(replace(self.doc, environment=environment, state=self._state(complete=True)))
        return self.doc

    def stop(self, why: str) -> None:
        """Write the document as stopped, ``why`` (``interrupted by SIGINT while measuring
        'x'``) saying where."""
        self._end(replace(self.doc, state=self._state(stopped=why)))

    def _end(self, doc: ResultsDocument) -> None:
        """Write ``doc``, whose state changed; when the disk is full, write its state in the room
        the file keeps for it (:func:`write_state_in_place`) so that the file still says whether
        and why it stopped. What changed besides the state is then lost, and said (a warning on
        stderr)."""
        self.doc = doc
        try:
            self._write()
        except ResultsError as e:
            state = dict(doc.state)
            lost = (
                f"the results file could not be rewritten ({e.message}): the last changes are lost"
            )
            state["stopped"] = f"{state['stopped']}; {lost}" if state.get("stopped") else lost
            write_state_in_place(self.path, state)
            log.warning(
                "%s",
                for_terminal(
                    f"{self.path}: {lost}; its state was written in the room reserved for it"
                ),
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
