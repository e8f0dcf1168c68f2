"""Worktree slots: one detached git worktree per commit under a cache directory, locked while used.

A slot is ``<cache>/<sha>`` (or ``<sha>.1``, ``<sha>.2``, ... when other duet processes hold
the first ones), its lock file ``<name>.lock`` and its stamp directory ``<name>.stamp`` (the
build's stamp and log, :mod:`duet_bench.versions.builds`). A slot whose worktree is already at the
commit with unmodified tracked files is reused (kept by an earlier run with ``keep``);
anything else there (a crash's leftovers, an edited worktree) is replaced. A cache directory
left with no worktree at the end (:meth:`Slots.tidy`) goes, with the empty directories of
duet's own above it: only kept worktrees stay behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from duet_bench.errors import UsageError, VersionError
from duet_bench.isolation import RunAs
from duet_bench.isolation.privileges import call_as, open_as, remove_tree
from duet_bench.versions.git import GitFailed, Repository

log = logging.getLogger(__name__)

#: How many worktrees of one commit may exist at once (concurrent duet runs of one repository).
MAX_SLOTS = 16
#: In the cache directory: held while this process adds, removes or prunes worktrees.
ADMIN_LOCK = ".worktrees.lock"
#: How often a file of the cache is tried again after another duet removed the directory.
_REMAKE_ATTEMPTS = 5

_T = TypeVar("_T")


@dataclass(slots=True)
class Slot:
    """A worktree this process holds (mutable: the builds done in it are added)."""

    commit: str
    directory: Path
    stamp_dir: Path
    lock_path: Path
    lock_fd: int
    reused: bool
    #: sha256 of the commands built here by this process (a second side at the same commit
    #: does not build again, even with ``rebuild``).
    built_here: set[str] = field(default_factory=set)


class Slots:
    """The worktree slots of one repository under one cache directory.

    ``requested`` is the cache directory (None: the default, see :func:`default_cache_dir`);
    it must be outside the checkout. With ``run_as`` the directories created and the
    checked-out worktrees belong to that user.
    """

    def __init__(self, repo: Repository, requested: Path | None, run_as: RunAs | None) -> None:
        self._repo = repo
        self.run_as = run_as
        #: The directories :meth:`tidy` removes when empty, innermost first: the default cache
        #: and duet's own directories above it; of a requested one, those this process made.
        self._removable: tuple[Path, ...] = ()
        self.cache_dir = self._choose_cache_dir(requested)

    def _choose_cache_dir(self, requested: Path | None) -> Path:
        if requested is None:
            cache = default_cache_dir(self._repo.common_dir, self.run_as).resolve()
            self._removable = (cache, *(p.resolve() for p in _duet_dirs(self.run_as)))
        else:
            cache = Path(requested).expanduser().resolve()
        for inside in (self._repo.root, self._repo.common_dir):
            if inside is not None and (cache == inside or inside in cache.parents):
                raise UsageError(
                    f"the worktree cache {cache} is inside the checkout {inside}; a worktree "
                    "there would show in `git status` of the user's checkout",
                    fix="set XDG_CACHE_HOME to a directory outside the repository",
                )
        self.cache_dir = cache
        made = self._make_cache_dir()
        if requested is not None:
            self._removable = tuple(made)
        return cache

    def _make_cache_dir(self) -> list[Path]:
        """``mkdir -p`` the cache directory (again, when another duet's :meth:`tidy` removed it
        after this one started); the directories made, innermost first."""
        for _ in range(_REMAKE_ATTEMPTS):
            try:
                return _make_dirs(self.cache_dir, self.run_as)
            except FileNotFoundError:
                continue  # a parent removed half-way by another duet's tidy
            except OSError as e:
                raise VersionError(
                    f"cannot create the worktree cache {self.cache_dir}: {e.strerror or e}",
                    fix="set XDG_CACHE_HOME to a writable directory outside the checkout",
                ) from None
        try:
            return _make_dirs(self.cache_dir, self.run_as)
        except OSError as e:
            raise VersionError(
                f"cannot create the worktree cache {self.cache_dir}: {e.strerror or e}",
                fix="set XDG_CACHE_HOME to a writable directory outside the checkout",
            ) from None

    def acquire(self, sha: str) -> Slot:
        """A worktree of ``sha`` that no other duet process holds: ``<sha>``, else
        ``<sha>.1``, ... Each is held by an exclusive lock on ``<name>.lock`` until
        :meth:`unlock`, so a concurrent duet never removes or rebuilds a worktree in use."""
        for slot in range(MAX_SLOTS):
            name = sha if slot == 0 else f"{sha}.{slot}"
            lock_path = self.cache_dir / f"{name}.lock"
            fd = self._in_cache(lambda path: _try_lock(path, self.run_as), lock_path)
            if fd is None:
                continue
            try:
                directory = self.cache_dir / name
                stamp_dir = self.cache_dir / f"{name}.stamp"
                with self._administration():
                    reused = self._prepare(directory, stamp_dir, sha)
            except BaseException:
                _unlock(lock_path, fd, self.run_as)
                raise
            return Slot(sha, directory, stamp_dir, lock_path, fd, reused)
        raise VersionError(
            f"{MAX_SLOTS} other duet runs hold worktrees of {sha[:12]} in {self.cache_dir}",
            fix="wait for them to finish, or stop them",
        )

    def remove(self, slot: Slot) -> bool:
        """Remove the slot's worktree and stamp; False when the worktree is still there. The
        caller runs :meth:`prune` afterwards, and :meth:`unlock` once it forgot the slot."""
        with self._administration():
            return self._discard(slot.directory, slot.stamp_dir)

    def unlock(self, slot: Slot) -> None:
        """Let other processes have the slot (its lock file goes)."""
        _unlock(slot.lock_path, slot.lock_fd, self.run_as)

    def tidy(self) -> None:
        """Remove the cache directory when it holds no worktree, stamp or lock of anyone (its
        administration lock aside), then the empty directories of duet's own above it: a run
        that keeps nothing leaves nothing. Never raises: a directory that cannot go stays."""
        if not self._removable or self._removable[0] != self.cache_dir:
            return  # a cache directory the caller made: theirs to keep
        cache, removable = self.cache_dir, self._removable

        def remove(lock_path: Path) -> None:
            if any(p.name != ADMIN_LOCK for p in cache.iterdir()):
                return
            # Unlinked while held: a process waiting for it finds its lock stale and opens
            # a new one (the inode check in _administration), making the directory again.
            lock_path.unlink()
            for directory in removable:
                # Fails when not empty (another repository's cache, another duet's lock
                # file made just now): that directory and those above it stay.
                directory.rmdir()

        try:
            with self._administration() as lock_path:
                # As the user whose cache it is: root removing by name would follow a link
                # swapped in (docs/isolation.md, "What runs as root").
                call_as(self.run_as, lambda: remove(lock_path))
        except (OSError, VersionError, RuntimeError) as e:
            log.debug("tidying the worktree cache %s stopped: %s", self.cache_dir, e)

    def prune(self) -> None:
        """``git worktree prune``: forget registrations whose directory is gone."""
        try:
            with self._administration():
                self._repo.run("worktree", "prune")
        except GitFailed as e:
            log.warning("git worktree prune failed: %s", e.stderr)

    def _in_cache(self, action: Callable[[Path], _T], path: Path) -> _T:
        """``action(path)`` for a file of the cache directory, making the directory again when
        another duet process's :meth:`tidy` removed it in the meantime."""
        for _ in range(_REMAKE_ATTEMPTS):
            try:
                return action(path)
            except FileNotFoundError:
                self._make_cache_dir()
        return action(path)

    @contextlib.contextmanager
    def _administration(self) -> Iterator[Path]:
        """Wait for the other duet processes of this cache to finish adding, removing or
        pruning worktrees. Git does not serialise these: a `git worktree prune` that runs
        while another process's `git worktree add` is half-way reads its unfinished
        `.git/worktrees/<name>` and fails ("failed to read .git/worktrees/<name>/commondir";
        measured with git 2.39.5: 3 failures in 15 rounds of 4 concurrent prune+add), or
        removes it. Not re-entrant: only the public methods take it."""
        path = self.cache_dir / ADMIN_LOCK
        fd = self._in_cache(lambda p: _lock_administration(p, self.run_as), path)
        try:
            yield path
        finally:
            os.close(fd)

    def _registered(self) -> dict[Path, str]:
        """Worktrees git knows of: path -> the commit at their HEAD ('' if none)."""
        out = self._repo.run("worktree", "list", "--porcelain").stdout
        found: dict[Path, str] = {}
        path: Path | None = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                path = Path(line.removeprefix("worktree ")).resolve()
                found[path] = ""
            elif line.startswith("HEAD ") and path is not None:
                found[path] = line.removeprefix("HEAD ").strip()
        return found

    def _prepare(self, directory: Path, stamp_dir: Path, sha: str) -> bool:
        """Make ``directory`` a clean worktree at ``sha``; True when an existing one was kept."""
        registered = self._registered()
        if directory.exists():
            if registered.get(directory.resolve()) == sha and (directory / ".git").is_file():
                if self._repo.has_uncommitted_changes(directory) is False:
                    return True
                # Someone edited a kept worktree (debugging): its build no longer matches the
                # commit, so measuring it would measure something else.
                log.info(
                    "the kept worktree %s has modified files; checking it out again", directory
                )
            if not self._discard(directory, stamp_dir):
                raise VersionError(
                    f"cannot remove the stale worktree {directory}",
                    fix=f"remove it by hand: rm -rf {directory} && git -C {self._repo.cwd} "
                    "worktree prune",
                )
        # A crash can leave a registration whose directory is gone; `worktree add` refuses to
        # reuse such a path until it is pruned.
        self._repo.run("worktree", "prune")
        self._remove_as_user(stamp_dir)
        try:
            # No hooks: a user's post-checkout hook is for their checkout, not for ours.
            self._repo.run(
                "-c",
                f"core.hooksPath={os.devnull}",
                "worktree",
                "add",
                "--detach",
                str(directory),
                sha,
            )
        except GitFailed as e:
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
            self._repo.run("worktree", "prune")
        except (VersionError, OSError) as e:
            log.warning("could not remove the unfinished worktree %s: %s", directory, e)

    def _discard(self, directory: Path, stamp_dir: Path) -> bool:
        """Remove a worktree (registered or not) and its stamp; False if it is still there."""
        self._remove_as_user(stamp_dir)
        if directory.resolve() in self._registered():
            try:
                self._repo.run("worktree", "remove", "--force", "--force", str(directory))
            except GitFailed as e:
                # A worktree holding submodules, or read-only files from a build: remove the
                # files ourselves; the prune afterwards drops the registration.
                log.debug("git worktree remove %s: %s", directory, e.stderr)
        if os.path.lexists(directory):
            self._remove_as_user(directory)
        return not os.path.lexists(directory)

    def _remove_as_user(self, path: Path) -> None:
        """``rm -rf path`` as the user whose cache this is: the build may have put anything
        there, a link to a file of root's included (docs/isolation.md, "What runs as root")."""
        call_as(self.run_as, lambda: remove_tree(path))


def default_cache_dir(common_dir: Path, run_as: RunAs | None) -> Path:
    """``$XDG_CACHE_HOME/duet/worktrees/<hash of the repository's git directory>``
    (``~/.cache`` without XDG_CACHE_HOME); with ``run_as``, that user's cache
    (``/var/tmp/duet-worktrees-<uid>/<hash>`` for a user without a home)."""
    key = hashlib.sha256(str(common_dir).encode()).hexdigest()[:16]
    return _duet_dirs(run_as)[0] / key


def _duet_dirs(run_as: RunAs | None) -> tuple[Path, ...]:
    """The directory of every repository's worktree cache, then duet's own directories above
    it (innermost first): what :func:`default_cache_dir` puts the cache in."""
    if run_as is not None:
        # Root's cache (/root, mode 0700) is closed to the user the sides run as.
        home = run_as.home
        if home is None:
            return (Path("/var/tmp") / f"duet-worktrees-{run_as.uid}",)
        base = Path(home) / ".cache"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        # The XDG spec says to ignore a relative XDG_CACHE_HOME.
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return (base / "duet" / "worktrees", base / "duet")


def _make_dirs(path: Path, run_as: RunAs | None) -> list[Path]:
    """``mkdir -p path``; the directories it creates (returned, innermost first) belong to
    ``run_as`` when given."""
    missing: list[Path] = []
    for p in (path, *path.parents):
        if p.exists():
            break
        missing.append(p)
    # As the user: root following a path the user may write (their home, /var/tmp) could be
    # led anywhere; the user can only make what they could make anyway.
    call_as(run_as, lambda: path.mkdir(parents=True, exist_ok=True))
    if run_as is not None and os.stat(path).st_uid != run_as.uid:
        raise OSError(
            errno.EPERM,
            f"it belongs to uid {os.stat(path).st_uid}, not to {run_as.name} (uid {run_as.uid}) "
            "who the builds run as; another user may have made it first",
        )
    return missing


def _open_lock(path: Path, run_as: RunAs | None) -> int:
    """``path`` opened (made if missing) as ``run_as``, whose cache it is: root holds the lock,
    the user opens the file, so a link swapped in anywhere on the path leads only where the
    user may go (docs/isolation.md, "What runs as root"). Read-only is enough for flock, and
    opens a lock file another user created (a run as root with --user beside the user's own
    runs); never through a link at its name."""
    flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    return open_as(run_as, lambda: os.open(path, flags, 0o644))


def _lock_administration(path: Path, run_as: RunAs | None) -> int:
    """A blocking exclusive lock on ``path``, the file still at that path when it is granted."""
    while True:
        fd = _open_lock(path, run_as)
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _still_at(path, fd, run_as):
            return fd
        # Slots.tidy unlinked it while we waited (and maybe removed the directory).
        os.close(fd)


def _still_at(path: Path, fd: int, run_as: RunAs | None) -> bool:
    st = os.fstat(fd)
    try:
        there = call_as(run_as, lambda: list(os.stat(path)[1:3]))  # inode, device
    except FileNotFoundError:
        return False
    return there == [st.st_ino, st.st_dev]


def _try_lock(path: Path, run_as: RunAs | None) -> int | None:
    """An exclusive lock on ``path``, or None when another process holds it."""
    while True:
        fd = _open_lock(path, run_as)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # The holder before us may have unlinked the file after we opened it (see _unlock):
        # a lock on a file no longer at that path protects nothing, so start again.
        if _still_at(path, fd, run_as):
            return fd
        os.close(fd)


def _unlock(path: Path, fd: int, run_as: RunAs | None) -> None:
    # Unlinked while still locked, so lock files do not pile up; _try_lock's inode check makes
    # that safe. As the user, as it was opened.
    def unlink() -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    try:
        call_as(run_as, unlink)
    finally:
        os.close(fd)
