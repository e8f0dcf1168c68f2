"""Commands of the ``duet`` CLI that live in their own module (registered lazily in
``duet_bench.cli.LAZY_COMMANDS``). Each module defines one click command and imports heavy modules
inside the command's body. The shared options and error handling come from ``duet_bench.cli``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from duet_bench.results import ResultsDocument


def load_results(path: str | os.PathLike[str]) -> ResultsDocument:
    """The results document at ``path``, given on the command line.

    A path that names no results file, a directory as much as a missing file, is the same
    failure for every command that reads results (exit 3: the input is unreadable, which in CI
    means that the step that should have written it did not); a directory that holds a
    results.json is named in the fix.
    """
    from duet_bench import results
    from duet_bench.errors import ResultsError

    if os.path.isdir(path):
        inside = os.path.join(path, "results.json")
        raise ResultsError(
            f"{os.fspath(path)} is a directory, not a results file",
            fix=f"give {inside}"
            if os.path.isfile(inside)
            else "give the results.json that duet run --out or duet compare --out DIR wrote",
        )
    return results.load(path)
