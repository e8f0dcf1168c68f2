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
(``duet_bench.isolation.spawn.signals_held``).
"""

from __future__ import annotations

import signal
from types import FrameType

from duet_bench.errors import Interrupted

__all__ = ["SIGNALS", "install", "raise_if_pending"]

#: The signals that stop duet with :class:`Interrupted`.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_pending: int | None = None


def _handler(signum: int, _frame: FrameType | None) -> None:
    global _pending
    _pending = signum
    raise Interrupted(signum)


def install() -> None:
    """Make :data:`SIGNALS` raise :class:`Interrupted` in the main thread (and forget a signal
    an earlier command in this process already stopped for)."""
    global _pending
    _pending = None
    for signum in SIGNALS:
        signal.signal(signum, _handler)


def raise_if_pending() -> None:
    """Raise the :class:`Interrupted` of a signal received since the last call, once: the
    handler's own exception may have been dropped where CPython ignores exceptions."""
    global _pending
    signum, _pending = _pending, None
    if signum is not None:
        raise Interrupted(signum)
