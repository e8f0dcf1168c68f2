"""JUnit XML, OpenMetrics and HTML reports, and ``duet report``.

Golden files come from the committed fixture. Regenerate after an intended change:
``DUET_UPDATE_GOLDEN=1 pytest tests/duet/test_report_formats.py`` and review the diff. Numbers are
compared within a stated tolerance (``tests/golden.py``): the last bits of numpy's floats differ
between CPUs.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.openmetrics import parser as openmetrics_parser

from duet_bench.analysis import AnalysisSettings, analyze_document
from duet_bench.report import FORMATS, render
from duet_bench.report.html import inline_svg, render_html
from duet_bench.report.junit import render_junit, xml_safe
from duet_bench.report.model import report_of
from duet_bench.report.openmetrics import label_value, render_openmetrics
from duet_bench.results import (
    BenchmarkRecord,
    ResultsDocument,
    RunRecord,
    SideRecord,
    load,
    replace_name,
    save,
)
from duet_bench.results.analysis import AnalysisBlock
from tests import golden

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = FIXTURES / "golden"
BASIC = FIXTURES / "results-basic.json"
XSD = FIXTURES / "junit" / "junit-10.xsd"

#: A name from a hostile pull request: markup, CDATA end, quotes, backslash, newline, a
#: terminal escape, mathtext, a mention, a path.
EVIL = (
    '</details><img src=x onerror=alert(1)> ]]> "q" \\ back\nslash '
    "<script>alert(1)</script> @octocat $\\frac{1}{0}$ \x1b[31m ../../etc/passwd"
)


# --------------------------------------------------------------------------------------------
# Documents


def synthetic_doc(
    names: Sequence[str],
    *,
    runs: int = 6,
    iterations: int = 12,
    starts: bool = True,
    ratio: float = 1.03,
    seed: int = 1,
) -> ResultsDocument:
    """An analysed duet document: shared noise on both sides, as in tests/fixtures/generate.py,
    with iteration start times (the barrier releases both sides within a few µs)."""
    rng = np.random.default_rng(seed)
    benches = []
    t = 10_000_000_000
    for name in names:
        records = []
        for r in range(runs):
            run_factor = rng.lognormal(0.0, 0.1)
            shared = rng.lognormal(0.0, 0.05, size=iterations)
            a = 2e6 * run_factor * shared * rng.lognormal(0.0, 0.01, size=iterations)
            b = 2e6 * ratio * run_factor * shared * rng.lognormal(0.0, 0.01, size=iterations)
            sa, sb = [], []
            for i in range(iterations):
                sa.append(t)
                sb.append(t + int(rng.integers(0, 3000)))
                t += int(max(a[i], b[i])) + 20_000
            t += 80_000_000  # the next run: fresh processes, warm-up
            records.append(
                RunRecord(
                    index=r,
                    status="ok",
                    baseline=SideRecord(
                        iterations_ns=tuple(int(x) for x in a),
                        iteration_start_ns=tuple(sa) if starts else None,
                        cores=(r % 2,),
                    ),
                    candidate=SideRecord(
                        iterations_ns=tuple(int(x) for x in b),
                        iteration_start_ns=tuple(sb) if starts else None,
                        cores=(1 - r % 2,),
                    ),
                )
            )
        benches.append(BenchmarkRecord(name=name, runs=tuple(records), kind="command"))
    doc = ResultsDocument(
        benchmarks=tuple(benches),
        tool={"name": "duet-bench", "version": "0.1.0"},
        environment={"isolation": "cgroup-v2"},
    )
    return analyze_document(doc, AnalysisSettings(reps=500))


def broken_benchmark(name: str = "never-ran") -> BenchmarkRecord:
    """A benchmark whose every run failed: no successful run at all."""
    runs = tuple(
        RunRecord(
            index=i,
            status="failed",
            reason=f"candidate exited with status 1 <b>{i}</b>",
            baseline=SideRecord(iterations_ns=(1_000_000,)),
            candidate=SideRecord(iterations_ns=(), status="failed", exit_code=1),
        )
        for i in range(2)
    )
    return BenchmarkRecord(name=name, runs=runs)


@pytest.fixture(scope="module")
def basic() -> ResultsDocument:
    """The fixture analysed as ``duet report`` does with its default options."""
    return analyze_document(load(BASIC), AnalysisSettings())


@pytest.fixture(scope="module")
def evil() -> ResultsDocument:
    doc = replace_name(load(BASIC), "parse-json", EVIL)
    doc = doc.with_benchmark(broken_benchmark())
    return analyze_document(doc, AnalysisSettings(reps=500))


def check_golden(text: str, name: str) -> None:
    golden.check_golden(text, GOLDEN / name)


# --------------------------------------------------------------------------------------------
# Golden files


@pytest.mark.parametrize(
    ("fmt", "suffix"),
    [("junit", "junit.xml"), ("openmetrics", "openmetrics.txt"), ("html", "html")],
)
def test_output_matches_golden(basic: ResultsDocument, fmt: str, suffix: str) -> None:
    check_golden(render(report_of(basic), fmt), f"results-basic.{suffix}")  # type: ignore[arg-type]


def test_every_format_renders(basic: ResultsDocument) -> None:
    for fmt in FORMATS:
        assert render(report_of(basic), fmt).endswith("\n")
    with pytest.raises(ValueError, match="unknown report format"):
        render(report_of(basic), "yaml")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# JUnit


@pytest.mark.parametrize("which", ["basic", "evil"])
def test_junit_is_valid_against_the_jenkins_schema(
    which: str, request: pytest.FixtureRequest
) -> None:
    xmlschema = pytest.importorskip(
        "xmlschema", reason="xmlschema validates JUnit XML: pip install -e '.[dev]'"
    )
    text = render_junit(report_of(request.getfixturevalue(which)))
    xmlschema.XMLSchema(str(XSD)).validate(text)
    with pytest.raises(xmlschema.XMLSchemaValidationError):  # the schema does bite
        xmlschema.XMLSchema(str(XSD)).validate(text.replace(' classname="duet"', ' kind="duet"', 1))


def validate_junit(text: str) -> ET.Element:
    """Well-formed, and the numbers the schema leaves as strings add up."""
    suite = ET.fromstring(text.encode("utf-8"))
    cases = suite.findall("testcase")
    assert suite.tag == "testsuite"
    assert suite.get("name") == "duet"
    assert int(suite.get("tests", "-1")) == len(cases)
    for attr, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        assert int(suite.get(attr, "-1")) == sum(1 for c in cases if c.find(tag) is not None)
    for el in [suite, *cases]:
        if el.get("time") is not None:
            assert Decimal(el.get("time", "")) >= 0
    for c in cases:
        assert c.get("classname") == "duet"
        assert c.find("system-out") is not None
        outcomes = [c.find(t) for t in ("failure", "error", "skipped")]
        assert sum(o is not None for o in outcomes) <= 1
    return suite


def test_junit_is_valid_and_says_what_happened(basic: ResultsDocument) -> None:
    suite = validate_junit(render_junit(report_of(basic)))
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == [b.name for b in basic.benchmarks]
    failure = cases["parse-json"].find("failure")
    assert failure is not None
    assert failure.get("type") == "regression"
    message = failure.get("message", "")
    assert "1.05" in message
    assert "99% CI" in message
    assert "threshold 2.00%" in message
    skipped = cases["tiny"].find("skipped")
    assert skipped is not None
    assert "only 3 successful runs" in skipped.get("message", "")
    for name in ("render-page", "sort-1M", "noisy-io", "with-a-failure"):
        assert len(cases[name]) == 1, name  # passed: only system-out
    out = cases["with-a-failure"].findtext("system-out") or ""
    assert "run 4: timeout" in out
    assert "[0.9975, 1.003] 99% CI" in out
    # Measured seconds: 20 runs x 30 iterations of about 12.8 ms on the slower side.
    assert 6 < float(cases["parse-json"].get("time", "0")) < 10
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["duet.confidence"] == "99%"
    assert props["duet.isolation"] == "cgroup-v1"


def test_junit_errors_for_a_benchmark_without_a_successful_run(evil: ResultsDocument) -> None:
    suite = validate_junit(render_junit(report_of(evil)))
    case = next(c for c in suite.findall("testcase") if c.get("name") == "never-ran")
    error = case.find("error")
    assert error is not None
    assert error.get("type") == "no-successful-run"
    assert "run 0: failed (candidate exited with status 1 <b>0</b>)" in error.get("message", "")
    assert case.find("skipped") is None


def test_junit_keeps_an_evil_name_as_data(evil: ResultsDocument) -> None:
    text = render_junit(report_of(evil))
    suite = validate_junit(text)
    assert "<img" not in text
    assert "<script" not in text
    assert "<b>" not in text
    assert "]]>" not in text  # no CDATA section to close: everything is escaped
    names = [c.get("name") for c in suite.findall("testcase")]
    # Readable: the parsed attribute is the name, the escape character shown as \x1b.
    assert xml_safe(EVIL) in names
    assert xml_safe(EVIL) == EVIL.replace("\x1b", "\\x1b")
    assert [el.tag for el in suite.iter()] == [
        el.tag
        for el in ET.fromstring(
            render_junit(report_of(replace_name(evil, EVIL, "x"))).encode()
        ).iter()
    ]


def test_xml_safe_replaces_what_xml_cannot_carry() -> None:
    assert xml_safe("a\x00b\x0bc\ud800d\tok\n") == "a\\x00b\\x0bc\\ud800d\tok\n"
    assert xml_safe("ü€😀") == "ü€😀"


def test_junit_time_from_wall_time_when_recorded() -> None:
    from duet_bench.report.model import measured_ns

    run = RunRecord(
        index=0,
        status="ok",
        baseline=SideRecord(iterations_ns=(5, 5), wall_ns=2_000_000_000),
        candidate=SideRecord(iterations_ns=(6, 6), wall_ns=3_000_000_000),
    )
    assert measured_ns(BenchmarkRecord(name="x", runs=(run,))) == 3_000_000_000
    assert measured_ns(BenchmarkRecord(name="x", runs=(run,), method="sequential")) == 5e9
    bare = replace(run, baseline=SideRecord(iterations_ns=(5, 5), warmup_ns=(9,)))
    assert measured_ns(BenchmarkRecord(name="x", runs=(bare,))) == 19  # max(9+5+5, 6+6)
    assert measured_ns(BenchmarkRecord(name="x", runs=())) is None


# --------------------------------------------------------------------------------------------
# OpenMetrics


def parse_openmetrics(text: str) -> dict[str, dict[str, object]]:
    """Read duet's OpenMetrics output with Prometheus' own parser (prometheus_client, the
    reference implementation of the format: it refuses a missing ``# EOF``, metadata after
    samples, interleaved families, bad escapes). Returns
    ``{family: {"type", "help", "unit", "samples": [(labels, value)]}}`` in the text's order."""
    families: dict[str, dict[str, object]] = {}
    for family in openmetrics_parser.text_string_to_metric_families(text):
        assert family.name not in families, f"family {family.name} twice"
        samples = [(dict(s.labels), s.value) for s in family.samples]
        assert all(sample.name == family.name for sample in family.samples), family
        assert all(math.isfinite(value) for _, value in samples), family
        families[family.name] = {
            "type": family.type,
            "help": family.documentation,
            "unit": family.unit,
            "samples": samples,
        }
    for name, fam in families.items():
        assert fam["type"] == "gauge", name
        if fam["unit"]:
            assert name.endswith("_" + str(fam["unit"])), name
    return families


def test_the_openmetrics_reader_refuses_what_the_format_forbids() -> None:
    """The parser above is strict where duet could go wrong: a missing ``# EOF``, a family
    split by another, metadata after samples."""
    good = '# TYPE duet_ratio gauge\nduet_ratio{benchmark="a"} 1.0\n# EOF\n'
    assert parse_openmetrics(good)["duet_ratio"]["samples"] == [({"benchmark": "a"}, 1.0)]
    for bad in (
        good.replace("# EOF\n", ""),
        "# TYPE duet_ratio gauge\nduet_ratio 1\n"
        "# TYPE duet_x gauge\nduet_x 1\nduet_ratio 2\n# EOF\n",
        "# TYPE duet_ratio gauge\nduet_ratio 1\n# HELP duet_ratio late\n# EOF\n",
    ):
        with pytest.raises(ValueError):  # noqa: PT011  (the parser's only error type)
            parse_openmetrics(bad)


def test_openmetrics_parses_back(basic: ResultsDocument) -> None:
    families = parse_openmetrics(render_openmetrics(report_of(basic)))
    assert list(families) == [
        "duet_ratio",
        "duet_ci_low",
        "duet_ci_high",
        "duet_baseline_median_seconds",
        "duet_candidate_median_seconds",
        "duet_verdict",
        "duet_metric_ratio",
    ]

    def values(family: str) -> dict[str, float]:
        samples = families[family]["samples"]
        assert isinstance(samples, list)
        return {labels["benchmark"]: v for labels, v in samples}

    # Nine significant digits of the analysis's float: within 5e-9 relative, and not three.
    analysis = {b.name: b.analysis for b in basic.benchmarks if b.analysis is not None}
    ratio = analysis["parse-json"].ratio
    assert ratio is not None
    assert values("duet_ratio")["parse-json"] == pytest.approx(ratio, rel=5e-9, abs=0)
    assert values("duet_ratio")["parse-json"] != round(ratio, 3)
    assert round(values("duet_ratio")["parse-json"], 3) == 1.05
    assert round(values("duet_ratio")["tiny"], 3) == 0.997
    # A schema-1 file has wall time only: one metric ratio per benchmark, equal to the ratio.
    metric = families["duet_metric_ratio"]["samples"]
    assert isinstance(metric, list)
    assert {labels["metric"] for labels, _ in metric} == {"wall"}
    assert "tiny" not in values("duet_ci_low")  # null interval: left out, not NaN
    assert round(values("duet_baseline_median_seconds")["sort-1M"], 3) == 0.101
    ci = families["duet_ci_high"]["samples"]
    assert isinstance(ci, list)
    assert all(labels["confidence"] == "0.99" for labels, _ in ci)
    verdicts = families["duet_verdict"]["samples"]
    assert isinstance(verdicts, list)
    assert {labels["benchmark"]: labels["verdict"] for labels, _ in verdicts} == {
        "parse-json": "regression",
        "render-page": "no change",
        "sort-1M": "improvement",
        "noisy-io": "inconclusive",
        "with-a-failure": "no change",
    }
    assert all(v == 1 for _, v in verdicts)


def test_openmetrics_escapes_label_values(evil: ResultsDocument) -> None:
    text = render_openmetrics(report_of(evil))
    families = parse_openmetrics(text)
    ratio = families["duet_ratio"]["samples"]
    assert isinstance(ratio, list)
    names = [labels["benchmark"] for labels, _ in ratio]
    # Backslash, quote and newline round-trip; the terminal escape became U+FFFD.
    assert EVIL.replace("\x1b", "\ufffd") in names
    assert "never-ran" not in names  # no successful run: no numbers to report
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert label_value("x\ry\u2028z") == "x\ufffdy\ufffdz"


def test_openmetrics_of_an_empty_document() -> None:
    assert render_openmetrics(report_of(ResultsDocument(benchmarks=()))) == "# EOF\n"


# --------------------------------------------------------------------------------------------
# HTML


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs


def tags_of(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser


_PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "p", "strong",
    "table", "caption", "thead", "tbody", "tr", "th", "td", "span", "ul", "li", "footer", "br",
    "div",
    "figure", "figcaption",
}  # fmt: skip


def test_html_is_standalone_with_confidence_next_to_every_interval(
    basic: ResultsDocument,
) -> None:
    page = render_html(report_of(basic))
    parsed = tags_of(page)
    assert set(parsed.tags) <= _PAGE_TAGS
    assert not [a for a, v in parsed.attrs if a in ("src", "href")]  # no external resources
    assert "Content-Security-Policy" in page
    cells = re.findall(r'<td class="ratio">(.*?)</td>', page)
    assert len(cells) == len(basic.benchmarks)
    for cell in cells:
        if "[" in cell:
            assert re.search(r"\] 99% CI", cell), cell
    for word in ("regression", "improvement", "inconclusive", "no change", "no verdict"):
        assert f"{word}</span>" in page  # the word, not only a colour
    assert "isolation cgroup-v1, synthetic fixture, 2 CPUs" in page
    assert "only 3 successful runs (&lt; 5)" in page  # the notes
    assert "run 4: timeout" in page  # the failed runs


def test_html_escapes_an_evil_name(evil: ResultsDocument) -> None:
    page = render_html(report_of(evil))
    parsed = tags_of(page)
    assert set(parsed.tags) <= _PAGE_TAGS
    assert "img" not in parsed.tags
    assert "script" not in parsed.tags
    assert "&lt;/details&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b&gt;0&lt;/b&gt;" in page  # a failure reason is untrusted too
    assert "<b>" not in page


def test_html_affinity_only_warns(basic: ResultsDocument) -> None:
    doc = replace(basic, environment={"isolation": "affinity-only"})
    assert "affinity-only isolation: CPU time of orphaned children" in render_html(report_of(doc))


_SVG_TEXT = """<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="10pt" height="10pt" viewBox="0 0 10 10"
  xmlns="http://www.w3.org/2000/svg" version="1.1">
 <metadata><title>secret</title></metadata>
 <defs><path id="glyph" d="M 0 0 L 1 1"/>
  <clipPath id="clip"><rect width="5" height="5"/></clipPath></defs>
 <!-- --><script>alert(1)</script><!-- -->
 <g id="text_1" clip-path="url(#clip)" onload="alert(2)">
  <use xlink:href="#glyph"/><use xlink:href="http://evil.example/x.svg#a"/>
  <a href="javascript:alert(3)"><rect width="1" height="1"/></a>
  <foreignObject><div>html</div></foreignObject>
 </g>
</svg>
"""


def test_inline_svg_is_sanitised_and_ids_are_unique() -> None:
    out = inline_svg(_SVG_TEXT, "f3-", aria_label='a "caption" <b>')
    assert out.startswith('<svg width="10pt"')
    for gone in ("<!--", "<script", "alert", "metadata", "evil.example", "foreignObject", "<a "):
        assert gone not in out
    assert 'id="f3-glyph"' in out
    assert 'href="#f3-glyph"' in out
    assert 'clip-path="url(#f3-clip)"' in out
    assert 'id="f3-text_1"' in out
    assert 'aria-label="a &quot;caption&quot; &lt;b&gt;"' in out
    with pytest.raises(ValueError, match="not an SVG"):
        inline_svg("<html/>", "x")


def test_html_inlines_plots(basic: ResultsDocument) -> None:
    page = render_html(report_of(basic), plots={"first <plot>": _SVG_TEXT, "second": _SVG_TEXT})
    assert page.count("<svg ") == 2
    assert page.count("<figure>") == 2
    assert 'id="f0-glyph"' in page
    assert 'id="f1-glyph"' in page
    assert "<figcaption>first &lt;plot&gt;</figcaption>" in page
    assert "<script" not in page


# --------------------------------------------------------------------------------------------
# duet report


def duet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duet_bench", *args], capture_output=True, text=True, check=False
    )


def test_cli_report_formats_match_the_renderers(tmp_path: Path) -> None:
    done = duet("report", str(BASIC), "--format", "junit")
    assert done.returncode == 0, done.stderr  # a report is not a verdict: 0 with a regression
    assert golden.mismatch(done.stdout, (GOLDEN / "results-basic.junit.xml").read_text()) is None
    out = tmp_path / "sub" / "metrics.txt"
    done = duet("report", str(BASIC), "--format", "openmetrics", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    want = (GOLDEN / "results-basic.openmetrics.txt").read_text(encoding="utf-8")
    assert golden.mismatch(out.read_text(encoding="utf-8"), want) is None
    assert out.stat().st_mode & 0o044, "a report is readable by others (umask permitting)"


def test_cli_report_exit_codes(tmp_path: Path) -> None:
    missing = duet("report", str(tmp_path / "nope.json"))
    assert missing.returncode == 3
    assert "Traceback" not in missing.stderr
    newer = tmp_path / "newer.json"
    newer.write_text('{"schema": "duet-results/9", "benchmarks": []}')
    done = duet("report", str(newer), "--format", "html")
    assert done.returncode == 3
    assert "newer duet" in done.stderr
    assert duet("report", str(BASIC), "--format", "yaml").returncode == 2
    assert duet("report", str(BASIC), "--confidence", "2").returncode == 2
    blocked = tmp_path / "file"
    blocked.write_text("")
    done = duet("report", str(BASIC), "--format", "json", "--output", str(blocked / "x.json"))
    assert done.returncode == 3
    assert "could not write the report" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_report_uses_the_stored_analysis(tmp_path: Path) -> None:
    doc = synthetic_doc(["stored", "missing"], runs=5, iterations=5)
    stored = doc.benchmark("stored")
    assert stored.analysis is not None
    marked = replace(stored, analysis=replace(stored.analysis, ratio=7.77, verdict="regression"))
    doc = doc.with_benchmark(marked).with_benchmark(
        replace(doc.benchmark("missing"), analysis=None)
    )
    path = tmp_path / "results.json"
    save(doc, path)
    done = duet("report", str(path), "--format", "openmetrics", "--reps", "200")
    assert done.returncode == 0, done.stderr
    assert 'duet_ratio{benchmark="stored"} 7.77' not in done.stdout  # an option: re-analysed
    done = duet("report", str(path), "--format", "openmetrics")
    assert done.returncode == 0, done.stderr
    assert 'duet_ratio{benchmark="stored"} 7.77' in done.stdout  # stored analysis kept
    assert 'duet_ratio{benchmark="missing"} ' in done.stdout  # analysed on the fly


def test_a_hand_edited_analysis_block_renders_in_every_format() -> None:
    # A results file is outside input: `duet report` renders its stored analysis as it is.
    doc = load(BASIC)
    junk: dict[str, object] = {
        "verdict": "<b>pwned</b>",
        "ratio": "1.5",
        "ci_low": float("nan"),
        "ci_high": True,
        "runs_used": "ten",
        "runs_failed": -3,
        "confidence": [0.99],
        "baseline": "fast",
        "candidate": {"median_ns": None},
        "failures": "not a list",
    }
    # Read as results.from_dict reads it: each value of the wrong type becomes None.
    benches = tuple(replace(b, analysis=AnalysisBlock.from_dict(junk)) for b in doc.benchmarks)
    mangled = replace(doc, benchmarks=benches)
    for fmt in FORMATS:
        if fmt == "json":
            continue  # dumps refuses NaN by design (allow_nan=False)
        out = render(report_of(mangled), fmt)
        assert "pwned</b>" not in out, fmt
    text = render(report_of(mangled), "text")
    assert "no verdict" in text
    assert "n/a" in text


def test_long_names_are_stored_whole_and_shortened_for_display_only() -> None:
    from duet_bench.options.measuring import Sides
    from duet_bench.units import NAME_WIDTH
    from duet_bench.units import short_name as display_name

    long_a = "./build/bench --input data/a-very-long-directory-name/and-a-long-file-name.json"
    long_b = long_a.replace("bench", "bench2")
    name = Sides(long_a, long_b, False, None, None, None, None, None, None).name()
    assert name == f"{long_a} vs {long_b}"  # never cut where it is stored
    assert "…" not in name
    shown = display_name(name)
    assert len(shown) == NAME_WIDTH
    assert shown.startswith("./build/bench --input")
    assert shown.endswith("file-name.json")
    assert display_name("short") == "short"
    # Where the two commands differ is what a reader needs: the reports keep that part.
    from duet_bench.units import differing_name

    differing = differing_name(name)
    assert len(differing) <= NAME_WIDTH
    assert "bench2" in differing, differing
    assert "/bench " in differing, differing
