"""Apply a mutant to a copy of the checkout and run the tests that should kill it.

The working tree is never edited: each worker copies the packages and the tests to a temporary
directory once, and for each mutant writes the mutated file there, runs pytest with the copy
first on ``sys.path`` (``tests/mutants/guard.py`` stops the run if ``duet_bench`` or
``duet_stats`` would be imported from anywhere else, e.g. the venv's editable install), then
writes the file back. A mutant whose text no longer matches exactly once is an error, never a
silent pass.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
#: What a copy holds: the packages, the tests and what the tests read.
COPIED = ("duet_bench", "duet_stats", "tests", "docs", "scripts", "pyproject.toml", "README.md")
#: Large and read only by a few tests: linked, not copied.
LINKED = ("benchmarks",)
#: tests/mutants/guard.py exits with this when the copy is not what is imported.
GUARD_EXIT = 97
#: Per mutant; a mutant that makes a loop endless is killed by this (and counts as killed).
TIMEOUT_S = 300.0

Status = Literal["killed", "survived", "timeout", "error"]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One broken duet: ``old`` replaced by ``new`` in ``path`` (relative to the checkout).

    A hand-written mutant's ``old`` must occur exactly once in the file. A generated one gives
    the byte offset ``at`` of its ``old`` (the same text may occur elsewhere)."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str = ""
    measures: bool = False
    at: int | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    mutant: Mutant
    status: Status
    wall_s: float
    detail: str


class MutantError(Exception):
    """A mutant that cannot be applied or a copy that does not import itself."""


def mutated_text(source: str, m: Mutant) -> str:
    """``source`` with ``m`` applied; raises :class:`MutantError` when it does not match."""
    if m.at is not None:
        data = source.encode("utf-8")
        old = m.old.encode("utf-8")
        if data[m.at : m.at + len(old)] != old:
            raise MutantError(
                f"mutant {m.name}: {m.path} no longer has {m.old!r} at byte {m.at}: "
                "regenerate the mutants (they are listed from the source each time)"
            )
        return (data[: m.at] + m.new.encode("utf-8") + data[m.at + len(old) :]).decode("utf-8")
    count = source.count(m.old)
    if count != 1:
        raise MutantError(
            f"mutant {m.name}: its old text occurs {count} times in {m.path}, not once: the code "
            "it breaks moved or changed; edit its old and new text in tests/mutants/catalogue.py "
            "so that it breaks the same behaviour again"
        )
    return source.replace(m.old, m.new)


def check_applies(m: Mutant, root: Path = ROOT) -> None:
    """Raise :class:`MutantError` if ``m`` does not apply to the checkout at ``root`` or does
    not change its file into valid Python."""
    path = root / m.path
    source = path.read_text(encoding="utf-8")
    new = mutated_text(source, m)
    if new == source:
        raise MutantError(f"mutant {m.name}: its new text equals its old text")
    if path.suffix == ".py":
        try:
            compile(new, str(path), "exec")
        except SyntaxError as e:
            raise MutantError(f"mutant {m.name}: the mutated {m.path} does not parse: {e}") from e


def make_copy(dest: Path, root: Path = ROOT) -> None:
    """Copy what the tests need from ``root`` to ``dest`` (no caches, no compiled files)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache")
    for name in COPIED:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    for name in LINKED:
        if (root / name).exists():
            (dest / name).symlink_to(root / name)


@contextmanager
def copy_of_checkout(root: Path = ROOT) -> Iterator[Path]:
    """A temporary copy of the checkout (:func:`make_copy`), removed on the way out."""
    with tempfile.TemporaryDirectory(prefix="duet-mutants-") as d:
        dest = Path(d) / "tree"
        dest.mkdir()
        make_copy(dest, root)
        yield dest


def pytest_argv(tests: Sequence[str], copy: Path) -> list[str]:
    # Its own base temporary directory, beside the copy: pytest's default one is shared by every
    # pytest run of the user, and its clean-up of another run's directories can fail the run.
    return [
        sys.executable, "-m", "pytest", *tests, "-q", "-x", "-p", "no:cacheprovider",
        "-p", "tests.mutants.guard", "--no-header", f"--basetemp={copy.parent / 'pytest'}",
    ]  # fmt: skip


def run_tests(copy: Path, tests: Sequence[str], timeout_s: float) -> tuple[int | None, str]:
    """Run pytest on ``tests`` in ``copy``; return (exit code or None on timeout, output tail)."""
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutant and its restored file may share an mtime
    env["DUET_MUTANT_ROOT"] = str(copy)
    proc = subprocess.Popen(
        pytest_argv(tests, copy),
        cwd=copy,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, _ = proc.communicate()
        return None, out[-2000:]
    except BaseException:
        _kill(proc)
        proc.communicate()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    return proc.returncode, out[-2000:]


#: The pytest runs under way, killed (with everything they started) when the tier is interrupted.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_mutant(copy: Path, m: Mutant, timeout_s: float = TIMEOUT_S) -> Outcome:
    """Apply ``m`` to the copy, run its tests, restore the file."""
    path = copy / m.path
    source = path.read_text(encoding="utf-8")
    begin = time.monotonic()
    try:
        path.write_text(mutated_text(source, m), encoding="utf-8")
    except MutantError as e:
        return Outcome(m, "error", 0.0, str(e))
    try:
        rc, out = run_tests(copy, m.tests, timeout_s)
    finally:
        path.write_text(source, encoding="utf-8")
    wall = time.monotonic() - begin
    if rc is None:
        return Outcome(m, "timeout", wall, f"its tests ran past {timeout_s:.0f} s")
    if rc in (1, 2):  # a test failed, or collection (an import) failed
        return Outcome(m, "killed", wall, _last_line(out))
    if rc == 0:
        return Outcome(m, "survived", wall, _last_line(out))
    return Outcome(m, "error", wall, f"pytest exited {rc}: {out[-800:]}")


def _last_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def control(copy: Path, tests: Sequence[str], timeout_s: float = TIMEOUT_S) -> str | None:
    """Run ``tests`` unmutated in the copy; None if they pass, else why (then no mutant of
    them can be judged: a failure would count as a kill)."""
    rc, out = run_tests(copy, tests, timeout_s)
    if rc == 0:
        return None
    what = "timed out" if rc is None else f"exited {rc}"
    return (
        f"the unmutated tests {' '.join(tests)} {what} in the copy, so their failures under a "
        f"mutant would prove nothing; run them in the checkout and fix them first:\n{out[-1500:]}"
    )


def run_all(
    mutants: Sequence[Mutant],
    *,
    jobs: int,
    on_outcome: Callable[[Outcome], None] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> list[Outcome]:
    """Run every mutant, ``jobs`` at a time (each job in its own copy), after a control run of
    every distinct test selection. Measuring mutants are run one at a time, after the others."""
    outcomes: list[Outcome] = []

    def report(o: Outcome) -> None:
        outcomes.append(o)
        if on_outcome is not None:
            on_outcome(o)

    quiet = [m for m in mutants if not m.measures]
    measuring = [m for m in mutants if m.measures]
    if quiet:
        _run_pool(quiet, max(1, jobs), report, timeout_s)
    if measuring:
        _run_pool(measuring, 1, report, timeout_s)
    order = {m.name: i for i, m in enumerate(mutants)}
    return sorted(outcomes, key=lambda o: order[o.mutant.name])


def _run_pool(
    mutants: Sequence[Mutant], jobs: int, report: Callable[[Outcome], None], timeout_s: float
) -> None:
    selections = list(dict.fromkeys(m.tests for m in mutants))
    queue = _Queue(list(mutants))
    failed_controls: dict[tuple[str, ...], str] = {}
    with copy_of_checkout() as first:
        # The controls in the first copy: every selection in one session (one start-up), and
        # only if that fails, one at a time to find which.
        union = list(dict.fromkeys(t for tests in selections for t in tests))
        if len(selections) < 2 or control(first, union, timeout_s) is not None:
            for tests in selections:
                why = control(first, tests, timeout_s)
                if why is not None:
                    failed_controls[tests] = why
        for m in mutants:
            check = failed_controls.get(m.tests)
            if check is not None:
                queue.drop(m)
                report(Outcome(m, "error", 0.0, check))

        def worker(copy: Path | None) -> None:
            if copy is None:
                with copy_of_checkout() as own:
                    worker(own)
                return
            for m in queue:
                report(run_mutant(copy, m, timeout_s))

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(worker, first if i == 0 else None) for i in range(jobs)]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                # Interrupted (or a worker failed): no new mutant, and the running ones end now,
                # so that the copies are removed and no process is left behind.
                queue.close()
                with _LIVE_LOCK:
                    for proc in list(_LIVE):
                        _kill(proc)
                raise


class _Queue:
    """The mutants left to run, taken one at a time by the workers."""

    def __init__(self, mutants: list[Mutant]) -> None:
        self._items = mutants
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._items.clear()

    def drop(self, m: Mutant) -> None:
        with self._lock:
            self._items.remove(m)

    def __iter__(self) -> Iterator[Mutant]:
        while True:
            with self._lock:
                if not self._items:
                    return
                m = self._items.pop(0)
            yield m


def score(outcomes: Iterable[Outcome]) -> tuple[int, int]:
    """(killed, judged): killed or timed out over every mutant that ran without error."""
    judged = [o for o in outcomes if o.status != "error"]
    return sum(o.status in ("killed", "timeout") for o in judged), len(judged)
