"""cargo (criterion): A/A width and a 5% slowdown, criterion's timing (wall time) against the
fixed-count CPU-time route (issue 29, item 2 for cargo).

One git repository with a criterion bench target of two benchmarks, the xorshift loop of
``tests/fixtures/adapters/work.rs``: ``aa`` is the same in both commits (A/A), ``five`` does 5%
more steps in HEAD (20,000 -> 21,000). Two suites over the same target in one ``duet.toml``:

- ``wall``: criterion's own timing, the adapter's previous defaults (``warm_up_time = 0.1``,
  ``measurement_time = 0.2``, ``sample_size = 10``): criterion's ``ns/iter``, wall time decides;
- ``cpu``: the default route, a fixed count of calls per iteration chosen at discovery
  (``iteration_time = 0.1``), the invocation's CPU time per call; ``metric = "auto"``.

``duet compare base HEAD`` at R = 10 runs x I = 20 iterations (warm-up 1), once per condition:
``as-found`` (the machine as it is) and ``busy`` (plus one process spinning on the CPU,
unpinned, started before and stopped after the compare). The compare queues behind any other
duet measuring on the machine (``--wait``): the sides never share the cores with another
duet's sides, only with whatever else runs. Printed: per suite and benchmark the
deciding metric, the ratio, the 99% interval and its width (ci_high - ci_low, in % of 1), the
verdict. The results files go to ``benchmarks/results/cargo-cpu/<condition>.json.gz``.

Run: ``python benchmarks/cargo_cpu.py [--conditions as-found,busy] [--seed DIR]``. criterion is
built once into a seed crate (about 2 minutes of CPU; ``--seed`` reuses one this script made);
each compare takes 5-10 minutes of wall time on the shared VM.

**Rates** (issue 29's target: A/A <= 1% wide, a 5% slowdown found in >= 19 of 20 trials beside
one busy process): ``--trials N --condition busy`` (as ``benchmarks/go_cpu.py``'s). The
repository then holds the ``cpu`` suite only, and every trial is one ``duet compare base HEAD
--wait`` of its two benchmarks, ``five`` (the A/B) and ``aa`` (the A/A), in the same comparison;
the script checks on ``git diff base HEAD`` that the only line of code that differs is
``five``'s step count. The busy process starts once the comparison holds the measuring lock (not
while it discovers or queues behind another duet's measurement) and is killed when it ends. Per
trial: the results file (``trial-busy-00.json.gz``) and a line in ``trials-busy.txt`` (its row
in ``trials-busy.jsonl``); at the end the summary (``trials-busy-summary.txt``): the 5% found
(``regression`` on the deciding metric) in k of N with the exact (Clopper-Pearson) 95% interval
of the rate, the A/A's widths and verdicts, the deciding metric, the 5%'s ratios. ``--until
HH:MM`` (UTC) starts no trial that the previous one's length says would end later;
``--summarize`` summarizes the rows on disk; ``--resume`` continues them: the new trials are
numbered after the rows in ``trials-busy.jsonl``, appended to it and to ``trials-busy.txt``, and
the summary is over every row on disk (no trial file is overwritten; without ``--resume`` the
script refuses to start over rows on disk). Run with ``--seed`` to build criterion once for
all trials.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from go_cpu import fits, holds_lock  # the same lock check and deadline as go's rates
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "adapters"
OUT = ROOT / "benchmarks" / "results" / "cargo-cpu"

STEPS_BASE, STEPS_HEAD = 20_000, 21_000

BENCH = """use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn work(steps: u64) -> u64 {
    let steps = black_box(steps);
    let (mut x, mut acc) = (88172645463325252u64, 0u64);
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc = acc.wrapping_add(x & 0xff);
    }
    acc
}

fn benches(c: &mut Criterion) {
    c.bench_function("aa", |b| b.iter(|| work(20000)));
    c.bench_function("five", |b| b.iter(|| work(@STEPS@)));
}

criterion_group!(group, benches);
criterion_main!(group);
"""


def cargo() -> str:
    for candidate in (shutil.which("cargo"), os.path.expanduser("~/.cargo/bin/cargo")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("cargo is not on PATH nor in ~/.cargo/bin")


def build_seed(where: Path) -> Path:
    """A crate named ``seed`` with criterion built: its target directory seeds each version."""
    crate = where / "seed"
    (crate / "src").mkdir(parents=True)
    (crate / "benches").mkdir()
    manifest = (FIXTURES / "Cargo.toml").read_text()
    (crate / "Cargo.toml").write_text(
        manifest.replace('name = "work"\nversion', 'name = "seed"\nversion')
    )
    (crate / "src" / "lib.rs").write_text("")
    (crate / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", "1"))
    subprocess.run([cargo(), "bench", "--no-run", "--quiet"], cwd=crate, check=True)
    return crate


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=duet", "-c", "user.email=duet@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repo(where: Path, seed: Path, wall: bool = True) -> Path:
    """The project: ``base`` and HEAD (``five`` 5% more steps); the ``cpu`` suite, and the
    ``wall`` suite (criterion's timing) unless ``wall`` is false."""
    repo = where / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "benches").mkdir()
    (repo / "Cargo.toml").write_text((FIXTURES / "Cargo.toml").read_text())
    lock = (seed / "Cargo.lock").read_text().replace('name = "seed"', 'name = "work"')
    (repo / "Cargo.lock").write_text(lock)
    (repo / "src" / "lib.rs").write_text("")
    (repo / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", str(STEPS_BASE)))
    (repo / "duet.toml").write_text(
        'runs = 10\niterations = 20\nwarmup = 1\nmetric = "auto"\n'
        f'build = "mkdir -p target && cp -a {seed}/target/. target/"\n'
        f'\n[[suite]]\nadapter = "cargo"\npath = "."\nname = "cpu"\ncargo = "{cargo()}"\n'
        + (
            f'\n[[suite]]\nadapter = "cargo"\npath = "."\nname = "wall"\ncargo = "{cargo()}"\n'
            "warm_up_time = 0.1\nmeasurement_time = 0.2\nsample_size = 10\n"
            if wall
            else ""
        )
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "benches" / "work.rs").write_text(BENCH.replace("@STEPS@", str(STEPS_HEAD)))
    git(repo, "commit", "-q", "-am", "five: 5% more steps")
    return repo


def compare(repo: Path, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "duet_bench", "compare", "base", "HEAD", "--out", str(out),
         "--quiet", "--no-plots", "--fail-on", "never", "--wait"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"duet compare exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc


def summary(condition: str, doc: dict[str, Any], load: str) -> None:
    print(f"\n## {condition} (load average before: {load})\n")
    print(
        "| benchmark | metric | ratio | 99% interval | width | verdict | wall ratio | CPU ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b in doc["benchmarks"]:
        a = b.get("analysis") or {}
        if "ratio" not in a:
            print(f"| {b['name']} | - | - | - | - | {b.get('note') or 'failed'} | | |")
            continue
        metrics = a.get("metrics", {})
        other = [
            f"{metrics[m]['ratio']:.4f}" if "ratio" in metrics.get(m, {}) else "-"
            for m in ("wall", "cpu")
        ]
        width = 100 * (a["ci_high"] - a["ci_low"])
        print(
            f"| {b['name']} | {a['metric']} | {a['ratio']:.4f} | "
            f"{a['ci_low']:.4f}-{a['ci_high']:.4f} | {width:.2f}% | {a['verdict']} | "
            f"{other[0]} | {other[1]} |"
        )


COMPARE = [sys.executable, "-m", "duet_bench", "compare", "base", "HEAD"]
FLAGS = ["--quiet", "--no-plots", "--fail-on", "never", "--wait"]


def compare_beside(repo: Path, out: Path, condition: str) -> tuple[dict[str, Any], float]:
    """One comparison of the ``cpu`` suite; "busy": the busy process spins from the moment the
    comparison holds the measuring lock until it ends. Returns the results and the seconds
    before the lock (discovery, and any queue behind another duet)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*COMPARE, "--out", str(out), *FLAGS],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    spinner = None
    try:
        while proc.poll() is None and not holds_lock(proc.pid):
            time.sleep(0.05)
        waited = time.monotonic() - t0
        if condition == "busy" and proc.poll() is None:
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        stdout, stderr = proc.communicate()
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"duet compare failed ({proc.returncode}):\n{stdout}\n{stderr}")
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc, waited


def aa_is_unchanged(repo: Path) -> str:
    """The diff between the commits, checked: one line of code, ``five``'s step count."""
    diff = subprocess.run(
        ["git", "diff", "-U0", "base", "HEAD"], cwd=repo, check=True, capture_output=True
    ).stdout.decode()
    body = [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    five = '    c.bench_function("five", |b| b.iter(|| work({})));'
    if body != ["-" + five.format(STEPS_BASE), "+" + five.format(STEPS_HEAD)]:
        raise SystemExit(f"base and HEAD differ beyond five's steps:\n{diff}")
    return f"base..HEAD changes one line of code, five's steps ({STEPS_BASE} -> {STEPS_HEAD})"


def trial(repo: Path, out: Path, condition: str, k: int) -> dict[str, Any]:
    """One comparison of both benchmarks; its results file gzipped, its row returned."""
    load0 = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="duet-cargo-trial-") as tmp:
        doc, waited = compare_beside(repo, Path(tmp) / "out", condition)
    row: dict[str, Any] = {
        "trial": k,
        "started": started,
        "waited_s": waited,
        "minutes": (time.monotonic() - t0) / 60,
        "load": (load0, os.getloadavg()[0]),
    }
    with gzip.open(out / f"trial-{condition}-{k:02d}.json.gz", "wt") as f:
        json.dump(doc, f)
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    for role, name in (("ab", "cpu/five"), ("aa", "cpu/aa")):
        b = by_name[name]
        a = b.get("analysis") or {}
        commands = {side: b["versions"][side]["command"] for side in ("baseline", "candidate")}
        calls = re.search(r"--sample-size (\d+)", commands["baseline"])
        if "ratio" not in a:
            raise SystemExit(f"{name} was not measured in trial {k}: {b.get('note')}")
        row[role] = {
            "metric": a["metric"],
            "reason": a.get("metric_reason"),
            "ratio": a["ratio"],
            "ci": (a["ci_low"], a["ci_high"]),
            "width_pct": 100 * (a["ci_high"] - a["ci_low"]),
            "verdict": a["verdict"],
            "calls": int(calls.group(1)) if calls else None,
            "commands": commands,
        }
    return row


def trial_line(condition: str, row: dict[str, Any]) -> str:
    lo, hi = row["load"]
    parts = [
        f"trial {row['trial']:02d} {row['started']} UTC {condition}",
        f"{row['minutes']:.1f} min ({row['waited_s']:.0f} s to the lock) load {lo:.1f}-{hi:.1f}",
    ]
    for role, label in (("ab", "five 1.05"), ("aa", "aa A/A")):
        r = row[role]
        parts.append(
            f"{label} ({r['calls']} calls) by {r['metric']} {r['ratio']:.4f} "
            f"[{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] width {r['width_pct']:.2f}% {r['verdict']}"
        )
    return " | ".join(parts)


def rates(condition: str, rows: list[dict[str, Any]], check: str) -> str:
    """The rates over the trials."""
    n = len(rows)
    regressions = sum(r["ab"]["verdict"] == "regression" for r in rows)
    on_cpu = sum(r["ab"]["verdict"] == "regression" and r["ab"]["metric"] == "cpu" for r in rows)
    ci = binomtest(regressions, n).proportion_ci(confidence_level=0.95, method="exact")
    widths = [r["aa"]["width_pct"] for r in rows]
    ratios = [r["ab"]["ratio"] for r in rows]
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["aa"]["verdict"]] = verdicts.get(r["aa"]["verdict"], 0) + 1
    not_cpu = [r["trial"] for r in rows if {r["ab"]["metric"], r["aa"]["metric"]} != {"cpu"}]
    same = all(r["aa"]["commands"]["baseline"] == r["aa"]["commands"]["candidate"] for r in rows)
    return "\n".join([
        f"{condition}: {n} trials, R = 10 x I = 20, {sum(r['minutes'] for r in rows):.0f} min "
        f"(median {median(r['minutes'] for r in rows):.1f} per trial, of which "
        f"{median(r['waited_s'] for r in rows) / 60:.1f} before the lock: discovery, queue)",
        f"5% slower (five) found: {regressions} of {n} (exact 95% interval of the rate "
        f"{100 * ci.low:.1f}-{100 * ci.high:.1f}%); of them decided on CPU time: {on_cpu}",
        f"  its ratios: median {median(ratios):.4f}, {min(ratios):.4f}-{max(ratios):.4f}; "
        f"widths median {median(r['ab']['width_pct'] for r in rows):.2f}%",
        f"A/A (aa) widths: median {median(widths):.2f}%, max {max(widths):.2f}%, "
        f"<= 1%: {sum(w <= 1.0 for w in widths)} of {n}; verdicts "
        + ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items())),
        "deciding metric (five/aa) per trial: "
        + " ".join(f"{r['ab']['metric']}/{r['aa']['metric']}" for r in rows),
        "auto chose CPU time every time"
        if not not_cpu
        else f"auto did not choose CPU time (for one or both) in trials {not_cpu}",
        check,
        "aa's command is the same on both sides in every trial"
        if same
        else "aa's command differs between the sides",
    ])  # fmt: skip


def run_trials(o: argparse.Namespace, where: Path) -> None:
    """``--trials N``; ``--until HH:MM`` (UTC) starts no trial that the last one's length says
    would end after it; ``--summarize`` writes the summary of the trials on disk."""
    rows_file = OUT / f"trials-{o.condition}.jsonl"
    check = ""
    rows = []
    if o.summarize or o.resume:
        rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()]
        check = f"base..HEAD changes one line of code, five's steps ({STEPS_BASE} -> {STEPS_HEAD})"
    elif rows_file.exists():
        sys.exit(f"{rows_file} holds trials: continue them with --resume, or move it away")
    if not o.summarize:
        seed = o.seed or build_seed(where)
        repo = make_repo(where, seed, wall=False)
        check = aa_is_unchanged(repo)
    first = len(rows)  # --resume numbers the new trials after the rows on disk
    for k in range(first, first + (0 if o.summarize else o.trials)):
        if rows and o.until and not fits(rows[-1]["minutes"], o.until):
            print(f"trial {k:02d} would end after {o.until} UTC: stopped", flush=True)
            break
        if (OUT / f"trial-{o.condition}-{k:02d}.json.gz").exists():
            sys.exit(f"trial {k:02d}'s results file is on disk: it is not overwritten")
        row = trial(repo, OUT, o.condition, k)
        rows.append(row)
        text = trial_line(o.condition, row)
        print(text, flush=True)
        with open(OUT / f"trials-{o.condition}.txt", "a") as f:
            f.write(text + "\n")
        with open(rows_file, "a") as f:
            f.write(json.dumps(row) + "\n")
    text = rates(o.condition, rows, check)
    print(text, flush=True)
    (OUT / f"trials-{o.condition}-summary.txt").write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conditions", default="as-found,busy")
    parser.add_argument("--seed", type=Path, help="a seed crate an earlier run built")
    parser.add_argument("--trials", type=int, default=0, help="the rates mode: N trials")
    parser.add_argument("--condition", choices=("quiet", "busy"), default="busy")
    parser.add_argument("--until", default="", help="HH:MM UTC: start no trial ending later")
    parser.add_argument("--summarize", action="store_true", help="summarize the trials on disk")
    parser.add_argument(
        "--resume", action="store_true", help="continue the trials on disk (numbered after them)"
    )
    args = parser.parse_args()
    # A kill of the run (SIGTERM) ends it as Ctrl-C would: the busy process and the
    # temporary repository go with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duet-cargo-cpu-") as tmp:
        where = Path(tmp)
        if args.trials or args.summarize:
            run_trials(args, where)
            return
        seed = args.seed or build_seed(where)
        repo = make_repo(where, seed)
        for condition in args.conditions.split(","):
            load = Path("/proc/loadavg").read_text().split()[:3]
            spinner = None
            if condition == "busy":
                spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                doc = compare(repo, where / f"out-{condition}")
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
            with gzip.open(OUT / f"{condition}.json.gz", "wt") as f:
                json.dump(doc, f)
            summary(condition, doc, " ".join(load))


if __name__ == "__main__":
    main()
