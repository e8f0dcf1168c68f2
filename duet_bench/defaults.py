"""The built-in defaults, the choices of every setting and the names of the settings: the leaf.

Standard library only, and every module may import it (docs/architecture.md, "The leaf"): the
command-line options, the configuration (:mod:`duet_bench.config`), the plan
(:mod:`duet_bench.plan`) and the analysis (:mod:`duet_bench.analysis`) take their defaults and
choices from here, and :mod:`duet_bench.settings` resolves them per benchmark. The metric choices
and their default live in :mod:`duet_bench.metrics` (also standard library only), beside the
metrics they name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

# --------------------------------------------------------------------------------------------
# The choices, as types and as the tuples click.Choice and the validation take

#: What one side is: a shell command, a python callable, or a native program with a barrier.
Kind: TypeAlias = Literal["command", "python", "native"]
KINDS: tuple[Kind, ...] = ("command", "python", "native")
#: ``duet``: both sides at once on a core pair; ``sequential``: one side after the other.
Method: TypeAlias = Literal["duet", "sequential"]
METHODS: tuple[Method, ...] = ("duet", "sequential")
#: Which core each side runs on (docs/statistics.md, method 1b): ``iteration`` crosses the sides
#: over the two CPUs at every iteration, ``run`` keeps them for a run and swaps them between runs.
Crossover: TypeAlias = Literal["iteration", "run"]
CROSSOVERS: tuple[Crossover, ...] = ("iteration", "run")
Isolation: TypeAlias = Literal["auto", "cgroup", "affinity"]
ISOLATIONS: tuple[Isolation, ...] = ("auto", "cgroup", "affinity")
#: The bootstrap interval methods (``--interval``).
Interval: TypeAlias = Literal["percentile", "expanded", "bca", "basic", "studentized"]
INTERVALS: tuple[Interval, ...] = ("percentile", "expanded", "bca", "basic", "studentized")
#: ``--fail-on``: which verdicts fail a CI job (:func:`duet_bench.analysis.fails`).
FailOn: TypeAlias = Literal["regression", "inconclusive", "any", "never"]
FAIL_ON: tuple[FailOn, ...] = ("regression", "inconclusive", "any", "never")
#: The report formats (:func:`duet_bench.report.render`).
Format: TypeAlias = Literal["text", "markdown", "json", "junit", "openmetrics", "html"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json", "junit", "openmetrics", "html")
#: The formats of the report a command that writes results prints (html: ``duet report``).
RESULTS_FORMATS: tuple[Format, ...] = ("text", "markdown", "json", "junit", "openmetrics")

# --------------------------------------------------------------------------------------------
# The built-in defaults (the method's: docs/statistics.md), each written once

#: The runs of a fixed design when ``--runs`` is given without a number of its own (bisect's
#: rounds); ``duet run`` and ``duet compare`` measure until decided unless ``runs`` is set.
DEFAULT_RUNS = 10
#: Measuring until decided, the default design (docs/statistics.md, method 2b, "The default
#: design"). The first look: the method gives no interval below 5 runs.
DEFAULT_MIN_RUNS = 5
#: The last look unless ``--max-runs`` says otherwise: a 5% change and A/A decide after a
#: median of 5 runs; at 80 a 1% change is found at threshold 0.5% in 99.2% of trials on the
#: noisiest pool of the study (60: 95.5%, 40: 82.5%).
DEFAULT_MAX_RUNS = 80
#: The machine time of the default design (none of ``runs``, ``max_runs``, ``budget`` set),
#: shared by a suite's undecided benchmarks: what a CI job can spend on measuring.
DEFAULT_BUDGET_S = 600.0
DEFAULT_ITERATIONS = 30
DEFAULT_WARMUP = 2
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_METHOD: Method = "duet"
#: The default follows the prototype (docs/accuracy.md, "The prototype"): about 10x narrower
#: than crossing over between runs.
DEFAULT_CROSSOVER: Crossover = "iteration"
DEFAULT_ISOLATION: Isolation = "auto"
DEFAULT_MAX_FAILURES = 2
#: ``pids.max`` of each side's cgroup (``--pids-limit``, ``pids_limit``): a fork bomb stops there
#: in seconds; a benchmark that needs more processes raises it.
DEFAULT_PIDS_MAX = 4096
DEFAULT_CONFIDENCE = 0.99
DEFAULT_THRESHOLD = 0.02
DEFAULT_REPS = 10_000
DEFAULT_SEED = 0
DEFAULT_INTERVAL: Interval = "expanded"
DEFAULT_WINSORIZE = True
#: Runs per condition of ``duet demo`` (12 iterations of a ~60 ms process each). At 8 runs a host
#: whose vCPUs change speed for seconds at a time (per-run ratios from 1.006 to 1.083 on a quiet
#: VM) left the demo's 5% inconclusive once in CI; 16 took 39 s for both conditions.
DEMO_RUNS = 16

#: The fewest runs a benchmark may have: the ratio needs two run means to vary at all.
MIN_RUNS = 2
#: From this many successful runs on, the analysis gives an interval.
INTERVAL_RUNS = 5

# --------------------------------------------------------------------------------------------
# The names of the settings

#: The settings of the plan of one benchmark (:class:`duet_bench.plan.BenchmarkSpec`).
RUN_KEYS = (
    "runs",
    "iterations",
    "warmup",
    "timeout_s",
    "memory_limit_bytes",
    "pids_max",
    "method",
    "crossover",
)
#: The settings of the analysis (:class:`duet_bench.analysis.AnalysisSettings`).
ANALYSIS_KEYS = ("confidence", "threshold", "reps", "seed", "interval", "winsorize", "metric")
#: Measuring until decided (docs/statistics.md, method 2b): unset (None) for a fixed design of
#: ``runs``; ``max_runs`` or ``budget_s`` set measures until the verdict is decided.
STOPPING_KEYS = ("min_runs", "max_runs", "budget_s")
#: What a ``[[benchmark]]`` table may set.
BENCHMARK_KEYS = (
    "runs",
    "min_runs",
    "max_runs",
    "budget_s",
    "iterations",
    "warmup",
    "timeout_s",
    "memory_limit_bytes",
    "pids_max",
    "threshold",
    "confidence",
    "method",
    "crossover",
    "metric",
)
#: What the suite table may set besides :data:`BENCHMARK_KEYS`: settings of one invocation.
SUITE_ONLY_KEYS = ("isolation", "max_failures")

#: Field names that differ from the key in the configuration file (and from the parameter
#: of the command-line option).
FILE_KEYS: Mapping[str, str] = {
    "timeout_s": "timeout",
    "memory_limit_bytes": "memory_limit",
    "pids_max": "pids_limit",
    "budget_s": "budget",
}

#: The settings whose None, given on the command line, is a value: *no limit*
#: (``--memory-limit none``, ``--pids-limit none``), not "not given".
NO_LIMIT_KEYS = ("memory_limit_bytes", "pids_max")


class Unset(enum.Enum):
    """A ``[[benchmark]]`` table's ``pids_limit`` that the table does not give: there None is a
    value (``pids_limit = "none"``, no limit) and cannot mean "the suite's"."""

    UNSET = "unset"


#: See :class:`Unset`.
UNSET: Final = Unset.UNSET

#: :data:`BENCHMARK_KEYS` as the configuration file spells them (``timeout``, ``memory_limit``):
#: the settings a ``[[suite]]`` entry gives to every benchmark it finds.
BENCHMARK_FILE_KEYS = tuple(FILE_KEYS.get(k, k) for k in BENCHMARK_KEYS)
