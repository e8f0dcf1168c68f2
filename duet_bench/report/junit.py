"""The JUnit XML report: one test case per benchmark, for CI test widgets (GitLab, Jenkins).

A regression is a ``<failure>``, a benchmark without a verdict is ``<skipped>``, a benchmark
without a single successful run is an ``<error>``; every other verdict passes. The row the
text report prints goes into ``<system-out>``, so the widget shows the numbers too.

Benchmark names, failure reasons and environment strings come from the pull request under test.
The document is built with :mod:`xml.etree.ElementTree`, which escapes text and attributes, so
``</testcase>`` or ``]]>`` in a name stays data; characters XML 1.0 cannot carry at all
(control characters, lone surrogates) are written as visible ``\\xNN`` escapes instead of
making the file unreadable for the CI server.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from duet_bench import units
from duet_bench.report.rows import Row, common_confidence, row
from duet_bench.results import BenchmarkRecord, ResultsDocument
from duet_bench.results.analysis import AnalysisBlock
from duet_bench.results.completeness import completeness
from duet_bench.untrusted import visible as shown

# Everything outside XML 1.0's Char production (tab, newline and carriage return are allowed).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    """``text`` with the characters XML 1.0 cannot represent replaced by ``\\xNN``/``\\uNNNN``,
    and invisible or reordering ones shown as U+FFFD (:func:`duet_bench.untrusted.visible`)."""

    def visible(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return shown(_NOT_XML.sub(visible, str(text)))


def measured_ns(b: BenchmarkRecord) -> int | None:
    """Time spent measuring ``b``: per run the recorded wall time, else its iterations.

    The two sides of a duet run at the same time, so a run lasts as long as the slower side;
    the sequential method runs them one after the other, so there the sides add up. None when
    nothing was recorded.
    """
    total = 0
    known = False
    for r in b.runs:
        sides = (r.baseline, r.candidate)
        walls = [s.wall_ns for s in sides if s.wall_ns is not None]
        if len(walls) == 2:
            spans = walls
        else:
            spans = [sum(s.warmup_ns) + sum(s.iterations_ns) for s in sides]
        if not any(spans):
            continue
        known = True
        total += sum(spans) if b.method == "sequential" else max(spans)
    return total if known else None


def _seconds(ns: int) -> str:
    return units.sig(ns / 1e9)


def _threshold(a: AnalysisBlock | None) -> str | None:
    t = None if a is None else a.threshold
    return None if t is None else f"{units.sig(t * 100)}%"


def _interval(r: Row) -> str:
    """``[1.05, 1.06] 99% CI``: the confidence always next to the interval (docs/statistics.md,
    method 8)."""
    if r.interval == "n/a":
        return "no interval"
    conf = f" {units.percent(r.confidence)}" if r.confidence is not None else ""
    return f"{r.interval}{conf} CI"


def row_text(b: BenchmarkRecord, r: Row) -> str:
    """The benchmark's row as plain lines, for ``<system-out>``."""
    a = b.analysis or AnalysisBlock()
    lines = [f"{r.name}: {r.verdict}"]
    if r.ratio != "n/a":
        lines.append(
            f"ratio candidate/baseline {r.ratio}, {_interval(r)}, change {r.change}"
            + (f", threshold {_threshold(a)}" if _threshold(a) else "")
        )
    per_iteration = f"{r.metric} per iteration" if r.metric else "per iteration"
    lines.append(
        f"{per_iteration} (geometric mean): baseline {r.baseline}, candidate {r.candidate}"
    )
    if r.other:
        lines.append(f"also analysed: {r.other}")
    if r.interference:
        lines.append(r.interference)
    iterations = a.iterations
    lines.append(f"runs {r.runs}" + (f", {iterations} iterations each" if iterations else ""))
    # The analysis note alone: the row's note repeats the first failures, listed in full below.
    if a.note:
        lines.append(f"note: {a.note}")
    if a.failures:
        lines.append("failed runs:")
        lines += [f"  {f}" for f in a.failures]
    return "\n".join(lines) + "\n"


def _failure_message(r: Row, a: AnalysisBlock) -> str:
    threshold = _threshold(a)
    return f"regression: candidate/baseline {r.ratio} ({r.change}), {_interval(r)}" + (
        f", above the threshold {threshold}" if threshold else ""
    )


def render_junit(doc: ResultsDocument) -> str:
    """The document as JUnit XML (one ``<testsuite name="duet">``)."""
    items = [(b, row(b)) for b in doc.benchmarks]
    suite = ET.Element("testsuite", {"name": "duet"})
    props = _properties(doc, [r for _, r in items])
    if len(props):
        suite.append(props)
    failures = errors = skipped = 0
    suite_ns = 0
    for b, r in items:
        a = b.analysis or AnalysisBlock()
        case = ET.SubElement(suite, "testcase", {"classname": "duet", "name": xml_safe(b.name)})
        ns = measured_ns(b)
        if ns is not None:
            case.set("time", _seconds(ns))
            suite_ns += ns
        if not b.ok_runs():
            errors += 1
            reasons = "; ".join(a.failures) or b.note or "no runs recorded"
            err = ET.SubElement(
                case,
                "error",
                {"message": xml_safe(f"no successful run: {reasons}"), "type": "no-successful-run"},
            )
            err.text = xml_safe(row_text(b, r))
        elif r.verdict == "regression":
            failures += 1
            fail = ET.SubElement(
                case,
                "failure",
                {"message": xml_safe(_failure_message(r, a)), "type": "regression"},
            )
            fail.text = xml_safe(row_text(b, r))
        elif r.verdict == "no verdict":
            skipped += 1
            reason = r.note or ("not analysed" if b.analysis is None else "no verdict")
            ET.SubElement(case, "skipped", {"message": xml_safe(f"no verdict: {reason}")})
        out = ET.SubElement(case, "system-out")
        out.text = xml_safe(row_text(b, r))
    incomplete = completeness(doc).sentence
    if incomplete:  # one error case: a CI widget shows the verdicts are from part of the runs
        errors += 1
        case = ET.SubElement(suite, "testcase", {"classname": "duet", "name": "completeness"})
        ET.SubElement(case, "error", {"message": xml_safe(incomplete), "type": "incomplete"})
    suite.set("tests", str(len(items) + (1 if incomplete else 0)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", _seconds(suite_ns))
    if doc.created:
        suite.set("timestamp", xml_safe(doc.created))
    ET.indent(suite, space="  ")
    body = ET.tostring(suite, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _properties(doc: ResultsDocument, items: list[Row]) -> ET.Element:
    """Facts a reader of the CI widget needs to trust the verdicts."""
    props = ET.Element("properties")

    def add(name: str, value: object) -> None:
        ET.SubElement(props, "property", {"name": name, "value": xml_safe(value)})

    version = doc.tool.get("version")
    if version:
        add("duet.version", version)
    if doc.environment.get("isolation"):
        add("duet.isolation", doc.environment["isolation"])
    shared = common_confidence(items)
    if shared is not None:
        add("duet.confidence", units.percent(shared))
    threshold = next(
        (t for b in doc.benchmarks if (t := _threshold(b.analysis))),
        None,
    )
    if threshold:
        add("duet.threshold", threshold)
    return props
