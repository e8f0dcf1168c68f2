"""The HTML report: one standalone page (no external resources) to keep as a CI artifact.

The same table as the markdown comment, with the confidence level next to every interval, the
notes (failed runs among them) and the isolation line; optionally the plots, inlined as SVG.
Verdicts are coloured with colour-blind-safe hues (Okabe-Ito) *and* always carry their word and
the marker shape the forest plot uses, so the page also reads in grey scale.

Every string that comes from the measured code goes through
:func:`duet_bench.report.escape.html_text`. Inlined SVG is parsed and re-serialised (comments,
metadata, scripts, event handlers and external references dropped, ids made unique per
figure), and a Content-Security-Policy forbids scripts and external loads on top of that.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from duet_bench.report.escape import html_text, shown_text
from duet_bench.report.model import Report
from duet_bench.report.rows import Row

#: Verdict -> (symbol, the marker shape of the forest plot it stands for).
SYMBOLS = {
    "regression": "▶",
    "improvement": "◀",
    "inconclusive": "◆",
    "no change": "●",
    "no verdict": "□",
}

_CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: #1b1b1b; background: #fff; margin: 0; }
main { max-width: 80rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 .3rem; }
h2 { font-size: 1.15rem; margin: 1.8rem 0 .5rem; }
.facts { color: #444; margin: 0 0 1rem; }
.summary { font-size: 1.05rem; margin: .2rem 0 .6rem; }
.decided { color: #333; }
.warning { border-left: 4px solid #D55E00; background: #fbe5d6; padding: .5rem .8rem; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; color: #444; padding-bottom: .4rem; }
th, td { padding: .35rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
thead th { text-align: left; border-bottom: 2px solid #888; white-space: nowrap; }
tbody th { text-align: left; font-weight: 600; overflow-wrap: anywhere; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ratio { font-variant-numeric: tabular-nums; }
.chg { text-align: right; font-variant-numeric: tabular-nums; }
.ci { color: #444; white-space: nowrap; }
.other { color: #444; font-size: .85rem; min-width: 16rem; }
.scroll { overflow-x: auto; }
.v { display: inline-block; padding: .05rem .5rem; border: 2px solid; border-radius: .7rem;
  white-space: nowrap; font-weight: 600; }
.v-regression { color: #8a3300; background: #fbe5d6; border-color: #D55E00; }
.v-improvement { color: #004a75; background: #dcebf7; border-color: #0072B2; }
.v-inconclusive { color: #6b4a00; background: #fdf0d5; border-color: #E69F00; }
.v-no-change { color: #333; background: #eee; border-color: #777; }
.v-no-verdict { color: #333; background: #fff; border-color: #333; border-style: dashed; }
ul { padding-left: 1.3rem; }
li { margin: .2rem 0; overflow-wrap: anywhere; }
figure { margin: 1.2rem 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #444; }
footer { margin-top: 2rem; color: #666; font-size: .85rem; }
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _verdict(word: str) -> str:
    cls = "v-" + word.replace(" ", "-")
    return f'<span class="v {cls}">{SYMBOLS.get(word, "")} {html_text(word)}</span>'


def _ratio(r: Row) -> str:
    if r.interval == "n/a":
        return f'{r.ratio} <span class="ci">(no interval)</span>' if r.ratio != "n/a" else "n/a"
    conf = f"{r.confidence_text} CI" if r.confidence_text else "CI"
    return f'{r.ratio} <span class="ci">{r.interval} {conf}</span>'


def _change(r: Row) -> str:
    if r.change_interval == "n/a":
        return r.change
    return f'{r.change} <span class="ci">{r.change_interval}</span>'


def _table(items: Sequence[Row]) -> list[str]:
    """One row per benchmark: the numbers of the metric that decided (named in its column),
    then the metrics that did not decide, each with its own interval."""
    other = any(r.other for r in items)
    # One metric for all: the line above the table names it; a column only when they differ.
    metric_column = len({r.metric for r in items}) > 1
    out = [
        '<div class="scroll">',
        "<table>",
        "<caption>Ratio = candidate time / baseline time (geometric mean of the paired "
        "iterations) in the metric that decided: above 1 the candidate is slower.</caption>",
        '<thead><tr><th scope="col">benchmark</th><th scope="col" class="num">runs</th>'
        + ('<th scope="col">metric</th>' if metric_column else "")
        + '<th scope="col" class="num">baseline</th><th scope="col" class="num">candidate</th>'
        '<th scope="col">ratio [CI]</th><th scope="col" class="num">change</th>'
        '<th scope="col">verdict</th>'
        + ('<th scope="col">other metrics (did not decide)</th>' if other else "")
        + "</tr></thead>",
        "<tbody>",
    ]
    for r in items:
        others = "<br>".join(html_text(c.summary()) for c in r.others if not c.missing)
        out.append(
            f'<tr><th scope="row">{html_text(r.name)}</th>'
            f'<td class="num">{html_text(r.runs)}</td>'
            + (f"<td>{html_text(r.metric or 'n/a')}</td>" if metric_column else "")
            + f'<td class="num">{r.baseline}</td><td class="num">{r.candidate}</td>'
            f'<td class="ratio">{_ratio(r)}</td><td class="chg">{_change(r)}</td>'
            f"<td>{_verdict(r.verdict)}</td>"
            + (f'<td class="other">{others}</td>' if other else "")
            + "</tr>"
        )
    out += ["</tbody>", "</table>", "</div>"]
    return out


def _commits(report: Report) -> str | None:
    if report.versions is None:
        return None
    base, head = report.versions

    def label(v: Mapping[str, Any]) -> str:
        sha = str(v.get("commit") or "")[:12]
        ref = str(v.get("ref") or "")
        text = f"{ref} ({sha})" if ref and sha else (ref or sha or "?")
        return html_text(text)

    return f"<strong>BASE</strong> {label(base)} → <strong>HEAD</strong> {label(head)}"


def _facts(report: Report) -> list[str]:
    facts = []
    commits = _commits(report)
    if commits:
        facts.append(commits)
    if report.isolation:
        facts.append(html_text(report.isolation))
    if report.confidence_text is not None:
        facts.append(f"confidence {report.confidence_text}")
    # The first analysed benchmark's threshold (a row without a decided metric has none).
    threshold = next((r.threshold_text for r in report.rows if r.decided is not None), None)
    if threshold is not None:
        facts.append(f"threshold {threshold}")
    return facts


_ID_REF = re.compile(r"url\(#([^)]+)\)")
_SVG = "{http://www.w3.org/2000/svg}"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_DROP = {"metadata", "script", "foreignObject", "a", "image", "iframe"}


def inline_svg(svg: str, prefix: str, *, aria_label: str | None = None) -> str:
    """An SVG document as markup to inline in HTML: parsed and re-serialised, so comments,
    metadata, scripts, event handlers and references outside the figure are gone and every
    id is prefixed (several figures on one page would otherwise share ``glyph``/``clip`` ids).
    """
    root = ET.fromstring(svg)  # drops comments, processing instructions and the DOCTYPE
    if root.tag != f"{_SVG}svg":
        raise ValueError(f"not an SVG document (root element {root.tag!r})")

    def prune(parent: ET.Element) -> None:
        for child in list(parent):
            local = child.tag.rsplit("}", 1)[-1] if isinstance(child.tag, str) else ""
            if not child.tag.startswith(_SVG) or local in _DROP:
                parent.remove(child)
            else:
                prune(child)

    prune(root)
    for el in root.iter():
        # Unqualified tags: inside HTML the parser puts <svg> and its children in the SVG
        # namespace by itself, and ElementTree cannot mix a default namespace with plain
        # attribute names.
        el.tag = el.tag[len(_SVG) :]
        for key in list(el.attrib):
            value = el.attrib[key]
            local = key.rsplit("}", 1)[-1]
            if local.lower().startswith("on"):
                del el.attrib[key]
            elif key == "id":
                el.set(key, prefix + value)
            elif key in (_XLINK_HREF, "href"):
                del el.attrib[key]
                if value.startswith("#"):
                    # SVG 2 plain href: HTML's parser only maps an "xlink:" prefix it can see.
                    el.set("href", "#" + prefix + value[1:])
            elif "url(" in value:
                el.set(key, _ID_REF.sub(lambda m: f"url(#{prefix}{m.group(1)})", value))
    root.set("xmlns", _SVG[1:-1])
    root.set("role", "img")
    if aria_label is not None:
        root.set("aria-label", shown_text(aria_label))  # ElementTree escapes it
    return ET.tostring(root, encoding="unicode")


def _notes(items: Sequence[Row]) -> list[str]:
    """What would decide an inconclusive benchmark and the notes; then the details of how the
    numbers were made."""

    def li(r: Row, text: str) -> str:
        return f"<li><strong>{html_text(r.name)}</strong>: {html_text(text)}</li>"

    notes = []
    for r in items:
        hint = r.decide_hint()
        if hint:
            notes.append(li(r, f"inconclusive: {hint}"))
        notes += [li(r, n) for n in r.notes]
    # Why each metric decided, the interference and the other metrics' estimates: the table
    # and the line above it say what matters; this is for whoever checks the method.
    details = [li(r, d) for r in items for d in (r.decided_line(), *r.details) if d]
    out = ["<h2>Notes</h2>", "<ul>", *notes, "</ul>"] if notes else []
    if details:
        out += ["<h2>How these numbers were made</h2>", "<ul>", *details, "</ul>"]
    return out


def render_html(report: Report, *, plots: Mapping[str, str] | None = None) -> str:
    """A standalone HTML page; ``plots`` maps a caption to an SVG document to inline."""
    items = report.rows
    heading = "duet: " + report.title
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>{html_text(heading)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{html_text(heading)}</h1>",
        f'<p class="summary">{html_text(report.summary)}</p>',
    ]
    incomplete = report.incomplete
    if incomplete:
        out.append(
            f'<p class="warning" role="alert"><strong>Incomplete:</strong> '
            f"{html_text(incomplete)}</p>"
        )
    facts = _facts(report)
    if facts:
        out.append(f'<p class="facts">{" · ".join(facts)}</p>')
    if report.affinity_only:
        out.append(
            '<p class="warning" role="alert"><strong>Warning:</strong> affinity-only '
            "isolation: CPU time of orphaned children and peak memory are unreliable.</p>"
        )
    decided = report.metric_line
    if decided:
        out.append(f'<p class="decided">{html_text(decided[0].upper() + decided[1:])}.</p>')
    out += _table(items)
    out += _notes(items)
    if plots:
        out.append("<h2>Plots</h2>")
        for i, (caption, svg) in enumerate(plots.items()):
            figure = inline_svg(svg, f"f{i}-", aria_label=caption)
            out += [
                "<figure>",
                figure,
                f"<figcaption>{html_text(caption)}</figcaption>",
                "</figure>",
            ]
    version = report.tool_version()
    made = f"duet-bench {html_text(version)}" if version else "duet-bench"
    created = report.doc.created
    when = f", results of {html_text(created)}" if created else ""
    out += [f"<footer>Made by {made}{when}.</footer>", "</main>", "</body>", "</html>"]
    return "\n".join(out) + "\n"
