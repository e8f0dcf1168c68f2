"""Real git repositories for tests (asv's ``generate_test_repo``, with the ``git`` binary).

Example::

    repo = make_repo(tmp_path / "project", [{"bench.sh": "sleep 0.01"}, {"bench.sh": "sleep 0.02"}])
    repo.tag("v1", "HEAD~1")
    sha = repo.commit({"README": "hello"}, "docs")
    copy = shallow_clone(repo.path, tmp_path / "ci", depth=1)   # like actions/checkout
    before = repo.state(); ...; assert repo.state() == before   # nothing touched

Every git process runs with a fixed identity and dates and without the user's global or system
configuration (a ``commit.gpgsign`` or a global hooks path on a developer's machine must not
change what the tests see), so the same commits give the same shas on every machine.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitRepo", "RepoState", "clone", "git_env", "make_repo", "shallow_clone"]

# 2024-01-01T00:00:00Z; each commit of a repository is one minute after the previous one.
_EPOCH = 1_704_067_200


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the tests' git processes: no user configuration, fixed identity."""
    env = {
        k: v
        for k, v in os.environ.items()
        # A test run started from a git hook inherits these; they would redirect every command.
        if k not in {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"}
    }
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="duet tests",
        GIT_AUTHOR_EMAIL="tests@duet.invalid",
        GIT_COMMITTER_NAME="duet tests",
        GIT_COMMITTER_EMAIL="tests@duet.invalid",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    if extra:
        env.update(extra)
    return env


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=git_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} (in {cwd}) failed: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass(frozen=True, slots=True)
class RepoState:
    """Everything of a checkout that duet promises never to modify."""

    head: str  # the commit
    symbolic_head: str  # the branch HEAD is on, or "(detached)"
    refs: str  # every branch, tag, remote-tracking ref and the stash, with their commits
    status: str  # `git status --porcelain`, including untracked and ignored files
    index_sha256: str
    index_mtime_ns: int
    files_sha256: str  # every file of the working tree (outside .git), names and contents
    worktrees: str  # `git worktree list --porcelain`
    git_worktrees_dir: tuple[str, ...]  # the entries of .git/worktrees


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A repository with a working tree, made by :func:`make_repo` or :func:`clone`."""

    path: Path

    def git(self, *args: str) -> str:
        """Run ``git ARGS`` in the repository; returns stdout, raises on failure."""
        return _git(self.path, *args)

    def commit(self, files: Mapping[str, str | None], message: str = "change") -> str:
        """Write ``files`` (relative path -> content; ``None`` deletes it) and commit them
        all; returns the new commit's full sha."""
        for name, content in files.items():
            target = self.path / name
            if content is None:
                self.git("rm", "-q", "--", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            self.git("add", "--", name)
        count = int(self.git("rev-list", "--count", "--all") or 0) if self.has_commits() else 0
        stamp = f"{_EPOCH + 60 * count} +0000"
        _git(
            self.path,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
            env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
        )
        return self.rev_parse("HEAD")

    def tag(self, name: str, ref: str = "HEAD", *, message: str | None = None) -> None:
        """A lightweight tag, or an annotated one when ``message`` is given."""
        if message is None:
            self.git("tag", name, ref)
        else:
            self.git("tag", "-a", name, "-m", message, ref)

    def branch(self, name: str, ref: str = "HEAD") -> None:
        """Create branch ``name`` at ``ref`` without switching to it."""
        self.git("branch", name, ref)

    def switch(self, ref: str, *, detach: bool = False) -> None:
        """Check ``ref`` out in this repository (a branch, or any commit with ``detach``)."""
        self.git("switch", "-q", *(["--detach"] if detach else []), ref)

    def rev_parse(self, ref: str) -> str:
        return self.git("rev-parse", "--verify", f"{ref}^{{commit}}")

    def has_commits(self) -> bool:
        return (
            subprocess.run(
                ["git", "rev-parse", "--verify", "-q", "HEAD"],
                cwd=self.path,
                env=git_env(),
                capture_output=True,
                check=False,
            ).returncode
            == 0
        )

    def show(self, ref: str, path: str) -> str:
        """The content of ``path`` at ``ref``."""
        return self.git("show", f"{ref}:{path}")

    @property
    def git_dir(self) -> Path:
        return Path(self.git("rev-parse", "--absolute-git-dir"))

    def state(self) -> RepoState:
        """A snapshot to compare before and after: equal means nothing the user owns changed."""
        git_dir = self.git_dir
        index = git_dir / "index"
        # Read the index before `git status`, and keep status from refreshing it
        # (--no-optional-locks): the snapshot itself must not be what changes the index.
        index_bytes = index.read_bytes() if index.exists() else b""
        index_mtime = index.stat().st_mtime_ns if index.exists() else 0
        status = self.git(
            "--no-optional-locks", "status", "--porcelain", "--untracked-files=all", "--ignored"
        )
        digest = hashlib.sha256()
        for file in sorted(p for p in self.path.rglob("*") if ".git" not in p.parts):
            digest.update(str(file.relative_to(self.path)).encode() + b"\0")
            if file.is_file() and not file.is_symlink():
                digest.update(file.read_bytes())
        worktrees_dir = git_dir / "worktrees"
        return RepoState(
            head=self.rev_parse("HEAD") if self.has_commits() else "",
            symbolic_head=self.git("rev-parse", "--abbrev-ref", "HEAD").replace(
                "HEAD", "(detached)"
            )
            if self.has_commits()
            else "",
            refs=self.git("for-each-ref", "--format=%(refname) %(objectname)"),
            status=status,
            index_sha256=hashlib.sha256(index_bytes).hexdigest(),
            index_mtime_ns=index_mtime,
            files_sha256=digest.hexdigest(),
            worktrees=self.git("worktree", "list", "--porcelain"),
            git_worktrees_dir=tuple(sorted(p.name for p in worktrees_dir.iterdir()))
            if worktrees_dir.is_dir()
            else (),
        )


def make_repo(
    path: str | os.PathLike[str],
    commits: Sequence[Mapping[str, str | None]] = (),
    *,
    branch: str = "main",
) -> GitRepo:
    """A new repository at ``path`` on ``branch``, with one commit per mapping in ``commits``
    (messages ``commit 1``, ``commit 2``, ...)."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", branch)
    repo = GitRepo(root)
    for i, files in enumerate(commits, start=1):
        repo.commit(files, f"commit {i}")
    return repo


def clone(
    src: str | os.PathLike[str] | GitRepo,
    dst: str | os.PathLike[str],
    *,
    depth: int | None = None,
    branch: str | None = None,
    single_branch: bool = False,
) -> GitRepo:
    """``git clone`` of a local repository; its ``origin`` remote is a real remote.

    With ``depth`` the source is given as a ``file://`` URL: git ignores ``--depth`` for plain
    local paths (it copies or hard-links the whole object store instead).
    """
    source = Path(src.path if isinstance(src, GitRepo) else src).resolve()
    target = Path(dst)
    args = ["clone", "-q"]
    if depth is not None:
        args.append(f"--depth={depth}")
    if single_branch:
        args.append("--single-branch")
    if branch is not None:
        args += ["--branch", branch]
    url = source.as_uri() if depth is not None else str(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    _git(target.parent, *args, url, str(target.resolve()))
    return GitRepo(target)


def shallow_clone(
    src: str | os.PathLike[str] | GitRepo, dst: str | os.PathLike[str], depth: int = 1
) -> GitRepo:
    """``git clone --depth DEPTH file://SRC DST``: what ``actions/checkout`` gives by default
    (``fetch-depth: 1``), one branch and its last ``depth`` commits."""
    return clone(src, dst, depth=depth)
