"""Reports over an analysed results document: one module per format.

Only this package and the CLI print; every renderer is a pure function ``document -> str``.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from duet.results import ResultsDocument

Format: TypeAlias = Literal["text", "markdown", "json"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json")


def render(doc: ResultsDocument, fmt: Format, *, color: bool = False) -> str:
    """Render an analysed document in ``fmt``."""
    if fmt == "text":
        from duet.report.text import render_text

        return render_text(doc, color=color)
    if fmt == "markdown":
        from duet.report.markdown import render_markdown

        return render_markdown(doc)
    from duet.results import dumps

    return dumps(doc)
