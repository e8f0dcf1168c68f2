"""The metric study of issue 12 (item 8): wall time or CPU time, duet or sequential.

Every cell measures one pair of benchmarks, duet and the sequential method (the same R: the same
CPU time, twice the wall time), and every benchmark is analysed with both metrics from the same
runs: duet-wall and duet-CPU by duet's own analysis (``duet_bench.analysis.analyze_benchmark``,
which analyses both and says which one ``auto`` picks), sequential-wall and sequential-CPU by
``duet_stats.sequential.sequential_ci`` on the wall and CPU arrays.

Workloads: the native CPU-bound ones (``benchmarks/workloads``: integer, float, cache, memory)
and ``startup``, a command dominated by process start-up: the system interpreter importing a
handful of large standard-library modules (about 70 ms on this VM, of which about 25 ms is the
bare interpreter: every millisecond is exec, interpreter set-up and imports).

Conditions: ``quiet``, ``noise`` (the reference noise, ``noise.Noise``), ``asym`` (the noise on
CPU 1 only) and ``busy`` (one unpinned busy process started outside duet for the whole cell).

Experiments:

- ``aa``: A/A, ``--reps`` repetitions per workload and condition: the four 99% interval widths,
  whether each contains 1, the metric ``auto`` picks, the interference share;
- ``slow``: 1% and 2% slower candidates (op count scaled) under ``--slow-conditions`` (the
  reference noise), ``--trials`` each: the detection rate per metric and method;
- ``ratio``: known ratios 1.05x and 2x (op counts; for ``startup``, 2x only: one interpreter
  start against two, through ``xargs``) under ``--ratio-conditions``: the ratio with the default
  metric (``auto``), within 1%?, and duet's 2x beside the sequential method's (a side that
  waits at the barrier frees shared resources for the other, the duet paper's section 4.4).

A/A coverage (intervals containing 1) is counted over every A/A interval (``aa`` cells).
Raw documents go gzipped to ``benchmarks/results/metric/raw/`` (a cell on disk is not measured
again), with the cell's condition, load averages and the processes that used CPU during it;
the summary to ``benchmarks/results/metric/metric-study.json`` and ``--tables`` prints it as
markdown.

Run: ``python benchmarks/metric_study.py [--quick] [--reps 5] [--trials 20] [--only aa,slow]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import accuracy  # noqa: E402
import noise  # noqa: E402
import workloads  # noqa: E402

from duet_bench.analysis import AnalysisSettings, analyze_benchmark, rng_for  # noqa: E402
from duet_bench.errors import Interrupted  # noqa: E402
from duet_bench.plan import BenchmarkSpec, SideSpec  # noqa: E402
from duet_bench.results import BenchmarkRecord, from_dict  # noqa: E402
from duet_stats.sequential import sequential_ci  # noqa: E402

RESULTS = HERE / "results" / "metric"
SCHEMA = "duet-metric-study/1"
CONDITIONS = ("quiet", "noise", "asym", "busy")
NATIVE = workloads.KINDS
STARTUP = "startup"
WORKLOADS = (*NATIVE, STARTUP)
EXPERIMENTS = ("aa", "slow", "ratio")
SLOWDOWNS = (0.01, 0.02)
RATIOS = (1.05, 2.0)
#: The four intervals of every cell, in table order.
COLUMNS = ("duet-wall", "duet-cpu", "sequential-wall", "sequential-cpu")
#: Large standard-library modules: about 45 ms of imports on top of the bare interpreter's
#: 25 ms here, so start-up (exec, interpreter set-up, imports) is the whole iteration.
STARTUP_IMPORTS = "import email.mime.multipart, json, decimal, asyncio"
#: The known ratios must come out within this relative error.
RATIO_TOLERANCE = 0.01


def log(text: str) -> None:
    accuracy.log(text)


# -- workloads ---------------------------------------------------------------------------------


def interpreter() -> str:
    """The system interpreter, not a version manager's shim (a shell script that would add its
    own start-up) nor our virtual environment's."""
    for candidate in ("/usr/bin/python3", os.path.realpath(sys.executable)):
        if os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no python3 interpreter found for the start-up workload")


def startup_command(starts: int | None = None) -> str:
    """The start-up workload: one interpreter start, spawned directly. With ``starts``, that
    many starts in a row through ``xargs`` (no shell: duet spawns it directly, and ``xargs``
    adds under a millisecond; its children's CPU time is reaped into its own): the 2x pair is
    1 against 2 starts."""
    python = f"{interpreter()} -I -c '{STARTUP_IMPORTS}'"
    if starts is None:
        return python
    lines = RESULTS / "inputs" / f"{starts}-lines.txt"
    lines.parent.mkdir(parents=True, exist_ok=True)
    lines.write_text("".join(f"start{i}\n" for i in range(starts)))
    return f"xargs -n1 -a {lines} {python}"


def side(kind: str, ops: int) -> SideSpec:
    if kind == STARTUP:
        return SideSpec(kind="command", command=startup_command())
    return accuracy.native(kind, ops)


def pair(name: str, a: SideSpec, b: SideSpec, runs: int, iterations: int) -> list[BenchmarkSpec]:
    """The duet benchmark and its sequential twin (same runs, iterations and sides)."""
    return [
        accuracy.spec(f"{name}duet", a, b, runs, iterations),
        accuracy.spec(f"{name}sequential", a, b, runs, iterations, "sequential"),
    ]


# -- what else ran: the process list of a cell -------------------------------------------------


def _ticks() -> dict[int, tuple[str, int]]:
    """Per process: its command and user + system CPU time so far, in clock ticks."""
    out: dict[int, tuple[str, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:  # it exited while we looked
            continue
        comm_end = stat.rfind(")")
        fields = stat[comm_end + 2 :].split()
        command = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
        command = command or stat[stat.find("(") + 1 : comm_end]
        out[int(entry.name)] = (command[:160], int(fields[11]) + int(fields[12]))
    return out


def _machine() -> tuple[int, int]:
    """Busy and total jiffies of all CPUs (``/proc/stat``; idle and iowait are not busy)."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(values) - values[3] - values[4], sum(values)


def snapshot() -> dict[str, Any]:
    return {"ticks": _ticks(), "machine": _machine(), "time": time.monotonic()}


def processes_since(before: dict[str, Any], *, top: int = 12) -> dict[str, Any]:
    """Which processes used CPU during a cell, as a share of one CPU, and how busy the machine
    was. Processes that started and ended inside the cell are not seen one by one (the cell's
    own sides are such), but their time is in ``machine_busy_cpus``."""
    after = snapshot()
    seconds = max(after["time"] - before["time"], 1e-9)
    hz = os.sysconf("SC_CLK_TCK")
    used = []
    for pid, (command, ticks) in after["ticks"].items():
        start = before["ticks"].get(pid, (command, 0))[1]
        if ticks > start:
            share = (ticks - start) / hz / seconds
            used.append({"pid": pid, "command": command, "cpu_share": round(share, 3)})
    used.sort(key=lambda p: -p["cpu_share"])
    busy = after["machine"][0] - before["machine"][0]
    total = max(after["machine"][1] - before["machine"][1], 1)
    return {
        "processes": used[:top],
        "machine_busy_cpus": round(busy / total * (os.cpu_count() or 1), 3),
        "seconds_watched": round(seconds, 1),
    }


def measure_cell(key: str, cond: str, specs: list[BenchmarkSpec], *, bound_s: float) -> None:
    """``accuracy.run_cell`` (resumable), with the processes that ran beside it added to the
    stored document."""
    if accuracy.raw_path(key).exists():
        return
    before = snapshot()
    doc = accuracy.run_cell(key, cond, specs, bound_s=bound_s)
    doc["accuracy_cell"].update(processes_since(before))
    accuracy.store_raw(key, doc)


# -- analysis ----------------------------------------------------------------------------------


def interval(ratio: float, low: float | None, high: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {"ratio": ratio, "low": low, "high": high}
    if low is not None and high is not None:
        out.update(
            width=(high - low) / ratio,
            contains_1=bool(low <= 1.0 <= high),
            detected=bool(low > 1.0),
        )
    return out


def _matrices(record: BenchmarkRecord, attr: str) -> tuple[np.ndarray, np.ndarray] | None:
    ok = record.ok_runs()
    n = min(len(r.baseline.iterations_ns) for r in ok)
    rows: list[list[Any]] = [[], []]
    for r in ok:
        for i, s in enumerate((r.baseline, r.candidate)):
            values = getattr(s, attr)
            if values is None:
                return None
            rows[i].append(values[:n])
    a, b = (np.array(x, dtype=np.float64) for x in rows)
    if (a <= 0).any() or (b <= 0).any():
        return None
    return a, b


def analyse_benchmark(record: BenchmarkRecord) -> dict[str, Any]:
    """Both metrics of one benchmark; ``default`` is the interval of the metric ``auto`` picks."""
    settings = AnalysisSettings()
    an = analyze_benchmark(record, settings)
    method = "sequential" if record.method == "sequential" else "duet"
    out: dict[str, Any] = {
        "method": method,
        "runs": an.runs_used,
        "iterations": an.iterations,
        "auto_metric": an.metric,
        "auto_reason": an.metric_reason,
        "busy_share": dict(an.busy_share),
        "interference_share": an.interference.share if an.interference else None,
        "runq_ms": an.interference.runq_ns / 1e6 if an.interference else None,
        "metrics_missing": dict(an.metrics_missing),
        "interval": settings.interval,
    }
    if method == "duet":
        for metric, est in an.metrics.items():
            out[metric] = interval(est.ratio, est.ci_low, est.ci_high)
        for metric, attr in (("wall", "iterations_ns"), ("cpu", "iteration_cpu_ns")):
            m = _matrices(record, attr)
            if m is not None and metric in out:
                # What pairing can cancel: how much of each side's variation the other shares,
                # and how much there is (per-iteration coefficient of variation, both sides).
                la, lb = np.log(m[0]).ravel(), np.log(m[1]).ravel()
                out[metric]["correlation"] = float(np.corrcoef(la, lb)[0, 1])
                out[metric]["cv"] = float(np.std(np.concatenate(m), axis=None) / np.mean(m))
    else:
        for metric, attr in (("wall", "iterations_ns"), ("cpu", "iteration_cpu_ns")):
            m = _matrices(record, attr)
            if m is None:
                continue
            s = sequential_ci(
                *m,
                confidence=settings.confidence,
                reps=settings.reps,
                winsorize=settings.winsorize,
                rng=rng_for(record.name + metric, settings.seed),
            )
            out[metric] = interval(s.ratio, s.ratio_ci_low, s.ratio_ci_high)
    if an.metric in out:
        out["default"] = {**out[an.metric], "metric": an.metric}
    return out


def analyse_cell(key: str, doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc.get("accuracy_cell", {})
    results = from_dict({k: v for k, v in doc.items() if k != "accuracy_cell"}, source=key)
    entry: dict[str, Any] = {
        "load_average_before": meta.get("load_average_before"),
        "machine_busy_cpus": meta.get("machine_busy_cpus"),
        "seconds": meta.get("seconds"),
        "top_process": (meta.get("processes") or [None])[0],
    }
    for record in results.benchmarks:
        method = "sequential" if record.method == "sequential" else "duet"
        try:
            entry[method] = analyse_benchmark(record)
        except (ValueError, IndexError) as e:
            entry[method] = {"error": f"{type(e).__name__}: {e}"}
    return entry


def column(entry: dict[str, Any], name: str) -> dict[str, Any] | None:
    method, metric = name.split("-")
    got = entry.get(method, {}).get(metric)
    return got if got and got.get("width") is not None else None


def med_range(values: list[float | None]) -> dict[str, Any] | None:
    return accuracy.med_range(values)  # type: ignore[no-any-return]


def summarize(raw: dict[str, dict[str, Any]]) -> dict[str, Any]:
    cells = {key: analyse_cell(key, doc) for key, doc in raw.items()}

    def group(prefix: str) -> list[dict[str, Any]]:
        return [v for k, v in cells.items() if k.startswith(prefix)]

    def count(entries: list[dict[str, Any]], name: str, flag: str) -> list[int]:
        hits = [c[flag] for e in entries if (c := column(e, name))]
        return [int(sum(hits)), len(hits)]

    aa: dict[str, Any] = {}
    for kind in WORKLOADS:
        for cond in CONDITIONS:
            entries = group(f"aa/{kind}/{cond}/")
            if not entries:
                continue
            row: dict[str, Any] = {"reps": len(entries)}
            for name in COLUMNS:
                row[name] = {
                    "width": med_range([c["width"] for e in entries if (c := column(e, name))]),
                    "contains_1": count(entries, name, "contains_1"),
                }
            for method in ("duet", "sequential"):
                default = [e[method]["default"] for e in entries if "default" in e.get(method, {})]
                row[f"{method}-default"] = {
                    "width": med_range([d.get("width") for d in default]),
                    "metrics": sorted({d["metric"] for d in default}),
                }
                row[f"{method}-interference"] = med_range(
                    [e[method].get("interference_share") for e in entries if method in e]
                )
            for metric in ("wall", "cpu"):
                for what in ("correlation", "cv"):
                    row[f"duet-{metric}-{what}"] = med_range(
                        [c.get(what) for e in entries if (c := column(e, f"duet-{metric}"))]
                    )
            row["duet_over_sequential_cpu"] = med_range(
                [
                    d["width"] / s["width"]
                    for e in entries
                    if (d := column(e, "duet-cpu")) and (s := column(e, "sequential-cpu"))
                ]
            )
            row["load_average"] = med_range(
                [e["load_average_before"][0] for e in entries if e.get("load_average_before")]
            )
            row["machine_busy_cpus"] = med_range([e.get("machine_busy_cpus") for e in entries])
            aa.setdefault(kind, {})[cond] = row
    every_aa = group("aa/")
    coverage = {name: count(every_aa, name, "contains_1") for name in COLUMNS}
    coverage["all"] = [sum(v[0] for v in coverage.values()), sum(v[1] for v in coverage.values())]

    detection: dict[str, Any] = {}
    for key in sorted({k.rsplit("/", 1)[0] for k in cells if k.startswith("slow/")}):
        _, kind, cond, pct = key.split("/")
        entries = group(key + "/")
        row = {"trials": len(entries)}
        for name in COLUMNS:
            hits, n = count(entries, name, "detected")
            row[name] = {"detected": [hits, n], "rate": hits / n if n else None}
            row[name]["ratio"] = med_range([c["ratio"] for e in entries if (c := column(e, name))])
        detection.setdefault(kind, {}).setdefault(cond, {})[pct] = row

    ratios: dict[str, Any] = {}
    for key in sorted({k.rsplit("/", 1)[0] for k in cells if k.startswith("ratio/")}):
        _, kind, cond, label = key.split("/")
        expected = float(label.rstrip("x"))
        entries = group(key + "/")
        row = {"expected": expected, "reps": len(entries)}
        for method in ("duet", "sequential"):
            got = [e[method]["default"] for e in entries if "default" in e.get(method, {})]
            errors = [d["ratio"] / expected - 1 for d in got]
            row[method] = {
                "ratio": med_range([d["ratio"] for d in got]),
                "error": med_range(errors),
                "within_1pct": [sum(abs(x) <= RATIO_TOLERANCE for x in errors), len(errors)],
                "contains_expected": [
                    sum(d["low"] <= expected <= d["high"] for d in got if d.get("low")),
                    len(got),
                ],
                "metrics": sorted({d["metric"] for d in got}),
            }
            for metric in ("wall", "cpu"):
                row[f"{method}-{metric}"] = med_range(
                    [e[method][metric]["ratio"] for e in entries if metric in e.get(method, {})]
                )
        d, s = row["duet"]["ratio"], row["sequential"]["ratio"]
        # Section 4.4: a side waiting at the barrier frees shared resources for the other, so
        # duet's ratio would sit closer to 1 than the sequential method's.
        row["duet_minus_sequential"] = d["median"] - s["median"] if d and s else None
        ratios.setdefault(kind, {}).setdefault(cond, {})[label] = row

    return {
        "schema": SCHEMA,
        "confidence": accuracy.CONFIDENCE,
        "interval": AnalysisSettings().interval,
        "aa": aa,
        "coverage": coverage,
        "detection": detection,
        "ratios": ratios,
        "cells": cells,
    }


def load_raw() -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted((RESULTS / "raw").glob("*.json.gz")):
        key = p.name[: -len(".json.gz")].replace("__", "/")
        out[key] = json.loads(gzip.decompress(p.read_bytes()))
    return out


def write_summary() -> dict[str, Any]:
    summary = summarize(load_raw())
    path = RESULTS / "metric-study.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1, default=float) + "\n")
    (RESULTS / "metric-study.md").write_text(tables(summary))
    return summary


# -- tables ------------------------------------------------------------------------------------


def _w(r: dict[str, Any] | None, scale: float = 100) -> str:
    """A median (range), in % by default, or the single value of one repetition."""
    if r and r["n"] == 1:
        return f"{scale * r['median']:.3g}"
    return accuracy._range(r, scale)  # type: ignore[no-any-return]


def _share(r: dict[str, Any] | None) -> str:
    return "—" if not r else f"{100 * r['median']:.0f}%"


def _frac(x: list[int]) -> str:
    return f"{x[0]}/{x[1]}"


def tables(summary: dict[str, Any]) -> str:
    """The markdown tables of benchmarks/results/metric/README.md, from the summary."""
    out = accuracy._head(
        "#### A/A: relative 99% CI width (%), median (range) over repetitions; "
        "intervals containing 1",
        "| workload | condition | reps | duet wall | duet CPU | sequential wall | sequential CPU "
        "| default (auto) duet | default (auto) sequential | duet CPU / seq CPU width "
        "| contains 1 (dw/dc/sw/sc) | interference (duet) | load avg | busy CPUs |",
        first=True,
    )
    for kind, conds in summary["aa"].items():
        for cond, r in conds.items():
            contains = ", ".join(_frac(r[c]["contains_1"]) for c in COLUMNS)
            dd, sd = r["duet-default"], r["sequential-default"]
            gain = _w(r["duet_over_sequential_cpu"], 1)
            out.append(
                f"| {kind} | {cond} | {r['reps']} | "
                + " | ".join(_w(r[c]["width"]) for c in COLUMNS)
                + f" | {_w(dd['width'])} ({','.join(dd['metrics'])}) | {_w(sd['width'])} "
                f"({','.join(sd['metrics'])}) | {gain} "
                f"| {contains} | {_share(r['duet-interference'])} | "
                f"{_w(r['load_average'], 1)} | {_w(r['machine_busy_cpus'], 1)} |"
            )
    out += accuracy._head(
        "#### Duet A/A: what pairing can cancel, per metric: corr(log a, log b) and the "
        "per-iteration coefficient of variation (%), median (range)",
        "| workload | condition | corr wall | corr CPU | CV wall % | CV CPU % |",
    )
    for kind, conds in summary["aa"].items():
        for cond, r in conds.items():
            out.append(
                f"| {kind} | {cond} | {_w(r['duet-wall-correlation'], 1)} | "
                f"{_w(r['duet-cpu-correlation'], 1)} | {_w(r['duet-wall-cv'])} | "
                f"{_w(r['duet-cpu-cv'])} |"
            )
    cov = summary["coverage"]
    out += accuracy._head(
        "#### A/A coverage: 99% intervals containing 1, over every A/A cell",
        "| duet wall | duet CPU | sequential wall | sequential CPU | all |",
    )
    out.append("| " + " | ".join(_frac(cov[c]) for c in (*COLUMNS, "all")) + " |")
    if summary["detection"]:
        out += accuracy._head(
            "#### Injected slowdowns: detected (99% CI above 1) / trials",
            "| workload | condition | slowdown | duet wall | duet CPU | sequential wall "
            "| sequential CPU | duet CPU ratio median |",
        )
        for kind, conds in summary["detection"].items():
            for cond, pcts in conds.items():
                for pct, r in pcts.items():
                    cols = " | ".join(_frac(r[c]["detected"]) for c in COLUMNS)
                    med = r["duet-cpu"]["ratio"]
                    out.append(
                        f"| {kind} | {cond} | {pct.replace('pct', '%')} | {cols} | "
                        f"{'—' if not med else format(med['median'], '.4f')} |"
                    )
    if summary["ratios"]:
        out += accuracy._head(
            "#### Known ratios with the default metric (auto): measured ratio, median (range)",
            "| workload | condition | expected | reps | duet (metric) | within 1% | contains "
            "expected | sequential (metric) | within 1% | duet wall / CPU | sequential wall / "
            "CPU | duet - sequential |",
        )

        def rr(r: dict[str, Any] | None) -> str:
            if not r:
                return "—"
            if r["n"] == 1:
                return f"{r['median']:.4f}"
            return f"{r['median']:.4f} ({r['min']:.4f}-{r['max']:.4f})"

        for kind, conds in summary["ratios"].items():
            for cond, labels in conds.items():
                for label, r in labels.items():
                    d, s = r["duet"], r["sequential"]
                    diff = r["duet_minus_sequential"]
                    out.append(
                        f"| {kind} | {cond} | {label} | {r['reps']} | {rr(d['ratio'])} "
                        f"({','.join(d['metrics'])}) | {_frac(d['within_1pct'])} | "
                        f"{_frac(d['contains_expected'])} | {rr(s['ratio'])} "
                        f"({','.join(s['metrics'])}) | {_frac(s['within_1pct'])} | "
                        f"{rr(r['duet-wall'])} / {rr(r['duet-cpu'])} | "
                        f"{rr(r['sequential-wall'])} / {rr(r['sequential-cpu'])} | "
                        f"{'—' if diff is None else format(diff, '+.4f')} |"
                    )
    return "\n".join(out) + "\n"


# -- the experiments ---------------------------------------------------------------------------


class Driver:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ops: dict[str, int] = {}

    def calibrate(self) -> None:
        """Op counts for ``--iteration-ms``: the accuracy study's when it has them for the same
        iteration time (measured alone on CPU 0), else measured now and kept here."""
        for path in (RESULTS / "calibration.json", HERE / "results" / "calibration.json"):
            stored = json.loads(path.read_text()) if path.exists() else {}
            if stored.get("iteration_ms") == self.args.iteration_ms:
                self.ops = stored["ops"]
                log(f"op counts for {self.args.iteration_ms} ms from {path}: {self.ops}")
                return
        self.ops = accuracy.calibrate_ops(
            tuple(NATIVE), self.args.iteration_ms, RESULTS / "calibration.json"
        )

    def bound(self, kind: str, factor: float) -> float:
        """A generous bound of one cell's duration (the noise and busy process's lifetime)."""
        ms = 150.0 if kind == STARTUP else self.args.iteration_ms
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        return 120 + 6 * R * ((I + 2) * ms / 1e3 * factor + 0.5)

    def cell(self, key: str, cond: str, specs: list[BenchmarkSpec], kind: str, f: float) -> None:
        try:
            measure_cell(key, cond, specs, bound_s=self.bound(kind, f))
        except Interrupted:  # asked to stop: the cell is kept as failed, the study ends
            raise
        except Exception as e:  # a failed cell is reported, the others still run
            log(f"{key}: FAILED: {type(e).__name__}: {e}")

    def aa(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for rep in range(self.args.reps):
            for cond in self.args.conditions:
                for kind in self.args.workloads:
                    x = side(kind, self.ops.get(kind, 0))
                    self.cell(f"aa/{kind}/{cond}/rep{rep}", cond, pair("", x, x, R, I), kind, 3)

    def slow(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for trial in range(self.args.trials):
            for pct in SLOWDOWNS:
                for cond in self.args.slow_conditions:
                    for kind in self.args.slow_workloads:
                        ops = self.ops[kind]
                        a, b = side(kind, ops), side(kind, round(ops * (1 + pct)))
                        key = f"slow/{kind}/{cond}/{round(pct * 100)}pct/trial{trial}"
                        self.cell(key, cond, pair("", a, b, R, I), kind, 3)

    def ratio(self) -> None:
        R, I = self.args.runs, self.args.iterations  # noqa: E741
        for rep in range(self.args.reps_ratio):
            for cond in self.args.ratio_conditions:
                for kind in self.args.ratio_workloads:
                    for k in RATIOS:
                        if kind == STARTUP:
                            if k != 2.0:  # 20 against 21 starts: seconds per iteration
                                continue
                            a = SideSpec(kind="command", command=startup_command(1))
                            b = SideSpec(kind="command", command=startup_command(2))
                        else:
                            ops = self.ops[kind]
                            a, b = side(kind, ops), side(kind, round(ops * k))
                        key = f"ratio/{kind}/{cond}/{k:g}x/rep{rep}"
                        self.cell(key, cond, pair("", a, b, R, I), kind, 1 + k)


def _names(text: str, allowed: tuple[str, ...], what: str, p: argparse.ArgumentParser) -> list[str]:
    names = [x for x in text.split(",") if x]
    for name in names:
        if name not in allowed:
            p.error(f"unknown {what} {name!r}: choose from {', '.join(allowed)}")
    return names


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="R = 5 x I = 10, 1 repetition, 2 trials")
    p.add_argument("--iteration-ms", type=float, default=20.0)
    p.add_argument("--runs", type=int, default=None)
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--reps", type=int, default=None, help="repetitions of the A/A cells")
    p.add_argument("--trials", type=int, default=None, help="trials per slowdown")
    p.add_argument("--reps-ratio", type=int, default=None, help="repetitions of the ratio cells")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--slow-workloads", default=None)
    p.add_argument("--slow-conditions", default="noise")
    p.add_argument("--ratio-workloads", default=None)
    p.add_argument("--ratio-conditions", default="quiet,busy")
    p.add_argument("--only", default=",".join(EXPERIMENTS), help="experiments, comma-separated")
    p.add_argument("--results", type=Path, default=None, help="results directory")
    p.add_argument("--summarize-only", action="store_true")
    p.add_argument("--tables", action="store_true", help="print the markdown tables and exit")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {
        "runs": 5 if quick else 10,
        "iterations": 10 if quick else 30,
        "reps": 1 if quick else 5,
        "trials": 2 if quick else 20,
        "reps_ratio": 1 if quick else 5,
        "slow_workloads": "integer" if quick else ",".join(NATIVE),
        "ratio_workloads": f"integer,{STARTUP}" if quick else ",".join(WORKLOADS),
    }
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.workloads = _names(args.workloads, WORKLOADS, "workload", p)
    args.conditions = _names(args.conditions, CONDITIONS, "condition", p)
    args.slow_workloads = _names(args.slow_workloads, NATIVE, "slowdown workload", p)
    args.slow_conditions = _names(args.slow_conditions, CONDITIONS, "condition", p)
    args.ratio_workloads = _names(args.ratio_workloads, WORKLOADS, "ratio workload", p)
    args.ratio_conditions = _names(args.ratio_conditions, CONDITIONS, "condition", p)
    only = _names(args.only, EXPERIMENTS, "experiment", p)
    global RESULTS
    if args.results is not None:
        RESULTS = args.results.resolve()
    elif quick:
        RESULTS = HERE / "results" / "metric" / "quick"
    # accuracy's cell functions store under its RESULTS: point them at ours.
    accuracy.RESULTS = RESULTS
    if args.summarize_only or args.tables:
        summary = write_summary()
        if args.tables:
            print(tables(summary))
        return 0
    if shutil.which("xargs") is None and STARTUP in args.ratio_workloads:
        p.error("the start-up workload's 2x pair needs xargs (apt-get install findutils)")
    if os.geteuid() != 0:
        log("not root: duet will fall back to affinity-only isolation (recorded in the results)")
    workloads.build()
    noise.build()
    with accuracy.measuring_lock(command="benchmarks/metric_study.py"):
        log("measuring")
        d = Driver(args)
        d.calibrate()
        steps: dict[str, Callable[[], None]] = {name: getattr(d, name) for name in EXPERIMENTS}
        for name in only:
            log(f"experiment {name}")
            steps[name]()
            write_summary()  # after every experiment: an interrupted run keeps it
    summary = write_summary()
    log(f"summary: {RESULTS / 'metric-study.json'} ({len(summary['cells'])} cells)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Interrupted as e:  # the cells measured so far are on disk; a rerun resumes
        log(f"stopped: {e}")
        sys.exit(e.exit_code)
