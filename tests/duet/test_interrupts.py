"""A signal whose exception CPython drops (raised inside a weakref callback or a ``__del__``) still
stops duet, and is not printed as CPython's "Exception ignored":
the handler records it and :func:`duet_bench.interrupts.raise_if_pending` raises it again. Run in
a child process, so the test's own signal handlers are untouched."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import os, signal, sys, weakref
    from duet_bench import interrupts
    from duet_bench.errors import Interrupted

    interrupts.install()

    def signalled():
        # The handler runs here, at the next bytecode, and CPython drops its exception, as in
        # importlib's module-lock callback or a Popen collected in the middle of a run.
        os.kill(os.getpid(), signal.{name})
        for _ in range(1000):
            pass

    class Thing:
        def __del__(self):
            if "{where}" == "__del__":
                signalled()

    def callback(_ref):
        if "{where}" == "weakref":
            signalled()

    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
    print("survived the dropped exception", flush=True)
    try:
        interrupts.raise_if_pending()
    except Interrupted as e:
        print("raised again:", e, e.exit_code, flush=True)
    interrupts.raise_if_pending()  # once only
    print("once", flush=True)
    """
)


@pytest.mark.parametrize("where", ["weakref", "__del__"])
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_dropped_interrupt_is_raised_again_once(name: str, where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(name=name, where=where)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # CPython dropped the handler's exception ("survived" below) and printed nothing of it: the
    # user sees "interrupted by ...", not "Exception ignored in ..." and a traceback.
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    code = 128 + signal.Signals[name].value
    assert done.stdout.splitlines() == [
        "survived the dropped exception",
        f"raised again: interrupted by {name} {code}",
        "once",
    ]


def test_without_a_signal_nothing_is_raised() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from duet_bench import interrupts; interrupts.install(); "
         "interrupts.raise_if_pending(); print('ok')"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


SECOND_DURING_CLEANUP = textwrap.dedent(
    """
    import os, signal, time
    from duet_bench import interrupts
    from duet_bench.errors import Interrupted

    interrupts.install()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except Interrupted as first:
        try:
            # The clean-up: a second signal arrives in the middle of it.
            os.kill(os.getpid(), signal.{second})
            for step in range(3):
                time.sleep(0.01)
                print("clean-up step", step, flush=True)
        finally:
            print("deferred:", [signal.Signals(s).name for s in interrupts.deferred()], flush=True)
        raise SystemExit(first.exit_code)
    """
)


@pytest.mark.parametrize("second", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_second_signal_during_the_clean_up_does_not_abort_it(second: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SECOND_DURING_CLEANUP.format(second=second)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130, done.stderr  # the first signal's code
    assert done.stdout.splitlines() == [
        "clean-up step 0",
        "clean-up step 1",
        "clean-up step 2",
        f"deferred: ['{second}']",
    ]
