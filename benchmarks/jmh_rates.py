"""JMH: the rates of issue 29's target beside one busy process (A/A width, a 5% slowdown found
in k of N trials, 2x measured within 2%).

The fixture JMH project (``tests/fixtures/adapters/jmh``) in a scratch git repository, ``base``
and HEAD. It holds two benchmarks, and every trial is **one** ``duet compare base HEAD --wait``
of both: ``bench.SteadyBenchmark.steady`` is the same in both commits (the A/A) and
``bench.WorkBenchmark.mix:seed=7`` does more work at HEAD (``Work.ROUNDS``, which only ``mix``
reads: 2000 -> 2100 for ``--pair 5``, 2000 -> 4000 for ``--pair 2x``). The script checks on
``git diff base HEAD`` that this is the only line that differs. The suite takes the adapter's
defaults (JMH ``-w 100ms -r 200ms``, duet's warm-up) except R = 10 runs x I = 20 iterations,
``metric = "auto"`` and cgroup isolation.

One busy process (a Python spin loop, unpinned) starts once the comparison holds duet's
measuring lock (not while it builds the versions or queues behind another duet's measurement)
and is killed when it ends (``cargo_cpu.compare_beside``). Per trial: the results file gzipped
(``trial-busy-00.json.gz``; ``trial-2x-busy-00.json.gz`` for the 2x), a JSON row
(``trials-busy.jsonl``) and a text line (``trials-busy.txt``), with the load average before and
after. The summary (``trials-busy-summary.txt``): the 5% found (``regression`` on the deciding
metric) in k of N with the exact (Clopper-Pearson) 95% interval of the rate, the A/A's widths
and verdicts, the deciding metric each time, the 5%'s ratios; for the 2x, each ratio, whether it
lies within [1.96, 2.04] and whether its interval covers 2.

    python benchmarks/jmh_rates.py --trials 20 [--pair 5|2x] [--until HH:MM] [--resume]
    python benchmarks/jmh_rates.py --summarize [--pair 2x]

``--until HH:MM`` (UTC) starts no trial that the previous one's length says would end later;
``--resume`` numbers the new trials after the rows on disk and appends to them; without it the
script refuses to start over rows on disk.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from cargo_cpu import compare_beside, git  # the lock check and busy process of cargo's rates
from go_cpu import fits
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "adapters" / "jmh"
OUT = ROOT / "benchmarks" / "results" / "jmh"


def set_out(out: Path) -> None:
    """``--out``: another results directory (a series kept apart, as ``after-runq/``)."""
    global OUT
    OUT = out.resolve()


WORK = "src/main/java/bench/Work.java"
ROUNDS_LINE = "    public static final int ROUNDS = {};"
BASE_ROUNDS = 2000
HEAD_ROUNDS = {"5": 2100, "2x": 4000}
EXPECTED = {"5": 1.05, "2x": 2.0}
AB = "jvm/bench.WorkBenchmark.mix:seed=7"
AA = "jvm/bench.SteadyBenchmark.steady"
CONFIG = (
    'runs = 10\niterations = 20\nmetric = "auto"\nisolation = "cgroup"\n\n'
    '[[suite]]\nadapter = "jmh"\npath = "."\nname = "jvm"\n'
)


def make_repo(where: Path, pair: str) -> Path:
    """The project at ``base`` (ROUNDS 2000) and HEAD (ROUNDS of the pair), both benchmarks."""
    repo = where / "project"
    for src in sorted(FIXTURE.rglob("*")):
        if src.is_file():
            dst = repo / src.relative_to(FIXTURE)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(src.read_text())
    # The 2x measures mix alone (the A/A is the 5% series'): half the machine time per trial.
    (repo / "duet.toml").write_text(CONFIG + ('filter = "WorkBenchmark"\n' if pair == "2x" else ""))
    (repo / ".gitignore").write_text("target/\n.duet-adapters/\n")
    work = repo / WORK
    base_text = work.read_text()
    if ROUNDS_LINE.format(BASE_ROUNDS) not in base_text.splitlines():
        raise SystemExit(f"{WORK} of the fixture has no line {ROUNDS_LINE.format(BASE_ROUNDS)!r}")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    work.write_text(
        base_text.replace(ROUNDS_LINE.format(BASE_ROUNDS), ROUNDS_LINE.format(HEAD_ROUNDS[pair]))
    )
    git(repo, "commit", "-q", "-am", f"Work.ROUNDS = {HEAD_ROUNDS[pair]}")
    return repo


def aa_is_unchanged(repo: Path, pair: str) -> str:
    """The diff between the commits, checked: one line of code, ``Work.ROUNDS``."""
    diff = subprocess.run(
        ["git", "diff", "-U0", "base", "HEAD"], cwd=repo, check=True, capture_output=True
    ).stdout.decode()
    body = [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    want = ["-" + ROUNDS_LINE.format(BASE_ROUNDS), "+" + ROUNDS_LINE.format(HEAD_ROUNDS[pair])]
    if body != want:
        raise SystemExit(f"base and HEAD differ beyond Work.ROUNDS:\n{diff}")
    return (
        f"base..HEAD changes one line of code, Work.ROUNDS ({BASE_ROUNDS} -> "
        f"{HEAD_ROUNDS[pair]}), which only WorkBenchmark.mix reads"
    )


def measured(b: dict[str, Any], k: int) -> dict[str, Any]:
    """One benchmark's figures in a trial's row."""
    a = b.get("analysis") or {}
    if "ratio" not in a:
        raise SystemExit(f"{b['name']} was not measured in trial {k}: {b.get('note')}")
    metrics = a.get("metrics", {})
    return {
        "metric": a["metric"],
        "reason": a.get("metric_reason"),
        "ratio": a["ratio"],
        "ci": (a["ci_low"], a["ci_high"]),
        "width_pct": 100 * (a["ci_high"] - a["ci_low"]),
        "verdict": a["verdict"],
        "busy_share": a.get("busy_share"),
        "by_metric": {
            m: {
                "ratio": v["ratio"],
                "ci": (v.get("ci_low"), v.get("ci_high")),
                "verdict": v.get("verdict"),
            }
            for m, v in metrics.items()
            if isinstance(v, dict) and "ratio" in v
        },
        "runs": a.get("runs_used"),
    }


def trial(repo: Path, stem: str, k: int) -> dict[str, Any]:
    """One comparison of both benchmarks beside the busy process; its results file gzipped,
    its row returned."""
    load0 = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="duet-jmh-trial-") as tmp:
        doc, waited = compare_beside(repo, Path(tmp) / "out", "busy")
    row: dict[str, Any] = {
        "trial": k,
        "started": started,
        "waited_s": waited,
        "minutes": (time.monotonic() - t0) / 60,
        "load": (load0, os.getloadavg()[0]),
    }
    with gzip.open(OUT / f"trial-{stem}-{k:02d}.json.gz", "wt") as f:
        json.dump(doc, f)
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    for role, name in (("ab", AB), ("aa", AA)):
        if name in by_name or role == "ab":
            row[role] = measured(by_name[name], k)
    return row


def trial_line(pair: str, row: dict[str, Any]) -> str:
    lo, hi = row["load"]
    parts = [
        f"trial {row['trial']:02d} {row['started']} UTC busy",
        f"{row['minutes']:.1f} min ({row['waited_s']:.0f} s to the lock) load {lo:.1f}-{hi:.1f}",
    ]
    for role, label in (("ab", f"mix {EXPECTED[pair]:g}x"), ("aa", "steady A/A")):
        if role not in row:
            continue
        r = row[role]
        others = " ".join(
            f"{m} {v['ratio']:.4f}" for m, v in sorted(r["by_metric"].items()) if m != r["metric"]
        )
        parts.append(
            f"{label} by {r['metric']} {r['ratio']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] "
            f"width {r['width_pct']:.2f}% {r['verdict']} (also {others or '-'})"
        )
    return " | ".join(parts)


def counts(values: list[str]) -> str:
    seen: dict[str, int] = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    return ", ".join(f"{v} {c}" for v, c in sorted(seen.items()))


def on_cpu(r: dict[str, Any]) -> dict[str, Any]:
    """The CPU-time figures of a benchmark's row (analysed every time, decided or not)."""
    c: dict[str, Any] = r["by_metric"]["cpu"]
    return c


def rates(pair: str, rows: list[dict[str, Any]], check: str) -> str:
    """The rates over the trials on the deciding metric (and, beside them, what CPU time
    alone would have said), and for the 2x each trial's ratio against [1.96, 2.04]."""
    n = len(rows)
    found = sum(r["ab"]["verdict"] == "regression" for r in rows)
    ci = binomtest(found, n).proportion_ci(confidence_level=0.95, method="exact")
    ratios = [r["ab"]["ratio"] for r in rows]
    cpu_found = sum(on_cpu(r["ab"])["verdict"] == "regression" for r in rows)
    shares = [min(r["ab"]["busy_share"].values()) for r in rows if r["ab"].get("busy_share")]
    lines = [
        f"busy, pair {pair}: {n} trials, R = 10 x I = 20, {sum(r['minutes'] for r in rows):.0f} "
        f"min (median {median(r['minutes'] for r in rows):.1f} per trial, of which "
        f"{median(r['waited_s'] for r in rows) / 60:.1f} before the lock: builds, queue); "
        f"load average {min(min(r['load']) for r in rows):.1f}-"
        f"{max(max(r['load']) for r in rows):.1f}",
        f"{EXPECTED[pair]:g}x (mix) found (regression): {found} of {n} (exact 95% interval of "
        f"the rate {100 * ci.low:.1f}-{100 * ci.high:.1f}%); verdicts "
        + counts([r["ab"]["verdict"] for r in rows]),
        f"  its ratios: median {median(ratios):.4f}, {min(ratios):.4f}-{max(ratios):.4f}; "
        f"widths median {median(r['ab']['width_pct'] for r in rows):.2f}%",
        "deciding metric per trial (mix): " + " ".join(r["ab"]["metric"] for r in rows),
        f"  on CPU time (analysed every time): found {cpu_found} of {n}, ratios median "
        f"{median(on_cpu(r['ab'])['ratio'] for r in rows):.4f}; the sides' share of the "
        "iteration on a CPU or in its queue (the lower side) median "
        + (f"{100 * median(shares):.0f}%" if shares else "-"),
    ]  # fmt: skip
    aa = [r["aa"] for r in rows if "aa" in r]
    if aa:
        widths = [r["width_pct"] for r in aa]
        cpu_widths = [100 * (on_cpu(r)["ci"][1] - on_cpu(r)["ci"][0]) for r in aa]
        lines += [
            f"A/A (steady) widths: median {median(widths):.2f}%, max {max(widths):.2f}%, "
            f"<= 1%: {sum(w <= 1.0 for w in widths)} of {len(aa)}; verdicts "
            + counts([r["verdict"] for r in aa])
            + "; deciding metric " + counts([r["metric"] for r in aa]),
            f"  on CPU time: widths median {median(cpu_widths):.2f}%, max {max(cpu_widths):.2f}%, "
            f"<= 1%: {sum(w <= 1.0 for w in cpu_widths)} of {len(aa)}; verdicts "
            + counts([str(on_cpu(r)["verdict"]) for r in aa]),
        ]  # fmt: skip
    if pair == "2x":
        for r in rows:
            for label, m in (("decided", r["ab"]), ("CPU time", on_cpu(r["ab"]))):
                lo, hi = m["ci"]
                within = 1.96 <= m["ratio"] <= 2.04
                lines.append(
                    f"  trial {r['trial']:02d} {label}: {m['ratio']:.4f} [{lo:.4f}, {hi:.4f}] "
                    f"within [1.96, 2.04] {'yes' if within else 'no'}; interval covers 2 "
                    f"{'yes' if lo <= 2.0 <= hi else 'no'}"
                )
    lines.append(check)
    return "\n".join(lines)


def run_trials(o: argparse.Namespace, where: Path) -> None:
    stem = "busy" if o.pair == "5" else "2x-busy"
    rows_file = OUT / f"trials-{stem}.jsonl"
    rows: list[dict[str, Any]] = []
    if o.summarize or o.resume:
        rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()]
    elif rows_file.exists():
        sys.exit(f"{rows_file} holds trials: continue them with --resume, or move it away")
    check = (
        f"base..HEAD changes one line of code, Work.ROUNDS ({BASE_ROUNDS} -> "
        f"{HEAD_ROUNDS[o.pair]}), which only WorkBenchmark.mix reads"
    )
    if not o.summarize:
        repo = make_repo(where, o.pair)
        check = aa_is_unchanged(repo, o.pair)
    first = len(rows)
    for k in range(first, first + (0 if o.summarize else o.trials)):
        if rows and o.until and not fits(rows[-1]["minutes"], o.until):
            print(f"trial {k:02d} would end after {o.until} UTC: stopped", flush=True)
            break
        if (OUT / f"trial-{stem}-{k:02d}.json.gz").exists():
            sys.exit(f"trial {k:02d}'s results file is on disk: it is not overwritten")
        row = trial(repo, stem, k)
        rows.append(row)
        text = trial_line(o.pair, row)
        print(text, flush=True)
        with open(OUT / f"trials-{stem}.txt", "a") as f:
            f.write(text + "\n")
        with open(rows_file, "a") as f:
            f.write(json.dumps(row) + "\n")
    if not rows:
        sys.exit("no trial on disk to summarize")
    text = rates(o.pair, rows, check)
    print(text, flush=True)
    (OUT / f"trials-{stem}-summary.txt").write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=0, help="N trials")
    parser.add_argument("--pair", choices=tuple(HEAD_ROUNDS), default="5", help="the change")
    parser.add_argument("--until", default="", help="HH:MM UTC: start no trial ending later")
    parser.add_argument("--summarize", action="store_true", help="summarize the trials on disk")
    parser.add_argument(
        "--resume", action="store_true", help="continue the trials on disk (numbered after them)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"the results directory (default {OUT})"
    )
    args = parser.parse_args()
    if args.out is not None:
        set_out(args.out)
    # A kill (SIGTERM) ends the run as Ctrl-C would: the busy process and the scratch
    # repository go with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duet-jmh-rates-") as tmp:
        run_trials(args, Path(tmp))


if __name__ == "__main__":
    main()
