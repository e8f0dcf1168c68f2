"""The Python barrier client against the shared vectors, real processes and its promises.

The vectors in ``tests/vectors/barrier/`` are replayed by every client: a ``layout`` vector gives
the bytes of a freshly created file; a ``sequence`` vector gives a file (``file.hex``; its
``file.fields`` say the same in words) and steps:

- ``attach`` slot, expect ``ok`` or ``refused:<code>``
- ``wait`` slot, timeout_ns, expect ``released``, ``timeout``, ``aborted`` (with ``abort_reason``
  and ``abort_pid``) or ``broken`` (a wait after a timeout or an abort)
- ``abort`` slot, reason; ``close`` slot
- ``set`` / ``check`` a slot's field or a header field directly in the file (``set`` plays the
  other parties); the value ``"actor"`` stands for the pid of the process running the client.

The helpers here (``build_file``, ``run_sequence``, the fixtures) are shared with
``test_barrier_c.py`` and ``test_worker.py``.
"""

from __future__ import annotations

import ast
import glob
import json
import mmap
import os
import select
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duet_bench.harness import duet_barrier as db

#: Real barriers and worker processes timed against each other: serial, checked for leftovers.
pytestmark = pytest.mark.measures

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "duet_bench" / "harness"
VECTORS = ROOT / "tests" / "vectors" / "barrier"
HEADER_FIELDS = (
    "magic",
    "version",
    "parties",
    "created_ns",
    "creator_pid",
    "abort",
    "abort_reason",
    "abort_pid",
)
SLOT_FIELDS = ("generation", "state", "pid")


# -- shared helpers ----------------------------------------------------------------------------


def load_vectors(kind: str) -> list[dict[str, Any]]:
    vectors = []
    for path in sorted(VECTORS.glob("*.json")):
        vector = json.loads(path.read_text())
        if vector["kind"] == kind:
            vectors.append(vector)
    return vectors


def vector_id(vector: dict[str, Any]) -> str:
    return str(vector["name"])


def build_file(fields: dict[str, Any], size: int | None = None) -> bytes:
    """The bytes a vector's ``file.fields`` describe (independent of the clients)."""
    out = bytearray()
    for name in HEADER_FIELDS:
        value = fields["header"][name]
        if name == "magic":
            out += value.encode("ascii").ljust(8, b"\0")[:8]
        else:
            out += struct.pack("<Q", value)
    for slot in fields["slots"]:
        out += struct.pack("<QQQ", *(slot[f] for f in SLOT_FIELDS)) + bytes(40)
    if size is not None:
        out = out[:size] + bytes(max(0, size - len(out)))
    return bytes(out)


def word_offset(step: dict[str, Any]) -> int:
    if "header" in step:
        return 8 * HEADER_FIELDS.index(step["header"])
    return 64 * (1 + step["slot"]) + 8 * SLOT_FIELDS.index(step["field"])


def read_word(path: str, offset: int) -> int:
    with open(path, "rb") as f:
        f.seek(offset)
        return int(struct.unpack("<Q", f.read(8))[0])


def write_word(path: str, offset: int, value: int) -> None:
    # Through a shared mapping, as another party would write it.
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        struct.pack_into("<Q", m, offset, value)


class Actor(Protocol):
    """A barrier client under test, driven step by step."""

    pid: int

    def attach(self, slot: int) -> str: ...
    def wait(self, slot: int, timeout_ns: int) -> tuple[str, int | None, int | None]: ...
    def abort(self, slot: int, reason: int) -> None: ...
    def close(self, slot: int) -> None: ...
    def close_all(self) -> None: ...


class PythonActor:
    def __init__(self, path: str) -> None:
        self.path = path
        self.pid = os.getpid()
        self.handles: dict[int, db.Barrier] = {}

    def attach(self, slot: int) -> str:
        try:
            self.handles[slot] = db.attach(self.path, slot)
        except db.BarrierFileError as e:
            return "refused:" + e.code
        return "ok"

    def wait(self, slot: int, timeout_ns: int) -> tuple[str, int | None, int | None]:
        try:
            self.handles[slot].wait(timeout_ns)
        except db.BarrierTimeout:
            return ("timeout", None, None)
        except db.BarrierAborted as e:
            return ("aborted", e.reason, e.pid)
        except db.BarrierError:
            return ("broken", None, None)
        return ("released", None, None)

    def abort(self, slot: int, reason: int) -> None:
        self.handles[slot].abort(reason)

    def close(self, slot: int) -> None:
        self.handles.pop(slot).close()

    def close_all(self) -> None:
        for slot in list(self.handles):
            self.close(slot)


def run_sequence(vector: dict[str, Any], actor: Actor, path: str) -> None:
    """Replay one sequence vector's steps; the file must already hold ``file.hex``."""
    for number, step in enumerate(vector["steps"]):
        where = f"{vector['name']} step {number} {step}"
        op = step["op"]
        if op == "attach":
            assert actor.attach(step["slot"]) == step["expect"], where
        elif op == "wait":
            outcome, reason, pid = actor.wait(step["slot"], step["timeout_ns"])
            assert outcome == step["expect"], where
            if outcome == "aborted":
                expected_pid = actor.pid if step["abort_pid"] == "actor" else step["abort_pid"]
                assert (reason, pid) == (step["abort_reason"], expected_pid), where
        elif op == "abort":
            actor.abort(step["slot"], step["reason"])
        elif op == "close":
            actor.close(step["slot"])
        elif op == "set":
            write_word(path, word_offset(step), step["value"])
        elif op == "check":
            expected = actor.pid if step["value"] == "actor" else step["value"]
            assert read_word(path, word_offset(step)) == expected, where
        else:  # pragma: no cover - a vector this test does not understand
            pytest.fail(f"unknown op in {where}")


def own_shm_files() -> list[str]:
    return sorted(glob.glob(f"/dev/shm/duet-{os.getpid()}-*"))


@pytest.fixture
def shm_path() -> Iterator[str]:
    """A fresh barrier path in /dev/shm; asserts that nothing of ours is left there after."""
    assert own_shm_files() == [], "an earlier test left barrier files behind"
    path = db.new_path()
    try:
        yield path
    finally:
        if os.path.exists(path):
            os.unlink(path)
        left = own_shm_files()
        for stray in left:
            os.unlink(stray)
        assert left == [], f"barrier files left in /dev/shm: {left}"


class Processes:
    """Child processes a test starts; teardown asserts every one was waited for."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        kwargs.setdefault("text", True)
        process: subprocess.Popen[str] = subprocess.Popen(argv, **kwargs)
        self.started.append(process)
        return process

    def finish(self) -> list[int]:
        running = [p.pid for p in self.started if p.poll() is None]
        for p in self.started:
            if p.poll() is None:
                p.kill()
            p.wait(10)
            for stream in (p.stdin, p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
        return running


class DriverActor:
    """A barrier client in a driver process of another language (the C and Java drivers), one
    command line in, one answer line out. ``language`` names it in failures; the timeouts are
    the seconds an answer and the driver's exit may take."""

    language: str  # each driver's class names its language
    answer_timeout_s = 30.0
    quit_timeout_s = 30.0
    quit_hint = ""

    def __init__(
        self,
        processes: Processes,
        argv: list[str],
        path: str,
        env: dict[str, str] | None = None,
        start_timeout_s: float | None = None,
    ) -> None:
        self.path = path
        self.process = processes.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.pid = int(self.command("pid", timeout_s=start_timeout_s))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def answer(self, timeout_s: float | None = None) -> str:
        timeout_s = self.answer_timeout_s if timeout_s is None else timeout_s
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        assert ready, f"the {self.language} driver did not answer within {timeout_s} s"
        answer = self.process.stdout.readline()
        assert answer, f"the {self.language} driver died (exit {self.process.wait(5)})"
        return answer.strip()

    def command(self, line: str, timeout_s: float | None = None) -> str:
        self.send(line)
        return self.answer(timeout_s)

    def attach(self, slot: int) -> str:
        words = self.command(f"attach {self.path} {slot}").split()
        return "ok" if words[0] == "ok" else f"refused:{words[1]}"

    def wait(self, slot: int, timeout_ns: int) -> tuple[str, int | None, int | None]:
        words = self.command(f"wait {slot} {timeout_ns}").split()
        if words[0] == "aborted":
            return ("aborted", int(words[1]), int(words[2]))
        return (words[0], None, None)

    def abort(self, slot: int, reason: int) -> None:
        assert self.command(f"abort {slot} {reason}") == "ok"

    def close(self, slot: int) -> None:
        assert self.command(f"close {slot}") == "ok"

    def close_all(self) -> None:
        self.quit()

    def quit(self) -> None:
        assert self.process.stdin is not None
        if self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
        assert self.process.wait(self.quit_timeout_s) == 0, (
            f"the {self.language} driver failed{self.quit_hint}"
        )


@pytest.fixture
def processes() -> Iterator[Processes]:
    procs = Processes()
    try:
        yield procs
    finally:
        running = procs.finish()
    assert running == [], f"processes still running at the end of the test: {running}"


PEER_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.append(sys.argv[1])
    import duet_barrier as db
    path, slot, n, timeout_ns = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    delay_ns = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    spin_ns = int(sys.argv[7]) if len(sys.argv) > 7 else db.DEFAULT_SPIN_NS
    cpu = int(sys.argv[8]) if len(sys.argv) > 8 else -1
    if cpu >= 0:
        os.sched_setaffinity(0, {cpu})
    b = db.attach(path, slot, spin_ns=spin_ns, yield_ns=spin_ns)
    starts, arrivals, outcome = [], [], "done"
    try:
        for _ in range(n):
            if delay_ns:
                time.sleep(delay_ns / 1e9)
            arrivals.append(time.monotonic_ns())
            starts.append(b.wait(timeout_ns))
    except db.BarrierAborted as e:
        outcome = "aborted %d" % e.reason
    except db.BarrierTimeout:
        outcome = "timeout"
    end = time.monotonic_ns()
    b.close()
    print(json.dumps({"outcome": outcome, "starts": starts, "arrivals": arrivals, "end": end}))
    """
)


def python_peer(
    processes: Processes,
    path: str,
    slot: int,
    n: int,
    timeout_ns: int = 10_000_000_000,
    delay_ns: int = 0,
    spin_ns: int = db.DEFAULT_SPIN_NS,
    python: str = sys.executable,
    cpu: int = -1,
) -> subprocess.Popen[str]:
    """A party in another process (any interpreter, pinned to ``cpu`` unless it is -1); prints
    one JSON line when it is done."""
    argv = [python, "-c", PEER_SCRIPT, str(HARNESS), path, str(slot), str(n), str(timeout_ns)]
    argv += [str(delay_ns), str(spin_ns), str(cpu)]
    return processes.start(argv, stdout=subprocess.PIPE)


def two_cpus() -> tuple[int, int]:
    """Two CPUs to pin the sides on, as duet does; (-1, -1) (unpinned) on a 1-CPU machine.

    Two spinning parties sharing one CPU meet only when the scheduler preempts one of them."""
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else (-1, -1)


def peer_result(process: subprocess.Popen[str], timeout_s: float = 30) -> dict[str, Any]:
    out, _ = process.communicate(timeout=timeout_s)
    assert process.returncode == 0, out
    result: dict[str, Any] = json.loads(out)
    return result


# -- the vectors -------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", load_vectors("sequence"), ids=vector_id)
def test_vector_file_matches_its_fields(vector: dict[str, Any]) -> None:
    """The vectors themselves: ``hex`` is what ``fields`` describes."""
    spec = vector["file"]
    if "fields" in spec:
        assert build_file(spec["fields"], spec.get("size")).hex() == spec["hex"]


@pytest.mark.parametrize("vector", load_vectors("layout"), ids=vector_id)
def test_layout_vector_python(vector: dict[str, Any], shm_path: str) -> None:
    data = bytes.fromhex(vector["hex"])
    assert len(data) == vector["size"] == db.file_size(vector["create"]["parties"])
    for field in vector["layout"]:
        assert struct.unpack_from("<Q", data, field["offset"])[0] == field["u64"], field
    with db.create(shm_path, **vector["create"]):
        assert Path(shm_path).read_bytes().hex() == vector["hex"]
    assert db.validate(data) == vector["create"]["parties"]


@pytest.mark.parametrize("vector", load_vectors("sequence"), ids=vector_id)
def test_sequence_vector_python(vector: dict[str, Any], shm_path: str) -> None:
    Path(shm_path).write_bytes(bytes.fromhex(vector["file"]["hex"]))
    actor = PythonActor(shm_path)
    try:
        run_sequence(vector, actor, shm_path)
    finally:
        actor.close_all()


# -- files and errors --------------------------------------------------------------------------


def test_new_path_names_the_orchestrator_and_is_random() -> None:
    first, second = db.new_path(), db.new_path(orchestrator_pid=77)
    assert Path(first).parent == Path("/dev/shm")
    assert Path(first).name.startswith(f"duet-{os.getpid()}-")
    assert Path(first).name.endswith(".barrier")
    assert len(Path(first).name.split("-")[2].split(".")[0]) == 16
    assert Path(second).name.startswith("duet-77-")
    assert first != db.new_path()


def test_create_refuses_an_existing_file_and_bad_parties(shm_path: str) -> None:
    db.create(shm_path).close()
    with pytest.raises(FileExistsError):
        db.create(shm_path)
    os.unlink(shm_path)
    with pytest.raises(ValueError, match="parties must be between 1 and 64"):
        db.create(shm_path, parties=0)
    assert not os.path.exists(shm_path)


def test_create_fills_the_header(shm_path: str) -> None:
    before = time.time_ns()
    with db.create(shm_path, parties=2, mode=0o640) as b:
        assert b.generations() == (0, 0)
        assert b.states() == (db.STATE_FREE, db.STATE_FREE)
        assert b.abort_reason() is None
    data = Path(shm_path).read_bytes()
    magic, version, parties, created, pid = struct.unpack_from("<8sQQQQ", data)
    assert (magic, version, parties, pid) == (b"DUETBARR", 1, 2, os.getpid())
    assert before <= created <= time.time_ns()
    assert os.stat(shm_path).st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("data", "slot", "code", "words"),
    [
        (b"", 0, "bad_size", ["truncated", "0 bytes"]),
        (bytes(192), 0, "bad_magic", ["not a duet barrier file"]),
        (None, 0, "bad_version", ["version 2", "speaks version 1"]),
        (None, 5, "bad_slot", ["slot 5", "2 parties"]),
    ],
)  # fmt: skip
def test_refusals_say_what_is_wrong(
    shm_path: str, data: bytes | None, slot: int, code: str, words: list[str]
) -> None:
    if data is None:
        db.create(shm_path).close()
        if code == "bad_version":
            write_word(shm_path, 8, 2)
    else:
        Path(shm_path).write_bytes(data)
    with pytest.raises(db.BarrierFileError) as caught:
        db.attach(shm_path, slot)
    assert caught.value.code == code
    for word in words:
        assert word in str(caught.value)
    assert shm_path in str(caught.value)


def test_attach_to_a_missing_file_is_an_os_error(shm_path: str) -> None:
    with pytest.raises(FileNotFoundError):
        db.attach(shm_path, 0)


def test_observer_cannot_wait_and_abort_needs_a_reason(shm_path: str) -> None:
    with db.create(shm_path) as b:
        with pytest.raises(db.BarrierError, match="attach"):
            b.wait(1000)
        with pytest.raises(ValueError, match="reason_code"):
            b.abort(0)
        b.abort(db.REASON_WATCHDOG)
        assert b.abort_reason() == db.REASON_WATCHDOG
    with db.open_observer(shm_path) as watcher:
        assert watcher.abort_reason() == db.REASON_WATCHDOG


def test_close_is_idempotent_and_detaches(shm_path: str) -> None:
    with db.create(shm_path) as orchestrator:
        party = db.attach(shm_path, 1)
        assert orchestrator.states() == (db.STATE_FREE, db.STATE_ATTACHED)
        party.close()
        party.close()
        assert orchestrator.states() == (db.STATE_FREE, db.STATE_DETACHED)


def test_one_party_barrier_never_waits(shm_path: str) -> None:
    """--method sequential runs a side alone through the same worker: a 1-party barrier."""
    with db.create(shm_path, parties=1) as orchestrator, db.attach(shm_path, 0) as party:
        for _ in range(3):
            party.wait(1_000_000)
        assert orchestrator.generations() == (3,)


# -- the rendezvous as a model (hypothesis) ----------------------------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=12))
def test_release_rule_matches_the_model(shm_path: str, advances: list[int]) -> None:
    """A simulated peer moves its generation by 0-2 before each of our waits: a wait is
    released exactly when the peer's generation is at least ours, and a timeout breaks it."""
    if os.path.exists(shm_path):
        os.unlink(shm_path)
    with db.create(shm_path) as orchestrator, db.attach(shm_path, 0) as party:
        peer_generation = 0
        for ours, advance in enumerate(advances, start=1):
            peer_generation += advance
            write_word(shm_path, 64 * 2, peer_generation)
            try:
                party.wait(0)
                released = True
            except db.BarrierTimeout:
                released = False
            assert released == (peer_generation >= ours)
            assert orchestrator.generations() == (ours, peer_generation)
            if not released:
                with pytest.raises(db.BarrierError, match="broken"):
                    party.wait(1_000_000)
                break


# -- real processes ----------------------------------------------------------------------------


def test_two_processes_meet_every_iteration(shm_path: str, processes: Processes) -> None:
    n = 5000
    cpus = two_cpus()
    with db.create(shm_path) as orchestrator:
        peers = [python_peer(processes, shm_path, slot, n, cpu=cpus[slot]) for slot in (0, 1)]
        first, second = (peer_result(peer) for peer in peers)
        assert first["outcome"] == second["outcome"] == "done"
        assert orchestrator.generations() == (n, n)
        assert orchestrator.states() == (db.STATE_DETACHED, db.STATE_DETACHED)
    # Neither side ever starts an iteration before the other has arrived at it.
    for i in range(n):
        assert first["starts"][i] >= second["arrivals"][i]
        assert second["starts"][i] >= first["arrivals"][i]
    skews = sorted(abs(a - b) for a, b in zip(first["starts"], second["starts"], strict=True))
    # A performance bound that a busy machine cannot break (benchmarks/bench_barrier.py measures
    # the real figures): even with other work on the CPUs, many iterations find both sides
    # running, and a spinning barrier starts those within microseconds.
    assert skews[n // 10] < 200_000, "10th percentile of start skew above 200 µs: not spinning?"


def test_abort_releases_a_spinning_and_a_sleeping_waiter(
    shm_path: str, processes: Processes
) -> None:
    with db.create(shm_path, parties=3) as orchestrator:
        spinning = python_peer(processes, shm_path, 0, 1, timeout_ns=30_000_000_000)
        sleeping = python_peer(processes, shm_path, 1, 1, timeout_ns=30_000_000_000, spin_ns=0)
        deadline = time.monotonic() + 10
        while orchestrator.generations()[:2] != (1, 1) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)  # both are in their wait, the sleeper past its spin and yield
        raised = time.monotonic_ns()
        orchestrator.abort(db.REASON_ORCHESTRATOR)
        for process in (spinning, sleeping):
            result = peer_result(process)
            assert result["outcome"] == f"aborted {db.REASON_ORCHESTRATOR}"
            assert result["end"] - raised < 200_000_000, "abort took more than 200 ms"


def test_timeout_is_honoured_in_every_phase(shm_path: str) -> None:
    with db.create(shm_path), db.attach(shm_path, 0, spin_ns=20_000_000, yield_ns=20_000_000) as b:
        begin = time.monotonic_ns()
        with pytest.raises(db.BarrierTimeout) as caught:
            b.wait(120_000_000)
        took = time.monotonic_ns() - begin
    assert 120_000_000 <= took < 1_000_000_000
    assert "slot 1 (not attached yet) is at generation 0" in str(caught.value)
    assert caught.value.generations == (1, 0)


def test_sleeping_waiter_is_released_quickly(shm_path: str, processes: Processes) -> None:
    """Past spin and yield the Python client polls with sleeps capped at 1 ms."""
    with db.create(shm_path):
        peer = python_peer(processes, shm_path, 1, 3, delay_ns=150_000_000, spin_ns=0)
        with db.attach(shm_path, 0, spin_ns=0, yield_ns=0) as party:
            lags = [party.wait(10_000_000_000) for _ in range(3)]
        result = peer_result(peer)
    lags = [mine - arrived for mine, arrived in zip(lags, result["arrivals"], strict=True)]
    assert sorted(lags)[1] < 20_000_000, f"release after sleeping took {lags} ns"


def old_pythons() -> list[str]:
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))
    found += [p for p in ("/usr/bin/python3.8", "/usr/local/bin/python3.8") if os.path.exists(p)]
    return found[:1]


@pytest.mark.parametrize("name", ["duet_barrier.py", "duet_worker.py", "duet_outputs.py"])
def test_harness_files_parse_as_python_3_8(name: str) -> None:
    source = (HARNESS / name).read_text()
    tree = ast.parse(source, filename=name, feature_version=(3, 8))
    type_checking_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }
    allowed = set(sys.stdlib_module_names) | {p.stem for p in HARNESS.glob("duet_*.py")}
    for node in ast.walk(tree):
        if id(node) in type_checking_only:
            continue
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            assert module.split(".")[0] in allowed, f"{name} imports {module} at run time"


def test_barrier_under_python_3_8(shm_path: str, processes: Processes) -> None:
    pythons = old_pythons()
    if not pythons:
        pytest.skip("no Python 3.8 interpreter on this machine (looked in ~/.pyenv and /usr)")
    with db.create(shm_path) as orchestrator:
        peer = python_peer(processes, shm_path, 1, 50, python=pythons[0])
        with db.attach(shm_path, 0) as party:
            for _ in range(50):
                party.wait(10_000_000_000)
        assert peer_result(peer)["outcome"] == "done"
        assert orchestrator.generations() == (50, 50)
