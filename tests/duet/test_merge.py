"""duet merge: shards of one comparison become one document; incomparable shards are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from duet_bench import results
from duet_bench.errors import UsageError
from duet_bench.merge import merge

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


def _duet(*args: str) -> subprocess.CompletedProcess[str]:
    """``duet ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def shard(names: list[str], **changes: Any) -> results.ResultsDocument:
    data = json.loads(FIXTURE.read_text())
    data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] in names]
    data["config"] = {
        "command": "compare",
        "suite": {"runs": 20},
        "versions": {"baseline": {"commit": "a" * 40}, "candidate": {"commit": "b" * 40}},
    }
    data["environment"] = {"machine_kind": "AMD EPYC x2 vCPU, cgroup-v1", "isolation": "cgroup-v1"}
    for key, value in changes.items():
        data[key].update(value) if isinstance(value, dict) else data.__setitem__(key, value)
    return results.from_dict(data)


def test_merge_unions_the_benchmarks() -> None:
    merged = merge([("a", shard(["parse-json", "tiny"])), ("b", shard(["sort-1M"]))])
    assert [b.name for b in merged.benchmarks] == ["parse-json", "sort-1M", "tiny"]
    assert merged.config["merged_from"] == ["a", "b"]


def test_merge_keeps_every_shards_benchmarks_missing_in_base() -> None:
    a = shard(["parse-json"], config={"missing_in_baseline": ["new-a"]})
    b = shard(["sort-1M"], config={"missing_in_baseline": ["new-b", "new-a"]})
    c = shard(["tiny"])
    merged = merge([("a", a), ("b", b), ("c", c)])
    assert merged.config["missing_in_baseline"] == ["new-a", "new-b"]
    plain = merge([("c", c), ("d", shard(["noisy-io"]))])
    assert "missing_in_baseline" not in plain.config


@pytest.mark.parametrize(
    ("change", "what", "difference"),
    [
        (
            {"config": {"versions": {"baseline": {"commit": "c" * 40}}}},
            "commits",
            f"baseline: {'c' * 40} in b, {'a' * 40} in a",
        ),
        ({"config": {"suite": {"runs": 30}}}, "configuration", "runs: 30 in b, 20 in a"),
        (
            {"config": {"options": {"runs": 5}}},
            "command-line options",
            "runs: 5 in b, nothing in a",
        ),
        (
            {"config": {"shard": [2, 3]}},
            "selection of the suite",
            "--shard i/3 of the whole suite in b, no --shard in a",
        ),
        (
            {"environment": {"machine_kind": "Intel Xeon x4 vCPU, cgroup-v2"}},
            "machine kind",
            "machine kind: Intel Xeon x4 vCPU, cgroup-v2 in b, AMD EPYC x2 vCPU, cgroup-v1 in a",
        ),
        (
            {"environment": {"isolation": "affinity-only"}},
            "machine kind and isolation",
            "isolation: affinity-only in b, cgroup-v1 in a",
        ),
        ({"tool": {"version": "0.0.1"}}, "duet version", "0.0.1 in b"),
    ],
)
def test_incomparable_shards_are_refused_naming_the_difference(
    change: dict[str, Any], what: str, difference: str
) -> None:
    with pytest.raises(UsageError) as caught:
        merge([("a", shard(["parse-json"])), ("b", shard(["tiny"], **change))])
    message = caught.value.message
    assert f"b differs from a in its {what}" in message
    assert difference in message
    # Named as a user reads it, never as a Python repr of a dict or a tuple.
    assert "{'" not in message
    assert "('" not in message


def test_shards_of_different_splits_are_refused() -> None:
    def part(names: list[str], i: int, n: int, bench: str | None = None) -> Any:
        return shard(names, config={"shard": [i, n], "bench": bench})

    merged = merge([("a", part(["parse-json"], 1, 2)), ("b", part(["tiny"], 2, 2))])
    assert [b.name for b in merged.benchmarks] == ["parse-json", "tiny"]
    with pytest.raises(UsageError, match=r"--shard i/3 of the whole suite in b, --shard i/2"):
        merge([("a", part(["parse-json"], 1, 2)), ("b", part(["tiny"], 2, 3))])
    with pytest.raises(UsageError, match=r"--shard i/2 of --bench p\* in b"):
        merge([("a", part(["parse-json"], 1, 2)), ("b", part(["tiny"], 2, 2, "p*"))])
    with pytest.raises(UsageError, match="a and b are both shard 1/2"):
        merge([("a", part(["parse-json"], 1, 2)), ("b", part(["tiny"], 1, 2))])


def test_what_duet_compare_did_not_write_is_not_a_shard() -> None:
    run_doc = shard(["tiny"], config={"command": "run", "suite": None, "versions": None})
    with pytest.raises(UsageError, match=r"b was written by `duet run`, not by `duet compare`"):
        merge([("a", shard(["parse-json"])), ("b", run_doc)])


@pytest.mark.measures
def test_two_unrelated_duet_run_files_are_refused(tmp_path: Path) -> None:
    """Issue 15: `duet merge` of two `duet run` results was accepted."""
    files = []
    for name, command in (("one", "true"), ("two", "sleep 0.001")):
        out = tmp_path / f"{name}.json"
        argv = [
            sys.executable, "-m", "duet_bench", "run", "--baseline", command, "--candidate",
            command, "--runs", "2", "--iterations", "2", "--warmup", "0", "--isolation", "affinity",
            "--out", str(out), "--quiet", "--reps", "200", "--fail-on", "never",
        ]  # fmt: skip
        made = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert made.returncode == 0, made.stderr
        files.append(str(out))
    merged = tmp_path / "m.json"
    done = _duet("merge", *files, "--out", str(merged))
    assert done.returncode == 2, done.stderr
    assert f"{files[0]} was written by `duet run`, not by `duet compare`" in done.stderr
    assert not merged.exists()


def test_a_benchmark_in_two_shards_is_refused() -> None:
    with pytest.raises(UsageError, match="'tiny' is in b and in a"):
        merge([("a", shard(["tiny"])), ("b", shard(["tiny"]))])


def test_merge_cli(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    results.save(shard(["parse-json"]), a)
    results.save(shard(["render-page"]), b)
    out = tmp_path / "merged"
    done = _duet("merge", str(a), str(b), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    merged = results.load(out / "results.json")
    assert [b.name for b in merged.benchmarks] == ["parse-json", "render-page"]
    assert {p.name for p in out.iterdir()} >= {"results.json", "report.md", "junit.xml"}
    # The file form of --out (before --out was a directory everywhere) still writes that file,
    # and says what to write instead.
    legacy = tmp_path / "old" / "m.json"
    done = _duet("merge", str(a), str(b), "--out", str(legacy))
    assert done.returncode == 0, done.stderr
    assert f"--out {legacy}: a results file for --out is deprecated" in done.stderr
    assert f"--out {legacy.parent} (it writes results.json there)" in done.stderr
    assert sorted(p.name for p in legacy.parent.iterdir()) == ["m.json"]
    # A directory of --out is read as its results.json.
    again = _duet("report", str(out), "--format", "json")
    assert again.returncode == 0, again.stderr
    one = _duet("merge", str(a), "--out", str(out))
    assert one.returncode == 2
