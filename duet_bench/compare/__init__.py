"""``duet compare BASE HEAD``: the command CI calls.

The data flow of duet (the diagram at the top of ``docs/architecture.md``) for two commits: the
configuration read from HEAD's commit, two worktrees and two builds, the runs through
:func:`duet_bench.session.measure`, the results and the reports in ``duet-results/``.

The suite is HEAD's configuration (or, with ``--config`` outside the repository, that file as
it is on disk, for both versions: :func:`config_source`). A benchmark that BASE's configuration
does not have is reported as "missing in the baseline" with no runs, not measured against
something else, and listed in ``config.missing_in_baseline`` (the command exits 3 for it unless
``--allow-missing``); when BASE has no duet configuration at all (the pull request that adds
duet), HEAD's suite is used for both versions.

One job per module: :mod:`duet_bench.compare.configuration` (where the suite is read); here,
the sequence of :func:`compare`, one named step after another, and the results file that says
why nothing was measured (:func:`write_stopped`). The reports beside ``results.json`` are
written by the command with :mod:`duet_bench.report.files`, as for ``run`` and ``merge``. How
the sides run (the session's options, shared with ``duet bisect``, ``run`` and ``calibrate``)
is :mod:`duet_bench.session.options`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench import __version__, files, results, settings
from duet_bench.adapters.expand import expand_config, select_names, unmeasured
from duet_bench.analysis import AnalysisSettings, analyze_benchmark
from duet_bench.analysis.stopping import check_continuation
from duet_bench.compare.configuration import (
    ConfigSource,
    Suite,
    config_source,
    config_text_at,
    read_config_from_disk,
    read_configuration,
    read_suite,
    repo_root,
)
from duet_bench.config import Config
from duet_bench.errors import ConfigError, DuetError, UsageError, VersionError
from duet_bench.plan import BenchmarkSettings, BenchmarkSpec, for_suite, select_shard
from duet_bench.results import BenchmarkRecord, RecordedPlan, ResultsDocument, load_given
from duet_bench.session import MachineOptions, measure, session_options
from duet_bench.versions import Versions

if TYPE_CHECKING:
    from duet_bench.adapters.expand import Expansion
    from duet_bench.versions import Version, Versions

__all__ = [
    "CompareOptions",
    "ConfigSource",
    "Suite",
    "compare",
    "config_source",
    "config_text_at",
    "read_config_from_disk",
    "read_configuration",
    "repo_root",
]

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
    explicit: settings.Given = field(default_factory=settings.Given)
    machine: MachineOptions = field(default_factory=MachineOptions)
    plots: bool = True
    #: ``--continue DIR``: the results of an earlier measurement until decided of the same two
    #: commits, whose undecided benchmarks get more runs under the same rule.
    continue_from: Path | None = None


@dataclass(frozen=True, slots=True)
class Commits:
    """The full shas BASE and HEAD name."""

    base: str
    head: str


@dataclass(frozen=True, slots=True)
class Chosen:
    """The benchmarks to report: those measured, and those BASE's configuration lacks."""

    #: HEAD's configuration, with what its suites discovered in both versions.
    config: Config
    measured: tuple[str, ...]
    missing: tuple[str, ...]
    found: Expansion | None = None


def compare(
    options: CompareOptions, *, on_note: Callable[[str], None] | None = None
) -> ResultsDocument:
    """Measure HEAD against BASE and write ``results.json``; returns the analysed document
    (the command writes the reports beside it: :func:`duet_bench.report.files.write_reports`).

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
    note = on_note or (lambda text: log.warning("%s", text))
    out_dir = options.out_dir
    files.make_out_directory(out_dir)
    root = repo_root(options.repo, options.machine.run_as)
    with Versions(
        root,
        keep=options.keep_worktrees,
        log_dir=out_dir / "logs",
        run_as=options.machine.run_as,
        keep_env=options.machine.keep_env,
    ) as versions:
        commits = _resolve(versions, options, note)
        suite = read_suite(
            versions,
            root,
            options.config,
            head=options.head,
            head_sha=commits.head,
            base_sha=commits.base,
            note=note,
        )
        # Before the builds, so that a --bench that selects nothing fails at once.
        chosen = _configured(suite, options)
        base, head = _check_out_and_build(versions, options, suite, commits)
        if suite.config.suites:
            chosen = _discovered(suite, options, commits, base, head)
        doc = _measure(options, suite, chosen, commits, base, head)
        results.save(doc, out_dir / "results.json")
        return doc


def _resolve(versions: Versions, options: CompareOptions, note: Callable[[str], None]) -> Commits:
    """The commits of BASE and HEAD; the same commit twice is worth a warning."""
    commits = Commits(base=versions.resolve(options.base), head=versions.resolve(options.head))
    if commits.base == commits.head:
        note(
            f"warning: BASE ({options.base}) and HEAD ({options.head}) are the same commit "
            f"{commits.head[:12]}: this measures a version against itself (an A/A comparison), "
            "not a change. Give the commit to compare against, e.g. origin/main or HEAD~1"
        )
    return commits


def _configured(suite: Suite, options: CompareOptions) -> Chosen:
    """The benchmarks of the configuration that ``--bench`` and ``--shard`` select (a suite's
    are discovered after the builds: :func:`_discovered`)."""
    config = suite.config
    selected = [] if config.suites else [b.name for b in config.select(options.bench)]
    names = select_shard(selected, options.shard)
    missing = _missing(names, suite.base_names, found=())
    return Chosen(config, tuple(n for n in names if n not in missing), missing)


def _discovered(
    suite: Suite, options: CompareOptions, commits: Commits, base: Version, head: Version
) -> Chosen:
    """The benchmarks selected among those configured and those the suites found in both
    built versions."""
    with _stopped_by(ConfigError, "discovery failed", options, suite, commits, (base, head)):
        config, found = expand_config(
            suite.config,
            baseline_dir=base.directory,
            candidate_dir=head.directory,
            run_as=options.machine.run_as,
            keep_env=options.machine.keep_env,
        )
    names = select_shard(select_names(config, found, options.bench), options.shard)
    missing = _missing(names, suite.base_names, found=[b.name for b in found.benchmarks])
    return Chosen(config, tuple(n for n in names if n not in missing), missing, found)


def _missing(
    names: Sequence[str], base_names: frozenset[str] | None, *, found: Sequence[str]
) -> tuple[str, ...]:
    """The ``names`` BASE's configuration lacks (a suite's benchmark ``found`` in both versions
    is never missing)."""
    if base_names is None:
        return ()
    return tuple(n for n in names if n not in found and n not in base_names)


def _check_out_and_build(
    versions: Versions, options: CompareOptions, suite: Suite, commits: Commits
) -> tuple[Version, Version]:
    """BASE and HEAD checked out into worktrees and built by the configuration's command."""
    base = versions.checkout("baseline", options.base)
    head = versions.checkout("candidate", options.head)
    with _stopped_by(VersionError, "build failed", options, suite, commits, (base, head)):
        base = versions.build(base, suite.config.build, rebuild=options.rebuild)
        head = versions.build(head, suite.config.build, rebuild=options.rebuild)
    return base, head


@contextlib.contextmanager
def _stopped_by(
    error: type[DuetError],
    what: str,
    options: CompareOptions,
    suite: Suite,
    commits: Commits,
    sides: tuple[Version, Version],
) -> Iterator[None]:
    """On ``error``, a results file that says what stopped the command before it measured."""
    try:
        yield
    except error as e:
        write_stopped(
            options.out_dir / "results.json",
            suite.config.raw,
            _described(sides),
            f"{what}: {e.message}",
            config_source=suite.source.record(commits.head),
        )
        raise


def write_stopped(
    path: Path,
    suite: Mapping[str, Any],
    versions: Mapping[str, Any],
    why: str,
    *,
    config_source: Mapping[str, Any],
) -> None:
    """A results file that says why nothing was measured (CI keeps it as an artifact)."""
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


def _described(sides: tuple[Version, Version]) -> dict[str, Any]:
    """The two versions as the results file keeps them (``versions``)."""
    return {v.side: {"ref": v.ref, "commit": v.commit, "subject": v.subject} for v in sides}


def _measure(
    options: CompareOptions,
    suite: Suite,
    chosen: Chosen,
    commits: Commits,
    base: Version,
    head: Version,
) -> ResultsDocument:
    """The chosen benchmarks measured (and the others recorded unmeasured): the analysed
    document."""
    planned = {
        p.spec.name: p
        for p in for_suite(
            chosen.config,
            baseline_dir=base.directory,
            candidate_dir=head.directory,
            explicit=options.explicit,
        )
    }
    resolved = settings.resolve(options.explicit, config=chosen.config)
    session = session_options(
        options.out_dir / "results.json",
        options.machine,
        isolation=resolved.values.isolation,
        max_failures=resolved.values.max_failures,
        analysis=resolved.values.analysis(),
        per_benchmark={n: planned[n].analysis for n in chosen.measured},
        config=_recorded(options, suite, chosen, commits, resolved.values.max_failures),
    )
    specs = [planned[n].spec for n in chosen.measured]
    if options.continue_from is not None:
        session = replace(
            session,
            earlier=_earlier(options.continue_from, specs, planned, session.seed, commits),
        )
    doc = measure(specs, session, versions=_described((base, head)))
    unmeasured = [(name, planned[name].analysis) for name in chosen.missing]
    return _with_unmeasured(doc, options, chosen, unmeasured, resolved.values.analysis())


def _earlier(
    source: Path,
    specs: list[BenchmarkSpec],
    planned: Mapping[str, BenchmarkSettings],
    seed: int,
    commits: Commits,
) -> dict[str, BenchmarkRecord]:
    """The earlier records ``--continue`` extends, by name, each checked to be the same rule
    (:func:`duet_bench.analysis.stopping.check_continuation`); decided ones are kept as they
    are. The earlier file must be of the same two commits."""
    doc = load_given(source)
    recorded = doc.config.get("versions") if isinstance(doc.config, Mapping) else None
    got = (
        tuple(recorded.get(s, {}).get("commit") for s in ("baseline", "candidate"))
        if isinstance(recorded, Mapping)
        else (None, None)
    )
    if got != (commits.base, commits.head):
        raise UsageError(
            f"--continue {source}: it measured {got[0]} against {got[1]}, not "
            f"{commits.base} against {commits.head}",
            fix="continue with the BASE and HEAD it measured, or start a new measurement",
        )
    by_name = {b.name: b for b in doc.benchmarks}
    out: dict[str, BenchmarkRecord] = {}
    for spec in specs:
        earlier = by_name.get(spec.name)
        if earlier is None:
            continue
        stopping = earlier.analysis.stopping if earlier.analysis is not None else None
        if stopping is None or stopping.decided_after is None:
            check_continuation(
                earlier,
                plan=replace(
                    spec.recorded(),
                    seed=seed,
                    analysis=planned[spec.name].analysis.to_record(),
                ),
                # The worktrees' paths change between invocations; the commits are checked.
                versions=earlier.versions,
                design=spec.until_decided,
                source=f"--continue {source}",
            )
        out[spec.name] = earlier
    return out


def _recorded(
    options: CompareOptions, suite: Suite, chosen: Chosen, commits: Commits, max_failures: Any
) -> dict[str, Any]:
    """What the results file keeps as its ``config``: the suite and how it was chosen."""
    return {
        "command": "compare",
        "suite": dict(chosen.config.raw),
        "shard": list(options.shard) if options.shard else None,
        "bench": options.bench,
        "max_failures": max_failures,
        "missing_in_baseline": list(chosen.missing),
        "config_source": suite.source.record(commits.head),
        # What the command line changed: shards merged later must agree on it.
        "options": options.explicit.record(),
        **({"same_commit": True} if commits.base == commits.head else {}),
        **(
            {"suites": {"new": list(chosen.found.new), "missing": list(chosen.found.missing)}}
            if chosen.found is not None
            else {}
        ),
    }


def _with_unmeasured(
    doc: ResultsDocument,
    options: CompareOptions,
    chosen: Chosen,
    missing: Sequence[tuple[str, AnalysisSettings]],
    suite_settings: AnalysisSettings,
) -> ResultsDocument:
    """``doc`` with a record of every benchmark not measured (no runs, a note, judged for the
    record): those ``missing`` in BASE's configuration, with the settings each would have been
    judged with, and those new or missing in a suite, with the suite's ``suite_settings``."""
    records = [
        (
            BenchmarkRecord(
                name=name, runs=(), note=f"missing in the baseline ({options.base}): not measured"
            ),
            judged_with,
        )
        for name, judged_with in missing
    ]
    if chosen.found is not None:
        records += [
            (record, suite_settings)
            for record in unmeasured(
                chosen.found,
                base=options.base,
                head=options.head,
                pattern=options.bench,
                shard=options.shard,
            )
        ]
    for record, judged_with in records:
        record = replace(record, settings=RecordedPlan(analysis=judged_with.to_record()))
        analysis = analyze_benchmark(record, judged_with).to_block()
        doc = doc.with_benchmark(replace(record, analysis=analysis))
    return doc
