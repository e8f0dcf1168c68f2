"""The accuracy study of benchmarks/results/README.md (the duet paper's section 4, repeated here).

For every workload (``benchmarks/workloads/``: integer, float, cache, memory, native C), quiet
and under the reference noise (``benchmarks/noise/``), with ``R`` runs x ``I`` iterations:

- ``aa``: A/A, duet and the sequential method (same R: the same CPU time, twice the wall time),
  repeated ``--reps`` times with fresh runs: relative 99% CI widths of duet, shuffled duet and
  sequential, the accuracy gain, the sync gain, whether the intervals contain 1, barrier skew;
- ``ab2x``: A/B with a 2.00x operation count, without and with ``--fill``: the measured ratio;
- ``slow``: injected slowdowns (1%, 2%, 5%), ``--trials`` fresh measurements each: the detection
  rate of duet and sequential at 99% (the A/A cells give the false-positive rate);
- ``r30``: the 2% slowdown at R = 30 (the target's setting), duet and sequential, on the first
  ``--slow-workloads`` workload under noise;
- ``asym``: A/A under the asymmetric noise (one CPU only), the negative control;
- ``py`` / ``cmd``: the python-worker workloads and a command-mode benchmark (A/A and 2x);
- ``tools``: the same A/A and 2% pairs with ``pyperf command`` + ``compare_to`` and
  ``hyperfine --export-json`` + Welch's t-test, skipped with a message when a tool is missing.
- ``calib``: ``duet calibrate --compare-sequential`` per workload and condition, as a user runs
  it (``--calib-runs`` runs): the method it recommends beside the one the ``aa`` repetitions
  found narrower.

Every cell is one ``duet_bench.session.measure`` call whose results document is kept gzipped under
``benchmarks/results/raw/``; a cell whose file exists is not measured again (``--resume`` is
the default: delete a file to re-measure it). The summary ``benchmarks/results/accuracy.json``
and the plots are recomputed from the raw files at the end (``--summarize-only`` does just that).

Run: ``python benchmarks/accuracy.py [--quick] [--iteration-ms 20] [--reps 5] [--only aa,ab2x]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import noise  # noqa: E402
import workloads  # noqa: E402

from duet_bench import interrupts  # noqa: E402
from duet_bench.errors import Interrupted  # noqa: E402
from duet_bench.lock import acquire  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.session import MachineOptions, SessionOptions, measure  # noqa: E402
from duet_stats.ratio import duet_ratio  # noqa: E402
from duet_stats.sequential import sequential_ci, shuffled_ratio  # noqa: E402

RESULTS = HERE / "results"
CONFIDENCE = 0.99
BOOT_REPS = 10_000
CONDITIONS = ("quiet", "noise")
SLOWDOWNS = (0.01, 0.02, 0.05)
EXPERIMENTS = ("aa", "ab2x", "slow", "r30", "asym", "py", "cmd", "tools", "calib")
PY_KINDS = {"integer": "integer", "float": "floating", "cache": "cache", "memory": "memory"}


def log(text: str) -> None:
    print(
        f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}] {text}",
        file=sys.stderr,
        flush=True,
    )


def seed_of(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


# -- one cell --------------------------------------------------------------------------------


#: The "busy" condition's process: a pure user-space spin, started outside duet and not pinned,
#: that stops when its parent is gone or after its bound (argv[1], seconds): never left behind.
BUSY_CODE = (
    "import os, sys, time\n"
    "parent, end = os.getppid(), time.monotonic() + float(sys.argv[1])\n"
    "while os.getppid() == parent and time.monotonic() < end:\n"
    "    for _ in range(100_000):\n"
    "        pass\n"
)


@contextlib.contextmanager
def busy_process(bound_s: float) -> Iterator[dict[str, Any]]:
    """One busy process beside the measurement, free to run on any CPU (the scheduler, not
    duet, decides which side it preempts)."""
    argv = [sys.executable, "-c", BUSY_CODE, f"{bound_s:g}"]
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(
                proc.pid, os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
            )
        yield {"busy_pid": proc.pid, "busy_command": [*argv[:2], "<BUSY_CODE>", argv[3]]}
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def condition(cond: str, key: str, bound_s: float) -> Iterator[dict[str, Any]]:
    """Quiet, the reference noise (every CPU), the asymmetric noise (CPU 1 only) or one
    unpinned busy process (``busy``)."""
    info: dict[str, Any] = {"condition": cond}
    if cond == "quiet":
        yield info
        return
    if cond == "busy":
        with busy_process(bound_s) as busy:
            yield {**info, **busy}
        return
    asym = 1 if cond == "asym" else None
    with noise.Noise(duration=bound_s, seed=seed_of(key), asymmetric=asym) as gen:
        info["noise"] = gen.info
        yield info


def raw_path(key: str) -> Path:
    return RESULTS / "raw" / (key.replace("/", "__") + ".json.gz")


def store_raw(key: str, doc: dict[str, Any]) -> Path:
    """Write one finished cell (gzipped JSON) where the summary and ``--resume`` find it."""
    path = raw_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 9))
    return path


def keep_failed(key: str, partial: Path, reason: str) -> None:
    """Keep what a failed or interrupted cell had measured (duet writes its results file after
    every run) under ``raw/failed/``: not read by the summary, and not a finished cell, so the
    next run measures the cell again."""
    if not partial.exists():
        return
    try:
        measured: Any = json.loads(partial.read_text())
    except ValueError:
        measured = partial.read_text()
    name = f"{key.replace('/', '__')}.{time.strftime('%Y%m%dT%H%M%S')}.json.gz"
    dest = RESULTS / "raw" / "failed" / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    doc = {"key": key, "reason": reason, "results": measured}
    dest.write_bytes(gzip.compress(json.dumps(doc).encode(), 9))
    log(f"{key}: what it measured before it failed is kept in {dest}")


def cell_meta(
    key: str, info: dict[str, Any], load_before: list[float], started: float
) -> dict[str, Any]:
    """The cell's own record: its key, condition (noise seed and timetable), load, duration."""
    return {
        "key": key,
        **info,
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
        "seconds": round(time.time() - started, 1),
    }


def run_cell(
    key: str,
    cond: str,
    specs: list[BenchmarkSpec],
    *,
    bound_s: float,
) -> dict[str, Any]:
    """Measure ``specs`` under ``cond`` (unless already on disk); return the stored document."""
    path = raw_path(key)
    if path.exists():
        return json.loads(gzip.decompress(path.read_bytes()))
    load_before = list(os.getloadavg())
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        try:
            with condition(cond, key, bound_s) as info:
                measure(
                    specs,
                    SessionOptions(
                        out=out,
                        machine=MachineOptions(plan_seed=seed_of(key), progress=False),
                        config={"cell": key},
                    ),
                )
        except BaseException as e:
            keep_failed(key, out, f"{type(e).__name__}: {e}")
            raise
        doc = json.loads(out.read_text())
    doc["accuracy_cell"] = cell_meta(key, info, load_before, started)
    store_raw(key, doc)
    log(f"{key}: {doc['accuracy_cell']['seconds']} s")
    return doc


def native(kind: str, ops: int, fill: bool = False) -> SideSpec:
    return SideSpec(kind="native", command=workloads.command(kind, ops, fill=fill))


def spec(
    name: str, a: SideSpec, b: SideSpec, runs: int, iterations: int, method: str = "duet"
) -> BenchmarkSpec:
    return BenchmarkSpec(
        name=name,
        baseline=a,
        candidate=b,
        runs=runs,
        iterations=iterations,
        warmup=2,
        timeout_s=120.0,
        method=method,  # type: ignore[arg-type]
    )


# -- analysis of one benchmark ---------------------------------------------------------------


def arrays(bench: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    ok = [r for r in bench["runs"] if r["status"] == "ok"]
    a = np.array([r["baseline"]["iterations_ns"] for r in ok], dtype=float)
    b = np.array([r["candidate"]["iterations_ns"] for r in ok], dtype=float)
    return a, b


def skews(bench: dict[str, Any]) -> list[float]:
    """|start(candidate) - start(baseline)| of every measured iteration of a duet benchmark (µs)."""
    out: list[float] = []
    for r in bench["runs"]:
        sa = r["baseline"].get("iteration_start_ns")
        sb = r["candidate"].get("iteration_start_ns")
        if r["status"] == "ok" and sa and sb:
            out += [abs(x - y) / 1e3 for x, y in zip(sa, sb, strict=False)]
    return out


def analyse(bench: dict[str, Any], key: str) -> dict[str, Any]:
    a, b = arrays(bench)
    rng = np.random.default_rng(seed_of(key + bench["name"]))
    out: dict[str, Any] = {"runs": int(a.shape[0]), "iterations": int(a.shape[1])}
    if bench.get("method") == "sequential":
        s = sequential_ci(a, b, confidence=CONFIDENCE, reps=BOOT_REPS, rng=rng)
        out.update(
            ratio=s.ratio,
            low=s.ratio_ci_low,
            high=s.ratio_ci_high,
            width=s.relative_width,
            mean_ms=(s.baseline_mean_ns + s.candidate_mean_ns) / 2e6,
        )
    else:
        d = duet_ratio(a, b, confidence=CONFIDENCE, reps=BOOT_REPS, rng=rng)
        sh = shuffled_ratio(a, b, confidence=CONFIDENCE, reps=BOOT_REPS, rng=rng)
        la, lb = np.log(a).ravel(), np.log(b).ravel()
        out.update(
            ratio=d.ratio,
            low=d.ci_low,
            high=d.ci_high,
            width=(d.ci_high - d.ci_low) if d.ci_low is not None else None,
            shuffled_width=sh.width,
            correlation=float(np.corrcoef(la, lb)[0, 1]),
            mean_ms=float((a.mean() + b.mean()) / 2e6),
        )
        sk = skews(bench)
        if sk:
            out["skew_us"] = {
                "median": float(np.median(sk)),
                "p99": float(np.percentile(sk, 99)),
                "max": float(np.max(sk)),
            }
    if out.get("low") is not None:
        out["contains_1"] = bool(out["low"] <= 1.0 <= out["high"])
        out["detected"] = bool(out["low"] > 1.0)
    return out


# -- the experiments -------------------------------------------------------------------------


def calibrate_ops(kinds: tuple[str, ...], iteration_ms: float, path: Path) -> dict[str, int]:
    """Op counts that make one iteration of each workload last ``iteration_ms`` alone on CPU 0,
    measured now and kept in ``path`` with the load and the time (this study and the metric
    study read them back)."""
    ops = {kind: workloads.calibrate(kind, iteration_ms, cpu=0) for kind in kinds}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "iteration_ms": iteration_ms,
                "ops": ops,
                "load_average": list(os.getloadavg()),
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        )
    )
    log(f"calibrated {iteration_ms} ms: {ops}")
    return ops


class Driver:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ops: dict[str, int] = {}
        self.cells: list[str] = []

    def calibrate(self) -> None:
        path = RESULTS / "calibration.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        if stored.get("iteration_ms") == self.args.iteration_ms:
            self.ops = stored["ops"]
            return
        self.ops = calibrate_ops(workloads.KINDS, self.args.iteration_ms, path)

    def bound(self, runs: int, iterations: int, factor: float = 1.0) -> float:
        """A generous upper bound of one cell's duration (the noise generator's lifetime)."""
        per_iter = self.args.iteration_ms / 1e3 * factor
        return 120 + 6 * runs * ((iterations + 2) * per_iter + 0.5)

    def cell(self, key: str, cond: str, specs: list[BenchmarkSpec], **kw: Any) -> None:
        self.cells.append(key)
        try:
            run_cell(key, cond, specs, **kw)
        except Interrupted:  # asked to stop: the cell is kept as failed, the study ends
            raise
        except Exception as e:  # a failed cell is reported, the others still run
            log(f"{key}: FAILED: {type(e).__name__}: {e}")

    def aa(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for rep in range(self.args.reps):
            for cond in CONDITIONS:
                for kind in self.args.workloads:
                    ops = self.ops[kind]
                    x = native(kind, ops)
                    self.cell(
                        f"aa/{kind}/{cond}/rep{rep}",
                        cond,
                        [spec("duet", x, x, R, I), spec("sequential", x, x, R, I, "sequential")],
                        bound_s=self.bound(R, I, 3),
                    )

    def ab2x(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for rep in range(self.args.reps_2x):
            for cond in CONDITIONS:
                for kind in self.args.workloads:
                    ops = self.ops[kind]
                    self.cell(
                        f"ab2x/{kind}/{cond}/rep{rep}",
                        cond,
                        [
                            spec("nofill", native(kind, ops), native(kind, 2 * ops), R, I),
                            spec(
                                "fill",
                                native(kind, ops, True),
                                native(kind, 2 * ops, True),
                                R,
                                I,
                            ),
                        ],
                        bound_s=self.bound(R, I, 4),
                    )

    def slow(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for trial in range(self.args.trials):
            for pct in SLOWDOWNS:
                for cond in self.args.slow_conditions:
                    for kind in self.args.slow_workloads:
                        ops = self.ops[kind]
                        a, b = native(kind, ops), native(kind, round(ops * (1 + pct)))
                        self.cell(
                            f"slow/{kind}/{cond}/{round(pct * 100)}pct/trial{trial}",
                            cond,
                            [
                                spec("duet", a, b, R, I),
                                spec("sequential", a, b, R, I, "sequential"),
                            ],
                            bound_s=self.bound(R, I, 3),
                        )

    def r30(self) -> None:
        R, I = 30, self.args.iterations  # noqa: E741
        for trial in range(self.args.trials_r30):
            for kind in self.args.slow_workloads[:1]:
                ops = self.ops[kind]
                a, b = native(kind, ops), native(kind, round(ops * 1.02))
                self.cell(
                    f"r30/{kind}/noise/trial{trial}",
                    "noise",
                    [
                        spec("duet", a, b, R, I),
                        spec("sequential", a, b, R, I, "sequential"),
                        # The false-positive rate at the same R, I and confidence.
                        spec("aa", a, a, R, I),
                    ],
                    bound_s=self.bound(R, I, 4),
                )

    def asym(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for rep in range(max(1, self.args.reps // 2)):
            for kind in self.args.slow_workloads:
                x = native(kind, self.ops[kind])
                self.cell(
                    f"asym/{kind}/asym/rep{rep}",
                    "asym",
                    [spec("duet", x, x, R, I), spec("sequential", x, x, R, I, "sequential")],
                    bound_s=self.bound(R, I, 3),
                )

    def py(self) -> None:
        R, I = self.args.py_runs, self.args.py_iterations  # noqa: E741
        sys_path = (str(HERE / "workloads"),)

        def side(kind: str, scale: float) -> SideSpec:
            fn = PY_KINDS[kind]
            return SideSpec(
                kind="python",
                interpreter=sys.executable,
                callable=f"pyworkloads:{fn}",
                setup=f"pyworkloads:setup_{fn}",
                sys_path=sys_path,
                env={"DUET_WORKLOAD_SCALE": str(scale)},
            )

        for cond in CONDITIONS:
            for kind in self.args.workloads:
                self.cell(
                    f"py/{kind}/{cond}/rep0",
                    cond,
                    [
                        spec("aa", side(kind, 1), side(kind, 1), R, I),
                        spec("2x", side(kind, 1), side(kind, 2), R, I),
                    ],
                    bound_s=self.bound(R, I, 6) + 60,
                )

    def cmd(self) -> None:
        R, I = self.args.py_runs, self.args.py_iterations  # noqa: E741
        ops = self.ops["integer"]

        def side(n: int) -> SideSpec:
            return SideSpec(kind="command", command=workloads.command("integer", n, once=True))

        for cond in CONDITIONS:
            self.cell(
                f"cmd/integer/{cond}/rep0",
                cond,
                [
                    spec("aa", side(ops), side(ops), R, I),
                    spec("2x", side(ops), side(2 * ops), R, I),
                ],
                bound_s=self.bound(R, I, 4),
            )

    def tools(self) -> None:
        """pyperf and hyperfine on the A/A and 2% pairs of the integer workload."""
        have_pyperf = _module_available("pyperf")
        have_hyperfine = shutil.which("hyperfine") is not None
        if not have_pyperf:
            log("tools: pyperf is not installed: skipping it (pip install pyperf)")
        if not have_hyperfine:
            log("tools: hyperfine is not installed: skipping it (apt-get install hyperfine)")
        n = self.args.runs * self.args.iterations // 10  # values per version
        for rep, cond, (pair, scale), (tool, ok, fn) in itertools.product(
            range(self.args.reps_tools),
            CONDITIONS,
            (("aa", 1.0), ("2pct", 1.02)),
            (("pyperf", have_pyperf, _pyperf), ("hyperfine", have_hyperfine, _hyperfine)),
        ):
            if not ok:
                continue
            # Repetition 0 keeps the key the first measurements were stored under.
            key = f"tools/{tool}/{cond}/{pair}" + (f"/rep{rep}" if rep else "")
            path = raw_path(key)
            self.cells.append(key)
            if path.exists():
                continue
            ops = self.ops["integer"]
            a = workloads.command("integer", ops, once=True)
            b = workloads.command("integer", round(ops * scale), once=True)
            load_before = list(os.getloadavg())
            started = time.time()
            with condition(cond, key, 900) as info:
                res = fn(a, b, n)
            # The tools' cells keep their record at the top level (as the first ones were).
            store_raw(key, {**res, **cell_meta(key, info, load_before, started)})
            log(f"{key}: {res.get('verdict')} width {res.get('width')}")

    def calib(self) -> None:
        """``duet calibrate --compare-sequential`` as a user runs it, per workload and condition.

        Which method does the calibration recommend, and is it the one the A/A repetitions
        (``aa``) found narrower? The command runs as a child process exactly as a user types it,
        with ``DUET_LOCK`` pointing at a private lock file: this script already holds the
        machine's measuring lock for the whole experiment, and a child taking the same lock
        would wait for its own parent.
        """
        R, I = self.args.calib_runs, self.args.iterations  # noqa: E741
        for rep, cond, kind in itertools.product(
            range(self.args.reps_calib), CONDITIONS, self.args.workloads
        ):
            key = f"calib/{kind}/{cond}/rep{rep}"
            self.cells.append(key)
            if raw_path(key).exists():
                continue
            argv = [
                *("calibrate", "--native", "--compare-sequential", "--format", "json"),
                *("--command", workloads.command(kind, self.ops[kind])),
                *("--runs", str(R), "--iterations", str(I), "-q"),
                *("--plan-seed", str(seed_of(key) % 2**31)),
            ]
            load_before = list(os.getloadavg())
            started = time.time()
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "calibration-results.json"
                env = {**os.environ, "DUET_LOCK": str(Path(tmp) / "duet.lock")}
                try:
                    with condition(cond, key, 2 * self.bound(R, I, 3)) as info:
                        proc = subprocess.run(
                            [sys.executable, "-m", "duet_bench", *argv, "--out", str(out)],
                            capture_output=True,
                            text=True,
                            env=env,
                            check=False,
                        )
                except BaseException as e:
                    keep_failed(key, out, f"{type(e).__name__}: {e}")
                    raise
                if proc.returncode != 0:
                    reason = f"duet calibrate exited {proc.returncode}: {proc.stderr[-2000:]}"
                    log(f"{key}: FAILED: {reason}")
                    keep_failed(key, out, reason)
                    continue
                results = json.loads(out.read_text())
            doc = {
                "calibration": json.loads(proc.stdout),
                "results": results,
                "accuracy_cell": {
                    **cell_meta(key, info, load_before, started),
                    "argv": ["duet", *argv],
                },
            }
            store_raw(key, doc)
            log(
                f"{key}: recommends {doc['calibration']['method']['pays']}, accuracy gain "
                f"{doc['calibration'].get('accuracy_gain')}, {doc['accuracy_cell']['seconds']} s"
            )


def _module_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def welch(a: list[float], b: list[float]) -> dict[str, Any]:
    """Welch's t-test (as hyperfine's scripts/welch_ttest.py) and the 99% Welch interval of the
    difference of means, relative to the mean of all values."""
    from scipy import duet_stats as st

    x, y = np.asarray(a), np.asarray(b)
    t, p = st.ttest_ind(x, y, equal_var=False)
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    half = st.t.ppf(0.5 + CONFIDENCE / 2, df) * np.sqrt(va + vb)
    mean = np.concatenate([x, y]).mean()
    return {
        "p_value": float(p),
        "t": float(t),
        "ratio": float(y.mean() / x.mean()),
        "width": float(2 * half / mean),
        "significant": bool(p < 1 - CONFIDENCE),
        "detected": bool(p < 1 - CONFIDENCE and y.mean() > x.mean()),
        "n": [len(x), len(y)],
    }


def _pyperf(a: str, b: str, n: int) -> dict[str, Any]:
    import pyperf

    with tempfile.TemporaryDirectory() as tmp:
        files = []
        procs = max(5, n // 3)
        for name, cmd in (("a", a), ("b", b)):
            out = Path(tmp) / f"{name}.json"
            subprocess.run(
                [
                    *(sys.executable, "-m", "pyperf", "command", "--quiet", "-p", str(procs)),
                    *("-n", "3", "-w", "1", "-o", str(out), "--", *cmd.split()),
                ],
                check=True,
                capture_output=True,
            )
            files.append(out)
        cmp = subprocess.run(
            [sys.executable, "-m", "pyperf", "compare_to", str(files[0]), str(files[1])],
            capture_output=True,
            text=True,
            check=False,
        )
        va = pyperf.Benchmark.load(str(files[0])).get_values()
        vb = pyperf.Benchmark.load(str(files[1])).get_values()
    res = welch(list(va), list(vb))
    text = cmp.stdout.strip()
    res["compare_to"] = text
    significant = "not significant" not in text.lower()
    res["verdict"] = text.splitlines()[-1] if text else "no output"
    res["pyperf_significant"] = significant
    res["command"] = f"pyperf command -p {procs} -n 3 -w 1 -o X.json -- CMD; pyperf compare_to"
    res["values_a"], res["values_b"] = list(va), list(vb)
    return res


def _hyperfine(a: str, b: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "h.json"
        subprocess.run(
            [
                *("hyperfine", "-N", "--style", "none", "--warmup", "2", "--runs", str(n)),
                *("--export-json", str(out), a, b),
            ],
            check=True,
            capture_output=True,
        )
        data = json.loads(out.read_text())
    ta, tb = (r["times"] for r in data["results"])
    res = welch(ta, tb)
    res["verdict"] = "significant" if res["significant"] else "not significant"
    res["command"] = f"hyperfine -N --warmup 2 --runs {n} --export-json X.json A B + Welch"
    res["values_a"], res["values_b"] = ta, tb
    return res


# -- summary ---------------------------------------------------------------------------------


def load_raw() -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted((RESULTS / "raw").glob("*.json.gz")):
        out[p.name[: -len(".json.gz")].replace("__", "/")] = json.loads(
            gzip.decompress(p.read_bytes())
        )
    return out


def med_range(values: list[float]) -> dict[str, Any] | None:
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": float(np.median(v)), "min": float(min(v)), "max": float(max(v)), "n": len(v)}


def summarize(raw: dict[str, dict[str, Any]]) -> dict[str, Any]:
    cells: dict[str, dict[str, Any]] = {}
    for key, doc in raw.items():
        if key.startswith("tools/"):
            cells[key] = {k: v for k, v in doc.items() if not k.startswith("values_")}
            continue
        if key.startswith("calib/"):
            cells[key] = _calib_cell(doc)
            continue
        meta = doc.get("accuracy_cell", {})
        entry: dict[str, Any] = {
            "load_average_before": meta.get("load_average_before"),
            "load_average_after": meta.get("load_average_after"),
            "seconds": meta.get("seconds"),
        }
        for bench in doc["benchmarks"]:
            try:
                entry[bench["name"]] = analyse(bench, key)
            except (ValueError, IndexError) as e:
                entry[bench["name"]] = {"error": str(e)}
        cells[key] = entry

    def pick(prefix: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in cells.items() if k.startswith(prefix)}

    per: dict[str, dict[str, Any]] = {}
    kinds = sorted({k.split("/")[1] for k in cells if k.startswith(("aa/", "ab2x/", "slow/"))})
    for kind in kinds:
        for cond in (*CONDITIONS, "asym"):
            aa = [v for k, v in pick(f"aa/{kind}/{cond}/").items()] + [
                v for k, v in pick(f"asym/{kind}/{cond}/").items()
            ]
            ab = list(pick(f"ab2x/{kind}/{cond}/").values())
            if not aa and not ab and not pick(f"slow/{kind}/{cond}/"):
                continue
            d = [c["duet"] for c in aa if "width" in c.get("duet", {})]
            s = [c["sequential"] for c in aa if "width" in c.get("sequential", {})]
            dw = med_range([x["width"] for x in d])
            sw = med_range([x["width"] for x in s])
            gains = [
                y["width"] / x["width"] for x, y in zip(d, s, strict=False) if x["width"] and y
            ]
            row: dict[str, Any] = {
                "duet_width": dw and dw["median"],
                "duet_width_range": dw,
                "shuffled_width": (m := med_range([x["shuffled_width"] for x in d]))
                and m["median"],
                "shuffled_width_range": m,
                "sequential_width": sw and sw["median"],
                "sequential_width_range": sw,
                "gain": float(np.median(gains)) if gains else None,
                "gain_range": med_range(gains),
                "sync_gain": float(np.median([x["shuffled_width"] / x["width"] for x in d]))
                if d
                else None,
                "aa_contains_1_duet": [sum(x["contains_1"] for x in d), len(d)],
                "aa_contains_1_sequential": [sum(x["contains_1"] for x in s), len(s)],
                "correlation": med_range([x["correlation"] for x in d]),
                "skew_us_median": med_range([x["skew_us"]["median"] for x in d if "skew_us" in x]),
                "skew_us_p99": med_range([x["skew_us"]["p99"] for x in d if "skew_us" in x]),
                "load_average": med_range(
                    [c["load_average_before"][0] for c in aa if c.get("load_average_before")]
                ),
            }
            for variant in ("nofill", "fill"):
                rs = [c[variant] for c in ab if "ratio" in c.get(variant, {})]
                row["ratio_2x" if variant == "nofill" else "ratio_2x_fill"] = (
                    float(np.median([x["ratio"] for x in rs])) if rs else None
                )
                row[f"ratio_2x_{variant}_all"] = [
                    [x["ratio"], x["low"], x["high"]] for x in rs if x.get("low") is not None
                ]
                row[f"skew_2x_{variant}_us"] = med_range(
                    [x["skew_us"]["median"] for x in rs if "skew_us" in x]
                )
                row[f"skew_2x_{variant}_p99_us"] = med_range(
                    [x["skew_us"]["p99"] for x in rs if "skew_us" in x]
                )
            slow: dict[str, Any] = {}
            for pct in SLOWDOWNS:
                p = round(pct * 100)
                trials = list(pick(f"slow/{kind}/{cond}/{p}pct/").values())
                dd = [t["duet"]["detected"] for t in trials if "detected" in t.get("duet", {})]
                ss = [
                    t["sequential"]["detected"]
                    for t in trials
                    if "detected" in t.get("sequential", {})
                ]
                if not dd and not ss:
                    continue
                slow[f"{p}%"] = {
                    "detect_duet": sum(dd) / len(dd) if dd else None,
                    "detect_sequential": sum(ss) / len(ss) if ss else None,
                    "trials": [len(dd), len(ss)],
                    "false_positive_duet": (1 - sum(x["contains_1"] for x in d) / len(d))
                    if d
                    else None,
                    "false_positive_sequential": (1 - sum(x["contains_1"] for x in s) / len(s))
                    if s
                    else None,
                    "ratio_duet": med_range(
                        [t["duet"]["ratio"] for t in trials if "ratio" in t.get("duet", {})]
                    ),
                    "width_duet": med_range(
                        [t["duet"]["width"] for t in trials if "width" in t.get("duet", {})]
                    ),
                    "width_sequential": med_range(
                        [
                            t["sequential"]["width"]
                            for t in trials
                            if "width" in t.get("sequential", {})
                        ]
                    ),
                }
            if slow:
                row["slowdowns"] = slow
            per.setdefault(kind, {})[cond] = row
    r30: dict[str, Any] = {}
    for kind in kinds:
        trials = list(pick(f"r30/{kind}/").values())
        if trials:
            dd = [t["duet"]["detected"] for t in trials if "detected" in t.get("duet", {})]
            ss = [
                t["sequential"]["detected"] for t in trials if "detected" in t.get("sequential", {})
            ]
            aa = [t["aa"]["contains_1"] for t in trials if "contains_1" in t.get("aa", {})]
            r30[kind] = {
                "detect_duet": sum(dd) / len(dd) if dd else None,
                # A/A at R = 30: the share of 99% intervals that exclude 1 (either side).
                "false_positive_duet": (len(aa) - sum(aa)) / len(aa) if aa else None,
                "aa_trials": len(aa),
                "detect_sequential": sum(ss) / len(ss) if ss else None,
                "trials": len(trials),
                "width_duet": med_range([t["duet"].get("width") for t in trials]),
                "width_sequential": med_range([t["sequential"].get("width") for t in trials]),
                "ratio_duet": med_range([t["duet"].get("ratio") for t in trials]),
            }
    return {
        "schema": "duet-accuracy/1",
        "confidence": CONFIDENCE,
        "bootstrap_reps": BOOT_REPS,
        "calibration": json.loads((RESULTS / "calibration.json").read_text())
        if (RESULTS / "calibration.json").exists()
        else None,
        "environment": _environment(raw),
        "workloads": per,
        "r30_2pct_noise": r30,
        "python_worker": {k: v for k, v in cells.items() if k.startswith("py/")},
        "command": {k: v for k, v in cells.items() if k.startswith("cmd/")},
        "tools": {k: v for k, v in cells.items() if k.startswith("tools/")},
        "tools_summary": _tools_summary(cells),
        "calibrate": _calib_verdicts(cells, per),
        "cells": {
            k: v
            for k, v in cells.items()
            if k.startswith(("aa/", "ab2x/", "slow/", "r30/", "asym/"))
        },
    }


def _tools_summary(cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """pyperf and hyperfine over their repetitions: how often each called the pair significant."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for key, c in sorted(cells.items()):
        if key.startswith("tools/"):
            groups.setdefault("/".join(key.split("/")[1:4]), []).append(c)
    out: dict[str, Any] = {}
    for group, cs in groups.items():
        tool = group.split("/")[0]
        own = [
            bool(c.get("pyperf_significant")) if tool == "pyperf" else bool(c.get("significant"))
            for c in cs
        ]
        out[group] = {
            "repetitions": len(cs),
            "tool_significant": sum(own),
            "welch_significant": sum(bool(c.get("significant")) for c in cs),
            "welch_detected_slower": sum(bool(c.get("detected")) for c in cs),
            "ratio": med_range([c.get("ratio") for c in cs]),
            "width": med_range([c.get("width") for c in cs]),
            "load_average": med_range([(c.get("load_average_before") or [None])[0] for c in cs]),
        }
    return out


def _calib_cell(doc: dict[str, Any]) -> dict[str, Any]:
    """What one ``duet calibrate --compare-sequential`` said: its method and the figures."""
    cal, meta = doc["calibration"], doc.get("accuracy_cell", {})
    seq = cal.get("sequential") or {}
    rec = cal.get("recommended") or {}
    return {
        "recommends": cal["method"]["pays"],
        "reason": cal["method"]["reason"],
        "accuracy_gain": cal.get("accuracy_gain"),
        "sync_gain": cal.get("sync_gain"),
        "duet_width": cal.get("ci_width"),
        "sequential_width": seq.get("relative_width"),
        "aa_ratio": [cal.get("ratio"), cal.get("ci_low"), cal.get("ci_high")],
        "recommended": {k: rec.get(k) for k in ("method", "runs", "iterations", "warmup")},
        "expected_ci_width": rec.get("expected_ci_width"),
        "runs": cal.get("runs"),
        "load_average_before": meta.get("load_average_before"),
        "seconds": meta.get("seconds"),
    }


def _calib_verdicts(
    cells: dict[str, dict[str, Any]], per: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Each calibration beside the method the A/A repetitions found narrower (median gain)."""
    out: dict[str, Any] = {}
    for key, c in sorted(cells.items()):
        if not key.startswith("calib/"):
            continue
        _, kind, cond, _rep = key.split("/")
        gain = (per.get(kind, {}).get(cond) or {}).get("gain")
        better = None if gain is None else ("duet" if gain >= 1 else "sequential")
        out[key] = {
            **c,
            "aa_median_gain": gain,
            "aa_better": better,
            "agrees": None if better is None else c["recommends"] == better,
        }
    return out


def _environment(raw: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for doc in raw.values():
        env = doc.get("environment")
        if env:
            keep = ("cpu", "cpu_model", "kernel", "isolation", "topology", "machine", "governor")
            return {k: v for k, v in env.items() if any(k.startswith(x) for x in keep)}
    return {}


def plots(summary: dict[str, Any]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plots")
        return
    out = RESULTS / "plots"
    out.mkdir(parents=True, exist_ok=True)
    per = summary["workloads"]
    labels, series = [], {"duet": [], "shuffled": [], "sequential": []}
    errs: dict[str, list[list[float]]] = {k: [[], []] for k in series}
    for kind, conds in per.items():
        for cond in (*CONDITIONS, "asym"):
            row = conds.get(cond)
            if not row or row.get("duet_width") is None:
                continue
            labels.append(f"{kind}\n{cond}")
            for name, key in (
                ("duet", "duet_width"),
                ("shuffled", "shuffled_width"),
                ("sequential", "sequential_width"),
            ):
                r = row.get(key + "_range") or {"median": np.nan, "min": np.nan, "max": np.nan}
                series[name].append(100 * r["median"])
                errs[name][0].append(100 * (r["median"] - r["min"]))
                errs[name][1].append(100 * (r["max"] - r["median"]))
    if labels:
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(labels)), 4))
        x = np.arange(len(labels))
        for i, name in enumerate(series):
            ax.bar(x + (i - 1) * 0.27, series[name], 0.27, yerr=errs[name], label=name, capsize=2)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("relative 99% CI width, % (median, range)")
        ax.set_yscale("log")
        ax.legend()
        ax.set_title("A/A: CI width by method")
        fig.tight_layout()
        fig.savefig(out / "ci_widths.png", dpi=110)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    drew = False
    for kind, conds in per.items():
        for cond, row in conds.items():
            sl = row.get("slowdowns")
            if not sl:
                continue
            xs = [0.0] + [float(k.rstrip("%")) for k in sl]
            for method, style in (("duet", "-o"), ("sequential", "--s")):
                fp = next(iter(sl.values())).get(f"false_positive_{method}") or 0.0
                ys = [fp] + [v[f"detect_{method}"] or 0.0 for v in sl.values()]
                ax.plot(xs, ys, style, label=f"{method} {kind} {cond}")
                drew = True
    if drew:
        ax.set_xlabel("injected slowdown (%) (0 = A/A false-positive rate)")
        ax.set_ylabel("detection rate (99% CI above 1)")
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=7)
        ax.set_title("Detection rate against slowdown, R = 10")
        fig.tight_layout()
        fig.savefig(out / "detection.png", dpi=110)
    plt.close(fig)


def write_summary(exclude_reps: tuple[int, ...] = ()) -> dict[str, Any]:
    raw = load_raw()
    summary = summarize(raw)
    previous = RESULTS / "accuracy.json"
    if not exclude_reps and previous.exists():
        # Repetitions once excluded stay excluded in later summaries of the same directory (a
        # run that adds cells must not silently drop the undisturbed view).
        with contextlib.suppress(ValueError, KeyError, TypeError):
            kept = json.loads(previous.read_text()).get("workloads_excluding_reps") or {}
            exclude_reps = tuple(int(n) for n in kept.get("excluded_reps", ()))
    if exclude_reps:
        # The same figures without the A/A repetitions named by --exclude-reps (e.g. ones that
        # another duet measuring on the same cores disturbed): kept beside, never instead.
        drop = tuple(f"/rep{n}" for n in exclude_reps)
        kept = {k: v for k, v in raw.items() if not (k.startswith("aa/") and k.endswith(drop))}
        summary["workloads_excluding_reps"] = {
            "excluded_reps": list(exclude_reps),
            "workloads": summarize(kept)["workloads"],
        }
    (RESULTS / "accuracy.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    plots(summary)
    return summary


def _pct(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{100 * x:.{digits}g}"


def _range(r: dict[str, Any] | None, scale: float = 100) -> str:
    if not r:
        return "—"
    return f"{scale * r['median']:.3g} ({scale * r['min']:.3g}-{scale * r['max']:.3g})"


def _head(title: str, header: str, first: bool = False) -> list[str]:
    """A markdown table's title, header row (``| a | b |``) and separator row."""
    columns = header.count("|") - 1
    return [*([] if first else [""]), title, "", header, "|" + "---|" * columns]


def tables(summary: dict[str, Any]) -> str:
    """The markdown tables of benchmarks/results/README.md, from the summary."""
    out = _head(
        "### A/A: relative 99% CI width (%), median (range) over repetitions",
        "| workload | condition | reps | duet | shuffled duet | sequential | gain seq/duet "
        "| sync gain | duet CI contains 1 | seq CI contains 1 | corr(log a, log b) | load avg |",
        first=True,
    )
    for kind, conds in summary["workloads"].items():
        for cond, r in conds.items():
            if r.get("duet_width") is None:
                continue
            c1, c2 = r["aa_contains_1_duet"], r["aa_contains_1_sequential"]
            gr = r.get("gain_range")
            out.append(
                f"| {kind} | {cond} | {c1[1]} | {_range(r['duet_width_range'])} | "
                f"{_range(r['shuffled_width_range'])} | {_range(r['sequential_width_range'])} | "
                f"{_range(gr, 1)}x | {r['sync_gain']:.3g}x | {c1[0]}/{c1[1]} | {c2[0]}/{c2[1]} | "
                f"{_range(r['correlation'], 1)} | {_range(r['load_average'], 1)} |"
            )
    out += _head(
        "### A/B with a 2.00x operation count: measured ratio (99% CI)",
        "| workload | condition | without fill | with fill | start skew median µs "
        "(no fill / fill) | skew p99 µs (no fill / fill) |",
    )
    for kind, conds in summary["workloads"].items():
        for cond, r in conds.items():
            if not r.get("ratio_2x_nofill_all"):
                continue

            def cis(rows: list[list[float]]) -> str:
                return "; ".join(f"{x:.3f} [{lo:.3f}, {hi:.3f}]" for x, lo, hi in rows)

            out.append(
                f"| {kind} | {cond} | {cis(r['ratio_2x_nofill_all'])} | "
                f"{cis(r['ratio_2x_fill_all'])} | {_range(r['skew_2x_nofill_us'], 1)} / "
                f"{_range(r['skew_2x_fill_us'], 1)} | {_range(r['skew_2x_nofill_p99_us'], 1)} / "
                f"{_range(r['skew_2x_fill_p99_us'], 1)} |"
            )
    out += _head(
        "### Injected slowdowns: detection rate at 99% (99% CI above 1)",
        "| workload | condition | slowdown | trials | duet detects | sequential detects "
        "| duet ratio median | duet width % | sequential width % |",
    )
    for kind, conds in summary["workloads"].items():
        for cond, r in conds.items():
            for pct, v in (r.get("slowdowns") or {}).items():
                out.append(
                    f"| {kind} | {cond} | {pct} | {v['trials'][0]} | {_pct(v['detect_duet'])}% | "
                    f"{_pct(v['detect_sequential'])}% | {_range(v['ratio_duet'], 1)} | "
                    f"{_range(v['width_duet'])} | {_range(v['width_sequential'])} |"
                )
            if r.get("slowdowns"):
                v = next(iter(r["slowdowns"].values()))
                out.append(
                    f"| {kind} | {cond} | 0% (A/A: false positives) | "
                    f"{r['aa_contains_1_duet'][1]} | {_pct(v['false_positive_duet'])}% | "
                    f"{_pct(v['false_positive_sequential'])}% | | | |"
                )
    if summary.get("r30_2pct_noise"):
        out += _head(
            "### 2% slowdown under noise at R = 30 x I = 30",
            "| workload | trials | duet detects | sequential detects | duet width % "
            "| sequential width % | duet ratio | A/A trials "
            "| A/A false positives |",
        )
        for kind, v in summary["r30_2pct_noise"].items():
            out.append(
                f"| {kind} | {v['trials']} | {_pct(v['detect_duet'])}% | "
                f"{_pct(v['detect_sequential'])}% | {_range(v['width_duet'])} | "
                f"{_range(v['width_sequential'])} | {_range(v['ratio_duet'], 1)} | "
                f"{v.get('aa_trials', 0)} | {_pct(v.get('false_positive_duet'))}% |"
            )
    for title, group in (("python worker", "python_worker"), ("command mode", "command")):
        if not summary.get(group):
            continue
        out += _head(
            f"### {title}: A/A and 2x (one run set each)",
            "| cell | A/A ratio [99% CI] | A/A width % | shuffled % | 2x ratio [99% CI] "
            "| mean iteration ms | load avg |",
        )
        for key, c in summary[group].items():
            aa, ab = c.get("aa", {}), c.get("2x", {})
            if "ratio" not in aa or "ratio" not in ab:
                continue
            out.append(
                f"| {key} | {aa['ratio']:.3f} [{aa['low']:.3f}, {aa['high']:.3f}] | "
                f"{_pct(aa.get('width'))} | {_pct(aa.get('shuffled_width'))} | "
                f"{ab['ratio']:.3f} [{ab['low']:.3f}, {ab['high']:.3f}] | {aa['mean_ms']:.3g} | "
                f"{c['load_average_before'][0]:.2f} |"
            )
    if summary.get("tools_summary"):
        out += _head(
            "### pyperf and hyperfine on the integer workload (command per value)",
            "| tool | condition | pair | repetitions | the tool calls it significant "
            "| Welch 99%: significant | Welch: slower | ratio | relative 99% CI width % "
            "| load avg |",
        )
        for group, t in summary["tools_summary"].items():
            tool, cond, pair = group.split("/")
            n = t["repetitions"]
            out.append(
                f"| {tool} | {cond} | {pair} | {n} | {t['tool_significant']}/{n} | "
                f"{t['welch_significant']}/{n} | {t['welch_detected_slower']}/{n} | "
                f"{_range(t['ratio'], 1)} | {_range(t['width'])} | "
                f"{_range(t['load_average'], 1)} |"
            )
    if summary.get("calibrate"):
        out += _head(
            "### `duet calibrate --compare-sequential`: the method it recommends",
            "| cell | recommends | its accuracy gain | its duet / sequential width % "
            "| A/A repetitions: median gain | narrower there | agrees "
            "| recommended runs x iterations | load avg |",
        )
        for key, c in summary["calibrate"].items():
            g, ag = c.get("accuracy_gain"), c.get("aa_median_gain")
            rec = c.get("recommended") or {}
            out.append(
                f"| {key} | {c['recommends']} | {'—' if g is None else f'{g:.3g}x'} | "
                f"{_pct(c.get('duet_width'))} / {_pct(c.get('sequential_width'))} | "
                f"{'—' if ag is None else f'{ag:.3g}x'} | {c.get('aa_better') or '—'} | "
                f"{'—' if c.get('agrees') is None else ('yes' if c['agrees'] else '**no**')} | "
                f"{rec.get('runs')} x {rec.get('iterations')} | "
                f"{(c.get('load_average_before') or [float('nan')])[0]:.2f} |"
            )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny R, I, 10 ms iterations")
    p.add_argument("--iteration-ms", type=float, default=None)
    p.add_argument("--runs", type=int, default=None)
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--reps", type=int, default=None, help="repetitions of the A/A cells")
    p.add_argument("--reps-2x", type=int, default=None)
    p.add_argument("--trials", type=int, default=None, help="trials per slowdown")
    p.add_argument("--trials-r30", type=int, default=None)
    p.add_argument("--reps-tools", type=int, default=None, help="repetitions of the tools cells")
    p.add_argument("--calib-runs", type=int, default=None, help="calib cells: R of the calibration")
    p.add_argument("--reps-calib", type=int, default=None, help="repetitions of the calib cells")
    p.add_argument("--py-runs", type=int, default=None, help="python/command cells: R")
    p.add_argument("--py-iterations", type=int, default=None, help="python/command cells: I")
    p.add_argument("--workloads", default=",".join(workloads.KINDS))
    p.add_argument("--slow-workloads", default=None)
    p.add_argument("--slow-conditions", default="noise,quiet")
    p.add_argument("--only", default=",".join(EXPERIMENTS), help="experiments, comma-separated")
    p.add_argument("--results", type=Path, default=None, help="results directory")
    p.add_argument("--summarize-only", action="store_true")
    p.add_argument("--tables", action="store_true", help="print the markdown tables and exit")
    p.add_argument(
        "--exclude-reps",
        default="",
        help="A/A repetitions left out of a second summary (e.g. 3,4), kept beside the full one",
    )
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {
        "iteration_ms": 10.0 if quick else 100.0,
        "runs": 5 if quick else 10,
        "iterations": 10 if quick else 30,
        "reps": 2 if quick else 5,
        "reps_2x": 1 if quick else 5,
        "trials": 2 if quick else 20,
        "trials_r30": 0 if quick else 20,
        "calib_runs": 5 if quick else 20,
        "reps_calib": 1,
        "reps_tools": 1 if quick else 5,
        "py_runs": 5 if quick else 10,
        "py_iterations": 10 if quick else 30,
    }
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.slow_workloads = (
        [w for w in args.slow_workloads.split(",") if w]
        if args.slow_workloads
        else (["integer"] if quick else ["integer", "memory"])
    )
    args.slow_conditions = [c for c in args.slow_conditions.split(",") if c]
    global RESULTS
    if args.results is not None:
        RESULTS = args.results.resolve()
    elif quick:
        RESULTS = HERE / "results" / "quick"
    exclude = tuple(int(x) for x in args.exclude_reps.split(",") if x)
    if args.summarize_only or args.tables:
        summary = write_summary(exclude)
        if args.tables:
            print(tables(summary))
            if exclude:
                part = {**summary, **summary["workloads_excluding_reps"]}
                print(f"## Without A/A repetitions {args.exclude_reps}\n")
                print(tables(part).split("### A/B")[0])
        return 0
    if os.geteuid() != 0:
        log("not root: duet will fall back to affinity-only isolation (recorded in the results)")
    workloads.build()
    noise.build()
    # Hold duet's machine-wide measuring lock for the whole experiment (measure() re-enters it):
    # the noise, pyperf and hyperfine must not run while another duet measures, and another duet
    # must not measure while our noise runs. Queue behind a running one.
    with measuring_lock():
        return run_experiments(args, p)


def measuring_lock(
    command: str = "benchmarks/accuracy.py",
) -> contextlib.AbstractContextManager[Any]:
    # Taken by every study before it measures, so the place where they all install duet's
    # handlers: SIGTERM, SIGINT and SIGHUP stop a study as they stop duet, and the run being
    # measured removes its cgroups, barrier file and work directory (without them, a SIGTERM
    # left those behind for the next duet to clean).
    interrupts.install()
    log("taking the duet measuring lock (waits while another duet measures)")
    return acquire(wait=True, command=command)


def run_experiments(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    log("measuring")
    d = Driver(args)
    d.calibrate()
    steps: dict[str, Callable[[], None]] = {name: getattr(d, name) for name in EXPERIMENTS}
    names = args.only.split(",")
    for name in names:
        if name not in steps:
            p.error(f"unknown experiment {name!r}: choose from {', '.join(EXPERIMENTS)}")
    for i, name in enumerate(names):
        log(f"experiment {name}")
        steps[name]()
        if i < len(names) - 1:  # a summary after every experiment: an interrupted run keeps it
            write_summary()
    summary = write_summary()
    log(f"summary: {RESULTS / 'accuracy.json'} ({len(summary['cells'])} duet cells)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Interrupted as e:  # the cells measured so far are on disk; a rerun resumes
        log(f"stopped: {e}")
        sys.exit(e.exit_code)
