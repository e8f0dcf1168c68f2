"""Opening a results file as the invoking user and reading it: the size limit, gzip by its
content, strict JSON (no NaN or Infinity), then :func:`duet_bench.results.read.from_dict`, which
validates the document. ``load_given`` takes what a user typed: a ``results.json`` or the
directory that holds one."""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from duet_bench.errors import ResultsError
from duet_bench.isolation.privileges import open_as_invoking_user
from duet_bench.limits import MAX_RESULTS_BYTES
from duet_bench.manual import cite
from duet_bench.results.model import ResultsDocument
from duet_bench.results.read import from_dict

_GZIP_MAGIC = b"\x1f\x8b"


class _NonFiniteNumber(ValueError):
    """``NaN`` or ``Infinity`` in a file: Python's json accepts them, duet never writes them."""


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


def _gunzip(raw: bytes, p: Path) -> bytes:
    """``raw`` decompressed, refused once it grows past the size duet reads (a small .gz can
    hold gigabytes)."""
    out = zlib.decompressobj(wbits=31)  # 31: the gzip container
    data = out.decompress(raw, MAX_RESULTS_BYTES + 1)
    if not out.eof and len(data) <= MAX_RESULTS_BYTES:
        raise ResultsError(
            f"{p}: a gzip file that cannot be decompressed (it ends before its gzip trailer)",
            fix="the file was cut short or damaged; restore it from the CI artifact",
        )
    if len(data) > MAX_RESULTS_BYTES:
        raise ResultsError(
            f"{p}: decompresses to over the {MAX_RESULTS_BYTES // 2**20} MiB that duet reads in a "
            f"results file ({cite('configuration.md')}, Limits)",
            fix="split the suite with duet compare --shard i/N, or measure fewer runs "
            "or iterations",
        )
    return data


def load(
    path: str | os.PathLike[str], *, opener: Callable[[Path], int] | None = None
) -> ResultsDocument:
    """Read and validate a results file.

    ``opener`` opens it read-only and returns the descriptor (default: ``os.open`` by this
    process); :func:`load_given` passes one that opens as the invoking user.

    Raises
    ------
    ResultsError
        The file is missing, unreadable, truncated, not JSON, from a newer schema or has a
        wrong field; the message names the field and the fix.
    """
    p = Path(path)
    return from_dict(read_json(p, opener=opener), source=str(p))


def read_json(path: Path, *, opener: Callable[[Path], int] | None = None) -> Any:
    """The JSON value of a results file (gzip or not), not yet read as a document: what
    :func:`load` reads, and what ``duet schema FILE`` checks against the schema.

    Raises
    ------
    ResultsError
        The file is missing, unreadable, over the size limit, truncated or not JSON.
    """
    p = path
    try:
        fd = (opener or _open_read_only)(p)
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_RESULTS_BYTES:
                raise ResultsError(
                    f"{p}: {size / 2**20:,.0f} MiB, over the {MAX_RESULTS_BYTES // 2**20} MiB "
                    f"that duet reads in a results file ({cite('configuration.md')}, Limits)",
                    fix="a file that large was not written by duet within its limits (runs, "
                    "iterations); split the suite with duet compare --shard i/N, or measure "
                    "fewer runs or iterations",
                )
            raw = f.read(MAX_RESULTS_BYTES + 1)  # a file that grew since: the gzip check says
        if raw[:2] == _GZIP_MAGIC:
            # By content, not by name: results.json.gz, or one renamed to results.json.
            raw = _gunzip(raw, p)
        text = raw.decode("utf-8")
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ResultsError(
            f"{p}: a gzip file that cannot be decompressed ({e})",
            fix="the file was cut short or damaged; restore it from the CI artifact",
        ) from None
    except FileNotFoundError:
        raise ResultsError(
            f"{p}: no such file", fix="give the path of a results.json written by duet"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{p}: cannot read it: {e}") from None
    if not text.strip():
        raise ResultsError(f"{p}: the file is empty", fix="re-run the benchmark that wrote it")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except _NonFiniteNumber as e:
        raise ResultsError(
            f"{p}: holds {e.args[0]}, which is not a JSON number and never written by duet",
            fix="the file was edited or produced by another tool; re-run the benchmark",
        ) from None
    except RecursionError:
        raise ResultsError(
            f"{p}: nested too deeply to be a results document",
            fix="give the path of a results.json written by duet",
        ) from None
    except ValueError as e:
        if not isinstance(e, json.JSONDecodeError):
            # Integers over sys.get_int_max_str_digits() digits, which duet never writes.
            raise ResultsError(
                f"{p}: not a results document: {e}",
                fix="give the path of a results.json written by duet",
            ) from None
        truncated = e.pos >= len(text.rstrip()) - 1
        what = "truncated" if truncated else "not valid JSON"
        raise ResultsError(
            f"{p}: {what} (line {e.lineno}, column {e.colno}: {e.msg})",
            fix="the file was cut short or edited by hand; restore it from the CI artifact or "
            "re-run the benchmark",
        ) from None
    return data


def _open_read_only(p: Path) -> int:
    return os.open(p, os.O_RDONLY | os.O_CLOEXEC)


def load_given(path: str | os.PathLike[str]) -> ResultsDocument:
    """The results document at ``path``, a path the user gave on the command line
    (:func:`read_given`)."""
    read, data = read_given(path)
    return from_dict(data, source=str(read))


def read_given(path: str | os.PathLike[str]) -> tuple[Path, Any]:
    """The results file at ``path``, a path the user gave on the command line, and its JSON
    value (:func:`read_json`).

    A directory is the ``--out DIR`` of the command that wrote it: its results.json is read.
    A path that names no results file, a directory without one as much as a missing file, is
    the same failure for every command that reads results (exit 3: the input is unreadable,
    which in CI means that the step that should have written it did not).

    Root under ``sudo`` opens it, the directory test included, as the user who ran sudo
    (:func:`duet_bench.isolation.privileges.open_as_invoking_user`): a link in the path leads
    only where that user may read (docs/isolation.md, "What runs as root").
    """
    given = Path(path)
    try:
        fd = open_as_invoking_user(given)
    except OSError:  # missing or unreadable: read_json opens it again and says which
        return given, read_json(given, opener=open_as_invoking_user)
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        return given, read_json(given, opener=lambda _p: fd)
    os.close(fd)

    def in_directory(p: Path) -> int:
        try:
            return open_as_invoking_user(p)
        except FileNotFoundError:
            raise ResultsError(
                f"{given} is a directory without a results.json",
                fix="give the --out DIR that duet run, compare or merge wrote, or its results.json",
            ) from None

    # read_json names the file, not the directory, in every error it raises.
    inside = given / "results.json"
    return inside, read_json(inside, opener=in_directory)
