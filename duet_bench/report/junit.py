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

from duet_bench.report.escape import shown_text
from duet_bench.report.model import BenchmarkView, Report

# Everything outside XML 1.0's Char production (tab, newline and carriage return are allowed).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    """``text`` with the characters XML 1.0 cannot represent replaced by ``\\xNN``/``\\uNNNN``,
    and invisible or reordering ones shown as U+FFFD (:func:`duet_bench.untrusted.visible`)."""

    def visible(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return shown_text(_NOT_XML.sub(visible, str(text)))


def _interval(b: BenchmarkView) -> str:
    """``[1.05, 1.06] 99% CI``: the confidence always next to the interval (docs/statistics.md,
    method 8)."""
    r = b.row
    if r.interval == "n/a":
        return "no interval"
    conf = f" {r.confidence_text}" if r.confidence_text else ""
    return f"{r.interval}{conf} CI"


def row_text(b: BenchmarkView) -> str:
    """The benchmark's row as plain lines, for ``<system-out>``."""
    r = b.row
    lines = [f"{r.name}: {r.verdict}"]
    if r.ratio != "n/a":
        lines.append(
            f"ratio candidate/baseline {r.ratio}, {_interval(b)}, change {r.change}"
            + (f", threshold {r.threshold_text}" if r.threshold_text else "")
        )
    per_iteration = f"{r.metric} per iteration" if r.metric else "per iteration"
    lines.append(
        f"{per_iteration} (geometric mean): baseline {r.baseline}, candidate {r.candidate}"
    )
    if r.other:
        lines.append(f"also analysed: {r.other}")
    if r.interference:
        lines.append(r.interference)
    lines.append(f"runs {r.runs}" + (f", {b.iterations} iterations each" if b.iterations else ""))
    # The analysis note alone: the row's note repeats the first failures, listed in full below.
    if b.analysis_note:
        lines.append(f"note: {b.analysis_note}")
    if r.failures:
        lines.append("failed runs:")
        lines += [f"  {f}" for f in r.failures]
    return "\n".join(lines) + "\n"


def _failure_message(b: BenchmarkView) -> str:
    r, threshold = b.row, b.row.threshold_text
    return f"regression: candidate/baseline {r.ratio} ({r.change}), {_interval(b)}" + (
        f", above the threshold {threshold}" if threshold else ""
    )


def render_junit(report: Report) -> str:
    """The document as JUnit XML (one ``<testsuite name="duet">``)."""
    items = report.benchmarks
    suite = ET.Element("testsuite", {"name": "duet"})
    props = _properties(report)
    if len(props):
        suite.append(props)
    failures = errors = skipped = 0
    for b in items:
        r = b.row
        case = ET.SubElement(suite, "testcase", {"classname": "duet", "name": xml_safe(r.name)})
        if b.measured_s is not None:
            case.set("time", b.measured_s)
        if not b.ok_runs:
            errors += 1
            reasons = "; ".join(r.failures) or b.record_note or "no runs recorded"
            err = ET.SubElement(
                case,
                "error",
                {"message": xml_safe(f"no successful run: {reasons}"), "type": "no-successful-run"},
            )
            err.text = xml_safe(row_text(b))
        elif r.verdict == "regression":
            failures += 1
            fail = ET.SubElement(
                case,
                "failure",
                {"message": xml_safe(_failure_message(b)), "type": "regression"},
            )
            fail.text = xml_safe(row_text(b))
        elif r.verdict == "no verdict":
            skipped += 1
            reason = r.note or ("not analysed" if r.decided is None else "no verdict")
            ET.SubElement(case, "skipped", {"message": xml_safe(f"no verdict: {reason}")})
        out = ET.SubElement(case, "system-out")
        out.text = xml_safe(row_text(b))
    incomplete = report.incomplete
    if incomplete:  # one error case: a CI widget shows the verdicts are from part of the runs
        errors += 1
        case = ET.SubElement(suite, "testcase", {"classname": "duet", "name": "completeness"})
        ET.SubElement(case, "error", {"message": xml_safe(incomplete), "type": "incomplete"})
    suite.set("tests", str(len(items) + (1 if incomplete else 0)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", report.measured_s)
    if report.doc.created:
        suite.set("timestamp", xml_safe(report.doc.created))
    ET.indent(suite, space="  ")
    body = ET.tostring(suite, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _properties(report: Report) -> ET.Element:
    """Facts a reader of the CI widget needs to trust the verdicts."""
    props = ET.Element("properties")

    def add(name: str, value: object) -> None:
        ET.SubElement(props, "property", {"name": name, "value": xml_safe(value)})

    version = report.doc.tool.get("version")
    if version:
        add("duet.version", version)
    isolation = report.doc.environment.get("isolation")
    if isolation:
        add("duet.isolation", isolation)
    if report.confidence_text is not None:
        add("duet.confidence", report.confidence_text)
    if report.threshold_text:
        add("duet.threshold", report.threshold_text)
    return props
