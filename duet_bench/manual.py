"""Where duet's manual (the repository's ``docs/``) is on this machine, for messages to cite.

A message that says "see docs/configuration.md" points at nothing for a user who installed a
wheel with pipx: there is no ``docs/`` beside their project. So the wheel carries the manual as
package data (``duet_bench/_docs``, a link to ``docs/`` in the repository), and every message cites
a page through :func:`cite`, which names the file that is really there: the installed copy, or
the checkout's ``docs/`` for an editable install.
"""

from __future__ import annotations

from pathlib import Path

#: The manual inside the installed package (a symbolic link to ``docs/`` in a checkout).
MANUAL_DIR = Path(__file__).resolve().parent / "_docs"


def page(name: str) -> Path:
    """The path of the manual page ``name`` (``"configuration.md"``) on this machine.

    Raises ``ValueError`` for a name that is not a page of the manual, so that a citation of a
    page that does not exist fails the tests instead of reaching a user.
    """
    if "/" in name or not name.endswith(".md"):
        raise ValueError(f"a manual page is a file name like 'configuration.md', got {name!r}")
    path = (MANUAL_DIR / name).resolve()
    if not path.is_file():
        raise ValueError(f"{name} is not a page of duet's manual ({MANUAL_DIR})")
    return path


def cite(name: str) -> str:
    """``page(name)`` as text for a message; the bare ``docs/NAME`` when the manual is not
    installed (a build that dropped the package data), so that a message is never lost."""
    try:
        return str(page(name))
    except ValueError:
        return f"docs/{name}"
