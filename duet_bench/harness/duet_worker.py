"""The duet worker: runs one side of a run for ``command`` and ``python`` benchmarks.

Executed by path with the version's own interpreter (Python >= 3.8, standard library only, never
imports ``duet``)::

    python duet_worker.py SPEC.json              # a run: warmup + iterations, at the barrier
    python duet_worker.py --calibrate SPEC.json  # prints {"inner_loops": N, "per_call_ns": X}

The worker spec and the samples file are described in ``docs/architecture.md``; the barrier in
``docs/barrier-protocol.md``. Every iteration starts right after leaving the barrier
(``start_ns``), and its line is appended and flushed before the next wait, so a crash never loses
a measured iteration.

- ``command``: the command is spawned (``posix_spawnp``) and reaped with ``wait4`` in every
  iteration; stdin and stdout are /dev/null, stderr is inherited (the runner captures it). A
  *simple* command (words and quotes only: no operators, redirections, expansions, globs or
  variable assignments) is spawned directly, as its own words; anything else through
  ``spec["shell"] -c`` (the ``done`` line says which: ``"spawn": "direct"`` or ``"shell"``).
  ``cpu_ns`` is the user + system time of the child and every descendant it reaped, from
  ``wait4`` (microsecond resolution); ``runq_ns`` is the child's own run-queue delay
  (``/proc/<pid>/schedstat``, read after it exited and before it is reaped, with
  ``waitid(WNOWAIT)``): the program itself when spawned directly, the shell only when it went
  through one (the programs the shell starts are not counted); ``nivcsw`` the involuntary
  context switches of the child and its reaped descendants.
- ``command`` with ``"output"`` (suite adapters, ``docs/adapters.md``): the same spawn, stdout
  to a file; the sample is what the harness printed (``duet_outputs.py``): its real time per
  operation as ``duration_ns``, its CPU time per operation as ``cpu_ns`` when it has one, no
  ``runq_ns``/``nivcsw`` (they would cover the whole invocation, not the operations).
- ``python``: ``spec["sys_path"]`` is prepended to ``sys.path``, ``callable`` (``module:function``,
  the function may be a dotted attribute path) imported, ``setup`` called once before the first
  wait (its value, unless None, is passed to every call), then the callable is called
  ``inner_loops`` times per iteration. ``cpu_ns`` is the worker's process CPU time over the
  iteration (every thread); ``runq_ns`` the run-queue delay of the calling thread
  (``/proc/thread-self/schedstat``); ``nivcsw`` the process's involuntary context switches.

- ``python`` with a *driver*: a callable marked ``duet_driver = True`` (``duet_pytest:run``, which
  runs one pytest-benchmark test) is called once with a ``measure`` function instead of being
  timed itself; it calls ``measure(function, args, kwargs, setup, teardown)`` once, and that runs
  the warm-up and measured iterations of ``function`` under the barrier exactly like a plain
  callable (``inner_loops`` calls per iteration) and returns the last call's result. ``setup``,
  when given, is called before each wait, once per call, and returns that call's ``(args,
  kwargs)``; ``teardown(*args, **kwargs)`` runs after the clock stopped. Whatever the driver
  does around the call (pytest's fixtures) stays outside the measured iterations.

``runq_ns`` and ``nivcsw`` are left out of a sample line when the kernel does not provide them
(no ``/proc/<pid>/schedstat`` without ``CONFIG_SCHED_INFO``).

Exit codes (the runner's contract):

0. every iteration done, ``{"done": true, ...}`` written
2. usage: bad arguments, an invalid spec, a samples file that cannot be written
3. the benchmark failed: the command exited non-zero or was killed by a signal, or the
   callable, its setup or its import raised (the worker aborts the barrier, reason
   ``PARTY_FAILED``, so the other side stops at once)
4. a barrier wait timed out (the worker aborts the barrier, reason ``PARTY_TIMEOUT``)
5. the barrier was aborted by someone else (the orchestrator or the other side)
6. the barrier file cannot be used (missing, malformed, another protocol version, slot taken)

Every failure writes ``{"error": "Type: message"}`` to the samples file when it is open, and
the traceback or the message to stderr.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import itertools
import json
import os
import resource
import shlex
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_TIMEOUT = 4
EXIT_ABORTED = 5
EXIT_BARRIER = 6

SPEC_PROTOCOL = 1
SAMPLES_VERSION = 1
DEFAULT_TARGET_ITERATION_NS = 10_000_000
DEFAULT_MAX_INNER_LOOPS = 10_000_000


def _harness_directory_last() -> None:
    """Put this file's directory at the END of sys.path, for ``import duet_barrier``.

    Run as a script, Python puts the script's directory first on sys.path, where it would shadow
    the benchmarked code's own modules.
    """
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == here:
        del sys.path[0]
    if here not in sys.path:
        sys.path.append(here)


_harness_directory_last()

if TYPE_CHECKING:  # the type checker sees the file where it lies in the duet source tree
    from duet_bench.harness import duet_barrier, duet_outputs
else:
    import duet_barrier
    import duet_outputs


class SpecError(Exception):
    """The worker spec is not valid (exit 2)."""


class BenchmarkFailed(Exception):
    """The command failed (exit 3)."""


# -- the spec ----------------------------------------------------------------------------------


def _require(spec: dict[str, Any], key: str, kind: type, what: str) -> Any:
    if key not in spec:
        raise SpecError(f"the worker spec has no {key!r} ({what})")
    value = spec[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpecError(f"the worker spec's {key!r} must be an integer ({what}), got {value!r}")
    if not isinstance(value, kind):
        raise SpecError(
            f"the worker spec's {key!r} must be a {kind.__name__} ({what}), got {value!r}"
        )
    return value


def _check_callable_name(spec: dict[str, Any], key: str) -> None:
    name = spec.get(key)
    if name is None and key == "setup":
        return
    if not isinstance(name, str) or name.count(":") != 1 or not all(name.split(":")):
        raise SpecError(f"the worker spec's {key!r} must be 'module:function', got {name!r}")


def validate_spec(spec: Any, calibrate: bool = False) -> dict[str, Any]:
    """Check a parsed worker spec; raise :class:`SpecError` naming the first problem."""
    if not isinstance(spec, dict):
        raise SpecError("the worker spec must be a JSON object")
    protocol = _require(spec, "protocol", int, "the spec version")
    if protocol != SPEC_PROTOCOL:
        raise SpecError(
            f"worker spec protocol {protocol}, this worker speaks {SPEC_PROTOCOL}: the runner "
            "and the harness come from different duet releases"
        )
    kind = _require(spec, "kind", str, "command or python")
    if kind not in ("command", "python"):
        raise SpecError(f"the worker spec's 'kind' must be 'command' or 'python', got {kind!r}")
    if kind == "python" or calibrate:
        if kind != "python":
            raise SpecError("calibration applies to python benchmarks only (a command runs once)")
        _check_callable_name(spec, "callable")
        _check_callable_name(spec, "setup")
        sys_path = spec.get("sys_path", [])
        if not isinstance(sys_path, list) or not all(isinstance(p, str) for p in sys_path):
            raise SpecError(f"the worker spec's 'sys_path' must be a list of strings: {sys_path!r}")
        inner_loops = spec.get("inner_loops", 1)
        if isinstance(inner_loops, bool) or not isinstance(inner_loops, int) or inner_loops < 1:
            raise SpecError(f"'inner_loops' must be a positive integer, got {inner_loops!r}")
    if calibrate:
        return spec
    _require(spec, "side", str, "baseline or candidate")
    slot = _require(spec, "slot", int, "the barrier slot")
    _require(spec, "barrier", str, "the barrier file")
    warmup = _require(spec, "warmup", int, "warmup iterations")
    iterations = _require(spec, "iterations", int, "measured iterations")
    timeout_ns = _require(spec, "timeout_ns", int, "the barrier timeout")
    _require(spec, "samples", str, "the samples file")
    if slot < 0 or warmup < 0 or iterations < 0 or timeout_ns <= 0:
        raise SpecError(
            "slot, warmup and iterations must be >= 0 and timeout_ns > 0, got "
            f"slot={slot} warmup={warmup} iterations={iterations} timeout_ns={timeout_ns}"
        )
    if kind == "command":
        _require(spec, "command", str, "the shell command")
        shell = spec.setdefault("shell", "/bin/sh")
        if not isinstance(shell, str) or not shell:
            raise SpecError(f"the worker spec's 'shell' must be a path, got {shell!r}")
    _check_output(spec)
    return spec


def _check_output(spec: dict[str, Any]) -> None:
    """``output`` (suite adapters): the harness's output format the sample is read from."""
    output = spec.get("output")
    if output is None:
        return
    if spec["kind"] != "command":
        raise SpecError(f"'output' applies to command sides only, this is a {spec['kind']} side")
    if output not in duet_outputs.FORMATS:
        raise SpecError(
            f"the worker spec's 'output' must be one of {', '.join(duet_outputs.FORMATS)}, "
            f"got {output!r}"
        )


def load_spec(path: str, calibrate: bool = False) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read the worker spec {path}: {e}") from e
    return validate_spec(spec, calibrate)


# -- the work ----------------------------------------------------------------------------------


def _resolve(name: str) -> Callable[..., Any]:
    module_name, _, attribute = name.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{name} is not callable ({type(target).__name__})")
    return target  # type: ignore[no-any-return]


def prepare_python(spec: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Import the callable (and run the setup once); return the function and its arguments."""
    sys.path[0:0] = spec.get("sys_path", [])
    function = _resolve(spec["callable"])
    args: tuple[Any, ...] = ()
    if spec.get("setup"):
        value = _resolve(spec["setup"])()
        if value is not None:
            args = (value,)
    return function, args


#: Characters that make a command more than words and quotes when they stand outside quotes
#: (operators, redirections, expansions, globs, comments, line breaks): the shell is needed.
_SHELL_SYNTAX = frozenset("|&;<>()$`\\*?[]{}~#!\n\r")
#: Inside double quotes the shell still expands these.
_DOUBLE_QUOTED_SYNTAX = frozenset("$`\\")


def _needs_shell(command: str) -> bool:
    quote = ""
    for c in command:
        if quote == "'":
            quote = "" if c == "'" else quote
        elif quote == '"':
            if c in _DOUBLE_QUOTED_SYNTAX:
                return True
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in _SHELL_SYNTAX:
            return True
    return bool(quote)  # an unterminated quote: let the shell say what is wrong


#: Builtins and keywords of POSIX sh that are not programs on PATH (or must not be run as one).
_SHELL_WORDS = frozenset(
    [
        ".",
        ":",
        "alias",
        "bg",
        "break",
        "case",
        "cd",
        "command",
        "continue",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "eval",
        "exec",
        "exit",
        "export",
        "fc",
        "fg",
        "fi",
        "for",
        "getopts",
        "hash",
        "if",
        "jobs",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "source",
        "then",
        "times",
        "trap",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "until",
        "wait",
        "while",
    ]
)


def direct_argv(command: str) -> list[str] | None:
    """The words of a simple command, to be spawned without a shell; None when it needs one.

    A shell would add its own start-up (about a millisecond) to every measured iteration, the
    same on both sides, which pulls the ratio toward 1; and the run-queue delay of the program
    is only readable when the program is the process we spawned.
    """
    if not command.strip() or _needs_shell(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or "=" in words[0] or words[0] in _SHELL_WORDS:
        # VAR=value prog, a builtin (exit, cd, ...) or a keyword: only the shell understands it.
        return None
    if "/" not in words[0] and shutil.which(words[0]) is None:
        # Not found: the shell reports it the usual way (exit status 127).
        return None
    return words


class RunQueue:
    """The run-queue delay of one task: ``/proc/<tid>/schedstat`` field 2 (nanoseconds spent
    runnable but waiting for a CPU), the file kept open and re-read."""

    def __init__(self, path: str) -> None:
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None

    def read_ns(self) -> int | None:
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 128, 0).split()[1])
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def task_run_delay_ns(pid: int) -> int | None:
    """The run-queue delay of process ``pid`` (its main thread) over its life, or None."""
    queue = RunQueue(f"/proc/{pid}/schedstat")
    try:
        return queue.read_ns()
    finally:
        queue.close()


def _cpu_ns_from_rusage(usage: resource.struct_rusage) -> int:
    # ru_utime/ru_stime are float seconds with microsecond resolution.
    return round((usage.ru_utime + usage.ru_stime) * 1e6) * 1000


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    if os.WIFEXITED(status):
        return f"exited with status {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"


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
    ) -> None:
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
        self.write(line)

    def close(self) -> None:
        self._file.close()


def run_command(spec: dict[str, Any], barrier: duet_barrier.Barrier, samples: Samples) -> str:
    """Every iteration of a ``command`` side; returns how it was spawned, ``direct`` or
    ``shell`` (a script without ``#!`` falls back to the shell on its first iteration)."""
    argv = direct_argv(spec["command"]) or [spec["shell"], "-c", spec["command"]]
    program = argv[0]
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    environ = dict(os.environ)
    devnull = os.open(os.devnull, os.O_RDWR)
    # stdin and stdout to /dev/null, stderr inherited (the runner captures it).
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1)]
    spawn = os.posix_spawnp
    wait4 = os.wait4
    waitid = os.waitid
    exited_kept = os.WEXITED | os.WNOWAIT
    clock = time.monotonic_ns
    try:
        for done in range(total):
            start_ns = barrier.wait(timeout_ns)
            try:
                try:
                    pid = spawn(program, argv, environ, file_actions=actions)
                except OSError as e:
                    if e.errno != errno.ENOEXEC or program == spec["shell"]:
                        raise
                    # A script without a #! line: only a shell runs it (as sh would).
                    argv = [spec["shell"], "-c", spec["command"]]
                    program = argv[0]
                    pid = spawn(program, argv, environ, file_actions=actions)
            except OSError as e:
                # Spawned directly, a missing program fails here (a shell would exit 127).
                raise BenchmarkFailed(
                    f"the command could not be started in iteration {done} "
                    f"({e.strerror or e}): {spec['command']}"
                ) from e
            # Wait for the exit without reaping: the child's schedstat is still readable.
            waitid(os.P_PID, pid, exited_kept)
            end_ns = clock()
            runq_ns = task_run_delay_ns(pid)
            _, status, usage = wait4(pid, 0)
            if status != 0:
                raise BenchmarkFailed(
                    f"the command {_describe_status(status)} in iteration {done} "
                    f"({'warmup' if done < warmup else 'measure'}): {spec['command']}"
                )
            samples.sample(
                done,
                warmup,
                start_ns,
                end_ns,
                _cpu_ns_from_rusage(usage),
                runq_ns,
                usage.ru_nivcsw,
            )
    finally:
        os.close(devnull)
    return "shell" if program == spec["shell"] else "direct"


def run_command_output(
    spec: dict[str, Any], barrier: duet_barrier.Barrier, samples: Samples
) -> str:
    """Every iteration of a suite adapter's side (spec ``"output"``): the command is one
    invocation of a benchmark harness for one benchmark; its stdout goes to a file (a pipe
    could fill and stall the harness mid-measurement), and the sample written is the
    harness's own time per operation (:mod:`duet_outputs`), so the start-up of the binary and
    the harness's warm-up and calibration are not in it.

    ``start_ns`` is still the moment the barrier released both sides; ``cpu_ns`` is the
    harness's CPU time per operation when it reports one, else left out. ``runq_ns`` and
    ``nivcsw`` are left out: the process's figures cover the whole invocation (start-up,
    warm-up, calibration), not the operations the sample is the mean of, and a run-queue delay
    subtracted from a per-operation time would be meaningless. Returns ``direct`` or
    ``shell``, as :func:`run_command`.
    """
    argv = direct_argv(spec["command"]) or [spec["shell"], "-c", spec["command"]]
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    output = spec["output"]
    out_path = spec["samples"] + ".out"
    environ = dict(os.environ)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        for done in range(total):
            phase = "warmup" if done < warmup else "measure"
            out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, out_fd, 1)]
                start_ns = barrier.wait(timeout_ns)
                pid, argv = _spawn_output(spec, argv, environ, actions, done)
            finally:
                os.close(out_fd)
            _, status, _ = os.wait4(pid, 0)
            with open(out_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if status != 0:
                tail = text.strip()[-400:] or "(nothing on stdout; its stderr is above)"
                raise BenchmarkFailed(
                    f"the command {_describe_status(status)} in iteration {done} ({phase}): "
                    f"{spec['command']}; its output ended: {tail}"
                )
            try:
                real_ns, cpu_ns = duet_outputs.parse(output, text)
            except duet_outputs.OutputError as e:
                raise BenchmarkFailed(
                    f"iteration {done} ({phase}) of {spec['command']}: {e}"
                ) from None
            line: dict[str, Any] = {
                "phase": phase,
                "index": done if done < warmup else done - warmup,
                "start_ns": start_ns,
                "duration_ns": real_ns,
            }
            if cpu_ns is not None:
                line["cpu_ns"] = cpu_ns
            samples.write(line)
    finally:
        os.close(devnull)
        with contextlib.suppress(OSError):
            os.unlink(out_path)
    return "shell" if argv[0] == spec["shell"] else "direct"


def _spawn_output(
    spec: dict[str, Any],
    argv: list[str],
    environ: dict[str, str],
    actions: list[tuple[Any, ...]],
    done: int,
) -> tuple[int, list[str]]:
    try:
        try:
            return os.posix_spawnp(argv[0], argv, environ, file_actions=actions), argv
        except OSError as e:
            if e.errno != errno.ENOEXEC or argv[0] == spec["shell"]:
                raise
            # A script without a #! line: only a shell runs it (as sh would).
            argv = [spec["shell"], "-c", spec["command"]]
            return os.posix_spawnp(argv[0], argv, environ, file_actions=actions), argv
    except OSError as e:
        raise BenchmarkFailed(
            f"the command could not be started in iteration {done} "
            f"({e.strerror or e}): {spec['command']}"
        ) from e


def run_python(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: Samples,
    function: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    inner_loops = spec.get("inner_loops", 1)
    repeat = itertools.repeat
    clock = time.monotonic_ns
    cpu_clock = time.process_time_ns
    queue = RunQueue("/proc/thread-self/schedstat")
    switches = _involuntary_switches
    try:
        for done in range(total):
            start_ns = barrier.wait(timeout_ns)
            cpu_start = cpu_clock()
            runq_start = queue.read_ns()
            nivcsw_start = switches()
            if args:
                for _ in repeat(None, inner_loops):
                    function(*args)
            else:
                for _ in repeat(None, inner_loops):
                    function()
            end_ns = clock()
            cpu_ns = cpu_clock() - cpu_start
            runq_end = queue.read_ns()
            runq_ns = (
                runq_end - runq_start if runq_end is not None and runq_start is not None else None
            )
            samples.sample(
                done, warmup, start_ns, end_ns, cpu_ns, runq_ns, switches() - nivcsw_start
            )
    finally:
        queue.close()


def _involuntary_switches() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


# -- drivers -----------------------------------------------------------------------------------
#
# A driver is a callable that finds the benchmarked function itself (duet_pytest runs a pytest
# test, whose ``benchmark`` fixture supplies it) and hands it to ``measure``. The driver's own
# work (starting pytest, the test's fixtures) happens before the first and after the last
# iteration; only the calls inside ``measure`` are timed.

#: The attribute that marks a callable as a driver.
DRIVER_ATTRIBUTE = "duet_driver"


def is_driver(function: Callable[..., Any]) -> bool:
    return getattr(function, DRIVER_ATTRIBUTE, False) is True


class _Measured:
    """What the driver's ``measure`` saw: how often it was called, its first error."""

    def __init__(self) -> None:
        self.calls = 0
        self.error: BaseException | None = None


def _drive(
    driver: Callable[..., Any], args: tuple[Any, ...], measure: Callable[..., Any], state: _Measured
) -> None:
    """Call the driver with ``measure``; raise what went wrong, the error inside ``measure``
    first (the driver's own code, pytest, catches it and reports a failed test: the worker
    must still exit with the code of a timeout, an abort or a failing benchmark)."""

    def guarded(*a: Any, **k: Any) -> Any:
        if state.calls:
            raise RuntimeError(
                "the benchmark was handed over twice in one run (pytest-benchmark's fixture "
                "can be used once per test too): call benchmark(...) once per test"
            )
        state.calls += 1
        try:
            return measure(*a, **k)
        except BaseException as e:
            state.error = e
            raise

    try:
        driver(guarded, *args)
    except BaseException as e:
        if state.error is not None:
            raise state.error from None
        if isinstance(e, Exception):
            # The driver's exceptions are explanations (pytest's own report, with the
            # traceback, is already on stderr): a failed benchmark, without a second traceback.
            raise BenchmarkFailed(str(e)) from e
        raise
    if state.error is not None:
        raise state.error
    if not state.calls:
        raise BenchmarkFailed(
            f"the driver {getattr(driver, '__qualname__', driver)} returned without handing "
            "a function over to measure"
        )


def _arguments(
    setup: Callable[[], Any] | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if setup is None:
        return args, kwargs
    made = setup()
    if not (isinstance(made, tuple) and len(made) == 2):
        raise TypeError(f"the setup must return (args, kwargs), got {made!r}")
    return tuple(made[0]), dict(made[1])


def run_driver(
    spec: dict[str, Any],
    barrier: duet_barrier.Barrier,
    samples: Samples,
    driver: Callable[..., Any],
    args: tuple[Any, ...],
) -> int:
    """Every iteration of a driver's function, under the barrier; returns the calls made per
    iteration."""
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    inner_loops: int = spec.get("inner_loops", 1)
    state = _Measured()

    def measure(
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        repeat = itertools.repeat
        clock = time.monotonic_ns
        cpu_clock = time.process_time_ns
        queue = RunQueue("/proc/thread-self/schedstat")
        switches = _involuntary_switches
        result = None
        try:
            for done in range(total):
                # The untimed setup of every call of this iteration, before the wait.
                calls = (
                    [_arguments(setup, args, kwargs) for _ in repeat(None, inner_loops)]
                    if setup is not None
                    else None
                )
                start_ns = barrier.wait(timeout_ns)
                cpu_start = cpu_clock()
                runq_start = queue.read_ns()
                nivcsw_start = switches()
                if calls is not None:
                    for call_args, call_kwargs in calls:
                        result = function(*call_args, **call_kwargs)
                elif kwargs:
                    for _ in repeat(None, inner_loops):
                        result = function(*args, **kwargs)
                elif args:
                    for _ in repeat(None, inner_loops):
                        result = function(*args)
                else:
                    for _ in repeat(None, inner_loops):
                        result = function()
                end_ns = clock()
                cpu_ns = cpu_clock() - cpu_start
                runq_end = queue.read_ns()
                runq_ns = (
                    runq_end - runq_start
                    if runq_end is not None and runq_start is not None
                    else None
                )
                samples.sample(
                    done, warmup, start_ns, end_ns, cpu_ns, runq_ns, switches() - nivcsw_start
                )
                if teardown is not None:
                    for call_args, call_kwargs in calls or [(args, kwargs)]:
                        teardown(*call_args, **call_kwargs)
        finally:
            queue.close()
        return result

    _drive(driver, args, measure, state)
    return inner_loops


def calibrate_driver(
    driver: Callable[..., Any], args: tuple[Any, ...], target: int, cap: int
) -> tuple[int, int]:
    """The calls per iteration of a driver's function, and the time they took. A function
    with a setup gets one call per iteration (as pytest-benchmark does: the setup prepares one
    call's input)."""
    state = _Measured()
    found: list[int] = []

    def measure(
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
    ) -> Any:
        call_args, call_kwargs = _arguments(setup, args, kwargs or {})
        start = time.perf_counter_ns()
        result = function(*call_args, **call_kwargs)
        elapsed = time.perf_counter_ns() - start
        if teardown is not None:
            teardown(*call_args, **call_kwargs)
        if setup is not None:
            found[:] = [1, elapsed]
        else:

            def call() -> Any:
                return function(*call_args, **call_kwargs)

            found[:] = _calibrate_calls(call, (), target, cap)
        return result

    _drive(driver, args, measure, state)
    return found[0], found[1]


# -- entry points ------------------------------------------------------------------------------


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def run(spec_path: str) -> int:
    """One side of one run; returns the exit code."""
    samples: Samples | None = None
    try:
        try:
            spec = load_spec(spec_path)
        except SpecError as e:
            raw: Any = None
            try:
                with open(spec_path, encoding="utf-8") as f:
                    raw = json.load(f)
            except (OSError, ValueError):
                pass
            if isinstance(raw, dict) and isinstance(raw.get("samples"), str):
                try:
                    samples = Samples(raw["samples"], str(raw.get("side", "unknown")))
                    samples.write({"error": _error_text(e)})
                except OSError:
                    pass
            print(f"duet_worker: {e}", file=sys.stderr)
            return EXIT_USAGE
        try:
            samples = Samples(spec["samples"], spec["side"])
        except OSError as e:
            print(f"duet_worker: cannot write the samples file: {e}", file=sys.stderr)
            return EXIT_USAGE
        return _run_attached(spec, samples)
    finally:
        if samples is not None:
            samples.close()


def _run_attached(spec: dict[str, Any], samples: Samples) -> int:
    try:
        barrier = duet_barrier.attach(spec["barrier"], spec["slot"])
    except (duet_barrier.BarrierError, OSError) as e:
        samples.write({"error": _error_text(e)})
        print(f"duet_worker: cannot use the barrier: {e}", file=sys.stderr)
        return EXIT_BARRIER
    try:
        done: dict[str, Any] = {"done": True}
        if spec["kind"] == "command" and spec.get("output"):
            done.update(inner_loops=1, spawn=run_command_output(spec, barrier, samples))
        elif spec["kind"] == "command":
            done.update(inner_loops=1, spawn=run_command(spec, barrier, samples))
        else:
            function, args = prepare_python(spec)
            if is_driver(function):
                done["inner_loops"] = run_driver(spec, barrier, samples, function, args)
            else:
                run_python(spec, barrier, samples, function, args)
                done["inner_loops"] = spec.get("inner_loops", 1)
        samples.write(done)
        return EXIT_OK
    except duet_barrier.BarrierTimeout as e:
        barrier.abort(duet_barrier.REASON_PARTY_TIMEOUT)
        return _failed(samples, e, EXIT_TIMEOUT, with_traceback=False)
    except duet_barrier.BarrierAborted as e:
        return _failed(samples, e, EXIT_ABORTED, with_traceback=False)
    except duet_barrier.BarrierError as e:
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_BARRIER, with_traceback=False)
    except BenchmarkFailed as e:
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_FAILED, with_traceback=False)
    except (Exception, SystemExit) as e:
        # The benchmarked code raised (or called sys.exit): a failure of the benchmark.
        barrier.abort(duet_barrier.REASON_PARTY_FAILED)
        return _failed(samples, e, EXIT_FAILED, with_traceback=True)
    except KeyboardInterrupt as e:
        barrier.abort(duet_barrier.REASON_ORCHESTRATOR)
        _failed(samples, e, EXIT_FAILED, with_traceback=False)
        raise
    finally:
        barrier.close()


def _failed(samples: Samples, error: BaseException, code: int, with_traceback: bool) -> int:
    with contextlib.suppress(OSError, ValueError):
        samples.write({"error": _error_text(error)})
    if with_traceback:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    else:
        print(f"duet_worker: {_error_text(error)}", file=sys.stderr)
    return code


def _time_calls(function: Callable[..., Any], args: tuple[Any, ...], n: int) -> int:
    repeat = itertools.repeat
    start = time.perf_counter_ns()
    if args:
        for _ in repeat(None, n):
            function(*args)
    else:
        for _ in repeat(None, n):
            function()
    return time.perf_counter_ns() - start


def _calibrate_calls(
    function: Callable[..., Any], args: tuple[Any, ...], target: int, cap: int
) -> tuple[int, int]:
    """The calls per iteration and the time they took (see :func:`calibrate`)."""
    _time_calls(function, args, 1)  # first call: imports, caches, lazy initialisation
    n = 1
    while True:
        elapsed = _time_calls(function, args, n)
        if elapsed >= target or n >= cap:
            return n, elapsed
        # Aim 10% past the target from the rate seen so far; grow at most 100x a round so
        # a noisy tiny first timing cannot overshoot wildly.
        wanted = n * target * 1.1 / max(elapsed, 1)
        n = int(min(cap, n * 100, max(n + 1, wanted)))


def calibrate(spec_path: str) -> int:
    """Print {"inner_loops": N, "per_call_ns": X}: the smallest N found whose loop takes at
    least the target iteration time (spec "target_iteration_ns", 10 ms by default), capped at
    "max_inner_loops" (10 million by default)."""
    try:
        spec = load_spec(spec_path, calibrate=True)
        target = spec.get("target_iteration_ns", DEFAULT_TARGET_ITERATION_NS)
        cap = spec.get("max_inner_loops", DEFAULT_MAX_INNER_LOOPS)
        for key, value in (("target_iteration_ns", target), ("max_inner_loops", cap)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"{key!r} must be a positive integer, got {value!r}")
    except SpecError as e:
        print(json.dumps({"error": _error_text(e)}))
        print(f"duet_worker: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        function, args = prepare_python(spec)
        if is_driver(function):
            n, elapsed = calibrate_driver(function, args, target, cap)
        else:
            n, elapsed = _calibrate_calls(function, args, target, cap)
    except (Exception, SystemExit) as e:
        print(json.dumps({"error": _error_text(e)}))
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps({"inner_loops": n, "per_call_ns": elapsed / n}))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--calibrate":
        return calibrate(args[1])
    if len(args) == 1 and not args[0].startswith("-"):
        return run(args[0])
    print("usage: duet_worker.py SPEC.json | duet_worker.py --calibrate SPEC.json", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
