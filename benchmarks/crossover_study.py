"""The crossover study of issue 21 (items 4, 5, 7): crossing the sides over the two CPUs at every
iteration (``crossover = "iteration"``) against keeping them for a run and swapping between runs
(``crossover = "run"``), measured cell by cell in the same minutes.

A thin layer over ``metric_study.py``: the same workloads (``benchmarks/workloads``' native ones
and ``startup``), conditions, cell storage (gzipped raw documents, resumable) and per-benchmark
analysis (``metric_study.analyse_cell``: duet's own analysis, which weighs the two CPU assignments
equally inside each run with crossover, and ``sequential_ci`` for the sequential method). What it
adds is the design axis: every cell is measured once per design, the designs one after the other
(their order alternating between repetitions), so that each pair saw the same load. The
``sequential`` design is ``--method sequential`` with the same R and I (the same CPU time: one
CPU for twice the wall time).

Conditions: ``shared`` (nothing added by the study: the machine as it is, whatever else runs on
it) and ``noise`` (the reference noise, ``noise.Noise``). Every cell stores its load averages,
``uptime``, the top CPU users (``ps``) before it and the processes that used CPU during it.

Experiments (``--only``):

- ``aa``: A/A, ``--reps`` repetitions per workload: the 99% interval widths (wall, CPU), whether
  each contains 1;
- ``slow``: a ``--slowdown`` slower candidate (op count scaled), ``--trials`` per design;
- ``ratio``: known ratios 1.05x and 2x (op counts; ``startup``: 2x only, 1 start against 2).

Iteration length: ``--iteration-ms`` scales the 20 ms op counts of ``results/calibration.json``
(measured alone on CPU 0) linearly; the cell keys carry it.

Run: ``python benchmarks/crossover_study.py --only aa --workloads integer,float --reps 5``;
``--tables`` prints the markdown tables of ``results/crossover/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import accuracy  # noqa: E402
import metric_study as ms  # noqa: E402
import noise  # noqa: E402
import workloads  # noqa: E402

from duet_bench.errors import Interrupted  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.results import from_dict  # noqa: E402

RESULTS = HERE / "results" / "crossover"
SCHEMA = "duet-crossover-study/1"
DESIGNS = ("iteration", "run", "sequential")
#: The study's condition names and what ``accuracy.condition`` runs for them.
CONDITIONS = {"shared": "quiet", "noise": "noise", "busy": "busy"}
RATIOS = (1.05, 2.0)
CONFIDENCE = 0.99


def log(text: str) -> None:
    accuracy.log(text)


def top_cpu() -> dict[str, Any]:
    """``uptime`` and the top CPU users (``ps``, lifetime averages) before a cell."""
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    ps = subprocess.run(
        ["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True, text=True
    ).stdout.splitlines()[:11]
    return {"uptime": up, "ps_top": ps}


def specs_for(
    design: str, a: SideSpec, b: SideSpec, runs: int, iterations: int
) -> list[BenchmarkSpec]:
    if design == "sequential":
        return [accuracy.spec("sequential", a, b, runs, iterations, "sequential")]
    s = accuracy.spec(f"duet-{design}", a, b, runs, iterations)
    return [dataclasses.replace(s, crossover=design)]


def measure_cell(key: str, cond: str, specs: list[BenchmarkSpec], *, bound_s: float) -> None:
    if accuracy.raw_path(key).exists():
        return
    before = ms.snapshot()
    top = top_cpu()
    doc = accuracy.run_cell(key, CONDITIONS[cond], specs, bound_s=bound_s)
    doc["accuracy_cell"].update(ms.processes_since(before))
    doc["accuracy_cell"].update(
        top, study_condition=cond, utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    )
    accuracy.store_raw(key, doc)


class Driver:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        cal = json.loads((HERE / "results" / "calibration.json").read_text())
        scale = args.iteration_ms / float(cal["iteration_ms"])
        self.ops = {k: max(1, round(v * scale)) for k, v in cal["ops"].items()}
        log(
            f"op counts for {args.iteration_ms} ms "
            f"(scaled from {cal['iteration_ms']} ms): {self.ops}"
        )
        self.tag = f"{args.iteration_ms:g}ms"

    def bound(self, kind: str, factor: float) -> float:
        ms_ = 150.0 if kind == ms.STARTUP else self.args.iteration_ms
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        return 120 + 6 * R * ((I + 2) * ms_ / 1e3 * factor + 0.5)

    def designs(self, rep: int) -> list[str]:
        d = list(self.args.designs)
        return d if rep % 2 == 0 else d[::-1]

    def cell(
        self, key: str, cond: str, a: SideSpec, b: SideSpec, kind: str, f: float, rep: int
    ) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for design in self.designs(rep):
            k = f"{key}/{design}"
            try:
                measure_cell(k, cond, specs_for(design, a, b, R, I), bound_s=self.bound(kind, f))
            except Interrupted:
                raise
            except Exception as e:  # a failed cell is reported, the others still run
                log(f"{k}: FAILED: {type(e).__name__}: {e}")

    def side(self, kind: str, k: float = 1.0) -> SideSpec:
        return ms.side(kind, round(self.ops.get(kind, 0) * k))

    def aa(self) -> None:
        for rep in range(self.args.start, self.args.start + self.args.reps):
            for cond in self.args.conditions:
                for kind in self.args.workloads:
                    x = self.side(kind)
                    self.cell(f"aa/{kind}/{cond}/{self.tag}/rep{rep}", cond, x, x, kind, 3, rep)

    def slow(self) -> None:
        pct = self.args.slowdown
        for trial in range(self.args.start, self.args.start + self.args.trials):
            for cond in self.args.conditions:
                for kind in self.args.workloads:
                    a, b = self.side(kind), self.side(kind, 1 + pct)
                    key = f"slow/{kind}/{cond}/{self.tag}/{pct * 100:g}pct/trial{trial}"
                    self.cell(key, cond, a, b, kind, 3, trial)

    def ratio(self) -> None:
        for rep in range(self.args.start, self.args.start + self.args.reps):
            for cond in self.args.conditions:
                for kind in self.args.workloads:
                    for k in RATIOS:
                        if kind == ms.STARTUP:
                            if k != 2.0:
                                continue
                            a = SideSpec(kind="command", command=ms.startup_command(1))
                            b = SideSpec(kind="command", command=ms.startup_command(2))
                        else:
                            a, b = self.side(kind), self.side(kind, k)
                        key = f"ratio/{kind}/{cond}/{self.tag}/{k:g}x/rep{rep}"
                        self.cell(key, cond, a, b, kind, 1 + k, rep)


# -- analysis ----------------------------------------------------------------------------------


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score 95% interval of a proportion k/n."""
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def load_raw() -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted((RESULTS / "raw").glob("*.json.gz")):
        key = p.name[: -len(".json.gz")].replace("__", "/")
        out[key] = json.loads(gzip.decompress(p.read_bytes()))
    return out


def startup_detail(doc: dict[str, Any]) -> dict[str, Any]:
    """Per-iteration means (ms) of wall, CPU, run-queue delay and the rest (wall - CPU - run
    queue: off-CPU, not runnable) per side; with duet, the start skew and the run-queue delay
    of a side after it finished first in the previous iteration against after it finished
    second (does something follow the side that idles first?)."""
    results = from_dict({k: v for k, v in doc.items() if k != "accuracy_cell"}, source="x")
    out: dict[str, Any] = {}
    for record in results.benchmarks:
        ok = record.ok_runs()
        wall, cpu, runq = [], [], []
        after_first, after_second = [], []
        for r in ok:
            for s in (r.baseline, r.candidate):
                wall += s.iterations_ns
                cpu += s.iteration_cpu_ns or []
                runq += s.iteration_runq_ns or []
            b, c = r.baseline, r.candidate
            if (
                record.method != "sequential"
                and b.iteration_start_ns
                and b.iteration_runq_ns
                and c.iteration_runq_ns
            ):
                ends_b = [x + w for x, w in zip(b.iteration_start_ns, b.iterations_ns, strict=True)]
                ends_c = [x + w for x, w in zip(c.iteration_start_ns, c.iterations_ns, strict=True)]
                for i in range(1, len(ends_b)):
                    b_first = ends_b[i - 1] < ends_c[i - 1]
                    (after_first if b_first else after_second).append(b.iteration_runq_ns[i])
                    (after_second if b_first else after_first).append(c.iteration_runq_ns[i])
        n = len(wall)
        m = lambda xs: float(np.mean(xs)) / 1e6 if len(xs) else None  # noqa: E731
        row = {"wall_ms": m(wall), "cpu_ms": m(cpu), "runq_ms": m(runq)}
        if len(cpu) == n and len(runq) == n:
            row["other_ms"] = float(np.mean(np.array(wall) - np.array(cpu) - np.array(runq))) / 1e6
        if after_first:
            row["runq_after_finishing_first_ms"] = m(after_first)
            row["runq_after_finishing_second_ms"] = m(after_second)
        out[record.name] = row
    return out


def analyse(key: str, doc: dict[str, Any]) -> dict[str, Any]:
    entry = ms.analyse_cell(key, doc)
    meta = doc.get("accuracy_cell", {})
    entry["uptime"] = meta.get("uptime")
    entry["utc"] = meta.get("utc")
    entry["top_processes"] = meta.get("processes", [])[:4]
    if "/startup/" in key:
        entry["startup"] = startup_detail(doc)
    return entry


def est(entry: dict[str, Any], metric: str) -> dict[str, Any] | None:
    for method in ("duet", "sequential"):
        got = entry.get(method, {}).get(metric)
        if got and got.get("width") is not None:
            return got  # type: ignore[no-any-return]
    return None


def summarize(raw: dict[str, dict[str, Any]]) -> dict[str, Any]:
    cells = {k: analyse(k, d) for k, d in raw.items()}
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for key, entry in cells.items():
        base, design = key.rsplit("/", 1)
        head, rep = base.rsplit("/", 1)
        groups.setdefault(f"{head}/{design}", {})[rep] = entry
    aa: dict[str, Any] = {}
    slow: dict[str, Any] = {}
    ratio: dict[str, Any] = {}
    coverage: dict[str, list[int]] = {}
    for gkey, reps in sorted(groups.items()):
        parts = gkey.split("/")
        exp, design = parts[0], parts[-1]
        name = "/".join(parts[1:-1])
        row: dict[str, Any] = {"n": len(reps)}
        for metric in ("cpu", "wall", "default"):
            got = {r: e for r, e in reps.items() if est(e, metric)}
            ests = {r: est(e, metric) for r, e in got.items()}
            row[metric] = {
                "ratios": {r: x["ratio"] for r, x in ests.items()},
                "widths": {r: x["width"] for r, x in ests.items()},
                "width_median": float(np.median([x["width"] for x in ests.values()]))
                if ests
                else None,
                "contains_1": [sum(x["contains_1"] for x in ests.values()), len(ests)],
                "detected": [sum(x["detected"] for x in ests.values()), len(ests)],
                "ratio_median": float(np.median([x["ratio"] for x in ests.values()]))
                if ests
                else None,
                "metric": sorted({x.get("metric", metric) for x in ests.values()}),
            }
            if exp == "aa" and metric in ("cpu", "wall"):
                c = coverage.setdefault(f"{design}/{metric}", [0, 0])
                c[0] += row[metric]["contains_1"][0]
                c[1] += row[metric]["contains_1"][1]
        if "/startup/" in f"/{name}/":
            row["startup"] = {r: e.get("startup") for r, e in reps.items()}
        row["load"] = [e.get("load_average_before", [None])[0] for e in reps.values()]
        row["utc"] = sorted(e.get("utc") or "" for e in reps.values())
        {"aa": aa, "slow": slow, "ratio": ratio}[exp].setdefault(name, {})[design] = row
    cov = {k: {"contains": v, "wilson95": wilson(*v)} for k, v in coverage.items()}
    return {
        "schema": SCHEMA,
        "confidence": CONFIDENCE,
        "aa": aa,
        "slow": slow,
        "ratio": ratio,
        "coverage": cov,
        "cells": cells,
    }


def write_summary() -> dict[str, Any]:
    summary = summarize(load_raw())
    (RESULTS / "crossover-study.json").write_text(
        json.dumps(summary, indent=1, default=float) + "\n"
    )
    (RESULTS / "crossover-study.md").write_text(tables(summary))
    return summary


def _pct(x: float | None, d: int = 2) -> str:
    return "—" if x is None else f"{100 * x:.{d}f}"


def _reps(widths: dict[str, float]) -> str:
    keys = sorted(widths, key=lambda r: int(re.sub(r"\D", "", r)))
    return ", ".join(_pct(widths[k]) for k in keys)


def _frac(x: list[int]) -> str:
    return f"{x[0]}/{x[1]}"


def _err(ratio: float | None, expected: float) -> str:
    return "—" if ratio is None else f"{ratio:.4f}, {100 * (ratio / expected - 1):+.2f}%"


def _ms(rows: list[dict[str, Any]], field: str) -> str:
    values = [x[field] for x in rows if x.get(field) is not None]
    return f"{float(np.median(values)):.2f}" if values else "—"


def tables(summary: dict[str, Any]) -> str:
    out = [
        "#### A/A: relative 99% CI width (%) per repetition, and median; intervals containing 1",
        "",
        "| cell | design | n | CPU widths | CPU median | wall widths | wall median "
        "| contains 1 (CPU / wall) | load avg (1 min) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, designs in summary["aa"].items():
        for design, r in designs.items():
            c, w = r["cpu"], r["wall"]
            load = [x for x in r["load"] if x is not None]
            out.append(
                f"| {name} | {design} | {r['n']} | {_reps(c['widths'])} | "
                f"**{_pct(c['width_median'])}** | {_reps(w['widths'])} | "
                f"{_pct(w['width_median'])} | {_frac(c['contains_1'])} / {_frac(w['contains_1'])} "
                f"| {min(load):.1f}-{max(load):.1f} |"
            )
    out += [
        "",
        "#### Injected slowdowns: detected (99% CI above 1) / trials",
        "",
        "| cell | design | CPU detected | CPU ratio median | CPU width median | wall detected "
        "| wall ratio median |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, designs in summary["slow"].items():
        for design, r in designs.items():
            c, w = r["cpu"], r["wall"]
            out.append(
                f"| {name} | {design} | {_frac(c['detected'])} | {c['ratio_median']:.4f} | "
                f"{_pct(c['width_median'])} | {_frac(w['detected'])} | {w['ratio_median']:.4f} |"
            )
    out += [
        "",
        "#### A/A coverage: 99% intervals containing 1 (Wilson 95% interval of the share)",
        "",
        "| design / metric | contain 1 | share | Wilson 95% |",
        "|---|---|---|---|",
    ]
    for k, v in sorted(summary["coverage"].items()):
        hit, n = v["contains"]
        wl = v["wilson95"]
        out.append(
            f"| {k} | {hit}/{n} | {_pct(hit / n if n else None, 1)}% | "
            f"{'—' if not wl else f'{100 * wl[0]:.1f}-{100 * wl[1]:.1f}%'} |"
        )
    out += [
        "",
        "#### Known ratios: measured ratio per repetition (CPU time), medians with their error",
        "",
        "| cell | design | CPU ratios | CPU median, error | wall median, error "
        "| CPU intervals containing the ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, designs in summary["ratio"].items():
        expected = float(name.split("/")[-1].rstrip("x"))
        for design, r in designs.items():
            c, w = r["cpu"], r["wall"]
            cells = [
                v
                for k, v in summary["cells"].items()
                if k.startswith(f"ratio/{name}/") and k.endswith(f"/{design}")
            ]
            inside = [
                bool(x["low"] <= expected <= x["high"]) for e in cells if (x := est(e, "cpu"))
            ]
            rs = ", ".join(f"{c['ratios'][k]:.4f}" for k in sorted(c["ratios"]))
            out.append(
                f"| {name} | {design} | {rs} | {_err(c['ratio_median'], expected)} | "
                f"{_err(w['ratio_median'], expected)} | {sum(inside)}/{len(inside)} |"
            )
    starts = [
        (n, d, r["startup"])
        for n, ds in {**summary["aa"], **summary["ratio"]}.items()
        for d, r in ds.items()
        if r.get("startup")
    ]
    if starts:
        out += [
            "",
            "#### Start-up command: per-iteration means (ms) per side, median over repetitions",
            "",
            "| cell | design | wall | CPU | run-queue | other (wall - CPU - run-queue) "
            "| run-queue after finishing first / second |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, design, reps in starts:
            rows = [next(iter(v.values())) for v in reps.values() if v]
            m = {f: _ms(rows, f) for f in rows[0]} if rows else {}
            out.append(
                f"| {name} | {design} | {m.get('wall_ms', '—')} | {m.get('cpu_ms', '—')} | "
                f"{m.get('runq_ms', '—')} | {m.get('other_ms', '—')} | "
                f"{m.get('runq_after_finishing_first_ms', '—')} / "
                f"{m.get('runq_after_finishing_second_ms', '—')} |"
            )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default="aa", help="aa, slow or ratio (comma-separated)")
    p.add_argument("--designs", default="iteration,run")
    p.add_argument("--workloads", default="integer,float")
    p.add_argument("--conditions", default="shared")
    p.add_argument("--iteration-ms", type=float, default=20.0)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--reps", type=int, default=5, help="repetitions (aa, ratio)")
    p.add_argument("--trials", type=int, default=20, help="trials (slow)")
    p.add_argument("--start", type=int, default=0, help="first repetition / trial number")
    p.add_argument("--slowdown", type=float, default=0.01)
    p.add_argument("--tables", action="store_true", help="summarize, print the tables and exit")
    p.add_argument("--results", type=Path, default=None, help="results directory")
    args = p.parse_args(argv)
    global RESULTS
    if args.results is not None:
        RESULTS = args.results.resolve()
    args.designs = [d for d in args.designs.split(",") if d]
    for d in args.designs:
        if d not in DESIGNS:
            p.error(f"unknown design {d!r}: choose from {', '.join(DESIGNS)}")
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.conditions = [c for c in args.conditions.split(",") if c]
    for c in args.conditions:
        if c not in CONDITIONS:
            p.error(f"unknown condition {c!r}: choose from {', '.join(CONDITIONS)}")
    accuracy.RESULTS = RESULTS
    ms.RESULTS = RESULTS
    if args.tables:
        print(tables(write_summary()))
        return 0
    workloads.build()
    noise.build()
    with accuracy.measuring_lock(command="benchmarks/crossover_study.py"):
        d = Driver(args)
        for name in args.only.split(","):
            log(f"experiment {name}")
            getattr(d, name)()
    write_summary()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Interrupted as e:
        log(f"stopped: {e}")
        sys.exit(e.exit_code)
