"""One comparison of ``duet bisect``: two commits of the history, built once, measured with
``duet_bench.session.measure`` in rounds until the verdict is decided or the cap is reached;
or, measured until decided (``--step-max-runs``, ``--step-budget``: docs/statistics.md, method
2b), in one round that stops at the first decided look, with no top-up round after it.

Every round is a results file of its own in ``<out>/steps/`` (rewritten after every run by the
session, so nothing measured is lost). A round file that is complete and was measured with the
same suite, benchmark and run options is read back instead of measured again: a stopped bisect
run again with the same ``--out`` continues where it stopped, and one run again with another
``--threshold``, ``--confidence`` or ``--max-runs`` re-analyses what it has and measures only what
is missing. An undecided round measured until decided, run again with a larger
``--step-max-runs`` or ``--step-budget``, is continued under the same rule (its runs kept, the
next runs of its plan measured: :meth:`Comparer._continuable`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duet_bench import files, results, units
from duet_bench.analysis import AnalysisSettings, analyze_benchmark
from duet_bench.analysis.stopping import UntilDecided, check_continuation
from duet_bench.bisect.history import Commit
from duet_bench.config import BenchmarkConfig, Config
from duet_bench.defaults import ANALYSIS_KEYS
from duet_bench.errors import ResultsError, UsageError, VersionError
from duet_bench.plan import for_suite
from duet_bench.results import BenchmarkRecord, RunRecord, SideName
from duet_bench.session import MachineOptions, measure, raise_if_broken, session_options
from duet_bench.settings import Given, resolve

if TYPE_CHECKING:
    from duet_bench.versions import Version, Versions

log = logging.getLogger(__name__)

DECIDED = ("regression", "no change", "improvement")


def more_runs(have: int, needed: int | None, max_runs: int) -> int:
    """How many runs the next round of an undecided comparison measures; 0 to stop.

    Up to the planning's estimate ``needed`` (double ``have`` without one), capped at
    ``max_runs`` in all, and even, so that the sides' cores stay balanced within the round. When
    the estimate is beyond the cap, the runs are not spent on it, but only once it rests on at
    least half the cap: a variance from few runs is itself uncertain. On a host that slowed one
    vCPU for a while, 6 runs of an unchanged commit said 33 were needed against a cap of 24, and
    the search stopped there.
    """
    if have >= max_runs:
        return 0
    if needed is not None and needed > max_runs:
        if 2 * have >= max_runs:
            return 0
        needed = 2 * have
    wanted = (needed or 2 * have) - have
    return min(max(2, wanted + wanted % 2), max_runs - have)


@dataclass(frozen=True, slots=True)
class Comparison:
    """CANDIDATE against BASELINE (both commits of the searched line), over every round."""

    baseline: str
    candidate: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str | None
    metric: str | None
    runs: int
    #: The planning's estimate of the runs in all that would decide, when inconclusive.
    runs_needed: int | None
    #: Round files, relative to the results directory.
    files: tuple[str, ...]
    #: Rounds read back from an earlier invocation instead of measured.
    rounds_reused: int
    note: str | None
    #: Measured until decided: the runs at the look that decided it (None: undecided, or a
    #: fixed design), and the most runs the step could take.
    decided_after: int | None = None
    until_decided_max_runs: int | None = None

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    @property
    def slower(self) -> bool:
        return self.verdict == "regression"

    @property
    def log_ratio(self) -> float:
        return math.log(self.ratio) if self.ratio else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
            "metric": self.metric,
            "runs": self.runs,
            "runs_needed": self.runs_needed,
            "files": list(self.files),
            "rounds_reused": self.rounds_reused,
            "note": self.note,
            "decided_after": self.decided_after,
            "until_decided_max_runs": self.until_decided_max_runs,
        }


class Comparer:
    """Builds commits on first use (in one :class:`duet_bench.versions.Versions`, so a commit is
    built once however often it is compared until the search lets go of it: :meth:`release`)
    and measures pairs of them."""

    def __init__(
        self,
        *,
        versions: Versions,
        config: Config,
        benchmark: BenchmarkConfig,
        settings: AnalysisSettings,
        given: Given,
        machine: MachineOptions,
        out_dir: Path,
        max_runs: int,
        design: UntilDecided | None = None,
        rebuild: bool = False,
        on_note: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.versions = versions
        self.config = config
        self.benchmark = benchmark
        self.settings = settings
        # What each round records and is keyed by: the run settings given, then the analysis
        # settings given (ANALYSIS_KEYS), in the order of BUILTIN.
        recorded = given.record()
        self.overrides = {k: v for k, v in recorded.items() if k not in ANALYSIS_KEYS}
        self.analysis_overrides = {k: v for k, v in recorded.items() if k in ANALYSIS_KEYS}
        self.machine = machine
        self.out_dir = out_dir
        self.max_runs = max_runs
        #: Measure every step until decided (one round, no top-up); None: a fixed design.
        self.design = design
        self.rebuild = rebuild
        self.on_note = on_note
        resolved = resolve(given.without(*ANALYSIS_KEYS), config=config, benchmark=benchmark)
        v = resolved.values
        self.first_runs = min(v.runs, max_runs) if design is None else design.max_runs
        self.max_failures = v.max_failures
        self.isolation = v.isolation
        # What a round file must have been measured with to be read back.
        key: dict[str, Any] = {
            "suite": dict(config.raw),
            "benchmark": benchmark.name,
            "run": self.overrides,
        }
        if design is not None:
            key["until_decided"] = design.to_record().to_dict()
        self.key = json.loads(
            json.dumps(
                key,
                sort_keys=True,
                default=str,
            )
        )
        self._cache: dict[tuple[str, str], Comparison] = {}
        #: The commits checked out and built, until released.
        self._built: dict[str, Version] = {}

    def compare(self, baseline: Commit, candidate: Commit) -> Comparison:
        """The comparison of the pair, measured (or read back) until decided or capped."""
        cached = self._cache.get((baseline.sha, candidate.sha))
        if cached is not None:
            return cached
        record: BenchmarkRecord | None = None
        files: list[str] = []
        reused = 0
        add = self.first_runs
        while True:
            path = self._round_path(baseline, candidate, len(files) + 1)
            earlier = self._continuable(path)
            doc = None if earlier is not None else self._read_round(path)
            if doc is None:
                doc = self._measure_round(
                    baseline, candidate, path, add, len(files) + 1, earlier=earlier
                )
            else:
                reused += 1
            files.append(str(path.relative_to(self.out_dir)))
            part = doc.benchmark(self.benchmark.name)
            record = part if record is None else _joined(record, part)
            comparison = self._summarise(baseline, candidate, record, files, reused)
            have, needed = comparison.runs, comparison.runs_needed
            if comparison.decided or self.design is not None:
                # Measured until decided: an undecided round is not topped up (more runs read
                # with it would be a second look the rule's error rate does not allow).
                break
            add = more_runs(have, needed, self.max_runs)
            if add == 0:
                break
            planned = f" (the planning says about {needed} in all)" if needed else ""
            self.on_note(
                f"  {comparison.verdict or 'no verdict'} after {have} runs "
                f"(ratio {units.ratio(comparison.ratio)}): {add} more runs{planned}"
            )
        self._cache[(baseline.sha, candidate.sha)] = comparison
        return comparison

    # ----------------------------------------------------------------------------------------

    def _summarise(
        self,
        baseline: Commit,
        candidate: Commit,
        record: BenchmarkRecord,
        files: list[str],
        reused: int,
    ) -> Comparison:
        a = analyze_benchmark(record, self.settings)
        stopping = a.stopping
        return Comparison(
            baseline=baseline.sha,
            candidate=candidate.sha,
            ratio=a.ratio,
            ci_low=a.ci_low,
            ci_high=a.ci_high,
            verdict=a.verdict,
            metric=a.metric if a.ratio is not None else None,
            runs=a.runs_used,
            runs_needed=a.runs_needed,
            files=tuple(files),
            rounds_reused=reused,
            note=a.note,
            decided_after=stopping.decided_after if stopping is not None else None,
            until_decided_max_runs=stopping.design.max_runs if stopping is not None else None,
        )

    def _round_path(self, baseline: Commit, candidate: Commit, round_: int) -> Path:
        return self.out_dir / "steps" / f"{baseline.short}-{candidate.short}.r{round_}.json"

    def _read_round(self, path: Path) -> results.ResultsDocument | None:
        if not path.exists():
            return None
        try:
            doc = results.load(path)
        except ResultsError as e:
            log.warning("%s cannot be read back (%s); measuring it again", path, e.message)
            doc = None
        if (
            doc is not None
            and doc.state.get("complete")
            and (doc.config.get("bisect") or {}).get("key") == self.key
            and any(b.name == self.benchmark.name for b in doc.benchmarks)
        ):
            self.on_note(f"  read back {path.name} (measured by an earlier duet bisect)")
            return doc
        # Measured with other settings, or stopped part-way: keep it beside, measure anew.
        kept = path.with_suffix(".stale.json")
        path.replace(kept)
        self.on_note(f"  {path.name} was stopped or measured otherwise: kept as {kept.name}")
        return None

    def _continuable(self, path: Path) -> BenchmarkRecord | None:
        """The undecided record of a complete round file measured until decided with the same
        suite, benchmark and run options as this search but a smaller ``--step-max-runs`` or
        ``--step-budget``: continued under the same rule (docs/bisect.md, "Resuming"), not
        measured anew. None when there is no such file or the rule is not the same."""
        if self.design is None or not path.exists():
            return None
        try:
            doc = results.load(path)
        except ResultsError:
            return None
        key = (doc.config.get("bisect") or {}).get("key")
        if not doc.state.get("complete") or not isinstance(key, Mapping) or key == self.key:
            return None
        if "until_decided" not in key or _without_design(key) != _without_design(self.key):
            return None
        record = next((b for b in doc.benchmarks if b.name == self.benchmark.name), None)
        if record is None:
            return None
        seed = self.machine.plan_seed  # the first round's: a step measured until decided has one
        try:
            check_continuation(
                record,
                plan=replace(record.settings, seed=seed, analysis=self.settings.to_record()),
                versions=record.versions,
                design=self.design,
                source=str(path),
            )
        except UsageError:
            return None
        self.on_note(
            f"  continuing {path.name}: undecided after {len(record.runs)} runs, measured "
            f"further under the same rule, up to {self.design.max_runs} runs"
        )
        return record

    def release(self, commit: Commit) -> None:
        """Give back the worktree of ``commit``, which the search left
        (:func:`duet_bench.bisect.search.search`'s ``on_leave``), so that a long history does
        not pile up about log2(n) worktrees and builds; a later comparison of it checks it out
        and builds it again. A worktree that cannot be removed is said, and the search goes
        on."""
        version = self._built.pop(commit.sha, None)
        if version is None:
            return
        try:
            self.versions.release(version)
        except VersionError as e:
            self.on_note(f"  warning: {e.message}; fix: {e.fix}")

    def _directory(self, side: SideName, commit: Commit) -> Path:
        if commit.sha in self._built:
            return self._built[commit.sha].directory
        version = self.versions.checkout(side, commit.sha)
        version = self.versions.build(version, self.config.build, rebuild=self.rebuild)
        if version.build_log is not None:
            # The Versions log is per side; keep one per commit. Read only if it is still
            # duet's own file, written anew (docs/isolation.md, "What runs as root").
            copy = self.out_dir / "logs" / f"build-{commit.short}.log"
            try:
                fd = files.open_existing(version.build_log)
                if fd is not None:
                    with open(fd, "rb") as log_file:
                        body = log_file.read()
                    files.write_atomic(copy, body)
            except OSError as e:
                log.warning("%s: the build log was not kept: %s", copy, e.strerror or e)
        self._built[commit.sha] = version
        return version.directory

    def _measure_round(
        self,
        baseline: Commit,
        candidate: Commit,
        path: Path,
        runs: int,
        round_: int,
        *,
        earlier: BenchmarkRecord | None = None,
    ) -> results.ResultsDocument:
        base_dir = self._directory("baseline", baseline)
        head_dir = self._directory("candidate", candidate)
        overrides: dict[str, Any] = {**self.overrides, "runs": runs}
        if self.design is not None:
            # The plan of --step-max-runs runs, stopped by the rule (docs/statistics.md, 2b).
            del overrides["runs"]
            overrides |= {"min_runs": self.design.min_runs, "max_runs": self.design.max_runs}
            if self.design.budget_s is not None:
                overrides["budget_s"] = self.design.budget_s
        specs = [
            s.spec
            for s in for_suite(
                self.config,
                baseline_dir=base_dir,
                candidate_dir=head_dir,
                select=self.benchmark.name,
                explicit=Given.of(**overrides),
            )
            if s.spec.name == self.benchmark.name
        ]
        files.make_out_directory(path.parent)
        session = session_options(
            path,
            self.machine,
            isolation=self.isolation,
            max_failures=self.max_failures,
            analysis=self.settings,
            # Another seed per round: a top-up is not the same plan again.
            seed_offset=round_ - 1,
            config={
                "command": "bisect",
                "suite": dict(self.config.raw),
                "bench": self.benchmark.name,
                "max_failures": self.max_failures,
                "options": {**overrides, **self.analysis_overrides},
                "bisect": {"key": self.key, "round": round_},
            },
        )
        if earlier is not None:
            session = replace(session, earlier={self.benchmark.name: earlier})
        versions = {
            "baseline": {
                "ref": baseline.short,
                "commit": baseline.sha,
                "subject": baseline.subject,
            },
            "candidate": {
                "ref": candidate.short,
                "commit": candidate.sha,
                "subject": candidate.subject,
            },
        }
        doc = measure(specs, session, versions=versions)
        raise_if_broken(doc, self.max_failures)
        return doc


def _without_design(key: Mapping[str, Any]) -> dict[str, Any]:
    """A round file's key without its design until decided."""
    return {k: v for k, v in key.items() if k != "until_decided"}


def _joined(first: BenchmarkRecord, more: BenchmarkRecord) -> BenchmarkRecord:
    """One record with the runs of both rounds, numbered on."""
    offset = len(first.runs)
    runs: tuple[RunRecord, ...] = (
        *first.runs,
        *(replace(r, index=offset + i) for i, r in enumerate(more.runs)),
    )
    return replace(first, runs=runs, analysis=None)
