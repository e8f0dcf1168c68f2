"""How SIGINT, SIGTERM and SIGHUP stop duet: one home for the handler and its safety net.

The handler raises :class:`duet_bench.errors.Interrupted`, so cleanup runs on the way out, the
results file says where duet stopped and the exit code is 128 + the signal (130, 143, 129).

CPython runs a signal's Python handler in the main thread at the next bytecode it executes,
whatever that is. When that is a weakref callback, a ``__del__`` or an at-fork hook (importlib
drops a module lock through a weakref callback during any import), the exception the handler
raises is printed as "Exception ignored in ..." and dropped, and the orchestrator would go on
measuring as if nothing had been asked (seen in the fault tests: a SIGTERM lost this way left duet
running until its 60 s watchdog). So the handler also records the signal, and the loops duet
spends its time in (the supervision of a run, ``duet_bench.runner.supervise``) call
:func:`raise_if_pending`, which raises it again. Forks hold the signals instead
(``duet_bench.isolation.spawn.signals_held``). The dropped exception is not printed either
(:func:`sys.unraisablehook`): CPython's "Exception ignored in <function Popen.__del__>" and its
traceback reached the user's terminal before "duet: error: interrupted by SIGHUP" (seen once in
the fault tests, a SIGHUP landing while a ``Popen`` was collected).

Once duet is stopping, a second signal (Ctrl-C then the CI runner's SIGTERM, milliseconds apart)
does not raise: raised in the middle of the clean-up, it aborted it and left cgroups, a worker
and a results file without its ``stopped`` reason. It is recorded (:func:`deferred`) and the
clean-up goes on; the exit code is the first signal's. SIGKILL remains the way to stop duet at
once (the next duet removes what it leaves).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from duet_bench.errors import Interrupted

__all__ = ["SIGNALS", "deferred", "hold_until_exit", "install", "raise_if_pending"]

#: The signals that stop duet with :class:`Interrupted`.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_pending: int | None = None
#: The signal duet is stopping for, from the first one on.
_stopping: int | None = None
#: Signals received while stopping, not raised.
_deferred: list[int] = []
#: What prints an exception CPython drops, before :func:`install` (the default, or pytest's).
_print_unraisable = sys.unraisablehook


def _handler(signum: int, _frame: FrameType | None) -> None:
    global _pending, _stopping
    if _stopping is not None:
        _deferred.append(signum)  # already stopping: let the clean-up finish
        return
    _stopping = _pending = signum
    raise Interrupted(signum)


def hold_until_exit() -> None:
    """Block :data:`SIGNALS` for the rest of this process: called on the way out after an
    interrupt. Interpreter shutdown restores their default action, so a second signal arriving
    then would kill duet with it (exit -15 instead of the first signal's 130)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def deferred() -> tuple[int, ...]:
    """The signals received while duet was already stopping (not raised)."""
    return tuple(_deferred)


def install() -> None:
    """Make :data:`SIGNALS` raise :class:`Interrupted` in the main thread (and forget a signal
    an earlier command in this process already stopped for)."""
    global _pending, _stopping
    _pending = _stopping = None
    _deferred.clear()
    global _print_unraisable
    if sys.unraisablehook is not _quiet_when_interrupted:
        _print_unraisable = sys.unraisablehook
        sys.unraisablehook = _quiet_when_interrupted
    for signum in SIGNALS:
        signal.signal(signum, _handler)


def _quiet_when_interrupted(unraisable: sys.UnraisableHookArgs) -> None:
    """An :class:`Interrupted` that CPython dropped (raised in a ``__del__``, a weakref callback
    or an at-fork hook) is not printed: the signal is still pending and
    :func:`raise_if_pending` raises it where duet can stop. Anything else is printed as usual."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    _print_unraisable(unraisable)


def raise_if_pending() -> None:
    """Raise the :class:`Interrupted` of a signal received since the last call, once: the
    handler's own exception may have been dropped where CPython ignores exceptions."""
    global _pending
    signum, _pending = _pending, None
    if signum is not None:
        raise Interrupted(signum)
