"""duet_bench.versions against real git repositories (made in tmp_path with the git binary).

Every test's user checkout is watched (the ``untouched`` fixture): its files, index (content and
mtime), HEAD, branches, tags, stash and worktree list must be the same afterwards, including
after a failed build and after an interrupt.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duet_bench.errors import EXIT_INFRASTRUCTURE, EXIT_USAGE, Interrupted, UsageError, VersionError
from duet_bench.isolation import RunAs
from duet_bench.versions import MAX_FETCH_GENERATIONS, MAX_SLOTS, BuildFailed, Versions
from tests.integration.gitrepo import (
    GitRepo,
    RepoState,
    clone,
    git_env,
    make_repo,
    shallow_clone,
)

Watch = Callable[[GitRepo], GitRepo]


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer configuration (hooks path, signing) and a private XDG cache."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def untouched() -> Iterator[Watch]:
    """``watch(repo)`` records a checkout's state; the test fails if it differs at the end."""
    watched: list[tuple[GitRepo, RepoState]] = []

    def watch(repo: GitRepo) -> GitRepo:
        watched.append((repo, repo.state()))
        return repo

    yield watch
    for repo, before in watched:
        assert repo.state() == before, f"the user's checkout {repo.path} was modified"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: v1 -> v2 (tags v2 annotated, light) -> v3; branch feature at v2 plus one commit;
    a stash; and a dirty checkout (modified, staged and untracked files). Made once, copied
    for each test (making it takes longer than most tests)."""
    repo = make_repo(
        tmp_path_factory.mktemp("template") / "project",
        [
            {"bench.sh": "v1", "duet.toml": "[suite]\nname = 'one'\n"},
            {"bench.sh": "v2", "sub/dir/data.txt": "nested\n"},
        ],
    )
    repo.tag("v2", message="release 2")
    repo.tag("light")
    repo.commit({"bench.sh": "v3", "duet.toml": None}, "third: drop duet.toml\n\nbody text")
    repo.branch("feature", "v2")
    repo.switch("feature")
    repo.commit({"feature.txt": "f"}, "feature work")
    repo.switch("main")
    (repo.path / "bench.sh").write_text("stashed")
    repo.git("stash", "-q")
    (repo.path / "bench.sh").write_text("uncommitted")
    (repo.path / "staged.txt").write_text("staged")
    repo.git("add", "staged.txt")
    (repo.path / "untracked.txt").write_text("untracked")
    return repo.path


@pytest.fixture
def project(template: Path, tmp_path: Path, untouched: Watch) -> GitRepo:
    """A copy of the template repository, watched by ``untouched``."""
    shutil.copytree(template, tmp_path / "project", symlinks=True)
    return untouched(GitRepo(tmp_path / "project"))


def count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def counting(counter: Path, extra: str = "") -> str:
    """A build command that appends a line to ``counter`` each time it runs."""
    return f'echo "$DUET_SIDE" >> {shlex.quote(str(counter))}{extra}'


# --------------------------------------------------------------------------------------------
# Resolving refs


def test_resolves_branches_tags_and_ancestry(project: GitRepo) -> None:
    refs = ["main", "feature", "v2", "light", "HEAD", "HEAD~1", "HEAD^", "main~2", "feature^"]
    with Versions(project.path) as versions:
        for ref in refs:
            assert versions.resolve(ref) == project.rev_parse(ref), ref


def test_resolves_short_and_full_shas(project: GitRepo) -> None:
    sha = project.rev_parse("HEAD~2")
    with Versions(project.path) as versions:
        assert versions.resolve(sha[:7]) == sha
        assert versions.resolve(sha) == sha
        assert versions.resolve(sha.upper()) == sha


def test_resolves_a_search_of_commit_messages(project: GitRepo) -> None:
    # `:/text` names the newest commit whose message matches; it used to be refused with
    # "names a commit, not a commit".
    with Versions(project.path) as versions:
        assert versions.resolve(":/feature work") == project.rev_parse("feature")
        with pytest.raises(VersionError) as caught:
            versions.resolve(":/no message says this")
        assert "no commit message in " in caught.value.message
        assert "matches 'no message says this'" in caught.value.message
        assert "git log --all --oneline --grep='no message says this'" in str(caught.value.fix)
        # git searches for "feature work~1": not "the history is too short".
        with pytest.raises(VersionError) as caught:
            versions.resolve(":/feature work~1")
        assert "'~1' is part of the text, not a step back" in caught.value.message
        assert "git rev-parse ':/feature work'" in str(caught.value.fix)
        assert caught.value.exit_code == EXIT_USAGE


def test_resolves_remote_tracking_refs_of_a_clone(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = untouched(clone(project, tmp_path / "clone"))
    with Versions(ci.path) as versions:
        assert versions.resolve("origin/main") == project.rev_parse("main")
        assert versions.resolve("origin/feature~1") == project.rev_parse("v2")


def test_works_from_a_subdirectory(project: GitRepo) -> None:
    with Versions(project.path / "sub" / "dir") as versions:
        assert versions.root == project.path.resolve()
        assert versions.resolve("HEAD") == project.rev_parse("HEAD")


UNKNOWN_REFS = [
    # (ref, what the message says, what the fix says)
    ("nope", "'nope' does not name a commit", "git branch --all"),
    ("HEAD~10", "goes back further than the history of 'HEAD'", "git log --oneline HEAD"),
    ("deadbeef", "does not name a commit", "check the sha"),
    ("0" * 40, "does not name a commit", "check the sha"),
    ("HEAD:bench.sh", "names a blob, not a commit", "give a branch, tag or commit"),
    ("main@{9999}", "does not name a commit", "git branch --all"),
]


def test_an_unknown_ref_is_an_error_with_the_fix(project: GitRepo) -> None:
    with Versions(project.path) as versions:
        for ref, says, fix in UNKNOWN_REFS:
            with pytest.raises(VersionError) as caught:
                versions.resolve(ref)
            err = caught.value
            assert says in err.message, ref
            assert fix in str(err.fix), ref
            # The argument is wrong, not the machine: a usage error, not "infrastructure".
            assert err.exit_code == EXIT_USAGE, ref


def test_unknown_refs_in_a_clone_point_at_the_remote(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = clone(project, tmp_path / "ci")
    # A CI checkout: detached at the commit under test, no local branch but the remote's.
    ci.switch("HEAD", detach=True)
    ci.git("branch", "-D", "main")
    untouched(ci)
    with Versions(ci.path) as versions:
        with pytest.raises(VersionError) as caught:
            versions.resolve("main~1")
        assert "did you mean 'origin/main~1'?" in str(caught.value.fix)
        with pytest.raises(VersionError) as caught:
            versions.resolve("origin/nope")
        assert "git fetch origin nope" in str(caught.value.fix)
        assert "fetch-depth: 0" in str(caught.value.fix)


def test_a_malformed_ref_is_a_usage_error(project: GitRepo) -> None:
    with Versions(project.path) as versions:
        for ref in ["", "  ", "--all", "-x", "main\n"]:
            with pytest.raises(UsageError) as caught:
                versions.resolve(ref)
            assert caught.value.exit_code == EXIT_USAGE, ref


def test_outside_a_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(VersionError, match="not inside a git repository") as caught:
        Versions(tmp_path / "plain")
    assert "duet run" in str(caught.value.fix)


def test_a_cache_inside_the_checkout_is_refused(project: GitRepo) -> None:
    with pytest.raises(UsageError, match="inside the checkout"):
        Versions(project.path, cache_dir=project.path / "worktrees")
    assert not (project.path / "worktrees").exists()


# --------------------------------------------------------------------------------------------
# Worktrees


def test_worktrees_are_outside_the_checkout_and_removed_at_the_end(project: GitRepo) -> None:
    with Versions(project.path) as versions:
        base = versions.checkout("baseline", "HEAD~2")
        head = versions.checkout("candidate", "HEAD")
        for version in (base, head):
            assert version.directory.is_dir()
            assert project.path.resolve() not in version.directory.resolve().parents
            assert Path(os.environ["XDG_CACHE_HOME"]) in version.directory.parents
            assert (version.built, version.reused, version.build_log) == (False, False, None)
        assert base.directory != head.directory
        assert (base.directory / "bench.sh").read_text() == "v1"
        # HEAD is the commit: the user's uncommitted edit is not part of it.
        assert (head.directory / "bench.sh").read_text() == "v3"
        assert not (head.directory / "staged.txt").exists()
        assert not (head.directory / "untracked.txt").exists()
        assert base.commit == project.rev_parse("HEAD~2")
        assert (base.subject, head.subject) == ("commit 1", "third: drop duet.toml")
        detached = GitRepo(head.directory).git("rev-parse", "--abbrev-ref", "HEAD")
        assert detached == "HEAD"
        assert len(project.git("worktree", "list").splitlines()) == 3
    assert not base.directory.exists()
    assert not head.directory.exists()
    # (the `untouched` fixture checks .git/worktrees and `git worktree list` are as before)


def test_worktrees_are_removed_when_the_block_raises(project: GitRepo) -> None:
    seen: list[Path] = []

    def fail_inside() -> None:
        with Versions(project.path) as versions:
            seen.append(versions.checkout("baseline", "HEAD~1").directory)
            assert seen[0].exists()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside()
    assert not seen[0].exists()


def test_same_commit_on_both_sides_shares_one_worktree_built_once(
    project: GitRepo, tmp_path: Path
) -> None:
    counter = tmp_path / "builds"
    logs = tmp_path / "results" / "logs"
    with Versions(project.path, log_dir=logs) as versions:
        base = versions.checkout("baseline", "main")
        head = versions.checkout("candidate", "HEAD")
        assert head.directory == base.directory
        assert head.reused
        base = versions.build(base, counting(counter), rebuild=True)
        head = versions.build(head, counting(counter), rebuild=True)
        assert count(counter) == 1
        assert counter.read_text() == "baseline\n"
        assert (base.built, base.reused, head.built, head.reused) == (True, False, True, True)
        assert base.build_log == logs / "build-baseline.log"
        assert head.build_log == logs / "build-candidate.log"
        assert "reuses an earlier build" in head.build_log.read_text()
        assert len(project.git("worktree", "list").splitlines()) == 2


def test_concurrent_runs_never_share_a_worktree(project: GitRepo) -> None:
    with Versions(project.path) as first, Versions(project.path) as second:
        a = first.checkout("baseline", "HEAD~1")
        b = second.checkout("baseline", "HEAD~1")
        assert a.directory != b.directory
        assert b.directory.name == f"{a.commit}.1"
        assert (b.directory / "bench.sh").read_text() == "v2"
    assert not a.directory.exists()
    assert not b.directory.exists()


def test_kept_worktrees_and_builds_are_reused_by_the_next_run(
    project: GitRepo, tmp_path: Path
) -> None:
    counter = tmp_path / "builds"
    logs = tmp_path / "logs"
    with Versions(project.path, keep=True, log_dir=logs) as versions:
        first = versions.build(versions.checkout("baseline", "HEAD~1"), counting(counter))
    assert first.directory.is_dir()
    assert count(counter) == 1

    with Versions(project.path, keep=True, log_dir=logs) as versions:
        again = versions.checkout("baseline", "v2")
        assert again.directory == first.directory
        assert again.reused
        again = versions.build(again, counting(counter))
        assert (again.built, again.reused, count(counter)) == (True, True, 1)
        assert "reuses an earlier build" in (logs / "build-baseline.log").read_text()

        forced = versions.build(again, counting(counter), rebuild=True)
        assert (forced.reused, count(counter)) == (False, 2)
        changed = versions.build(again, counting(counter, "; echo changed"))
        assert (changed.reused, count(counter)) == (False, 3)

    # Without keep, the run still reuses the kept build, then removes the worktree.
    with Versions(project.path, log_dir=logs) as versions:
        last = versions.build(
            versions.checkout("baseline", "v2"), counting(counter, "; echo changed")
        )
        assert (last.reused, count(counter)) == (True, 3)
    assert not first.directory.exists()


def test_an_edited_kept_worktree_is_checked_out_again(project: GitRepo, tmp_path: Path) -> None:
    counter = tmp_path / "builds"
    with Versions(project.path, keep=True) as versions:
        kept = versions.build(versions.checkout("candidate", "HEAD"), counting(counter))
    (kept.directory / "bench.sh").write_text("edited while debugging")
    with Versions(project.path) as versions:
        fresh = versions.checkout("candidate", "HEAD")
        assert fresh.directory == kept.directory
        assert not fresh.reused
        assert (fresh.directory / "bench.sh").read_text() == "v3"
        fresh = versions.build(fresh, counting(counter))
        assert (fresh.reused, count(counter)) == (False, 2)


def test_leftovers_of_a_crash_are_replaced(project: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    sha = project.rev_parse("HEAD~1")
    (cache / sha).mkdir(parents=True)
    (cache / sha / "junk").write_text("not a worktree")
    with Versions(project.path, cache_dir=cache, keep=True) as versions:
        version = versions.checkout("baseline", sha)
        assert not version.reused
        assert not (version.directory / "junk").exists()
    # A registered worktree whose directory vanished (rm -rf without prune).
    shutil.rmtree(version.directory)
    with Versions(project.path, cache_dir=cache) as versions:
        version = versions.checkout("baseline", sha)
        assert (version.directory / "bench.sh").read_text() == "v2"
    assert not version.directory.exists()


def test_a_run_that_keeps_nothing_leaves_no_directory(project: GitRepo, tmp_path: Path) -> None:
    """The cache directory of a repository, and duet's directories above it, go with the last
    worktree in them; kept worktrees keep them, and so does another repository's cache."""
    xdg = Path(os.environ["XDG_CACHE_HOME"])
    with Versions(project.path) as versions:
        versions.checkout("baseline", "HEAD~1")
        versions.checkout("candidate", "HEAD")
        cache = versions.cache_dir
        assert cache.parent.parent == xdg / "duet"
    assert not (xdg / "duet").exists()

    with Versions(project.path, keep=True) as versions:
        kept = versions.checkout("baseline", "HEAD").directory
    assert kept.is_dir()
    with Versions(project.path) as versions:  # reuses the kept worktree, and removes it
        assert versions.checkout("baseline", "HEAD").directory == kept
    assert not (xdg / "duet").exists()

    other = GitRepo(shutil.copytree(project.path, tmp_path / "other", symlinks=True))
    with Versions(other.path) as holding:
        holding.checkout("baseline", "HEAD")
        with Versions(project.path) as versions:
            versions.checkout("baseline", "HEAD")
        assert not cache.exists()
        assert holding.cache_dir.parent == cache.parent  # the other repository's stays
    assert not (xdg / "duet").exists()
    # A cache directory the caller made stays theirs.
    mine = tmp_path / "my-cache"
    mine.mkdir()
    with Versions(project.path, cache_dir=mine) as versions:
        versions.checkout("baseline", "HEAD")
    assert mine.is_dir()


@pytest.mark.root
def test_a_run_as_a_user_without_a_home_leaves_no_directory(project: GitRepo) -> None:
    """As root for a user without a home (nobody), the cache is /var/tmp/duet-worktrees-<uid>:
    it belongs to that user while used, and goes at the end (a day of test runs as nobody
    left 27 empty ones). A uid nobody else uses, so that no other run shares the directory."""
    if os.geteuid() != 0:
        pytest.skip("handing worktrees to another user needs root (CI runs this as root)")
    uid = next(u for u in range(3_000_000_000 + os.getpid(), 2**32 - 2) if not _has_user(u))
    top = Path(f"/var/tmp/duet-worktrees-{uid}")
    # The user's own repository, where that user can reach it: git runs as the user
    # (docs/isolation.md, "What runs as root").
    theirs = Path(tempfile.mkdtemp(prefix="homeless-repo-", dir="/var/tmp"))
    shutil.copytree(project.path, theirs / "project", symlinks=True)
    for path in (theirs, *theirs.rglob("*")):
        os.lchown(path, uid, uid)
    try:
        with Versions(theirs / "project", run_as=RunAs("homeless", uid, uid)) as versions:
            version = versions.checkout("baseline", "HEAD")
            assert versions.cache_dir.parent == top
            for path in (top, versions.cache_dir, version.directory):
                assert (path.stat().st_uid, path.stat().st_gid) == (uid, uid)
        assert not top.exists()
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(theirs, ignore_errors=True)


@pytest.mark.root
def test_a_user_who_cannot_write_the_repository_is_refused(project: GitRepo) -> None:
    """Git runs as the user the builds run as; a repository that user cannot write (``--user
    nobody`` on root's) is refused at once, with the fix, rather than run as root."""
    if os.geteuid() != 0:
        pytest.skip("running git as another user needs root (CI runs this as root)")
    nobody = pwd.getpwnam("nobody")
    run_as = RunAs("nobody", nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(VersionError, match="cannot write the repository") as raised:
        Versions(project.path, run_as=run_as)
    assert "--user" in (raised.value.fix or "")


def test_a_checkout_the_user_cannot_reach_is_named_as_such(project: GitRepo) -> None:
    """Under sudo git runs as the invoking user: a checkout below a directory they cannot
    enter is said to be that, not "not inside a git repository" (which left users guessing)."""
    if os.geteuid() != 0:
        pytest.skip("running git as another user needs root (CI runs this as root)")
    from duet_bench.compare.configuration import repo_root

    nobody = pwd.getpwnam("nobody")
    run_as = RunAs("nobody", nobody.pw_uid, nobody.pw_gid)
    # pytest's tmp_path is below root's 0700 /tmp/pytest-of-root
    with pytest.raises(VersionError, match=r"run as nobody .* cannot use") as raised:
        repo_root(project.path, run_as)
    assert "Permission denied" in str(raised.value)
    assert "nobody can read and write" in (raised.value.fix or "")


def _has_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_close_is_idempotent_and_final(project: GitRepo) -> None:
    versions = Versions(project.path)
    version = versions.checkout("baseline", "HEAD")
    versions.close()
    versions.close()
    assert not version.directory.exists()
    with pytest.raises(RuntimeError, match="closed"):
        versions.resolve("HEAD")


def test_a_user_linked_worktree_is_left_alone(
    template: Path, tmp_path: Path, untouched: Watch
) -> None:
    shutil.copytree(template, tmp_path / "project", symlinks=True)
    project = GitRepo(tmp_path / "project")
    project.git("worktree", "add", "-q", str(tmp_path / "mine"), "feature")
    mine = untouched(GitRepo(tmp_path / "mine"))
    untouched(project)
    with Versions(mine.path) as versions:
        assert versions.resolve("HEAD") == project.rev_parse("feature")
        version = versions.checkout("candidate", "HEAD")
        assert (version.directory / "feature.txt").read_text() == "f"
    assert version.directory.parent != tmp_path


def test_uncommitted_changes_are_not_measured_and_a_warning_says_so(
    project: GitRepo, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="duet_bench.versions"),
        Versions(project.path) as v,
    ):
        v.checkout("candidate", "HEAD")
        v.checkout("baseline", "HEAD~1")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "uncommitted changes" in warnings[0]
    assert "measures commits" in warnings[0]


# --------------------------------------------------------------------------------------------
# Builds


def test_the_build_sees_its_side_and_directory_and_not_the_users_git(
    project: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # duet started from a git hook: these would make `git worktree add` write the user's
    # index and send the build's git commands to the user's checkout.
    monkeypatch.setenv("GIT_DIR", str(project.git_dir))
    monkeypatch.setenv("GIT_INDEX_FILE", str(project.git_dir / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(project.path))
    out = tmp_path / "env.txt"
    command = (
        f'{{ echo "$DUET_SIDE"; echo "$DUET_VERSION_DIR"; pwd -P; git rev-parse HEAD; '
        f'echo "${{GIT_INDEX_FILE-unset}}"; cat bench.sh; echo; }} > {shlex.quote(str(out))}; '
        "echo to-stdout; echo to-stderr >&2"
    )
    with Versions(project.path, log_dir=tmp_path / "logs") as versions:
        version = versions.build(versions.checkout("baseline", "HEAD~1"), command)
        side, directory, cwd, head, index, bench = out.read_text().splitlines()
        assert (side, index, bench) == ("baseline", "unset", "v2")
        assert Path(directory) == version.directory
        assert Path(cwd) == version.directory.resolve()
        assert head == version.commit
        assert version.build_log is not None
        log_text = version.build_log.read_text()
        assert "to-stdout" in log_text
        assert "to-stderr" in log_text


def test_a_failed_build_raises_with_the_log_tail(
    project: GitRepo, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    counter = tmp_path / "builds"
    failing = counting(counter, "; for i in $(seq 1 100); do echo line $i; done; exit 7")
    logs = tmp_path / "logs"
    with Versions(project.path, log_dir=logs) as versions:
        version = versions.checkout("candidate", "HEAD")
        with pytest.raises(BuildFailed) as caught:
            versions.build(version, failing)
        err = caught.value
        assert isinstance(err, VersionError)
        assert err.exit_code == EXIT_INFRASTRUCTURE
        assert (err.build_exit_code, err.side) == (7, "candidate")
        assert "failed with exit code 7" in err.message
        assert err.log_path == logs / "build-candidate.log"
        assert str(err.log_path) in err.message
        assert err.tail.splitlines() == [f"line {i}" for i in range(61, 101)]
        assert err.tail in err.message
        assert "--keep-worktrees" in str(err.fix)
        assert "line 1\n" in err.log_path.read_text()
        # No stamp for a failed build: the next attempt builds again.
        with pytest.raises(BuildFailed):
            versions.build(version, failing)
        assert count(counter) == 2
    assert not version.directory.exists()
    # The output was logged, not printed.
    printed = capfd.readouterr()
    assert "line 50" not in printed.out + printed.err


def test_a_build_that_hangs_is_stopped_at_the_timeout(project: GitRepo, tmp_path: Path) -> None:
    with Versions(project.path) as versions:
        version = versions.checkout("baseline", "HEAD")
        t0 = time.monotonic()
        with pytest.raises(BuildFailed, match="timed out after 1 s") as caught:
            versions.build(version, "echo started; sleep 30", timeout_s=1)
        assert time.monotonic() - t0 < 10
        assert caught.value.build_exit_code is None
        assert "started" in caught.value.tail


def test_no_build_command_builds_nothing(project: GitRepo) -> None:
    with Versions(project.path) as versions:
        version = versions.build(versions.checkout("baseline", "HEAD"), None)
        assert (version.built, version.build_log) == (False, None)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_an_interrupt_during_the_build_stops_it_and_cleans_up(
    project: GitRepo, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    target = shlex.quote(str(pids))
    # Found afterwards by the marker in its command line: as root the build runs in a PID
    # namespace of its own, where $! is not the host's pid (docs/isolation.md).
    marker = f"duet-build-sleeper-{uuid.uuid4().hex}"
    command = f"sh -c 'sleep 30; true' {marker} & echo $! > {target}; wait"

    def handler(signum: int, frame: object) -> None:  # what the CLI installs
        raise Interrupted(signum)

    def interrupt_once_started() -> None:
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    seen: list[Path] = []
    interrupter = threading.Thread(target=interrupt_once_started, daemon=True)

    def build_until_interrupted() -> None:
        with Versions(project.path) as versions:
            version = versions.checkout("candidate", "HEAD")
            seen.append(version.directory)
            interrupter.start()
            versions.build(version, command)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(Interrupted):
            build_until_interrupted()
        interrupter.join()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not seen[0].exists()
    deadline = time.monotonic() + 5
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _marked(marker), "the build's background process survived the interrupt"


def _marked(marker: str) -> list[int]:
    """Live processes (the host's view) whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() and _alive(
                    int(entry)
                ):
                    found.append(int(entry))
            except OSError:
                continue
    return found


# --------------------------------------------------------------------------------------------
# Shallow clones (what actions/checkout gives by default)


def test_a_shallow_clone_fetches_what_it_lacks(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = untouched(shallow_clone(project, tmp_path / "ci", depth=1))
    assert ci.git("rev-parse", "--is-shallow-repository") == "true"
    with Versions(ci.path) as versions:
        base = versions.checkout("baseline", "HEAD~1")
        assert base.commit == project.rev_parse("HEAD~1")
        assert (base.directory / "bench.sh").read_text() == "v2"
        assert base.subject == "commit 2"
        assert versions.resolve("HEAD~2") == project.rev_parse("HEAD~2")
        assert versions.resolve("origin/main^") == project.rev_parse("HEAD~1")
        # Not in a single-branch clone: asked from the remote, fetched by sha.
        assert versions.resolve("origin/feature") == project.rev_parse("feature")
        assert versions.resolve("v2") == project.rev_parse("v2")
    # Only objects were fetched: no new ref (the fixture checks), and no FETCH_HEAD.
    assert not (ci.git_dir / "FETCH_HEAD").exists()


def test_a_shallow_clone_history_is_never_shortened(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    # git marks every commit at a fetch's depth boundary shallow, even one whose parents the
    # clone has: `fetch --depth=2` or `--deepen=1` of origin/feature here would cut HEAD's
    # history to 2 commits.
    ci = untouched(shallow_clone(project, tmp_path / "ci", depth=3))
    shallow_before = set((ci.git_dir / "shallow").read_text().split())
    history_before = ci.git("log", "--format=%H", "HEAD")
    with Versions(ci.path) as versions:
        # The branch tip is new; its parent (v2) is a commit the clone already has.
        assert versions.resolve("origin/feature~1") == project.rev_parse("v2")
        # An annotated tag of a commit the clone has, named by a ref it lacks.
        assert versions.resolve("v2") == project.rev_parse("v2")
    assert ci.git("log", "--format=%H", "HEAD") == history_before
    assert shallow_before <= set((ci.git_dir / "shallow").read_text().split())


def test_a_shallow_clone_without_a_remote_gives_the_command(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = shallow_clone(project, tmp_path / "ci")
    ci.git("remote", "remove", "origin")
    untouched(ci)
    with Versions(ci.path) as versions, pytest.raises(VersionError) as caught:
        versions.resolve("HEAD~1")
    assert "no remote to fetch it from" in caught.value.message
    fix = str(caught.value.fix)
    assert "git fetch --unshallow origin" in fix
    assert "fetch-depth: 0" in fix


def test_a_failed_fetch_says_what_to_run(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = shallow_clone(project, tmp_path / "ci")
    ci.git("remote", "set-url", "origin", (tmp_path / "gone").as_uri())
    untouched(ci)
    with Versions(ci.path) as versions, pytest.raises(VersionError) as caught:
        versions.resolve("HEAD~1")
    assert "fetching it from 'origin' failed" in caught.value.message
    assert "git fetch --unshallow origin" in str(caught.value.fix)
    # The ref may well exist: the clone cannot reach it, which is the CI setup's failure.
    assert caught.value.exit_code == EXIT_INFRASTRUCTURE


def test_a_ref_beyond_the_first_commit_in_a_shallow_clone(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = untouched(shallow_clone(project, tmp_path / "ci"))
    with Versions(ci.path) as versions, pytest.raises(VersionError) as caught:
        versions.resolve("HEAD~5")
    assert "goes back further than the history of 'HEAD'" in caught.value.message


def test_a_ref_the_remote_does_not_have_either(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = untouched(shallow_clone(project, tmp_path / "ci"))
    with Versions(ci.path) as versions:
        with pytest.raises(VersionError) as caught:
            versions.resolve("nope~2")
        assert "'origin' has no branch or tag 'nope'" in caught.value.message
        assert "git ls-remote" in str(caught.value.fix)
        assert caught.value.exit_code == EXIT_USAGE
        with pytest.raises(VersionError) as caught:
            versions.resolve(project.rev_parse("HEAD~1")[:10])
        assert "a short sha cannot be fetched" in caught.value.message
        assert "full 40-character sha" in str(caught.value.fix)


# --------------------------------------------------------------------------------------------
# Reading files at a commit


def test_read_file_at(project: GitRepo) -> None:
    with Versions(project.path) as versions:
        old, new = project.rev_parse("HEAD~1"), project.rev_parse("HEAD")
        assert versions.read_file_at(old, "duet.toml") == "[suite]\nname = 'one'\n"
        assert versions.read_file_at(new, "duet.toml") is None  # deleted in HEAD
        assert versions.read_file_at(new, "sub/dir/data.txt") == "nested\n"
        assert versions.read_file_at(new, "./sub/dir/data.txt") == "nested\n"
        assert versions.read_file_at(new, "sub") is None  # a directory
        assert versions.read_file_at(new, "sub/dir/data.txt/x") is None
        assert versions.read_file_at("main", "bench.sh") == "v3"  # committed, not the edit
        with pytest.raises(VersionError, match="does not name a commit"):
            versions.read_file_at("0" * 40, "duet.toml")


def test_an_object_git_cannot_read_is_a_version_error(template: Path, tmp_path: Path) -> None:
    # A damaged object store (a blob lost): GitPython's error becomes duet's, not a traceback.
    repo = GitRepo(shutil.copytree(template, tmp_path / "damaged", symlinks=True))
    blob = repo.git("rev-parse", "HEAD~1:duet.toml")
    (repo.git_dir / "objects" / blob[:2] / blob[2:]).unlink()
    with Versions(repo.path) as versions, pytest.raises(VersionError) as caught:
        versions.read_file_at("HEAD~1", "duet.toml")
    assert "git cannot read duet.toml at" in caught.value.message
    assert "git fsck" in str(caught.value.fix)
    assert caught.value.exit_code == EXIT_INFRASTRUCTURE


# --------------------------------------------------------------------------------------------
# Refs the clone does not have


def test_a_ref_missing_locally_in_a_full_clone_says_what_to_fetch(
    template: Path, tmp_path: Path, untouched: Watch
) -> None:
    # The remote moved on after the clone: a full clone fetches nothing by itself (only a
    # shallow one does), it says which fetch would bring the commit.
    upstream = GitRepo(shutil.copytree(template, tmp_path / "upstream", symlinks=True))
    ci = untouched(clone(upstream, tmp_path / "ci"))
    upstream.branch("later", "main")
    upstream.switch("later")
    later = upstream.commit({"later.txt": "new"}, "pushed after the clone")
    with Versions(ci.path) as versions:
        for ref, fix in [
            ("later", "git fetch origin later"),
            ("origin/later", "git fetch origin later"),
            (later, f"git fetch origin {later}"),
        ]:
            with pytest.raises(VersionError) as caught:
                versions.resolve(ref)
            assert "does not name a commit" in caught.value.message, ref
            assert fix in str(caught.value.fix), ref
            assert caught.value.exit_code == EXIT_USAGE, ref
    # Nothing was fetched: the commit is still not in the clone.
    missing = subprocess.run(
        ["git", "cat-file", "-e", later], cwd=ci.path, env=git_env(), check=False
    )
    assert missing.returncode != 0


def _merge_history(path: Path) -> tuple[GitRepo, dict[str, str]]:
    """main: c1 -> c2 -> merge (second parent: side, a child of c1)."""
    repo = make_repo(path, [{"a.txt": "1"}, {"a.txt": "2"}])
    shas = {"c1": repo.rev_parse("HEAD~1"), "c2": repo.rev_parse("HEAD")}
    repo.branch("side", "HEAD~1")
    repo.switch("side")
    shas["side"] = repo.commit({"b.txt": "side"}, "side work")
    repo.switch("main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    shas["merge"] = repo.rev_parse("HEAD")
    return repo, shas


def test_a_shallow_clone_fetches_merge_parents_and_full_shas(
    tmp_path: Path, untouched: Watch
) -> None:
    upstream, shas = _merge_history(tmp_path / "upstream")
    ci = untouched(shallow_clone(upstream, tmp_path / "ci", depth=1))
    with Versions(ci.path) as versions:
        # The second parent of a merge at the shallow boundary: read from the commit object
        # (GitPython), fetched, then checked out.
        side = versions.checkout("baseline", "HEAD^2")
        assert (side.commit, side.subject) == (shas["side"], "side work")
        assert (side.directory / "b.txt").read_text() == "side"
        assert versions.resolve("HEAD^2~1") == shas["c1"]
        assert versions.resolve("HEAD^1") == shas["c2"]
        # A full sha the clone lacks and no ref names: fetched by sha.
    ci2 = untouched(shallow_clone(upstream, tmp_path / "ci2", depth=1))
    with Versions(ci2.path) as versions:
        assert versions.resolve(shas["c1"]) == shas["c1"]
        assert versions.read_file_at(shas["c1"], "a.txt") == "1"
    for repo in (ci, ci2):
        assert repo.git("rev-list", "--count", "HEAD") == "1"  # no deeper than it was
        assert not (repo.git_dir / "FETCH_HEAD").exists()


def test_a_shallow_clone_fetches_at_most_the_limit_one_by_one(
    project: GitRepo, tmp_path: Path, untouched: Watch
) -> None:
    ci = untouched(shallow_clone(project, tmp_path / "ci"))
    too_far = f"HEAD~{MAX_FETCH_GENERATIONS + 1}"
    with Versions(ci.path) as versions, pytest.raises(VersionError) as caught:
        versions.resolve(too_far)
    assert f"duet fetches at most {MAX_FETCH_GENERATIONS}" in caught.value.message
    assert "git fetch --unshallow origin" in str(caught.value.fix)
    assert ci.git("rev-list", "--count", "HEAD") == "1"  # nothing fetched before refusing


# --------------------------------------------------------------------------------------------
# Concurrent runs: worktree slots

_HOLDER = """
import sys
from duet_bench.versions import Versions
with Versions(sys.argv[1]) as versions:
    version = versions.checkout("baseline", sys.argv[2])
    print(version.directory, flush=True)
    sys.stdin.readline()
print("closed", flush=True)
"""


def test_concurrent_processes_hold_their_own_slots(project: GitRepo) -> None:
    """Other duet processes at the same commit: each gets its own slot (flock), and one that
    finishes removes only its own worktree."""
    sha = project.rev_parse("HEAD~1")
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(project.path), "HEAD~1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        held = [Path(h.stdout.readline().strip()) for h in holders if h.stdout]
        names = sorted(p.name for p in held)
        assert names == [sha, f"{sha}.1", f"{sha}.2"]
        with Versions(project.path) as versions:
            mine = versions.checkout("baseline", sha)
            assert mine.directory.name == f"{sha}.3"
            assert not mine.reused
        assert not mine.directory.exists()
        for directory in held:  # the others' worktrees are intact
            assert (directory / "bench.sh").read_text() == "v2"
        # One finishes: its slot is free again for the next run, the others stay.
        first = holders[0]
        assert first.stdin is not None
        assert first.stdout is not None
        first.stdin.close()
        assert first.stdout.readline().strip() == "closed"
        assert first.wait(timeout=60) == 0
        freed = held[0]
        assert not freed.exists()
        with Versions(project.path) as versions:
            assert versions.checkout("baseline", sha).directory == freed
    finally:
        for h in holders:
            if h.stdin and not h.stdin.closed:
                h.stdin.close()
            h.wait(timeout=60)
            if h.stdout:
                h.stdout.close()
    assert all(h.returncode == 0 for h in holders)
    # No worktree, stamp or lock file is left, nor the cache directory that held them.
    assert not held[0].parent.exists()


_CHURN = """
import os, sys, time
from duet_bench.versions import Versions
repo, go, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
for _ in range(rounds):
    with Versions(repo) as versions:
        versions.checkout("baseline", "HEAD~1")
        versions.checkout("candidate", "HEAD")
"""


def test_processes_adding_and_removing_worktrees_at_once_do_not_collide(
    project: GitRepo, tmp_path: Path
) -> None:
    """git does not serialise `worktree add` and `worktree prune`: a prune reads another
    process's half-made .git/worktrees/<name> and fails. Four runs checking out and removing
    worktrees at the same moment must all succeed."""
    go = tmp_path / "go"
    churners = [
        subprocess.Popen(
            [sys.executable, "-c", _CHURN, str(project.path), str(go), "4"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for churner in churners:
        assert churner.stdout is not None
        assert churner.stdout.readline().strip() == "ready"
    go.touch()  # all start together
    errors = [c.communicate(timeout=300)[1] for c in churners]
    assert [c.returncode for c in churners] == [0, 0, 0, 0], "\n".join(errors)
    # Each run removed the cache directory when it found it empty, while the others were
    # making it again: none failed, and nothing is left.
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "duet").exists()
    # (the `untouched` fixture checks that no worktree registration is left)


def test_a_slot_held_elsewhere_is_skipped_and_all_held_is_an_error(project: GitRepo) -> None:
    sha = project.rev_parse("HEAD")
    with Versions(project.path) as versions:
        cache = versions.cache_dir
    cache.mkdir(parents=True)  # (removed when the run ended: it left nothing in it)
    fds = []
    try:
        for slot in range(MAX_SLOTS):
            name = sha if slot == 0 else f"{sha}.{slot}"
            fd = os.open(cache / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with Versions(project.path) as versions:
            with pytest.raises(VersionError) as caught:
                versions.checkout("candidate", "HEAD")
            assert f"{MAX_SLOTS} other duet runs hold worktrees" in caught.value.message
            assert "wait for them to finish" in str(caught.value.fix)
            # One is let go (its process ended): that slot is taken.
            os.close(fds.pop(5))
            assert versions.checkout("candidate", "HEAD").directory.name == f"{sha}.5"
        # A lock file nobody holds (left by a killed run) does not block anything.
        with Versions(project.path) as versions:
            assert versions.checkout("candidate", "HEAD").directory.name == f"{sha}.5"
    finally:
        for fd in fds:
            os.close(fd)
        for lock in cache.glob(f"{sha}*.lock"):
            lock.unlink()


# --------------------------------------------------------------------------------------------
# Many commits in one run (duet bisect)


def test_release_gives_a_worktree_back_before_close(project: GitRepo, tmp_path: Path) -> None:
    counter = tmp_path / "builds"
    with Versions(project.path) as versions:
        previous = None
        for ref in ["HEAD~2", "HEAD~1", "HEAD"]:
            version = versions.build(versions.checkout("candidate", ref), counting(counter))
            if previous is not None:
                versions.release(previous)
                assert not previous.directory.exists()
                assert not previous.directory.with_name(previous.directory.name + ".lock").exists()
                with pytest.raises(ValueError, match="not checked out by this Versions"):
                    versions.build(previous, counting(counter))
            # At most the user's checkout and one of ours.
            assert len(project.git("worktree", "list").splitlines()) == 2
            previous = version
        # A released commit can be checked out again.
        again = versions.checkout("baseline", "HEAD~2")
        assert (again.directory / "bench.sh").read_text() == "v1"
    assert count(counter) == 3
    assert not again.directory.exists()


def test_release_with_keep_leaves_the_build_for_the_next_run(
    project: GitRepo, tmp_path: Path
) -> None:
    counter = tmp_path / "builds"
    with Versions(project.path, keep=True) as versions:
        first = versions.build(versions.checkout("candidate", "HEAD~1"), counting(counter))
        versions.release(first)
        assert first.directory.is_dir()
        # Released, so another process (or this one) may take the slot and its build.
        again = versions.build(versions.checkout("candidate", "HEAD~1"), counting(counter))
        assert (again.directory, again.reused, count(counter)) == (first.directory, True, 1)
    with Versions(project.path) as versions:
        versions.checkout("candidate", "HEAD~1")  # removed at the end of this run
    assert not first.directory.exists()
