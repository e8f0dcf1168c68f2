"""``duet compare BASE HEAD``: the command CI calls.

config (read from HEAD's commit) -> versions (two worktrees, two builds) -> plan and runner
(through :func:`duet_bench.session.measure`) -> results -> reports in ``duet-results/``.

The suite is HEAD's configuration (or, with ``--config`` outside the repository, that file as
it is on disk, for both versions: :func:`config_source`). A benchmark that BASE's configuration
does not have is reported as "missing in the baseline" with no runs, not measured against
something else, and listed in ``config.missing_in_baseline`` (the command exits 3 for it unless
``--allow-missing``); when BASE has no duet configuration at all (the pull request that adds
duet), HEAD's suite is used for both versions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duet_bench import files, results, settings
from duet_bench.analysis import analyze_benchmark
from duet_bench.config import CONFIG_FILES, choose_config, has_duet_table, load_config
from duet_bench.errors import ConfigError, ResultsError, VersionError
from duet_bench.isolation import RunAs
from duet_bench.manual import cite
from duet_bench.plan import select_shard
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.session import SessionOptions, measure

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompareOptions:
    base: str
    head: str
    out_dir: Path
    repo: Path = Path()
    config: str | None = None
    bench: str | None = None
    shard: tuple[int, int] | None = None
    rebuild: bool = False
    keep_worktrees: bool = False
    #: Options given explicitly on the command line, by field name (they win over the
    #: configuration: :func:`duet_bench.settings.resolve`).
    explicit: Mapping[str, Any] = field(default_factory=dict)
    cores: tuple[int, int] | None = None
    share_network: bool = False
    plan_seed: int = 0
    progress: bool = True
    plots: bool = True
    run_as: RunAs | None = None
    #: Queue behind another duet measuring on this machine instead of refusing.
    wait: bool = False


def repo_root(path: Path) -> Path:
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise VersionError(
            f"{path.resolve()} is not inside a git repository",
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


def write_outputs(doc: ResultsDocument, out_dir: Path, *, plots: bool = True) -> list[Path]:
    """report.md, junit.xml, metrics.txt and plots/ next to results.json."""
    from duet_bench.report import render

    written = []
    for name, fmt in (
        ("report.md", "markdown"),
        ("junit.xml", "junit"),
        ("metrics.txt", "openmetrics"),
    ):
        try:
            text = render(doc, fmt)  # type: ignore[arg-type]
        except ValueError as e:  # a format this build does not have
            log.warning("could not write %s: %s", name, e)
            continue
        try:
            files.write_atomic(out_dir / name, text)
        except OSError as e:
            raise ResultsError(
                f"{out_dir / name}: could not write the report ({e.strerror or e}); the "
                "measurements are in results.json beside it",
                fix="choose another --out, or free disk space; `duet report` renders it again",
            ) from e
        written.append(out_dir / name)
    if plots:
        try:
            from duet_bench.report.plots import write_plots
        except ImportError as e:
            log.warning("plots skipped: %s", e)
        else:
            written += write_plots(doc, out_dir / "plots")
    return written


def compare(
    options: CompareOptions, *, on_note: Callable[[str], None] | None = None
) -> ResultsDocument:
    """Measure HEAD against BASE and write every output; returns the analysed document.

    Raises
    ------
    VersionError
        A failed build or fetch (exit 3); the results file then says so.
    UnknownRef
        BASE or HEAD names no commit (exit 2).
    ConfigError
        HEAD has no usable configuration (exit 2).

    ``on_note`` gets what the user should know before the measurement starts (where the
    configuration is read from, BASE and HEAD being the same commit); by default it is logged.
    """
    from duet_bench.versions import Versions

    note = on_note or (lambda text: log.warning("%s", text))
    out_dir = options.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.json"
    root = repo_root(options.repo)
    with Versions(
        root, keep=options.keep_worktrees, log_dir=out_dir / "logs", run_as=options.run_as
    ) as versions:
        base_sha = versions.resolve(options.base)
        head_sha = versions.resolve(options.head)
        if base_sha == head_sha:
            note(
                f"warning: BASE ({options.base}) and HEAD ({options.head}) are the same commit "
                f"{head_sha[:12]}: this measures a version against itself (an A/A comparison), "
                "not a change. Give the commit to compare against, e.g. origin/main or HEAD~1"
            )
        source = config_source(root, options.config)
        at_head = None if source is None or source.on_disk else source.path
        if source is not None and source.on_disk:
            head_config: tuple[str, str] | None = read_config_from_disk(source)
        else:
            head_config = config_text_at(versions, head_sha, at_head)
        if head_config is None:
            raise _no_configuration(options.head, head_sha, at_head)
        if source is None:
            source = ConfigSource(path=head_config[0], on_disk=False)
        note(f"configuration: {source.describe(options.head, head_sha)}")
        config = load_config(Path(head_config[0]), text=head_config[1])
        # A suite from disk is the suite of both versions: nothing can be missing in BASE.
        base_config_found = None if source.on_disk else config_text_at(versions, base_sha, at_head)
        base_names: set[str] | None = None
        if base_config_found is not None:
            with contextlib.suppress(ConfigError):
                base_names = {
                    b.name
                    for b in load_config(
                        Path(base_config_found[0]), text=base_config_found[1]
                    ).benchmarks
                }
        # Suites are discovered after the builds (duet_bench.adapters.expand): selected then.
        selected = [] if config.suites else [b.name for b in config.select(options.bench)]
        names = select_shard(selected, options.shard)
        missing = [n for n in names if base_names is not None and n not in base_names]
        measured = [n for n in names if n not in missing]

        version_info: dict[str, Any] = {}
        base_version = versions.checkout("baseline", options.base)
        head_version = versions.checkout("candidate", options.head)
        for v in (base_version, head_version):
            version_info[v.side] = {"ref": v.ref, "commit": v.commit, "subject": v.subject}
        try:
            base_version = versions.build(base_version, config.build, rebuild=options.rebuild)
            head_version = versions.build(head_version, config.build, rebuild=options.rebuild)
        except VersionError as e:
            _write_stopped(
                results_path,
                config.raw,
                version_info,
                f"build failed: {e.message}",
                config_source=source.record(head_sha),
            )
            raise
        found = None
        if config.suites:
            from duet_bench.adapters.expand import expand_config, select_names

            try:
                config, found = expand_config(
                    config,
                    baseline_dir=base_version.directory,
                    candidate_dir=head_version.directory,
                )
            except ConfigError as e:
                _write_stopped(
                    results_path,
                    config.raw,
                    version_info,
                    f"discovery failed: {e.message}",
                    config_source=source.record(head_sha),
                )
                raise
            names = select_shard(select_names(config, found, options.bench), options.shard)
            suite_names = {b.name for b in found.benchmarks}
            missing = [
                n
                for n in names
                if n not in suite_names and base_names is not None and n not in base_names
            ]
            measured = [n for n in names if n not in missing]

        planned = {
            p.spec.name: p
            for p in settings.for_suite(
                config,
                baseline_dir=base_version.directory,
                candidate_dir=head_version.directory,
                explicit=options.explicit,
            )
        }
        specs = [planned[n].spec for n in measured]
        suite = settings.resolve(options.explicit, config=config)
        max_failures = suite["max_failures"]
        session = SessionOptions(
            out=results_path,
            isolation=suite["isolation"],
            cores=options.cores,
            share_network=options.share_network,
            seed=options.plan_seed,
            max_failures=max_failures,
            analysis=suite.analysis(),
            per_benchmark={n: planned[n].analysis for n in measured},
            progress=options.progress,
            run_as=options.run_as,
            wait=options.wait,
            config={
                "command": "compare",
                "suite": dict(config.raw),
                "shard": list(options.shard) if options.shard else None,
                "bench": options.bench,
                "max_failures": max_failures,
                "missing_in_baseline": missing,
                "config_source": source.record(head_sha),
                # What the command line changed: shards merged later must agree on it.
                "options": dict(options.explicit),
                **({"same_commit": True} if base_sha == head_sha else {}),
                **(
                    {"suites": {"new": list(found.new), "missing": list(found.missing)}}
                    if found is not None
                    else {}
                ),
            },
        )
        doc = measure(specs, session, versions=version_info)
        for name in missing:
            judged_with = planned[name].analysis
            record = BenchmarkRecord(
                name=name,
                runs=(),
                settings={"analysis": settings.record(judged_with)},
                note=f"missing in the baseline ({options.base}): not measured",
            )
            analysis = analyze_benchmark(record, judged_with).to_dict()
            doc = doc.with_benchmark(replace(record, analysis=analysis))
        if found is not None:
            from duet_bench.adapters.expand import unmeasured

            # New or missing in a suite: no runs, judged (for the record) by the suite's settings.
            judged_with = suite.analysis()
            for record in unmeasured(
                found,
                base=options.base,
                head=options.head,
                pattern=options.bench,
                shard=options.shard,
            ):
                record = replace(record, settings={"analysis": settings.record(judged_with)})
                analysis = analyze_benchmark(record, judged_with).to_dict()
                doc = doc.with_benchmark(replace(record, analysis=analysis))
        results.save(doc, results_path)
        write_outputs(doc, out_dir, plots=options.plots)
        return doc


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


def _write_stopped(
    path: Path,
    suite: Mapping[str, Any],
    versions: Mapping[str, Any],
    why: str,
    *,
    config_source: Mapping[str, Any],
) -> None:
    """A results file that says why nothing was measured (CI keeps it as an artifact)."""
    from duet_bench import __version__

    doc = ResultsDocument(
        benchmarks=(),
        tool={"name": "duet-bench", "version": __version__},
        config={
            "command": "compare",
            "suite": dict(suite),
            "versions": dict(versions),
            "config_source": dict(config_source),
        },
        state={"complete": False, "stopped": why},
    )
    results.save(doc, path)
