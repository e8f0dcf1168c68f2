"""Versions: the two commits of ``duet compare``, each in its own git worktree, built.

One :class:`Versions` per invocation, used as a context manager::

    with Versions(".", log_dir=results_dir / "logs") as versions:
        base = versions.build(versions.checkout("baseline", "origin/main"), "make")
        head = versions.build(versions.checkout("candidate", "HEAD"), "make")
        ...  # measure in base.directory and head.directory
    # both worktrees are removed here, also on an error or a signal (the CLI turns SIGINT and
    # SIGTERM into an exception)

The parts, one job each: :mod:`duet_bench.versions.git` (the user's repository: refs, objects,
shallow fetches), :mod:`duet_bench.versions.slots` (worktrees under the cache: locking, reuse,
cleanup), :mod:`duet_bench.versions.builds` (build commands, logs, stamps) and
:mod:`duet_bench.versions.version` (the :class:`Version` record). :class:`Versions` ties them.

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

import hashlib
import logging
import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from duet_bench.errors import VersionError
from duet_bench.isolation import RunAs
from duet_bench.isolation.jobs import KILL_GRACE_S
from duet_bench.isolation.privileges import call_as
from duet_bench.results import SIDES, SideName
from duet_bench.versions import builds
from duet_bench.versions.builds import STAMP_FORMAT, TAIL_LINES, BuildFailed
from duet_bench.versions.git import MAX_FETCH_GENERATIONS, Repository, clean_environment
from duet_bench.versions.slots import MAX_SLOTS, Slot, Slots
from duet_bench.versions.version import Version

__all__ = [
    "KILL_GRACE_S",
    "MAX_FETCH_GENERATIONS",
    "MAX_SLOTS",
    "STAMP_FORMAT",
    "TAIL_LINES",
    "BuildFailed",
    "Version",
    "Versions",
    "clean_environment",
]

log = logging.getLogger(__name__)


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
        has no home). Git runs as that user too, who must be able to write the repository
        (``.git/worktrees``): their configuration runs commands (docs/isolation.md, "What runs
        as root").
    keep_env
        Names of variables the builds keep beyond the allow-list
        (:func:`duet_bench.isolation.privileges.allowed_environment`, ``--keep-env``).
    """

    def __init__(
        self,
        repo: str | os.PathLike[str] = ".",
        *,
        cache_dir: Path | None = None,
        keep: bool = False,
        log_dir: Path | None = None,
        run_as: RunAs | None = None,
        keep_env: Collection[str] = (),
    ) -> None:
        self._git = Repository(Path(repo).expanduser(), run_as)
        self.keep = keep
        self.log_dir = log_dir
        self.run_as = run_as
        self.keep_env = tuple(keep_env)
        self._closed = False
        self._worktrees: dict[str, Slot] = {}
        self.root = self._git.root
        self.git_dir = self._git.git_dir
        self.common_dir = self._git.common_dir
        try:
            _check_writable(self.common_dir, run_as)
            self._slots = Slots(self._git, cache_dir, run_as)
        except BaseException:
            self._git.close()
            raise
        self.cache_dir = self._slots.cache_dir

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
    # Refs and files

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
        return self._git.resolve(ref)

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
        data = self._git.read_blob(sha, name)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise VersionError(
                f"{name} at {sha[:12]} is not UTF-8 text ({e.reason} at byte {e.start})",
                fix=f"save {name} as UTF-8 and commit it",
            ) from None

    # ----------------------------------------------------------------------------------------
    # Worktrees and builds

    def checkout(self, side: SideName, ref: str) -> Version:
        """Resolve ``ref`` and check its commit out, detached, in a worktree under
        :attr:`cache_dir`; reuse the worktree when it already holds that commit (the other
        side at the same commit, or one kept by an earlier run)."""
        self._check_open()
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        sha = self.resolve(ref)
        self._warn_if_uncommitted(ref, sha)
        subject = self._git.subject(sha)
        held = self._worktrees.get(sha)
        if held is not None:
            log.info("%s: %s is at the same commit as the other side; sharing %s", side, ref, sha)
            return Version(side, ref, sha, held.directory, None, False, True, subject)
        slot = self._slots.acquire(sha)
        self._worktrees[sha] = slot
        log.info(
            "%s: %s = %s %s in %s",
            side,
            ref,
            sha[:12],
            "reused" if slot.reused else "checked out",
            slot.directory,
        )
        return Version(side, ref, sha, slot.directory, None, False, slot.reused, subject)

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
        slot = self._held(version)
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if command is None:
            return replace(version, built=False, reused=version.reused, build_log=None)
        command_sha = hashlib.sha256(command.encode()).hexdigest()
        log_path = builds.log_path(version.side, slot, self.log_dir)
        if command_sha in slot.built_here or (
            not rebuild and builds.stamp_matches(slot, command_sha, self.run_as)
        ):
            builds.reuse_log(version, slot, log_path, self.run_as)
            log.info("%s: build of %s reused (same commit and command)", version.side, version.ref)
            return replace(version, built=True, reused=True, build_log=log_path)
        builds.remove_stamp(slot, self.run_as)
        duration_s = builds.run_build(
            version, command, log_path, timeout_s, self.run_as, self.keep_env
        )
        builds.write_stamp(
            slot, command, command_sha, log_path, duration_s, self.cache_dir, self.run_as
        )
        slot.built_here.add(command_sha)
        log.info("%s: built %s in %.1f s", version.side, version.ref, duration_s)
        return replace(version, built=True, reused=False, build_log=log_path)

    def release(self, version: Version) -> None:
        """Give back the worktree of ``version``'s commit before :meth:`close`: removed (unless
        ``keep``) and unlocked. For callers that go through many commits (``duet bisect``
        builds about log2(n) of them), so that worktrees do not pile up; every
        :class:`Version` of that commit (both sides share one worktree) is then invalid. A
        later :meth:`checkout` of the commit checks it out again (or reuses it when kept).

        Raises
        ------
        VersionError
            The worktree could not be removed; the fix gives the commands to do it by hand.
        """
        self._check_open()
        slot = self._held(version)
        removed = True
        if self.keep:
            log.info("kept the worktree of %s: %s", slot.commit[:12], slot.directory)
        else:
            removed = self._slots.remove(slot)
        del self._worktrees[slot.commit]
        self._slots.unlock(slot)
        if not self.keep:
            self._slots.prune()
        if not removed:
            raise self._not_removed([str(slot.directory)])

    def close(self) -> None:
        """Remove every worktree this instance checked out or reused (unless ``keep``), then
        ``git worktree prune``, then the cache directory if nothing is left in it (kept
        worktrees, another duet's). Idempotent; a second call after an interrupted one finishes
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
            sha, slot = next(iter(self._worktrees.items()))
            if self.keep:
                log.info("kept the worktree of %s: %s", sha[:12], slot.directory)
            else:
                if not self._slots.remove(slot):
                    failed.append(str(slot.directory))
                removed_any = True
            del self._worktrees[sha]
            self._slots.unlock(slot)
        if removed_any:
            self._slots.prune()
        # The cache directory goes when nothing is kept in it (nor held by another duet).
        self._slots.tidy()
        self._closed = True
        self._git.close()
        if failed:
            raise self._not_removed(failed)

    # ----------------------------------------------------------------------------------------
    # Internals

    def _held(self, version: Version) -> Slot:
        slot = self._worktrees.get(version.commit)
        if slot is None or slot.directory != version.directory:
            raise ValueError(f"{version.directory} was not checked out by this Versions")
        return slot

    def _not_removed(self, failed: list[str]) -> VersionError:
        return VersionError(
            f"could not remove the worktree(s) {', '.join(failed)}",
            fix=f"remove them by hand: rm -rf {' '.join(failed)} && git -C {self._git.cwd} "
            "worktree prune",
        )

    def _warn_if_uncommitted(self, ref: str, sha: str) -> None:
        if self.root is None or self._git.rev_parse_commit("HEAD") != sha:
            return
        if self._git.has_uncommitted_changes():
            log.warning(
                "%s has uncommitted changes; they are not part of %s (%s): duet compare "
                "measures commits. Commit them to measure them.",
                self.root,
                ref,
                sha[:12],
            )

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Versions is closed")


def _check_writable(common_dir: Path, run_as: RunAs | None) -> None:
    """Git runs as ``run_as`` and adds worktrees in ``.git/worktrees``: refuse at once, with
    the fix, a repository that user cannot write (``--user nobody`` on someone else's)."""
    if run_as is None or call_as(run_as, lambda: os.access(common_dir, os.W_OK | os.X_OK)):
        return
    owner = common_dir.stat().st_uid
    raise VersionError(
        f"git runs as {run_as.name} (uid {run_as.uid}), the user the builds and benchmarks run "
        f"as, and {run_as.name} cannot write the repository {common_dir} (its owner is uid "
        f"{owner}); as root duet never runs git as root on a user's repository",
        fix="run `sudo duet ...` as the repository's owner, or pass that owner to --user",
    )
