"""``duet demo``: the bundled example end to end.

Two versions of a small C program (``duet_bench/examples/demo/work.c``), the second doing 5 % more
work, measured as a ``command`` benchmark twice: on the machine as it is, and with one busy
process beside it (what a CI agent or a second job does to a 2-CPU runner). The demo prints what
it expected next to what it measured.

The demo holds the machine's measuring lock (:mod:`duet_bench.lock`) from the compiler to its
last run: its compiler and its busy process would otherwise disturb another duet's
measurement, so with ``wait`` they start only once that duet has finished.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from duet_bench import files, units
from duet_bench.defaults import DEFAULT_CROSSOVER, DEMO_RUNS, Crossover
from duet_bench.errors import EnvironmentNotReady
from duet_bench.isolation import Request
from duet_bench.lock import acquire as acquire_lock
from duet_bench.metrics import METRIC_NAMES
from duet_bench.plan import BenchmarkSpec, SideSpec
from duet_bench.report import render, report_of
from duet_bench.report.text import table
from duet_bench.results import ResultsDocument
from duet_bench.results.analysis import AnalysisBlock
from duet_bench.session import MachineOptions, SessionOptions, measure

SOURCE = Path(__file__).parent / "examples" / "demo" / "work.c"


def build(directory: Path) -> tuple[Path, Path]:
    """Compile the two versions of the demo program into ``directory``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise EnvironmentNotReady(
            "the demo compiles a small C program and no C compiler was found",
            fix="install one: sudo apt-get install gcc",
        )
    binaries = []
    # The compiler writes into a directory of our own; the binaries are copied into
    # ``directory`` without following a link planted there (as root under sudo, the results
    # directory is the user's: docs/isolation.md, "What runs as root").
    with tempfile.TemporaryDirectory(prefix="duet-demo-") as private:
        for version in (1, 2):
            built = Path(private) / f"work-v{version}"
            done = subprocess.run(
                [cc, "-O2", f"-DVERSION={version}", "-o", str(built), str(SOURCE)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise EnvironmentNotReady(
                    f"compiling the demo program failed:\n{done.stderr.strip()[-2000:]}",
                    fix="check that the C compiler works: cc --version",
                )
            target = directory / built.name
            try:
                files.write_atomic(target, built.read_bytes(), mode=0o755)
            except OSError as e:
                raise EnvironmentNotReady(
                    f"{target}: could not write the demo program ({e.strerror or e})",
                    fix=files.fix_for(e, "choose another --out, or free disk space"),
                ) from e
            binaries.append(target)
    return binaries[0], binaries[1]


#: The candidate does this much more work: what the demo expects to find.
EXPECTED_RATIO = 1.05
#: The loop is 5% longer, not the whole process (start-up is the same on both sides): an
#: interval that reaches within this much of 1.05 holds the true ratio.
EXPECTED_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Condition:
    """One measurement of the demo: a name and whether a busy process runs beside it."""

    name: str
    busy: bool


CONDITIONS = (
    Condition("the machine as it is", busy=False),
    Condition("one busy process beside it", busy=True),
)


@contextlib.contextmanager
def busy_process(enabled: bool) -> Iterator[None]:
    """One process that spins on no CPU in particular, as a CI agent or a second job would:
    on a 2-CPU machine it must take turns with a measured side."""
    if not enabled:
        yield
        return
    spinner = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def run_demo(
    out: str,
    *,
    runs: int = DEMO_RUNS,
    isolation: Request = "auto",
    progress: bool = True,
    conditions: tuple[Condition, ...] = CONDITIONS,
    wait: bool = False,
    crossover: Crossover = DEFAULT_CROSSOVER,
) -> tuple[list[tuple[Condition, ResultsDocument]], Path]:
    """Build the two versions and measure them under each condition; each condition's results
    and report go to its own directory under ``out``.

    When another duet is measuring on this machine: without ``wait``, refuse
    (:class:`~duet_bench.errors.EnvironmentNotReady`, exit 3) before compiling anything; with
    it, queue behind it."""
    with acquire_lock(wait=wait):
        return _build_and_measure(Path(out), runs, isolation, progress, conditions, crossover)


def _build_and_measure(
    out_dir: Path,
    runs: int,
    isolation: Request,
    progress: bool,
    conditions: tuple[Condition, ...],
    crossover: Crossover,
) -> tuple[list[tuple[Condition, ResultsDocument]], Path]:
    v1, v2 = build(out_dir / "build")
    bench = BenchmarkSpec(
        name="demo-xorshift",
        baseline=SideSpec(kind="command", command=str(v1.resolve())),
        candidate=SideSpec(kind="command", command=str(v2.resolve())),
        runs=runs,
        iterations=12,
        warmup=2,
        timeout_s=30.0,
        crossover=crossover,
    )
    measured = []
    for condition in conditions:
        where = out_dir / ("busy" if condition.busy else "quiet")
        options = SessionOptions(
            out=where / "results.json",
            isolation=isolation,
            machine=MachineOptions(progress=progress),
            config={"command": "demo", "condition": condition.name},
        )
        with busy_process(condition.busy):
            doc = measure([bench], options)
        try:
            files.write_atomic(where / "report.md", render(report_of(doc), "markdown"))
        except OSError as e:
            raise EnvironmentNotReady(
                f"{where / 'report.md'}: could not write the demo's report ({e.strerror or e})",
                fix=files.fix_for(
                    e, "free disk space or make the directory writable, then run the demo again"
                ),
            ) from e
        measured.append((condition, doc))
    return measured, out_dir


def expected_against_measured(measured: list[tuple[Condition, ResultsDocument]]) -> str:
    """The demo's conclusion: per condition, the deciding metric and the other beside it,
    against the known 5% (and a line explaining each miss)."""
    header = ["condition", "metric", "ratio [CI]", "verdict", "expected 1.05: regression"]
    body: list[list[str]] = []
    misses: list[str] = []
    for condition, doc in measured:
        a = doc.benchmarks[0].analysis or AnalysisBlock()
        deciding = a.metric or "wall"
        for key in (deciding, *(k for k in METRIC_NAMES if k != deciding)):
            m = a.metrics.get(key)
            if m is None or m.missing is not None:
                continue
            ratio, lo, hi = m.ratio, m.ci_low, m.ci_high
            verdict = m.verdict or "no verdict"
            found = verdict == "regression" and holds_expected(lo, hi)
            if key == deciding:
                outcome = "detected" if found else "MISSED"
                if not found:
                    misses.append(_miss(condition, doc, verdict))
            else:
                outcome = "(not deciding)"
            body.append(
                [
                    condition.name if key == deciding else "",
                    METRIC_NAMES.get(key, key),
                    _ratio_and_interval(ratio, lo, hi),
                    verdict,
                    outcome,
                ]
            )
    lines = table(header, body, right=set())
    return "\n".join([*lines, *misses]) + "\n"


def _ratio_and_interval(ratio: float | None, lo: float | None, hi: float | None) -> str:
    """The ratio and its interval with the digits that tell them apart (``1.0500 [1.0483,
    1.0518]``, not ``1.05 [1.05, 1.05]``), as every report prints them."""
    if ratio is not None and lo is not None and hi is not None:
        digits = units.telling_digits(ratio, lo, hi)
        return f"{units.sig(ratio, digits)} {units.interval(lo, hi, digits)}"
    return f"{units.ratio(ratio)} {units.interval(lo, hi)}"


def holds_expected(lo: object, hi: object) -> bool:
    """Whether the interval ``[lo, hi]`` reaches within :data:`EXPECTED_TOLERANCE` of 1.05."""
    return (
        isinstance(lo, float)
        and isinstance(hi, float)
        and lo <= EXPECTED_RATIO + EXPECTED_TOLERANCE
        and hi >= EXPECTED_RATIO - EXPECTED_TOLERANCE
    )


def _miss(condition: Condition, doc: ResultsDocument, verdict: str) -> str:
    """One line saying why the deciding metric of ``condition`` did not find the 5%."""
    bench = doc.benchmarks[0]
    a = bench.analysis or AnalysisBlock()
    share = None if a.interference is None else a.interference.share
    lo, hi = a.ci_low, a.ci_high
    shown = units.ratio(a.ratio) if a.ratio is not None else "no ratio"
    why = f"  {condition.name}: the deciding metric said {verdict} at {shown}"
    if verdict == "regression":
        return (
            why + f", but its interval {units.interval(lo, hi)} does not hold 1.05: the host "
            "changed speed between runs more than the runs could average out; run the demo again"
        )
    if a.metric == "wall" and share is not None and share > 0.05:
        return why + (
            f"; other processes delayed a side in {units.share(share)} of iterations and only "
            "wall time was usable"
        )
    return why + (
        f": the machine was noisier than the demo's {len(bench.runs)} runs can resolve; "
        "`duet doctor` names what disturbs it, and more --runs narrow the interval"
    )
