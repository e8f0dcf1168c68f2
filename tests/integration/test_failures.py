"""Failures that explain themselves (issue 15, "Failures"): the real CLI on real processes and
real git repositories; what a user reads on the terminal and the exit code CI acts on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.gitrepo import make_repo

pytestmark = pytest.mark.usefixtures("no_leftovers")

#: What a Python repr of a record or a mapping looks like in a message: `Limits(memory_bytes=`,
#: `{'commit': `, `SideRecord(`.
PYTHON_REPR = re.compile(r"\b[A-Z]\w*\(\w+=|\{'\w+': |\[\('")


def duet(
    *args: str, cwd: Path | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
    )


def run_args(out: Path, baseline: str, candidate: str, *extra: str) -> list[str]:
    return [
        "run", "--baseline", baseline, "--candidate", candidate, "--runs", "5",
        "--iterations", "3", "--warmup", "1", "--isolation", "affinity", "--out", str(out),
        "--max-failures", "10", *extra,
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# A failing side: its cause once, and no retry of what fails the same way every time


@pytest.mark.parametrize("quiet", [False, True], ids=["progress", "quiet"])
def test_a_command_not_found_is_shown_once_and_stops_after_the_first_run(
    tmp_path: Path, quiet: bool
) -> None:
    out = tmp_path / "r.json"
    extra = ("--quiet",) if quiet else ()
    done = duet(*run_args(out, "no-such-command-xyz", "true", *extra))
    assert done.returncode == 3, done.stderr
    err = done.stderr
    # The command's exit status, not the worker's exit code 3 wrapped around it.
    assert err.count("exited with status 127") == 1, err
    assert "exit code 3" not in err
    # The last lines of its stderr, once: the shell's own words.
    assert err.count("no-such-command-xyz: not found") == 1, err
    assert "baseline stderr (last line):" in err
    # Stopped after the first run, and said why.
    doc = json.loads(out.read_text())
    bench = doc["benchmarks"][0]
    assert len(bench["runs"]) == 1
    assert "stopped after run 1 of 5" in bench["note"]
    assert "every run would fail the same way" in err
    assert "no successful run (stopped after run 1 of 5" in err
    # The fix fits the failure: nothing to raise for a command that is not there.
    assert "fix what that cause names (run the benchmark's command by hand" in err
    assert "--timeout" not in err


@pytest.mark.parametrize(
    ("baseline", "candidate", "cause"),
    [
        ("true", "cat missing-input.txt", "candidate: the command exited with status 1"),
        ("exit 2", "true", "baseline: the command exited with status 2"),
    ],
    ids=["missing-file", "exit-2"],
)
def test_a_failure_at_the_start_stops_after_the_first_run(
    tmp_path: Path, baseline: str, candidate: str, cause: str
) -> None:
    out = tmp_path / "r.json"
    done = duet(*run_args(out, baseline, candidate), cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    runs = json.loads(out.read_text())["benchmarks"][0]["runs"]
    assert len(runs) == 1
    assert runs[0]["reason"].startswith(cause), runs[0]["reason"]
    assert done.stderr.count(cause) == 1, done.stderr


def test_a_native_program_failing_at_the_start_stops_after_the_first_run(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = duet(
        *run_args(
            out,
            "sh -c 'echo cannot open data.bin >&2; exit 1'",
            "true",
            "--native",
            "--name",
            "reader",
        ),
        cwd=tmp_path,
    )
    assert done.returncode == 3, done.stderr
    runs = json.loads(out.read_text())["benchmarks"][0]["runs"]
    assert len(runs) == 1
    assert runs[0]["baseline"]["exit_code"] == 1
    assert done.stderr.count("cannot open data.bin") == 1, done.stderr


def test_a_failure_after_some_iterations_is_retried(tmp_path: Path) -> None:
    # Every run fails in its second iteration: the start works, so the failure may be the
    # machine's or the data's; runs go on up to --max-failures as before.
    out = tmp_path / "r.json"
    count = tmp_path / "count"
    second = f"echo x >> {count}; [ $(( $(wc -l < {count}) % 2 )) -eq 1 ] || exit 9"
    done = duet(*run_args(out, "true", second, "--max-failures", "2", "--warmup", "0"))
    assert done.returncode == 3, done.stderr
    runs = json.loads(out.read_text())["benchmarks"][0]["runs"]
    assert len(runs) == 3  # more than --max-failures 2
    assert all(r["candidate"]["iterations_ns"] or r["candidate"]["warmup_ns"] for r in runs)
    assert done.stderr.count("exited with status 9") == 3
    assert "more than --max-failures 2" in done.stderr
    assert "every run would fail the same way" not in done.stderr


def test_a_failure_after_a_successful_run_is_not_taken_for_a_repeating_one(
    tmp_path: Path,
) -> None:
    # The first run succeeds, every later one fails at once: not "the same in every run".
    out = tmp_path / "r.json"
    count = tmp_path / "count"
    later = f"echo x >> {count}; [ $(wc -l < {count}) -le 3 ] || exit 5"
    done = duet(
        *run_args(out, "true", later, "--max-failures", "1", "--warmup", "0", "--iterations", "3")
    )
    assert done.returncode == 3, done.stderr
    runs = json.loads(out.read_text())["benchmarks"][0]["runs"]
    assert [r["status"] for r in runs] == ["ok", "failed", "failed"]


# --------------------------------------------------------------------------------------------
# Exit codes as documented


def test_a_results_path_that_is_a_directory_or_missing_exits_3(tmp_path: Path) -> None:
    (tmp_path / "duet-results").mkdir()
    cases = [
        ("analyze",),
        ("report",),
        ("merge", "--out", str(tmp_path / "m"), str(tmp_path / "other.json")),
    ]
    for command in cases:
        for path, says in (
            (tmp_path / "duet-results", "is a directory without a results.json"),
            (tmp_path / "nothing.json", "no such file"),
        ):
            done = duet(command[0], str(path), *command[1:])
            assert done.returncode == 3, (command, path, done.stderr)
            assert says in done.stderr, done.stderr
            assert "Traceback" not in done.stderr
    done = duet("calibrate", "--results", str(tmp_path / "duet-results"))
    assert done.returncode == 3, done.stderr
    # The --out DIR of a compare: its results.json is read (here not a results document).
    (tmp_path / "duet-results" / "results.json").write_text("{}")
    done = duet("analyze", str(tmp_path / "duet-results"))
    assert done.returncode == 3
    assert "results.json" in done.stderr
    assert "directory" not in done.stderr


def test_fail_on_inconclusive(tmp_path: Path) -> None:
    fixture = json.loads(
        (Path(__file__).parents[1] / "fixtures" / "results-basic.json").read_text()
    )

    def exit_code(names: list[str], fail_on: str) -> int:
        data = dict(fixture, benchmarks=[b for b in fixture["benchmarks"] if b["name"] in names])
        path = tmp_path / f"{'-'.join(names)}.json"
        path.write_text(json.dumps(data))
        done = duet("analyze", str(path), "--fail-on", fail_on, "--reps", "2000")
        assert done.returncode in (0, 1), done.stderr
        return done.returncode

    # noisy-io is inconclusive, render-page no change, sort-1M an improvement, parse-json a
    # regression (at the defaults: 99%, threshold 2%).
    assert exit_code(["noisy-io", "render-page"], "regression") == 0
    assert exit_code(["noisy-io", "render-page"], "inconclusive") == 1
    assert exit_code(["noisy-io", "render-page"], "any") == 0
    assert exit_code(["render-page", "sort-1M"], "inconclusive") == 0
    assert exit_code(["parse-json", "render-page"], "inconclusive") == 1
    for command in ("run", "compare", "merge", "analyze"):
        help_text = duet(command, "--help").stdout
        assert "[regression|inconclusive|any|never]" in help_text, command


# --------------------------------------------------------------------------------------------
# duet compare: refs and where its configuration comes from

SUITE = (
    'runs = 2\niterations = 2\nwarmup = 0\nisolation = "affinity"\nbuild = "true"\n'
    '\n[[benchmark]]\nname = "{name}"\ncommand = "true"\n'
)


def compare(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # These tests are about messages and configuration: the verdict of their A/A is not asserted.
    return duet(
        "compare", *args, "--no-plots", "--reps", "200", "--quiet", "--fail-on", "never", cwd=repo
    )


def test_an_unknown_ref_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", [{"duet.toml": SUITE.format(name="t")}])
    done = compare(repo.path, "no-such-branch", "HEAD", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "'no-such-branch' does not name a commit" in done.stderr
    assert "fix: check the name" in done.stderr


def test_base_and_head_being_the_same_commit_is_said_loudly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", [{"duet.toml": SUITE.format(name="t")}])
    out = tmp_path / "out"
    done = compare(repo.path, "main", "HEAD", "--out", str(out))
    assert done.returncode == 0, done.stderr
    sha = repo.rev_parse("HEAD")[:12]
    assert f"warning: BASE (main) and HEAD (HEAD) are the same commit {sha}" in done.stderr
    assert "an A/A comparison" in done.stderr
    assert json.loads((out / "results.json").read_text())["config"]["same_commit"] is True
    # Two different commits: not a word about it.
    repo.commit({"other.txt": "x"}, "another commit")
    done = compare(repo.path, "main~1", "HEAD", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "same commit" not in done.stderr
    assert "same_commit" not in json.loads((out / "results.json").read_text())["config"]


def test_a_config_outside_the_repository_is_read_from_disk(tmp_path: Path) -> None:
    """Trying duet on a project's history before committing anything (issue 15)."""
    repo = make_repo(tmp_path / "p", [{"a.txt": "1"}, {"a.txt": "2"}])
    outside = tmp_path / "elsewhere" / "duet.toml"
    outside.parent.mkdir()
    outside.write_text(SUITE.format(name="from-disk"))
    out = tmp_path / "out"
    done = compare(repo.path, "HEAD~1", "HEAD", "--config", str(outside), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"configuration: {outside}, read from disk (outside the repository" in done.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["config_source"] == {"path": str(outside), "from": "disk"}
    assert [b["name"] for b in doc["benchmarks"]] == ["from-disk"]
    # A relative path that leaves the repository is outside it too.
    done = compare(
        repo.path, "HEAD~1", "HEAD", "--config", "../elsewhere/duet.toml", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert "read from disk" in done.stderr
    missing = tmp_path / "elsewhere" / "nope.toml"
    done = compare(repo.path, "HEAD~1", "HEAD", "--config", str(missing), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert f"--config {missing}: no such file (a path outside the repository is read" in done.stderr


def test_a_config_inside_the_repository_is_read_at_head(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "p", [{"a.txt": "1"}, {"ci/duet.toml": SUITE.format(name="committed")}]
    )
    # The working tree's copy differs from HEAD's: HEAD's is the one measured.
    (repo.path / "ci" / "duet.toml").write_text(SUITE.format(name="edited"))
    out = tmp_path / "out"
    sha = repo.rev_parse("HEAD")[:12]
    for given in ("ci/duet.toml", str(repo.path / "ci" / "duet.toml")):
        done = compare(repo.path, "HEAD~1", "HEAD", "--config", given, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert f"configuration: ci/duet.toml at HEAD (HEAD, {sha})" in done.stderr
        doc = json.loads((out / "results.json").read_text())
        assert [b["name"] for b in doc["benchmarks"]] == ["committed"]
        assert doc["config"]["config_source"] == {
            "path": "ci/duet.toml",
            "from": "commit",
            "commit": repo.rev_parse("HEAD"),
        }
    # Uncommitted, inside the repository: the message says where it looked and both ways out.
    (repo.path / "duet.toml").write_text(SUITE.format(name="untracked"))
    done = compare(
        repo.path, "HEAD~1", "HEAD", "--config", str(repo.path / "duet.toml"), "--out", str(out)
    )
    assert done.returncode == 2, done.stderr
    assert f"HEAD (HEAD, {sha}) has no duet.toml: a --config path inside the repository" in (
        done.stderr
    )
    assert "fix: commit it (git add duet.toml && git commit), or give a copy outside" in (
        done.stderr
    )


# --------------------------------------------------------------------------------------------
# No Python repr in what a user reads


def test_no_python_repr_in_failure_messages(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", [{"a.txt": "1"}, {"a.txt": "2"}])
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(name="t").replace('build = "true"', 'build = "exit 3"'))
    isolation = "cgroup" if os.geteuid() == 0 else "affinity"
    runs = [
        ("r1.json", "no-such-command-xyz", "true"),
        ("r2.json", "true", "python3 -c 'raise SystemExit(\"boom\")'"),
    ]
    outputs = []
    for name, baseline, candidate in runs:
        done = duet(*run_args(tmp_path / name, baseline, candidate), "--isolation", isolation)
        assert done.returncode == 3, done.stderr
        outputs.append(done)
    outputs += [
        duet(
            "merge",
            str(tmp_path / "r1.json"),
            str(tmp_path / "r2.json"),
            "--out",
            str(tmp_path / "m.json"),
        ),
        duet("analyze", str(tmp_path)),
        compare(repo.path, "HEAD~1", "HEAD", "--out", str(tmp_path / "o")),
        compare(repo.path, "nope", "HEAD", "--out", str(tmp_path / "o")),
        compare(repo.path, "HEAD~1", "HEAD", "--config", str(suite), "--out", str(tmp_path / "o")),
    ]
    # The build failed with the suite from disk: the results still say where it came from.
    stopped = json.loads((tmp_path / "o" / "results.json").read_text())
    assert "build failed" in stopped["state"]["stopped"]
    assert stopped["config"]["config_source"] == {"path": str(suite), "from": "disk"}
    for done in outputs:
        assert done.returncode in (2, 3), done.args
        text = done.stdout + done.stderr
        assert "duet: error: " in text, done.args
        assert not PYTHON_REPR.search(text), text


def test_no_python_repr_in_the_affinity_only_warning(tmp_path: Path) -> None:
    done = duet(*run_args(tmp_path / "r.json", "true", "true", "--runs", "2", "--quiet"))
    assert done.returncode == 0, done.stderr
    assert "not enforced" in done.stderr
    assert not PYTHON_REPR.search(done.stderr), done.stderr
    assert "processes) are not enforced" in done.stderr


def test_a_failed_run_on_a_terminal_keeps_its_cause_under_the_bar(tmp_path: Path) -> None:
    """On a terminal the bar redraws itself with "\\r": the cause must be printed on lines of its
    own, once, not drawn over by the next step."""
    import pty

    main_fd, child_fd = pty.openpty()
    argv = [sys.executable, "-m", "duet_bench", *run_args(tmp_path / "r.json", "true", "exit 6")]
    # The report (stdout) sums the failed runs up again; the terminal's stderr is under test.
    proc = subprocess.Popen(
        argv,
        stdin=child_fd,
        stdout=subprocess.DEVNULL,
        stderr=child_fd,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # EIO: the child side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    assert proc.wait(timeout=120) == 3
    screen = b"".join(chunks).decode(errors="replace")
    lines = screen.replace("\r\n", "\n").split("\n")
    cause = "candidate: the command exited with status 6 in iteration 0 (warmup)"
    assert sum(cause in line for line in lines) == 1, screen
    # The cause's line is not overwritten: no carriage return on it or right after it.
    at = next(i for i, line in enumerate(lines) if cause in line)
    assert "\r" not in lines[at], repr(lines[at])
    assert "run 1/5 FAILED" in lines[at - 1]
