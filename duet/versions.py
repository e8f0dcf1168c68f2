"""Versions: the two commits of ``duet compare``, each in its own git worktree, built.

One :class:`Versions` per invocation, used as a context manager::

    with Versions(".", log_dir=results_dir / "logs") as versions:
        base = versions.build(versions.checkout("baseline", "origin/main"), "make")
        head = versions.build(versions.checkout("candidate", "HEAD"), "make")
        ...  # measure in base.directory and head.directory
    # both worktrees are removed here, also on an error or a signal (the CLI turns SIGINT and
    # SIGTERM into an exception)

What it promises (``docs/versions.md``):

- The user's checkout is never modified: not its files, index, HEAD, branches, tags or stash.
  Worktrees are added with ``git worktree add --detach`` under a cache directory outside the
  checkout, and removed (``git worktree remove --force``, then ``git worktree prune``) at the
  end unless ``keep``.
- ``duet compare`` measures *commits*: uncommitted changes in the user's checkout are not part
  of ``HEAD`` (a warning says so).
- In a shallow clone a missing commit is fetched from the remote (only objects, never a ref, and
  never in a way that shortens the clone's history); without a remote the error gives the
  command that would.
- A build runs through ``/bin/sh`` in the worktree with ``DUET_SIDE`` and ``DUET_VERSION_DIR``
  set; its output goes to a log file, not the terminal. A stamp (commit + sha256 of the command)
  lets a kept worktree skip an identical build later (``rebuild=True`` forces it).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from duet.errors import ResultsError, UnknownRef, UsageError, VersionError
from duet.isolation import RunAs
from duet.results import SIDES, SideName, write_atomic

log = logging.getLogger(__name__)

#: Lines of the build log a failure message shows.
TAIL_LINES = 40
#: Version of the stamp file format; a stamp of another version is not trusted.
STAMP_FORMAT = 1
#: How many worktrees of one commit may exist at once (concurrent duet runs of one repository).
MAX_SLOTS = 16
#: In a shallow clone, how many ancestors of a ref (``HEAD~N``) duet fetches one by one.
MAX_FETCH_GENERATIONS = 50
#: After SIGTERM, how long a build's processes get to exit before SIGKILL.
KILL_GRACE_S = 2.0

# Variables that bind a git process to one repository, index or object store
# (`git rev-parse --local-env-vars`). A git hook exports some of them (a pre-commit hook sets
# GIT_INDEX_FILE to the user's index): inherited by `git worktree add`, they make it write the
# new worktree's checkout into the *user's* index. Inherited by a build, they point the build's
# own git commands at the user's checkout. Neither our git processes nor builds see them.
_REPO_LOCAL_GIT_VARS = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)

_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_HEXISH = re.compile(r"[0-9a-fA-F]{4,64}")
# The trailing ancestry operators of a revision (`HEAD~2`, `main^`, `v1^2~3`).
_ANCESTRY = re.compile(r"(?:[~^][0-9]*)*$")
_ANCESTRY_STEP = re.compile(r"([~^])([0-9]*)")

_CI_HINT = (
    "in GitHub Actions give actions/checkout `fetch-depth: 0`; in GitLab CI set the variable "
    "GIT_DEPTH: 0"
)


@dataclass(frozen=True, slots=True)
class Version:
    """One side's version: a commit checked out in a worktree, built or not.

    ``reused`` says nothing was done for it here: after :meth:`Versions.checkout`, the worktree
    already existed (kept by an earlier run, or the other side is at the same commit); after
    :meth:`Versions.build`, the stamp matched and the build was skipped.
    """

    side: SideName
    #: The ref as the user wrote it (``origin/main``, ``HEAD~1``, a sha, a tag).
    ref: str
    #: The full sha it resolved to.
    commit: str
    #: The worktree, outside the user's checkout.
    directory: Path
    build_log: Path | None
    built: bool
    reused: bool
    #: The commit's subject line, for reports.
    subject: str

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        if not _FULL_SHA.fullmatch(self.commit):
            raise ValueError(f"commit must be a full sha, got {self.commit!r}")

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the results document."""
        return {
            "ref": self.ref,
            "commit": self.commit,
            "subject": self.subject,
            "built": self.built,
            "reused": self.reused,
            "build_log": None if self.build_log is None else str(self.build_log),
        }


class BuildFailed(VersionError):
    """A build command failed or timed out (exit 3). The message holds the log tail; the
    attributes let a report show it on its own."""

    def __init__(
        self,
        message: str,
        *,
        fix: str,
        side: SideName,
        build_exit_code: int | None,
        log_path: Path,
        tail: str,
    ) -> None:
        super().__init__(message, fix=fix)
        self.side = side
        # Not `exit_code`: that is duet's own exit code (3), which the CLI reads.
        self.build_exit_code = build_exit_code  # None: timed out; negative: killed by a signal
        self.log_path = log_path
        self.tail = tail


@dataclass(slots=True)
class _Worktree:
    """A worktree this instance holds (mutable, internal)."""

    commit: str
    directory: Path
    stamp_dir: Path
    lock_path: Path
    lock_fd: int
    reused: bool
    #: sha256 of the commands built here by this instance (a second side at the same commit
    #: does not build again, even with ``rebuild``).
    built_here: set[str] = field(default_factory=set)


class _GitFailed(VersionError):
    """A git command failed. Callers that expect a failure turn it into a precise message;
    any other is still a VersionError (exit 3, no traceback) naming the command."""

    def __init__(self, args: tuple[str, ...], returncode: int, stderr: str, cwd: Path) -> None:
        command = " ".join(args)
        super().__init__(
            f"git {command} failed (exit {returncode}): {stderr.strip()}",
            fix=f"run `git {command}` in {cwd} to see why, fix that, then run duet again",
        )
        self.returncode = returncode
        self.stderr = stderr.strip()


def clean_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the variables that tie git to
    one repository or index (see ``_REPO_LOCAL_GIT_VARS``)."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if k not in _REPO_LOCAL_GIT_VARS}


class Versions:
    """The worktrees and builds of one ``duet compare``; a context manager.

    Parameters
    ----------
    repo
        Any path inside the user's checkout (a linked worktree of theirs works too).
    cache_dir
        Where the worktrees go; default ``$XDG_CACHE_HOME/duet/worktrees/<hash of the
        repository's git directory>`` (``~/.cache`` without XDG_CACHE_HOME). Must be outside
        the checkout.
    keep
        Keep the worktrees (and their builds) at the end, for debugging; a later ``Versions``
        of the same repository reuses them when the commit and build command match.
    log_dir
        Where ``build-<side>.log`` go (the CLI passes ``duet-results/logs``); without it the
        logs stay beside the worktrees (and are removed with them).
    run_as
        When duet runs as root for another user (``sudo``, ``--user``): the builds run as that
        user, the worktrees belong to that user and the default cache is that user's
        (``~user/.cache/duet/worktrees``, or ``/var/tmp/duet-worktrees-<uid>`` when the user
        has no home). Git itself runs as root (git accepts the sudo user's repository, see
        ``safe.directory``); only what the user's code touches changes hands.
    """

    def __init__(
        self,
        repo: str | os.PathLike[str] = ".",
        *,
        cache_dir: Path | None = None,
        keep: bool = False,
        log_dir: Path | None = None,
        run_as: RunAs | None = None,
    ) -> None:
        # Imported here: the CLI must start without GitPython (tests/duet/test_docs.py), and
        # GitPython raises ImportError when no git binary can be found.
        try:
            import git
        except ImportError as e:
            raise VersionError(
                f"GitPython cannot run git: {e}",
                fix="install git (e.g. `sudo apt-get install git`), or point "
                "GIT_PYTHON_GIT_EXECUTABLE at it",
            ) from None

        start = Path(repo).expanduser()
        if not start.exists():
            raise UsageError(
                f"{start}: no such directory",
                fix="run duet compare inside your project's git checkout",
            )
        try:
            self._repo = git.Repo(start, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise VersionError(
                f"{start.resolve()} is not inside a git repository; duet compare checks out "
                "commits of one",
                fix="run duet compare inside your project's git checkout (git clone it first), "
                "or use `duet run --baseline CMD --candidate CMD` to compare two commands",
            ) from None
        self.keep = keep
        self.log_dir = log_dir
        self.run_as = run_as
        self._closed = False
        self._worktrees: dict[str, _Worktree] = {}
        self._shallow: bool | None = None
        try:
            self.root: Path | None = (
                None
                if self._repo.bare or self._repo.working_tree_dir is None
                else Path(self._repo.working_tree_dir).resolve()
            )
            self.git_dir = Path(self._repo.git_dir).resolve()
            self.common_dir = Path(self._repo.common_dir).resolve()
            # GitPython reads objects through its own `git cat-file` processes, which would
            # follow an inherited GIT_DIR; pin them to the repository found above.
            self._repo.git.update_environment(GIT_DIR=str(self.git_dir), GIT_OPTIONAL_LOCKS="0")
            self._cwd = self.root or self.git_dir
            self.cache_dir = self._choose_cache_dir(cache_dir)
        except BaseException:
            self._repo.close()
            raise

    # ----------------------------------------------------------------------------------------
    # Context manager

    def __enter__(self) -> Versions:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except VersionError as cleanup:
            # The error that ended the block is the one to report; a cleanup failure after it
            # is logged (with the commands to finish the cleanup), not allowed to mask it.
            log.error("%s", cleanup)

    # ----------------------------------------------------------------------------------------
    # Refs

    def resolve(self, ref: str) -> str:
        """The full sha of the commit ``ref`` names (branch, tag, sha, ``HEAD~1``,
        ``origin/main``, anything ``git rev-parse`` accepts).

        In a shallow clone a commit that is not there is fetched from the remote first.

        Raises
        ------
        UsageError
            ``ref`` is empty or looks like an option.
        UnknownRef
            No such commit, here or on the remote (exit 2; the message names the ref and the
            command that would fix it).
        VersionError
            A shallow clone that cannot fetch it (exit 3).
        """
        self._check_open()
        _check_ref(ref)
        sha = self._rev_parse_commit(ref)
        if sha is not None:
            return sha
        if self._is_shallow():
            return self._fetch_missing(ref)
        raise self._unknown_ref(ref)

    def read_file_at(self, commit: str, path: str) -> str | None:
        """The text of ``path`` (relative to the repository root) at ``commit``, or ``None``
        when that commit has no such file (``git show COMMIT:PATH``)."""
        self._check_open()
        sha = self.resolve(commit)
        name = path.replace(os.sep, "/").strip("/")
        while name.startswith("./"):
            name = name[2:]
        if not name:
            return None
        try:
            obj = self._repo.commit(sha).tree / name
        except KeyError:
            return None
        if obj.type != "blob":
            return None
        data: bytes = obj.data_stream.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise VersionError(
                f"{name} at {sha[:12]} is not UTF-8 text ({e.reason} at byte {e.start})",
                fix=f"save {name} as UTF-8 and commit it",
            ) from None

    # ----------------------------------------------------------------------------------------
    # Worktrees

    def checkout(self, side: SideName, ref: str) -> Version:
        """Resolve ``ref`` and check its commit out, detached, in a worktree under
        :attr:`cache_dir`; reuse the worktree when it already holds that commit (the other
        side at the same commit, or one kept by an earlier run)."""
        self._check_open()
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        sha = self.resolve(ref)
        self._warn_if_uncommitted(ref, sha)
        subject = self._subject(sha)
        held = self._worktrees.get(sha)
        if held is not None:
            log.info("%s: %s is at the same commit as the other side; sharing %s", side, ref, sha)
            return Version(side, ref, sha, held.directory, None, False, True, subject)
        wt = self._acquire(sha)
        self._worktrees[sha] = wt
        log.info(
            "%s: %s = %s %s in %s",
            side,
            ref,
            sha[:12],
            "reused" if wt.reused else "checked out",
            wt.directory,
        )
        return Version(side, ref, sha, wt.directory, None, False, wt.reused, subject)

    def build(
        self,
        version: Version,
        command: str | None,
        *,
        rebuild: bool = False,
        timeout_s: float | None = None,
    ) -> Version:
        """Run ``command`` through ``/bin/sh`` in ``version.directory``.

        The environment is this process's (without the git variables that would redirect the
        build's git commands to the user's checkout) plus ``DUET_SIDE`` and
        ``DUET_VERSION_DIR``. Standard output and error go to ``<log_dir>/build-<side>.log``.
        When the worktree's stamp says the same command already succeeded at this commit the
        build is skipped (``reused``), unless ``rebuild``; two sides at one commit build once.
        ``None``: nothing to build.

        Raises
        ------
        BuildFailed
            A non-zero exit or the timeout: the exit code, the log path and the log's tail.
        """
        self._check_open()
        wt = self._worktrees.get(version.commit)
        if wt is None or wt.directory != version.directory:
            raise ValueError(f"{version.directory} was not checked out by this Versions")
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if command is None:
            return replace(version, built=False, reused=version.reused, build_log=None)
        command_sha = hashlib.sha256(command.encode()).hexdigest()
        log_path = self._log_path(version.side, wt)
        if command_sha in wt.built_here or (not rebuild and self._stamp_matches(wt, command_sha)):
            self._reuse_log(version, wt, log_path)
            log.info("%s: build of %s reused (same commit and command)", version.side, version.ref)
            return replace(version, built=True, reused=True, build_log=log_path)
        # An interrupted or failed build must not be taken for a finished one later.
        with contextlib.suppress(FileNotFoundError):
            (wt.stamp_dir / "stamp.json").unlink()
        duration_s = self._run_build(version, command, log_path, timeout_s)
        self._write_stamp(wt, command, command_sha, log_path, duration_s)
        wt.built_here.add(command_sha)
        log.info("%s: built %s in %.1f s", version.side, version.ref, duration_s)
        return replace(version, built=True, reused=False, build_log=log_path)

    def close(self) -> None:
        """Remove every worktree this instance checked out or reused (unless ``keep``), then
        ``git worktree prune``. Idempotent; a second call after an interrupted one finishes
        the job.

        Raises
        ------
        VersionError
            A worktree could not be removed; the fix gives the commands to do it by hand.
        """
        if self._closed:
            return
        failed: list[str] = []
        removed_any = False
        while self._worktrees:
            # An entry leaves the table only once handled: if a second signal interrupts the
            # removal, a second close() (or the CLI's last-chance cleanup) finishes it.
            sha, wt = next(iter(self._worktrees.items()))
            if self.keep:
                log.info("kept the worktree of %s: %s", sha[:12], wt.directory)
            else:
                if not self._discard(wt.directory, wt.stamp_dir):
                    failed.append(str(wt.directory))
                removed_any = True
            del self._worktrees[sha]
            _unlock(wt.lock_path, wt.lock_fd)
        if removed_any:
            try:
                self._git("worktree", "prune")
            except _GitFailed as e:
                log.warning("git worktree prune failed: %s", e.stderr)
        self._closed = True
        self._repo.close()
        if failed:
            raise VersionError(
                f"could not remove the worktree(s) {', '.join(failed)}",
                fix=f"remove them by hand: rm -rf {' '.join(failed)} && git -C {self._cwd} "
                "worktree prune",
            )

    # ----------------------------------------------------------------------------------------
    # Internals: git

    def _git(
        self, *args: str, cwd: Path | None = None, ok: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess[str]:
        """Run git with a clean environment (see ``_REPO_LOCAL_GIT_VARS``).

        GitPython's command wrapper can add variables to git's environment but not remove
        inherited ones, so the commands that write (worktree add/remove, fetch) and the
        rest, for consistency, go through here.
        """
        env = clean_environment()
        env.update(
            LC_ALL="C",
            LANGUAGE="C",
            # `git status` and friends refresh the index as a side effect; the user's index
            # must not change, not even its mtime.
            GIT_OPTIONAL_LOCKS="0",
            # A fetch must fail, not wait for a password nobody will type (CI).
            GIT_TERMINAL_PROMPT="0",
        )
        where = cwd or self._cwd
        log.debug("git %s (in %s)", " ".join(args), where)
        done = subprocess.run(
            ["git", *args],
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        if done.returncode not in ok:
            raise _GitFailed(args, done.returncode, done.stderr, where)
        return done

    def _rev_parse_commit(self, spec: str) -> str | None:
        done = self._git("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}", ok=(0, 1, 128))
        sha = done.stdout.strip()
        return sha if done.returncode == 0 and _FULL_SHA.fullmatch(sha) else None

    def _has_commit(self, sha: str) -> bool:
        return self._git("cat-file", "-e", f"{sha}^{{commit}}", ok=(0, 1, 128)).returncode == 0

    def _is_shallow(self) -> bool:
        if self._shallow is None:
            out = self._git("rev-parse", "--is-shallow-repository").stdout.strip()
            self._shallow = out == "true"
        return self._shallow

    def _remotes(self) -> list[str]:
        return self._git("remote").stdout.split()

    def _subject(self, sha: str) -> str:
        summary = self._repo.commit(sha).summary
        return summary if isinstance(summary, str) else summary.decode("utf-8", "replace")

    def _warn_if_uncommitted(self, ref: str, sha: str) -> None:
        if self.root is None or self._rev_parse_commit("HEAD") != sha:
            return
        changes = self._git("status", "--porcelain", "--untracked-files=no").stdout
        if changes.strip():
            log.warning(
                "%s has uncommitted changes; they are not part of %s (%s): duet compare "
                "measures commits. Commit them to measure them.",
                self.root,
                ref,
                sha[:12],
            )

    def _unknown_ref(self, ref: str) -> UnknownRef:
        """The error for a ref that names no commit, with the fix that fits the case."""
        where = self.root or self.common_dir
        remotes = self._remotes()
        remote = _default_remote(remotes) or "origin"
        base, suffix, _ = _strip_ancestry(ref)
        # `^{object}`: without it rev-parse takes any 40 hex digits without looking.
        spec = f"{ref}^{{object}}" if _FULL_SHA.fullmatch(ref) else ref
        some_object = self._git("rev-parse", "--verify", "--quiet", spec, ok=(0, 1, 128))
        if some_object.returncode == 0:
            kind = self._git("cat-file", "-t", some_object.stdout.strip(), ok=(0, 128))
            return UnknownRef(
                f"{ref!r} names a {kind.stdout.strip() or 'git object'}, not a commit",
                fix="give a branch, tag or commit",
            )
        if base and suffix and self._rev_parse_commit(base) is not None:
            return UnknownRef(
                f"{ref!r} goes back further than the history of {base!r} in {where}",
                fix=f"count again (git log --oneline {base}), or give the commit's sha",
            )
        # git's own explanation when it has one (an ambiguous short sha), rather than its
        # "Needed a single revision".
        done = self._git("rev-parse", "--verify", f"{ref}^{{commit}}", ok=(0, 1, 128))
        detail = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
        reason = f" ({detail[0].removeprefix('error: ')})" if detail else ""
        head, sep, rest = base.partition("/")
        tracking: list[str] = []
        if base and not _HEXISH.fullmatch(base):
            tracking = self._git(
                "for-each-ref", "--format=%(refname:short)", f"refs/remotes/*/{base}", ok=(0, 1)
            ).stdout.split()
        if tracking:
            fix = (
                f"did you mean {tracking[0] + suffix!r}? There is no local branch or tag "
                f"{base!r} (a CI checkout usually has none)"
            )
        elif sep and head in remotes:
            fix = f"fetch it: git fetch {head} {rest}; {_CI_HINT}"
        elif _HEXISH.fullmatch(base):
            fix = "check the sha (git log --oneline --all)"
            if remotes:
                fix += f", or fetch it: git fetch {remote}"
                if _FULL_SHA.fullmatch(base):
                    fix += f" {base}"
        elif not remotes:
            fix = "check the name: git branch --all; git tag --list"
        else:
            fix = (
                "check the name (git branch --all; git tag --list), or fetch it: "
                f"git fetch {remote} {base}"
            )
        return UnknownRef(f"{ref!r} does not name a commit in {where}{reason}", fix=fix)

    # ----------------------------------------------------------------------------------------
    # Internals: shallow clones

    def _fetch_missing(self, ref: str) -> str:
        """Fetch what a shallow clone lacks for ``ref`` and return its commit.

        A shallow clone must never come out *shorter*: git marks every commit at the depth
        boundary of a fetch as shallow (its parents hidden), even one whose parents the clone
        already has. Measured here: `git fetch --depth=2` of a new child of HEAD, and
        `git fetch --deepen=1` of a new branch tip whose parent was already here, both cut
        the user's HEAD history short. So only commits the clone does not have are fetched,
        one at a time with ``--depth=1``: the only boundary such a fetch adds is the new
        commit itself. Ancestry (``~N``, ``^N``) is followed by reading the parents recorded
        in each commit object, which a shallow boundary hides from `rev-parse` but not from
        `cat-file`. Only objects are fetched: no ref, no FETCH_HEAD, no tags.
        """
        base, suffix, generations = _strip_ancestry(ref)
        remotes = self._remotes()
        remote = _default_remote(remotes)
        name = base
        head, sep, rest = base.partition("/")
        if sep and head in remotes:
            remote, name = head, rest
        where = self.root or self.common_dir
        if remote is None:
            raise VersionError(
                f"{ref!r} is not in this shallow clone ({where}), and the clone has no "
                "remote to fetch it from",
                fix=(
                    "clone with the history the comparison needs (git clone URL, without "
                    "--depth), or add the remote and fetch it: git remote add origin URL && "
                    f"git fetch --unshallow origin; {_CI_HINT}"
                ),
            )
        manual = f"git fetch --unshallow {remote}"
        if generations > MAX_FETCH_GENERATIONS:
            raise VersionError(
                f"{ref!r} is {generations} commits below {base!r}, beyond this shallow clone "
                f"({where}); duet fetches at most {MAX_FETCH_GENERATIONS} one by one",
                fix=f"fetch the history first: {manual}; {_CI_HINT}",
            )
        try:
            tip = self._rev_parse_commit(base) if base else None
            if tip is None:
                if _FULL_SHA.fullmatch(base):
                    tip = base.lower()
                else:
                    tip = self._ls_remote(remote, name)
                    if tip is None and _HEXISH.fullmatch(base):
                        raise VersionError(
                            f"{ref!r} is not in this shallow clone ({where}), and a short sha "
                            "cannot be fetched (a remote is asked for full shas only)",
                            fix=f"give the full 40-character sha, or fetch the history: "
                            f"{manual}; {_CI_HINT}",
                        )
                    if tip is None:
                        raise UnknownRef(
                            f"{ref!r} is not in this shallow clone ({where}), and {remote!r} "
                            f"has no branch or tag {name!r}",
                            fix="check the name (git ls-remote --heads --tags "
                            f"{remote}), or fetch the whole history: {manual}",
                        )
                self._fetch_commit(remote, tip, base)
                tip = self._rev_parse_commit(tip)
                if tip is None:
                    raise UnknownRef(
                        f"{base!r} on {remote!r} does not name a commit",
                        fix="give a branch, tag or commit",
                    )
            sha = tip
            for op, digits in _ANCESTRY_STEP.findall(suffix):
                n = int(digits) if digits else 1
                steps = [1] * n if op == "~" else ([n] if n > 0 else [])
                for nth in steps:
                    sha = self._parent(sha, nth, ref, base, remote)
        except _GitFailed as e:
            tail = "; ".join(e.stderr.splitlines()[-3:])
            raise VersionError(
                f"{ref!r} is not in this shallow clone ({where}) and fetching it from "
                f"{remote!r} failed: {tail}",
                fix=f"fetch the history by hand: {manual}; {_CI_HINT}",
            ) from None
        return sha

    def _parent(self, sha: str, nth: int, ref: str, base: str, remote: str) -> str:
        """The ``nth`` parent of ``sha`` as its commit object records it, fetched if absent."""
        raw = self._git("cat-file", "commit", sha).stdout
        header = raw.split("\n\n", 1)[0].splitlines()
        parents = [line.removeprefix("parent ") for line in header if line.startswith("parent ")]
        if len(parents) < nth:
            raise UnknownRef(
                f"{ref!r} goes back further than the history of {base!r}",
                fix=f"count again (git log --oneline {base}), or give the commit's sha",
            )
        parent = parents[nth - 1]
        self._fetch_commit(remote, parent, f"{parent[:12]} (an ancestor of {base})")
        return parent

    def _fetch_commit(self, remote: str, sha: str, what: str) -> None:
        """Fetch commit ``sha`` alone, unless the clone has it (see _fetch_missing)."""
        if self._has_commit(sha):
            return
        log.info("fetching %s from %s", what, remote)
        options = [
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-recurse-submodules",
            "--depth=1",
        ]
        if _git_version(self._repo) >= (2, 29):
            options.append("--no-write-fetch-head")
        self._git(*options, remote, sha)

    def _ls_remote(self, remote: str, name: str) -> str | None:
        if name.startswith("refs/"):
            wanted = [name]
        else:
            # git's own order for a short name: refs/NAME, tags, then branches.
            wanted = [f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}"]
        # An annotated tag is asked for peeled too (`^{}`): its commit is what we fetch. The
        # tag object would drag its commit in at depth 1, and if that commit is already
        # here, mark it shallow, cutting the user's history (see _fetch_missing).
        peeled = [f"{r}^{{}}" for r in wanted if r.startswith("refs/tags/")]
        out = self._git("ls-remote", remote, *wanted, *peeled).stdout
        found: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, refname = line.partition("\t")
            found[refname.strip()] = sha.strip()
        for refname in wanted:
            sha = found.get(f"{refname}^{{}}") or found.get(refname, "")
            if _FULL_SHA.fullmatch(sha):
                return sha.lower()
        return None

    # ----------------------------------------------------------------------------------------
    # Internals: worktree directories

    def _choose_cache_dir(self, requested: Path | None) -> Path:
        if requested is None:
            key = hashlib.sha256(str(self.common_dir).encode()).hexdigest()[:16]
            if self.run_as is not None:
                # Root's cache (/root, mode 0700) is closed to the user the sides run as.
                home = self.run_as.home
                requested = (
                    Path(home) / ".cache" / "duet" / "worktrees" / key
                    if home is not None
                    else Path("/var/tmp") / f"duet-worktrees-{self.run_as.uid}" / key
                )
            else:
                xdg = os.environ.get("XDG_CACHE_HOME", "")
                # The XDG spec says to ignore a relative XDG_CACHE_HOME.
                base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
                requested = base / "duet" / "worktrees" / key
        cache = Path(requested).expanduser().resolve()
        for inside in (self.root, self.common_dir):
            if inside is not None and (cache == inside or inside in cache.parents):
                raise UsageError(
                    f"the worktree cache {cache} is inside the checkout {inside}; a worktree "
                    "there would show in `git status` of the user's checkout",
                    fix="set XDG_CACHE_HOME to a directory outside the repository",
                )
        try:
            _make_dirs(cache, self.run_as)
        except OSError as e:
            raise VersionError(
                f"cannot create the worktree cache {cache}: {e.strerror or e}",
                fix="set XDG_CACHE_HOME to a writable directory outside the checkout",
            ) from None
        return cache

    def _registered(self) -> dict[Path, str]:
        """Worktrees git knows of: path -> the commit at their HEAD ('' if none)."""
        out = self._git("worktree", "list", "--porcelain").stdout
        found: dict[Path, str] = {}
        path: Path | None = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                path = Path(line.removeprefix("worktree ")).resolve()
                found[path] = ""
            elif line.startswith("HEAD ") and path is not None:
                found[path] = line.removeprefix("HEAD ").strip()
        return found

    def _acquire(self, sha: str) -> _Worktree:
        """A worktree of ``sha`` that no other duet process holds: ``<sha>``, else
        ``<sha>.1``, ... Each is held by an exclusive lock on ``<name>.lock`` for the life of
        this instance, so a concurrent duet never removes or rebuilds a worktree in use."""
        for slot in range(MAX_SLOTS):
            name = sha if slot == 0 else f"{sha}.{slot}"
            lock_path = self.cache_dir / f"{name}.lock"
            fd = _try_lock(lock_path)
            if fd is None:
                continue
            try:
                directory = self.cache_dir / name
                stamp_dir = self.cache_dir / f"{name}.stamp"
                reused = self._prepare(directory, stamp_dir, sha)
                if self.run_as is not None:
                    _give(directory, self.run_as)
            except BaseException:
                _unlock(lock_path, fd)
                raise
            return _Worktree(sha, directory, stamp_dir, lock_path, fd, reused)
        raise VersionError(
            f"{MAX_SLOTS} other duet runs hold worktrees of {sha[:12]} in {self.cache_dir}",
            fix="wait for them to finish, or stop them",
        )

    def _prepare(self, directory: Path, stamp_dir: Path, sha: str) -> bool:
        """Make ``directory`` a clean worktree at ``sha``; True when an existing one was kept."""
        registered = self._registered()
        if directory.exists():
            if registered.get(directory.resolve()) == sha and (directory / ".git").is_file():
                modified = self._git(
                    "status", "--porcelain", "--untracked-files=no", cwd=directory, ok=(0, 128)
                )
                if modified.returncode == 0 and not modified.stdout.strip():
                    return True
                # Someone edited a kept worktree (debugging): its build no longer matches the
                # commit, so measuring it would measure something else.
                log.info(
                    "the kept worktree %s has modified files; checking it out again", directory
                )
            if not self._discard(directory, stamp_dir):
                raise VersionError(
                    f"cannot remove the stale worktree {directory}",
                    fix=f"remove it by hand: rm -rf {directory} && git -C {self._cwd} "
                    "worktree prune",
                )
        # A crash can leave a registration whose directory is gone; `worktree add` refuses to
        # reuse such a path until it is pruned.
        self._git("worktree", "prune")
        with contextlib.suppress(FileNotFoundError):
            _rmtree(stamp_dir)
        try:
            # No hooks: a user's post-checkout hook is for their checkout, not for ours.
            self._git(
                "-c",
                f"core.hooksPath={os.devnull}",
                "worktree",
                "add",
                "--detach",
                str(directory),
                sha,
            )
        except _GitFailed as e:
            self._discard_quietly(directory, stamp_dir)
            raise VersionError(
                f"git worktree add of {sha[:12]} in {directory} failed: {e.stderr}",
                fix=f"check the space and permissions of {self.cache_dir}, then run again",
            ) from None
        except BaseException:
            # Interrupted half-way (a signal): the worktree is not ours to close yet, so
            # remove it here rather than leave a registration behind.
            self._discard_quietly(directory, stamp_dir)
            raise
        return False

    def _discard_quietly(self, directory: Path, stamp_dir: Path) -> None:
        try:
            self._discard(directory, stamp_dir)
            self._git("worktree", "prune")
        except (VersionError, OSError) as e:
            log.warning("could not remove the unfinished worktree %s: %s", directory, e)

    def _discard(self, directory: Path, stamp_dir: Path) -> bool:
        """Remove a worktree (registered or not) and its stamp; False if it is still there."""
        with contextlib.suppress(FileNotFoundError):
            _rmtree(stamp_dir)
        if directory.resolve() in self._registered():
            try:
                self._git("worktree", "remove", "--force", "--force", str(directory))
            except _GitFailed as e:
                # A worktree holding submodules, or read-only files from a build: remove the
                # files ourselves; the prune in close() drops the registration.
                log.debug("git worktree remove %s: %s", directory, e.stderr)
        if directory.exists():
            with contextlib.suppress(FileNotFoundError):
                _rmtree(directory)
        return not directory.exists()

    # ----------------------------------------------------------------------------------------
    # Internals: builds

    def _log_path(self, side: SideName, wt: _Worktree) -> Path:
        target = (
            (self.log_dir / f"build-{side}.log") if self.log_dir else wt.stamp_dir / "build.log"
        )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise VersionError(
                f"cannot create the log directory {target.parent}: {e.strerror or e}",
                fix="choose a writable results directory (--out)",
            ) from None
        return target

    def _stamp_matches(self, wt: _Worktree, command_sha: str) -> bool:
        try:
            stamp = json.loads((wt.stamp_dir / "stamp.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return (
            isinstance(stamp, dict)
            and stamp.get("format") == STAMP_FORMAT
            and stamp.get("commit") == wt.commit
            and stamp.get("command_sha256") == command_sha
        )

    def _reuse_log(self, version: Version, wt: _Worktree, log_path: Path) -> None:
        previous = wt.stamp_dir / "build.log"
        if log_path == previous:
            return
        note = (
            f"# duet: the {version.side} ({version.ref} = {version.commit}) reuses an earlier "
            "build of this commit with the same command; its log follows.\n"
        )
        try:
            body = previous.read_bytes()
        except OSError:
            body = b"# duet: (the earlier build's log is gone)\n"
        with open(log_path, "wb") as out:
            out.write(note.encode())
            out.write(body)

    def _run_build(
        self, version: Version, command: str, log_path: Path, timeout_s: float | None
    ) -> float:
        env = clean_environment()
        env.update(
            DUET_SIDE=version.side,
            DUET_VERSION_DIR=str(version.directory),
            PWD=str(version.directory),
        )
        who: dict[str, Any] = {}
        if self.run_as is not None:
            env = self.run_as.environment(env)
            who = {
                "user": self.run_as.uid,
                "group": self.run_as.gid,
                "extra_groups": list(self.run_as.groups),
            }
        header = (
            f"# duet build: {version.side}, {version.ref} = {version.commit}\n"
            f"# directory: {version.directory}\n# command: {command}\n"
            + (f"# user: {self.run_as.name} (uid {self.run_as.uid})\n" if self.run_as else "")
        )
        log.info("%s: building %s: %s", version.side, version.ref, command)
        t0 = time.monotonic()
        # The output goes straight to the file, not through a pipe: a background process the
        # build leaves behind (a compiler server) keeps a pipe open and would hang the read.
        with open(log_path, "wb") as out:
            out.write(header.encode())
            out.flush()
            proc = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=version.directory,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own process group, so that a timeout or a signal stops the whole build
                # (make and its compilers), not only the shell.
                start_new_session=True,
                **who,
            )
            try:
                returncode: int | None = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _stop_group(proc)
                returncode = None
            except BaseException:
                # SIGINT/SIGTERM arrive as an exception (the CLI's handler): the build must
                # not outlive us.
                _stop_group(proc)
                raise
            if _group_alive(proc.pid):
                log.warning(
                    "the %s build left processes running; stopping them (they would disturb "
                    "the measurement)",
                    version.side,
                )
                _stop_group(proc)
        duration_s = time.monotonic() - t0
        if returncode == 0:
            return duration_s
        tail = _tail(log_path, TAIL_LINES)
        if returncode is None:
            what = f"timed out after {timeout_s:g} s and was stopped"
        elif returncode < 0:
            what = f"was killed by {signal.Signals(-returncode).name}"
            if -returncode == signal.SIGKILL:
                what += " (out of memory?)"
        else:
            what = f"failed with exit code {returncode}"
        raise BuildFailed(
            f"the build of the {version.side} ({version.ref} = {version.commit[:12]}) {what}; "
            f"log: {log_path}\n--- last lines of the build log ---\n{tail}",
            fix=(
                "fix the build command or the code at that commit; to debug it where it ran, "
                "re-run with --keep-worktrees and run the command in "
                f"{version.directory} with DUET_SIDE={version.side}"
            ),
            side=version.side,
            build_exit_code=returncode,
            log_path=log_path,
            tail=tail,
        )

    def _write_stamp(
        self, wt: _Worktree, command: str, command_sha: str, log_path: Path, duration_s: float
    ) -> None:
        stamp = {
            "format": STAMP_FORMAT,
            "commit": wt.commit,
            "command_sha256": command_sha,
            "command": command,
            "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "duration_s": round(duration_s, 3),
        }
        path = wt.stamp_dir / "stamp.json"
        try:
            wt.stamp_dir.mkdir(parents=True, exist_ok=True)
            if log_path != wt.stamp_dir / "build.log":
                shutil.copyfile(log_path, wt.stamp_dir / "build.log")
            write_atomic(path, json.dumps(stamp, indent=1) + "\n")
        except (OSError, ResultsError) as e:
            cause = e.__cause__ if isinstance(e, ResultsError) else e
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(e)
            raise VersionError(
                f"the build succeeded but its stamp {path} could not be written: {reason}",
                fix=f"free space in {self.cache_dir} (or set XDG_CACHE_HOME), then run again",
            ) from None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Versions is closed")


# --------------------------------------------------------------------------------------------
# Helpers


def _check_ref(ref: str) -> None:
    if not isinstance(ref, str) or not ref.strip():
        raise UsageError(
            "an empty git ref", fix="give a branch, tag or commit, e.g. duet compare main HEAD"
        )
    if ref.startswith("-"):
        raise UsageError(
            f"{ref!r} is not a git ref (it looks like an option)",
            fix="give a branch, tag or commit; put options before BASE and HEAD",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise UsageError(
            f"{ref!r} is not a git ref (it holds a control character)",
            fix="give a branch, tag or commit",
        )


def _strip_ancestry(ref: str) -> tuple[str, str, int]:
    """``HEAD~2^`` -> (``HEAD``, ``~2^``, 3): the base, the ancestry suffix, and how many
    generations below the base it reaches."""
    match = _ANCESTRY.search(ref)
    assert match is not None  # the pattern matches the empty string at the end
    base, suffix = ref[: match.start()], ref[match.start() :]
    generations = 0
    for op, digits in _ANCESTRY_STEP.findall(suffix):
        n = int(digits) if digits else 1
        generations += n if op == "~" else min(n, 1)
    return base, suffix, generations


def _default_remote(remotes: list[str]) -> str | None:
    if "origin" in remotes:
        return "origin"
    return remotes[0] if len(remotes) == 1 else None


def _git_version(repo: Any) -> tuple[int, ...]:
    info = repo.git.version_info
    return tuple(int(x) for x in info)


def _make_dirs(path: Path, run_as: RunAs | None) -> None:
    """``mkdir -p path``; the directories it creates belong to ``run_as`` when given."""
    missing: list[Path] = []
    for p in (path, *path.parents):
        if p.exists():
            break
        missing.append(p)
    path.mkdir(parents=True, exist_ok=True)
    if run_as is not None:
        for p in missing:
            os.chown(p, run_as.uid, run_as.gid)


def _give(directory: Path, run_as: RunAs) -> None:
    """Hand a checked-out worktree to the user the build and the sides run as."""
    os.lchown(directory, run_as.uid, run_as.gid)
    for root, dirs, files in os.walk(directory):
        for name in (*dirs, *files):
            os.lchown(os.path.join(root, name), run_as.uid, run_as.gid)


def _try_lock(path: Path) -> int | None:
    """An exclusive lock on ``path``, or None when another process holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # The holder before us may have unlinked the file after we opened it (see _unlock):
        # a lock on a file no longer at that path protects nothing, so start again.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def _unlock(path: Path, fd: int) -> None:
    # Unlinked while still locked, so lock files do not pile up; _try_lock's inode check makes
    # that safe.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(fd)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: orphans of the
    build are reparented to PID 1, which in a container may never reap them, and
    ``killpg(pgid, 0)`` succeeds on zombies."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    if not entries:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the build's process group, SIGKILL what is left after a grace period, reap."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.02)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)


def _tail(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 200 * lines))
            data = f.read()
    except OSError:
        return "(the build log cannot be read)"
    text = data.decode("utf-8", "replace").splitlines()
    if size > 200 * lines and text:
        text = text[1:]  # the first line read is probably cut
    return "\n".join(text[-lines:])


def _rmtree(path: Path) -> None:
    # `onerror` is deprecated from Python 3.12 on, `onexc` does not exist before it.
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_make_writable_and_retry)
    else:
        shutil.rmtree(path, onerror=_make_writable_and_retry)


def _make_writable_and_retry(func: Callable[..., Any], path: str, _exc: Any) -> None:
    # Builds leave read-only trees (Go's module cache, some installers); the directory that
    # holds a read-only entry must be writable for rmtree to delete it.
    parent = os.path.dirname(path)
    with contextlib.suppress(OSError):
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
    with contextlib.suppress(OSError):
        os.chmod(path, os.stat(path, follow_symlinks=False).st_mode | stat.S_IWUSR)
    func(path)
