"""The samples file a side writes, and the readers of the figures in its lines.

Part of the worker (``duet_worker.py``), inside the measured environment: standard library
only, Python >= 3.8. The file is JSON lines (``docs/architecture.md``, "Samples file"): a
header, one line per iteration appended and flushed before the next barrier wait (a crash never
loses a measured iteration), then a ``done`` line or an ``error`` line. The error line of a
failed command carries its status as numbers (:class:`BenchmarkFailed`).

The figures of a sample line besides its duration: CPU time (from ``wait4``'s rusage for a
command), run-queue delay (``/proc/<tid>/schedstat``, :class:`RunQueue`, or for a command in
a cgroup with PSI the cgroup's ``cpu.pressure``, :class:`Pressure`) and involuntary context
switches (``getrusage``).
"""

from __future__ import annotations

import json
import os
import resource
from typing import IO, Any

SAMPLES_VERSION = 1


class BenchmarkFailed(Exception):
    """The benchmark failed (exit 3): the command exited non-zero or was killed, or could not
    be started, or a driver gave up.

    ``exit_status`` (the command exited with it, non-zero) or ``signal`` (a signal killed it)
    say how a command ended, as numbers: the error line carries them beside the text, for the
    runner to read without parsing the message.
    """

    def __init__(
        self, message: str, exit_status: int | None = None, signal: int | None = None
    ) -> None:
        super().__init__(message)
        self.exit_status = exit_status
        self.signal = signal

    @classmethod
    def of_command(cls, status: int, message: str) -> BenchmarkFailed:
        """A command that ended with wait status ``status``; ``message`` says where, after
        ``the command <how it ended>``."""
        if os.WIFSIGNALED(status):
            signal = os.WTERMSIG(status)
            return cls(f"the command was killed by signal {signal}{message}", signal=signal)
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
            return cls(f"the command exited with status {code}{message}", exit_status=code)
        return cls(f"the command ended with wait status {status}{message}")


def error_line(error: BaseException) -> dict[str, Any]:
    """The samples file's error line for ``error``: ``{"error": "Type: message"}``, and for a
    failed command ``"exit_status"`` or ``"signal"`` (integers)."""
    line: dict[str, Any] = {"error": error_text(error)}
    if isinstance(error, BenchmarkFailed):
        if error.exit_status is not None:
            line["exit_status"] = error.exit_status
        if error.signal is not None:
            line["signal"] = error.signal
    return line


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class Samples:
    """The samples file: JSON lines, flushed after every line."""

    def __init__(self, path: str, side: str) -> None:
        self._file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115
        self.write({"duet_samples": SAMPLES_VERSION, "side": side, "pid": os.getpid()})

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def sample(
        self,
        done: int,
        warmup: int,
        start_ns: int,
        end_ns: int,
        cpu_ns: int,
        runq_ns: int | None = None,
        nivcsw: int | None = None,
        cpu: int | None = None,
    ) -> None:
        """The line of iteration ``done`` (counting warm-up iterations); ``cpu`` is the CPU the
        side ran it on (:meth:`duet_barrier.Barrier.ran_on`), None when unknown."""
        in_warmup = done < warmup
        line: dict[str, Any] = {
            "phase": "warmup" if in_warmup else "measure",
            "index": done if in_warmup else done - warmup,
            "start_ns": start_ns,
            "duration_ns": end_ns - start_ns,
            "cpu_ns": cpu_ns,
        }
        if runq_ns is not None:
            line["runq_ns"] = runq_ns
        if nivcsw is not None:
            line["nivcsw"] = nivcsw
        if cpu is not None:
            line["cpu"] = cpu
        self.write(line)

    def close(self) -> None:
        self._file.close()


class _KeptOpen:
    """A kernel file opened once and re-read with ``pread`` (no open or path lookup inside an
    iteration); ``read_ns`` is None when the file could not be opened or read."""

    def __init__(self, path: str) -> None:
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None

    def _read(self, size: int) -> bytes | None:
        if self._fd is None:
            return None
        try:
            return os.pread(self._fd, size, 0)
        except OSError:
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RunQueue(_KeptOpen):
    """The run-queue delay of one task: ``/proc/<tid>/schedstat`` field 2 (nanoseconds spent
    runnable but waiting for a CPU), the file kept open and re-read."""

    def read_ns(self) -> int | None:
        """The delay so far, or None when the kernel does not provide it."""
        text = self._read(128)
        try:
            return None if text is None else int(text.split()[1])
        except (IndexError, ValueError):
            return None


class Pressure(_KeptOpen):
    """The CPU pressure of a cgroup (PSI, kernel documentation ``accounting/psi.rst``): the
    ``total`` of ``cpu.pressure``'s ``some`` line, the time in which at least one task of the
    cgroup was runnable but waiting for a CPU (microseconds, read as nanoseconds), the file
    kept open and re-read. The kernel brings the figure up to date when it is read."""

    def read_ns(self) -> int | None:
        """The waiting time so far, or None when the file cannot be read."""
        text = self._read(256)
        if text is None:
            return None
        for field in text.split(b"\n", 1)[0].split():
            if field.startswith(b"total="):
                try:
                    return int(field[6:]) * 1000
                except ValueError:
                    return None
        return None


def others_delay_ns(pressure_ns: int, wall_ns: int, cpu_ns: int) -> int:
    """The part of a side's CPU pressure that other processes caused, bounded from above.

    A side has one CPU. ``some`` pressure counts a task of the side waiting while the CPU ran
    *another* task of the same side too (a build's parallel jobs, a pipeline's stages), which
    is not interference. Another process can only have held the CPU while the side was not
    running on it, ``wall - cpu``: so the figure is ``min(pressure, wall - cpu)``, exact when
    the side had one runnable task at a time."""
    return max(0, min(pressure_ns, wall_ns - cpu_ns))


def task_run_delay_ns(pid: int) -> int | None:
    """The run-queue delay of process ``pid`` (its main thread) over its life, or None."""
    queue = RunQueue(f"/proc/{pid}/schedstat")
    try:
        return queue.read_ns()
    finally:
        queue.close()


def cpu_ns_from_rusage(usage: resource.struct_rusage) -> int:
    """User + system time of a rusage, in nanoseconds (of microsecond resolution)."""
    # ru_utime/ru_stime are float seconds with microsecond resolution.
    return round((usage.ru_utime + usage.ru_stime) * 1e6) * 1000


def involuntary_switches() -> int:
    """The worker process's involuntary context switches so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
