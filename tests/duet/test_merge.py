"""duet merge: shards of one comparison become one document; incomparable shards are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from duet import results
from duet.errors import UsageError
from duet.merge import merge

FIXTURE = Path(__file__).parent.parent / "fixtures" / "results-basic.json"


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
    ("change", "what"),
    [
        ({"config": {"versions": {"baseline": {"commit": "c" * 40}}}}, "commits"),
        ({"config": {"suite": {"runs": 30}}}, "configuration"),
        ({"environment": {"machine_kind": "Intel Xeon x4 vCPU, cgroup-v2"}}, "machine kind"),
        ({"environment": {"isolation": "affinity-only"}}, "machine kind and isolation"),
    ],
)
def test_incomparable_shards_are_refused_naming_the_difference(
    change: dict[str, Any], what: str
) -> None:
    with pytest.raises(UsageError, match=f"b differs from a in its {what}"):
        merge([("a", shard(["parse-json"])), ("b", shard(["tiny"], **change))])


def test_a_benchmark_in_two_shards_is_refused() -> None:
    with pytest.raises(UsageError, match="'tiny' is in b and in a"):
        merge([("a", shard(["tiny"])), ("b", shard(["tiny"]))])


def test_merge_cli(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    results.save(shard(["parse-json"]), a)
    results.save(shard(["render-page"]), b)
    out = tmp_path / "m.json"
    done = subprocess.run(
        [sys.executable, "-m", "duet", "merge", str(a), str(b), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [b.name for b in results.load(out).benchmarks] == ["parse-json", "render-page"]
    one = subprocess.run(
        [sys.executable, "-m", "duet", "merge", str(a), "--out", str(out)],
        capture_output=True,
        check=False,
    )
    assert one.returncode == 2
