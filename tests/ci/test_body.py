"""The comment body: marker, escaping of what a pull request controls, size limits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duet_bench import results
from duet_bench.ci.body import (
    GITHUB_MAX_BODY,
    body_length,
    build_body,
    fit,
    marker,
    marker_key,
    neutralize,
    safe_url,
    validate_key,
)
from duet_bench.ci.sanitize import sanitize
from duet_bench.errors import UsageError
from tests.ci.conftest import HOSTILE_NAME

_ALLOWED_TAGS = re.compile(r"<(/?(details|summary|sub|sup|b|i|em|strong)|br ?/?)>")


def _tags(text: str) -> list[str]:
    """Every ``<`` that starts something a browser could read as markup."""
    return [m.group(0) for m in re.finditer(r"<[^\s<]{0,20}", text)]


def _doc(data: dict[str, Any]) -> results.ResultsDocument:
    return results.from_dict(json.loads(json.dumps(data)))


def test_marker_is_the_first_line_and_names_the_key(analysed_doc: dict[str, Any]) -> None:
    body = build_body(_doc(analysed_doc), key="parser-suite")
    first = body.split("\n", 1)[0]
    assert first == "<!-- duet-report v1 key=parser-suite -->"
    assert marker_key(body) == "parser-suite"
    assert "## duet: parse-json 5.00% slower" in body


@pytest.mark.parametrize("key", ["", "a b", "x-->y", "k\n", "é", "a" * 65, "<!--"])
def test_a_key_that_could_break_the_marker_is_refused(key: str) -> None:
    with pytest.raises(UsageError, match="comment key"):
        validate_key(key)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("<!-- duet-report v1 key=default -->\n## duet", "default"),
        ("  <!-- duet-report v1 key=a.b_c-1 -->  \r\nrest", "a.b_c-1"),
        ("<!-- duet-report key=old -->", "old"),
        ("text first\n<!-- duet-report v1 key=default -->", None),
        ("<!-- duet-report v1 key=default --> trailing", None),
        ("<!-- something else -->", None),
        ("", None),
    ],
)
def test_marker_key_reads_only_the_first_line(body: str, key: str | None) -> None:
    assert marker_key(body) == key


def test_hostile_results_cannot_inject_markup(hostile_doc: dict[str, Any]) -> None:
    body = build_body(_doc(hostile_doc), key="default", details_url="https://ci.example/run/1")
    markup = [t for t in _tags(body.split("\n", 1)[1]) if not _ALLOWED_TAGS.match(t)]
    assert markup == []
    assert body.count("<details>") == body.count("</details>")
    for needle in ("<img", "<script", "<iframe", "<b>", "](https://evil", "![", "<!-- -->"):
        assert needle not in body
    # Mentions are broken with a zero-width space; the text stays readable.
    assert not re.search(r"@(?=[A-Za-z0-9_])", body)
    assert "@&#8203;acme/owners" in body
    # A "commit" that is not hex is dropped, not shown.
    assert "e.co" not in body
    # The pipe of the name cannot split the table row.
    row = next(line for line in body.splitlines() if "onerror" in line and line.startswith("|"))
    assert row.count("|") == 7  # six columns: the pipe in the name is escaped


def test_hostile_numbers_do_not_crash_the_report(hostile_doc: dict[str, Any]) -> None:
    hostile_doc["benchmarks"][2]["analysis"] = {
        "ratio": None,
        "ci_low": True,
        "ci_high": [1],
        "confidence": 7,
        "threshold": -1,
        "verdict": 3,
        "runs_used": "many",
        "baseline": "fast",
        "note": {"a": 1},
    }
    body = build_body(_doc(hostile_doc))
    assert "no verdict" in body


def test_sanitize_keeps_what_is_well_formed(analysed_doc: dict[str, Any]) -> None:
    doc = _doc(analysed_doc)
    clean = sanitize(doc)
    for before, after in zip(doc.benchmarks, clean.benchmarks, strict=True):
        assert before.analysis is not None
        assert after.analysis is not None
        for k in ("ratio", "ci_low", "ci_high", "confidence", "threshold", "verdict", "note"):
            assert getattr(after.analysis, k) == getattr(before.analysis, k)


def test_unanalysed_results_are_analysed_first() -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "results-basic.json"
    body = build_body(results.load(fixture))
    assert "parse-json 5.00% slower" in body


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/acme/app/actions/runs/1", True),
        ("http://127.0.0.1:8080/x?y=1&z=2", True),
        ("javascript:alert(1)", False),
        ("https://x.example/a) [b](https://evil", False),
        ("https://x.example/<img>", False),
        ("", False),
        (None, False),
    ],
)
def test_only_plain_urls_are_linked(url: str | None, ok: bool) -> None:
    assert (safe_url(url) is not None) is ok


def test_neutralize_keeps_our_tags_and_escapes_the_rest() -> None:
    text = "<details><summary>All</summary>\n<sub>x</sub> <b>y</b> <br> <br/>\n</details>"
    assert neutralize(text) == text
    assert neutralize("<img src=x>") == "&lt;img src=x>"
    assert neutralize("<details open>") == "&lt;details open>"
    assert neutralize("<!-- c -->") == "&lt;!-- c -->"
    assert neutralize("@team and a@b and @&#8203;ok") == (
        "@&#8203;team and a@&#8203;b and @&#8203;ok"
    )


def _big_doc(analysed_doc: dict[str, Any], n: int, unchanged: int = 0) -> results.ResultsDocument:
    data = json.loads(json.dumps(analysed_doc))
    template = data["benchmarks"][0]  # a regression: it shows in both tables
    template["runs"] = template["runs"][:1]  # the stored analysis is what is shown
    same = data["benchmarks"][1]  # no change: only in the table of all benchmarks
    same["runs"] = same["runs"][:1]
    data["benchmarks"] = []
    for i in range(n):
        b = json.loads(json.dumps(template))
        b["name"] = f"regressing-benchmark-with-a-long-descriptive-name-number-{i:05d}"
        data["benchmarks"].append(b)
    for i in range(unchanged):
        b = json.loads(json.dumps(same))
        b["name"] = f"unchanged-benchmark-{i:05d}"
        data["benchmarks"].append(b)
    return _doc(data)


def test_oversized_report_folds_then_cuts_with_a_link(analysed_doc: dict[str, Any]) -> None:
    url = "https://github.example.com/acme/app/actions/runs/4242"
    # 350 changed rows fit once: every benchmark changed, so there is no folded table of all.
    medium = build_body(_big_doc(analysed_doc, 350), details_url=url)
    assert body_length(medium) <= GITHUB_MAX_BODY
    assert "All benchmarks" not in medium
    assert "Cut to fit" not in medium
    assert medium.count("| regressing") == 350
    # One unchanged benchmark more: the table of all would repeat the 350 rows; it is folded
    # away with a link, and the changed rows stay.
    folded = build_body(_big_doc(analysed_doc, 350, unchanged=1), details_url=url)
    assert body_length(folded) <= GITHUB_MAX_BODY
    assert "All benchmarks" not in folded
    assert f"it is in [the CI artifact]({url})" in folded
    assert folded.count("| regressing") == 350

    huge = build_body(_big_doc(analysed_doc, 3000), details_url=url)
    assert body_length(huge) <= GITHUB_MAX_BODY
    assert "Cut to fit the 65,536-character limit of a comment" in huge
    assert f"[the CI artifact]({url})" in huge
    assert huge.count("<details>") == huge.count("</details>")
    assert marker_key(huge) == "default"
    # Cut after a whole row: the last table row is complete.
    rows = [line for line in huge.splitlines() if line.startswith("| regressing")]
    assert all(r.endswith("regression |") for r in rows)


def test_length_counts_emoji_as_two_units() -> None:
    assert body_length("🔴") == 2
    assert body_length("abc") == 3
    text = "🔴\n" * 100
    out = fit(text, head="<!-- m -->", footer="", max_length=50, details_url=None)
    assert body_length(out) <= 50


@settings(max_examples=200, deadline=None)
@given(
    report=st.lists(
        st.sampled_from(["a", " ", "\n", "🔴", "&", ";", "<", "|", "<details>", "</details>"]),
        max_size=150,
    ).map("".join),
    limit=st.integers(min_value=60, max_value=600),
    url=st.sampled_from([None, "https://ci.example/r/1"]),
)
def test_fit_never_exceeds_the_limit(report: str, limit: int, url: str | None) -> None:
    head = marker("default")
    out = fit(report, head=head, footer="", max_length=limit, details_url=url)
    assert body_length(out) <= limit
    assert out.startswith(head + "\n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_neutralize_leaves_no_foreign_tag(text: str) -> None:
    out = neutralize(text)
    assert [t for t in re.findall(r"<[^<]{0,12}", out) if not _ALLOWED_TAGS.match(t)] == []
    assert not re.search(r"@(?=[A-Za-z0-9_])", out)


def test_hostile_name_fixture_is_hostile() -> None:
    # Guard against a fixture edit that makes the escaping tests vacuous.
    assert "<img" in HOSTILE_NAME
    assert "@acme" in HOSTILE_NAME
    assert "|" in HOSTILE_NAME


def test_bare_urls_and_bidi_controls_do_not_reach_the_comment(
    hostile_doc: dict[str, Any],
) -> None:
    first, second = hostile_doc["benchmarks"][0], hostile_doc["benchmarks"][1]
    first["name"] = "parse https://evil.example/login \u202eexe.txt"
    first["analysis"]["note"] = "see www.evil.example or HTTP://evil.example \u2066x\u2069"
    second["note"] = "mailto:someone@evil.example"
    hostile_doc["state"] = {"complete": False, "stopped": "killed, see https://evil.example"}
    body = build_body(_doc(hostile_doc), details_url="https://ci.example/run/1")
    autolinked = re.findall(r"(?i)\b(?:[a-z]+://|www\.|mailto:)\S*", body)
    assert autolinked == ["https://ci.example/run/1)</sub>"]  # only duet's own link
    for control in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f":
        assert control not in body
    assert "evil.example/login" in body  # still readable
    assert "Incomplete:" in body


def test_the_comment_names_failed_runs_and_what_would_decide_above_the_fold(
    analysed_doc: dict[str, Any],
) -> None:
    # Through sanitize(): the comment of an untrusted file still says which run failed and why.
    body = build_body(_doc(analysed_doc), key="default")
    above = body.split("<details>", 1)[0]
    assert "run 4: timeout" in above
    assert re.search(
        r"about \d+ runs in all \(\d+ more than the 6 measured, `--runs \d+`\) would decide", above
    )
    assert "`--fail-on inconclusive`" in above
    assert "outliers left in" not in above
    assert "## duet: 1 no change" not in body
