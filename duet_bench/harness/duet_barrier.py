"""Python client of the duet barrier, protocol version 1 (``docs/barrier-protocol.md``).

Standard library only, and no import of ``duet_bench``: this file runs inside the measured process,
under whatever interpreter (Python >= 3.8) the benchmarked version uses.

The orchestrator calls :func:`create`; each side calls :func:`attach` with the slot it was given
and then :meth:`Barrier.wait` before every iteration::

    barrier = attach(path, slot)
    for _ in range(warmup + iterations):
        start_ns = barrier.wait(timeout_ns)
        ...  # the work
    barrier.close()

Crossover (``docs/barrier-protocol.md``, "Crossing the sides over the cores"): after
:meth:`Barrier.cross` every wait is two rendezvous with a move between them, so both sides have
finished the previous iteration before either moves, and both have moved before the clock starts.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time
from collections.abc import Sequence
from typing import Any

PROTOCOL_VERSION = 1
MAGIC = int.from_bytes(b"DUETBARR", "little")
HEADER_SIZE = 64
SLOT_SIZE = 64
MAX_PARTIES = 64

# Word indices (8-byte words) of the header fields.
W_MAGIC = 0
W_VERSION = 1
W_PARTIES = 2
W_CREATED_NS = 3
W_CREATOR_PID = 4
W_ABORT = 5
W_ABORT_REASON = 6
W_ABORT_PID = 7
# Word offsets inside a slot; slot i starts at word 8 * (1 + i).
S_GENERATION = 0
S_STATE = 1
S_PID = 2
WORDS_PER_SLOT = SLOT_SIZE // 8

STATE_FREE = 0
STATE_ATTACHED = 1
STATE_SLEEPING = 2
STATE_DETACHED = 3

REASON_ORCHESTRATOR = 1
REASON_WATCHDOG = 2
REASON_PARTY_FAILED = 3
REASON_PARTY_TIMEOUT = 4
REASON_PARTY_EXITED = 5
REASON_NAMES = {
    REASON_ORCHESTRATOR: "cancelled by the orchestrator",
    REASON_WATCHDOG: "the orchestrator's watchdog saw no progress",
    REASON_PARTY_FAILED: "a party's benchmark failed",
    REASON_PARTY_TIMEOUT: "a party's wait timed out",
    REASON_PARTY_EXITED: "a party's process ended early",
}

DEFAULT_SPIN_NS = 100_000_000
DEFAULT_YIELD_NS = 100_000_000
# Spins between two reads of the clock: keeps the common short wait free of clock calls.
_SPINS_PER_CHECK = 256
_SLEEP_FIRST_S = 20e-6
_SLEEP_MAX_S = 1e-3
_monotonic_ns = time.monotonic_ns
# Passes over the thread list per move: a thread created by a thread not yet moved starts on
# the old CPU; the next pass lists and moves it. Two passes find every thread of a program that
# does not create threads during the barrier wait; the rest is a bound, not a promise.
_MOVE_PASSES = 4


def file_size(parties: int) -> int:
    """Size in bytes of a version-1 barrier file for ``parties`` parties."""
    return HEADER_SIZE + SLOT_SIZE * parties


def reason_text(reason: int) -> str:
    """A short human description of an abort reason code."""
    return REASON_NAMES.get(reason, f"reason code {reason}")


class BarrierError(Exception):
    """Anything that went wrong with the barrier."""


class BarrierFileError(BarrierError):
    """The file cannot be used as a barrier; ``code`` is the protocol's name for the rule broken
    (``bad_size``, ``bad_magic``, ``bad_version``, ``bad_parties``, ``bad_slot``,
    ``slot_in_use``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class BarrierTimeout(BarrierError):
    """A wait passed its timeout before every other party arrived."""

    def __init__(self, message: str, generations: tuple[int, ...]) -> None:
        super().__init__(message)
        self.generations = generations


class BarrierAborted(BarrierError):
    """The abort flag is raised; ``reason`` is its code, ``pid`` the aborter's pid."""

    def __init__(self, reason: int, pid: int) -> None:
        super().__init__(f"barrier aborted by pid {pid}: {reason_text(reason)} (reason {reason})")
        self.reason = reason
        self.pid = pid


def _last_cpu(tid: int) -> int | None:
    """The CPU thread ``tid`` last ran on (field 39, ``processor``, of ``/proc/<tid>/stat``),
    None when it is gone or the field unreadable."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            # The command name (field 2) may hold spaces and parentheses: count after the last.
            return int(f.read().rsplit(b")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


def _ran_ns(tid: int) -> int | None:
    """Thread ``tid``'s time on a CPU so far (``/proc/<tid>/schedstat``, first field), None
    when it is gone."""
    try:
        with open(f"/proc/{tid}/schedstat", "rb") as f:
            return int(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def new_path(directory: str = "/dev/shm", orchestrator_pid: int | None = None) -> str:
    """A fresh barrier path ``duet-<orchestrator pid>-<16 hex digits>.barrier``."""
    pid = os.getpid() if orchestrator_pid is None else orchestrator_pid
    return os.path.join(directory, f"duet-{pid}-{os.urandom(8).hex()}.barrier")


def _futex_wake_function() -> Any:
    """``wake(address)``: FUTEX_WAKE every waiter on a shared 32-bit futex word, or None.

    Only needed to wake a peer (the C client) that sleeps in a futex after a long wait; loaded
    lazily so the common path never imports ctypes.
    """
    import ctypes
    import platform

    numbers = {
        "x86_64": 202,
        "amd64": 202,
        "aarch64": 98,
        "arm64": 98,
        "riscv64": 98,
        "ppc64le": 221,
        "s390x": 238,
        "i386": 240,
        "i686": 240,
        "armv7l": 240,
    }
    number = numbers.get(platform.machine().lower())
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    futex_wake = 1
    everyone = 0x7FFFFFFF

    def wake(address: int) -> None:
        syscall(
            ctypes.c_long(number),
            ctypes.c_void_p(address),
            ctypes.c_int(futex_wake),
            ctypes.c_int(everyone),
            ctypes.c_void_p(None),
            ctypes.c_void_p(None),
            ctypes.c_int(0),
        )

    return wake


class Barrier:
    """One party's (or the orchestrator's) view of a barrier file. Use :func:`create` or
    :func:`attach`, not this constructor."""

    def __init__(
        self,
        path: str,
        mm: mmap.mmap,
        parties: int,
        slot: int | None,
        spin_ns: int,
        yield_ns: int,
    ) -> None:
        self.path = path
        self.parties = parties
        self.slot = slot
        self.spin_ns = spin_ns
        self.yield_ns = yield_ns
        self._mm: mmap.mmap | None = mm
        self._view: memoryview | None = memoryview(mm)
        self._words: memoryview = self._view.cast("Q")
        self._generation = 0
        self._own = -1
        self._own_state = -1
        self._peers: tuple[int, ...] = ()
        self._peer_states: tuple[int, ...] = tuple(
            WORDS_PER_SLOT * (1 + i) + S_STATE for i in range(parties) if i != slot
        )
        self._wake: Any = None
        self._base_address = 0
        # True for an observer, a closed barrier, or a party after a timeout or an abort.
        self._unusable = slot is None
        # The two-party fast path: the one peer's generation and state words, else -1.
        self._peer = -1
        self._peer_state = -1
        # Crossover (cross()): the CPUs a wait moves the side to, in turn; empty: no moves.
        self._cpus: tuple[int, ...] = ()
        self._tasks: str | None = None
        self._crossings = 0
        # ran_on(): each thread's time on a CPU at the previous call.
        self._ran_ns: dict[int, int] = {}
        #: The CPU the side was last moved to (cross()), else None.
        self.cpu: int | None = None
        if slot is not None:
            base = WORDS_PER_SLOT * (1 + slot)
            self._own = base + S_GENERATION
            self._own_state = base + S_STATE
            self._peers = tuple(
                WORDS_PER_SLOT * (1 + i) + S_GENERATION for i in range(parties) if i != slot
            )
            if parties == 2:
                self._peer = self._peers[0]
                self._peer_state = self._peer_states[0]
            self._generation = self._words[self._own]

    # -- the rendezvous ------------------------------------------------------------------------

    def wait(self, timeout_ns: int) -> int:
        """Arrive at the barrier and wait for every other party; return ``time.monotonic_ns()``
        read right after the release.

        After :meth:`cross`, a wait is two rendezvous (two generations) with the move of the
        side to its next CPU between them.

        Raises :class:`BarrierAborted` if the abort flag is (or becomes) raised and
        :class:`BarrierTimeout` after ``timeout_ns``; after either the barrier is broken for this
        party and further waits raise :class:`BarrierError`. A move that fails raises
        :class:`BarrierError` (the barrier stays usable; the caller should abort it).
        """
        if self._cpus:
            return self._wait_crossing(timeout_ns)
        return self._rendezvous(timeout_ns)

    def _rendezvous(self, timeout_ns: int) -> int:
        """One generation: arrive, wait for every other party, read the clock."""
        # Every line here is on the path that sets the start skew: the two-party case is
        # written out flat, with no call, no loop over peers and no clock read while spinning.
        w = self._words
        if self._unusable:
            raise self._unusable_error()
        if w[W_ABORT]:
            raise self._aborted()
        g = self._generation + 1
        self._generation = g
        w[self._own] = g
        peer = self._peer
        if peer < 0:
            return self._wait_many(g, timeout_ns)
        if w[self._peer_state] == STATE_SLEEPING:
            self._futex_wake(self._own)
        n = _SPINS_PER_CHECK
        while w[peer] < g:
            if w[W_ABORT]:
                raise self._aborted()
            n -= 1
            if not n:
                self._wait_long(peer, g, _monotonic_ns() + timeout_ns, timeout_ns)
                break
        return _monotonic_ns()

    def cross(self, cpus: Sequence[int], tasks: str | None = None) -> None:
        """Cross the side over the cores: wait number k (counted from 0) runs the side on
        ``cpus[k % len(cpus)]``. Moves the side to ``cpus[0]`` at once, so that what it does
        before its first wait (a setup, the threads it starts) already runs there.

        The side is every thread listed in ``tasks`` (its cgroup's ``tasks`` at cgroup v1, its
        ``cgroup.threads`` at v2: a command's children and every thread of them), else every
        thread of this process (``/proc/self/task``). Every CPU must be in the side's cpuset.
        """
        if not cpus or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cpus):
            raise ValueError(f"cpus must be CPU numbers, got {list(cpus)!r}")
        self._cpus = tuple(cpus)
        self._tasks = tasks
        self._crossings = 0
        self._move(self._cpus[0])
        # What ran before the first iteration says nothing about it (ran_on): in a PID
        # namespace, the init that started the side last ran wherever it forked.
        with contextlib.suppress(OSError, ValueError):
            self._ran_ns = {t: n for t in self._threads() if (n := _ran_ns(t)) is not None}

    def _wait_crossing(self, timeout_ns: int) -> int:
        # Both sides first finish the iteration: a side that moved as soon as it finished would
        # land on the CPU where the other still works and slow it (a 5% A/B read 1.14).
        self._rendezvous(timeout_ns)
        cpus = self._cpus
        self._move(cpus[self._crossings % len(cpus)])
        self._crossings += 1
        # Both moved: only now may the clock start.
        return self._rendezvous(timeout_ns)

    def _threads(self) -> list[int]:
        if self._tasks is None:
            return [int(t) for t in os.listdir("/proc/self/task")]
        with open(self._tasks, "rb") as f:
            # 0: a task of the cgroup outside the side's PID namespace (cgroup v2 lists it as
            # 0; v1 leaves it out): the namespace's keeper, which only waits.
            return [tid for t in f.read().split() if (tid := int(t))]

    def ran_on(self, pids: Sequence[int] = ()) -> int | None:
        """The CPU the side really ran on, read at the end of an iteration: :attr:`cpu`, unless
        a thread of the side (or of ``pids``: a command's process, exited but not reaped yet)
        last ran on another CPU, then that one. A side can pin itself (``sched_setaffinity``,
        ``taskset``) after duet moved it: the record then says where it went, not where it was
        sent (issue 33, finding 3). None when the side is not pinned (:attr:`cpu` is None).

        A thread counts only when it ran since the previous call (its time on a CPU, from
        ``/proc/<tid>/schedstat``, grew): a thread that slept through the iteration still shows
        the CPU it ran on before the move, which says nothing about this iteration."""
        cpu = self.cpu
        if cpu is None:
            return None
        try:
            threads = self._threads()
        except (OSError, ValueError):
            threads = []
        before, now = self._ran_ns, {}
        went = None
        for tid in threads:
            ran_ns = _ran_ns(tid)
            if ran_ns is None:
                continue
            now[tid] = ran_ns
            if ran_ns > before.get(tid, -1) and went is None:
                last = _last_cpu(tid)
                went = last if last is not None and last != cpu else None
        self._ran_ns = now
        for pid in pids:  # new each iteration: they ran in it
            last = _last_cpu(pid)
            if went is None and last is not None and last != cpu:
                went = last
        return cpu if went is None else went

    def _move(self, cpu: int) -> None:
        """Pin every thread of the side to ``cpu``; a thread that ended meanwhile is skipped."""
        mask = {cpu}
        moved: set[int] = set()
        try:
            for _ in range(_MOVE_PASSES):
                new = [t for t in self._threads() if t not in moved]
                if not new:
                    break
                for tid in new:
                    with contextlib.suppress(ProcessLookupError):  # it ended since the listing
                        os.sched_setaffinity(tid, mask)
                moved.update(new)
        except OSError as e:
            raise BarrierError(
                f"cannot move the side to CPU {cpu} (crossover): {e}; every CPU of "
                f"{list(self._cpus)} must be in the side's cpuset and every thread listed in "
                f"{self._tasks or '/proc/self/task'} must be the side's own"
            ) from e
        self.cpu = cpu

    def _wait_many(self, g: int, timeout_ns: int) -> int:
        """wait() for one party alone or for more than two."""
        w = self._words
        for state_index in self._peer_states:
            if w[state_index] == STATE_SLEEPING:
                self._futex_wake(self._own)
                break
        deadline = _monotonic_ns() + timeout_ns
        for peer in self._peers:
            self._wait_long(peer, g, deadline, timeout_ns)
        return _monotonic_ns()

    def _wait_long(self, peer: int, g: int, deadline: int, timeout_ns: int) -> None:
        """Past the first spins: spin with clock checks, then yield, then sleep with backoff."""
        w = self._words
        begin = _monotonic_ns()
        spin_until = begin + self.spin_ns
        yield_until = spin_until + self.yield_ns
        sleep_s = _SLEEP_FIRST_S
        while True:
            n = _SPINS_PER_CHECK
            while w[peer] < g:
                if w[W_ABORT]:
                    raise self._aborted()
                n -= 1
                if not n:
                    break
            else:
                return
            now = _monotonic_ns()
            if now >= deadline:
                self._unusable = True
                raise self._timed_out(peer, g, timeout_ns)
            if now < spin_until:
                continue
            if now < yield_until:
                os.sched_yield()
                continue
            time.sleep(min(sleep_s, (deadline - now) / 1e9))
            sleep_s = min(sleep_s * 2, _SLEEP_MAX_S)

    def _unusable_error(self) -> BarrierError:
        if self._mm is None:
            return BarrierError("wait() on a closed barrier")
        if self._own < 0:
            return BarrierError("wait() needs a party's barrier (attach), not the orchestrator's")
        return BarrierError("this party's barrier is broken by an earlier timeout or abort")

    def _futex_wake(self, word: int) -> None:
        """FUTEX_WAKE the waiters on a generation word (a peer wrote SLEEPING: it waits in a
        futex on that word)."""
        if self._wake is None:
            self._load_wake()
        if self._wake:
            self._wake(self._base_address + 8 * word)

    def _load_wake(self) -> None:
        self._wake = _futex_wake_function() or False
        if self._wake and self._mm is not None:
            import ctypes

            anchor = ctypes.c_char.from_buffer(self._mm)
            self._base_address = ctypes.addressof(anchor)
            del anchor  # releases the buffer export, so close() can unmap

    def _aborted(self) -> BarrierAborted:
        """The error for a raised abort flag; the barrier is broken for this party from now."""
        self._unusable = True
        w = self._words
        return BarrierAborted(w[W_ABORT_REASON], w[W_ABORT_PID])

    def _timed_out(self, peer: int, g: int, timeout_ns: int) -> BarrierTimeout:
        generations = self.generations()
        peer_slot = peer // WORDS_PER_SLOT - 1
        peer_pid = self._words[peer + S_PID]
        who = f"pid {peer_pid}" if peer_pid else "not attached yet"
        return BarrierTimeout(
            f"barrier wait timed out after {timeout_ns / 1e9:.3f} s at generation {g}: "
            f"slot {peer_slot} ({who}) is at generation {generations[peer_slot]}",
            generations,
        )

    # -- the orchestrator's side -----------------------------------------------------------------

    def abort(self, reason_code: int) -> None:
        """Raise the abort flag: every wait, now or later, in every party returns promptly with
        :class:`BarrierAborted`. The first aborter's reason is kept."""
        if reason_code <= 0 or reason_code >= 1 << 64:
            raise ValueError(f"reason_code must be a positive 64-bit code, got {reason_code!r}")
        w = self._words
        if w[W_ABORT]:
            return
        w[W_ABORT_REASON] = reason_code
        w[W_ABORT_PID] = os.getpid()
        w[W_ABORT] = 1
        # Wake futex sleepers (C parties after a long wait). A sleeper that raced past this
        # check wakes within its 10 ms slice anyway.
        if STATE_SLEEPING in self.states():
            for i in range(self.parties):
                self._futex_wake(WORDS_PER_SLOT * (1 + i) + S_GENERATION)

    def abort_reason(self) -> int | None:
        """The abort reason code, or None while the barrier is not aborted."""
        w = self._words
        return w[W_ABORT_REASON] if w[W_ABORT] else None

    def generations(self) -> tuple[int, ...]:
        """Every slot's generation (for the orchestrator's watchdog)."""
        w = self._words
        return tuple(w[WORDS_PER_SLOT * (1 + i) + S_GENERATION] for i in range(self.parties))

    def states(self) -> tuple[int, ...]:
        """Every slot's state (``STATE_*``)."""
        w = self._words
        return tuple(w[WORDS_PER_SLOT * (1 + i) + S_STATE] for i in range(self.parties))

    def close(self) -> None:
        """Mark the slot DETACHED (for a party) and unmap. Idempotent; removes no file."""
        if self._mm is None:
            return
        self._unusable = True
        if self._own_state >= 0:
            self._words[self._own_state] = STATE_DETACHED
        self._words.release()
        if self._view is not None:
            self._view.release()
            self._view = None
        self._mm.close()
        self._mm = None

    def __enter__(self) -> Barrier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Barrier({self.path!r}, parties={self.parties}, slot={self.slot!r})"


def create(
    path: str,
    parties: int = 2,
    *,
    mode: int = 0o600,
    owner: tuple[int, int] | None = None,
    created_ns: int | None = None,
    creator_pid: int | None = None,
) -> Barrier:
    """Create a new barrier file (the orchestrator's side) and return it mapped.

    Fails with ``FileExistsError`` if ``path`` exists. ``owner`` (uid, gid) hands the file to
    the user the sides run as (root only), so that ``mode`` can stay 0600: a barrier others
    may write can be aborted by any local user. ``created_ns`` and ``creator_pid`` default
    to now (``CLOCK_REALTIME``) and this process; tests fix them to compare bytes.
    """
    if not 1 <= parties <= MAX_PARTIES:
        raise ValueError(f"parties must be between 1 and {MAX_PARTIES}, got {parties!r}")
    size = file_size(parties)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask must not narrow a deliberately shared mode
        if owner is not None:
            os.fchown(fd, *owner)
        os.ftruncate(fd, size)
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    barrier = Barrier(path, mm, parties, None, DEFAULT_SPIN_NS, DEFAULT_YIELD_NS)
    w = barrier._words
    w[W_VERSION] = PROTOCOL_VERSION
    w[W_PARTIES] = parties
    w[W_CREATED_NS] = time.time_ns() if created_ns is None else created_ns
    w[W_CREATOR_PID] = os.getpid() if creator_pid is None else creator_pid
    # Last, so a party never accepts a half-written header.
    w[W_MAGIC] = MAGIC
    return barrier


def validate(data: bytes, slot: int | None = None, path: str = "<bytes>") -> int:
    """Check a barrier file's bytes (and ``slot``, if given); return the number of parties or
    raise :class:`BarrierFileError` naming the rule broken."""
    size = len(data)
    if size < HEADER_SIZE:
        raise BarrierFileError(
            "bad_size",
            f"{path} is truncated: {size} bytes, a barrier file has a {HEADER_SIZE}-byte header "
            "at least",
        )
    magic, version, parties = struct.unpack_from("<QQQ", data, 0)
    if magic != MAGIC:
        raise BarrierFileError(
            "bad_magic",
            f"{path} is not a duet barrier file: its first 8 bytes are {bytes(data[:8])!r}, "
            "expected b'DUETBARR'",
        )
    if version != PROTOCOL_VERSION:
        raise BarrierFileError(
            "bad_version",
            f"{path} uses barrier protocol version {version}, this client speaks version "
            f"{PROTOCOL_VERSION} only: the orchestrator and the harness come from different duet "
            "releases",
        )
    if not 1 <= parties <= MAX_PARTIES:
        raise BarrierFileError(
            "bad_parties",
            f"{path} declares {parties} parties; version {PROTOCOL_VERSION} allows 1 to "
            f"{MAX_PARTIES}",
        )
    expected = file_size(parties)
    if size != expected:
        what = "truncated" if size < expected else "too long"
        raise BarrierFileError(
            "bad_size",
            f"{path} is {what}: {size} bytes, a {parties}-party barrier file has exactly "
            f"{expected}",
        )
    if slot is not None:
        if not 0 <= slot < parties:
            raise BarrierFileError(
                "bad_slot",
                f"slot {slot} does not exist in {path}: it has {parties} parties (slots 0 to "
                f"{parties - 1})",
            )
        state, pid = struct.unpack_from("<QQ", data, file_size(slot) + 8 * S_STATE)
        if state != STATE_FREE:
            raise BarrierFileError(
                "slot_in_use",
                f"slot {slot} of {path} is already taken (state {state}, pid {pid}): each party "
                "needs its own slot of a fresh barrier file",
            )
    return int(parties)


def attach(
    path: str,
    slot: int,
    *,
    spin_ns: int = DEFAULT_SPIN_NS,
    yield_ns: int = DEFAULT_YIELD_NS,
) -> Barrier:
    """Map an existing barrier file as party ``slot``, after validating it.

    ``spin_ns`` and ``yield_ns`` set how long a wait spins, then yields, before it sleeps.
    Raises :class:`BarrierFileError` for a file that is not a usable version-1 barrier and
    ``OSError`` if it cannot be opened.
    """
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if size < HEADER_SIZE:
            validate(os.pread(fd, HEADER_SIZE, 0), slot, path)
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        parties = validate(mm[:], slot, path)
    except BaseException:
        mm.close()
        raise
    barrier = Barrier(path, mm, parties, slot, spin_ns, yield_ns)
    if parties > 1:
        # Load the futex wake now (ctypes, a few ms), not in the first wait that needs it.
        barrier._load_wake()
    w = barrier._words
    w[barrier._own + S_PID] = os.getpid()
    w[barrier._own_state] = STATE_ATTACHED
    return barrier


def open_observer(path: str) -> Barrier:
    """Map an existing barrier file without taking a slot (a watchdog or a second orchestrator
    view): it can read generations and abort, not wait."""
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if size < HEADER_SIZE:
            validate(os.pread(fd, HEADER_SIZE, 0), None, path)
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        parties = validate(mm[:], None, path)
    except BaseException:
        mm.close()
        raise
    return Barrier(path, mm, parties, None, DEFAULT_SPIN_NS, DEFAULT_YIELD_NS)
