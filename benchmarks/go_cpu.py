"""go suites decided on CPU time: A/A width and a 5% slowdown, wall time against CPU time.

Issue 29, item 2. A Go package with one benchmark (the xorshift loop of
``tests/fixtures/adapters/work_test.go``, 20,000 steps per operation) in a git repository of
two commits: ``base``, and ``head`` where the loop does 5% more steps (21,000). ``duet compare``
with a ``[[suite]] adapter = "go"`` (``benchtime`` the default 100 ms: Go chooses N in the
baseline, every iteration runs N operations), R = 10 runs x I = 20 iterations, crossover at
every iteration (the default), ``metric = "auto"``:

- A/A: ``base`` against ``base``; A/B: ``base`` against ``head`` (true ratio 1.05 for the
  operations; the process's start-up in the CPU sample dilutes it slightly);
- ``quiet``: nothing of ours beside it (the machine is shared: other people's builds and tests
  run, say so with the figures); ``busy``: one more process spinning on the CPUs
  (``python -c 'while True: pass'``, not pinned) through the comparison.

Every comparison's results file holds every metric's analysis of the same runs
(``analysis.metrics``): ``wall`` is Go's ``ns/op`` (what decided go before it had a CPU sample),
``cpu`` the process's CPU time over N operations (what decides now). One line per comparison:
ratio, 99% interval, its width, verdict, per metric; the load average before and after. Each
comparison queues behind any other duet measuring on the machine (``--wait``).

Run from the repository root as root (cgroups): ``python benchmarks/go_cpu.py --out
benchmarks/results/go-cpu`` (``--repeat K`` repeats every cell).

**Rates** (issue 29's target: A/A <= 1% wide, a 5% slowdown found in >= 19 of 20 trials beside
one busy process): ``--trials N --condition busy``. Every trial is one ``duet compare base head``
of the suite's two benchmarks, ``BenchmarkSlowed`` (5% more steps at ``head``: the A/B) and
``BenchmarkSteady`` (the same code in both commits: the A/A), in the same comparison. The busy
process starts once the comparison holds the measuring lock (not while it queues behind
another duet's measurement, nor through its discovery) and is killed when it ends. Per trial:
the results file (``trial-busy-00.json.gz``) and a line in ``trials-busy.txt`` (its row in
``trials-busy.jsonl``); at the end the summary (``trials-busy-summary.txt``): the 5% found
(``regression`` on the deciding metric) in k of N with the exact (Clopper-Pearson) 95% interval
of the rate, the A/A's widths and verdicts, the deciding metric, the 5%'s ratios. ``--until
HH:MM`` (UTC) starts no trial that would end later; ``--summarize`` summarizes the rows on disk.
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

from scipy.stats import binomtest

from duet_bench.lock import lock_path, read_holder

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "adapters" / "work_test.go"
GO_MOD = "module example.com/work\n\ngo 1.21\n"
CONFIG = """runs = 10
iterations = 20
warmup = 1
metric = "auto"

[[suite]]
adapter = "go"
path = "work"
go = "{go}"
"""


def source(steps: int) -> str:
    return FIXTURE.read_text().replace("@SLOWED@", str(steps)).replace("@EXTRA@", "BenchmarkX")


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)


def make_repo(where: Path, go: str) -> Path:
    repo = where / "project"
    (repo / "work").mkdir(parents=True)
    (repo / "go.mod").write_text(GO_MOD)
    (repo / "duet.toml").write_text(CONFIG.format(go=go))
    (repo / "work" / "work_test.go").write_text(source(20_000))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "work" / "work_test.go").write_text(source(21_000))
    git(repo, "commit", "-q", "-am", "5% more steps in BenchmarkSlowed")
    git(repo, "tag", "head")
    return repo


def compare_command(head: str, out: Path, bench: str) -> list[str]:
    cmd = [sys.executable, "-m", "duet_bench", "compare", "base", head, "--out", str(out)]
    cmd += ["--quiet", "--no-plots", "--fail-on", "never", "--wait"]
    return [*cmd, "--bench", bench]


def results(returncode: int, stdout: str, stderr: str, out: Path) -> dict[str, Any]:
    if returncode not in (0, 1):
        raise SystemExit(f"duet compare failed ({returncode}):\n{stdout}\n{stderr}")
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc


def compare(repo: Path, head: str, out: Path) -> dict[str, Any]:
    cmd = compare_command(head, out, "go-work/BenchmarkSlowed")
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    return results(done.returncode, done.stdout, done.stderr, out)


def line(cell: str, doc: dict[str, Any]) -> str:
    b = doc["benchmarks"][0]
    a = b["analysis"]
    parts = [cell, f"decided by {a['metric']}"]
    for metric in ("wall", "cpu"):
        m = a["metrics"].get(metric) or {}
        if "ratio" not in m:
            parts.append(f"{metric}: {m.get('missing', 'n/a')}")
            continue
        width = 100 * (m["ci_high"] - m["ci_low"])
        parts.append(
            f"{metric} {m['ratio']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}] "
            f"width {width:.2f}% {m['verdict']}"
        )
    return " | ".join(parts)


def holds_lock(pid: int) -> bool:
    """Whether the duet of ``pid`` holds the machine's measuring lock (it writes its pid there
    when it takes it, after discovery and any wait behind another duet)."""
    holder = read_holder(lock_path())
    return holder is not None and holder.pid == pid


def compare_beside(repo: Path, out: Path, condition: str) -> tuple[dict[str, Any], float]:
    """One comparison of both benchmarks; "busy": the busy process spins from the moment the
    comparison holds the measuring lock (not while it queues behind another duet's measurement,
    which it would disturb) until it ends. Returns the results and the seconds before the lock."""
    cmd = compare_command("head", out, "go-work/BenchmarkS*")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
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
    return results(proc.returncode, stdout, stderr, out), waited


def steady_is_unchanged(repo: Path) -> str:
    """The diff between the commits, checked: apart from the fixture's header comment (where
    the placeholders are named, so replaced too), only ``BenchmarkSlowed``'s step count."""
    diff = subprocess.run(
        ["git", "diff", "-U0", "base", "head"], cwd=repo, check=True, capture_output=True
    ).stdout.decode()
    hunks = diff.split("\n@@")[1:]
    code = [h for h in hunks if not all(ln[1:].startswith("//") for ln in h.splitlines()[1:])]
    body = code[0].splitlines()[1:] if len(code) == 1 else []
    expected = ["-\t\tsink += work(20000)", "+\t\tsink += work(21000)"]
    if body != expected or "func BenchmarkSlowed(" not in code[0].splitlines()[0]:
        raise SystemExit(f"base and head differ beyond BenchmarkSlowed's steps:\n{diff}")
    return "base..head changes one line of code, in BenchmarkSlowed (20000 -> 21000 steps)"


def decided(bench: dict[str, Any]) -> tuple[str, float, float, float, str]:
    """The deciding metric, its ratio, interval and verdict."""
    a = bench["analysis"]
    return a["metric"], a["ratio"], a["ci_low"], a["ci_high"], a["verdict"]


def trial(repo: Path, out: Path, condition: str, k: int) -> dict[str, Any]:
    """One comparison of both benchmarks; its results file gzipped, its row returned."""
    load0 = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="duet-go-trial-") as tmp:
        doc, waited = compare_beside(repo, Path(tmp) / "out", condition)
    minutes = (time.monotonic() - t0) / 60
    load1 = os.getloadavg()[0]
    name = f"trial-{condition}-{k:02d}"
    with gzip.open(out / f"{name}.json.gz", "wt") as f:
        json.dump(doc, f)
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    row = {
        "trial": k,
        "started": started,
        "waited_s": waited,
        "minutes": minutes,
        "load": (load0, load1),
    }
    for role, bench in (("ab", "go-work/BenchmarkSlowed"), ("aa", "go-work/BenchmarkSteady")):
        b = by_name[bench]
        metric, ratio, lo, hi, verdict = decided(b)
        commands = {side: b["versions"][side]["command"] for side in ("baseline", "candidate")}
        row[role] = {
            "metric": metric,
            "reason": b["analysis"].get("metric_reason"),
            "ratio": ratio,
            "ci": (lo, hi),
            "width_pct": 100 * (hi - lo),
            "verdict": verdict,
            "commands": commands,
        }
    return row


def trial_line(condition: str, row: dict[str, Any]) -> str:
    lo, hi = row["load"]
    parts = [
        f"trial {row['trial']:02d} {row['started']} UTC {condition}",
        f"{row['minutes']:.1f} min ({row['waited_s']:.0f} s to the lock) load {lo:.1f}-{hi:.1f}",
    ]
    for role, label in (("ab", "Slowed 1.05"), ("aa", "Steady A/A")):
        r = row[role]
        parts.append(
            f"{label} by {r['metric']} {r['ratio']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] "
            f"width {r['width_pct']:.2f}% {r['verdict']}"
        )
    return " | ".join(parts)


def summary(condition: str, rows: list[dict[str, Any]], check: str) -> str:
    """The rates over the trials."""
    n = len(rows)
    found = sum(r["ab"]["verdict"] == "regression" and r["ab"]["metric"] == "cpu" for r in rows)
    regressions = sum(r["ab"]["verdict"] == "regression" for r in rows)
    ci = binomtest(regressions, n).proportion_ci(confidence_level=0.95, method="exact")
    widths = [r["aa"]["width_pct"] for r in rows]
    ratios = [r["ab"]["ratio"] for r in rows]
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["aa"]["verdict"]] = verdicts.get(r["aa"]["verdict"], 0) + 1
    metrics = [f"{r['ab']['metric']}/{r['aa']['metric']}" for r in rows]
    not_cpu = [r["trial"] for r in rows if {r["ab"]["metric"], r["aa"]["metric"]} != {"cpu"}]
    same = all(r["aa"]["commands"]["baseline"] == r["aa"]["commands"]["candidate"] for r in rows)
    lines = [
        f"{condition}: {n} trials, R = 10 x I = 20, {sum(r['minutes'] for r in rows):.0f} min "
        f"(median {median(r['minutes'] for r in rows):.1f} per trial, of which "
        f"{median(r['waited_s'] for r in rows) / 60:.1f} before the lock: discovery, queue)",
        f"5% slower (BenchmarkSlowed) found: {regressions} of {n} "
        f"(exact 95% interval of the rate {100 * ci.low:.1f}-{100 * ci.high:.1f}%); "
        f"of them decided on CPU time: {found}",
        "  its ratios: median "
        f"{median(ratios):.4f}, {min(ratios):.4f}-{max(ratios):.4f}; widths median "
        f"{median(r['ab']['width_pct'] for r in rows):.2f}%",
        f"A/A (BenchmarkSteady) widths: median {median(widths):.2f}%, max {max(widths):.2f}%, "
        f"<= 1%: {sum(w <= 1.0 for w in widths)} of {n}; verdicts "
        + ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items())),
        "deciding metric (Slowed/Steady) per trial: " + " ".join(metrics),
        "auto chose CPU time every time"
        if not not_cpu
        else f"auto did not choose CPU time (for one or both) in trials {not_cpu}",
        check,
        "Steady's command is the same on both sides in every trial"
        if same
        else "Steady's command differs between the sides",
    ]
    return "\n".join(lines)


def run_trials(o: argparse.Namespace) -> None:
    """``--trials N``; ``--until HH:MM`` (UTC) starts no trial that the last one's length says
    would end after it; ``--summarize`` writes the summary of the trials on disk."""
    rows_file = o.out / f"trials-{o.condition}.jsonl"
    with tempfile.TemporaryDirectory(prefix="duet-go-cpu-") as tmp:
        repo = make_repo(Path(tmp), o.go)
        check = steady_is_unchanged(repo)
        rows = []
        if o.summarize:
            rows = [json.loads(ln) for ln in rows_file.read_text().splitlines()]
        for k in range(0 if o.summarize else o.trials):
            if rows and o.until and not fits(rows[-1]["minutes"], o.until):
                print(f"trial {k:02d} would end after {o.until} UTC: stopped", flush=True)
                break
            row = trial(repo, o.out, o.condition, k)
            rows.append(row)
            text = trial_line(o.condition, row)
            print(text, flush=True)
            with open(o.out / f"trials-{o.condition}.txt", "a") as f:
                f.write(text + "\n")
            with open(rows_file, "a") as f:
                f.write(json.dumps(row) + "\n")
        text = summary(o.condition, rows, check)
        print(text, flush=True)
        (o.out / f"trials-{o.condition}-summary.txt").write_text(text + "\n")


def fits(minutes: float, until: str) -> bool:
    """Whether a trial of ``minutes`` started now ends before ``until`` (HH:MM, UTC, today)."""
    now = time.gmtime()
    hours, mins = (int(x) for x in until.split(":"))
    left = hours * 60 + mins - (now.tm_hour * 60 + now.tm_min + now.tm_sec / 60)
    return minutes < left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--go", default="/usr/local/go/bin/go")
    parser.add_argument("--trials", type=int, default=0, help="the rates mode: N trials")
    parser.add_argument("--condition", choices=("quiet", "busy"), default="busy")
    parser.add_argument("--until", default="", help="HH:MM UTC: start no trial ending later")
    parser.add_argument("--summarize", action="store_true", help="summarize the trials on disk")
    o = parser.parse_args()
    # A kill of the run (SIGTERM) ends it as Ctrl-C would: the busy process and the
    # temporary repository go with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    o.out.mkdir(parents=True, exist_ok=True)
    if o.trials or o.summarize:
        run_trials(o)
        return
    with tempfile.TemporaryDirectory(prefix="duet-go-cpu-") as tmp:
        repo = make_repo(Path(tmp), o.go)
        for k in range(o.repeat):
            for condition in ("quiet", "busy"):
                for label, head in (("A/A", "base"), ("A/B 1.05", "head")):
                    spinner = None
                    if condition == "busy":
                        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    load0 = os.getloadavg()[0]
                    started = time.strftime("%H:%M:%S", time.gmtime())
                    try:
                        name = f"{condition}-{'aa' if head == 'base' else 'ab'}-{k}"
                        doc = compare(repo, head, Path(tmp) / name)
                    finally:
                        if spinner is not None:
                            spinner.kill()
                            spinner.wait()
                    (o.out / f"{name}.json").write_text(json.dumps(doc))
                    load = f"load {load0:.1f}-{os.getloadavg()[0]:.1f}"
                    cell = f"{started} UTC {condition} {label} ({load})"
                    text = line(cell, doc)
                    print(text, flush=True)
                    with open(o.out / "summary.txt", "a") as f:
                        f.write(text + "\n")


if __name__ == "__main__":
    main()
