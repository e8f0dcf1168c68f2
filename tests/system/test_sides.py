"""Issue 33: each side sees only itself, and duet records where it really ran.

Real ``duet run`` invocations as root with cgroups (the isolation the issue measured).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from duet_bench import results
from tests.system.test_faults import ISOLATION, QUICK, assert_nothing_left, clean, duet

pytestmark = [pytest.mark.root, pytest.mark.measures]

#: A command that pins itself to the lowest CPU of its cpuset (a CPU of the pair, whatever the
#: machine), then works about 10 ms: every iteration, wherever duet moved it.
PINS_ITSELF = (
    'python3 -c "import os, time\n'
    "path = open('/proc/self/cpuset').read().strip()\n"
    "for f in ('/sys/fs/cgroup/cpuset' + path + '/cpuset.cpus',"
    " '/sys/fs/cgroup' + path + '/cpuset.cpus.effective'):\n"
    "    try:\n"
    "        text = open(f).read().strip(); break\n"
    "    except OSError:\n"
    "        pass\n"
    "low = int(text.replace('-', ',').split(',')[0])\n"
    "os.sched_setaffinity(0, {low})\n"
    "end = time.monotonic() + 0.01\n"
    'while time.monotonic() < end: pass\n"'
)
BUSY = 'python3 -c "import time\nend = time.monotonic() + 0.01\nwhile time.monotonic() < end: pass"'


def test_a_side_that_pins_itself_is_recorded_where_it_ran(tmp_path: Path, tag: str) -> None:
    """Issue 33, finding 3: a candidate that calls ``sched_setaffinity(0, {0})`` ran on CPU 0 in
    every iteration, its ``iteration_cpus`` said ``[0,1,0,1,0]`` and the report blamed the
    machine. The record is where it ran (read at the end of each iteration), and the report
    says in plain words that the candidate pinned itself. An exact answer, not a measurement:
    no chance of failing by chance."""
    out = tmp_path / "out"
    done = duet(
        "run", "--baseline", BUSY, "--candidate", PINS_ITSELF, "--name", "pinned",
        "--runs", "2", "--iterations", "5", "--isolation", ISOLATION, "--out", str(out),
        "--format", "text", *(a for a in QUICK if a != "--quiet"), "--quiet", tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    [bench] = results.load(out / "results.json").benchmarks
    pair: set[int] = set()
    for run in bench.runs:
        assert run.ok, run.reason
        pair |= set(run.baseline.iteration_cpus or ())
    assert len(pair) == 2, f"the baseline did not cross over: {pair}"
    low = min(pair)
    for run in bench.runs:
        # The baseline alternates; the candidate stayed on the CPU it pinned itself to.
        assert run.candidate.iteration_cpus == (low,) * 5, run.candidate.iteration_cpus
    assert f"the candidate pinned itself to CPU {low}" in done.stdout, done.stdout
    report = (out / "report.md").read_text()
    assert f"the candidate pinned itself to CPU {low}" in report
    # Sharing a CPU is not a difference between the cores (issue 33, finding 3).
    assert "the cores differ" not in done.stdout
    assert "the cores differ" not in report
    assert json.loads((out / "results.json").read_text())["benchmarks"][0]["name"] == "pinned"


#: The baseline finds the run's directory from its worker's spec (an ancestor's argument), then
#: tries to write into the candidate's directory and its private /tmp, and lists them.
REACH_THE_OTHER_SIDE = """
import glob, json, os, sys
pid, spec = os.getppid(), None
while pid > 1 and spec is None:
    args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
    spec = next((a.decode() for a in args if a.endswith(b"spec.json")), None)
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
run = os.path.dirname(os.path.dirname(spec))
targets = [os.path.join(run, "candidate"), *glob.glob(os.path.join(run, "candidate-tmp-*"))]
reached, seen = [], []
for target in targets:
    try:
        seen += os.listdir(target)
        with open(os.path.join(target, "from-baseline"), "w"):
            pass
        reached.append(target)
    except OSError:
        pass
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"targets": targets, "reached": reached, "seen": seen}) + "\\n")
"""


def test_a_side_cannot_reach_the_other_sides_files(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    """Issue 33, finding 4: the baseline created files in the candidate's directory and its
    private /tmp (both sides run as the same user; as root here, which may write anywhere).
    In the baseline's mount namespace both are covered by an empty read-only tmpfs. An exact
    answer: no chance of failing by chance."""
    probe, log = shared_dir / "probe.py", shared_dir / "log"
    probe.write_text(REACH_THE_OTHER_SIDE)
    done = duet(
        "run", "--baseline", f"python3 {probe} {log}", "--candidate", "sleep 0.01",
        "--name", "reach", "--runs", "2", "--iterations", "2", "--isolation", ISOLATION,
        "--out", str(tmp_path / "out"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 4, lines
    for line in lines:
        assert len(line["targets"]) == 2, f"the probe found no candidate files: {line}"
        assert line["reached"] == [], f"the baseline wrote into {line['reached']}"
        assert line["seen"] == [], f"the baseline saw the candidate's files {line['seen']}"


#: The baseline lists every process it can see, with its command line, and tries to read the
#: environment of the process that started duet (the test: the invoking shell's place).
SEE_THE_OTHERS = """
import json, os, sys
log, invoker = sys.argv[1], int(sys.argv[2])
seen = {}
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            seen[entry] = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
        except OSError:
            seen[entry] = None
try:
    environ = len(open(f"/proc/{invoker}/environ", "rb").read())
except OSError as e:
    environ = e.strerror
with open(log, "a") as f:
    f.write(json.dumps({"seen": seen, "environ": environ}) + "\\n")
"""


def test_a_side_sees_no_process_but_its_own(tmp_path: Path, tag: str, shared_dir: Path) -> None:
    """Issue 33, finding 2: in the host's PID namespace a side listed every process of the
    machine (the other side, duet, the shell that started it) and read their environments
    where it ran as their user. In a PID namespace of its own with its own ``/proc``, the
    baseline sees its namespace's init (PID 1, duet's), its worker and its own command, and
    ``/proc/<pid>/environ`` of the process that started duet does not exist for it. An exact
    answer: no chance of failing by chance."""
    probe, log = shared_dir / "probe.py", shared_dir / "log"
    probe.write_text(SEE_THE_OTHERS)
    marker = f"candidate-{tag}"
    done = duet(
        "run", "--baseline", f"python3 {probe} {log} {os.getpid()}",
        "--candidate", f"python3 -c 'import time; time.sleep(0.05)' {marker}",
        "--name", "see", "--runs", "2", "--iterations", "2", "--isolation", ISOLATION,
        "--out", str(tmp_path / "out"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 4, lines
    for line in lines:
        seen: dict[str, str | None] = line["seen"]
        assert str(probe) in " ".join(c or "" for c in seen.values()), "it did not see itself"
        # PID 1 is the namespace's init, a copy of duet: duet's command line, which names the
        # candidate's command (as `ps` shows it to everyone on the host), no process of it.
        others = {pid: c or "" for pid, c in seen.items() if pid != "1"}
        assert not [c for c in others.values() if marker in c], f"it saw the candidate: {seen}"
        assert not [c for c in others.values() if "pytest" in c], f"it saw the test: {seen}"
        assert not [c for c in others.values() if "-m duet_bench" in c], f"it saw duet: {seen}"
        assert len(seen) <= 5, f"it saw more than its init, worker and command: {seen}"
        assert line["environ"] == "No such file or directory", line


#: A command side that, in its first iteration of a run, leaves a double-forked ``setsid``
#: daemon with 8 threads, and in every iteration records its own CPUs and each thread's of the
#: daemon (the side's temporary directory, fresh for each run, keeps the daemon's pid from one
#: iteration to the next: its private /tmp, or TMPDIR where a checkout under /tmp keeps /tmp).
DAEMON_THAT_CROSSES = """
import json, os, sys, threading, time
state = os.path.join(os.environ["TMPDIR"], "daemon.pid")
if not os.path.exists(state):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for _ in range(7):
                threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
            with open(state + ".new", "w") as f:
                f.write(str(os.getpid()))
            os.rename(state + ".new", state)
            time.sleep(1000)
        os._exit(0)
    os.wait()
    while not os.path.exists(state):
        time.sleep(0.01)
pid = int(open(state).read())
tids = os.listdir(f"/proc/{pid}/task")
theirs = sorted({tuple(sorted(os.sched_getaffinity(int(t)))) for t in tids})
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"mine": sorted(os.sched_getaffinity(0)), "theirs": theirs,
                        "threads": len(tids)}) + "\\n")
"""


def test_a_daemon_with_threads_crosses_over_with_its_side(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    """What held before the PID namespace must still hold in it (issue 33, "what held"): a
    double-forked ``setsid`` daemon with 8 threads, left by the candidate's first iteration,
    is moved with its side at every crossover (the cgroup's task list, read in the side's own
    namespace, lists it), and nothing is left afterwards. An exact answer: no chance of
    failing by chance."""
    probe, log = shared_dir / "daemon.py", shared_dir / "log"
    probe.write_text(DAEMON_THAT_CROSSES)
    done = duet(
        "run", "--baseline", BUSY, "--candidate", f"python3 {probe} {log}", "--name", "daemon",
        "--runs", "2", "--iterations", "4", "--isolation", ISOLATION,
        "--out", str(tmp_path / "out"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 8, lines
    for line in lines:
        assert len(line["mine"]) == 1, f"the side was not pinned: {line}"
        assert line["threads"] == 8, line
        assert line["theirs"] == [line["mine"]], f"the daemon stayed behind: {line}"
    assert len({line["mine"][0] for line in lines}) == 2, f"no crossover: {lines}"
    assert_nothing_left(done.pid, tag)


#: A python benchmark that records, once per process, how many processes it sees and whether it
#: can read the environment of the process that started duet; the calibration of its inner
#: loops (``--calibrate`` in its worker's arguments) runs it too.
PEEK = """
import json, os, sys
LOG, INVOKER, done = {log!r}, {invoker}, []
def run():
    if done:
        return
    done.append(1)
    try:
        environ = len(open(f"/proc/{{INVOKER}}/environ", "rb").read())
    except OSError as e:
        environ = e.strerror
    pids = [e for e in os.listdir("/proc") if e.isdigit()]
    with open(LOG, "a") as f:
        f.write(json.dumps({{"calibrating": "--calibrate" in sys.argv, "seen": len(pids),
                            "environ": environ}}) + "\\n")
"""


def test_a_python_benchmark_and_its_calibration_see_only_themselves(
    tmp_path: Path, tag: str, shared_dir: Path
) -> None:
    """Finding 2 for a python callable: its inner-loop calibration (before the runs, outside
    the sides' containers) runs the pull request's code too, and in its own PID namespace as
    the sides do. An exact answer: no chance of failing by chance."""
    log = shared_dir / "log"
    (shared_dir / "peek.py").write_text(PEEK.format(log=str(log), invoker=os.getpid()))
    done = duet(
        "run", "--python-baseline", sys.executable, "--python-candidate", sys.executable,
        "--callable", "peek:run", "--baseline-dir", str(shared_dir),
        "--candidate-dir", str(shared_dir), "--name", "peek", "--runs", "2", "--iterations", "2",
        "--isolation", ISOLATION, "--out", str(tmp_path / "out"), *QUICK, tag=tag,
    )  # fmt: skip
    clean(done)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert {line["calibrating"] for line in lines} == {True, False}, lines
    for line in lines:
        # Its init, its worker (the callable runs in it): nothing else.
        assert line["seen"] <= 3, f"it saw {line['seen']} processes: {line}"
        assert line["environ"] == "No such file or directory", line
