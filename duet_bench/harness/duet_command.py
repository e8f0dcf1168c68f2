"""The ``command`` kind: spawn the command in every iteration, under the barrier.

Part of the worker (``duet_worker.py``), inside the measured environment: standard library
only, Python >= 3.8.

- :func:`run_command`: the command is spawned (``posix_spawnp``) and reaped with ``wait4`` in
  every iteration; stdin and stdout are /dev/null, stderr is inherited (the runner captures
  it). A *simple* command (words and quotes only, :func:`direct_argv`) is spawned directly, as
  its own words; anything else through ``spec["shell"] -c`` (the ``done`` line says which:
  ``"spawn": "direct"`` or ``"shell"``). ``cpu_ns`` is the user + system time of the child and
  every descendant it reaped, from ``wait4`` (microsecond resolution). ``runq_ns``, with a
  ``spec["pressure"]`` file (the side's cgroup has PSI): the time in which any process of the
  side waited for a CPU, the programs a shell or build started included, bounded by ``wall -
  cpu`` (:func:`duet_samples.others_delay_ns`; microsecond resolution). Without one: the
  child's own run-queue delay (``/proc/<pid>/schedstat``, read after it exited and before it
  is reaped, with ``waitid(WNOWAIT)``), the program itself when spawned directly, the shell
  only when it went through one. The ``done`` line says which (``"runq": "pressure"`` or
  ``"task"``). ``nivcsw``: the involuntary context switches of the child and its reaped
  descendants.
- :func:`run_command_output` (spec ``"output"``, suite adapters, ``docs/adapters.md``): the
  same spawn, stdout to a file; the sample is what the benchmark tool printed (``duet_outputs.py``).

Crossover: the child is spawned after the barrier's wait moved the worker to the iteration's CPU
(``duet_barrier.Barrier.cross``), so it starts there (a child inherits its parent's affinity),
and so does everything it starts; a process the command left running is moved with the side at
the next wait when the side has a cgroup (its ``tasks``).

A command that exits non-zero, is killed, or cannot be started raises
:class:`duet_samples.BenchmarkFailed`, with its exit status or signal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees the file where it lies in the duet source tree
    from duet_bench.harness import duet_barrier, duet_outputs, duet_samples
else:
    import duet_barrier
    import duet_outputs
    import duet_samples

BenchmarkFailed = duet_samples.BenchmarkFailed

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


def _shell_argv(spec: dict[str, Any]) -> list[str]:
    return [spec["shell"], "-c", spec["command"]]


def _respawn(
    error: OSError,
    spec: dict[str, Any],
    argv: list[str],
    environ: dict[str, str],
    actions: list[tuple[Any, ...]],
    done: int,
) -> tuple[int, list[str]]:
    """After the spawn of ``argv`` failed with ``error``: a script without a ``#!`` line runs
    through the shell (as sh would run it), anything else is a failed benchmark. Returns the
    pid and the argv it was started with."""
    try:
        if error.errno != errno.ENOEXEC or argv[0] == spec["shell"]:
            raise error
        argv = _shell_argv(spec)
        return os.posix_spawnp(argv[0], argv, environ, file_actions=actions), argv
    except OSError as e:
        # Spawned directly, a missing program fails here (a shell would exit 127).
        raise BenchmarkFailed(
            f"the command could not be started in iteration {done} "
            f"({e.strerror or e}): {spec['command']}"
        ) from e


def _phase(done: int, warmup: int) -> str:
    return "warmup" if done < warmup else "measure"


def run_command(
    spec: dict[str, Any], barrier: duet_barrier.Barrier, samples: duet_samples.Samples
) -> dict[str, str]:
    """Every iteration of a ``command`` side; returns the ``done`` line's ``spawn`` (``direct``
    or ``shell``: a script without ``#!`` falls back to the shell on its first iteration) and
    ``runq`` (``pressure`` or ``task``: where ``runq_ns`` came from)."""
    argv = direct_argv(spec["command"]) or _shell_argv(spec)
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
    run_delay_ns = duet_samples.task_run_delay_ns
    others_delay_ns = duet_samples.others_delay_ns
    pressure = duet_samples.Pressure(spec["pressure"]) if spec.get("pressure") else None
    if pressure is not None and pressure.read_ns() is None:  # unreadable: the task's figure
        pressure.close()
        pressure = None
    try:
        for done in range(total):
            start_ns = barrier.wait(timeout_ns)
            waited_ns = pressure.read_ns() if pressure is not None else None
            try:
                pid = spawn(program, argv, environ, file_actions=actions)
            except OSError as e:
                pid, argv = _respawn(e, spec, argv, environ, actions, done)
                program = argv[0]
            # Wait for the exit without reaping: the child's schedstat is still readable.
            waitid(os.P_PID, pid, exited_kept)
            end_ns = clock()
            # Where the command really ran (it may have pinned itself), read before reaping.
            cpu = barrier.ran_on((pid,))
            waited_end_ns = pressure.read_ns() if pressure is not None else None
            runq_ns = run_delay_ns(pid) if pressure is None else None
            _, status, usage = wait4(pid, 0)
            if status != 0:
                raise BenchmarkFailed.of_command(
                    status,
                    f" in iteration {done} ({_phase(done, warmup)}): {spec['command']}",
                )
            cpu_ns = duet_samples.cpu_ns_from_rusage(usage)
            if waited_ns is not None and waited_end_ns is not None:
                runq_ns = others_delay_ns(waited_end_ns - waited_ns, end_ns - start_ns, cpu_ns)
            samples.sample(done, warmup, start_ns, end_ns, cpu_ns, runq_ns, usage.ru_nivcsw, cpu)
    finally:
        os.close(devnull)
        if pressure is not None:
            pressure.close()
    return {
        "spawn": "shell" if program == spec["shell"] else "direct",
        "runq": "task" if pressure is None else "pressure",
    }


def _read_output(
    output: str, out_path: str, status: int, process_cpu_ns: int, iteration: str, command: str
) -> tuple[int, int | None, dict[str, float], int | None]:
    """The tool's wall and CPU time per operation, its other figures and its operation count
    (when it reports one and no CPU time), from the invocation's stdout in ``out_path``;
    :class:`BenchmarkFailed` for a failed invocation or an output without its result."""
    with open(out_path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if status != 0:
        tail = text.strip()[-400:] or "(nothing on stdout; its stderr is above)"
        raise BenchmarkFailed.of_command(
            status, f" in {iteration}: {command}; its output ended: {tail}"
        )
    try:
        real_ns, cpu_ns = duet_outputs.parse(output, text, process_cpu_ns)
        figures = duet_outputs.figures(output, text)
        operations = duet_outputs.operations(output, text) if cpu_ns is None else None
    except duet_outputs.OutputError as e:
        raise BenchmarkFailed(f"{iteration} of {command}: {e}") from None
    return real_ns, cpu_ns, figures, operations


def _per_operation(
    usage: Any, operations: int, waited_ns: int | None, wall_ns: int, task_runq_ns: int | None
) -> tuple[int, int | None]:
    """The invocation's CPU time and run-queue delay per operation (its start-up included):
    the delay from the side's pressure file (``waited_ns``, less what the side's own
    processes explain) when it was read, else the task's own (``task_runq_ns``)."""
    process_cpu_ns = duet_samples.cpu_ns_from_rusage(usage)
    runq_ns = task_runq_ns
    if waited_ns is not None:
        runq_ns = duet_samples.others_delay_ns(waited_ns, wall_ns, process_cpu_ns)
    per_op = None if runq_ns is None else round(runq_ns / operations)
    return max(1, round(process_cpu_ns / operations)), per_op


def _tool_runq_ns(
    real_ns: int,
    cpu_ns: int | None,
    usage: Any,
    waited_ns: int | None,
    waited_end_ns: int | None,
    wall_ns: int,
    task_runq_ns: int | None,
) -> int | None:
    """The run-queue delay per operation of a tool that reports its own CPU time per operation
    (google-benchmark's ``cpu_time``): the invocation's share of its wall time spent waiting for
    a CPU (from the side's pressure file, else the task's own), applied to the tool's real
    time per operation, and never more than the operation's time off the CPU (``real - cpu``).
    An estimate (the wait is assumed spread evenly over the invocation), which lets the rule of
    ``auto`` tell a CPU-bound benchmark delayed by another process from one that sleeps. None
    without the tool's CPU time or the invocation's delay."""
    if cpu_ns is None or wall_ns <= 0:
        return None
    delay_ns = task_runq_ns
    if waited_ns is not None and waited_end_ns is not None:
        process_cpu_ns = duet_samples.cpu_ns_from_rusage(usage)
        delay_ns = duet_samples.others_delay_ns(waited_end_ns - waited_ns, wall_ns, process_cpu_ns)
    if delay_ns is None:
        return None
    return max(0, min(round(real_ns * min(1.0, delay_ns / wall_ns)), real_ns - cpu_ns))


def run_command_output(
    spec: dict[str, Any], barrier: duet_barrier.Barrier, samples: duet_samples.Samples
) -> dict[str, str]:
    """Every iteration of a suite adapter's side (spec ``"output"``): the command is one
    invocation of a benchmark tool for one benchmark; its stdout goes to a file (a pipe could
    fill and stall the tool mid-measurement), and the sample written is the tool's own time
    per operation (:mod:`duet_outputs`), so the start-up of the binary and the tool's warm-up
    and calibration are not in it.

    ``start_ns`` is the barrier's release; ``cpu_ns`` the tool's CPU time per operation, else
    the invocation's (``wait4``) over the calls its format fixes (``criterion-calls/N``) or the
    count it reports (go's ``-test.benchtime Nx``), start-up included, else left out;
    ``figures`` the other figures it printed by unit; ``runq_ns`` with a reported count
    (:func:`_per_operation`) or with the tool's own CPU time (:func:`_tool_runq_ns`, an
    estimate); never ``nivcsw`` (it covers the whole invocation). Returns the
    ``done`` line's ``spawn``, and ``runq`` when ``runq_ns`` was written.
    """
    argv = direct_argv(spec["command"]) or _shell_argv(spec)
    warmup = spec["warmup"]
    total = warmup + spec["iterations"]
    timeout_ns = spec["timeout_ns"]
    output = spec["output"]
    out_path = spec["samples"] + ".out"
    environ = dict(os.environ)
    clock = time.monotonic_ns
    pressure = duet_samples.Pressure(spec["pressure"]) if spec.get("pressure") else None
    if pressure is not None and pressure.read_ns() is None:  # unreadable: the task's figure
        pressure.close()
        pressure = None
    runq_written = False
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        for done in range(total):
            phase = _phase(done, warmup)
            out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, out_fd, 1)]
                start_ns = barrier.wait(timeout_ns)
                waited_ns = pressure.read_ns() if pressure is not None else None
                try:
                    pid = os.posix_spawnp(argv[0], argv, environ, file_actions=actions)
                except OSError as e:
                    pid, argv = _respawn(e, spec, argv, environ, actions, done)
            finally:
                os.close(out_fd)
            # Wait for the exit without reaping: the child's schedstat and the CPU it last ran
            # on are still readable.
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            end_ns = clock()
            waited_end_ns = pressure.read_ns() if pressure is not None else None
            runq_ns = duet_samples.task_run_delay_ns(pid) if pressure is None else None
            cpu = barrier.ran_on((pid,))
            _, status, usage = os.wait4(pid, 0)
            real_ns, cpu_ns, figures, operations = _read_output(
                output, out_path, status, duet_samples.cpu_ns_from_rusage(usage),
                f"iteration {done} ({phase})", spec["command"],
            )  # fmt: skip
            line: dict[str, Any] = {
                "phase": phase,
                "index": done if done < warmup else done - warmup,
                "start_ns": start_ns,
                "duration_ns": real_ns,
            }
            if operations is not None:
                waited = (
                    waited_end_ns - waited_ns
                    if waited_ns is not None and waited_end_ns is not None
                    else None
                )
                cpu_ns, runq_per_op = _per_operation(
                    usage, operations, waited, end_ns - start_ns, runq_ns
                )
            else:
                runq_per_op = _tool_runq_ns(
                    real_ns, cpu_ns, usage, waited_ns, waited_end_ns, end_ns - start_ns, runq_ns
                )
            if runq_per_op is not None:
                line["runq_ns"] = runq_per_op
                runq_written = True
            if cpu_ns is not None:
                line["cpu_ns"] = cpu_ns
            if cpu is not None:
                line["cpu"] = cpu
            if figures:
                line["figures"] = figures
            samples.write(line)
    finally:
        os.close(devnull)
        if pressure is not None:
            pressure.close()
        with contextlib.suppress(OSError):
            os.unlink(out_path)
    done_line = {"spawn": "shell" if argv[0] == spec["shell"] else "direct"}
    if runq_written:
        done_line["runq"] = "task" if pressure is None else "pressure"
    return done_line
