"""The user's repository: finding it, resolving refs, reading objects, fetching into shallow clones.

Two ways to talk to git, each for what it does well:

- **GitPython** finds the repository from any path inside it (a linked worktree too) and reads
  objects through its persistent ``git cat-file --batch`` processes: whether a commit is
  here, commit subjects, the parents a commit object records (which a shallow boundary hides
  from ``rev-parse`` but not from the object), files at a commit. Its errors become
  :class:`VersionError`.
- **git commands** (``rev-parse``, ``for-each-ref``, ``ls-remote``, ``fetch``, ``worktree``,
  ``status``) run through :meth:`Repository.run` with a cleaned environment. GitPython's
  command wrapper (``repo.git.<cmd>``) starts every process from ``os.environ`` and can add
  variables but not remove inherited ones; measured with GitPython 3.2.1 and git 2.39.5:
  ``repo.git.worktree("add", ...)`` run under a hook's ``GIT_INDEX_FILE`` rewrote the user's
  index (a committed file showed as deleted in ``git status``). So every command goes through
  one runner that drops the variables of :mod:`duet_bench.versions.gitenv`.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from duet_bench.errors import UnknownRef, UsageError, VersionError
from duet_bench.isolation.model import RunAs
from duet_bench.isolation.privileges import popen_user
from duet_bench.versions.gitenv import OBJECT_READS_AS_ROOT, clean_environment
from duet_bench.versions.refs import (
    ANCESTRY_STEP,
    FULL_SHA,
    HEXISH,
    check_ref,
    default_remote,
    strip_ancestry,
    unmatched_search,
)

log = logging.getLogger(__name__)

#: In a shallow clone, how many ancestors of a ref (``HEAD~N``) duet fetches one by one.
MAX_FETCH_GENERATIONS = 50

_CI_HINT = (
    "in GitHub Actions give actions/checkout `fetch-depth: 0`; in GitLab CI set the variable "
    "GIT_DEPTH: 0"
)


def _object_errors() -> tuple[type[Exception], ...]:
    from git.exc import GitError, ODBError

    return (ValueError, OSError, GitError, ODBError)


class GitFailed(VersionError):
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


class Repository:
    """The user's repository, found from any path inside it.

    Raises
    ------
    UsageError
        ``start`` does not exist.
    VersionError
        ``start`` is not inside a git repository, or GitPython cannot run git.
    """

    def __init__(self, start: Path, run_as: RunAs | None = None) -> None:
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
        self._shallow: bool | None = None
        #: Who our git commands run as (docs/isolation.md, "What runs as root").
        self.run_as = run_as
        try:
            #: The user's working tree (None for a bare repository).
            self.root: Path | None = (
                None
                if self._repo.bare or self._repo.working_tree_dir is None
                else Path(self._repo.working_tree_dir).resolve()
            )
            self.git_dir = Path(self._repo.git_dir).resolve()
            self.common_dir = Path(self._repo.common_dir).resolve()
            # GitPython reads objects through its own `git cat-file` processes, which would
            # follow an inherited GIT_DIR; pin them to the repository found above.
            self._repo.git.update_environment(
                GIT_DIR=str(self.git_dir), GIT_OPTIONAL_LOCKS="0", **OBJECT_READS_AS_ROOT
            )
        except BaseException:
            self._repo.close()
            raise
        #: Where our git commands run, and what messages name.
        self.cwd = self.root or self.git_dir
        self.where = self.root or self.common_dir

    def close(self) -> None:
        """Stop GitPython's ``cat-file`` processes."""
        self._repo.close()

    # ----------------------------------------------------------------------------------------
    # Commands

    def run(
        self, *args: str, cwd: Path | None = None, ok: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess[str]:
        """Run git with a clean environment (see the module docstring for why not GitPython).

        Raises
        ------
        GitFailed
            The exit code is not in ``ok``.
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
        where = cwd or self.cwd
        if self.run_as is not None:
            # As the user: their git configuration (core.fsmonitor, hooks, credential
            # helpers, ...) runs commands, and with their rights only (issue 25, item 4).
            env = self.run_as.environment(env)
        log.debug("git %s (in %s)", " ".join(args), where)
        done = subprocess.run(
            ["git", *args],
            cwd=where,
            env=env,
            **popen_user(self.run_as),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        if done.returncode not in ok:
            raise GitFailed(args, done.returncode, done.stderr, where)
        return done

    def version(self) -> tuple[int, ...]:
        """The git binary's version, e.g. ``(2, 39, 5)``."""
        return tuple(int(x) for x in self._repo.git.version_info)

    def rev_parse_commit(self, spec: str) -> str | None:
        """The full sha of the commit ``spec`` names, or None."""
        if spec.startswith(":/"):
            # A search of commit messages: git reads a suffix as part of the text searched
            # for, so the commit is peeled in a second step.
            found = self.run("rev-parse", "--verify", "--quiet", spec, ok=(0, 1, 128))
            if found.returncode != 0:
                return None
            spec = found.stdout.strip()
        done = self.run("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}", ok=(0, 1, 128))
        sha = done.stdout.strip()
        return sha if done.returncode == 0 and FULL_SHA.fullmatch(sha) else None

    def is_shallow(self) -> bool:
        if self._shallow is None:
            out = self.run("rev-parse", "--is-shallow-repository").stdout.strip()
            self._shallow = out == "true"
        return self._shallow

    def remotes(self) -> list[str]:
        return self.run("remote").stdout.split()

    def has_uncommitted_changes(self, directory: Path | None = None) -> bool | None:
        """Whether tracked files of ``directory`` (default: the user's checkout) differ from
        its HEAD; None when git cannot tell (not a worktree)."""
        done = self.run(
            "status",
            "--porcelain",
            "--untracked-files=no",
            cwd=directory,
            ok=(0,) if directory is None else (0, 128),
        )
        return None if done.returncode != 0 else bool(done.stdout.strip())

    # ----------------------------------------------------------------------------------------
    # Objects (GitPython)

    # What GitPython raises when an object cannot be read: ValueError ("SHA could not be
    # resolved"), gitdb's BadName/BadObject (ODBError), GitError (its cat-file process died).
    def _object_error(self, what: str, e: Exception) -> VersionError:
        return VersionError(
            f"git cannot read {what} in {self.where}: {e}",
            fix=f"run `git fsck` in {self.where}; a damaged repository must be repaired or "
            "cloned again",
        )

    def has_commit(self, sha: str) -> bool:
        """Whether the object store holds commit ``sha`` (a full sha)."""
        try:
            return bool(self._repo.odb.info(bytes.fromhex(sha)).type == b"commit")
        except ValueError:  # GitPython's "SHA could not be resolved"
            return False

    def subject(self, sha: str) -> str:
        """The first line of commit ``sha``'s message."""
        try:
            summary = self._repo.commit(sha).summary
        except _object_errors() as e:
            raise self._object_error(f"commit {sha[:12]}", e) from None
        return summary if isinstance(summary, str) else summary.decode("utf-8", "replace")

    def parents(self, sha: str) -> list[str]:
        """The parents commit ``sha`` records, also those a shallow boundary hides."""
        try:
            return [p.hexsha for p in self._repo.commit(sha).parents]
        except _object_errors() as e:
            raise self._object_error(f"commit {sha[:12]}", e) from None

    def read_blob(self, sha: str, name: str) -> bytes | None:
        """The bytes of ``name`` (a ``/``-separated path) in commit ``sha``'s tree, or None
        when there is no such file (absent, or a directory)."""
        try:
            obj = self._repo.commit(sha).tree / name
            if obj.type != "blob":
                return None
            data: bytes = obj.data_stream.read()
        except KeyError:
            return None
        except _object_errors() as e:
            raise self._object_error(f"{name} at {sha[:12]}", e) from None
        return data

    # ----------------------------------------------------------------------------------------
    # Refs

    def resolve(self, ref: str) -> str:
        """The full sha of the commit ``ref`` names; in a shallow clone a missing commit is
        fetched first. See :meth:`duet_bench.versions.Versions.resolve`."""
        check_ref(ref)
        sha = self.rev_parse_commit(ref)
        if sha is not None:
            return sha
        if self.is_shallow():
            return self._fetch_missing(ref)
        raise self.unknown_ref(ref)

    def unknown_ref(self, ref: str) -> UnknownRef:
        """The error for a ref that names no commit, with the fix that fits the case."""
        if ref.startswith(":/"):
            return unmatched_search(ref, self.where)
        remotes = self.remotes()
        remote = default_remote(remotes) or "origin"
        base, suffix, _ = strip_ancestry(ref)
        # `^{object}`: without it rev-parse takes any 40 hex digits without looking.
        spec = f"{ref}^{{object}}" if FULL_SHA.fullmatch(ref) else ref
        some_object = self.run("rev-parse", "--verify", "--quiet", spec, ok=(0, 1, 128))
        if some_object.returncode == 0:
            sha = some_object.stdout.strip()
            kind = self.run("cat-file", "-t", sha, ok=(0, 128)).stdout.strip()
            if kind == "commit":  # named, but not readable as one (a broken repository)
                return UnknownRef(
                    f"{ref!r} names commit {sha[:12]}, but git cannot read it as a commit in "
                    f"{self.where} (git rev-parse --verify {ref}^{{commit}} fails)",
                    fix="check the repository (git fsck), or give another commit",
                )
            return UnknownRef(
                f"{ref!r} names a {kind or 'git object'}, not a commit",
                fix="give a branch, tag or commit",
            )
        if base and suffix and self.rev_parse_commit(base) is not None:
            return UnknownRef(
                f"{ref!r} goes back further than the history of {base!r} in {self.where}",
                fix=f"count again (git log --oneline {base}), or give the commit's sha",
            )
        # git's own explanation when it has one (an ambiguous short sha), rather than its
        # "Needed a single revision".
        done = self.run("rev-parse", "--verify", f"{ref}^{{commit}}", ok=(0, 1, 128))
        detail = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
        reason = f" ({detail[0].removeprefix('error: ')})" if detail else ""
        head, sep, rest = base.partition("/")
        tracking: list[str] = []
        if base and not HEXISH.fullmatch(base):
            tracking = self.run(
                "for-each-ref", "--format=%(refname:short)", f"refs/remotes/*/{base}", ok=(0, 1)
            ).stdout.split()
        if tracking:
            fix = (
                f"did you mean {tracking[0] + suffix!r}? There is no local branch or tag "
                f"{base!r} (a CI checkout usually has none)"
            )
        elif sep and head in remotes:
            fix = f"fetch it: git fetch {head} {rest}; {_CI_HINT}"
        elif HEXISH.fullmatch(base):
            fix = "check the sha (git log --oneline --all)"
            if remotes:
                fix += f", or fetch it: git fetch {remote}"
                if FULL_SHA.fullmatch(base):
                    fix += f" {base}"
        elif not remotes:
            fix = "check the name: git branch --all; git tag --list"
        else:
            fix = (
                "check the name (git branch --all; git tag --list), or fetch it: "
                f"git fetch {remote} {base}"
            )
        return UnknownRef(f"{ref!r} does not name a commit in {self.where}{reason}", fix=fix)

    # ----------------------------------------------------------------------------------------
    # Shallow clones

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
        the object itself. Only objects are fetched: no ref, no FETCH_HEAD, no tags.
        """
        base, suffix, generations = strip_ancestry(ref)
        remotes = self.remotes()
        remote = default_remote(remotes)
        name = base
        head, sep, rest = base.partition("/")
        if sep and head in remotes:
            remote, name = head, rest
        if remote is None:
            raise VersionError(
                f"{ref!r} is not in this shallow clone ({self.where}), and the clone has no "
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
                f"({self.where}); duet fetches at most {MAX_FETCH_GENERATIONS} one by one",
                fix=f"fetch the history first: {manual}; {_CI_HINT}",
            )
        try:
            sha = self._fetch_tip(ref, base, remote, name, manual)
            for op, digits in ANCESTRY_STEP.findall(suffix):
                n = int(digits) if digits else 1
                steps = [1] * n if op == "~" else ([n] if n > 0 else [])
                for nth in steps:
                    sha = self._parent(sha, nth, ref, base, remote)
        except GitFailed as e:
            tail = "; ".join(e.stderr.splitlines()[-3:])
            raise VersionError(
                f"{ref!r} is not in this shallow clone ({self.where}) and fetching it from "
                f"{remote!r} failed: {tail}",
                fix=f"fetch the history by hand: {manual}; {_CI_HINT}",
            ) from None
        return sha

    def _fetch_tip(self, ref: str, base: str, remote: str, name: str, manual: str) -> str:
        """The commit ``base`` names, here or fetched from ``remote`` (where it is ``name``)."""
        tip = self.rev_parse_commit(base) if base else None
        if tip is not None:
            return tip
        if FULL_SHA.fullmatch(base):
            tip = base.lower()
        else:
            tip = self._ls_remote(remote, name)
            if tip is None and HEXISH.fullmatch(base):
                raise VersionError(
                    f"{ref!r} is not in this shallow clone ({self.where}), and a short sha "
                    "cannot be fetched (a remote is asked for full shas only)",
                    fix=f"give the full 40-character sha, or fetch the history: "
                    f"{manual}; {_CI_HINT}",
                )
            if tip is None:
                raise UnknownRef(
                    f"{ref!r} is not in this shallow clone ({self.where}), and {remote!r} "
                    f"has no branch or tag {name!r}",
                    fix="check the name (git ls-remote --heads --tags "
                    f"{remote}), or fetch the whole history: {manual}",
                )
        self._fetch_commit(remote, tip, base)
        fetched = self.rev_parse_commit(tip)
        if fetched is None:
            raise UnknownRef(
                f"{base!r} on {remote!r} does not name a commit",
                fix="give a branch, tag or commit",
            )
        return fetched

    def _parent(self, sha: str, nth: int, ref: str, base: str, remote: str) -> str:
        """The ``nth`` parent of ``sha`` as its commit object records it, fetched if absent."""
        parents = self.parents(sha)
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
        if self.has_commit(sha):
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
        if self.version() >= (2, 29):
            options.append("--no-write-fetch-head")
        self.run(*options, remote, sha)

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
        out = self.run("ls-remote", remote, *wanted, *peeled).stdout
        found: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, refname = line.partition("\t")
            found[refname.strip()] = sha.strip()
        for refname in wanted:
            sha = found.get(f"{refname}^{{}}") or found.get(refname, "")
            if FULL_SHA.fullmatch(sha):
                return sha.lower()
        return None


__all__ = ["MAX_FETCH_GENERATIONS", "GitFailed", "Repository", "clean_environment"]
