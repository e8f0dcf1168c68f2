"""``duet bisect GOOD BAD``: configuration at BAD -> the first-parent line -> one Versions for
the whole search (each commit checked out and built once) -> the search -> ``bisect.json`` and
``report.md`` in the results directory, rewritten after every step.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duet_bench import files, results, units
from duet_bench.analysis.stopping import (
    BUILT_IN,
    DEFAULT_BUDGET_S,
    DEFAULT_MAX_RUNS,
    DEFAULT_MIN_RUNS,
    UntilDecided,
)
from duet_bench.bisect.comparisons import Comparer
from duet_bench.bisect.history import Commit, first_parent_line
from duet_bench.bisect.search import (
    MAX_CULPRITS,
    SPREAD_SHARE,
    SearchResult,
    Step,
    describe_step,
    search,
)
from duet_bench.compare import config_source, read_configuration, repo_root
from duet_bench.config import CONFIG_FILES, BenchmarkConfig, Config, load_config
from duet_bench.errors import ConfigError, UsageError
from duet_bench.session import MachineOptions
from duet_bench.settings import Given, Resolved, resolve
from duet_bench.versions import Versions

#: ``--max-runs`` default: this many times the configured runs.
MAX_RUNS_FACTOR = 4


@dataclass(frozen=True, slots=True)
class BisectOptions:
    good: str
    bad: str
    out_dir: Path
    repo: Path = Path()
    config: str | None = None
    benchmark: str | None = None
    #: Runs in all one comparison may use (None: MAX_RUNS_FACTOR x the configured runs).
    max_runs: int | None = None
    spread_share: float = SPREAD_SHARE
    max_culprits: int = MAX_CULPRITS
    #: Measure every step until decided (``--step-min-runs``, ``--step-max-runs``,
    #: ``--step-budget``; the configuration's min_runs, max_runs, budget otherwise). Not
    #: ``max_runs``, which caps the top-up rounds of a fixed-design step.
    step_min_runs: int | None = None
    step_max_runs: int | None = None
    step_budget_s: float | None = None
    rebuild: bool = False
    keep_worktrees: bool = False
    #: The settings given on the command line but the stopping ones (``--max-runs`` is the
    #: search's here: the ``--step-*`` options say how a step stops).
    given: Given = field(default_factory=Given)
    machine: MachineOptions = field(default_factory=MachineOptions)


@dataclass(frozen=True, slots=True)
class Bisection:
    """What ``bisect.json`` holds."""

    good: str
    bad: str
    benchmark: str
    threshold: float
    confidence: float
    metric: str
    max_runs: int
    spread_share: float
    commits: tuple[Commit, ...]
    result: SearchResult | None
    #: Every step measured until decided with this design; None: fixed-design rounds.
    until_decided: UntilDecided | None = None
    #: Steps so far while running (the result holds them at the end).
    steps: tuple[Step, ...] = ()
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        steps = r.steps if r is not None else self.steps
        return {
            "duet_bisect": 1,
            "updated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "good": {"ref": self.good, "commit": self.commits[0].sha},
            "bad": {"ref": self.bad, "commit": self.commits[-1].sha},
            "benchmark": self.benchmark,
            "threshold": self.threshold,
            "confidence": self.confidence,
            "metric": self.metric,
            "max_runs": self.max_runs,
            "until_decided": (
                self.until_decided.to_record().to_dict() if self.until_decided is not None else None
            ),
            "spread_share": self.spread_share,
            "first_parent": True,
            "commits": [
                {"index": i, "commit": c.sha, "subject": c.subject, "merge": c.merge}
                for i, c in enumerate(self.commits)
            ],
            "comparisons": len(steps),
            "steps": [s.to_dict(self.commits) for s in steps],
            "outcome": r.outcome if r is not None else None,
            "message": r.message if r is not None else None,
            "advice": r.advice if r is not None else None,
            "culprits": [c.to_dict() for c in r.culprits] if r is not None else [],
            "stopped": self.stopped,
        }


def _config_at(versions: Any, root: Path, sha: str, explicit: str | None) -> tuple[str, str]:
    """The suite: BAD's configuration, or the ``--config`` file from disk when it lies outside
    the repository (the rules of ``duet compare``)."""
    source = config_source(root, explicit)
    found = read_configuration(versions, source, sha)
    if found is None:
        names = source.path if source is not None else " or ".join(CONFIG_FILES)
        raise ConfigError(
            f"BAD ({sha[:12]}) has no duet configuration ({names})",
            fix="commit a duet.toml, or give one outside the repository with --config PATH",
        )
    return found


def _one_benchmark(config: Config, name: str | None) -> BenchmarkConfig:
    """The benchmark bisect follows: the one ``--bench`` selects, or the suite's only one."""
    if name is not None:
        return config.select_one(name)
    if len(config.benchmarks) == 1:
        return config.benchmarks[0]
    raise UsageError(
        f"the suite has {len(config.benchmarks)} benchmarks; bisect follows one",
        fix="name it with --bench NAME, one of: " + ", ".join(b.name for b in config.benchmarks),
    )


def step_design(options: BisectOptions, resolved: Resolved) -> UntilDecided | None:
    """How each step is measured: until decided (docs/statistics.md, method 2b) when
    ``--step-max-runs`` or ``--step-budget`` is given, or ``max_runs`` or ``budget`` is in the
    configuration (as ``duet compare`` reads it; ``--runs`` on the command line keeps a fixed
    design), or nothing of ``runs`` either (the default design); None for fixed-design rounds
    topped up to ``--max-runs``."""
    given = {
        "min_runs": options.step_min_runs,
        "max_runs": options.step_max_runs,
        "budget_s": options.step_budget_s,
    }
    on_command_line = any(v is not None for v in given.values())
    fixed_given = "runs" in options.given.names or options.max_runs is not None
    if on_command_line and fixed_given:
        raise UsageError(
            "--runs and --max-runs ask for fixed-design steps topped up to a cap, --step-max-runs "
            "and --step-budget for steps measured until decided: give one or the other",
            fix="drop --runs and --max-runs to measure every step until decided, or drop the "
            "--step-* options",
        )
    if fixed_given and not on_command_line:
        return None
    # Key by key, an option wins over the configuration (as in duet compare): the session
    # resolves the keys the options leave out from the configuration too.
    v = resolved.values
    given = {
        "min_runs": v.min_runs if options.step_min_runs is None else options.step_min_runs,
        "max_runs": v.max_runs if options.step_max_runs is None else options.step_max_runs,
        "budget_s": v.budget_s if options.step_budget_s is None else options.step_budget_s,
    }
    if given["max_runs"] is None and given["budget_s"] is None:
        if resolved.origins.get("runs", BUILT_IN) == BUILT_IN:
            # Nothing of runs, max_runs, budget set: the default design, as in duet compare
            # (docs/statistics.md, method 2b); its budget is each step's.
            lo = given["min_runs"]
            return UntilDecided(
                min_runs=DEFAULT_MIN_RUNS if lo is None else int(lo),
                max_runs=DEFAULT_MAX_RUNS,
                budget_s=DEFAULT_BUDGET_S,
            )
        if options.step_min_runs is not None:
            raise UsageError(
                "--step-min-runs needs --step-max-runs or --step-budget (or max_runs or budget "
                "in the configuration): without them each step is a fixed design of --runs",
                fix="add --step-max-runs 40 or --step-budget 5m, or drop --step-min-runs",
            )
        return None
    lo, hi, budget = given["min_runs"], given["max_runs"], given["budget_s"]
    return UntilDecided(
        min_runs=DEFAULT_MIN_RUNS if lo is None else int(lo),
        max_runs=DEFAULT_MAX_RUNS if hi is None else int(hi),
        budget_s=None if budget is None else float(budget),
    )


def bisect(
    options: BisectOptions,
    *,
    on_note: Callable[[str], None] = lambda text: None,
    on_save: Callable[[Bisection], None] = lambda state: None,
) -> Bisection:
    """Search GOOD..BAD and write ``bisect.json``, then call ``on_save`` with the bisection
    (the command writes ``report.md`` there), before the first step, after every step and at
    the end; return the bisection.

    Raises what ``duet compare`` raises (UnknownRef, ConfigError, VersionError, BenchmarkFailed)
    and UsageError for a GOOD that is not an ancestor of BAD or a suite of several benchmarks
    without ``--bench``. ``bisect.json`` says where a stopped search stopped.
    """
    out = options.out_dir
    run_as, keep_env = options.machine.run_as, options.machine.keep_env
    root = repo_root(options.repo, run_as)
    logs = out / "logs"
    with Versions(
        root, keep=options.keep_worktrees, log_dir=logs, run_as=run_as, keep_env=keep_env
    ) as versions:
        good = versions.resolve(options.good)
        bad = versions.resolve(options.bad)
        refs = {"good_ref": options.good, "bad_ref": options.bad}
        commits = first_parent_line(root, good, bad, **refs, run_as=run_as)
        path, text = _config_at(versions, root, bad, options.config)
        on_note(f"configuration: {path} at BAD ({options.bad}, {bad[:12]})")
        config = load_config(Path(path), text=text)
        bench = _one_benchmark(config, options.benchmark)
        resolved = resolve(
            options.given,
            config=config,
            benchmark=bench,
        )
        settings = resolved.values.analysis()
        design, max_runs = _step_runs(options, resolved, on_note)
        n = len(commits) - 1
        on_note(
            f"{n} commits after GOOD on BAD's first-parent line; benchmark {bench.name}; "
            f"about {_log2(n) + 2} comparisons if one commit did it"
        )
        state = Bisection(
            good=options.good,
            bad=options.bad,
            benchmark=bench.name,
            threshold=settings.threshold,
            confidence=settings.confidence,
            metric=settings.metric,
            max_runs=max_runs,
            spread_share=options.spread_share,
            commits=tuple(commits),
            result=None,
            until_decided=design,
        )
        comparer = Comparer(
            versions=versions,
            config=config,
            benchmark=bench,
            settings=settings,
            given=options.given,
            machine=options.machine,
            out_dir=out,
            max_runs=max_runs,
            design=design,
            rebuild=options.rebuild,
            on_note=on_note,
        )
        steps: list[Step] = []

        def on_step(step: Step, commits: Sequence[Commit]) -> None:
            steps.append(step)
            on_note(describe_step(step, commits))
            save(replace(state, steps=tuple(steps)), out, on_save)

        files.make_out_directory(out / "logs")
        save(state, out, on_save)
        try:
            result = search(
                commits,
                comparer.compare,
                spread_share=options.spread_share,
                max_culprits=options.max_culprits,
                max_runs=max_runs,
                on_step=on_step,
                on_leave=comparer.release,
            )
        except BaseException as e:
            reason = getattr(e, "message", None) or type(e).__name__
            with contextlib.suppress(OSError):
                save(replace(state, steps=tuple(steps), stopped=reason), out, on_save)
            raise
        state = replace(state, result=result, steps=result.steps)
        save(state, out, on_save)
        return state


def _step_runs(
    options: BisectOptions, resolved: Resolved, on_note: Callable[[str], None]
) -> tuple[UntilDecided | None, int]:
    """Each step's design (measured until decided, or None: a fixed design topped up) and the
    most runs one comparison may take."""
    runs = resolved.values.runs
    design = step_design(options, resolved)
    if design is not None:
        on_note(
            f"every step measured until decided: {design.min_runs} to {design.max_runs} runs"
            + (f" within {units.clock(design.budget_s * 1e9)}" if design.budget_s else "")
        )
        return design, design.max_runs
    max_runs = options.max_runs or MAX_RUNS_FACTOR * runs
    if max_runs < runs:
        raise UsageError(
            f"--max-runs {max_runs} is below the runs of one comparison ({runs})",
            fix=f"give --max-runs {runs} or more, or fewer --runs",
        )
    return None, max_runs


def _log2(n: int) -> int:
    return max(0, (n - 1).bit_length())


def save(state: Bisection, out: Path, on_save: Callable[[Bisection], None]) -> None:
    """Write ``bisect.json`` into ``out``, then hand ``state`` to ``on_save``."""
    results.write_atomic(out / "bisect.json", json.dumps(state.to_dict(), indent=2) + "\n")
    on_save(state)
