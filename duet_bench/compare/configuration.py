"""Where the suite of a comparison of commits is read: the repository, the configuration at a
commit or the ``--config`` file from disk, and the benchmark names BASE's configuration has.

The suite is HEAD's configuration (or, with ``--config`` outside the repository, that file as
it is on disk, for both versions: :func:`config_source`). ``duet bisect`` reads BAD's the same
way (:func:`read_configuration`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duet_bench.config import CONFIG_FILES, Config, choose_config, has_duet_table, load_config
from duet_bench.errors import ConfigError, VersionError
from duet_bench.isolation import RunAs
from duet_bench.isolation.privileges import popen_user
from duet_bench.manual import cite


def repo_root(path: Path, run_as: RunAs | None = None) -> Path:
    """The top of the git checkout that ``path`` is in; git runs as ``run_as``, never as root
    on a user's repository (docs/isolation.md, "What runs as root")."""
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
        **popen_user(run_as),
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:] or ["no output"]
        if run_as is not None and "not a git repository" not in said[0]:
            # Most often the user cannot reach the directory (a root-only parent).
            raise VersionError(
                f"git, run as {run_as.name} (uid {run_as.uid}) as every git command on the "
                f"user's repository is, cannot use {path.resolve()}: {said[0]}",
                fix=f"run duet compare in a checkout that {run_as.name} can read and write "
                "(or pass --user with its owner)",
            )
        raise VersionError(
            f"{path.resolve()} is not inside a git repository (git: {said[0]})",
            fix="run duet compare from your project's checkout (or pass --repo)",
        )
    return Path(done.stdout.strip())


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where ``--config`` is read: a path inside the repository is read at HEAD's commit (the
    suite is versioned with the code), a path outside it from disk (trying duet on a project's
    history before committing anything)."""

    #: Relative to the repository root when ``on_disk`` is False, else absolute.
    path: str
    on_disk: bool

    def describe(self, head: str, head_sha: str) -> str:
        if self.on_disk:
            return f"{self.path}, read from disk (outside the repository; both versions use it)"
        return f"{self.path} at HEAD ({head}, {head_sha[:12]})"

    def record(self, head_sha: str) -> dict[str, Any]:
        """What the results file keeps (``config.config_source``)."""
        if self.on_disk:
            return {"path": self.path, "from": "disk"}
        return {"path": self.path, "from": "commit", "commit": head_sha}


def config_source(root: Path, explicit: str | None) -> ConfigSource | None:
    """Where ``--config`` (``explicit``; None: the default names at HEAD) is read. A relative
    path is relative to the repository root, as it always was."""
    if explicit is None:
        return None
    given = Path(explicit).expanduser()
    full = Path(os.path.realpath(given if given.is_absolute() else root / given))
    real_root = Path(os.path.realpath(root))
    try:
        inside = full.relative_to(real_root)
    except ValueError:
        return ConfigSource(path=str(full), on_disk=True)
    return ConfigSource(path=inside.as_posix(), on_disk=False)


def read_config_from_disk(source: ConfigSource) -> tuple[str, str]:
    path = Path(source.path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"--config {path}: no such file (a path outside the repository is read from disk)",
            fix="check the path, or commit the file and give its path inside the repository",
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else f"not UTF-8 text ({e.reason})"
        raise ConfigError(
            f"--config {path}: cannot read it: {why}", fix="give a readable UTF-8 TOML file"
        ) from None
    if path.name == "pyproject.toml" and not has_duet_table(text):
        raise ConfigError(
            f"--config {path} has no [tool.duet] table",
            fix=f"add [tool.duet] (see {cite('configuration.md')}), or give a duet.toml",
        )
    return str(path), text


def config_text_at(versions: Any, commit: str, explicit: str | None) -> tuple[str, str] | None:
    """(path, text) of the configuration at ``commit``, or None when that commit has none: the
    rule of :func:`duet_bench.config.choose_config` at the root of the commit."""
    return choose_config(
        lambda name: versions.read_file_at(commit, name),
        (explicit,) if explicit else CONFIG_FILES,
    )


def read_configuration(
    versions: Any, source: ConfigSource | None, commit: str
) -> tuple[str, str] | None:
    """(path, text) of the suite compared at ``commit``: the ``--config`` file from disk when it
    lies outside the repository, else the configuration at ``commit`` (``source``'s path, or
    the default names); None when that commit has none."""
    if source is not None and source.on_disk:
        return read_config_from_disk(source)
    return config_text_at(versions, commit, None if source is None else source.path)


@dataclass(frozen=True, slots=True)
class Suite:
    """What ``duet compare`` measures: HEAD's configuration, where it was read, and the names of
    the benchmarks BASE's configuration has (None: all of them count as there)."""

    config: Config
    source: ConfigSource
    base_names: frozenset[str] | None


def read_suite(
    versions: Any,
    root: Path,
    explicit: str | None,
    *,
    head: str,
    head_sha: str,
    base_sha: str,
    note: Callable[[str], None],
) -> Suite:
    """HEAD's configuration (``explicit``: ``--config``), said with ``note``, and the benchmark
    names of BASE's.

    When BASE has no duet configuration at all (the pull request that adds duet), or one that
    does not load, HEAD's suite is used for both versions; a suite read from disk is the suite of
    both versions: nothing can be missing in BASE either.
    """
    source = config_source(root, explicit)
    at_head = None if source is None or source.on_disk else source.path
    head_config = read_configuration(versions, source, head_sha)
    if head_config is None:
        raise _no_configuration(head, head_sha, at_head)
    if source is None:
        source = ConfigSource(path=head_config[0], on_disk=False)
    note(f"configuration: {source.describe(head, head_sha)}")
    config = load_config(Path(head_config[0]), text=head_config[1])
    base_config = None if source.on_disk else config_text_at(versions, base_sha, at_head)
    base_names: frozenset[str] | None = None
    if base_config is not None:
        with contextlib.suppress(ConfigError):
            loaded = load_config(Path(base_config[0]), text=base_config[1])
            base_names = frozenset(b.name for b in loaded.benchmarks)
    return Suite(config=config, source=source, base_names=base_names)


def _no_configuration(head: str, head_sha: str, explicit: str | None) -> ConfigError:
    where = f"HEAD ({head}, {head_sha[:12]})"
    if explicit is None:
        return ConfigError(
            f"{where} has no duet configuration (duet.toml or [tool.duet] in pyproject.toml)",
            fix=f"commit a duet.toml (see {cite('configuration.md')}), or pass --config PATH (a "
            "path outside the repository is read from disk)",
        )
    return ConfigError(
        f"{where} has no {explicit}: a --config path inside the repository is read at HEAD's "
        "commit, not from the working tree",
        fix=f"commit it (git add {explicit} && git commit), or give a copy outside the "
        "repository, which is read from disk as it is",
    )
