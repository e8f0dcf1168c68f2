"""The comment body: the marker line, the markdown report, the link to the artifact, within
the provider's size limit.

The marker is the hidden first line ``<!-- duet-report v1 key=K -->`` that makes a comment
ours, and the key inside it (one comment per key, e.g. one per suite): written here
(:func:`marker`), read back by the upsert (:func:`marker_key`); the key goes inside an HTML
comment, so :func:`validate_key` makes ``-->`` impossible.

The report (:func:`duet_bench.report.markdown.render_markdown`) of the sanitized document
(:mod:`duet_bench.ci.sanitize`) goes under the marker; a last pass over the rendered text
(:func:`neutralize`) escapes any HTML tag but the few the report itself writes and breaks every
``@mention``. When it is too long, first the folded full table
goes (the artifact has it), then the rest is cut at a line with a link to the artifact
(:func:`fit`, also used for GitHub's job summary).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from duet_bench.ci.sanitize import sanitize
from duet_bench.errors import UsageError
from duet_bench.report.markdown import ALL_BENCHMARKS, render_markdown
from duet_bench.report.model import report_of
from duet_bench.results import ResultsDocument

#: The marker that makes a comment ours; ``key`` lets several suites keep one comment each.
MARKER_FORMAT = "<!-- duet-report v1 key={key} -->"
_MARKER = re.compile(r"<!-- duet-report(?: [^\n]*?)? key=([A-Za-z0-9._-]{1,64}) -->")
_KEY = re.compile(r"[A-Za-z0-9._-]{1,64}")
DEFAULT_KEY = "default"


def validate_key(key: str) -> str:
    """The comment key, checked: it goes inside an HTML comment, so ``-->`` must be impossible."""
    if not _KEY.fullmatch(key):
        raise UsageError(
            f"comment key {key!r} is not 1 to 64 letters, digits, '.', '_' or '-'",
            fix="use e.g. --key default or --key parser-suite",
        )
    return key


def marker(key: str) -> str:
    return MARKER_FORMAT.format(key=validate_key(key))


def marker_key(body: str) -> str | None:
    """The key of the marker on the first line of ``body``, or None when it has none."""
    first = body.split("\n", 1)[0].strip()
    m = _MARKER.fullmatch(first)
    return m.group(1) if m else None


GITHUB_MAX_BODY = 65_536
GITLAB_MAX_BODY = 1_000_000

_DETAILS_OPEN = ALL_BENCHMARKS
_DETAILS_CLOSE = "</details>"
# The only tags the report writes itself, without attributes; any other "<" becomes "&lt;".
_NOT_OUR_TAG = re.compile(r"<(?!(?:/?(?:details|summary|sub|sup|b|i|em|strong)|br ?/?)>)")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`\\]+")


def body_length(text: str) -> int:
    """Characters as the strictest API counts them: UTF-16 code units (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def neutralize(markdown: str) -> str:
    """The last line of defence: escape every HTML tag but the report's own, break mentions.

    :func:`duet_bench.report.escape.markdown_text` already escapes what comes from the measured
    code; this pass makes sure that a field it does not cover cannot add markup either.
    """
    return _MENTION.sub("@&#8203;", _NOT_OUR_TAG.sub("&lt;", markdown))


def safe_url(url: str | None) -> str | None:
    """``url`` when it is a plain http(s) URL that cannot break out of a markdown link."""
    if url and _URL.fullmatch(url):
        return url
    return None


def build_body(
    doc: ResultsDocument,
    *,
    key: str = DEFAULT_KEY,
    max_length: int = GITHUB_MAX_BODY,
    details_url: str | None = None,
) -> str:
    """The comment: marker line, the markdown report, a link to the full results, and within
    ``max_length`` (see :func:`fit`)."""
    if any(b.analysis is None for b in doc.benchmarks):
        from duet_bench.analysis import AnalysisSettings, analyze_document

        doc = analyze_document(doc, AnalysisSettings())
    url = safe_url(details_url)
    report = neutralize(render_markdown(report_of(sanitize(doc)))).rstrip("\n")
    footer = (
        f"<sub>Full results, raw samples and plots: [the CI artifact]({url})</sub>" if url else ""
    )
    return fit(report, head=marker(key), footer=footer, max_length=max_length, details_url=url)


def fit(
    report: str,
    *,
    head: str,
    footer: str,
    max_length: int,
    details_url: str | None,
    container: str = "a comment",
    measure: Callable[[str], int] = body_length,
) -> str:
    """``head``, ``report`` and ``footer`` joined, cut to ``max_length`` if needed.

    First the folded table of every benchmark goes (the changed ones are above it); then the
    report is cut after a whole line, with a note that says where the rest is. An HTML
    ``<details>`` left open by the cut is closed, so the footer stays visible.
    """

    def join(text: str, note: str = "") -> str:
        return head + "\n" + "\n\n".join(p for p in (text, note, footer) if p) + "\n"

    whole = join(report)
    if measure(whole) <= max_length:
        return whole
    where = (
        f"[the CI artifact]({details_url})"
        if details_url
        else "`duet-results/report.md` of the CI job"
    )
    folded_note = f"_The table of all benchmarks did not fit in {container}: it is in {where}._"
    without_table = _drop_full_table(report)
    if without_table != report:
        candidate = join(without_table, folded_note)
        if measure(candidate) <= max_length:
            return candidate
    cut_note = (
        f"**Cut to fit the {max_length:,}-character limit of {container}:** the whole report "
        f"is in {where}."
    )
    lines = without_table.split("\n")
    # Binary search for the most lines that fit with the note.
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(join(_close_details("\n".join(lines[:mid])), cut_note)) <= max_length:
            lo = mid
        else:
            hi = mid - 1
    if lo > 0:
        return join(_close_details("\n".join(lines[:lo]).rstrip()), cut_note)
    # Not even the first line fits (a tiny limit): cut inside it, never inside an entity.
    budget = max_length - measure(join("", cut_note)) - 4
    first = _cut_text(lines[0], max(budget, 0))
    return join(first, cut_note)[: max(max_length, 0)]


def _drop_full_table(report: str) -> str:
    start = report.find(_DETAILS_OPEN)
    if start < 0:
        return report
    end = report.find(_DETAILS_CLOSE, start)
    if end < 0:
        return report[:start].rstrip()
    return (report[:start].rstrip() + "\n\n" + report[end + len(_DETAILS_CLOSE) :].lstrip()).strip()


def _close_details(text: str) -> str:
    missing = text.count("<details>") - text.count("</details>")
    return text + "\n\n</details>" * max(missing, 0)


def _cut_text(text: str, budget: int) -> str:
    s = text[:budget]
    amp = s.rfind("&")
    if amp >= 0 and ";" not in s[amp:]:
        s = s[:amp]
    return s + "…"
