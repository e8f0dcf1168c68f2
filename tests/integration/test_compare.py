"""``duet compare`` end to end on real git repositories made by the tests (asv's way)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from duet_bench.analysis.verdict import verdict
from duet_bench.lock import acquire as acquire_lock
from tests.aa import assert_neither_side_favoured
from tests.conftest import is_root
from tests.integration.gitrepo import GitRepo, make_repo, shallow_clone

pytestmark = pytest.mark.usefixtures("no_leftovers")

WORK_C = textwrap.dedent(
    """
    #include <stdint.h>
    #include <stdio.h>
    int main(void) {
        uint64_t x = 88172645463325252ULL, acc = 0;
        for (uint64_t i = 0; i < STEPS; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17; acc += x & 0xff;
        }
        printf("%llu\\n", (unsigned long long)acc);
        return 0;
    }
    """
)


def config(*benchmarks: str, build: str = "cc -O2 -o work work.c", extra: str = "") -> str:
    head = (
        f'runs = 6\niterations = 5\nwarmup = 1\nisolation = "{ISOLATION}"\n'
        f'build = "{build}"\n{extra}'
    )
    return head + "".join(benchmarks)


ISOLATION = "cgroup" if is_root() else "affinity"


def bench(name: str, command: str) -> str:
    return f'\n[[benchmark]]\nname = "{name}"\ncommand = "{command}"\n'


def project(tmp_path: Path, steps_base: int = 8_000_000, steps_head: int = 10_400_000) -> GitRepo:
    files = {
        "work.c": WORK_C.replace("STEPS", str(steps_base)),
        "duet.toml": config(bench("xorshift", "./work")),
    }
    repo = make_repo(tmp_path / "project", [files])
    repo.tag("base", "HEAD")
    repo.commit({"work.c": WORK_C.replace("STEPS", str(steps_head))}, "make it 30% slower")
    return repo


def duet(repo: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", "compare", *args, "--quiet", "--reps", "2000"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_slower_head_is_a_regression_and_every_output_is_written(tmp_path: Path) -> None:
    repo = project(tmp_path)
    before = repo.state()
    out = tmp_path / "out"
    done = duet(repo.path, "base", "HEAD", "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regression" in done.stdout
    doc = json.loads((out / "results.json").read_text())
    b = doc["benchmarks"][0]
    assert b["analysis"]["verdict"] == "regression"
    assert 1.15 < b["analysis"]["ratio"] < 1.5
    versions = doc["config"]["versions"]
    assert versions["baseline"]["commit"] == repo.rev_parse("base")
    assert versions["candidate"]["commit"] == repo.rev_parse("HEAD")
    for name in ("report.md", "junit.xml", "metrics.txt", "logs/build-baseline.log"):
        assert (out / name).is_file(), name
    assert "regression" in (out / "report.md").read_text()
    assert (
        'type="regression"' in (out / "junit.xml").read_text()
        or "<failure" in (out / "junit.xml").read_text()
    )
    assert list((out / "plots").glob("*.png"))
    # The user's checkout, index and branches are untouched; no worktree is left registered.
    assert repo.state() == before


def test_head_against_itself_favours_neither_side(tmp_path: Path) -> None:
    # An A/A comparison through compare (builds, worktrees): the sign test over 20 runs fails
    # a fair duet in 1 CI run of 25,000 whatever the noise (tests/aa.py).
    repo = project(tmp_path)
    done = duet(
        repo.path, "HEAD", "HEAD", "--out", str(tmp_path / "out"), "--no-plots",
        "--runs", "20", "--fail-on", "never",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert_neither_side_favoured(doc["benchmarks"][0])


def test_a_failing_build_exits_3_with_the_log_tail(tmp_path: Path) -> None:
    repo = project(tmp_path)
    repo.commit({"work.c": "this is not C"}, "break the build")
    out = tmp_path / "out"
    done = duet(repo.path, "base", "HEAD", "--out", str(out))
    assert done.returncode == 3
    assert "build" in done.stderr
    assert "error" in done.stderr  # the compiler's message, from the log tail
    assert "Traceback" not in done.stderr
    doc = json.loads((out / "results.json").read_text())
    assert "build failed" in doc["state"]["stopped"]


def test_a_benchmark_missing_in_base_is_reported_not_measured(tmp_path: Path) -> None:
    repo = project(tmp_path)
    repo.commit(
        {"duet.toml": config(bench("xorshift", "./work"), bench("new-one", "./work"))},
        "add a benchmark",
    )
    out = tmp_path / "out"
    done = duet(repo.path, "base", "HEAD", "--out", str(out), "--no-plots")
    # Exit 3 (outranks the regression): the report and results are written first.
    assert done.returncode == 3, done.stdout + done.stderr
    assert "new-one: missing in the baseline's configuration" in done.stderr
    assert "--allow-missing" in done.stderr
    assert "Traceback" not in done.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["missing_in_baseline"] == ["new-one"]
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    assert by_name["new-one"]["runs"] == []
    assert "missing in the baseline" in by_name["new-one"]["note"]
    assert len(by_name["xorshift"]["runs"]) == 6  # measured, whatever its verdict
    assert "missing in the baseline" in done.stdout
    assert "missing in the baseline" in (out / "report.md").read_text()

    allowed = duet(
        repo.path, "base", "HEAD", "--out", str(tmp_path / "allowed"), "--no-plots",
        "--allow-missing", "--fail-on", "never",
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_a_benchmark_threshold_survives_duet_analyze_and_report(tmp_path: Path) -> None:
    """Issue 14: compare judged with the benchmark's threshold, then duet analyze and duet
    report --reps judged the same results with the command-line default."""
    repo = project(tmp_path)
    # HEAD is about 30% slower; this benchmark only cares about a doubling.
    repo.commit({"duet.toml": config(bench("xorshift", "./work") + "threshold = 1.0\n")}, "lax")
    out = tmp_path / "out"
    done = duet(repo.path, "base", "HEAD", "--out", str(out), "--no-plots", "--fail-on", "never")
    assert done.returncode == 0, done.stdout + done.stderr
    measured = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert measured["settings"]["analysis"]["threshold"] == 1.0
    assert measured["settings"]["analysis"]["reps"] == 2000

    def again(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "duet_bench",
                *args,
                str(out / "results.json"),
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        analysis: dict[str, Any] = json.loads(done.stdout)["benchmarks"][0]["analysis"]
        return analysis

    # Judged at the threshold recorded, whatever the measured ratio: the verdict is the one its
    # ratio and interval give at that threshold (exact; 30% at threshold 1.0 and 0.02 give two
    # verdicts apart from rare data sets, so a threshold ignored shows).
    def judged_at(analysis: dict[str, Any], threshold: float) -> None:
        assert analysis["threshold"] == threshold
        expected = verdict(
            ratio=analysis["ratio"],
            ci_low=analysis["ci_low"],
            ci_high=analysis["ci_high"],
            threshold=threshold,
        )
        assert analysis["verdict"] == expected, analysis

    judged_at(measured["analysis"], 1.0)
    for analysis in (again("analyze"), again("report", "--reps", "1000")):
        judged_at(analysis, 1.0)
    # An option given explicitly still wins.
    judged_at(again("analyze", "--threshold", "0.02", "--fail-on", "never"), 0.02)


def test_a_shallow_clone_fetches_the_base(tmp_path: Path) -> None:
    origin = project(tmp_path)
    ci = shallow_clone(origin.path, tmp_path / "ci", depth=1)
    done = duet(
        ci.path, "HEAD~1", "HEAD", "--out", str(tmp_path / "out"), "--no-plots",
        "--fail-on", "never",  # about fetching the base, not the verdict
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    versions = json.loads((tmp_path / "out" / "results.json").read_text())["config"]["versions"]
    assert versions["baseline"]["commit"] == origin.rev_parse("base")


def test_unknown_ref_is_a_clean_error(tmp_path: Path) -> None:
    repo = project(tmp_path)
    done = duet(repo.path, "no-such-branch", "HEAD", "--out", str(tmp_path / "out"))
    # A usage error (2), not an infrastructure failure (3) that CI would call a broken machine.
    assert done.returncode == 2, done.stderr
    assert "no-such-branch" in done.stderr
    assert "Traceback" not in done.stderr


def test_python_benchmarks_in_two_virtualenvs(tmp_path: Path) -> None:
    bench_py = "def run():\n    return sum(i * i for i in range({n}))\n"
    toml = (
        f'runs = 5\niterations = 5\nwarmup = 1\nisolation = "{ISOLATION}"\n'
        f'build = "{sys.executable} -m venv --without-pip .venv"\npython = ".venv/bin/python"\n'
        '\n[[benchmark]]\nname = "squares"\npython = "benchmod:run"\n'
    )
    repo = make_repo(
        tmp_path / "py", [{"benchmod.py": bench_py.format(n=20000), "duet.toml": toml}]
    )
    repo.tag("base", "HEAD")
    repo.commit({"benchmod.py": bench_py.format(n=40000)}, "twice the work")
    out = tmp_path / "out"
    done = duet(
        repo.path, "base", "HEAD", "--out", str(out), "--no-plots",
        "--fail-on", "never",  # about the virtualenvs, not the verdict
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    b = json.loads((out / "results.json").read_text())["benchmarks"][0]
    assert b["kind"] == "python"
    assert ".venv/bin/python" in b["versions"]["baseline"]["interpreter"]
    assert ".venv/bin/python" in b["versions"]["candidate"]["interpreter"]
    # Each side ran its own commit's module: twice the work (tests/budget.toml).
    assert 1.3 < b["analysis"]["ratio"] < 2.6


def test_shards_and_merge(tmp_path: Path) -> None:
    repo = project(tmp_path)
    repo.commit(
        {"duet.toml": config(bench("a", "./work"), bench("b", "./work"), bench("c", "./work"))},
        "three",
    )
    repo.tag("base3", "HEAD")
    shards = []
    for i in (1, 2):
        out = tmp_path / f"shard{i}"
        done = duet(
            repo.path, "base3", "HEAD", "--out", str(out), "--shard", f"{i}/2", "--no-plots",
            "--fail-on", "never",  # about which benchmarks each shard ran, not their verdicts
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        shards.append(out / "results.json")
    names = [[b["name"] for b in json.loads(p.read_text())["benchmarks"]] for p in shards]
    assert names == [["a", "c"], ["b"]]
    merged = tmp_path / "merged.json"
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "merge", *map(str, shards), "--out", str(merged)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [b["name"] for b in json.loads(merged.read_text())["benchmarks"]] == ["a", "b", "c"]


def test_compare_refuses_or_waits_while_another_duet_measures(tmp_path: Path) -> None:
    repo = project(tmp_path)
    lock_file = os.environ["DUET_LOCK"]  # this test run's own lock (tests/conftest.py)
    held = acquire_lock(path=lock_file, command="duet run --name holder")
    try:
        refused = duet(repo.path, "base", "HEAD", "--out", str(tmp_path / "a"), "--no-plots")
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert "duet run --name holder" in refused.stderr
        assert "--wait" in refused.stderr
        assert not (tmp_path / "a" / "results.json").exists()

        log_path = tmp_path / "waiting.log"
        with log_path.open("w") as log:
            waiting = subprocess.Popen(
                [sys.executable, "-m", "duet_bench", "compare", "base", "HEAD", "--wait", "--quiet",
                 "--reps", "2000", "--out", str(tmp_path / "b"), "--no-plots",
                 "--fail-on", "never"],
                cwd=repo.path, stdout=subprocess.DEVNULL, stderr=log, text=True,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while "waiting for it" not in log_path.read_text():
            assert waiting.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "compare --wait never said it waits"
            time.sleep(0.05)
        assert not (tmp_path / "b" / "results.json").exists()
    except BaseException:
        held.release()
        raise
    held.release()
    returncode = waiting.wait(timeout=300)
    # Measured once the lock is free (this test is about the lock, not the verdict).
    assert returncode == 0, log_path.read_text()
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert len(doc["benchmarks"][0]["runs"]) == 6


@pytest.mark.root
def test_under_sudo_builds_and_sides_run_as_the_invoking_user(tmp_path: Path) -> None:
    if not is_root():
        pytest.skip("running builds as another user needs root (CI runs this as root)")
    import shutil

    nobody = 65534
    cache = Path(f"/var/tmp/duet-worktrees-{nobody}")  # nobody has no home directory
    existed = cache.exists()
    # nobody's own repository, where nobody can reach it: git runs as the user the builds run
    # as (docs/isolation.md, "What runs as root").
    theirs = Path(tempfile.mkdtemp(prefix="nobody-repo-", dir="/var/tmp"))
    repo = make_repo(
        theirs / "project",
        [
            {
                "work.c": WORK_C.replace("STEPS", "1000000"),
                "duet.toml": config(
                    bench("who", "id -u >&2 && ./work"),
                    build="id -u && echo HOME=$HOME && cc -O2 -o work work.c",
                ),
            }
        ],
    )
    for path in (theirs, *theirs.rglob("*")):
        os.lchown(path, nobody, nobody)
    out = tmp_path / "out"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "duet_bench", "compare", "HEAD", "HEAD", "--quiet", "--reps",
            "2000",
             "--out", str(out), "--no-plots", "--fail-on", "never"],
            cwd=repo.path, capture_output=True, text=True, timeout=300, check=False,
            # Under sudo DUET_LOCK is the invoking user's path, opened as them: one nobody may
            # write (the suite's own is in root's pytest directory).
            env={**os.environ, "SUDO_UID": str(nobody), "SUDO_GID": str(nobody),
                 "DUET_LOCK": str(theirs / "duet.lock")},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        build_log = (out / "logs" / "build-baseline.log").read_text()
        assert "# user: nobody (uid 65534)" in build_log
        assert "\n65534\nHOME=/\n" in build_log
        doc = json.loads((out / "results.json").read_text())
        assert doc["environment"]["run_as"]["uid"] == nobody
        # The worktrees (nobody's: tests/integration/test_versions.py) are gone, and so is the
        # cache directory when no other run uses it.
        assert not [p for p in cache.rglob("*") if p.is_dir() and (p / ".git").exists()]
    finally:
        shutil.rmtree(theirs, ignore_errors=True)
        if not existed:
            shutil.rmtree(cache, ignore_errors=True)
